// Client-side rate limit of pvx's API requests, as client-go's --kube-api-qps/--kube-api-burst: a
// token bucket of `burst` tokens refilled at `qps` per second; a call that finds it empty waits its
// turn (first come, first served). It keeps a burst of work (a thousand requests created at once,
// every cache relisting after an API server restart) from flooding the API server, which its own
// priority and fairness would otherwise have to absorb.
//
// The lease calls bypass it: a leader whose renewal queued behind a burst of its own writes would
// miss its renew deadline and step down in the middle of the work. The token and access reviews of
// /metrics scrapes have a bucket of their own, of the same size: a scrape never waits behind the
// controllers' burst (Prometheus would time out and call the target down just when it is busy),
// the controllers never wait behind scrapes, and a scraper sending a new bogus token each time is
// still held to the rate.
import type { KubernetesObject, V1Lease, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import type { PolicyStatus } from '../crds/volume-expansion-policy.ts';
import type { RequestStatus } from '../crds/volume-expansion-request.ts';
import type { AccessReviewResult, EventRecord, KubeClient, NonResourceAccessReview, TokenReviewResult, ListOptions, ListPage, PolicyRef, PvcAnnotationsPatch, PvcSizePatch, WatchEvent, WatchHandle, WatchOptions } from './client.ts';
import type { ResourceType } from './resources.ts';

export interface ThrottleOptions {
  /** Sustained requests per second (> 0). */
  qps: number;
  /** Requests that may go at once after a quiet spell (≥ 1). */
  burst: number;
  /** Seconds each call waited for a token (a histogram's observe). */
  observeWait?: (seconds: number) => void;
  /** Clock, ms; default performance.now. */
  now?: () => number;
}

/** A token bucket that hands out reservations: the wait before the next call may go. Pure but for the clock. */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private readonly qps: number;
  private readonly burst: number;
  private readonly now: () => number;

  constructor(qps: number, burst: number, now: () => number = () => performance.now()) {
    if (!(qps > 0 && Number.isFinite(qps))) throw new TypeError(`qps must be a finite number above 0, got ${qps}`);
    if (!(Number.isInteger(burst) && burst >= 1)) throw new TypeError(`burst must be a whole number ≥ 1, got ${burst}`);
    this.qps = qps;
    this.burst = burst;
    this.now = now;
    this.tokens = burst;
    this.last = now();
  }

  /** Takes a token and returns how long (ms) its holder must wait before using it. */
  reserve(): number {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.qps) / 1000);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.qps;
  }
}

export class ThrottledKubeClient implements KubeClient {
  readonly #inner: KubeClient;
  readonly #bucket: TokenBucket;
  readonly #reviews: TokenBucket;
  readonly #observeWait: (seconds: number) => void;

  constructor(inner: KubeClient, opts: ThrottleOptions) {
    this.#inner = inner;
    this.#bucket = new TokenBucket(opts.qps, opts.burst, opts.now);
    this.#reviews = new TokenBucket(opts.qps, opts.burst, opts.now);
    this.#observeWait = opts.observeWait ?? (() => undefined);
  }

  async #turn(bucket = this.#bucket): Promise<void> {
    const waitMs = bucket.reserve();
    this.#observeWait(waitMs / 1000);
    if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
  }

  async list(type: ResourceType, opts: ListOptions): Promise<ListPage> {
    await this.#turn();
    return this.#inner.list(type, opts);
  }

  async watch(type: ResourceType, opts: WatchOptions, onEvent: (e: WatchEvent) => void, onEnd: (err?: unknown) => void): Promise<WatchHandle> {
    await this.#turn();
    return this.#inner.watch(type, opts, onEvent, onEnd);
  }

  async patchPvcSize(namespace: string, name: string, patch: PvcSizePatch): Promise<V1PersistentVolumeClaim> {
    await this.#turn();
    return this.#inner.patchPvcSize(namespace, name, patch);
  }

  async patchPvcAnnotations(namespace: string, name: string, patch: PvcAnnotationsPatch): Promise<V1PersistentVolumeClaim> {
    await this.#turn();
    return this.#inner.patchPvcAnnotations(namespace, name, patch);
  }

  async patchRequestStatus(namespace: string, name: string, status: RequestStatus, resourceVersion: string): Promise<string> {
    await this.#turn();
    return this.#inner.patchRequestStatus(namespace, name, status, resourceVersion);
  }

  async patchPolicyStatus(policy: PolicyRef, status: PolicyStatus): Promise<void> {
    await this.#turn();
    return this.#inner.patchPolicyStatus(policy, status);
  }

  async emitEvent(event: EventRecord): Promise<void> {
    await this.#turn();
    return this.#inner.emitEvent(event);
  }

  async createRequest(namespace: string, request: KubernetesObject): Promise<void> {
    await this.#turn();
    return this.#inner.createRequest(namespace, request);
  }

  async deleteRequest(namespace: string, name: string, uid: string): Promise<void> {
    await this.#turn();
    return this.#inner.deleteRequest(namespace, name, uid);
  }

  // --- the reviews behind /metrics: a bucket of their own ------------------------------------

  async createTokenReview(token: string): Promise<TokenReviewResult> {
    await this.#turn(this.#reviews);
    return this.#inner.createTokenReview(token);
  }

  async createSubjectAccessReview(review: NonResourceAccessReview): Promise<AccessReviewResult> {
    await this.#turn(this.#reviews);
    return this.#inner.createSubjectAccessReview(review);
  }

  // --- the lease: never queued -----------------------------------------------------------------

  getLease(namespace: string, name: string): Promise<V1Lease | undefined> {
    return this.#inner.getLease(namespace, name);
  }

  createLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.#inner.createLease(namespace, lease);
  }

  updateLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.#inner.updateLease(namespace, lease);
  }
}
