// Retry delays for the work queue, after client-go's DefaultControllerRateLimiter: the larger of a
// per-key exponential backoff (5 ms doubling to 1000 s) and a global token bucket (10/s, burst
// 100) that caps retries across all keys.

export interface RateLimiter {
  /** Delay before the key may be retried, counting this as one more failure. */
  when(key: string): number;
  /** Forget the key's failures (after a success). */
  forget(key: string): void;
  /** Failures counted for the key since it was last forgotten. */
  retries(key: string): number;
}

export interface ExponentialOptions {
  /** First delay, ms. Default 5. */
  baseMs?: number;
  /** Largest delay, ms. Default 1,000,000 (1000 s). */
  maxMs?: number;
}

export class ExponentialBackoff implements RateLimiter {
  private readonly failures = new Map<string, number>();
  private readonly baseMs: number;
  private readonly maxMs: number;

  constructor(opts: ExponentialOptions = {}) {
    this.baseMs = positive('baseMs', opts.baseMs ?? 5);
    this.maxMs = positive('maxMs', opts.maxMs ?? 1_000_000);
    if (this.maxMs < this.baseMs) throw new TypeError(`maxMs (${this.maxMs}) must be at least baseMs (${this.baseMs})`);
  }

  when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    // 2^n overflows to Infinity long after the cap; Math.min keeps it finite.
    return Math.min(this.baseMs * 2 ** n, this.maxMs);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

export interface TokenBucketOptions {
  /** Tokens added per second. Default 10. */
  qps?: number;
  /** Bucket size. Default 100. */
  burst?: number;
  /** A monotonic clock, ms (a wall-clock step back would drain the bucket). Default performance.now. */
  now?: () => number;
}

/** Overall retry budget: each call reserves a token and returns how long until it is available. */
export class TokenBucket implements RateLimiter {
  private tokens: number;
  private last: number;
  private readonly qps: number;
  private readonly burst: number;
  private readonly now: () => number;

  constructor(opts: TokenBucketOptions = {}) {
    this.qps = positive('qps', opts.qps ?? 10);
    this.burst = positive('burst', opts.burst ?? 100);
    this.now = opts.now ?? (() => performance.now());
    this.tokens = this.burst;
    this.last = this.now();
  }

  when(): number {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }

  forget(): void {}

  retries(): number {
    return 0;
  }
}

/** The longest delay of several limiters; failures are counted by all of them. */
export class MaxOf implements RateLimiter {
  private readonly limiters: RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    if (limiters.length === 0) throw new TypeError('MaxOf needs at least one rate limiter');
    this.limiters = limiters;
  }

  when(key: string): number {
    return Math.max(...this.limiters.map((l) => l.when(key)));
  }

  forget(key: string): void {
    for (const l of this.limiters) l.forget(key);
  }

  retries(key: string): number {
    return Math.max(...this.limiters.map((l) => l.retries(key)));
  }
}

export function defaultControllerRateLimiter(): RateLimiter {
  return new MaxOf(new ExponentialBackoff(), new TokenBucket());
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number, got ${String(value)}`);
  return value;
}
