// The I/O half of token-signature.ts: the cluster's token signing keys, read from the API server
// (GET /openid/v1/jwks) when first needed, read again every ten minutes while scrapes come, and at
// once (at most once a minute) when a token names a key not among them — the cluster rotated its
// keys. Nothing is read before the first scrape, and no timer runs: a pvx nobody scrapes asks for
// nothing.
//
// Until the keys are there, or when they cannot be read (a cluster that took away the default
// binding system:service-account-issuer-discovery), every token is taken for unsigned: the reviews
// are made as before, in one queue.
import type { Logger } from 'pino';
import { signingKeys, tokenSignature, type SigningKey } from './token-signature.ts';

export interface ClusterSigningKeysOptions {
  /** The key set, parsed JSON: KubeClient.getServiceAccountKeys. */
  read: () => Promise<unknown>;
  logger: Logger;
  /** How long keys are used before they are read again, ms. Default 600,000. */
  refreshMs?: number;
  /** Reads at most this often, whatever tokens name, ms. Default 60,000. */
  minIntervalMs?: number;
  /** Clock for the intervals, ms; default performance.now. */
  now?: () => number;
  /** Clock for the tokens' exp and nbf, ms since the epoch; default Date.now. */
  wallNow?: () => number;
}

export class ClusterSigningKeys {
  readonly #o: Required<ClusterSigningKeysOptions>;
  #keys: readonly SigningKey[] = [];
  /** When the last read was started; undefined before the first. */
  #readAt: number | undefined;
  #reading: Promise<void> | undefined;
  #warned = false;

  constructor(opts: ClusterSigningKeysOptions) {
    this.#o = { refreshMs: 600_000, minIntervalMs: 60_000, now: () => performance.now(), wallNow: Date.now, ...opts };
  }

  /** The ServiceAccount whose token this is, when the cluster signed it; undefined otherwise (or before the keys are read). */
  signedSubject(token: string): string | undefined {
    const now = this.#o.now();
    if (this.#readAt === undefined || now - this.#readAt >= this.#o.refreshMs) this.#read(now);
    const verdict = tokenSignature(token, this.#keys, this.#o.wallNow() / 1000);
    if (verdict.kind === 'unknown-key' && now - (this.#readAt ?? -Infinity) >= this.#o.minIntervalMs) this.#read(now);
    return verdict.kind === 'signed' ? verdict.subject : undefined;
  }

  /** The read under way, if any (for tests). */
  settled(): Promise<void> {
    return this.#reading ?? Promise.resolve();
  }

  #read(now: number): void {
    if (this.#reading) return;
    this.#readAt = now;
    this.#reading = this.#o
      .read()
      .then((jwks) => {
        const keys = signingKeys(jwks);
        if (keys.length === 0) throw new Error('the key set holds no key pvx can read');
        this.#keys = keys;
        this.#warned = false;
      })
      .catch((err: unknown) => {
        // Once per outage: a scrape every few seconds would otherwise log it every minute for ever.
        if (!this.#warned) {
          this.#warned = true;
          this.#o.logger.warn(
            { err: (err as Error).message },
            "could not read the cluster's token signing keys (GET /openid/v1/jwks); scrapers' tokens are reviewed in arrival order meanwhile",
          );
        }
      })
      .finally(() => {
        this.#reading = undefined;
      });
  }
}
