import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../k8s/errors.ts';
import { FakeKubeClient } from '../k8s/testing/fake-client.ts';
import { KubeletSummarySource } from './kubelet.ts';

const now = new Date('2026-11-29T12:00:00Z');
const nodes = (...names: string[]): V1Node[] => names.map((name) => ({ metadata: { name } }));
const summary = (ns: string, pvc: string, used: number) => ({
  pods: [
    {
      volume: [
        { name: 'data', pvcRef: { namespace: ns, name: pvc }, time: '2026-11-29T11:59:50Z', capacityBytes: 1000, usedBytes: used, inodes: 100, inodesUsed: 7 },
        { name: 'tmp' },
      ],
    },
  ],
});

describe('KubeletSummarySource', () => {
  it('reads every node and keys samples by PVC; a failing node is reported and skipped', async () => {
    const fake = new FakeKubeClient();
    fake.summaries.set('a', summary('db', 'data-0', 100));
    fake.summaries.set('b', new ApiError(503, 'ServiceUnavailable', 'kubelet unreachable'));
    fake.summaries.set('c', summary('db', 'data-1', 200));
    const source = new KubeletSummarySource({ kubelet: fake, nodes: () => nodes('a', 'b', 'c'), concurrency: 2 });
    const report = await source.collect(now);
    expect([...report.samples.keys()].sort()).toEqual(['db/data-0', 'db/data-1']);
    expect(report.samples.get('db/data-1')).toEqual({
      at: new Date('2026-11-29T11:59:50Z'),
      usedBytes: 200n,
      capacityBytes: 1000n,
      inodes: 100,
      inodesUsed: 7,
    });
    expect(report.errors).toEqual([{ target: 'b', message: 'kubelet unreachable' }]);
  });

  it('dates a sample with the kubelet’s measurement time; skips one without (the time of reading would count a measurement twice)', async () => {
    const fake = new FakeKubeClient();
    const volume = (pvc: string, time?: string) => ({
      name: 'data',
      pvcRef: { namespace: 'db', name: pvc },
      ...(time ? { time } : {}),
      capacityBytes: 1000,
      usedBytes: 1,
    });
    fake.summaries.set('a', { pods: [{ volume: [volume('dated', '2026-11-29T11:59:10Z'), volume('undated'), volume('garbled', 'yesterday')] }] });
    const report = await new KubeletSummarySource({ kubelet: fake, nodes: () => nodes('a') }).collect(now);
    expect([...report.samples.keys()]).toEqual(['db/dated']);
    expect(report.samples.get('db/dated')?.at).toEqual(new Date('2026-11-29T11:59:10Z'));
  });

  it('of a claim two pods mount (each measured on its own schedule), keeps the newer measurement', async () => {
    const fake = new FakeKubeClient();
    const pod = (time: string, used: number) => ({
      volume: [{ name: 'data', pvcRef: { namespace: 'db', name: 'shared' }, time, capacityBytes: 1000, usedBytes: used }],
    });
    fake.summaries.set('a', { pods: [pod('2026-11-29T11:59:40Z', 300)] });
    fake.summaries.set('b', { pods: [pod('2026-11-29T11:59:55Z', 310), pod('2026-11-29T11:59:20Z', 290)] });
    const report = await new KubeletSummarySource({ kubelet: fake, nodes: () => nodes('a', 'b') }).collect(now);
    expect(report.samples.get('db/shared')).toMatchObject({ at: new Date('2026-11-29T11:59:55Z'), usedBytes: 310n });
  });

  it('gives up on a node that does not answer, without holding up the others', async () => {
    const fake = new FakeKubeClient();
    fake.summaries.set('fast', summary('db', 'x', 1));
    fake.statsSummary = async (node) => (node.metadata?.name === 'slow' ? new Promise(() => undefined) : summary('db', 'x', 1));
    const report = await new KubeletSummarySource({ kubelet: fake, nodes: () => nodes('slow', 'fast'), timeoutMs: 50 }).collect(now);
    expect(report.samples.has('db/x')).toBe(true);
    expect(report.errors[0]?.message).toMatch(/node slow: no answer within 50 ms/);
  });

  it('aborts the read of a node that does not answer in time (its connection is not left open)', async () => {
    const fake = new FakeKubeClient();
    const signals: AbortSignal[] = [];
    fake.statsSummary = async (_node, signal?: AbortSignal) => {
      if (signal) signals.push(signal);
      return new Promise(() => undefined);
    };
    await new KubeletSummarySource({ kubelet: fake, nodes: () => nodes('slow'), timeoutMs: 50 }).collect(now);
    expect(signals.map((s) => s.aborted)).toEqual([true]);
  });

  it('rejects a bad concurrency', () => {
    expect(() => new KubeletSummarySource({ kubelet: new FakeKubeClient(), nodes: () => [], concurrency: 0 })).toThrow(
      /concurrency must be a positive integer, got 0/,
    );
  });
});

