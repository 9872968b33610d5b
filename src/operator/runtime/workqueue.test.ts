import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ExponentialBackoff, MaxOf, TokenBucket } from './ratelimit.ts';
import { WorkQueue } from './workqueue.ts';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const day = 24 * 3_600_000;

/** Resolves to the next key if one is available now, else 'none'. */
async function tryGet(q: WorkQueue): Promise<string> {
  return Promise.race([q.get().then((k) => k ?? 'shutdown'), Promise.resolve().then(() => 'none')]);
}

describe('WorkQueue', () => {
  it('coalesces adds of a waiting key into one', async () => {
    const q = new WorkQueue({ name: 't' });
    q.add('a');
    q.add('a');
    q.add('b');
    q.add('a');
    expect(q.len()).toBe(2);
    expect(await q.get()).toBe('a');
    expect(await q.get()).toBe('b');
    expect(await tryGet(q)).toBe('none');
  });

  it('queues a key added while processing exactly once more, after done()', async () => {
    const q = new WorkQueue({ name: 't' });
    q.add('a');
    expect(await q.get()).toBe('a');
    q.add('a');
    q.add('a');
    q.add('a');
    expect(q.len()).toBe(0); // not handed to another worker while processing
    q.done('a');
    expect(q.len()).toBe(1);
    expect(await q.get()).toBe('a');
    q.done('a');
    expect(await tryGet(q)).toBe('none');
  });

  it('hands a key to a worker already waiting in get()', async () => {
    const q = new WorkQueue({ name: 't' });
    const waiting = q.get();
    q.add('x');
    expect(await waiting).toBe('x');
    expect(q.isProcessing('x')).toBe(true);
  });

  it('delays addAfter, keeping the earliest of several delays', async () => {
    const q = new WorkQueue({ name: 't' });
    q.addAfter('a', 1000);
    q.addAfter('a', 300);
    q.addAfter('a', 5000);
    await vi.advanceTimersByTimeAsync(299);
    expect(q.len()).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(q.len()).toBe(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(q.len()).toBe(1); // the later timers were cancelled, the key was added once
  });

  it('waits out a 30-day addAfter: a delay past the native timer limit does not fire at once', async () => {
    const q = new WorkQueue({ name: 't' });
    q.addAfter('kept-30-days', 30 * day);
    await vi.advanceTimersByTimeAsync(1000);
    expect(q.len()).toBe(0);
    await vi.advanceTimersByTimeAsync(30 * day - 1001);
    expect(q.len()).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(q.len()).toBe(1);
  });

  it('keeps the earlier of two delays on a monotonic clock, whatever the wall clock does', async () => {
    const q = new WorkQueue({ name: 't' });
    q.addAfter('a', 1000);
    vi.setSystemTime(Date.now() - 3_600_000); // an NTP step back
    q.addAfter('a', 2000); // later than the first: ignored
    await vi.advanceTimersByTimeAsync(1000);
    expect(q.len()).toBe(1);
  });

  it.each([
    ['adds now', 0],
    ['adds now', -5],
  ])('%s for a delay of %s', async (_, ms) => {
    const q = new WorkQueue({ name: 't' });
    q.addAfter('a', ms);
    expect(q.len()).toBe(1);
  });

  it.each([NaN, Infinity])('refuses a delay of %s with a TypeError naming it', (ms) => {
    const q = new WorkQueue({ name: 't' });
    expect(() => q.addAfter('a', ms)).toThrow(new TypeError(`WorkQueue t: addAfter("a") needs a finite delay in ms, got ${ms}`));
  });

  it('delays rate-limited adds with growing backoff and forget() resets it', async () => {
    const q = new WorkQueue({ name: 't', rateLimiter: new ExponentialBackoff({ baseMs: 100, maxMs: 1000 }) });
    const readyAfter = async (): Promise<number> => {
      q.addRateLimited('k');
      let waited = 0;
      while (q.len() === 0) {
        await vi.advanceTimersByTimeAsync(10);
        waited += 10;
      }
      q.done((await q.get()) as string);
      return waited;
    };
    expect(await readyAfter()).toBe(100);
    expect(await readyAfter()).toBe(200);
    expect(await readyAfter()).toBe(400);
    expect(await readyAfter()).toBe(800);
    expect(await readyAfter()).toBe(1000); // capped
    expect(q.numRequeues('k')).toBe(5);
    q.forget('k');
    expect(q.numRequeues('k')).toBe(0);
    expect(await readyAfter()).toBe(100);
  });

  it('shutDown releases waiting workers and drops delayed adds', async () => {
    const q = new WorkQueue({ name: 't' });
    const waiting = q.get();
    q.addAfter('late', 100);
    q.shutDown();
    expect(await waiting).toBeUndefined();
    await vi.advanceTimersByTimeAsync(200);
    expect(q.len()).toBe(0);
    q.add('after');
    expect(q.len()).toBe(0);
  });

  it('shutDownWithDrain waits for keys in processing', async () => {
    const q = new WorkQueue({ name: 't' });
    q.add('a');
    await q.get();
    let drained: boolean | undefined;
    void q.shutDownWithDrain(5000).then((d) => (drained = d));
    await vi.advanceTimersByTimeAsync(100);
    expect(drained).toBeUndefined();
    q.done('a');
    await vi.advanceTimersByTimeAsync(0);
    expect(drained).toBe(true);
  });

  it('shutDownWithDrain gives up after the timeout', async () => {
    const q = new WorkQueue({ name: 't' });
    q.add('stuck');
    await q.get();
    const result = q.shutDownWithDrain(1000);
    await vi.advanceTimersByTimeAsync(1000);
    expect(await result).toBe(false);
  });
  it('shutDownWithDrain waits out a drain timeout past the native timer limit', async () => {
    const q = new WorkQueue({ name: 't' });
    q.add('slow');
    await q.get();
    let drained: boolean | undefined;
    void q.shutDownWithDrain(30 * day).then((d) => (drained = d));
    await vi.advanceTimersByTimeAsync(29 * day);
    expect(drained).toBeUndefined();
    q.done('slow');
    await vi.advanceTimersByTimeAsync(0);
    expect(drained).toBe(true);
  });
});

describe('rate limiters', () => {
  it('exponential backoff doubles from 5 ms and caps at 1000 s (client-go defaults)', () => {
    const b = new ExponentialBackoff();
    const delays = Array.from({ length: 30 }, () => b.when('k'));
    expect(delays.slice(0, 5)).toEqual([5, 10, 20, 40, 80]);
    expect(delays[17]).toBe(5 * 2 ** 17); // 655.36 s, still below the cap
    expect(delays[18]).toBe(1_000_000);
    expect(delays[29]).toBe(1_000_000);
    expect(b.when('other')).toBe(5); // per key
  });

  it('token bucket allows a burst, then one token per 1/qps', () => {
    let now = 0;
    const t = new TokenBucket({ qps: 10, burst: 3, now: () => now });
    expect([t.when(), t.when(), t.when()]).toEqual([0, 0, 0]);
    expect(t.when()).toBe(100);
    expect(t.when()).toBe(200);
    now += 1000; // 10 tokens refill, but the bucket holds 3 and 2 were borrowed
    expect(t.when()).toBe(0);
  });

  it('token bucket refills on a monotonic clock: a wall-clock step back does not stall every retry', () => {
    const t = new TokenBucket({ qps: 10, burst: 3 });
    vi.setSystemTime(Date.now() - 3_600_000);
    expect(t.when()).toBe(0);
  });

  it('MaxOf takes the longest delay: the global bucket caps a burst of fresh keys', () => {
    const now = 0;
    const limiter = new MaxOf(new ExponentialBackoff(), new TokenBucket({ qps: 10, burst: 2, now: () => now }));
    expect(limiter.when('a')).toBe(5);
    expect(limiter.when('b')).toBe(5);
    expect(limiter.when('c')).toBe(100);
  });

  it.each([
    [() => new ExponentialBackoff({ baseMs: 0 }), /baseMs must be a positive number, got 0/],
    [() => new ExponentialBackoff({ baseMs: 10, maxMs: 5 }), /maxMs \(5\) must be at least baseMs \(10\)/],
    [() => new TokenBucket({ qps: Number.NaN }), /qps must be a positive number, got NaN/],
    [() => new MaxOf(), /at least one/],
  ])('rejects bad options with a TypeError naming the value (%#)', (make, message) => {
    expect(make).toThrow(TypeError);
    expect(make).toThrow(message);
  });
});

// Review, 2026-12-04: one namespace's thousands of requests, queued first, held every other
// namespace's next reconcile behind them (client-go's single FIFO).
describe('fair across namespaces', () => {
  it('serves namespaces in turn, each in the order its keys came', async () => {
    const q = new WorkQueue({ name: 'fair' });
    for (let i = 0; i < 1000; i++) q.add(`noisy/r-${i}`);
    q.add('quiet/a');
    q.add('quiet/b');
    q.add('cluster-scoped');
    expect(q.len()).toBe(1003);
    const order: string[] = [];
    for (let i = 0; i < 6; i++) {
      const key = (await q.get()) as string;
      order.push(key);
      q.done(key);
    }
    expect(order).toEqual(['noisy/r-0', 'quiet/a', 'cluster-scoped', 'noisy/r-1', 'quiet/b', 'noisy/r-2']);
    expect(q.len()).toBe(997);
  });

  it('a key added again while waiting keeps its place; one requeued after processing joins the back of its namespace', async () => {
    const q = new WorkQueue({ name: 'fair-requeue' });
    q.add('a/1');
    q.add('a/2');
    q.add('a/1');
    const first = (await q.get()) as string;
    q.add(first);
    q.done(first);
    expect([await q.get(), await q.get()]).toEqual(['a/2', 'a/1']);
  });
});
