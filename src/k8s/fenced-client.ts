// The leader fence at the last moment before each write. Reconcilers check canWrite() when they
// decide, but a reconcile takes time (reads, a slow API server, awaits between two writes): a
// replica can lose its lease in between. This decorator asks again immediately before every write,
// so a replica that is not the leader, or whose lease has passed its renew deadline, sends none.
//
// Default deny: every method of the port is fenced except the ones listed in unfencedMethods,
// which the fence itself depends on (the caches, the usage source, the leader election) or which
// every replica needs whether it leads or not (the reviews behind /metrics).
import type { KubernetesObject, V1Lease, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import type { PolicyStatus } from '../crds/volume-expansion-policy.ts';
import type { RequestStatus } from '../crds/volume-expansion-request.ts';
import { RetryAfterError } from './errors.ts';
import type { AccessReviewResult, EventRecord, KubeClient, NonResourceAccessReview, TokenReviewResult, ListOptions, ListPage, PolicyRef, PvcAnnotationsPatch, PvcSizePatch, WatchEvent, WatchHandle, WatchOptions } from './client.ts';
import type { ResourceType } from './resources.ts';

/**
 * Calls that pass whatever canWrite() says: reads (a standby keeps warm caches and usage), the
 * lease calls, without which no replica could ever become the leader, and the token and access
 * reviews of scrapes — they create nothing, and every replica serves /metrics (a standby's too).
 */
export const unfencedMethods = ['list', 'watch', 'createTokenReview', 'createSubjectAccessReview', 'getLease', 'createLease', 'updateLease'] as const satisfies readonly (keyof KubeClient)[];

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

export class FencedKubeClient implements KubeClient {
  readonly #inner: KubeClient;
  readonly #canWrite: () => boolean;
  readonly #retryAfterMs: number;

  constructor(inner: KubeClient, opts: FenceOptions) {
    const retryAfterMs = opts.retryAfterMs ?? 2_000;
    if (!(Number.isFinite(retryAfterMs) && retryAfterMs >= 0)) throw new TypeError(`retryAfterMs must be a finite number of ms ≥ 0, got ${retryAfterMs}`);
    this.#inner = inner;
    this.#canWrite = opts.canWrite;
    this.#retryAfterMs = retryAfterMs;
  }

  // --- unfenced ------------------------------------------------------------------------------

  list(type: ResourceType, opts: ListOptions): Promise<ListPage> {
    return this.#inner.list(type, opts);
  }

  watch(type: ResourceType, opts: WatchOptions, onEvent: (e: WatchEvent) => void, onEnd: (err?: unknown) => void): Promise<WatchHandle> {
    return this.#inner.watch(type, opts, onEvent, onEnd);
  }

  createTokenReview(token: string): Promise<TokenReviewResult> {
    return this.#inner.createTokenReview(token);
  }

  createSubjectAccessReview(review: NonResourceAccessReview): Promise<AccessReviewResult> {
    return this.#inner.createSubjectAccessReview(review);
  }

  getLease(namespace: string, name: string): Promise<V1Lease | undefined> {
    return this.#inner.getLease(namespace, name);
  }

  createLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.#inner.createLease(namespace, lease);
  }

  updateLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.#inner.updateLease(namespace, lease);
  }

  // --- fenced --------------------------------------------------------------------------------

  async patchPvcSize(namespace: string, name: string, patch: PvcSizePatch): Promise<V1PersistentVolumeClaim> {
    this.#fence(`patch the size of PersistentVolumeClaim ${namespace}/${name}`);
    return this.#inner.patchPvcSize(namespace, name, patch);
  }

  async patchPvcAnnotations(namespace: string, name: string, patch: PvcAnnotationsPatch): Promise<V1PersistentVolumeClaim> {
    this.#fence(`patch the annotations of PersistentVolumeClaim ${namespace}/${name}`);
    return this.#inner.patchPvcAnnotations(namespace, name, patch);
  }

  async patchRequestStatus(namespace: string, name: string, status: RequestStatus, resourceVersion: string): Promise<string> {
    this.#fence(`patch the status of VolumeExpansionRequest ${namespace}/${name}`);
    return this.#inner.patchRequestStatus(namespace, name, status, resourceVersion);
  }

  async patchPolicyStatus(policy: PolicyRef, status: PolicyStatus): Promise<void> {
    this.#fence(`patch the status of ${policy.kind} ${policy.namespace ? `${policy.namespace}/` : ''}${policy.name}`);
    return this.#inner.patchPolicyStatus(policy, status);
  }

  async emitEvent(event: EventRecord): Promise<void> {
    const { kind, namespace, name } = event.regarding;
    this.#fence(`emit the ${event.reason} Event on ${kind} ${namespace ? `${namespace}/` : ''}${name}`);
    return this.#inner.emitEvent(event);
  }

  async createRequest(namespace: string, request: KubernetesObject): Promise<void> {
    this.#fence(`create VolumeExpansionRequest ${namespace}/${request.metadata?.name ?? '(unnamed)'}`);
    return this.#inner.createRequest(namespace, request);
  }

  async deleteRequest(namespace: string, name: string, uid: string): Promise<void> {
    this.#fence(`delete VolumeExpansionRequest ${namespace}/${name}`);
    return this.#inner.deleteRequest(namespace, name, uid);
  }

  /** Throws unless this replica may write at this very moment. */
  #fence(what: string): void {
    if (this.#canWrite()) return;
    throw new NotLeaderError(`not the leader (or the leader lease was not renewed within its deadline): did not ${what}`, this.#retryAfterMs);
  }
}
