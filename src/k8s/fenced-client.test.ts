import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { createRuntimeMetrics } from '../metrics/runtime.ts';
import { Controller } from '../operator/runtime/controller.ts';
import { classify } from '../operator/runtime/errors.ts';
import { WorkQueue } from '../operator/runtime/workqueue.ts';
import type { KubeClient } from './client.ts';
import { FencedKubeClient, NotLeaderError, unfencedMethods } from './fenced-client.ts';
import { ForwardingKubeClient } from './forwarding-client.ts';
import { resources } from './resources.ts';
import { RetryAfterError } from './errors.ts';

type Method = keyof KubeClient;

/** Arguments for one call of each method of the port: a method added to KubeClient needs a row (tsc says so). */
const sampleArgs: Record<Method, unknown[]> = {
  list: [resources.persistentVolumeClaims, {}],
  watch: [resources.persistentVolumeClaims, { resourceVersion: '1' }, () => undefined, () => undefined],
  createServiceAccountToken: ['pvx-system', 'pvx-usage-reader', 600],
  createTokenReview: ['a-token'],
  createSubjectAccessReview: [{ user: { username: 'system:serviceaccount:monitoring:prometheus' }, path: '/metrics', verb: 'get' }],
  getServiceAccountKeys: [],
  getLease: ['pvx-system', 'pvx-leader'],
  createLease: ['pvx-system', { metadata: { name: 'pvx-leader' } }],
  updateLease: ['pvx-system', { metadata: { name: 'pvx-leader' } }],
  patchPvcSize: ['db', 'data-db-0', { resourceVersion: '7', uid: 'u1', storage: '40Gi', annotations: {} }],
  patchPvcAnnotations: ['db', 'data-db-0', { resourceVersion: '7', uid: 'u1', annotations: { 'pvx.dev/modifications': '{}' } }],
  patchRequestStatus: ['db', 'grow-data', { phase: 'Expanding' }, '12'],
  patchPolicyStatus: [{ kind: 'ClusterVolumeExpansionPolicy', name: 'guardrails' }, {}],
  emitEvent: [
    { regarding: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'db', name: 'data-db-0' }, type: 'Normal', reason: 'Expanding', message: 'm' },
  ],
  createRequest: ['db', { metadata: { name: 'grow-data-0' } }],
  deleteRequest: ['db', 'grow-data', 'u2'],
  patchRequestFinalizers: ['db', 'grow-web', ['pvx.dev/statefulset-record'], '12'],
  getStatefulSet: ['db', 'web'],
  deleteStatefulSetOrphan: ['db', 'web', { uid: 's1', resourceVersion: '9' }],
  createStatefulSet: ['db', { metadata: { name: 'web' } }],
  evictPod: ['db', 'web-0', 'p1'],
  createRecord: ['pvx-system', { metadata: { name: 'pvx-sts-r1' } }],
  updateRecord: ['pvx-system', { metadata: { name: 'pvx-sts-r1', resourceVersion: '3' } }],
  deleteRecord: ['pvx-system', 'pvx-sts-r1', 'c1'],
};

/** The methods the decorator forwards (its base, ForwardingKubeClient, defines them): every one of them not declared unfenced must be fenced. */
const decoratedMethods = Object.getOwnPropertyNames(ForwardingKubeClient.prototype).filter((n) => n !== 'constructor' && n !== 'through') as Method[];
const isUnfenced = (m: Method) => (unfencedMethods as readonly string[]).includes(m);
const fencedMethods = decoratedMethods.filter((m) => !isUnfenced(m));

/** A client that records each call and answers with a marker. */
function recordingClient() {
  const calls: { method: string; args: unknown[] }[] = [];
  const client = new Proxy({} as KubeClient, {
    get:
      (_, method: string) =>
      async (...args: unknown[]) => {
        calls.push({ method, args });
        return `${method} result`;
      },
  });
  return { client, calls };
}

function call(client: KubeClient, method: Method): Promise<unknown> {
  return (client[method] as (...a: unknown[]) => Promise<unknown>)(...sampleArgs[method]);
}

