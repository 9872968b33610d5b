// A cache of one kind of object, kept current by list + watch, that heals itself. client-node's
// own informer stops for good on any watch error other than 410; this one never gives up:
//
//   - the first list fills the cache (paged); readiness waits for it (hasSynced);
//   - a watch resumes from the last resourceVersion seen (bookmarks keep it fresh), so a change
//     made while the stream was down arrives when it resumes;
//   - 410 Gone (the version was compacted) → a new list, diffed against the cache, so every
//     change missed meanwhile is delivered as add/update/delete;
//   - any other error or end of stream → resume after jittered exponential backoff;
//   - a stream silent for longer than the watchdog period is cut and resumed, and a watch request
//     the server does not answer (an API server still starting) is abandoned — aborted, so its
//     connection is closed rather than left open by each retry — and retried.
//
// Event handlers only see a consistent cache and never break the loop by throwing.
//
// The operator's caches are informers (src/operator/runtime/manager.ts); so is `pvx wait`'s view of
// the requests it follows (src/cli/wait.ts), which is why it lives with the client, below both.
import type { KubernetesObject } from '@kubernetes/client-node';
import { Pause } from './pause.ts';
import { setLongTimeout, type LongTimer } from './timers.ts';
import type { KubeClient, WatchEvent, WatchHandle } from './client.ts';
import { ApiError, isGone } from './errors.ts';
import { objectKey, type ResourceType } from './resources.ts';
import { listAll } from './list.ts';

/** What an informer records, by resource: src/metrics/runtime.ts registers these as Prometheus metrics. */
export interface InformerMetrics {
  objects: { set(labels: { resource: string }, value: number): void };
  events: { inc(labels: { resource: string; type: string }): void };
  relists: { inc(labels: { resource: string; reason: string }): void };
  watchRestarts: { inc(labels: { resource: string; reason: string }): void };
  synced: { set(labels: { resource: string }, value: number): void };
}

export interface InformerHandlers<T extends KubernetesObject> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  onDelete?(obj: T): void;
}

/** Where an informer logs: a pino logger in the operator. */
export interface InformerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

const silent: InformerLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export interface InformerOptions {
  type: ResourceType;
  /** An informer only reads. */
  client: Pick<KubeClient, 'list' | 'watch'>;
  /** Default: logs nothing. */
  logger?: InformerLogger;
  metrics?: InformerMetrics;
  /** Only this namespace (namespaced kinds). Default: all. */
  namespace?: string;
  labelSelector?: string;
  /** In addition to the kind's own field selector (pods: not finished), e.g. metadata.name=NAME. */
  fieldSelector?: string;
  /**
   * A list or watch failed, and is tried again after retryInMs: for a reader to show why nothing
   * moves, or to give up (stop()) on an error it cannot wait out, such as a kind not served.
   */
  onFailure?: (err: unknown, retryInMs: number) => void;
  /**
   * Only objects this accepts are cached (e.g. those of namespaces a label selector picks, which
   * the API server cannot filter on). When what it accepts changes, call refilter().
   */
  accept?: (obj: KubernetesObject) => boolean;
  /** Page size of lists. Default 500. */
  pageSize?: number;
  /** First retry delay after a failure, ms. Default 500. */
  backoffInitialMs?: number;
  /** Largest retry delay, ms. Default 30,000. */
  backoffMaxMs?: number;
  /** Resume a stream that delivered nothing (not even a bookmark) for this long, ms. Default 120,000. */
  watchdogMs?: number;
  /** Give up on a watch request the server has not answered within this long, ms. Default 15,000. */
  connectTimeoutMs?: number;
  /** Server-side stream timeout, seconds, randomised ±10% so streams do not all end together. Default 300. */
  watchTimeoutSeconds?: number;
}

type StreamEnd = { kind: 'gone' } | { kind: 'closed'; events: number; lastedMs: number } | { kind: 'error'; err: unknown } | { kind: 'watchdog' };

