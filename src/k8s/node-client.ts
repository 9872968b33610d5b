// KubeClient over @kubernetes/client-node 2.x: what `pvx run` falls back to when the credentials
// are not static (exec plugins, auth-providers, proxies); HttpKubeClient serves the rest. Bodies and
// refusals are shared with it (wire.ts).
import {
  AuthenticationV1Api,
  AuthorizationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  Watch,
  setHeaderOptions,
  type KubernetesObject,
  type V1Lease,
  type V1PersistentVolumeClaim,
} from '@kubernetes/client-node';
import type { PolicyStatus } from '../crds/volume-expansion-policy.ts';
import type { RequestStatus } from '../crds/volume-expansion-request.ts';
import type { AccessReviewResult, EventRecord, KubeClient, NonResourceAccessReview, TokenReviewResult, ListOptions, ListPage, PolicyRef, PvcAnnotationsPatch, PvcSizePatch, WatchEvent, WatchHandle, WatchOptions } from './client.ts';
import { apiCall, isNotFound, toApiError } from './errors.ts';
import { apiVersionOf, fieldManager, clusterVolumeExpansionPolicies, collectionPath, volumeExpansionPolicies, volumeExpansionRequests, type ResourceType } from './resources.ts';
import { accessReviewResult, claimPatchRefusal, eventBody, pvcAnnotationsBody, pvcSizeBody, statusBody, subjectAccessReviewBody, tokenReviewBody, tokenReviewResult } from './wire.ts';


export class NodeKubeClient implements KubeClient {
  readonly kubeConfig: KubeConfig;
  private readonly objects: KubernetesObjectApi;
  private readonly authentication: AuthenticationV1Api;
  private readonly authorization: AuthorizationV1Api;
  private readonly coordination: CoordinationV1Api;
  private readonly core: CoreV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly watcher: Watch;

  constructor(kubeConfig: KubeConfig) {
    this.kubeConfig = kubeConfig;
    this.objects = KubernetesObjectApi.makeApiClient(kubeConfig);
    this.authentication = kubeConfig.makeApiClient(AuthenticationV1Api);
    this.authorization = kubeConfig.makeApiClient(AuthorizationV1Api);
    this.coordination = kubeConfig.makeApiClient(CoordinationV1Api);
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.custom = kubeConfig.makeApiClient(CustomObjectsApi);
    this.watcher = new Watch(kubeConfig);
    // The informer runs its own watchdog on silent streams; client-node's 30 s inactivity abort
    // would otherwise cut every quiet watch.
    (this.watcher as unknown as { requestTimeoutMs: number }).requestTimeoutMs = 60 * 60 * 1000;
  }

  async list(type: ResourceType, opts: ListOptions): Promise<ListPage> {
    const page = await apiCall(() =>
      this.objects.list(
        apiVersionOf(type),
        type.kind,
        type.namespaced ? opts.namespace : undefined,
        undefined,
        undefined,
        undefined,
        opts.fieldSelector,
        opts.labelSelector,
        opts.limit,
        opts.continue,
      ),
    );
    return {
      items: page.items.map((item) => ({ ...item, apiVersion: item.apiVersion ?? apiVersionOf(type), kind: item.kind ?? type.kind })),
      resourceVersion: page.metadata?.resourceVersion ?? '',
      continue: page.metadata?._continue || undefined,
    };
  }

  async watch(type: ResourceType, opts: WatchOptions, onEvent: (e: WatchEvent) => void, onEnd: (err?: unknown) => void): Promise<WatchHandle> {
    let ended = false;
    const end = (err?: unknown) => {
      if (ended) return;
      ended = true;
      onEnd(err ? toApiError(err) : undefined);
    };
    const controller = await this.watcher.watch(
      collectionPath(type, opts.namespace),
      {
        resourceVersion: opts.resourceVersion,
        allowWatchBookmarks: true,
        timeoutSeconds: opts.timeoutSeconds,
        labelSelector: opts.labelSelector,
        fieldSelector: opts.fieldSelector,
      },
      (phase: string, object: KubernetesObject) => {
        if (!ended) onEvent({ type: phase as WatchEvent['type'], object });
      },
      (err: unknown) => end(err ?? undefined),
    );
    return {
      stop: () => {
        ended = true;
        controller.abort();
      },
    };
  }

