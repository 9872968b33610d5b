import type { KubernetesObject } from '@kubernetes/client-node';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { KubeClient } from './client.ts';
import { ApiError } from './errors.ts';
import { FakeKubeClient } from './testing/fake-client.ts';
import { resources } from './resources.ts';
import { Informer } from './informer.ts';

const pvcs = resources.persistentVolumeClaims;
const logger = pino({ level: 'silent' });
const day = 24 * 3_600_000;

const pvc = (name: string, size = '1Gi', namespace = 'ns'): KubernetesObject & { spec: unknown } => ({
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name, namespace },
  spec: { resources: { requests: { storage: size } } },
});

const sizeOf = (o: KubernetesObject | undefined) =>
  (o as { spec?: { resources?: { requests?: { storage?: string } } } } | undefined)?.spec?.resources?.requests?.storage;

let fake: FakeKubeClient;
let informer: Informer;
let seen: string[];

function startInformer(extra: Partial<ConstructorParameters<typeof Informer>[0]> = {}) {
  informer = new Informer({ type: pvcs, client: fake, logger, backoffInitialMs: 100, backoffMaxMs: 1000, pageSize: 2, ...extra });
  seen = [];
  informer.on({
    onAdd: (o) => seen.push(`add ${o.metadata?.name} ${sizeOf(o)}`),
    onUpdate: (_old, o) => seen.push(`update ${o.metadata?.name} ${sizeOf(o)}`),
    onDelete: (o) => seen.push(`delete ${o.metadata?.name}`),
  });
  informer.start();
}

beforeEach(() => {
  vi.useFakeTimers();
  fake = new FakeKubeClient();
});

afterEach(async () => {
  await informer?.stop();
  vi.useRealTimers();
});

