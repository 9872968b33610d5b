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
// and the controllers never wait behind scrapes. Which scrapes get a review at all, when made-up
// tokens flood the port, the metrics endpoint decides before this bucket (its review gate).
import type { KubeClient } from './client.ts';
import { ForwardingKubeClient, type PortCall, type PortMethod } from './forwarding-client.ts';

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

/** Calls that never wait: the lease's (a renewal queued behind a burst would miss its deadline). */
const neverQueued: ReadonlySet<PortMethod> = new Set(['getLease', 'createLease', 'updateLease']);
/** The reviews behind /metrics: a bucket of their own. */
const reviews: ReadonlySet<PortMethod> = new Set(['createTokenReview', 'createSubjectAccessReview']);

export class ThrottledKubeClient extends ForwardingKubeClient {
  readonly #bucket: TokenBucket;
  readonly #reviews: TokenBucket;
  readonly #observeWait: (seconds: number) => void;

  constructor(inner: KubeClient, opts: ThrottleOptions) {
    super(inner);
    this.#bucket = new TokenBucket(opts.qps, opts.burst, opts.now);
    this.#reviews = new TokenBucket(opts.qps, opts.burst, opts.now);
    this.#observeWait = opts.observeWait ?? (() => undefined);
  }

  /** Waits the call's turn in its bucket (none for the lease), then makes it. */
  protected override async through<T>(call: PortCall, forward: () => Promise<T>): Promise<T> {
    if (!neverQueued.has(call.method)) {
      const waitMs = (reviews.has(call.method) ? this.#reviews : this.#bucket).reserve();
      this.#observeWait(waitMs / 1000);
      if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
    }
    return forward();
  }
}