// A compromised node's kubelet is a liar the API server does not vouch for: it could report any
// claim of the cluster as full, and pvx would grow it. Only its own pods' claims are believed.
describe('a node is believed only about the claims its own pods mount', () => {
  const pod = (name: string, node: string, claims: string[], ns = 'db'): V1Pod => ({
    metadata: { name, namespace: ns, uid: `uid-${name}` },
    spec: { nodeName: node, containers: [], volumes: claims.map((c) => ({ name: c, persistentVolumeClaim: { claimName: c } })) },
  });
  const report = (podName: string, ns: string, pvc: string, used: number, pvcNamespace = ns) => ({
    podRef: { name: podName, namespace: ns, uid: `uid-${podName}` },
    volume: [{ name: 'data', pvcRef: { namespace: pvcNamespace, name: pvc }, time: '2026-11-29T11:59:50Z', capacityBytes: 1000, usedBytes: used }],
  });

  it('keeps a claim a pod scheduled to the node mounts; drops the rest and names them', async () => {
    const fake = new FakeKubeClient();
    fake.summaries.set('a', {
      pods: [
        report('web-0', 'db', 'data-web-0', 100),
        // web-1 runs on node b: node a has no business reporting its claim.
        report('web-1', 'db', 'data-web-1', 999),
        // A pod of a (namespace, name) the node made up, or whose UID is another's.
        report('ghost', 'db', 'data-other', 999),
        // Its own pod, and a claim of another namespace: a pod mounts claims of its namespace only.
        report('web-0', 'db', 'data-web-0', 999, 'payments'),
      ],
    });
    fake.summaries.set('b', { pods: [report('web-1', 'db', 'data-web-1', 300)] });
    const pods = [pod('web-0', 'a', ['data-web-0']), pod('web-1', 'b', ['data-web-1'])];
    const source = new KubeletSummarySource({ kubelet: fake, nodes: () => nodes('a', 'b'), pods: () => pods });
    const read = await source.collect(now);
    expect(Object.fromEntries([...read.samples].map(([k, s]) => [k, s.usedBytes]))).toEqual({ 'db/data-web-0': 100n, 'db/data-web-1': 300n });
    expect(read.errors).toEqual([
      {
        target: 'a',
        message: expect.stringMatching(
          /^reported usage of claims db\/data-web-1, db\/data-other, payments\/data-web-0 that no pod scheduled to it mounts, as the API server has the pods: not believed$/,
        ),
      },
    ]);
  });

  it('a pod of the name with another UID (deleted and created again elsewhere) is not the pod reported', async () => {
    const fake = new FakeKubeClient();
    fake.summaries.set('a', { pods: [report('web-0', 'db', 'data-web-0', 100)] });
    const moved = { ...pod('web-0', 'a', ['data-web-0']), metadata: { name: 'web-0', namespace: 'db', uid: 'uid-new' } };
    const source = new KubeletSummarySource({ kubelet: fake, nodes: () => nodes('a'), pods: () => [moved] });
    expect((await source.collect(now)).samples.size).toBe(0);
  });
});
