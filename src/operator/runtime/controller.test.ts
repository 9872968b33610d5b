import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError, RetryAfterError } from '../../k8s/errors.ts';
import { createRuntimeMetrics } from '../../metrics/runtime.ts';
import { Controller, type Reconcile } from './controller.ts';
import { ConflictError, classify } from './errors.ts';
import { ExponentialBackoff } from './ratelimit.ts';
import { WorkQueue } from './workqueue.ts';

const logger = pino({ level: 'silent' });
const day = 24 * 3_600_000;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function setup(reconcile: Reconcile, opts: { workers?: number; resyncPeriodMs?: number; listKeys?: () => string[] } = {}) {
  const metrics = createRuntimeMetrics(new Registry(), { processMetrics: false });
  const queue = new WorkQueue({ name: 'test', rateLimiter: new ExponentialBackoff({ baseMs: 100, maxMs: 10_000 }), metrics: metrics.workqueue });
  const controller = new Controller({ name: 'test', queue, reconcile, logger, metrics: metrics.controller, ...opts });
  return { queue, controller, metrics };
}

const count = async (m: ReturnType<typeof setup>['metrics'], result: string) =>
  (await m.registry.getSingleMetric('controller_runtime_reconcile_total')?.get())?.values.find((v) => v.labels.result === result)?.value ?? 0;

