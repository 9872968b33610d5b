// The KubeClient port: the narrow, intention-named set of API calls pvx makes. Reconcilers and the
// runtime depend on this interface only; `NodeKubeClient` implements it over client-node and
// `FakeKubeClient` (src/k8s/testing/) in memory for tests. Every write that can race carries a resourceVersion
// precondition and fails with ApiError 409 when the object changed meanwhile.
import type { KubernetesObject, V1ConfigMap, V1Lease, V1Node, V1PersistentVolumeClaim, V1StatefulSet } from '@kubernetes/client-node';
import type { PolicyStatus } from '../crds/volume-expansion-policy.ts';
import type { RequestStatus } from '../crds/volume-expansion-request.ts';
import type { ResourceType } from './resources.ts';

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  limit?: number;
  continue?: string;
}

/** How an object went, read from the API server's watch history (src/k8s/history.ts, readDeletion). */
export type DeletionHistory =
  /**
   * Gone: every version after the one asked from (oldest first) and the last state, as its DELETED
   * event carried it; `later`: what the history holds of the name after that (another object
   * created under it since, and how it went), as far as it streamed within a moment.
   */
  | { kind: 'deleted'; versions: KubernetesObject[]; last: KubernetesObject; later?: { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: KubernetesObject }[] }
  /** No DELETED event within the wait: the object is still there (a cache that showed it gone was behind). */
  | { kind: 'present'; versions: KubernetesObject[] }
  /** The API server no longer keeps history that old (410): how it went cannot be known. */
  | { kind: 'compacted' }
  /** Its namespace is gone (the watch answered 404 for it): it went with it. */
  | { kind: 'namespaceGone' };

export interface ListPage<T = KubernetesObject> {
  items: T[];
  resourceVersion: string;
  continue?: string;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent<T = KubernetesObject> {
  type: WatchEventType;
  /** The object; for ERROR a metav1.Status ({code: 410, reason: 'Expired', …}). */
  object: T;
}

export interface WatchOptions extends Omit<ListOptions, 'limit' | 'continue'> {
  resourceVersion: string;
  /** Ask the server to end the stream after this long (it is then resumed from the last version). */
  timeoutSeconds?: number;
  /**
   * Aborting it ends the watch as stop() does (onEnd is not called), also while its request still
   * waits for an answer: a caller that gives up on a watch closes its connection.
   */
  signal?: AbortSignal;
}

export interface WatchHandle {
  stop(): void;
}

export interface PvcSizePatch {
  /** Precondition: the patch fails with 409 if the claim changed since this version. */
  resourceVersion: string;
  /**
   * Precondition: the claim the request was validated for. The API server refuses (409) a patch
   * whose metadata.uid differs from the stored object's, so a claim deleted and re-created under
   * the same name is never patched on the strength of another claim's validation.
   */
  uid: string;
  /** The new storage request; absent: the size is left as it is. */
  storage?: string;
  /** The new spec.volumeAttributesClassName; absent: the class is left as it is. */
  volumeAttributesClassName?: string;
  /** Written in the same patch as the size and class, so intent and action are one atomic write; null removes one. */
  annotations: Record<string, string | null>;
}

export interface PvcAnnotationsPatch {
  /** Precondition: the patch fails with 409 if the claim changed since this version. */
  resourceVersion: string;
  /** Precondition: the claim decided on (409 for another of the same name). */
  uid: string;
  /** Set, or (null) removed; nothing else of the claim is written. */
  annotations: Record<string, string | null>;
}

/** Preconditions of a delete: the object exactly as it was decided on (409 otherwise). */
export interface DeletePreconditions {
  uid: string;
  resourceVersion: string;
}

/** A VolumeExpansionPolicy (namespaced) or a ClusterVolumeExpansionPolicy (no namespace). */
export type PolicyRef =
  { kind: 'VolumeExpansionPolicy'; namespace: string; name: string } | { kind: 'ClusterVolumeExpansionPolicy'; namespace?: undefined; name: string };

export interface EventRecord {
  /** The object the event is about. */
  regarding: { apiVersion: string; kind: string; namespace: string; name: string; uid?: string };
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

/** Who a bearer token belongs to, as a TokenReview tells (authentication.k8s.io/v1 UserInfo). */
export interface UserInfo {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** A TokenReview's answer: the token's user, or why it is not authenticated. */
export type TokenReviewResult = { authenticated: true; user: UserInfo } | { authenticated: false; error?: string };

/** A SubjectAccessReview of a non-resource URL (such as /metrics) for a user a TokenReview named. */
export interface NonResourceAccessReview {
  user: UserInfo;
  path: string;
  verb: string;
}

/** A SubjectAccessReview's answer; `reason` and `evaluationError` are the authorizer's own words. */
export interface AccessReviewResult {
  allowed: boolean;
  reason?: string;
  evaluationError?: string;
}

export interface RequestAnnotationsPatch {
  /** Precondition: the patch fails with 409 if the request changed since this version. */
  resourceVersion: string;
  /** Set, or (null) removed; nothing else of the request is written. */
  annotations: Record<string, string | null>;
}

export interface KubeClient {
  /** One page of a collection. */
  list(type: ResourceType, opts: ListOptions): Promise<ListPage>;
  /**
   * Streams changes after opts.resourceVersion (with bookmarks). onEnd is called exactly once:
   * with no argument when the stream closed normally, or with the error that ended it.
   */
  watch(type: ResourceType, opts: WatchOptions, onEvent: (e: WatchEvent) => void, onEnd: (err?: unknown) => void): Promise<WatchHandle>;

