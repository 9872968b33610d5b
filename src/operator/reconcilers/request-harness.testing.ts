// Test wiring for the request reconciler, shared by its test files: the reconciler with its real
// caches over the in-memory API server, the clock and the lease fence given by the test, and the
// faults the tests inject. Left out of the build (it bundles only what src/cli/main.ts imports).
import type {
  KubernetesObject,
  V1ConfigMap,
  V1Namespace,
  V1PersistentVolumeClaim,
  V1Pod,
  V1ResourceQuota,
  V1StatefulSet,
  V1StorageClass,
  V1VolumeAttributesClass,
} from '@kubernetes/client-node';
import pino from 'pino';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { FakeKubeClient } from '../../k8s/testing/fake-client.ts';
import { namespaces, resources, volumeExpansionRequests, type ResourceType } from '../../k8s/resources.ts';
import { Informer } from '../../k8s/informer.ts';
import { recordLabel } from '../../policies/request/statefulset-record.ts';
import { ExpansionRequestReconciler, type RequestReconcilerDeps } from './expansion-request.ts';
import { StatefulSetRecordKeeper, type RecordKeeperDeps } from './statefulset-records.ts';

/** Where the harness's pvx keeps its StatefulSet records: its own namespace, as `pvx run`'s leader election has it. */
export const recordNamespace = 'pvx-system';

const logger = pino({ level: 'silent' });

export class RequestHarness {
  private informers: Informer[] = [];
  private readonly byType = new Map<ResourceType, Informer>();
  private readonly fake: FakeKubeClient;

  constructor(fake: FakeKubeClient) {
    this.fake = fake;
  }

  /** A reconciler whose caches have synced; deps override the defaults (always the leader, the real clock). */
  async reconciler(deps: Partial<RequestReconcilerDeps> = {}): Promise<ExpansionRequestReconciler> {
    const r = new ExpansionRequestReconciler({
      records: this.records(),
      recordNamespace,
      client: this.fake,
      requests: this.informer<VolumeExpansionRequest>(volumeExpansionRequests),
      pvcs: this.informer<V1PersistentVolumeClaim>(resources.persistentVolumeClaims),
      storageClasses: this.informer<V1StorageClass>(resources.storageClasses),
      volumeAttributesClasses: this.informer<V1VolumeAttributesClass>(resources.volumeAttributesClasses),
      pods: this.informer<V1Pod>(resources.pods),
      quotas: this.informer<V1ResourceQuota>(resources.resourceQuotas),
      statefulSets: this.informer<V1StatefulSet>(resources.statefulSets),
      logger,
      canWrite: () => true,
      ...deps,
    });
    await Promise.all(this.informers.map((i) => i.waitForSync()));
    return r;
  }

  /** The record keeper over the same caches (a reconciler's first), with its caches synced; deps override the defaults. */
  async keeper(deps: Partial<RecordKeeperDeps> = {}): Promise<StatefulSetRecordKeeper> {
    const k = new StatefulSetRecordKeeper({
      client: this.fake,
      records: this.records(),
      statefulSets: this.cached<V1StatefulSet>(resources.statefulSets),
      requests: this.cached<VolumeExpansionRequest>(volumeExpansionRequests),
      namespaces: this.cached<V1Namespace>(namespaces),
      logger,
      canWrite: () => true,
      ...deps,
    });
    await Promise.all(this.informers.map((i) => i.waitForSync()));
    return k;
  }

  /** The records' cache: ConfigMaps of pvx's namespace with the record label. */
  records(): Informer<V1ConfigMap> {
    const existing = this.byType.get(resources.statefulSetRecords);
    if (existing) return existing as unknown as Informer<V1ConfigMap>;
    const i = new Informer<V1ConfigMap>({
      type: resources.statefulSetRecords,
      client: this.fake,
      logger,
      namespace: recordNamespace,
      labelSelector: `${recordLabel}=true`,
    });
    this.informers.push(i as unknown as Informer);
    this.byType.set(resources.statefulSetRecords, i as unknown as Informer);
    i.start();
    return i;
  }

  /** The cache of a kind, the one made already if there is one. */
  private cached<T extends KubernetesObject>(type: ResourceType): Informer<T> {
    return (this.byType.get(type) as unknown as Informer<T> | undefined) ?? this.informer<T>(type);
  }

  /** Stops the caches' watches (keeping their contents): later writes reach the API, not the caches — as after a restart, or a lagging watch. */
  async stopCaches(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
    this.informers = [];
    this.byType.clear();
  }

  /** Stops one cache's watch (keeping its contents): that cache lags behind the others. */
  async stopCache(type: ResourceType): Promise<void> {
    const i = this.byType.get(type);
    if (!i) throw new Error(`no cache of ${type.resource}`);
    await i.stop();
    this.informers = this.informers.filter((x) => x !== i);
    this.byType.delete(type);
  }

  /** One more cache over the fake (a dep the default reconciler does not have), started with the others. */
  cache<T extends KubernetesObject>(type: ResourceType): Informer<T> {
    return this.informer<T>(type);
  }

  private informer<T extends KubernetesObject>(type: ResourceType): Informer<T> {
    const i = new Informer<T>({ type, client: this.fake, logger });
    this.informers.push(i as unknown as Informer);
    this.byType.set(type, i as unknown as Informer);
    i.start();
    return i;
  }
}

/** Lets the informers see the fake's latest writes. */
export const settle = (): Promise<unknown> => new Promise((r) => setTimeout(r, 5));

/**
 * The process dies right after its next claim patch reached the API server: nothing it would have
 * done next (a status write, an Event, what it held in memory) happens.
 */
export function crashAfterNextPatch(fake: FakeKubeClient): void {
  const patch = fake.patchPvcSize.bind(fake);
  fake.patchPvcSize = async (...args) => {
    fake.patchPvcSize = patch;
    await patch(...args);
    throw new Error('process killed here');
  };
}
