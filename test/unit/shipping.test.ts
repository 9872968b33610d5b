// What the install manifests promise that can be checked from the files alone (no helm or
// kubectl: those checks run in test/e2e/shipping.e2e.test.ts, after the e2e setup builds them).
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { parseRunArgs } from '../../src/cli/run.ts';
import { requestAnnotations } from '../../src/crds/keys.ts';
import { metricsAccess } from '../../src/operator/endpoints/metrics-access.ts';

const root = resolve(import.meta.dirname, '..', '..');
const crdDir = join(root, 'config', 'crd');
const chartCrdDir = join(root, 'charts', 'pvx', 'files', 'crds');
const yamlFiles = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort();

describe('the chart CRDs', () => {
  it('are the files of config/crd/, byte for byte (run `npm run crds`, which writes both)', () => {
    expect(yamlFiles(chartCrdDir)).toEqual(yamlFiles(crdDir));
    for (const file of yamlFiles(crdDir)) {
      expect(readFileSync(join(chartCrdDir, file), 'utf8'), `charts/pvx/files/crds/${file} differs from config/crd/${file}`).toBe(
        readFileSync(join(crdDir, file), 'utf8'),
      );
    }
  });

  it('are all in the kustomize base config/crd/Kustomization', () => {
    const kustomization = parse(readFileSync(join(crdDir, 'Kustomization'), 'utf8')) as { resources: string[] };
    expect([...kustomization.resources].sort()).toEqual(yamlFiles(crdDir));
  });
});

describe('the manager Deployment', () => {
  const deployment = parse(readFileSync(join(root, 'config', 'manager', 'deployment.yaml'), 'utf8')) as {
    spec: { template: { spec: { containers: { args: string[]; ports: { name: string; containerPort: number }[] }[] } } };
  };
  const container = deployment.spec.template.spec.containers[0];

  it('passes `pvx run` only flags it accepts, with leader election on', () => {
    const [command, ...flags] = container?.args ?? [];
    expect(command).toBe('run');
    const cfg = parseRunArgs(flags, {});
    expect(cfg.leaderElect).toBe(true);
    expect(cfg.leaderElectionId).toBe('pvx-leader');
    expect(cfg.usageSource).toBe('kubelet');
  });

  it('serves metrics over HTTPS on the container port named "https", and health on the one named "health"', () => {
    const cfg = parseRunArgs((container?.args ?? []).slice(1), {});
    expect(cfg.metricsSecure).toBe(true);
    expect(cfg.metricsListen).toBe(`:${container?.ports.find((p) => p.name === 'https')?.containerPort}`);
    expect(cfg.healthListen).toBe(`:${container?.ports.find((p) => p.name === 'health')?.containerPort}`);
  });

  it('uses the usage source `pvx run` defaults to, the one the chart defaults to as well', () => {
    const values = parse(readFileSync(join(root, 'charts', 'pvx', 'values.yaml'), 'utf8')) as { usageSource: string };
    const runDefault = parseRunArgs([], {}).usageSource;
    expect(values.usageSource).toBe(runDefault);
    expect(container?.args).toContain(`--usage-source=${runDefault}`);
  });
});

describe('the metrics RBAC', () => {
  const rbac = (file: string) =>
    parseAllDocuments(readFileSync(join(root, 'config', 'rbac', file), 'utf8')).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string }; rules?: unknown[]; subjects?: unknown[] },
    );

  it('lets pvx review tokens and access (what the token review of /metrics needs), and nothing more', () => {
    const [role, binding] = rbac('metrics_auth_role.yaml');
    expect(role).toMatchObject({ kind: 'ClusterRole', metadata: { name: 'pvx-metrics-auth' } });
    expect(role?.rules).toEqual([
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
    ]);
    expect(binding?.subjects).toEqual([{ kind: 'ServiceAccount', name: 'pvx', namespace: 'pvx-system' }]);
  });

  it('ships the ClusterRole scrapers are bound to: get on /metrics, the access the review asks about', () => {
    const [reader, ...rest] = rbac('metrics_reader_role.yaml');
    expect(rest).toEqual([]);
    expect(reader).toMatchObject({ kind: 'ClusterRole', metadata: { name: 'pvx-metrics-reader' } });
    expect(reader?.rules).toEqual([{ nonResourceURLs: [metricsAccess.path], verbs: [metricsAccess.verb] }]);
  });

  it('are both in the kustomize base', () => {
    const kustomization = parse(readFileSync(join(root, 'config', 'rbac', 'kustomization.yaml'), 'utf8')) as { resources: string[] };
    expect(kustomization.resources).toEqual(expect.arrayContaining(['metrics_auth_role.yaml', 'metrics_reader_role.yaml']));
  });
});

