// The I/O half of /metrics' access check: asks the API server (TokenReview, then
// SubjectAccessReview) and keeps the verdicts briefly; every rule is in metrics-access.ts.
// Prometheus scrapes each replica every 15–60 s with the same token, so with a 10 s cache most
// scrapes cost no API call, and a revoked binding still stops scrapes within seconds.
//
// The port is open to whoever reaches it, so a flood of bogus tokens must not starve the real
// scraper nor cost the API server without bound:
//
//   - allowed verdicts and refusals are cached apart: bogus tokens, all refused, fill only the
//     refusals' cache and never push a real scraper's verdict out;
//   - a token allowed within the last hour is "known": when its verdict expires it is reviewed at
//     once. Every other token goes through the ReviewGate (review-gate.ts): one waiting per peer
//     address, a bounded rate of reviews, a bounded queue with a bounded wait — a refusal at once
//     (429/503, Retry-After) rather than a wait without end;
//   - a scrape whose client goes away before its review starts costs no review;
//   - a token the cluster signed (signing-keys.ts) waits in the gate's first lane, one per
//     ServiceAccount: made-up tokens never stand before a real scraper, even one pvx has never
//     seen. A ServiceAccount refused within the last minute waits with everyone else: a tenant
//     minting tokens for their own ServiceAccounts holds the first lane one review a minute each.
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
import { ReviewGate, type ReviewGateOptions } from './review-gate.ts';

export interface MetricsAuthorizerOptions {
  /** Makes the reviews: unfenced (a standby serves metrics too). */
  client: Pick<KubeClient, 'createTokenReview' | 'createSubjectAccessReview'>;
  logger: Logger;
  /** Default 10 s allowed, 5 s denied. */
  ttls?: VerdictTtls;
  /** At most this many verdicts are kept in each cache (allowed, refused). Default 1,024. */
  maxEntries?: number;
  /** How long a token once allowed is reviewed without waiting in the gate, ms. Default 3,600,000 (a projected token's life). */
  knownForMs?: number;
  /** The gate in front of reviews of tokens not known (review-gate.ts); its clock is `now`. */
  unknownTokens?: Omit<ReviewGateOptions, 'now'>;
  /** Tells tokens the cluster signed (signing-keys.ts): they go first in the gate. None: one queue for all. */
  signingKeys?: { signedSubject(token: string): string | undefined };
  /** How long a ServiceAccount refused waits with unsigned tokens, ms. Default 60,000. */
  refusedSubjectMs?: number;
  /** Clock, ms; default performance.now. */
  now?: () => number;
}

/** Who is asking: the peer's address (for the gate's per-address limit), and the request's end. */
export interface ScrapeOrigin {
  peer: string;
  /** Fires when the client goes away: a review not yet started is not made. */
  signal?: AbortSignal;
}

export class MetricsAuthorizer {
  readonly #o: MetricsAuthorizerOptions;
  readonly #ttls: VerdictTtls;
  readonly #allowed: VerdictCache;
  readonly #refused: VerdictCache;
  /** Tokens allowed within knownForMs: their reviews skip the gate. */
  readonly #known: VerdictCache;
  readonly #knownForMs: number;
  readonly #gate: ReviewGate;
  /** ServiceAccounts whose signed token was refused lately: their next tokens do not go first. */
  readonly #refusedSubjects: VerdictCache;
  /** Reviews in flight by key: scrapes arriving together with one token share one review. */
  readonly #inFlight = new Map<string, Promise<ScrapeVerdict>>();

  constructor(opts: MetricsAuthorizerOptions) {
    this.#o = opts;
    this.#ttls = opts.ttls ?? defaultVerdictTtls;
    const now = opts.now ?? (() => performance.now());
    const maxEntries = opts.maxEntries ?? 1024;
    this.#allowed = new VerdictCache({ maxEntries, now });
    this.#refused = new VerdictCache({ maxEntries, now });
    this.#known = new VerdictCache({ maxEntries, now });
    this.#knownForMs = opts.knownForMs ?? 3_600_000;
    this.#gate = new ReviewGate({ ...opts.unknownTokens, now });
    this.#refusedSubjects = new VerdictCache({ maxEntries, now });
  }

  /** The verdict on a scrape carrying this Authorization header, from `origin`. Never throws. */
  async check(authorization: string | undefined, origin: ScrapeOrigin): Promise<ScrapeVerdict> {
    const token = bearerToken(authorization);
    if (token === undefined) return { kind: 'unauthenticated', message: 'no bearer token (send Authorization: Bearer <token>)' };
    // The caches and the log see a hash of the token: the token itself is a credential.
    const key = createHash('sha256').update(token).digest('hex');
    const cached = this.#allowed.get(key) ?? this.#refused.get(key);
    if (cached) return cached;
    const shared = this.#inFlight.get(key);
    if (shared) return shared;
    const signedBy = this.#known.get(key) ? undefined : this.#signedBy(token);
    const pending = this.#admitThenReview(token, key, origin, signedBy).then((verdict) => {
      this.#inFlight.delete(key);
      this.#remember(key, verdict);
      if (signedBy !== undefined && (verdict.kind === 'forbidden' || verdict.kind === 'unauthenticated')) {
        this.#refusedSubjects.set(signedBy, verdict, this.#o.refusedSubjectMs ?? 60_000);
      }
      return verdict;
    });
    this.#inFlight.set(key, pending);
    return pending;
  }

  /** The ServiceAccount of a token the cluster signed, unless it was refused lately. */
  #signedBy(token: string): string | undefined {
    const subject = this.#o.signingKeys?.signedSubject(token);
    return subject === undefined || this.#refusedSubjects.get(subject) ? undefined : subject;
  }

  async #admitThenReview(token: string, key: string, origin: ScrapeOrigin, signedBy: string | undefined): Promise<ScrapeVerdict> {
    if (this.#known.get(key)) return this.#review(token);
    const admission = await this.#gate.admit(origin.peer, origin.signal, signedBy);
    if (admission.kind === 'refused') return { kind: 'shed', status: admission.status, retryAfterSeconds: 1, message: admission.message };
    try {
      return await this.#review(token);
    } finally {
      admission.done();
    }
  }

  #remember(key: string, verdict: ScrapeVerdict): void {
    const ttl = verdictTtlMs(verdict, this.#ttls);
    if (verdict.kind === 'allowed') {
      this.#allowed.set(key, verdict, ttl);
      this.#known.set(key, verdict, this.#knownForMs);
    } else {
      this.#refused.set(key, verdict, ttl);
      // A binding revoked (403) or a token expired (401): no longer known.
      if (verdict.kind === 'forbidden' || verdict.kind === 'unauthenticated') this.#known.delete(key);
    }
    if (verdict.kind === 'unavailable') this.#o.logger.warn({ status: verdict.status }, verdict.message);
    else if (verdict.kind !== 'allowed') this.#o.logger.debug({ verdict: verdict.kind, token: key.slice(0, 12) }, verdict.message);
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