  /**
   * Raises a claim's storage request and/or sets its VolumeAttributesClass, in one JSON merge patch
   * with resourceVersion and UID preconditions (a size and a class together are one modification
   * of the volume: the EBS driver makes them one ModifyVolume).
   */
  patchPvcSize(namespace: string, name: string, patch: PvcSizePatch): Promise<V1PersistentVolumeClaim>;
  /** Writes annotations of a claim, nothing else (JSON merge patch with resourceVersion and UID preconditions). */
  patchPvcAnnotations(namespace: string, name: string, patch: PvcAnnotationsPatch): Promise<V1PersistentVolumeClaim>;
  /**
   * Merges into a VolumeExpansionRequest's status through the /status subresource. Precondition:
   * the request is still at resourceVersion (409 otherwise), so a status decided from a stale
   * cache never overwrites a newer one — a finished request is never reopened. Returns the
   * request's new resourceVersion, for a second write in the same reconcile.
   */
  patchRequestStatus(namespace: string, name: string, status: RequestStatus, resourceVersion: string): Promise<string>;
  /** Merges a policy's status through /status (either kind); returns the resourceVersion written (the same one: nothing changed). */
  patchPolicyStatus(policy: PolicyRef, status: PolicyStatus): Promise<string>;
  emitEvent(event: EventRecord): Promise<void>;
  /** Creates a VolumeExpansionRequest (a policy's, a StatefulSet request's child); returns the UID the API server gave it; 409 if it exists. */
  createRequest(namespace: string, request: KubernetesObject): Promise<string>;
  /** Deletes a finished request (its TTL passed); the UID precondition spares a re-created one. */
  deleteRequest(namespace: string, name: string, uid: string): Promise<void>;

  /**
   * Sets a VolumeExpansionRequest's metadata.finalizers (JSON merge patch, with a resourceVersion
   * precondition so another writer's finalizer is never dropped); returns the new resourceVersion.
   * Opt-in RBAC (StatefulSet templates): a request holding a recorded StatefulSet cannot vanish.
   */
  patchRequestFinalizers(namespace: string, name: string, finalizers: string[], resourceVersion: string): Promise<string>;