  async patchPvcSize(namespace: string, name: string, patch: PvcSizePatch): Promise<V1PersistentVolumeClaim> {
    return this.mergeClaim(namespace, name, pvcSizeBody(patch));
  }

  async patchPvcAnnotations(namespace: string, name: string, patch: PvcAnnotationsPatch): Promise<V1PersistentVolumeClaim> {
    return this.mergeClaim(namespace, name, pvcAnnotationsBody(patch));
  }

  /** A JSON merge patch of a claim, its UID precondition's refusal read as the 409 it means. */
  private async mergeClaim(namespace: string, name: string, body: object): Promise<V1PersistentVolumeClaim> {
    // The Content-Type is always explicit: client-node's default for patch is not a merge patch.
    try {
      return await apiCall(() => this.core.patchNamespacedPersistentVolumeClaim({ namespace, name, body, fieldManager }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch)));
    } catch (err) {
      throw claimPatchRefusal(err);
    }
  }

  async patchRequestStatus(namespace: string, name: string, status: RequestStatus, resourceVersion: string): Promise<string> {
    const written = await this.mergeStatus(volumeExpansionRequests, namespace, name, status, resourceVersion);
    return written.metadata?.resourceVersion ?? '';
  }

  /** JSON merge patch of a pvx object's status through its /status subresource (with a resourceVersion precondition when given). */
  private async mergeStatus(type: ResourceType, namespace: string | undefined, name: string, status: object, resourceVersion?: string): Promise<KubernetesObject> {
    const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const target = { group: type.group, version: type.version, plural: type.resource, name, body: statusBody(status, resourceVersion), fieldManager };
    return (await apiCall(() =>
      namespace === undefined ? this.custom.patchClusterCustomObjectStatus(target, merge) : this.custom.patchNamespacedCustomObjectStatus({ ...target, namespace }, merge),
    )) as KubernetesObject;
  }

  async createRequest(namespace: string, request: KubernetesObject): Promise<void> {
    await apiCall(() =>
      this.custom.createNamespacedCustomObject({ group: 'pvx.dev', version: 'v1alpha1', namespace, plural: 'volumeexpansionrequests', body: request, fieldManager }),
    );
  }

  async deleteRequest(namespace: string, name: string, uid: string): Promise<void> {
    await apiCall(() =>
      this.custom.deleteNamespacedCustomObject({ group: 'pvx.dev', version: 'v1alpha1', namespace, plural: 'volumeexpansionrequests', name, body: { preconditions: { uid } } }),
    );
  }

  async patchPolicyStatus(policy: PolicyRef, status: PolicyStatus): Promise<void> {
    await (policy.kind === 'VolumeExpansionPolicy'
      ? this.mergeStatus(volumeExpansionPolicies, policy.namespace, policy.name, status)
      : this.mergeStatus(clusterVolumeExpansionPolicies, undefined, policy.name, status));
  }

  async emitEvent(e: EventRecord): Promise<void> {
    await apiCall(() => this.core.createNamespacedEvent({ namespace: e.regarding.namespace, body: eventBody(e, new Date()) }));
  }

  async createTokenReview(token: string): Promise<TokenReviewResult> {
    return tokenReviewResult(await apiCall(() => this.authentication.createTokenReview({ body: tokenReviewBody(token) })));
  }

  async createSubjectAccessReview(review: NonResourceAccessReview): Promise<AccessReviewResult> {
    return accessReviewResult(await apiCall(() => this.authorization.createSubjectAccessReview({ body: subjectAccessReviewBody(review) })));
  }

  async getLease(namespace: string, name: string): Promise<V1Lease | undefined> {
    try {
      return await apiCall(() => this.coordination.readNamespacedLease({ namespace, name }));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  createLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return apiCall(() => this.coordination.createNamespacedLease({ namespace, body: lease }));
  }

  updateLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return apiCall(() => this.coordination.replaceNamespacedLease({ namespace, name: lease.metadata?.name ?? '', body: lease }));
  }
}
