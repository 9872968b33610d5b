import type { V1Node } from '@kubernetes/client-node';
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
