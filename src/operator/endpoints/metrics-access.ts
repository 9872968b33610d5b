// Who may read /metrics, decided as kubebuilder's scaffold decides it (controller-runtime's
// WithAuthenticationAndAuthorization filter): the scraper's bearer token is reviewed by the API
// server (TokenReview), and the user it names must be allowed `get` on the non-resource URL
// /metrics (SubjectAccessReview) — what a ClusterRole with `nonResourceURLs: [/metrics]` grants.
// Metrics tell a reader which namespaces and claims exist and how full they are: not for everyone
// who can reach a pod's port.
//
// The steps are pure: the answers of the two reviews in, a verdict out, and the HTTP answer of a
// verdict. src/operator/endpoints/metrics-auth.ts makes the calls and caches verdicts in a VerdictCache.
import type { AccessReviewResult, TokenReviewResult, UserInfo } from '../../k8s/client.ts';
import { ApiError } from '../../k8s/errors.ts';

/** What a scraper must be allowed: `get` on this non-resource URL. */
export const metricsAccess = { path: '/metrics', verb: 'get' } as const;

export type ScrapeVerdict =
  /** Serve the metrics. */
  | { kind: 'allowed'; user: string }
  /** 401: no bearer token, or one the API server does not know. */
  | { kind: 'unauthenticated'; message: string }
  /** 403: a known user who may not get /metrics. */
  | { kind: 'forbidden'; user: string; message: string }
  /** 500/503: a review could not be made; nothing is served, and the verdict is not cached. */
  | { kind: 'unavailable'; status: 500 | 503; message: string }
  /**
   * 429/503 with Retry-After: an unknown token that was not reviewed, because its peer already has
   * one under review or the review queue is full or slow (review-gate.ts); not cached.
   */
  | { kind: 'shed'; status: 429 | 503; retryAfterSeconds: number; message: string };

/** The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, RFC 6750); undefined for none or another scheme. */
export function bearerToken(authorization: string | undefined): string | undefined {
  const m = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization ?? '');
  return m?.[1];
}

/** The verdict once the token is reviewed: a user to authorize next, or a refusal. */
export function afterTokenReview(review: TokenReviewResult): { next: 'authorize'; user: UserInfo } | ScrapeVerdict {
  if (review.authenticated) return { next: 'authorize', user: review.user };
  return { kind: 'unauthenticated', message: `the bearer token is not valid${review.error ? ` (${review.error})` : ''}` };
}

/** The verdict once the user's access to /metrics is reviewed. */
export function afterAccessReview(user: UserInfo, review: AccessReviewResult): ScrapeVerdict {
  if (review.allowed) return { kind: 'allowed', user: user.username };
  const why = review.reason || review.evaluationError;
  return {
    kind: 'forbidden',
    user: user.username,
    message: `user "${user.username}" may not ${metricsAccess.verb} ${metricsAccess.path}${why ? ` (${why})` : ''}: bind it to the ClusterRole pvx-metrics-reader`,
  };
}

/**
 * A review call that failed. pvx itself refused (403: its RBAC lacks tokenreviews or
 * subjectaccessreviews create) is a 500, which waiting will not cure; anything else (the API
 * server unreachable, overloaded, a timeout) a 503, worth scraping again.
 */
export function reviewFailed(review: 'TokenReview' | 'SubjectAccessReview', err: unknown): ScrapeVerdict {
  const text = err instanceof Error ? err.message : String(err);
  if (err instanceof ApiError && err.code === 403) {
    const resource = review === 'TokenReview' ? 'tokenreviews.authentication.k8s.io' : 'subjectaccessreviews.authorization.k8s.io';
    return {
      kind: 'unavailable',
      status: 500,
      message: `pvx may not create ${resource}, so it cannot check who is scraping (grant it, see the ClusterRole pvx-metrics-auth): ${text}`,
    };
  }
  return { kind: 'unavailable', status: 503, message: `pvx could not check who is scraping: the ${review} failed: ${text}` };
}

/** The HTTP answer to a refused scrape (an allowed one gets the metrics). */
export function refusal(v: Exclude<ScrapeVerdict, { kind: 'allowed' }>): { status: number; body: string; headers: Record<string, string> } {
  switch (v.kind) {
    case 'unauthenticated':
      return { status: 401, body: `Unauthorized: ${v.message}\n`, headers: { 'www-authenticate': 'Bearer realm="pvx metrics"' } };
    case 'forbidden':
      return { status: 403, body: `Forbidden: ${v.message}\n`, headers: {} };
    case 'unavailable':
      return { status: v.status, body: `${v.message}\n`, headers: {} };
    case 'shed':
      return { status: v.status, body: `${v.message}\n`, headers: { 'retry-after': String(v.retryAfterSeconds) } };
  }
}

export interface VerdictTtls {
  /** How long an allowed scraper is not reviewed again, ms. */
  allowedMs: number;
  /** How long a refused token is refused without asking again, ms: shorter, so a binding just made takes effect soon. */
  deniedMs: number;
}

/** kubebuilder's scaffold caches for minutes; pvx for seconds, so a revoked binding stops scrapes within one interval. */
export const defaultVerdictTtls: VerdictTtls = { allowedMs: 10_000, deniedMs: 5_000 };

/** How long a verdict may be reused, ms: a failure never is (the next scrape asks again). */
export function verdictTtlMs(v: ScrapeVerdict, ttls: VerdictTtls): number {
  switch (v.kind) {
    case 'allowed':
      return ttls.allowedMs;
    case 'unauthenticated':
    case 'forbidden':
      return ttls.deniedMs;
    case 'unavailable':
    case 'shed':
      return 0;
  }
}

/**
 * Verdicts by key (a hash of the token, never the token), each until its expiry on the clock
 * given, at most maxEntries of them: when full, expired entries go first, then the oldest, so a
 * scraper sending a new token each time cannot grow the process's memory. Allowed verdicts and
 * refusals are kept in two caches (metrics-auth.ts), so that bogus tokens, which are all refused,
 * never push a real scraper's verdict out.
 */
export class VerdictCache {
  readonly #entries = new Map<string, { verdict: ScrapeVerdict; expiresAt: number }>();
  readonly #maxEntries: number;
  readonly #now: () => number;

  constructor(opts: { maxEntries: number; now: () => number }) {
    if (!(Number.isInteger(opts.maxEntries) && opts.maxEntries >= 1)) throw new TypeError(`maxEntries must be a whole number ≥ 1, got ${opts.maxEntries}`);
    this.#maxEntries = opts.maxEntries;
    this.#now = opts.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): ScrapeVerdict | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (this.#now() < e.expiresAt) return e.verdict;
    this.#entries.delete(key);
    return undefined;
  }

  set(key: string, verdict: ScrapeVerdict, ttlMs: number): void {
    if (ttlMs <= 0) return;
    this.#entries.delete(key);
    if (this.#entries.size >= this.#maxEntries) this.#evict();
    this.#entries.set(key, { verdict, expiresAt: this.#now() + ttlMs });
  }

  delete(key: string): void {
    this.#entries.delete(key);
  }

  #evict(): void {
    const now = this.#now();
    for (const [k, e] of this.#entries) if (e.expiresAt <= now) this.#entries.delete(k);
    // A Map iterates in insertion order: the first key is the oldest entry.
    if (this.#entries.size >= this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value as string);
  }
}