describe('Informer', () => {
  it('lists every page, then syncs and follows watch events', async () => {
    for (const n of ['a', 'b', 'c', 'd', 'e']) fake.create(pvcs, pvc(n));
    startInformer();
    await informer.waitForSync();
    expect(informer.keys().sort()).toEqual(['ns/a', 'ns/b', 'ns/c', 'ns/d', 'ns/e']);
    expect(fake.calls.filter((c) => c === 'list persistentvolumeclaims')).toHaveLength(3); // pages of 2
    await vi.advanceTimersByTimeAsync(0);

    fake.update(pvcs, { ...fake.get(pvcs, 'ns', 'a'), spec: pvc('a', '2Gi').spec } as KubernetesObject);
    fake.delete(pvcs, 'ns', 'b');
    fake.create(pvcs, pvc('f'));
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.slice(5)).toEqual(['update a 2Gi', 'delete b', 'add f 1Gi']);
    expect(sizeOf(informer.get('ns/a'))).toBe('2Gi');
    expect(informer.get('ns/b')).toBeUndefined();
    expect(informer.lastResourceVersion).toBe(fake.resourceVersion);
  });

  it('resumes a broken watch from the last version and sees changes made while it was down', async () => {
    fake.create(pvcs, pvc('a'));
    startInformer();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    fake.breakWatches(new Error('ECONNRESET'));
    // While the informer backs off, the cluster changes.
    fake.update(pvcs, { ...fake.get(pvcs, 'ns', 'a'), spec: pvc('a', '5Gi').spec } as KubernetesObject);
    fake.create(pvcs, pvc('new'));
    expect(seen).toEqual(['add a 1Gi']);
    await vi.advanceTimersByTimeAsync(200);
    expect(seen).toEqual(['add a 1Gi', 'update a 5Gi', 'add new 1Gi']);
    expect(fake.calls.filter((c) => c.startsWith('list'))).toHaveLength(1); // resumed, not relisted
    expect(fake.openWatches).toBe(1);
  });

  it('relists on 410 Gone and delivers the difference as add/update/delete', async () => {
    fake.create(pvcs, pvc('keep'));
    fake.create(pvcs, pvc('change'));
    fake.create(pvcs, pvc('remove'));
    startInformer();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    fake.breakWatches(new Error('apiserver restarting'));
    fake.update(pvcs, { ...fake.get(pvcs, 'ns', 'change'), spec: pvc('change', '3Gi').spec } as KubernetesObject);
    fake.delete(pvcs, 'ns', 'remove');
    fake.create(pvcs, pvc('added'));
    fake.compact(); // the history the informer would resume from is gone
    await vi.advanceTimersByTimeAsync(500);
    expect(seen.slice(3).sort()).toEqual(['add added 1Gi', 'delete remove', 'update change 3Gi']);
    expect(informer.keys().sort()).toEqual(['ns/added', 'ns/change', 'ns/keep']);
    expect(fake.calls.filter((c) => c.startsWith('list'))).toHaveLength(2 + 2); // two lists of 2 pages each
  });

  // Simulation seed 3051716: a claim created again under its name at the size the cache showed
  // looked like no change to a handler that compares sizes, and was never looked at.
  it('delivers an object created again under its name, its deletion unseen, as a deletion and an addition (a relist)', async () => {
    fake.create(pvcs, pvc('a', '2Gi'));
    startInformer();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    fake.breakWatches(new Error('apiserver restarting'));
    fake.delete(pvcs, 'ns', 'a');
    fake.create(pvcs, pvc('a', '2Gi'));
    fake.compact();
    await vi.advanceTimersByTimeAsync(500);
    expect(seen).toEqual(['add a 2Gi', 'delete a', 'add a 2Gi']);
  });

  it('delivers an object created again under its name, its DELETED event lost, as a deletion and an addition (a watch)', async () => {
    const dropDeletes: KubeClient['watch'] = (type, opts, onEvent, onEnd) => fake.watch(type, opts, (e) => e.type !== 'DELETED' && onEvent(e), onEnd);
    const lossy = new Proxy(fake, { get: (t, p) => (p === 'watch' ? dropDeletes : Reflect.get(t, p, t)) });
    fake.create(pvcs, pvc('a', '2Gi'));
    fake.create(pvcs, pvc('b'));
    startInformer({ client: lossy });
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    const uid = fake.get(pvcs, 'ns', 'a')?.metadata?.uid;
    fake.delete(pvcs, 'ns', 'a');
    fake.create(pvcs, pvc('a', '2Gi'));
    fake.update(pvcs, { ...fake.get(pvcs, 'ns', 'b'), spec: pvc('b', '3Gi').spec } as KubernetesObject);
    await vi.advanceTimersByTimeAsync(0);
    expect(seen.slice(2)).toEqual(['delete a', 'add a 2Gi', 'update b 3Gi']);
    expect(informer.get('ns/a')?.metadata?.uid).not.toBe(uid);
  });

  it('keeps retrying with growing, capped backoff while the API server is unreachable', async () => {
    startInformer();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    for (let i = 0; i < 20; i++) fake.failNext('watch', new Error('ECONNREFUSED'));
    fake.breakWatches(new Error('ECONNRESET'));
    await vi.advanceTimersByTimeAsync(10_000);
    const attempts = fake.calls.filter((c) => c.startsWith('watch')).length - 1;
    // 100, 200, 400, 800 ms, then ≤1.2 s each: about 11 attempts in 10 s, not hundreds.
    expect(attempts).toBeGreaterThanOrEqual(8);
    expect(attempts).toBeLessThanOrEqual(14);
    await vi.advanceTimersByTimeAsync(20_000);
    expect(fake.openWatches).toBe(1); // healed once the failures stopped
    fake.create(pvcs, pvc('after'));
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toContain('add after 1Gi');
  });

  it('retries a failed first list and becomes synced only once it succeeds', async () => {
    fake.failNext('list', new ApiError(503, 'ServiceUnavailable', 'etcd not ready'));
    fake.create(pvcs, pvc('a'));
    startInformer();
    await vi.advanceTimersByTimeAsync(50);
    expect(informer.hasSynced()).toBe(false);
    await vi.advanceTimersByTimeAsync(200);
    expect(informer.hasSynced()).toBe(true);
    expect(informer.keys()).toEqual(['ns/a']);
  });

  it('cuts and resumes a stream that stays silent past the watchdog', async () => {
    startInformer({ watchdogMs: 5000 });
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    const watches = () => fake.calls.filter((c) => c.startsWith('watch')).length;
    expect(watches()).toBe(1);
    await vi.advanceTimersByTimeAsync(5000);
    expect(watches()).toBe(2);
  });

  it('abandons a watch request the server does not answer, and retries it', async () => {
    startInformer({ connectTimeoutMs: 3000 });
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    const hang = new Promise<never>(() => undefined);
    const realWatch = fake.watch.bind(fake);
    let hung = 0;
    fake.watch = (...args) => (hung++ < 1 ? hang : realWatch(...args));
    fake.breakWatches(new Error('ECONNRESET'));
    await vi.advanceTimersByTimeAsync(2000);
    expect(hung).toBe(1);
    await vi.advanceTimersByTimeAsync(2000); // 3 s connect timeout, then ≤ 0.12 s backoff
    expect(fake.openWatches).toBe(1);
    fake.create(pvcs, pvc('seen'));
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toContain('add seen 1Gi');
  });

  it('aborts the watch request it abandons, so each retry does not leave one more connection open', async () => {
    startInformer({ connectTimeoutMs: 3000 });
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    const signals: (AbortSignal | undefined)[] = [];
    const realWatch = fake.watch.bind(fake);
    fake.watch = (type, opts, ...rest) => {
      signals.push(opts.signal);
      return signals.length <= 3 ? new Promise<never>(() => undefined) : realWatch(type, opts, ...rest);
    };
    fake.breakWatches(new Error('ECONNRESET'));
    await vi.advanceTimersByTimeAsync(15_000);
    expect(signals.length).toBeGreaterThanOrEqual(4);
    // The three unanswered requests were each aborted when abandoned; the answered one is open.
    expect(signals.map((s) => s?.aborted)).toEqual([true, true, true, false, ...signals.slice(4).map(() => false)]);
  });

  it('does not spin on a stream that closes at once without events', async () => {
    startInformer();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    for (let i = 0; i < 10; i++) {
      fake.breakWatches(); // a normal close, immediately
      await vi.advanceTimersByTimeAsync(0);
    }
    await vi.advanceTimersByTimeAsync(1000);
    expect(fake.calls.filter((c) => c.startsWith('watch')).length).toBeLessThan(8);
  });

  it('does not spin on quick closes when the wall clock steps forward meanwhile', async () => {
    startInformer();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    for (let i = 0; i < 10; i++) {
      vi.setSystemTime(Date.now() + 3_600_000); // an NTP step: the stream did not last an hour
      fake.breakWatches();
      await vi.advanceTimersByTimeAsync(0);
    }
    await vi.advanceTimersByTimeAsync(1000);
    expect(fake.calls.filter((c) => c.startsWith('watch')).length).toBeLessThan(8);
  });

  it('keeps a stream for a 30-day watchdog instead of cutting it every millisecond', async () => {
    startInformer({ watchdogMs: 30 * day });
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(fake.calls.filter((c) => c.startsWith('watch'))).toHaveLength(1);
  });

  it('waits out a 30-day backoff instead of retrying at once', async () => {
    fake.failNext('list', new Error('ECONNREFUSED'));
    startInformer({ backoffInitialMs: 30 * day, backoffMaxMs: 30 * day });
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(fake.calls.filter((c) => c.startsWith('list'))).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(36 * day); // 30 days × the jitter's 1.2 at most
    expect(informer.hasSynced()).toBe(true);
  });

  it('survives a throwing event handler', async () => {
    startInformer();
    informer.on({
      onAdd: () => {
        throw new Error('handler bug');
      },
    });
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    fake.create(pvcs, pvc('x'));
    fake.create(pvcs, pvc('y'));
    await vi.advanceTimersByTimeAsync(0);
    expect(seen).toEqual(['add x 1Gi', 'add y 1Gi']);
  });

  it('applies the type transform before caching (pods keep only what pvx reads)', async () => {
    const podsInformer = new Informer({ type: resources.pods, client: fake, logger });
    fake.create(resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'ns', managedFields: [{ manager: 'kubectl' }] },
      spec: {
        nodeName: 'n1',
        containers: [{ name: 'c', image: 'busybox', env: [{ name: 'A', value: 'x'.repeat(1000) }] }],
        volumes: [
          { name: 'd', persistentVolumeClaim: { claimName: 'data' } },
          { name: 'tmp', emptyDir: {} },
        ],
      },
      status: { phase: 'Running' },
    } as KubernetesObject);
    podsInformer.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(podsInformer.hasSynced()).toBe(true);
    const cached = podsInformer.get('ns/p') as KubernetesObject & { spec: Record<string, unknown> };
    expect(cached.spec).toEqual({ nodeName: 'n1', volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'data' } }] });
    expect(cached.metadata?.managedFields).toBeUndefined();
    await podsInformer.stop();
  });

  it("adds a field selector to the kind's own, on every list and watch", async () => {
    const asked: (string | undefined)[] = [];
    const client: Pick<KubeClient, 'list' | 'watch'> = {
      list: (type, opts) => (asked.push(opts.fieldSelector), fake.list(type, opts)),
      watch: (type, opts, onEvent, onEnd) => (asked.push(opts.fieldSelector), fake.watch(type, opts, onEvent, onEnd)),
    };
    informer = new Informer({ type: resources.pods, client, fieldSelector: 'metadata.name=p' });
    informer.start();
    await informer.waitForSync();
    await vi.advanceTimersByTimeAsync(0);
    expect(asked).toEqual(['status.phase!=Succeeded,status.phase!=Failed,metadata.name=p', 'status.phase!=Succeeded,status.phase!=Failed,metadata.name=p']);
  });

  it("tells onFailure of each failed list or watch and when it is tried again; a refusal in the stream is the API server's answer", async () => {
    let refuse = true;
    const client: Pick<KubeClient, 'list' | 'watch'> = {
      list: (type, opts) => fake.list(type, opts),
      watch: async (type, opts, onEvent, onEnd) => {
        if (!refuse) return fake.watch(type, opts, onEvent, onEnd);
        refuse = false;
        setTimeout(() => onEvent({ type: 'ERROR', object: { code: 403, reason: 'Forbidden', message: 'persistentvolumeclaims is forbidden' } as never }), 0);
        return { stop: () => undefined };
      },
    };
    const failures: [unknown, number][] = [];
    fake.failNext('list', new ApiError(503, 'ServiceUnavailable', 'etcd not ready'));
    startInformer({ client, onFailure: (err, retryInMs) => failures.push([err, retryInMs]) });
    await vi.advanceTimersByTimeAsync(1000);
    expect(informer.hasSynced()).toBe(true);
    expect(failures.map(([err]) => [(err as ApiError).code, (err as ApiError).message])).toEqual([
      [503, 'etcd not ready'],
      [403, 'persistentvolumeclaims is forbidden'],
    ]);
    for (const [, retryInMs] of failures) expect(retryInMs).toBeGreaterThanOrEqual(80); // the first backoff, 100 ms ± 20 %
    expect(fake.openWatches).toBe(1);
  });

  it('rejects bad options with a TypeError naming the value', () => {
    expect(() => new Informer({ type: pvcs, client: fake, logger, pageSize: 0 })).toThrow(/pageSize must be a finite number above 0, got 0/);
    expect(() => new Informer({ type: pvcs, client: fake, logger, watchdogMs: Infinity })).toThrow(/watchdogMs must be a finite number above 0, got Infinity/);
  });
});