describe('Controller', () => {
  it('never reconciles one key twice at once, and coalesces events into one more run', async () => {
    let active = 0;
    let maxActive = 0;
    let runs = 0;
    const { queue, controller } = setup(
      async () => {
        active++;
        runs++;
        maxActive = Math.max(maxActive, active);
        await new Promise((r) => setTimeout(r, 100));
        active--;
      },
      { workers: 4 },
    );
    controller.start();
    queue.add('ns/a');
    await vi.advanceTimersByTimeAsync(10);
    for (let i = 0; i < 20; i++) queue.add('ns/a'); // twenty events while the first run is in flight
    await vi.advanceTimersByTimeAsync(1000);
    expect(maxActive).toBe(1);
    expect(runs).toBe(2);
    await controller.stop(1000);
  });

  it('runs different keys in parallel up to the worker count', async () => {
    let active = 0;
    let maxActive = 0;
    const { queue, controller } = setup(
      async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        await new Promise((r) => setTimeout(r, 100));
        active--;
      },
      { workers: 3 },
    );
    controller.start();
    for (const k of ['a', 'b', 'c', 'd', 'e']) queue.add(k);
    await vi.advanceTimersByTimeAsync(500);
    expect(maxActive).toBe(3);
    await controller.stop(1000);
  });

  it('survives a throw and retries with growing backoff, then forgets on success', async () => {
    const times: number[] = [];
    let failures = 3;
    const { queue, controller, metrics } = setup(async () => {
      times.push(Date.now());
      if (failures-- > 0) throw new Error('boom');
    });
    controller.start();
    const t0 = Date.now();
    queue.add('k');
    await vi.advanceTimersByTimeAsync(5000);
    expect(times.map((t) => t - t0)).toEqual([0, 100, 300, 700]);
    expect(queue.numRequeues('k')).toBe(0);
    expect(await count(metrics, 'error')).toBe(3);
    expect(await count(metrics, 'success')).toBe(1);
    await controller.stop(1000);
  });

  it('survives a rejected non-Error value', async () => {
    let calls = 0;
    const { queue, controller } = setup(async () => {
      calls++;
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- the point of the test: a reconcile that throws something not an Error
      if (calls === 1) throw 'a string';
    });
    controller.start();
    queue.add('k');
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toBe(2);
    await controller.stop(1000);
  });

  it('requeues after requeueAfterMs', async () => {
    const times: number[] = [];
    const { queue, controller } = setup(async () => {
      times.push(Date.now());
      return times.length < 3 ? { requeueAfterMs: 2000 } : {};
    });
    controller.start();
    const t0 = Date.now();
    queue.add('k');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(times.map((t) => t - t0)).toEqual([0, 2000, 4000]);
    await controller.stop(1000);
  });

  it('waits out a 30-day requeueAfterMs instead of firing at once (a finished request kept for its TTL)', async () => {
    let runs = 0;
    const { queue, controller } = setup(async () => {
      runs++;
      return { requeueAfterMs: 30 * day };
    });
    controller.start();
    queue.add('ns/kept');
    await vi.advanceTimersByTimeAsync(3_600_000);
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(30 * day - 3_600_000);
    expect(runs).toBe(2);
    await controller.stop(1000);
  });

  it.each([
    ['a requeueAfterMs of Infinity', async () => ({ requeueAfterMs: Infinity })],
    ['a RetryAfterError of Infinity ms', async () => Promise.reject(new RetryAfterError('no budget until never', Infinity))],
  ])('backs off rather than loops on %s', async (_, reconcile) => {
    let runs = 0;
    const { queue, controller } = setup(async () => {
      runs++;
      return reconcile();
    });
    controller.start();
    queue.add('k');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(runs).toBeLessThanOrEqual(7); // 100 ms doubling: 0, 0.1, 0.3, 0.7, 1.5, 3.1, 6.3 s
    expect(runs).toBeGreaterThanOrEqual(2); // still retried: a worker did not die on it
    await controller.stop(1000);
  });

  it('honours RetryAfterError delays without growing the backoff', async () => {
    const times: number[] = [];
    const { queue, controller } = setup(async () => {
      times.push(Date.now());
      if (times.length === 1) throw new RetryAfterError('budget exhausted', 30_000);
    });
    controller.start();
    const t0 = Date.now();
    queue.add('k');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(times.map((t) => t - t0)).toEqual([0, 30_000]);
    await controller.stop(1000);
  });

  it('requeues a conflict quickly', async () => {
    const times: number[] = [];
    const { queue, controller } = setup(async () => {
      times.push(Date.now());
      if (times.length === 1) throw new ApiError(409, 'Conflict', 'the object has been modified');
    });
    controller.start();
    const t0 = Date.now();
    queue.add('k');
    await vi.advanceTimersByTimeAsync(1000);
    expect(times.map((t) => t - t0)).toEqual([0, 100]);
    await controller.stop(1000);
  });

  it('resyncs every listed key periodically', async () => {
    const seen: string[] = [];
    const { controller } = setup(
      async (key) => {
        seen.push(key);
      },
      { resyncPeriodMs: 60_000, listKeys: () => ['ns/a', 'ns/b'] },
    );
    controller.start();
    await vi.advanceTimersByTimeAsync(59_000);
    expect(seen).toEqual([]);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(seen.sort()).toEqual(['ns/a', 'ns/b']);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(seen).toHaveLength(4);
    await controller.stop(1000);
  });

  it('resyncs every 28 days when asked, not every millisecond', async () => {
    const seen: string[] = [];
    const { controller } = setup(
      async (key) => {
        seen.push(key);
      },
      { resyncPeriodMs: 28 * day, listKeys: () => ['ns/a'] },
    );
    controller.start();
    await vi.advanceTimersByTimeAsync(28 * day - 1);
    expect(seen).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(seen).toEqual(['ns/a']);
    await vi.advanceTimersByTimeAsync(28 * day);
    expect(seen).toEqual(['ns/a', 'ns/a']);
    await controller.stop(1000);
  });

  it('stop() drains the reconcile in flight', async () => {
    let finished = false;
    const { queue, controller } = setup(async () => {
      await new Promise((r) => setTimeout(r, 500));
      finished = true;
    });
    controller.start();
    queue.add('k');
    await vi.advanceTimersByTimeAsync(10);
    const stopped = controller.stop(5000);
    await vi.advanceTimersByTimeAsync(500);
    expect(await stopped).toBe(true);
    expect(finished).toBe(true);
  });

  it('rejects a bad worker count', () => {
    expect(() => setup(async () => {}, { workers: 0 })).toThrow(/workers must be a positive integer, got 0/);
  });

  it.each([0, -1, NaN, Infinity])('rejects a resync period of %s', (ms) => {
    expect(() => setup(async () => {}, { resyncPeriodMs: ms })).toThrow(new TypeError(`resyncPeriodMs must be a finite number of ms above 0, got ${ms}`));
  });
});

describe('classify', () => {
  it.each([
    [new ConflictError('x'), 'conflict'],
    [new ApiError(409, 'Conflict', 'modified'), 'conflict'],
    [new RetryAfterError('x', 5), 'retryAfter'],
    [new ApiError(429, 'TooManyRequests', 'slow down', 3), 'retryAfter'],
    [new ApiError(429, 'TooManyRequests', 'slow down'), 'backoff'],
    [new ApiError(422, 'Invalid', 'bad'), 'backoff'],
    [new ApiError(400, 'BadRequest', 'bad'), 'backoff'],
    [new ApiError(403, 'Forbidden', 'rbac'), 'backoff'],
    [new ApiError(500, 'InternalError', 'etcd'), 'backoff'],
    [new Error('ECONNREFUSED'), 'backoff'],
    ['not an error', 'backoff'],
  ])('%o → %s', (err, kind) => {
    expect(classify(err).kind).toBe(kind);
  });

  it('turns Retry-After seconds into milliseconds', () => {
    expect(classify(new ApiError(429, 'TooManyRequests', 'x', 3))).toEqual({ kind: 'retryAfter', delayMs: 3000 });
  });
});
