import pino from 'pino';
import { Gauge, Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { KubeClient } from '../../k8s/client.ts';
import type { V1Lease } from '@kubernetes/client-node';
import { FakeKubeClient } from '../../k8s/testing/fake-client.ts';
import { LeaderElector, renewMs } from './leader.ts';

const logger = pino({ level: 'silent' });
let fake: FakeKubeClient;
const electors: LeaderElector[] = [];

/** The fake API server as seen by one candidate, which a test can cut off from it. */
function connection(partitioned: { value: boolean }): KubeClient {
  const guard =
    <A extends unknown[], R>(f: (...a: A) => Promise<R>) =>
    (...a: A): Promise<R> =>
      partitioned.value ? Promise.reject(new Error('ECONNREFUSED')) : f(...a);
  return {
    list: guard(fake.list.bind(fake)),
    watch: guard(fake.watch.bind(fake)),
    getLease: guard(fake.getLease.bind(fake)),
    createLease: guard(fake.createLease.bind(fake)),
    updateLease: guard(fake.updateLease.bind(fake)),
    patchPvcSize: guard(fake.patchPvcSize.bind(fake)),
    patchPvcAnnotations: guard(fake.patchPvcAnnotations.bind(fake)),
    patchRequestStatus: guard(fake.patchRequestStatus.bind(fake)),
    emitEvent: guard(fake.emitEvent.bind(fake)),
    deleteRequest: guard(fake.deleteRequest.bind(fake)),
    createRequest: guard(fake.createRequest.bind(fake)),
    patchPolicyStatus: guard(fake.patchPolicyStatus.bind(fake)),
    createServiceAccountToken: guard(fake.createServiceAccountToken.bind(fake)),
    createTokenReview: guard(fake.createTokenReview.bind(fake)),
    createSubjectAccessReview: guard(fake.createSubjectAccessReview.bind(fake)),
    getServiceAccountKeys: guard(fake.getServiceAccountKeys.bind(fake)),
    patchRequestFinalizers: guard(fake.patchRequestFinalizers.bind(fake)),
    getStatefulSet: guard(fake.getStatefulSet.bind(fake)),
    deleteStatefulSetOrphan: guard(fake.deleteStatefulSetOrphan.bind(fake)),
    createStatefulSet: guard(fake.createStatefulSet.bind(fake)),
    evictPod: guard(fake.evictPod.bind(fake)),
    createRecord: guard(fake.createRecord.bind(fake)),
    updateRecord: guard(fake.updateRecord.bind(fake)),
    deleteRecord: guard(fake.deleteRecord.bind(fake)),
  };
}

function candidate(identity: string, events: string[] = [], partitioned = { value: false }) {
  const e = new LeaderElector({
    client: connection(partitioned),
    namespace: 'pvx-system',
    name: 'pvx-leader',
    identity,
    logger,
    onStartedLeading: () => events.push(`${identity} leads`),
    onStoppedLeading: () => events.push(`${identity} stopped`),
  });
  electors.push(e);
  return e;
}

beforeEach(() => {
  vi.useFakeTimers();
  fake = new FakeKubeClient();
});

afterEach(async () => {
  for (const e of electors.splice(0)) {
    const done = e.release();
    await vi.advanceTimersByTimeAsync(3000);
    await done;
  }
  vi.useRealTimers();
});

const holder = async () => (await fake.getLease('pvx-system', 'pvx-leader'))?.spec?.holderIdentity;

describe('renewMs', () => {
  // Seed 150706: renewals 1 ms apart (the wall clock stepped back) read alike through String(),
  // which keeps whole seconds: a candidate took the lease from a leader still renewing.
  it('tells renewals within one second apart, read as text or as a Date', () => {
    expect(renewMs(new Date('2026-01-05T09:01:15.001Z'))).not.toBe(renewMs(new Date('2026-01-05T09:01:15.002Z')));
    expect(renewMs('2026-01-05T09:01:15.123456Z')).toBe(renewMs(new Date('2026-01-05T09:01:15.123Z')));
    expect(renewMs(undefined)).toBe('');
  });
});

describe('LeaderElector', () => {
  // Seed 53204: the wall clock stepped back by exactly the renew period, so a renewal wrote the
  // renewTime the lease held already: no change, not stored, and to a candidate no renewal at all.
  it('renews with a later renewTime however the wall clock steps back', async () => {
    const a = candidate('a');
    a.start();
    await vi.advanceTimersByTimeAsync(100);
    const first = (await fake.getLease('pvx-system', 'pvx-leader')) as V1Lease;
    vi.setSystemTime(Date.now() - 5000);
    await vi.advanceTimersByTimeAsync(5000);
    const next = (await fake.getLease('pvx-system', 'pvx-leader')) as V1Lease;
    expect(next.metadata?.resourceVersion).not.toBe(first.metadata?.resourceVersion);
    expect(new Date(next.spec?.renewTime as Date).getTime()).toBeGreaterThan(new Date(first.spec?.renewTime as Date).getTime());
    expect(a.isLeader()).toBe(true);
  });

  it('elects exactly one of two candidates', async () => {
    const events: string[] = [];
    const a = candidate('a', events);
    const b = candidate('b', events);
    a.start();
    b.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect([a.isLeader(), b.isLeader()].filter(Boolean)).toHaveLength(1);
    expect(events).toHaveLength(1);
    expect(await holder()).toBe(events[0]?.split(' ')[0]);
  });

  it('publishes leader_election_master_status from every candidate: 1 for the leader, 0 for the standby', async () => {
    // Each replica is its own process, with its own registry.
    const withGauge = (identity: string) => {
      const gauge = new Gauge({ name: 'leader_election_master_status', help: 'leading', labelNames: ['name'] as const, registers: [new Registry()] });
      const e = new LeaderElector({
        client: connection({ value: false }),
        namespace: 'pvx-system',
        name: 'pvx-leader',
        identity,
        logger,
        metric: gauge,
        onStartedLeading() {},
        onStoppedLeading() {},
      });
      electors.push(e);
      return { e, gauge };
    };
    const leader = withGauge('a');
    leader.e.start();
    await vi.advanceTimersByTimeAsync(100);
    const standby = withGauge('b');
    standby.e.start();
    await vi.advanceTimersByTimeAsync(100);
    expect((await leader.gauge.get()).values).toEqual([{ labels: { name: 'pvx-leader' }, value: 1 }]);
    expect((await standby.gauge.get()).values).toEqual([{ labels: { name: 'pvx-leader' }, value: 0 }]);
  });

  it('lets a standby take over only after the lease duration once the leader stops renewing', async () => {
    const aCutOff = { value: false };
    const a = candidate('a', [], aCutOff);
    a.start();
    await vi.advanceTimersByTimeAsync(100);
    expect(a.isLeader()).toBe(true);
    // The leader is cut off from the API server: its renewals stop.
    aCutOff.value = true;
    const b = candidate('b');
    b.start();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(a.isLeader()).toBe(false); // fenced: it stopped claiming leadership at the renew deadline
    expect(b.isLeader()).toBe(false); // the lease has not expired yet for b
    await vi.advanceTimersByTimeAsync(9_000);
    expect(b.isLeader()).toBe(true);
    expect(await holder()).toBe('b');
  });

  it('dates a renewal it read from when the read returned: a slow read does not make the leader look expired (seed 1163707)', async () => {
    const aCutOff = { value: false };
    const a = candidate('a', [], aCutOff);
    a.start();
    await vi.advanceTimersByTimeAsync(100);
    // b's next read of the lease takes 12 s: the answer is the lease as it is when it arrives.
    let slowReads = 0;
    const direct = connection({ value: false });
    const b = new LeaderElector({
      client: {
        ...direct,
        getLease: async (namespace, name) => {
          if (slowReads-- > 0) await new Promise((resolve) => setTimeout(resolve, 12_000));
          return direct.getLease(namespace, name);
        },
      },
      namespace: 'pvx-system',
      name: 'pvx-leader',
      identity: 'b',
      logger,
      onStartedLeading: () => undefined,
      onStoppedLeading: () => undefined,
    });
    electors.push(b);
    b.start();
    await vi.advanceTimersByTimeAsync(100);
    slowReads = 1;
    // b's read sent at ~2 s answers at ~14 s with a's renewal of 10 s; a is cut off after it, and
    // its fence stays open until 20 s: b, counting from 2 s, would take over at ~18 s.
    await vi.advanceTimersByTimeAsync(14_000);
    aCutOff.value = true;
    let bothAt: number | undefined;
    const cutAt = performance.now();
    while (!b.isLeader() && performance.now() - cutAt < 40_000) {
      await vi.advanceTimersByTimeAsync(100);
      if (a.isLeader() && b.isLeader()) bothAt ??= performance.now() - cutAt;
    }
    expect(bothAt).toBeUndefined();
    expect(b.isLeader()).toBe(true);
    expect(await holder()).toBe('b');
  });

  it('fences writes before the lease can expire: isLeader() turns false within the renew deadline', async () => {
    const events: string[] = [];
    const aCutOff = { value: false };
    const a = candidate('a', events, aCutOff);
    a.start();
    await vi.advanceTimersByTimeAsync(100);
    aCutOff.value = true;
    const lostAt = Date.now();
    while (a.isLeader()) await vi.advanceTimersByTimeAsync(100);
    const fencedAfter = Date.now() - lostAt;
    expect(fencedAfter).toBeLessThanOrEqual(10_000);
    expect(fencedAfter).toBeLessThan(15_000); // the lease duration
    await vi.advanceTimersByTimeAsync(2_500);
    expect(events).toEqual(['a leads', 'a stopped']);
  });

  it('renews every 5 s while it succeeds, retries every 2 s after a miss, and keeps the lease through an outage shorter than the deadline', async () => {
    const events: string[] = [];
    const cutOff = { value: false };
    const attempts: number[] = [];
    const base = connection(cutOff);
    const a = new LeaderElector({
      // An attempt is an update of the lease held, or (after a miss) a read of it first.
      client: {
        ...base,
        updateLease: (ns, l) => (attempts.at(-1) !== Date.now() && attempts.push(Date.now()), base.updateLease(ns, l)),
        getLease: (ns, n) => (attempts.push(Date.now()), base.getLease(ns, n)),
      },
      namespace: 'pvx-system',
      name: 'pvx-leader',
      identity: 'a',
      logger,
      onStartedLeading: () => events.push('a leads'),
      onStoppedLeading: () => events.push('a stopped'),
    });
    electors.push(a);
    a.start();
    await vi.advanceTimersByTimeAsync(20_100);
    const steady = attempts.slice(-3);
    expect(steady.slice(1).map((t, i) => t - (steady[i] as number))).toEqual([5_000, 5_000]);
    // Cut off just after a renewal: the next attempt (5 s) fails, then one every 2 s.
    cutOff.value = true;
    attempts.length = 0;
    await vi.advanceTimersByTimeAsync(7_000);
    expect(attempts.slice(1).map((t, i) => t - (attempts[i] as number))).toEqual([2_000]);
    expect(a.isLeader()).toBe(true); // 7 s since the last renewal: the fence (10 s) is still open
    cutOff.value = false;
    await vi.advanceTimersByTimeAsync(2_000);
    expect(a.isLeader()).toBe(true);
    expect(events).toEqual(['a leads']);
  });

  it('refuses a renew period outside retryPeriod … renewDeadline', () => {
    const make = (renewPeriodMs: number) =>
      new LeaderElector({ client: fake, namespace: 'n', name: 'l', identity: 'a', logger, renewPeriodMs, onStartedLeading() {}, onStoppedLeading() {} });
    expect(() => make(1_000)).toThrow(/retryPeriod ≤ renewPeriod < renewDeadline, got 2000 \/ 1000 \/ 10000 ms/);
    expect(() => make(10_000)).toThrow(/got 2000 \/ 10000 \/ 10000 ms/);
    expect(() => make(5_000)).not.toThrow();
  });

  it('closes the fence at the renew deadline on the monotonic clock when the wall clock steps back an hour', async () => {
    const cutOff = { value: false };
    const events: string[] = [];
    const a = new LeaderElector({
      client: connection(cutOff),
      namespace: 'pvx-system',
      name: 'pvx-leader',
      identity: 'a',
      logger,
      onStartedLeading: () => events.push('a leads'),
      onStoppedLeading: () => events.push('a stopped'),
      monotonicNow: () => performance.now(),
      wallNow: () => Date.now(),
    });
    electors.push(a);
    a.start();
    await vi.advanceTimersByTimeAsync(100);
    expect(a.isLeader()).toBe(true);
    cutOff.value = true;
    const lostAt = performance.now();
    vi.setSystemTime(Date.now() - 3_600_000); // an NTP step back
    while (a.isLeader() && performance.now() - lostAt < 3_600_000) await vi.advanceTimersByTimeAsync(100);
    expect(performance.now() - lostAt).toBeLessThanOrEqual(10_000); // the renew deadline
    await vi.advanceTimersByTimeAsync(2_500);
    expect(events).toEqual(['a leads', 'a stopped']);
  });

  it('writes wall-clock times into the Lease', async () => {
    const wall = Date.parse('2026-01-02T03:04:05.000Z');
    const a = new LeaderElector({
      client: fake,
      namespace: 'pvx-system',
      name: 'pvx-leader',
      identity: 'a',
      logger,
      onStartedLeading() {},
      onStoppedLeading() {},
      wallNow: () => wall,
    });
    electors.push(a);
    a.start();
    await vi.advanceTimersByTimeAsync(100);
    const spec = (await fake.getLease('pvx-system', 'pvx-leader'))?.spec;
    expect(new Date(String(spec?.renewTime)).toISOString()).toBe('2026-01-02T03:04:05.000Z');
    expect(new Date(String(spec?.acquireTime)).toISOString()).toBe('2026-01-02T03:04:05.000Z');
  });

  it('hands over at once when the leader releases the lease', async () => {
    const a = candidate('a');
    const b = candidate('b');
    a.start();
    await vi.advanceTimersByTimeAsync(100);
    b.start();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(b.isLeader()).toBe(false);
    const released = a.release();
    await vi.advanceTimersByTimeAsync(10);
    await released;
    expect(await holder()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(2_500); // one retry period (+ jitter)
    expect(b.isLeader()).toBe(true);
  });

  it('keeps the lease while it renews', async () => {
    const a = candidate('a');
    const b = candidate('b');
    a.start();
    await vi.advanceTimersByTimeAsync(100);
    b.start();
    await vi.advanceTimersByTimeAsync(120_000);
    expect(a.isLeader()).toBe(true);
    expect(b.isLeader()).toBe(false);
    const lease = await fake.getLease('pvx-system', 'pvx-leader');
    expect(lease?.spec?.leaseTransitions).toBe(0);
  });

  it('renews with one write and no read, and reads again only after someone else wrote the lease', async () => {
    const calls: string[] = [];
    const counting: KubeClient = {
      ...connection({ value: false }),
      getLease: (ns, n) => (calls.push('get'), fake.getLease(ns, n)),
      updateLease: (ns, l) => (calls.push('update'), fake.updateLease(ns, l)),
      createLease: (ns, l) => (calls.push('create'), fake.createLease(ns, l)),
    };
    const a = new LeaderElector({
      client: counting,
      namespace: 'pvx-system',
      name: 'pvx-leader',
      identity: 'a',
      logger,
      onStartedLeading() {},
      onStoppedLeading() {},
    });
    electors.push(a);
    a.start();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(a.isLeader()).toBe(true);
    // get (absent) + create, then one update per 5 s renew period: 12 renewals in a minute.
    expect(calls.slice(0, 2)).toEqual(['get', 'create']);
    expect(calls.slice(2).every((c) => c === 'update')).toBe(true);
    expect(calls.length - 2).toBe(12);
    // Another writer changes the lease (e.g. an administrator's kubectl edit): the next renewal
    // fails its precondition, the one after reads the lease again, and the leader keeps it.
    const lease = (await fake.getLease('pvx-system', 'pvx-leader'))!;
    await fake.updateLease('pvx-system', { ...lease, metadata: { ...lease.metadata, labels: { edited: 'yes' } } });
    calls.length = 0;
    // The next renewal (within 5 s) fails; the retry 2 s later reads, then writes.
    await vi.advanceTimersByTimeAsync(7_500);
    expect(calls.slice(0, 3)).toEqual(['update', 'get', 'update']);
    expect(a.isLeader()).toBe(true);
  });

  it('renews with a small body: the lease’s name, version, labels and spec, not the managedFields the server returned', async () => {
    const sent: V1Lease[] = [];
    const counting: KubeClient = { ...connection({ value: false }), updateLease: (ns, l) => (sent.push(l), fake.updateLease(ns, l)) };
    const a = new LeaderElector({
      client: counting,
      namespace: 'pvx-system',
      name: 'pvx-leader',
      identity: 'a',
      logger,
      onStartedLeading() {},
      onStoppedLeading() {},
    });
    electors.push(a);
    a.start();
    await vi.advanceTimersByTimeAsync(10_000);
    // Another writer leaves labels and its managedFields; the leader reads the lease again and keeps it.
    const lease = (await fake.getLease('pvx-system', 'pvx-leader'))!;
    await fake.updateLease('pvx-system', {
      ...lease,
      metadata: {
        ...lease.metadata,
        labels: { team: 'storage' },
        managedFields: [{ manager: 'kubectl', operation: 'Update', apiVersion: 'coordination.k8s.io/v1' }],
      },
    });
    sent.length = 0;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(a.isLeader()).toBe(true);
    const last = sent.at(-1);
    expect(last?.metadata).toEqual({
      name: 'pvx-leader',
      namespace: 'pvx-system',
      resourceVersion: expect.any(String),
      uid: expect.any(String),
      labels: { team: 'storage' },
    });
    expect(last?.spec?.holderIdentity).toBe('a');
  });

  it('rejects timings that would let two leaders overlap', () => {
    expect(
      () =>
        new LeaderElector({
          client: fake,
          namespace: 'n',
          name: 'l',
          identity: 'a',
          logger,
          leaseDurationMs: 10_000,
          renewDeadlineMs: 10_000,
          onStartedLeading() {},
          onStoppedLeading() {},
        }),
    ).toThrow(/0 < retryPeriod < renewDeadline < leaseDuration, got 2000 \/ 10000 \/ 10000 ms/);
    expect(
      () =>
        new LeaderElector({
          client: fake,
          namespace: 'n',
          name: 'l',
          identity: 'a',
          logger,
          leaseDurationMs: Infinity,
          onStartedLeading() {},
          onStoppedLeading() {},
        }),
    ).toThrow(/got 2000 \/ 10000 \/ Infinity ms/);
  });
});
