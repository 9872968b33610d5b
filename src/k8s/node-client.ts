// KubeClient over @kubernetes/client-node 2.x: what `pvx run` falls back to when the credentials
// are not static (exec plugins, auth-providers, SOCKS proxies); HttpKubeClient serves the rest. Bodies and
// refusals are shared with it (wire.ts).
import {
  AppsV1Api,
  AuthenticationV1Api,
  OpenidApi,
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
  type V1ConfigMap,
  type V1StatefulSet,
} from '@kubernetes/client-node';
import type {
  AccessReviewResult,
  CommandClient,
  DeletePreconditions,
  EventRecord,
  MintedToken,
  NonResourceAccessReview,
  TokenReviewResult,
  ListOptions,
  ListPage,
  RequestAnnotationsPatch,
  WatchEvent,
  WatchHandle,
  WatchOptions,
} from './client.ts';
import { apiCall, isNotFound, toApiError } from './errors.ts';
import { apiVersionOf, fieldManager, collectionPath, volumeExpansionRequests, type ResourceType } from './resources.ts';
import {
  MergePatchClient,
  accessReviewResult,
  deletedVersion,
  eventBody,
  evictionBody,
  finalizersBody,
  orphanDeleteBody,
  requestAnnotationsBody,
  mintedToken,
  subjectAccessReviewBody,
  tokenRequestBody,
  tokenReviewBody,
  tokenReviewResult,
} from './wire.ts';

export class NodeKubeClient extends MergePatchClient implements CommandClient {
  readonly kubeConfig: KubeConfig;
  private readonly objects: KubernetesObjectApi;
  private readonly apps: AppsV1Api;
  private readonly authentication: AuthenticationV1Api;
  private readonly openid: OpenidApi;
  private readonly authorization: AuthorizationV1Api;
  private readonly coordination: CoordinationV1Api;
  private readonly core: CoreV1Api;
  private readonly custom: CustomObjectsApi;
  private readonly watcher: Watch;

  constructor(kubeConfig: KubeConfig) {
    super();
    this.kubeConfig = kubeConfig;
    this.objects = KubernetesObjectApi.makeApiClient(kubeConfig);
    this.apps = kubeConfig.makeApiClient(AppsV1Api);
    this.authentication = kubeConfig.makeApiClient(AuthenticationV1Api);
    this.openid = kubeConfig.makeApiClient(OpenidApi);
    this.authorization = kubeConfig.makeApiClient(AuthorizationV1Api);
    this.coordination = kubeConfig.makeApiClient(CoordinationV1Api);
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.custom = kubeConfig.makeApiClient(CustomObjectsApi);
    this.watcher = new Watch(kubeConfig);
    // The informer runs its own watchdog on silent streams; client-node's 30 s inactivity abort
    // would otherwise cut every quiet watch.
    (this.watcher as unknown as { requestTimeoutMs: number }).requestTimeoutMs = 60 * 60 * 1000;
  }

  async read(type: ResourceType, namespace: string | undefined, name: string): Promise<KubernetesObject | undefined> {
    try {
      return await apiCall(() =>
        this.objects.read({ apiVersion: apiVersionOf(type), kind: type.kind, metadata: { name, ...(type.namespaced && namespace ? { namespace } : {}) } }),
      );
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
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
    const stop = () => {
      ended = true;
      controller.abort();
    };
    // client-node answers with its controller only once the server has answered: a signal that
    // fired meanwhile stops the watch now.
    if (opts.signal?.aborted) stop();
    else opts.signal?.addEventListener('abort', stop, { once: true });
    return { stop };
  }

  protected mergeClaimPatch(namespace: string, name: string, body: object): Promise<V1PersistentVolumeClaim> {
    // The Content-Type is always explicit: client-node's default for patch is not a merge patch.
    return apiCall(() =>
      this.core.patchNamespacedPersistentVolumeClaim({ namespace, name, body, fieldManager }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch)),
    );
  }

  protected async mergeStatusPatch(type: ResourceType, namespace: string | undefined, name: string, body: object): Promise<KubernetesObject> {
    const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const target = { group: type.group, version: type.version, plural: type.resource, name, body, fieldManager };
    return (await apiCall(() =>
      namespace === undefined
        ? this.custom.patchClusterCustomObjectStatus(target, merge)
        : this.custom.patchNamespacedCustomObjectStatus({ ...target, namespace }, merge),
    )) as KubernetesObject;
  }

