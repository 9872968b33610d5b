// What both KubeClient adapters (client-node's and pvx's own HTTP one) put on the wire and how they
// read the API server's refusals, in one place so the two cannot drift: the bodies of the port's
// writes and of an Event, the claim patch's UID precondition read as the 409 it means, and the
// port's merge patches themselves (MergePatchClient), over the transport each adapter gives.
import type {
  AuthenticationV1TokenRequest,
  CoreV1Event,
  KubernetesObject,
  V1PersistentVolumeClaim,
  V1SubjectAccessReview,
  V1TokenReview,
} from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import type { PolicyStatus } from '../crds/volume-expansion-policy.ts';
import type { RequestStatus } from '../crds/volume-expansion-request.ts';
import type {
  AccessReviewResult,
  DeletePreconditions,
  EventRecord,
  MintedToken,
  NonResourceAccessReview,
  PolicyRef,
  PvcAnnotationsPatch,
  PvcSizePatch,
  RequestAnnotationsPatch,
  TokenReviewResult,
} from './client.ts';
import { ApiError } from './errors.ts';
import { clusterVolumeExpansionPolicies, volumeExpansionPolicies, volumeExpansionRequests, type ResourceType } from './resources.ts';

/** The JSON merge patch media type: every pvx patch is one, and says so (client-node's default is not). */
export const mergePatch = 'application/merge-patch+json';

/** A claim's patch: the new request and/or class, pvx's annotations, and the resourceVersion and UID preconditions. */
export function pvcSizeBody(patch: PvcSizePatch): object {
  return {
    metadata: { resourceVersion: patch.resourceVersion, uid: patch.uid, annotations: patch.annotations },
    spec: {
      ...(patch.storage !== undefined ? { resources: { requests: { storage: patch.storage } } } : {}),
      ...(patch.volumeAttributesClassName !== undefined ? { volumeAttributesClassName: patch.volumeAttributesClassName } : {}),
    },
  };
}

/** A merge of a claim's annotations, preconditioned on its resourceVersion and UID. */
export function pvcAnnotationsBody(patch: PvcAnnotationsPatch): object {
  return { metadata: { resourceVersion: patch.resourceVersion, uid: patch.uid, annotations: patch.annotations } };
}

/** A merge of a request's annotations, preconditioned on its resourceVersion. */
export function requestAnnotationsBody(patch: RequestAnnotationsPatch): object {
  return { metadata: { resourceVersion: patch.resourceVersion, annotations: patch.annotations } };
}

/** A merge of a pvx object's status, with a resourceVersion precondition when given. */
export function statusBody(status: object, resourceVersion?: string): object {
  return resourceVersion === undefined ? { status } : { metadata: { resourceVersion }, status };
}

/** A merge of an object's finalizers (the whole list), preconditioned on its resourceVersion. */
export function finalizersBody(finalizers: string[], resourceVersion: string): object {
  return { metadata: { resourceVersion, finalizers } };
}

/** DeleteOptions of a delete that orphans the object's dependents, on the object exactly as decided on. */
export function orphanDeleteBody(pre: DeletePreconditions): object {
  return { apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Orphan', preconditions: { uid: pre.uid, resourceVersion: pre.resourceVersion } };
}

/**
 * The resourceVersion a delete left its object at, from the answer: the object itself while
 * finalizers hold it (an orphaning delete's "orphan"), or a Status once it is gone (none then).
 */
export function deletedVersion(answer: { kind?: string; metadata?: { resourceVersion?: string } } | undefined): string | undefined {
  return answer && answer.kind !== 'Status' ? answer.metadata?.resourceVersion || undefined : undefined;
}

/** A policy/v1 Eviction of the pod of this name and UID (another pod of the name is refused, 409). */
export function evictionBody(namespace: string, name: string, uid: string): object {
  return { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace }, deleteOptions: { preconditions: { uid } } };
}

/** A core/v1 Event about e.regarding, under a fresh name. */
export function eventBody(e: EventRecord, now: Date): CoreV1Event {
  return {
    metadata: { name: `${e.regarding.name}.${randomBytes(8).toString('hex')}`, namespace: e.regarding.namespace },
    involvedObject: { ...e.regarding },
    type: e.type,
    reason: e.reason,
    message: e.message.slice(0, 1024),
    source: { component: 'pvx' },
    reportingComponent: 'pvx.dev/operator',
    reportingInstance: 'pvx',
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
}

/**
 * The API server refuses a claim patch naming another UID as an immutable-field change (422): to
 * the port it is what it means, a failed precondition — the claim is not the one validated.
 */
export function claimPatchRefusal(err: unknown): unknown {
  if (err instanceof ApiError && err.code === 422 && err.fields.includes('metadata.uid')) {
    return new ApiError(409, 'Conflict', `the claim is not the one validated (UID precondition): ${err.message}`);
  }
  return err;
}

/**
 * A TokenRequest for the API server's own audiences (those a kubelet's webhook authentication
 * reviews a token for), bound to no object: it lives its expirationSeconds, no longer.
 */
export function tokenRequestBody(expirationSeconds: number): AuthenticationV1TokenRequest {
  return { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences: [], expirationSeconds } };
}

