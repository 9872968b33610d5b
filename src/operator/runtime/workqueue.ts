// A keyed work queue with client-go's contract (util/workqueue):
//
//   - a key is in at most one of: waiting in the queue, being processed — never processed by two
//     workers at once;
//   - adds of a key already waiting are dropped (N adds coalesce into one run);
//   - adds of a key being processed mark it dirty: it is queued again once, when done() is called;
//   - addAfter() delays an add (the earliest pending delay per key wins); addRateLimited() delays it
//     by the rate limiter's backoff; forget() resets that backoff. A delay of any finite length
//     waits that long (src/k8s/timers.ts); 0 or less adds now; NaN or ±Infinity throws a TypeError.
//
// Unlike client-go's single FIFO, waiting keys are served fairly across namespaces (a key's part
// before its "/"): first in, first out within a namespace, one namespace after another between
// them, so a tenant who creates thousands of requests delays their own, not every other
// namespace's next one.
//
// Metrics follow controller-runtime's names so existing dashboards work.
import type { WorkQueueMetrics } from '../../metrics/runtime.ts';
import { defaultControllerRateLimiter, type RateLimiter } from './ratelimit.ts';
import { setLongTimeout, type LongTimer } from '../../k8s/timers.ts';

export interface WorkQueueOptions {
  /** Name for metrics and logs. */
  name: string;
  rateLimiter?: RateLimiter;
  metrics?: WorkQueueMetrics;
  /** A monotonic clock, ms: delays and durations are measured on it. Default performance.now. */
  now?: () => number;
}

export class ShutDownError extends Error {
  override name = 'ShutDownError';
}

export class WorkQueue {
  readonly name: string;
  /** Waiting keys by namespace, each lane first in first out; the Map's order is the turn order. */
  private readonly lanes = new Map<string, string[]>();
  private waiting = 0;
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly addedAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();
  private readonly delayed = new Map<string, { at: number; timer: LongTimer }>();
  private readonly waiters: ((key: string | undefined) => void)[] = [];
  private readonly drainWaiters: (() => void)[] = [];
  private readonly rateLimiter: RateLimiter;
  private readonly metrics: WorkQueueMetrics | undefined;
  private readonly now: () => number;
  private shuttingDown = false;

  constructor(opts: WorkQueueOptions) {
    if (!opts.name) throw new TypeError('WorkQueue needs a name');
    this.name = opts.name;
    this.rateLimiter = opts.rateLimiter ?? defaultControllerRateLimiter();
    this.metrics = opts.metrics;
    this.now = opts.now ?? (() => performance.now());
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.metrics?.adds.inc({ name: this.name });
    this.dirty.add(key);
    this.addedAt.set(key, this.now());
    if (this.processing.has(key)) return;
    this.push(key);
  }

  addAfter(key: string, delayMs: number): void {
    if (!Number.isFinite(delayMs)) throw new TypeError(`WorkQueue ${this.name}: addAfter("${key}") needs a finite delay in ms, got ${delayMs}`);
    if (this.shuttingDown) return;
    if (delayMs <= 0) {
      this.add(key);
      return;
    }
    const at = this.now() + delayMs;
    const pending = this.delayed.get(key);
    if (pending && pending.at <= at) return;
    pending?.timer.clear();
    const timer = setLongTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs).unref();
    this.delayed.set(key, { at, timer });
  }

  addRateLimited(key: string): void {
    this.metrics?.retries.inc({ name: this.name });
    this.addAfter(key, this.rateLimiter.when(key));
  }

  forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.rateLimiter.retries(key);
  }

  /** The next key to process, or undefined once the queue is shut down. */
  get(): Promise<string | undefined> {
    const key = this.dequeue();
    if (key !== undefined) return Promise.resolve(this.take(key));
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: string): void {
    if (!this.processing.delete(key)) return;
    const started = this.startedAt.get(key);
    if (started !== undefined) this.metrics?.workDuration.observe({ name: this.name }, (this.now() - started) / 1000);
    this.startedAt.delete(key);
    if (this.dirty.has(key)) this.push(key);
    if (this.processing.size === 0) for (const w of this.drainWaiters.splice(0)) w();
  }

  len(): number {
    return this.waiting;
  }

  isProcessing(key: string): boolean {
    return this.processing.has(key);
  }

  /** Stops intake: waiting get() calls return undefined, delayed adds are dropped. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const { timer } of this.delayed.values()) timer.clear();
    this.delayed.clear();
    for (const w of this.waiters.splice(0)) w(undefined);
  }

  /** Shuts down and resolves once every key being processed is done (or the timeout passes). */
  async shutDownWithDrain(timeoutMs: number): Promise<boolean> {
    this.shutDown();
    this.lanes.clear();
    this.waiting = 0;
    if (this.processing.size === 0) return true;
    return new Promise((resolve) => {
      const timer = setLongTimeout(() => resolve(false), timeoutMs);
      this.drainWaiters.push(() => {
        timer.clear();
        resolve(true);
      });
    });
  }

  get isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  private push(key: string): void {
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter(this.take(key));
      return;
    }
    const ns = namespaceOf(key);
    const lane = this.lanes.get(ns);
    if (lane) lane.push(key);
    else this.lanes.set(ns, [key]);
    this.waiting += 1;
    this.metrics?.depth.set({ name: this.name }, this.waiting);
  }

  /** The next waiting key: the first of the namespace whose turn it is, which then goes to the back of the turn. */
  private dequeue(): string | undefined {
    const next = this.lanes.entries().next();
    if (next.done) return undefined;
    const [ns, lane] = next.value;
    const key = lane.shift() as string;
    this.lanes.delete(ns);
    if (lane.length > 0) this.lanes.set(ns, lane);
    this.waiting -= 1;
    return key;
  }

  private take(key: string): string {
    this.dirty.delete(key);
    this.processing.add(key);
    const added = this.addedAt.get(key);
    if (added !== undefined) this.metrics?.queueDuration.observe({ name: this.name }, (this.now() - added) / 1000);
    this.addedAt.delete(key);
    this.startedAt.set(key, this.now());
    this.metrics?.depth.set({ name: this.name }, this.waiting);
    return key;
  }
}

/** A key's namespace: its part before "/" ("" for a cluster-scoped object's key, which has none). */
const namespaceOf = (key: string): string => {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
};