describe('FencedKubeClient', () => {
  it('decorates exactly the methods of the port', () => {
    expect([...decoratedMethods].sort()).toEqual(Object.keys(sampleArgs).sort());
  });

  it('fences every write: the claims’ and requests’ patches, policy status, Events, requests created and deleted, StatefulSets deleted and created, their records, evictions', () => {
    expect([...fencedMethods].sort()).toEqual([
      'createRecord',
      'createRequest',
      'createStatefulSet',
      'deleteRecord',
      'deleteRequest',
      'deleteStatefulSetOrphan',
      'emitEvent',
      'evictPod',
      'patchPolicyStatus',
      'patchPvcAnnotations',
      'patchPvcSize',
      'patchRequestFinalizers',
      'patchRequestStatus',
      'updateRecord',
    ]);
  });

  it.each(fencedMethods)('%s is not sent while the replica may not write, and is retried later', async (method) => {
    const { client, calls } = recordingClient();
    const fenced = new FencedKubeClient(client, { canWrite: () => false });
    const err = await call(fenced, method).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotLeaderError);
    expect(err).toBeInstanceOf(RetryAfterError);
    expect(classify(err)).toEqual({ kind: 'retryAfter', delayMs: 2000 });
    expect((err as Error).message).toMatch(/^not the leader \(or the leader lease was not renewed within its deadline\): did not /);
    expect(calls).toEqual([]);
  });

  it.each(fencedMethods)('%s is sent, unchanged, while the replica may write', async (method) => {
    const { client, calls } = recordingClient();
    const fenced = new FencedKubeClient(client, { canWrite: () => true });
    expect(await call(fenced, method)).toBe(`${method} result`);
    expect(calls).toEqual([{ method, args: sampleArgs[method] }]);
  });

  it.each([...unfencedMethods])(
    '%s passes even when the replica may not write (caches, usage, the election itself, the reviews of scrapes)',
    async (method) => {
      const { client, calls } = recordingClient();
      const fenced = new FencedKubeClient(client, { canWrite: () => false });
      expect(await call(fenced, method)).toBe(`${method} result`);
      expect(calls).toEqual([{ method, args: sampleArgs[method] }]);
    },
  );

  it('asks canWrite() at each call, not once', async () => {
    const { client, calls } = recordingClient();
    let leader = true;
    const fenced = new FencedKubeClient(client, { canWrite: () => leader });
    await fenced.patchRequestStatus('db', 'a', {}, '1');
    leader = false;
    await expect(fenced.patchRequestStatus('db', 'b', {}, '1')).rejects.toThrow('did not patch the status of VolumeExpansionRequest db/b');
    expect(calls.map((c) => c.args[1])).toEqual(['a']);
  });

  it('names the object a refused write was for', async () => {
    const fenced = new FencedKubeClient(recordingClient().client, { canWrite: () => false, retryAfterMs: 500 });
    await expect(call(fenced, 'patchPvcSize')).rejects.toThrow('did not patch the size of PersistentVolumeClaim db/data-db-0');
    await expect(call(fenced, 'emitEvent')).rejects.toThrow('did not emit the Expanding Event on PersistentVolumeClaim db/data-db-0');
    await expect(call(fenced, 'patchPolicyStatus')).rejects.toThrow('did not patch the status of ClusterVolumeExpansionPolicy guardrails');
    expect(classify(await call(fenced, 'deleteRequest').catch((e: unknown) => e))).toEqual({ kind: 'retryAfter', delayMs: 500 });
  });

  it.each([-1, NaN, Infinity])('refuses a retry delay of %s', (ms) => {
    expect(() => new FencedKubeClient(recordingClient().client, { canWrite: () => true, retryAfterMs: ms })).toThrow(
      new TypeError(`retryAfterMs must be a finite number of ms ≥ 0, got ${ms}`),
    );
  });

  it('makes a controller retry the reconcile once the fence opens, without counting a failure', async () => {
    vi.useFakeTimers();
    try {
      const { client, calls } = recordingClient();
      let leader = false;
      const fenced = new FencedKubeClient(client, { canWrite: () => leader });
      const metrics = createRuntimeMetrics(new Registry(), { processMetrics: false });
      const queue = new WorkQueue({ name: 'fence', metrics: metrics.workqueue });
      const controller = new Controller({
        name: 'fence',
        queue,
        logger: pino({ level: 'silent' }),
        metrics: metrics.controller,
        reconcile: async (key) => {
          await fenced.patchRequestStatus('db', key, { phase: 'Expanding' }, '1');
        },
      });
      controller.start();
      queue.add('grow-data');
      await vi.advanceTimersByTimeAsync(1000);
      expect(calls).toEqual([]);
      leader = true; // the lease was renewed
      await vi.advanceTimersByTimeAsync(1000);
      expect(calls.map((c) => c.method)).toEqual(['patchRequestStatus']);
      const results = (await metrics.registry.getSingleMetric('controller_runtime_reconcile_total')?.get())?.values.map((v) => [v.labels.result, v.value]);
      expect(results).toEqual(
        expect.arrayContaining([
          ['requeue_after', 1],
          ['success', 1],
        ]),
      );
      expect(results?.find(([r]) => r === 'error')?.[1] ?? 0).toBe(0);
      await controller.stop(1000);
    } finally {
      vi.useRealTimers();
    }
  });
});
