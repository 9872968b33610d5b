import type { CoreV1Event, V1Node, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1StorageClass } from '@kubernetes/client-node';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { VolumeExpansionPolicy } from '../crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import { FakeKubeClient } from '../k8s/testing/fake-client.ts';
import { resources, volumeExpansionPolicies, volumeExpansionRequests } from '../k8s/resources.ts';
import { reachable } from '../import-graph.testing.ts';
import { formatWhy, formatWhyDocument, heldExitCode, parseWhyArgs, whyReport, type WhyOptions } from './why.ts';
import { CommandFailure, UsageError } from './errors.ts';

const now = new Date('2026-11-29T12:00:00Z');

describe('parseWhyArgs', () => {
  it('takes pvc/NAME, ver/NAME, their long kinds and a bare claim name', () => {
    expect(parseWhyArgs(['pvc/data'], {})).toMatchObject({ kind: 'pvc', name: 'data', output: 'table', usage: 'kubelet', samples: 1 });
    expect(parseWhyArgs(['ver/grow', '-n', 'db', '-o', 'json', '--usage', 'none'], {})).toMatchObject({
      kind: 'ver',
      name: 'grow',
      namespace: 'db',
      output: 'json',
      usage: 'none',
    });
    expect(parseWhyArgs(['persistentvolumeclaim/data'], {})).toMatchObject({ kind: 'pvc', name: 'data' });
    expect(parseWhyArgs(['volumeexpansionrequest/grow'], {})).toMatchObject({ kind: 'ver', name: 'grow' });
    expect(parseWhyArgs(['data'], {})).toMatchObject({ kind: 'pvc', name: 'data' });
  });

  it.each([
    [[], /name a claim or a request/],
    [['pvc/a', 'pvc/b'], /one object at a time/],
    [['pod/a'], /"pod\/a" is not pvc\/NAME or ver\/NAME/],
    [['pvc/'], /is not pvc\/NAME/],
    [['pvc/a', '-o', 'wide'], /--output must be one of table, json, yaml/],
    [['pvc/a', '--usage', 'prometheus'], /needs --prometheus-url/],
    [['pvc/a', '-A'], /Unknown option '-A'/],
  ])('%j is a usage error', (argv, message) => {
    expect(() => parseWhyArgs(argv, {})).toThrow(message);
  });
});

/** A namespace where pvc/data (10Gi, a running pod, policy grow at 80%) and a request can be read through the fake. */
function cluster(): FakeKubeClient {
  const c = new FakeKubeClient();
  c.create<V1StorageClass>(resources.storageClasses, { metadata: { name: 'fast' }, provisioner: 'hostpath.pvx.dev', allowVolumeExpansion: true });
  c.create<V1PersistentVolume>(resources.persistentVolumes, { metadata: { name: 'pv-data' }, spec: { capacity: { storage: '10Gi' } } });
  c.create<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, {
    metadata: { name: 'data', namespace: 'db' },
    spec: { storageClassName: 'fast', volumeName: 'pv-data', resources: { requests: { storage: '10Gi' } } },
    status: { phase: 'Bound', capacity: { storage: '10Gi' } },
  });
  c.create<V1Pod>(resources.pods, {
    metadata: { name: 'app', namespace: 'db', uid: 'uid-app' },
    spec: { containers: [], nodeName: 'n1', volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'data' } }] },
    status: { phase: 'Running' },
  });
  c.create<VolumeExpansionPolicy>(volumeExpansionPolicies, {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionPolicy',
    metadata: { name: 'grow', namespace: 'db' },
    spec: { triggers: { usedPercent: 80, sustainedSamples: 1 } },
  });
  c.create<V1Node>(resources.nodes, { metadata: { name: 'n1' }, status: { conditions: [{ type: 'Ready', status: 'True' }] } });
  return c;
}

const opts = (argv: string[]): WhyOptions => parseWhyArgs(argv, {});
/** The kubelets of a report made with --usage none: never asked. */
const noKubelet = (): never => {
  throw new Error('--usage none reads no kubelet');
};
const kubelet = (usedBytes: number) => ({
  pods: [
    {
      // The pod the API server has on n1 mounting the claim: what makes n1's report believed.
      podRef: { name: 'app', namespace: 'db', uid: 'uid-app' },
      volume: [{ pvcRef: { name: 'data', namespace: 'db' }, time: new Date(now.getTime() - 30_000).toISOString(), usedBytes, capacityBytes: 10 * 2 ** 30 }],
    },
  ],
});

