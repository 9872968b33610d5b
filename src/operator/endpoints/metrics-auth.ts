// The I/O half of /metrics' access check: asks the API server (TokenReview, then
// SubjectAccessReview) and keeps the verdicts briefly; every rule is in
// src/operator/endpoints/metrics-access.ts. Prometheus scrapes each replica every 15–60 s with the same
// token, so with a 10 s cache most scrapes cost no API call, and a revoked binding still stops
// scrapes within seconds.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { KubeClient } from '../../k8s/client.ts';
import {
  afterAccessReview,
  afterTokenReview,
  bearerToken,
  defaultVerdictTtls,
  metricsAccess,
  reviewFailed,
  VerdictCache,
  verdictTtlMs,
  type ScrapeVerdict,
  type VerdictTtls,
} from './metrics-access.ts';

export interface MetricsAuthorizerOptions {
  /** Makes the reviews: unfenced (a standby serves metrics too). */
  client: Pick<KubeClient, 'createTokenReview' | 'createSubjectAccessReview'>;
  logger: Logger;
  /** Default 10 s allowed, 5 s denied. */
  ttls?: VerdictTtls;
  /** At most this many verdicts are kept. Default 1,024. */
  maxEntries?: number;
  /** Clock, ms; default performance.now. */
  now?: () => number;
}

export class MetricsAuthorizer {
  readonly #o: MetricsAuthorizerOptions;
  readonly #ttls: VerdictTtls;
  readonly #cache: VerdictCache;
  /** Reviews in flight by key: scrapes arriving together with one token share one review. */
  readonly #inFlight = new Map<string, Promise<ScrapeVerdict>>();

  constructor(opts: MetricsAuthorizerOptions) {
    this.#o = opts;
    this.#ttls = opts.ttls ?? defaultVerdictTtls;
    this.#cache = new VerdictCache({ maxEntries: opts.maxEntries ?? 1024, now: opts.now ?? (() => performance.now()) });
  }

  /** The verdict on a scrape carrying this Authorization header. Never throws. */
  async check(authorization: string | undefined): Promise<ScrapeVerdict> {
    const token = bearerToken(authorization);
    if (token === undefined) return { kind: 'unauthenticated', message: 'no bearer token (send Authorization: Bearer <token>)' };
    // The cache and the log see a hash of the token: the token itself is a credential.
    const key = createHash('sha256').update(token).digest('hex');
    const cached = this.#cache.get(key);
    if (cached) return cached;
    let pending = this.#inFlight.get(key);
    if (!pending) {
      pending = this.#review(token).then((verdict) => {
        this.#inFlight.delete(key);
        this.#cache.set(key, verdict, verdictTtlMs(verdict, this.#ttls));
        if (verdict.kind === 'unavailable') this.#o.logger.warn({ status: verdict.status }, verdict.message);
        else if (verdict.kind !== 'allowed') this.#o.logger.debug({ verdict: verdict.kind, token: key.slice(0, 12) }, verdict.message);
        return verdict;
      });
      this.#inFlight.set(key, pending);
    }
    return pending;
  }

  async #review(token: string): Promise<ScrapeVerdict> {
    let next: ReturnType<typeof afterTokenReview>;
    try {
      next = afterTokenReview(await this.#o.client.createTokenReview(token));
    } catch (err) {
      return reviewFailed('TokenReview', err);
    }
    if (!('next' in next)) return next;
    try {
      return afterAccessReview(next.user, await this.#o.client.createSubjectAccessReview({ user: next.user, ...metricsAccess }));
    } catch (err) {
      return reviewFailed('SubjectAccessReview', err);
    }
  }
}
