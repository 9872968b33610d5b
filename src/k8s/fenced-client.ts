// The leader fence at the last moment before each write. Reconcilers check canWrite() when they
// decide, but a reconcile takes time (reads, a slow API server, awaits between two writes): a
// replica can lose its lease in between. This decorator asks again immediately before every write,
// so a replica that is not the leader, or whose lease has passed its renew deadline, sends none.
//
// Default deny: every method of the port is fenced except the ones listed in unfencedMethods,
// which the fence itself depends on (the caches, the usage source, the leader election) or which
// every replica needs whether it leads or not (the reviews behind /metrics).
import type { KubeClient } from './client.ts';
import { RetryAfterError } from './errors.ts';
import { ForwardingKubeClient, type PortCall, type PortMethod } from './forwarding-client.ts';

/**
 * Calls that pass whatever canWrite() says: reads (a standby keeps warm caches and usage), the
 * lease calls, without which no replica could ever become the leader, the token and access
 * reviews of scrapes and the signing keys that order them — they create nothing, and every
 * replica serves /metrics (a standby's too) —
 * and the token the kubelets are read with (a standby reads usage too; it is stored nowhere).
 */
export const unfencedMethods = [
  'list',
  'watch',
  'getStatefulSet',
  'createServiceAccountToken',
  'createTokenReview',
  'createSubjectAccessReview',
  'getServiceAccountKeys',
  'getLease',
  'createLease',
  'updateLease',
] as const satisfies readonly PortMethod[];
const unfenced: ReadonlySet<PortMethod> = new Set(unfencedMethods);

/**
 * A write refused because this replica may not write now. A RetryAfterError, so the controller
 * requeues the key after a short delay without counting a failure: a replica that lost its lease
 * exits meanwhile, and one that was only late renewing it writes once it has.
 */
export class NotLeaderError extends RetryAfterError {
  override name = 'NotLeaderError';
}

export interface FenceOptions {
  /** True while this replica may write (leader, lease renewed within its renew deadline). */
  canWrite: () => boolean;
  /** How long a refused reconcile waits before it is tried again, ms. Default 2,000 (the lease retry period). */
  retryAfterMs?: number;
}

export class FencedKubeClient extends ForwardingKubeClient {
  readonly #canWrite: () => boolean;
  readonly #retryAfterMs: number;

  constructor(inner: KubeClient, opts: FenceOptions) {
    const retryAfterMs = opts.retryAfterMs ?? 2_000;
    if (!(Number.isFinite(retryAfterMs) && retryAfterMs >= 0)) throw new TypeError(`retryAfterMs must be a finite number of ms ≥ 0, got ${retryAfterMs}`);
    super(inner);
    this.#canWrite = opts.canWrite;
    this.#retryAfterMs = retryAfterMs;
  }

  /** Refuses the call unless its method is unfenced or this replica may write at this very moment. */
  protected override async through<T>(call: PortCall, forward: () => Promise<T>): Promise<T> {
    if (!unfenced.has(call.method) && !this.#canWrite()) {
      throw new NotLeaderError(`not the leader (or the leader lease was not renewed within its deadline): did not ${call.what}`, this.#retryAfterMs);
    }
    return forward();
  }
}