describe('whyReport over the fake client', () => {
  it('reads the namespace, the claim’s Events and the kubelet’s usage, and finds nothing holds a claim over its threshold', async () => {
    const c = cluster();
    c.summaries.set('n1', kubelet(9 * 2 ** 30));
    const { report, warnings } = await whyReport(c, opts(['pvc/data']), 'db', () => c, now);
    expect(warnings).toEqual([]);
    expect(report.heldBy).toBeUndefined();
    expect(report.gates.find((g) => g.gate === 'usage')?.evidence).toBe('measured at 2026-11-29T11:59:30Z by kubelet: 9 GiB of 10 GiB used');
    expect(c.calls).toContain('list events');
  });

  it('holds at the threshold under it, and at the usage without a usage source', async () => {
    const c = cluster();
    c.summaries.set('n1', kubelet(2 ** 30));
    expect((await whyReport(c, opts(['pvc/data']), 'db', () => c, now)).report.heldBy).toBe('threshold');
    expect((await whyReport(c, opts(['pvc/data', '--usage', 'none']), 'db', () => c, now)).report.heldBy).toBe('usage');
  });

  it('explains ver/NAME through its claim, with the claim’s resize Events', async () => {
    const c = cluster();
    c.create<VolumeExpansionRequest>(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow-data', namespace: 'db' },
      spec: { target: { pvcName: 'data' }, size: '20Gi' },
    });
    c.create<CoreV1Event>(resources.events, {
      metadata: { name: 'e1', namespace: 'db' },
      involvedObject: { kind: 'PersistentVolumeClaim', name: 'data' },
      type: 'Warning',
      reason: 'VolumeResizeFailed',
      message: 'boom',
      lastTimestamp: new Date(now.getTime() - 60_000),
    });
    c.create<CoreV1Event>(resources.events, {
      metadata: { name: 'e2', namespace: 'db' },
      involvedObject: { kind: 'Pod', name: 'app' },
      type: 'Warning',
      reason: 'VolumeResizeFailed',
      message: 'not the claim',
    });
    const { report } = await whyReport(c, opts(['ver/grow-data', '--usage', 'none']), 'db', () => c, now);
    expect(report).toMatchObject({ pvc: 'data', request: 'grow-data', heldBy: 'request' });
    expect(report.next).toMatch(/start pvx's operator/);
  });

  it('names a claim or request that does not exist', async () => {
    await expect(whyReport(cluster(), opts(['pvc/nope', '--usage', 'none']), 'db', noKubelet, now)).rejects.toThrow(
      new CommandFailure('PersistentVolumeClaim nope not found in namespace db'),
    );
    await expect(whyReport(cluster(), opts(['ver/nope', '--usage', 'none']), 'db', noKubelet, now)).rejects.toThrow(
      new CommandFailure('VolumeExpansionRequest nope not found in namespace db'),
    );
  });
});

describe('formatWhy', () => {
  it('prints one row per gate, then what holds the claim and the next step; json carries the same content', async () => {
    const c = cluster();
    c.summaries.set('n1', kubelet(2 ** 30));
    const { report } = await whyReport(c, opts(['pvc/data']), 'db', () => c, now);
    const lines = formatWhy(report).split('\n');
    expect(lines[0]).toBe('pvc/data in namespace db, policy vep/grow');
    expect(lines[1]).toMatch(/^GATE\s+STATE\s+EVIDENCE$/);
    expect(lines.slice(2, 15).map((l) => l.split(/\s+/)[0])).toEqual([
      'storage-class',
      'binding',
      'policy',
      'usage',
      'threshold',
      'cooldown',
      'window',
      'max-size',
      'budget',
      'quota',
      'request',
      'resizer',
      'node-stage',
    ]);
    expect(lines).toContain('held by: threshold');
    expect(lines.at(-1)).toBe('next: nothing to do: data grows once a trigger of vep/grow fires (pvx plan shows the figures as they change)');
    const json = JSON.parse(formatWhyDocument({ ...report, generatedAt: now.toISOString(), warnings: [] }, 'json')) as typeof report;
    expect(json.gates).toEqual(report.gates);
    expect(json.heldBy).toBe('threshold');
  });

  it('exits as pvx audit --fail-on does when a gate holds', () => {
    expect(heldExitCode).toBe(3);
  });
});

describe('pvx why is read-only', () => {
  it('imports nothing of the operator, directly or through any module it imports', () => {
    const src = resolve(dirname(fileURLToPath(import.meta.url)), '..');
    const graph = reachable(resolve(src, 'cli/why.ts'));
    expect(
      [...graph].filter(([file]) => file.startsWith(resolve(src, 'operator') + '/')).map(([, path]) => path.map((f) => relative(src, f)).join(' → ')),
    ).toEqual([]);
  });

  it('is refused as usage when asked twice', () => {
    expect(() => parseWhyArgs(['pvc/a', 'pvc/b'], {})).toThrow(UsageError);
  });
});
