import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { buildManager, type OperatorConfig } from '../operator/wiring.ts';
import { FakeKubeClient } from './testing/fake-client.ts';
import { grantKey, neededGrants, watchedTypes } from './rbac.ts';

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

/** Each rule of each role bound to the ServiceAccount pvx, as lines grantKey would write ("role resource.group verb"). */
function grantedToPvx(manifests: Manifest[]): string[] {
  const bound = new Set(manifests.filter((m) => m.roleRef && m.subjects?.some((s) => s.kind === 'ServiceAccount' && s.name === 'pvx')).map((m) => m.roleRef?.name));
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

const parse = (text: string): Manifest[] => parseAllDocuments(text).map((d) => d.toJS() as Manifest).filter(Boolean);

const configManifests = (): Manifest[] =>
  readdirSync(join(root, 'config', 'rbac'))
    .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
    .flatMap((f) => parse(readFileSync(join(root, 'config', 'rbac', f), 'utf8')));

/** The chart's rbac.yaml with its template lines dropped: what it grants with the kubelet source on. */
const chartManifests = (): Manifest[] =>
  parse(
    readFileSync(join(root, 'charts', 'pvx', 'templates', 'rbac.yaml'), 'utf8')
      .split('\n')
      .filter((line) => !line.includes('{{'))
      .join('\n'),
  );

const needed = () => neededGrants().map(grantKey).sort();

describe('RBAC: what is granted is what the ports need', () => {
  it.each([
    ['config/rbac', configManifests],
    ['the chart (usageSource kubelet)', chartManifests],
  ])('%s grants nothing no method needs, and everything some method needs', (_where, manifests) => {
    const granted = [...new Set(grantedToPvx(manifests()))].sort();
    const need = needed();
    expect(granted.filter((g) => !need.includes(g)), 'granted, but no method of KubeClient or KubeletClient needs it (src/k8s/rbac.ts)').toEqual([]);
    expect(need.filter((n) => !granted.includes(n)), 'needed by a method (src/k8s/rbac.ts), but no role bound to pvx grants it').toEqual([]);
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