  /** Reads a StatefulSet from the API server (not a cache): what pvx records before it deletes it. Undefined when there is none. */
  getStatefulSet(namespace: string, name: string): Promise<V1StatefulSet | undefined>;
  /**
   * Deletes a StatefulSet with propagationPolicy Orphan (its pods and claims stay; the garbage
   * collector removes their ownerReferences, then the StatefulSet), preconditioned on its UID and
   * resourceVersion (409 when it changed since it was recorded; 404 when gone). Returns the
   * resourceVersion the delete left it at (being deleted), or undefined when it went at once.
   */
  deleteStatefulSetOrphan(namespace: string, name: string, preconditions: DeletePreconditions): Promise<string | undefined>;
  /** Creates a StatefulSet (pvx's re-creation from its record); 409 AlreadyExists when one of the name exists. */
  createStatefulSet(namespace: string, statefulSet: V1StatefulSet): Promise<V1StatefulSet>;
  /**
   * Creates a StatefulSet record (a ConfigMap in pvx's own namespace, src/policies/request/statefulset-record.ts);
   * 409 AlreadyExists when one of the name exists. Opt-in RBAC (StatefulSet templates): a Role in pvx's namespace.
   */
  createRecord(namespace: string, record: V1ConfigMap): Promise<V1ConfigMap>;
  /** Replaces a record; its metadata.resourceVersion is the precondition (409 if stale). */
  updateRecord(namespace: string, record: V1ConfigMap): Promise<V1ConfigMap>;
  /** Deletes a record; the UID precondition spares one of the name made since. */
  deleteRecord(namespace: string, name: string, uid: string): Promise<void>;
  /**
   * Evicts a pod through the Eviction API (policy/v1), preconditioned on its UID: 429 while a
   * PodDisruptionBudget does not allow it (the ApiError's causes name the budget), 404 when the pod
   * is gone, 409 when the pod of that name is another one.
   */
  evictPod(namespace: string, name: string, uid: string): Promise<void>;

  /**
   * Mints a short-lived token for a ServiceAccount (TokenRequest; RBAC: serviceaccounts/token
   * create): the identity pvx reads kubelets as, which may do nothing else. Stores nothing.
   */
  createServiceAccountToken(namespace: string, name: string, expirationSeconds: number): Promise<MintedToken>;
  /** Asks the API server who a bearer token belongs to (TokenReview; RBAC: tokenreviews create). Creates nothing. */
  createTokenReview(token: string): Promise<TokenReviewResult>;
  /** Asks the API server whether a user may do this (SubjectAccessReview; RBAC: subjectaccessreviews create). Creates nothing. */
  createSubjectAccessReview(review: NonResourceAccessReview): Promise<AccessReviewResult>;
  /**
   * The keys the API server signs ServiceAccount tokens with, as a JSON Web Key Set, parsed (GET
   * /openid/v1/jwks; every ServiceAccount may, by the default ClusterRoleBinding
   * system:service-account-issuer-discovery). Public keys: they tell a scrape's token the cluster
   * signed from a made-up one (token-signature.ts).
   */
  getServiceAccountKeys(): Promise<unknown>;

  getLease(namespace: string, name: string): Promise<V1Lease | undefined>;
  createLease(namespace: string, lease: V1Lease): Promise<V1Lease>;
  /** Replaces the lease; lease.metadata.resourceVersion is the precondition (409 if stale). */
  updateLease(namespace: string, lease: V1Lease): Promise<V1Lease>;
}

/** A token the API server minted (TokenRequest), and when it stops being valid. */
export interface MintedToken {
  token: string;
  expiresAt: Date;
}

/**
 * What the commands need beyond the operator's port (the operator's RBAC, src/k8s/rbac.ts, is
 * derived from KubeClient alone, and grants none of this).
 */
export interface CommandClient extends KubeClient {
  /** One object, or undefined when there is none (404). */
  read(type: ResourceType, namespace: string | undefined, name: string): Promise<KubernetesObject | undefined>;
  /** Writes annotations of a VolumeExpansionRequest, nothing else (JSON merge patch with a resourceVersion precondition): `pvx approve`. */
  patchRequestAnnotations(namespace: string, name: string, patch: RequestAnnotationsPatch): Promise<void>;
  /**
   * A node's kubelet stats summary through the API server's node proxy
   * (/api/v1/nodes/NAME/proxy/stats/summary; RBAC: nodes/proxy get), parsed: the person's
   * credentials go to the API server only, never to the node.
   */
  nodeStatsSummary(node: string): Promise<unknown>;
  /** The user's name as the API server knows it (SelfSubjectReview, authentication.k8s.io/v1); undefined if it will not say. */
  whoAmI(): Promise<string | undefined>;
}

/**
 * The port usage sources read kubelets through (src/usage/kubelet-client.ts implements it over
 * HTTPS); a fake serves it in unit tests and the simulation.
 */
export interface KubeletClient {
  /** The node's kubelet stats summary, parsed (kubelet authorization: nodes/stats get); the signal abandons the read. */
  statsSummary(node: V1Node, signal?: AbortSignal): Promise<unknown>;
}
