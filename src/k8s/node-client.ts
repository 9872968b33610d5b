// KubeClient over @kubernetes/client-node 2.x.
import { CoordinationV1Api, KubeConfig, KubernetesObjectApi, Watch, type KubernetesObject, type V1Lease } from '@kubernetes/client-node';
import type { KubeClient, ListOptions, ListPage, WatchEvent, WatchHandle, WatchOptions } from './client.ts';
import { apiCall, isNotFound, toApiError } from './errors.ts';
import { apiVersionOf, collectionPath, type ResourceType } from './resources.ts';

export class NodeKubeClient implements KubeClient {
  readonly kubeConfig: KubeConfig;
  private readonly objects: KubernetesObjectApi;
  private readonly coordination: CoordinationV1Api;
  private readonly watcher: Watch;

  constructor(kubeConfig: KubeConfig) {
    this.kubeConfig = kubeConfig;
    this.objects = KubernetesObjectApi.makeApiClient(kubeConfig);
    this.coordination = kubeConfig.makeApiClient(CoordinationV1Api);
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
