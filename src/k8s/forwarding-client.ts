// A KubeClient that passes every call on to another, each through one hook: the base of the
// decorators around the port — the leader fence (fenced-client.ts) and the client-side rate limit
// (throttled-client.ts). Each decides, by the name of the method called, what to do before the
// call goes on; none forwards a method by hand. A method added to the port is added here, once
// (the compiler asks for it), and every decorator applies to it at once.
import type { KubernetesObject, V1ConfigMap, V1Lease, V1PersistentVolumeClaim, V1StatefulSet } from '@kubernetes/client-node';
import type { PolicyStatus } from '../crds/volume-expansion-policy.ts';
import type { RequestStatus } from '../crds/volume-expansion-request.ts';
import type {
  AccessReviewResult,
  DeletePreconditions,
  EventRecord,
  KubeClient,
  ListOptions,
  ListPage,
  MintedToken,
  NonResourceAccessReview,
  PolicyRef,
  PvcAnnotationsPatch,
  PvcSizePatch,
  TokenReviewResult,
  WatchEvent,
  WatchHandle,
  WatchOptions,
} from './client.ts';
import type { ResourceType } from './resources.ts';

/** A method of the port. */
export type PortMethod = keyof KubeClient;

/** One call of the port, as a decorator sees it. */
export interface PortCall {
  method: PortMethod;
  /** What the call does, in words ("patch the size of PersistentVolumeClaim db/data"): for refusals and logs. */
  what: string;
}

const where = (namespace: string | undefined, name: string) => `${namespace ? `${namespace}/` : ''}${name}`;

export abstract class ForwardingKubeClient implements KubeClient {
  protected readonly inner: KubeClient;

  constructor(inner: KubeClient) {
    this.inner = inner;
  }

  /** Makes one call: `forward` passes it on to the inner client as it was made. */
  protected abstract through<T>(call: PortCall, forward: () => Promise<T>): Promise<T>;

  list(type: ResourceType, opts: ListOptions): Promise<ListPage> {
    return this.through({ method: 'list', what: `list ${type.resource}` }, () => this.inner.list(type, opts));
  }

  watch(type: ResourceType, opts: WatchOptions, onEvent: (e: WatchEvent) => void, onEnd: (err?: unknown) => void): Promise<WatchHandle> {
    return this.through({ method: 'watch', what: `watch ${type.resource}` }, () => this.inner.watch(type, opts, onEvent, onEnd));
  }

  patchPvcSize(namespace: string, name: string, patch: PvcSizePatch): Promise<V1PersistentVolumeClaim> {
    return this.through({ method: 'patchPvcSize', what: `patch the size of PersistentVolumeClaim ${namespace}/${name}` }, () =>
      this.inner.patchPvcSize(namespace, name, patch),
    );
  }

  patchPvcAnnotations(namespace: string, name: string, patch: PvcAnnotationsPatch): Promise<V1PersistentVolumeClaim> {
    return this.through({ method: 'patchPvcAnnotations', what: `patch the annotations of PersistentVolumeClaim ${namespace}/${name}` }, () =>
      this.inner.patchPvcAnnotations(namespace, name, patch),
    );
  }

  patchRequestStatus(namespace: string, name: string, status: RequestStatus, resourceVersion: string): Promise<string> {
    return this.through({ method: 'patchRequestStatus', what: `patch the status of VolumeExpansionRequest ${namespace}/${name}` }, () =>
      this.inner.patchRequestStatus(namespace, name, status, resourceVersion),
    );
  }

  patchPolicyStatus(policy: PolicyRef, status: PolicyStatus): Promise<string> {
    return this.through({ method: 'patchPolicyStatus', what: `patch the status of ${policy.kind} ${where(policy.namespace, policy.name)}` }, () =>
      this.inner.patchPolicyStatus(policy, status),
    );
  }

  emitEvent(event: EventRecord): Promise<void> {
    const { kind, namespace, name } = event.regarding;
    return this.through({ method: 'emitEvent', what: `emit the ${event.reason} Event on ${kind} ${where(namespace, name)}` }, () =>
      this.inner.emitEvent(event),
    );
  }

  createRequest(namespace: string, request: KubernetesObject): Promise<string> {
    return this.through({ method: 'createRequest', what: `create VolumeExpansionRequest ${namespace}/${request.metadata?.name ?? '(unnamed)'}` }, () =>
      this.inner.createRequest(namespace, request),
    );
  }