export class Informer<T extends KubernetesObject = KubernetesObject> {
  readonly resource: string;
  private readonly opts: Required<
    Pick<InformerOptions, 'pageSize' | 'backoffInitialMs' | 'backoffMaxMs' | 'watchdogMs' | 'connectTimeoutMs' | 'watchTimeoutSeconds'>
  > &
    InformerOptions;
  private readonly store = new Map<string, T>();
  private readonly handlers: InformerHandlers<T>[] = [];
  private readonly syncWaiters: (() => void)[] = [];
  private resourceVersion = '';
  private synced = false;
  private stopped = false;
  private running: Promise<void> | undefined;
  private currentWatch: WatchHandle | undefined;
  private endWatch: (() => void) | undefined;
  private relistWanted = false;
  private readonly sleeper = new Pause();

  constructor(opts: InformerOptions) {
    this.opts = {
      pageSize: 500,
      backoffInitialMs: 500,
      backoffMaxMs: 30_000,
      watchdogMs: 120_000,
      connectTimeoutMs: 15_000,
      watchTimeoutSeconds: 300,
      ...opts,
    };
    for (const k of ['pageSize', 'backoffInitialMs', 'backoffMaxMs', 'watchdogMs', 'connectTimeoutMs', 'watchTimeoutSeconds'] as const) {
      const v = this.opts[k];
      if (!(Number.isFinite(v) && v > 0)) throw new TypeError(`Informer ${opts.type.resource}: ${k} must be a finite number above 0, got ${v}`);
    }
    this.resource = opts.type.resource;
  }

  on(handlers: InformerHandlers<T>): void {
    this.handlers.push(handlers);
  }

  get(key: string): T | undefined {
    return this.store.get(key);
  }

  list(): T[] {
    return [...this.store.values()];
  }

  keys(): string[] {
    return [...this.store.keys()];
  }