describe('the chart version', () => {
  it('ships the package version as appVersion and image tag', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    const chart = parse(readFileSync(join(root, 'charts', 'pvx', 'Chart.yaml'), 'utf8')) as { apiVersion: string; version: string; appVersion: string };
    expect(chart.apiVersion).toBe('v2');
    expect(chart.appVersion).toBe(pkg.version);
    const image = readFileSync(join(root, 'config', 'manager', 'deployment.yaml'), 'utf8').match(/image: (\S+)/)?.[1];
    expect(image).toBe(`registry.example/pvx:${pkg.version}`);
  });
});

describe('the approval policy and the roles for people', () => {
  interface Rule {
    apiGroups: string[];
    resources: string[];
    verbs: string[];
  }
  interface Doc {
    kind: string;
    metadata: { name: string; labels?: Record<string, string> };
    rules?: Rule[];
    spec?: Record<string, unknown>;
  }
  const docs = (file: string) => parseAllDocuments(readFileSync(join(root, file), 'utf8')).map((d) => d.toJS() as Doc);
  const policyDocs = docs('config/admission/approval_policy.yaml');
  const policy = policyDocs.find((d) => d.kind === 'ValidatingAdmissionPolicy') as Doc;
  const text = JSON.stringify(policy.spec);
  const roles = docs('config/rbac/user_roles.yaml');
  const role = (name: string) => roles.find((r) => r.metadata.name === name) as Doc;

  it('guards the annotations pvx reads, by the names it reads them by', () => {
    for (const key of [requestAnnotations.approved, requestAnnotations.approval, requestAnnotations.approvedBy]) expect(text).toContain(`'${key}'`);
    expect(policy.spec?.matchConstraints).toEqual({
      resourceRules: [{ apiGroups: ['pvx.dev'], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: ['volumeexpansionrequests'] }],
    });
    expect(policy.spec?.failurePolicy).toBe('Fail');
    expect(policyDocs.find((d) => d.kind === 'ValidatingAdmissionPolicyBinding')?.spec).toEqual({ policyName: 'pvx-approval', validationActions: ['Deny'] });
  });

  it('asks the authorizer for exactly what pvx-approve grants, and pvx-approve is aggregated into no role', () => {
    const check = /authorizer\.group\('([^']*)'\)\.resource\('([^']*)'\)\.subresource\('([^']*)'\)[\s\S]*?\.check\('([^']*)'\)/.exec(text.replace(/\\n/g, ' '));
    expect(check?.slice(1)).toEqual(['pvx.dev', 'volumeexpansionrequests', 'approval', 'approve']);
    expect(role('pvx-approve').rules).toContainEqual({ apiGroups: ['pvx.dev'], resources: ['volumeexpansionrequests/approval'], verbs: ['approve'] });
    expect(Object.keys(role('pvx-approve').metadata.labels ?? {}).filter((l) => l.includes('aggregate'))).toEqual([]);
  });

  it('aggregates pvx-view into view and pvx-edit into edit, neither granting approve', () => {
    expect(role('pvx-view').metadata.labels).toMatchObject({ 'rbac.authorization.k8s.io/aggregate-to-view': 'true' });
    expect(role('pvx-edit').metadata.labels).toMatchObject({ 'rbac.authorization.k8s.io/aggregate-to-edit': 'true' });
    for (const name of ['pvx-view', 'pvx-edit']) expect(JSON.stringify(role(name).rules)).not.toMatch(/approval|approve/);
  });

  it('are in the kustomize install (config/default), and in the chart with the same rules and CEL', () => {
    expect((parse(readFileSync(join(root, 'config', 'rbac', 'kustomization.yaml'), 'utf8')) as { resources: string[] }).resources).toContain('user_roles.yaml');
    expect((parse(readFileSync(join(root, 'config', 'default', 'kustomization.yaml'), 'utf8')) as { resources: string[] }).resources).toContain('../admission');
    const chart = (file: string) =>
      parseAllDocuments(
        readFileSync(join(root, 'charts', 'pvx', 'templates', file), 'utf8')
          .split('\n')
          .filter((l) => !l.includes('{{'))
          .join('\n'),
      ).map((d) => d.toJS() as Doc);
    const chartRoles = chart('rbac.yaml').filter((d) => d && ['pvx-view', 'pvx-edit', 'pvx-approve'].includes(d.metadata?.name));
    expect(chartRoles.map((r) => [r.metadata.name, r.rules])).toEqual(roles.map((r) => [r.metadata.name, r.rules]));
    expect(chart('approval-policy.yaml').map((d) => [d.kind, d.spec])).toEqual(policyDocs.map((d) => [d.kind, d.spec]));
  });
});