  deleteRequest(namespace: string, name: string, uid: string): Promise<void> {
    return this.through({ method: 'deleteRequest', what: `delete VolumeExpansionRequest ${namespace}/${name}` }, () =>
      this.inner.deleteRequest(namespace, name, uid),
    );
  }

  patchRequestFinalizers(namespace: string, name: string, finalizers: string[], resourceVersion: string): Promise<string> {
    return this.through({ method: 'patchRequestFinalizers', what: `patch the finalizers of VolumeExpansionRequest ${namespace}/${name}` }, () =>
      this.inner.patchRequestFinalizers(namespace, name, finalizers, resourceVersion),
    );
  }

  getStatefulSet(namespace: string, name: string): Promise<V1StatefulSet | undefined> {
    return this.through({ method: 'getStatefulSet', what: `read StatefulSet ${namespace}/${name}` }, () => this.inner.getStatefulSet(namespace, name));
  }

  deleteStatefulSetOrphan(namespace: string, name: string, preconditions: DeletePreconditions): Promise<string | undefined> {
    return this.through({ method: 'deleteStatefulSetOrphan', what: `delete StatefulSet ${namespace}/${name}` }, () =>
      this.inner.deleteStatefulSetOrphan(namespace, name, preconditions),
    );
  }

  createStatefulSet(namespace: string, statefulSet: V1StatefulSet): Promise<V1StatefulSet> {
    return this.through({ method: 'createStatefulSet', what: `create StatefulSet ${namespace}/${statefulSet.metadata?.name ?? '(unnamed)'}` }, () =>
      this.inner.createStatefulSet(namespace, statefulSet),
    );
  }

  createRecord(namespace: string, record: V1ConfigMap): Promise<V1ConfigMap> {
    return this.through({ method: 'createRecord', what: `create the StatefulSet record ${namespace}/${record.metadata?.name ?? '(unnamed)'}` }, () =>
      this.inner.createRecord(namespace, record),
    );
  }

  updateRecord(namespace: string, record: V1ConfigMap): Promise<V1ConfigMap> {
    return this.through({ method: 'updateRecord', what: `update the StatefulSet record ${namespace}/${record.metadata?.name ?? '(unnamed)'}` }, () =>
      this.inner.updateRecord(namespace, record),
    );
  }

  deleteRecord(namespace: string, name: string, uid: string): Promise<void> {
    return this.through({ method: 'deleteRecord', what: `delete the StatefulSet record ${namespace}/${name}` }, () =>
      this.inner.deleteRecord(namespace, name, uid),
    );
  }

  evictPod(namespace: string, name: string, uid: string): Promise<void> {
    return this.through({ method: 'evictPod', what: `evict pod ${namespace}/${name}` }, () => this.inner.evictPod(namespace, name, uid));
  }

  createServiceAccountToken(namespace: string, name: string, expirationSeconds: number): Promise<MintedToken> {
    return this.through({ method: 'createServiceAccountToken', what: `mint a token for ServiceAccount ${namespace}/${name}` }, () =>
      this.inner.createServiceAccountToken(namespace, name, expirationSeconds),
    );
  }

  createTokenReview(token: string): Promise<TokenReviewResult> {
    return this.through({ method: 'createTokenReview', what: 'review a bearer token' }, () => this.inner.createTokenReview(token));
  }

  createSubjectAccessReview(review: NonResourceAccessReview): Promise<AccessReviewResult> {
    return this.through({ method: 'createSubjectAccessReview', what: `review whether ${review.user.username} may ${review.verb} ${review.path}` }, () =>
      this.inner.createSubjectAccessReview(review),
    );
  }

  getServiceAccountKeys(): Promise<unknown> {
    return this.through({ method: 'getServiceAccountKeys', what: "read the cluster's token signing keys" }, () => this.inner.getServiceAccountKeys());
  }

  getLease(namespace: string, name: string): Promise<V1Lease | undefined> {
    return this.through({ method: 'getLease', what: `read Lease ${namespace}/${name}` }, () => this.inner.getLease(namespace, name));
  }

  createLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.through({ method: 'createLease', what: `create Lease ${namespace}/${lease.metadata?.name ?? ''}` }, () =>
      this.inner.createLease(namespace, lease),
    );
  }

  updateLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.through({ method: 'updateLease', what: `update Lease ${namespace}/${lease.metadata?.name ?? ''}` }, () =>
      this.inner.updateLease(namespace, lease),
    );
  }
}