  get size(): number {
    return this.store.size;
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** The last resourceVersion the cache has caught up with. */
  get lastResourceVersion(): string {
    return this.resourceVersion;
  }

  waitForSync(): Promise<void> {
    if (this.synced) return Promise.resolve();
    return new Promise((resolve) => this.syncWaiters.push(resolve));
  }

  start(): void {
    if (this.running) return;
    this.stopped = false;
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.endWatch?.();
    this.sleeper.wake();
    await this.running;
    this.running = undefined;
  }

  /**
   * What accept() takes changed: objects it no longer takes leave the cache (delete events) now;
   * with `relist`, the kind is listed again so objects it now takes arrive (add events).
   */
  refilter(opts: { relist: boolean }): void {
    const accept = this.opts.accept;
    if (accept) {
      for (const [key, obj] of [...this.store]) {
        if (accept(obj)) continue;
        this.store.delete(key);
        this.dispatch('delete', obj);
      }
      this.opts.metrics?.objects.set({ resource: this.resource }, this.store.size);
    }
    if (opts.relist && this.synced) {
      this.relistWanted = true;
      this.endWatch?.();
    }
  }

  private get log(): InformerLogger {
    return this.opts.logger ?? silent;
  }

  private async loop(): Promise<void> {
    let needList = true;
    let listReason = 'initial';
    let failures = 0;
    while (!this.stopped) {
      let failure: unknown;
      try {
        if (this.relistWanted) {
          this.relistWanted = false;
          needList = true;
          listReason = 'selection';
        }
        if (needList) {
          await this.relist(listReason);
          needList = false;
          failures = 0;
        }
        const end = await this.watchOnce();
        if (this.stopped) break;
        if (this.relistWanted) continue;
        switch (end.kind) {
          case 'gone':
            this.log.info({ resource: this.resource, resourceVersion: this.resourceVersion }, 'watch expired (410 Gone); relisting');
            this.opts.metrics?.watchRestarts.inc({ resource: this.resource, reason: 'gone' });
            needList = true;
            listReason = 'gone';
            continue;
          case 'closed':
            this.opts.metrics?.watchRestarts.inc({ resource: this.resource, reason: 'closed' });
            // A stream that ran a while and closed is the server's timeout: resume at once.
            // One that closed at once without a word is a failure, or this would spin.
            if (end.events > 0 || end.lastedMs > 1000) {
              failures = 0;
              continue;
            }
            failures++;
            break;
          case 'watchdog':
            this.log.warn({ resource: this.resource, silentMs: this.opts.watchdogMs }, 'watch silent too long; resuming');
            this.opts.metrics?.watchRestarts.inc({ resource: this.resource, reason: 'watchdog' });
            continue;
          case 'error':
            failures++;
            this.opts.metrics?.watchRestarts.inc({ resource: this.resource, reason: 'error' });
            this.log.warn({ resource: this.resource, err: errorText(end.err), failures }, 'watch failed; resuming after backoff');
            failure = end.err;
            break;
        }
      } catch (err) {
        failures++;
        this.log.warn(
          { resource: this.resource, err: errorText(err), failures },
          needList ? 'list failed; retrying after backoff' : 'watch could not start; retrying after backoff',
        );
        if (isGone(err)) {
          needList = true;
          listReason = 'gone';
        }
        failure = err;
      }
      const delayMs = this.backoff(failures);
      if (failure !== undefined) this.opts.onFailure?.(failure, delayMs);
      await this.pause(delayMs);
    }
  }

  /** Jittered exponential backoff: initial × 2^(n-1), capped, scaled by 0.8–1.2. */
  private backoff(failures: number): number {
    const { backoffInitialMs, backoffMaxMs } = this.opts;
    const base = Math.min(backoffMaxMs, backoffInitialMs * 2 ** Math.max(0, failures - 1));
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  private async pause(ms: number): Promise<void> {
    if (!this.stopped) await this.sleeper.for(ms);
  }

  private async relist(reason: string): Promise<void> {
    const { client, type, namespace, labelSelector, fieldSelector, pageSize } = this.opts;
    const { items, resourceVersion: rv } = await listAll<T>(client, type, { namespace, labelSelector, fieldSelector, pageSize, stopped: () => this.stopped });
    if (this.stopped) return;
    const accept = this.opts.accept;
    const fresh = new Map((accept ? items.filter(accept) : items).map((obj) => [objectKey(obj), obj]));
    this.opts.metrics?.relists.inc({ resource: this.resource, reason });

    // Deliver what changed since the previous cache, so nothing missed while down is lost.
    const previous = new Map(this.store);
    this.store.clear();
    for (const [key, obj] of fresh) this.store.set(key, obj);
    this.resourceVersion = rv;
    for (const [key, obj] of fresh) {
      const old = previous.get(key);
      if (!old) this.dispatch('add', obj);
      else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) this.dispatchChange(obj, old);
    }
    for (const [key, old] of previous) if (!fresh.has(key)) this.dispatch('delete', old);
    this.opts.metrics?.objects.set({ resource: this.resource }, this.store.size);
    this.log.info({ resource: this.resource, objects: this.store.size, resourceVersion: rv, reason }, 'listed');
    if (!this.synced) {
      this.synced = true;
      this.opts.metrics?.synced.set({ resource: this.resource }, 1);
      for (const w of this.syncWaiters.splice(0)) w();
    }
  }

  private async watchOnce(): Promise<StreamEnd> {
    const { client, type, namespace, labelSelector, watchdogMs, connectTimeoutMs, watchTimeoutSeconds } = this.opts;
    const fieldSelector = [type.fieldSelector, this.opts.fieldSelector].filter(Boolean).join(',') || undefined;
    // How long a stream lasted decides whether its end was a failure: measure it on the
    // monotonic clock, so a wall-clock step cannot make a quick close look long (and spin).
    const started = performance.now();
    let events = 0;
    // Aborted whenever this stream is done with, answered or not.
    const abandon = new AbortController();
    return new Promise<StreamEnd>((resolve, reject) => {
      let settled = false;
      let watchdog: LongTimer | undefined;
      const finish = (end: StreamEnd) => {
        if (settled) return;
        settled = true;
        watchdog?.clear();
        abandon.abort();
        this.currentWatch?.stop();
        this.currentWatch = undefined;
        this.endWatch = undefined;
        resolve(end);
      };
      this.endWatch = () => finish({ kind: 'closed', events, lastedMs: performance.now() - started });
      const arm = () => {
        watchdog?.clear();
        watchdog = setLongTimeout(() => finish({ kind: 'watchdog' }), watchdogMs).unref();
      };
      const onEvent = (e: WatchEvent) => {
        if (settled) return;
        arm();
        events++;
        if (e.type === 'ERROR') {
          // A metav1.Status, read as the API server's answer (403, 404 …): a refusal is told from a hiccup.
          const status = e.object as { code?: number; reason?: string; message?: string };
          if (status.code === 410) finish({ kind: 'gone' });
          else
            finish({
              kind: 'error',
              err: new ApiError(status.code ?? 500, status.reason ?? 'WatchError', status.message ?? `watch error ${status.code ?? ''}`),
            });
          return;
        }
        this.apply(e);
      };
      const onEnd = (err?: unknown) => {
        if (err !== undefined && err !== null) finish(isGone(err) ? { kind: 'gone' } : { kind: 'error', err });
        else finish({ kind: 'closed', events, lastedMs: performance.now() - started });
      };
      const timeoutSeconds = Math.round(watchTimeoutSeconds * (0.9 + Math.random() * 0.2));
      arm();
      const connectTimer = setLongTimeout(
        () => finish({ kind: 'error', err: new Error(`no answer to the watch request within ${connectTimeoutMs} ms`) }),
        connectTimeoutMs,
      ).unref();
      client
        .watch(type, { namespace, labelSelector, fieldSelector, resourceVersion: this.resourceVersion, timeoutSeconds, signal: abandon.signal }, onEvent, onEnd)
        .then((handle) => {
          connectTimer.clear();
          if (settled || this.stopped) handle.stop();
          else this.currentWatch = handle;
        })
        .catch((err: unknown) => {
          connectTimer.clear();
          if (settled) return;
          settled = true;
          watchdog?.clear();
          reject(err);
        });
    });
  }

  private apply(e: WatchEvent): void {
    const rv = e.object.metadata?.resourceVersion;
    if (e.type === 'BOOKMARK') {
      if (rv) this.resourceVersion = rv;
      return;
    }
    const obj = this.transform(e.object);
    const key = objectKey(obj);
    const old = this.store.get(key);
    this.opts.metrics?.events.inc({ resource: this.resource, type: e.type });
    if (this.opts.accept && !this.opts.accept(obj)) {
      // Not ours (or no longer): gone from this cache as if deleted.
      if (rv) this.resourceVersion = rv;
      if (old) {
        this.store.delete(key);
        this.dispatch('delete', old);
        this.opts.metrics?.objects.set({ resource: this.resource }, this.store.size);
      }
      return;
    }
    if (e.type === 'DELETED') {
      this.store.delete(key);
      if (rv) this.resourceVersion = rv;
      this.dispatch('delete', old ?? obj);
    } else {
      this.store.set(key, obj);
      if (rv) this.resourceVersion = rv;
      if (old) this.dispatchChange(obj, old);
      else this.dispatch('add', obj);
    }
    this.opts.metrics?.objects.set({ resource: this.resource }, this.store.size);
  }

  /**
   * A stored object followed by the next copy under its key: an update, or — another UID, its
   * deletion not seen (a lost event, or a relist after a delete and a create) — the deletion of
   * the one and the addition of the other, as handlers would have seen it. A handler that looks
   * only at some fields of an update (a claim's size and class) would otherwise take a claim
   * created again at the same size for the same claim, and never look at it (seed 3051716: a
   * claim raised outside pvx went unrecorded in its ledger).
   */
  private dispatchChange(obj: T, old: T): void {
    const [was, is] = [old.metadata?.uid, obj.metadata?.uid];
    if (was && is && was !== is) {
      this.dispatch('delete', old);
      this.dispatch('add', obj);
    } else this.dispatch('update', obj, old);
  }

  private transform(obj: KubernetesObject): T {
    const t = this.opts.type.transform;
    return (t ? t(obj) : obj) as T;
  }

  private dispatch(kind: 'add' | 'update' | 'delete', obj: T, old?: T): void {
    for (const h of this.handlers) {
      try {
        if (kind === 'add') h.onAdd?.(obj);
        else if (kind === 'update') h.onUpdate?.(old as T, obj);
        else h.onDelete?.(obj);
      } catch (err) {
        this.log.error({ resource: this.resource, key: objectKey(obj), err: errorText(err) }, 'informer event handler threw');
      }
    }
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
