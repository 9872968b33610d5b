// Runs a reconciler over a work queue: N workers, each taking a key, calling reconcile(key), and
// turning the outcome into a queue action. A throw never escapes a worker; the same key is never
// reconciled twice at once (the queue guarantees it).
import type { Logger } from 'pino';
import type { ControllerMetrics } from '../../metrics/runtime.ts';
import { classify } from './errors.ts';
import { setLongInterval, type LongTimer } from '../../k8s/timers.ts';
import type { WorkQueue } from './workqueue.ts';

export interface ReconcileResult {
  /**
   * Reconcile this key again after this long (e.g. to check a deadline), even without events.
   * Any finite length works; 0 or less means no requeue; NaN or ±Infinity is a bug, handled as a
   * failed reconcile (logged, retried with backoff).
   */
  requeueAfterMs?: number;
}

export type Reconcile = (key: string) => Promise<ReconcileResult | void>;

/**
 * Queues a key for its reconcile. A reconciler's `watch(wake)` says, beside its reconcile, which
 * changes in the caches it reads wake which keys (as kubebuilder's SetupWithManager does); the
 * wiring (src/operator/wiring.ts) only hands it its queue.
 */
export type Wake = (key: string) => void;

export interface ControllerOptions {
  name: string;
  queue: WorkQueue;
  reconcile: Reconcile;
  logger: Logger;
  metrics?: ControllerMetrics;
  /** Concurrent workers (different keys only). Default 2. */
  workers?: number;
  /** Every this often (any finite length), every key listKeys() returns is queued again (missed-event safety net). */
  resyncPeriodMs?: number;
  listKeys?: () => string[];
}

export class Controller {
  readonly name: string;
  private readonly opts: ControllerOptions;
  private readonly workers: Promise<void>[] = [];
  private resyncTimer: LongTimer | undefined;
  private running = false;

  constructor(opts: ControllerOptions) {
    const workers = opts.workers ?? 2;
    if (!Number.isInteger(workers) || workers < 1) throw new TypeError(`workers must be a positive integer, got ${workers}`);
    if (opts.resyncPeriodMs !== undefined && !(Number.isFinite(opts.resyncPeriodMs) && opts.resyncPeriodMs > 0)) {
      throw new TypeError(`resyncPeriodMs must be a finite number of ms above 0, got ${opts.resyncPeriodMs}`);
    }
    this.name = opts.name;
    this.opts = { ...opts, workers };
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    for (let i = 0; i < (this.opts.workers ?? 2); i++) this.workers.push(this.work());
    const { resyncPeriodMs, listKeys } = this.opts;
    if (resyncPeriodMs && listKeys) {
      this.resyncTimer = setLongInterval(() => {
        for (const key of listKeys()) this.opts.queue.add(key);
      }, resyncPeriodMs).unref();
    }
  }

  /** Stops intake and waits for in-flight reconciles, at most drainTimeoutMs. */
  async stop(drainTimeoutMs = 30_000): Promise<boolean> {
    this.resyncTimer?.clear();
    const drained = await this.opts.queue.shutDownWithDrain(drainTimeoutMs);
    if (drained) await Promise.all(this.workers);
    this.running = false;
    return drained;
  }

  private async work(): Promise<void> {
    const { queue } = this.opts;
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      try {
        await this.process(key);
      } finally {
        queue.done(key);
      }
    }
  }

  private async process(key: string): Promise<void> {
    const { queue, reconcile, metrics } = this.opts;
    const [namespace, name] = key.includes('/') ? key.split('/', 2) : [undefined, key];
    const log = this.opts.logger.child({ controller: this.name, namespace, name });
    const labels = { controller: this.name };
    metrics?.activeWorkers.inc(labels);
    const end = metrics?.reconcileTime.startTimer(labels);
    try {
      const result = (await reconcile(key)) ?? {};
      if (result.requeueAfterMs !== undefined && !Number.isFinite(result.requeueAfterMs)) {
        throw new TypeError(`reconcile of ${key} asked to requeue after ${result.requeueAfterMs} ms: a requeue delay must be finite`);
      }
      queue.forget(key);
      if (result.requeueAfterMs !== undefined && result.requeueAfterMs > 0) {
        queue.addAfter(key, result.requeueAfterMs);
        metrics?.reconcileTotal.inc({ ...labels, result: 'requeue_after' });
      } else {
        metrics?.reconcileTotal.inc({ ...labels, result: 'success' });
      }
    } catch (err) {
      let d = classify(err);
      // A retry delay that is not finite is a bug in whoever computed it: back off rather than
      // throw from here, which would end this worker.
      if (d.kind === 'retryAfter' && !Number.isFinite(d.delayMs)) d = { kind: 'backoff' };
      const message = err instanceof Error ? err.message : String(err);
      switch (d.kind) {
        case 'conflict':
          log.debug({ err: message }, 'conflict, requeueing');
          queue.addRateLimited(key);
          metrics?.reconcileTotal.inc({ ...labels, result: 'requeue' });
          break;
        case 'retryAfter':
          log.info({ err: message, retryAfterMs: d.delayMs }, 'retrying later');
          queue.forget(key);
          queue.addAfter(key, d.delayMs);
          metrics?.reconcileTotal.inc({ ...labels, result: 'requeue_after' });
          break;
        case 'backoff':
          log.error({ err, retries: queue.numRequeues(key) }, 'reconcile failed; retrying with backoff');
          queue.addRateLimited(key);
          metrics?.reconcileErrors.inc(labels);
          metrics?.reconcileTotal.inc({ ...labels, result: 'error' });
          break;
      }
    } finally {
      end?.();
      metrics?.activeWorkers.dec(labels);
    }
  }
}