  async patchRequestAnnotations(namespace: string, name: string, patch: RequestAnnotationsPatch): Promise<void> {
    await apiCall(() =>
      this.custom.patchNamespacedCustomObject(
        {
          group: volumeExpansionRequests.group,
          version: volumeExpansionRequests.version,
          plural: volumeExpansionRequests.resource,
          namespace,
          name,
          body: requestAnnotationsBody(patch),
          fieldManager,
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
  }

  async nodeStatsSummary(node: string): Promise<unknown> {
    const text = await apiCall(() => this.core.connectGetNodeProxyWithPath({ name: node, path: 'stats/summary' }));
    return typeof text === 'string' ? JSON.parse(text) : text;
  }

  async whoAmI(): Promise<string | undefined> {
    try {
      const review = await this.authentication.createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
      return review.status?.userInfo?.username || undefined;
    } catch {
      return undefined;
    }
  }

  async createRequest(namespace: string, request: KubernetesObject): Promise<string> {
    const created = (await apiCall(() =>
      this.custom.createNamespacedCustomObject({
        group: 'pvx.dev',
        version: 'v1alpha1',
        namespace,
        plural: 'volumeexpansionrequests',
        body: request,
        fieldManager,
      }),
    )) as KubernetesObject;
    return created.metadata?.uid ?? '';
  }

  async deleteRequest(namespace: string, name: string, uid: string): Promise<void> {
    await apiCall(() =>
      this.custom.deleteNamespacedCustomObject({
        group: 'pvx.dev',
        version: 'v1alpha1',
        namespace,
        plural: 'volumeexpansionrequests',
        name,
        body: { preconditions: { uid } },
      }),
    );
  }

  async emitEvent(e: EventRecord): Promise<void> {
    await apiCall(() => this.core.createNamespacedEvent({ namespace: e.regarding.namespace, body: eventBody(e, new Date()) }));
  }

  async patchRequestFinalizers(namespace: string, name: string, finalizers: string[], resourceVersion: string): Promise<string> {
    const written = (await apiCall(() =>
      this.custom.patchNamespacedCustomObject(
        {
          group: 'pvx.dev',
          version: 'v1alpha1',
          namespace,
          plural: 'volumeexpansionrequests',
          name,
          body: finalizersBody(finalizers, resourceVersion),
          fieldManager,
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    )) as KubernetesObject;
    return written.metadata?.resourceVersion ?? '';
  }

  async getStatefulSet(namespace: string, name: string): Promise<V1StatefulSet | undefined> {
    try {
      return await apiCall(() => this.apps.readNamespacedStatefulSet({ namespace, name }));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async deleteStatefulSetOrphan(namespace: string, name: string, preconditions: DeletePreconditions): Promise<string | undefined> {
    const left = await apiCall(() => this.apps.deleteNamespacedStatefulSet({ namespace, name, body: orphanDeleteBody(preconditions) }));
    return deletedVersion(left as unknown as KubernetesObject);
  }

  createStatefulSet(namespace: string, statefulSet: V1StatefulSet): Promise<V1StatefulSet> {
    return apiCall(() => this.apps.createNamespacedStatefulSet({ namespace, body: statefulSet, fieldManager }));
  }

  createRecord(namespace: string, record: V1ConfigMap): Promise<V1ConfigMap> {
    return apiCall(() => this.core.createNamespacedConfigMap({ namespace, body: record, fieldManager }));
  }

  updateRecord(namespace: string, record: V1ConfigMap): Promise<V1ConfigMap> {
    return apiCall(() => this.core.replaceNamespacedConfigMap({ namespace, name: record.metadata?.name as string, body: record, fieldManager }));
  }

  async deleteRecord(namespace: string, name: string, uid: string): Promise<void> {
    await apiCall(() => this.core.deleteNamespacedConfigMap({ namespace, name, body: { preconditions: { uid } } }));
  }

  async evictPod(namespace: string, name: string, uid: string): Promise<void> {
    await apiCall(() => this.core.createNamespacedPodEviction({ namespace, name, body: evictionBody(namespace, name, uid) }));
  }

  async createServiceAccountToken(namespace: string, name: string, expirationSeconds: number): Promise<MintedToken> {
    return mintedToken(await apiCall(() => this.core.createNamespacedServiceAccountToken({ namespace, name, body: tokenRequestBody(expirationSeconds) })));
  }

  async createTokenReview(token: string): Promise<TokenReviewResult> {
    return tokenReviewResult(await apiCall(() => this.authentication.createTokenReview({ body: tokenReviewBody(token) })));
  }

  async getServiceAccountKeys(): Promise<unknown> {
    const text = await apiCall(() => this.openid.getServiceAccountIssuerOpenIDKeyset());
    return typeof text === 'string' ? JSON.parse(text) : text;
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