/** A TokenRequest's answer read: the token and when it expires (an answer without either is an error, not a token). */
export function mintedToken(answer: AuthenticationV1TokenRequest | undefined): MintedToken {
  const token = answer?.status?.token;
  const expiresAt = answer?.status?.expirationTimestamp ? new Date(answer.status.expirationTimestamp) : undefined;
  if (!token || !expiresAt || Number.isNaN(expiresAt.getTime())) throw new ApiError(500, 'InternalError', 'the TokenRequest answer has no token or no expiry');
  return { token, expiresAt };
}

/** A TokenReview of a bearer token, for the API server's own audiences (a service account token's default). */
export function tokenReviewBody(token: string): V1TokenReview {
  return { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } };
}

/** A TokenReview's answer read: authenticated only with a user name (an answer without one names nobody). */
export function tokenReviewResult(review: V1TokenReview | undefined): TokenReviewResult {
  const status = review?.status;
  const user = status?.user;
  if (!status?.authenticated || !user?.username) return { authenticated: false, ...(status?.error ? { error: status.error } : {}) };
  return {
    authenticated: true,
    user: {
      username: user.username,
      ...(user.uid ? { uid: user.uid } : {}),
      ...(user.groups ? { groups: user.groups } : {}),
      ...(user.extra ? { extra: user.extra } : {}),
    },
  };
}

/** A SubjectAccessReview of a non-resource URL, for the user, groups, uid and extra a TokenReview gave. */
export function subjectAccessReviewBody(r: NonResourceAccessReview): V1SubjectAccessReview {
  return {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: { user: r.user.username, uid: r.user.uid, groups: r.user.groups, extra: r.user.extra, nonResourceAttributes: { path: r.path, verb: r.verb } },
  };
}

/** A SubjectAccessReview's answer read: allowed only when the API server says so (an explicit denial is a denial too). */
export function accessReviewResult(review: V1SubjectAccessReview | undefined): AccessReviewResult {
  const status = review?.status;
  return {
    allowed: status?.allowed === true && status.denied !== true,
    ...(status?.reason ? { reason: status.reason } : {}),
    ...(status?.evaluationError ? { evaluationError: status.evaluationError } : {}),
  };
}

/**
 * The port's JSON merge patches, written once for both adapters: a claim's size, class and
 * annotations (its UID precondition's refusal read as the 409 it means), and the status of pvx's
 * objects through /status. An adapter gives the two transport calls they need, each a merge patch
 * with pvx's field manager and the Content-Type set; it implements the rest of the port itself.
 */
export abstract class MergePatchClient {
  /** A JSON merge patch of a PersistentVolumeClaim. */
  protected abstract mergeClaimPatch(namespace: string, name: string, body: object): Promise<V1PersistentVolumeClaim>;
  /** A JSON merge patch of a pvx object's /status subresource (no namespace: cluster-scoped). */
  protected abstract mergeStatusPatch(type: ResourceType, namespace: string | undefined, name: string, body: object): Promise<KubernetesObject>;

  patchPvcSize(namespace: string, name: string, patch: PvcSizePatch): Promise<V1PersistentVolumeClaim> {
    return this.mergeClaim(namespace, name, pvcSizeBody(patch));
  }

  patchPvcAnnotations(namespace: string, name: string, patch: PvcAnnotationsPatch): Promise<V1PersistentVolumeClaim> {
    return this.mergeClaim(namespace, name, pvcAnnotationsBody(patch));
  }

  async patchRequestStatus(namespace: string, name: string, status: RequestStatus, resourceVersion: string): Promise<string> {
    const written = await this.mergeStatusPatch(volumeExpansionRequests, namespace, name, statusBody(status, resourceVersion));
    return written.metadata?.resourceVersion ?? '';
  }

  async patchPolicyStatus(policy: PolicyRef, status: PolicyStatus): Promise<string> {
    const written = await (policy.kind === 'VolumeExpansionPolicy'
      ? this.mergeStatusPatch(volumeExpansionPolicies, policy.namespace, policy.name, statusBody(status))
      : this.mergeStatusPatch(clusterVolumeExpansionPolicies, undefined, policy.name, statusBody(status)));
    return written.metadata?.resourceVersion ?? '';
  }

  /** A merge patch of a claim, its UID precondition's refusal read as the 409 it means. */
  private async mergeClaim(namespace: string, name: string, body: object): Promise<V1PersistentVolumeClaim> {
    try {
      return await this.mergeClaimPatch(namespace, name, body);
    } catch (err) {
      throw claimPatchRefusal(err);
    }
  }
}
