import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { buildManager, type OperatorConfig } from '../operator/wiring.ts';
import { FakeKubeClient } from './testing/fake-client.ts';
import { defaultGrants, grantKey, neededGrants, optInRoles, roleSubject, watchedTypes, type Grant, type OptInRole, type PvxRole } from './rbac.ts';

const root = resolve(import.meta.dirname, '..', '..');

interface Rule {
  apiGroups?: string[];
  resources?: string[];
  verbs?: string[];
  nonResourceURLs?: string[];
}
interface Manifest {
  kind: string;
  metadata: { name: string };
  rules?: Rule[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string }[];
}

/**
 * Each rule of each role bound to the identity that role is for (roleSubject: pvx's ServiceAccount,
 * or its kubelet reader), as lines grantKey would write ("role resource.group verb"). A role bound
 * to another identity grants nothing here: the kubelets' grant given to pvx itself would show missing.
 */
function grantedToPvx(manifests: Manifest[]): string[] {
  const bound = new Set(
    manifests
      .filter((m) => m.roleRef && m.subjects?.some((s) => s.kind === 'ServiceAccount' && s.name === roleSubject(m.roleRef?.name as PvxRole)))
      .map((m) => m.roleRef?.name),
  );
  return manifests
    .filter((m) => (m.kind === 'ClusterRole' || m.kind === 'Role') && bound.has(m.metadata.name))
    .flatMap((role) =>
      (role.rules ?? []).flatMap((r) => {
        // A nonResourceURL, or a wildcard, can be needed by no row: it shows as granted and unneeded.
        const targets = [...(r.resources ?? []).flatMap((res) => (r.apiGroups ?? ['?']).map((g) => (g ? `${res}.${g}` : res))), ...(r.nonResourceURLs ?? [])];
        return targets.flatMap((t) => (r.verbs ?? []).map((v) => `${role.metadata.name} ${t} ${v}`));
      }),
    );
}

const parse = (text: string): Manifest[] =>
  parseAllDocuments(text)
    .map((d) => d.toJS() as Manifest)
    .filter(Boolean);

const manifestsIn = (dir: string): Manifest[] =>
  readdirSync(join(root, dir))
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((f) => parse(readFileSync(join(root, dir, f), 'utf8')));
const configManifests = (): Manifest[] => manifestsIn('config/rbac');

/**
 * The chart's rbac.yaml with its template lines dropped: what it grants with the kubelet source and
 * every opt-in on. An opt-in's binding (the helper pvx.optInBinding: cluster-wide, or per namespace)
 * reads as the binding of its role to pvx; the shipping e2e suite renders both with helm.
 */
const chartManifests = (): Manifest[] =>
  parse(
    readFileSync(join(root, 'charts', 'pvx', 'templates', 'rbac.yaml'), 'utf8')
      .split('\n')
      .map((line) => {
        const role = /include "pvx\.optInBinding" \(dict "root" \. "role" "([a-z-]+)"/.exec(line)?.[1];
        return role
          ? `---\nkind: ClusterRoleBinding\nmetadata: {name: ${role}}\nroleRef: {kind: ClusterRole, name: ${role}}\nsubjects: [{kind: ServiceAccount, name: pvx}]`
          : line;
      })
      .filter((line) => !line.includes('{{'))
      .join('\n'),
  );

const keys = (grants: Grant[]) => grants.map(grantKey).sort();
const optIns = Object.entries(optInRoles) as [OptInRole, (typeof optInRoles)[OptInRole]][];

describe('RBAC: what is granted is what the ports need', () => {
  it.each<[string, () => Manifest[], () => string[]]>([
    ['config/rbac (the default install: no opt-in)', configManifests, () => keys(defaultGrants())],
    ['the chart (usageSource kubelet, every opt-in on)', chartManifests, () => keys(neededGrants())],
    ...[...new Set(optIns.map(([, o]) => o.component))].map((component): [string, () => Manifest[], () => string[]] => {
      const roles = optIns.filter(([, o]) => o.component === component).map(([role]) => role);
      return [`${component} (the ${roles.join(', ')} opt-in)`, () => manifestsIn(component), () => keys(neededGrants(roles))];
    }),
  ])('%s grants nothing no method needs, and everything some method needs', (_where, manifests, needed) => {
    const granted = [...new Set(grantedToPvx(manifests()))].sort();
    const need = needed();
    expect(
      granted.filter((g) => !need.includes(g)),
      'granted, but no method of KubeClient or KubeletClient needs it (src/k8s/rbac.ts)',
    ).toEqual([]);
    expect(
      need.filter((n) => !granted.includes(n)),
      'needed by a method (src/k8s/rbac.ts), but no role bound to pvx grants it',
    ).toEqual([]);
  });

  it('the default install grants nothing an opt-in grants: each opt-in role is a chart value off by default and a kustomize component', () => {
    const defaults = new Set(keys(defaultGrants()));
    const values = readFileSync(join(root, 'charts', 'pvx', 'values.yaml'), 'utf8');
    const chart = readFileSync(join(root, 'charts', 'pvx', 'templates', 'rbac.yaml'), 'utf8');
    for (const [role, o] of optIns) {
      const grants = keys(neededGrants([role]));
      expect(grants.length, role).toBeGreaterThan(0);
      // What the role grants, by resource and verb, is in no default role either.
      const bare = (g: string) => g.slice(g.indexOf(' ') + 1);
      expect(
        [...defaults].map(bare).filter((g) => grants.map(bare).includes(g)),
        role,
      ).toEqual([]);
      const [section, key] = o.chartValue.split('.');
      expect(values, o.chartValue).toMatch(new RegExp(`^${section}:\\n  ${key}: false$`, 'm'));
      expect(chart, o.chartValue).toContain(`{{- if .Values.${o.chartValue} }}`);
      const kustomization = parseAllDocuments(readFileSync(join(root, o.component, 'kustomization.yaml'), 'utf8'))[0]?.toJS() as { kind: string };
      expect(kustomization.kind).toBe('Component');
    }
    const defaultKustomization = readFileSync(join(root, 'config', 'default', 'kustomization.yaml'), 'utf8');
    expect(defaultKustomization).not.toMatch(/components/);
  });

  it('grants each thing once (a duplicate rule hides which one a reader should change)', () => {
    const granted = grantedToPvx(configManifests());
    expect(granted.filter((g, i) => granted.indexOf(g) !== i)).toEqual([]);
  });

  it('the kinds the table lists and watches are exactly the caches pvx run builds', () => {
    const cfg: OperatorConfig = {
      namespaceSelector: { tier: 'db' },
      metricsListen: '127.0.0.1:0',
      metricsSecure: true,
      healthListen: '127.0.0.1:0',
      leaderElect: true,
      leaderElectionId: 'pvx-leader',
      leaderElectionNamespace: 'pvx-system',
      identity: 'test',
      debugEndpoints: false,
      drainTimeoutMs: 1000,
      usageSource: 'kubelet',
      policyIntervalMs: 30_000,
      auditIntervalMs: 60_000,
      auditStuckAfterMs: 900_000,
      kubeApiQps: 50,
      kubeApiBurst: 100,
      modificationBudgets: {},
    };
    const fake = new FakeKubeClient();
    const manager = buildManager(cfg, pino({ level: 'silent' }), fake, { volumeAttributesClasses: true }, fake);
    const cached = [...(manager as unknown as { informers: Map<string, unknown> }).informers.keys()].sort();
    expect(cached).toEqual(watchedTypes.map((t) => t.resource).sort());
  });
});
