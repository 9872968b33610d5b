import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeKubeClient } from './testing/fake-client.ts';
import { resources } from './resources.ts';
import { ThrottledKubeClient, TokenBucket } from './throttled-client.ts';

describe('TokenBucket', () => {
  it('lets a burst go at once, then one call per 1/qps, and refills while idle up to the burst', () => {
    let t = 0;
    const bucket = new TokenBucket(10, 3, () => t);
    expect([bucket.reserve(), bucket.reserve(), bucket.reserve()]).toEqual([0, 0, 0]);
    expect(bucket.reserve()).toBeCloseTo(100); // 10 per second: the 4th waits 100 ms
    expect(bucket.reserve()).toBeCloseTo(200); // and the 5th behind it
    t = 10_000; // a long quiet spell refills no more than the burst
    expect([bucket.reserve(), bucket.reserve(), bucket.reserve()]).toEqual([0, 0, 0]);
    expect(bucket.reserve()).toBeGreaterThan(0);
  });

  it('refuses settings that would never let a call through or never limit', () => {
    expect(() => new TokenBucket(0, 10)).toThrow(/qps must be a finite number above 0, got 0/);
    expect(() => new TokenBucket(Infinity, 10)).toThrow(/qps/);
    expect(() => new TokenBucket(5, 0)).toThrow(/burst must be a whole number ≥ 1, got 0/);
    expect(() => new TokenBucket(5, 1.5)).toThrow(/burst/);
  });
});

describe('ThrottledKubeClient', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('spaces calls beyond the burst at the qps, records each wait, and never queues the lease', async () => {
    const fake = new FakeKubeClient();
    const waits: number[] = [];
    const client = new ThrottledKubeClient(fake, { qps: 2, burst: 2, observeWait: (s) => waits.push(s), now: () => Date.now() });
    const done: number[] = [];
    const started = Date.now();
    const calls = [0, 1, 2, 3].map((i) =>
      client
        .list(resources.nodes, {})
        .catch(() => undefined)
        .then(() => done.push(i)),
    );
    await client.getLease('pvx-system', 'pvx-leader'); // answered while four calls wait their turn
    expect(done).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toEqual([0, 1]);
    await vi.advanceTimersByTimeAsync(500);
    expect(done).toEqual([0, 1, 2]);
    await vi.advanceTimersByTimeAsync(500);
    await Promise.all(calls);
    expect(done).toEqual([0, 1, 2, 3]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(waits).toEqual([0, 0, 0.5, 1]);
    expect(fake.calls.filter((c) => c.startsWith('getLease'))).toHaveLength(1);
  });

  it('gives the reviews of scrapes a bucket of their own: a scrape does not wait behind the controllers, nor they behind scrapes', async () => {
    const fake = new FakeKubeClient();
    const client = new ThrottledKubeClient(fake, { qps: 1, burst: 1, now: () => Date.now() });
    await client.list(resources.persistentVolumeClaims, {}); // the controllers' one token is spent
    const review = client.createTokenReview('t');
    await vi.advanceTimersByTimeAsync(1);
    await expect(review).resolves.toEqual({ authenticated: false, error: 'invalid bearer token' });
    // The reviews' own token is spent now: the next review waits its turn.
    const second = client.createSubjectAccessReview({ user: { username: 'u' }, path: '/metrics', verb: 'get' });
    let secondDone = false;
    void second.then(() => (secondDone = true));
    await vi.advanceTimersByTimeAsync(500);
    expect(secondDone).toBe(false);
    await vi.advanceTimersByTimeAsync(500);
    expect(secondDone).toBe(true);
  });
});
