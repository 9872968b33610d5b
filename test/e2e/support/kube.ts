// Small helpers over @kubernetes/client-node for e2e tests: namespaces, PVCs, pods, waiting.
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  Exec,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  StorageV1Api,
  Watch,
  setHeaderOptions,
  type KubernetesObject,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
  type V1Pod,
} from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { e2eEnv } from './env.ts';

export function kubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(e2eEnv.kubeconfig);
  return kc;
}

export const kc = kubeConfig();
export const core = kc.makeApiClient(CoreV1Api);
export const storage = kc.makeApiClient(StorageV1Api);

/** Creates the object, or replaces the one of its name (kubectl apply, without the merge). */
export async function applyObject(obj: KubernetesObject): Promise<void> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const existing = await api.read(obj as KubernetesObject & { metadata: { name: string } }).catch(() => undefined);
  if (existing) await api.replace({ ...obj, metadata: { ...obj.metadata, resourceVersion: existing.metadata?.resourceVersion } });
  else await api.create(obj);
}

export async function createNamespace(prefix: string): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name, labels: { 'pvx.dev/e2e': 'true' } } } });
  // Pods need the namespace's default ServiceAccount, which a controller creates shortly after.
  await waitFor(`ServiceAccount default in ${name}`, 30_000, async () => {
    await core.readNamespacedServiceAccount({ name: 'default', namespace: name });
    return true;
  });
  return name;
}

/** The finalizer tests put on a StatefulSet to hold its deletion (as another controller would). */
export const e2eHoldFinalizer = 'e2e.pvx.dev/hold';

/** Deletes a test's namespace; StatefulSets a failed test left held by e2eHoldFinalizer are let go first, or it would never go. */
export async function deleteNamespace(name: string): Promise<void> {
  const apps = kc.makeApiClient(AppsV1Api);
  const held = (await apps.listNamespacedStatefulSet({ namespace: name }).catch(() => undefined))?.items ?? [];
  for (const sts of held.filter((s) => s.metadata?.finalizers?.includes(e2eHoldFinalizer))) {
    const finalizers = (sts.metadata?.finalizers ?? []).filter((f) => f !== e2eHoldFinalizer);
    await apps
      .patchNamespacedStatefulSet(
        { namespace: name, name: sts.metadata?.name as string, body: { metadata: { finalizers } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )
      .catch(() => undefined);
  }
  await core.deleteNamespace({ name }).catch(() => undefined);
}

export function pvcManifest(name: string, storageClassName: string, size: string): V1PersistentVolumeClaim {
  return {
    metadata: { name },
    spec: { accessModes: ['ReadWriteOnce'], storageClassName, resources: { requests: { storage: size } } },
  };
}

/** A hostNetwork busybox pod (no traffic to pod IPs) mounting a PVC at /data. */
export function podManifest(name: string, claimName: string, script = 'sleep 3600'): V1Pod {
  return {
    metadata: { name },
    spec: {
      hostNetwork: true,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      restartPolicy: 'Never',
      containers: [
        {
          name: 'main',
          image: e2eEnv.image,
          imagePullPolicy: e2eEnv.imagePullPolicy,
          command: ['sh', '-c', script],
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }],
    },
  };
}

export async function createPVC(namespace: string, name: string, storageClassName: string, size: string) {
  return core.createNamespacedPersistentVolumeClaim({ namespace, body: pvcManifest(name, storageClassName, size) });
}

export async function createPod(namespace: string, name: string, claimName: string, script?: string) {
  return core.createNamespacedPod({ namespace, body: podManifest(name, claimName, script) });
}

export async function readPVC(namespace: string, name: string): Promise<V1PersistentVolumeClaim> {
  return core.readNamespacedPersistentVolumeClaim({ namespace, name });
}

export async function waitForPodRunning(namespace: string, name: string, timeoutMs = 120_000): Promise<V1Pod> {
  let pod: V1Pod | undefined;
  await waitFor(`pod ${namespace}/${name} Running`, timeoutMs, async () => {
    pod = await core.readNamespacedPod({ namespace, name });
    if (pod.status?.phase === 'Failed') throw new Error(`pod ${name} failed: ${JSON.stringify(pod.status)}`);
    return pod.status?.phase === 'Running';
  });
  return pod as V1Pod;
}

export async function deletePod(namespace: string, name: string): Promise<void> {
  await core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: 0 }).catch(() => undefined);
  await waitFor(`pod ${namespace}/${name} gone`, 60_000, async () => {
    try {
      await core.readNamespacedPod({ namespace, name });
      return false;
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return true;
      throw err;
    }
  });
}

/**
 * Waits until the PVC is Bound. Classes with WaitForFirstConsumer binding bind only once a pod
 * uses the claim: a short-lived pod is run for that and removed again.
 */
export async function bindPVC(namespace: string, name: string): Promise<V1PersistentVolumeClaim> {
  const pvc = await readPVC(namespace, name);
  const sc = await storage.readStorageClass({ name: pvc.spec?.storageClassName ?? '' });
  if (sc.volumeBindingMode === 'WaitForFirstConsumer') {
    const binder = `bind-${name}`.slice(0, 60);
    await createPod(namespace, binder, name);
    await waitForPodRunning(namespace, binder);
    await deletePod(namespace, binder);
  }
  let bound: V1PersistentVolumeClaim | undefined;
  await waitFor(`PVC ${namespace}/${name} Bound`, 120_000, async () => {
    bound = await readPVC(namespace, name);
    return bound.status?.phase === 'Bound';
  });
  return bound as V1PersistentVolumeClaim;
}

export async function patchPVCSize(namespace: string, name: string, size: string): Promise<V1PersistentVolumeClaim> {
  return core.patchNamespacedPersistentVolumeClaim(
    { namespace, name, body: { spec: { resources: { requests: { storage: size } } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

export async function readPV(name: string): Promise<V1PersistentVolume> {
  return core.readPersistentVolume({ name });
}

export async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean>, intervalMs = 500): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await check()) return;
      lastError = undefined;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const detail = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`);
    }
    await sleep(intervalMs);
  }
}

export interface Observed<T> {
  seq: number;
  at: number;
  type: string;
  object: T;
}

/**
 * Records every watch event of the objects a field selector picks, so tests can check the order
 * in which other actors (controller-manager, external-resizer, kubelet) changed them. Events from
 * several recorders share one sequence counter.
 */
export class WatchRecorder<T> {
  readonly events: Observed<T>[] = [];
  private abort: AbortController | undefined;
  private static seq = 0;
  private readonly path: string;
  private readonly fieldSelector: string;

  constructor(path: string, fieldSelector: string) {
    this.path = path;
    this.fieldSelector = fieldSelector;
  }

  private stopped = false;
  private lastResourceVersion: string | undefined;

  /**
   * Watches from resourceVersion and keeps watching: a stream that ends (client-node cuts one that
   * is silent for 30 s; a component restart cuts any) resumes from the last version seen, so no
   * event between two streams is lost.
   */
  async start(resourceVersion?: string): Promise<void> {
    this.lastResourceVersion = resourceVersion ?? this.lastResourceVersion;
    const params: Record<string, string> = { fieldSelector: this.fieldSelector };
    if (this.lastResourceVersion) params.resourceVersion = this.lastResourceVersion;
    this.abort = await new Watch(kc).watch(
      this.path,
      params,
      (type, object: T & { metadata?: { resourceVersion?: string } }) => {
        if (object?.metadata?.resourceVersion) this.lastResourceVersion = object.metadata.resourceVersion;
        if (type !== 'BOOKMARK' && type !== 'ERROR') this.events.push({ seq: ++WatchRecorder.seq, at: Date.now(), type, object });
      },
      () => setTimeout(() => this.resume(), 200),
    );
  }

  private resume(): void {
    if (this.stopped) return;
    this.start().catch(() => setTimeout(() => this.resume(), 1000));
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }

  /** First recorded event whose object satisfies the predicate. */
  first(predicate: (o: T) => boolean): Observed<T> | undefined {
    return this.events.find((e) => predicate(e.object));
  }

  async waitFor(what: string, predicate: (o: T) => boolean, timeoutMs = 120_000): Promise<Observed<T>> {
    let found: Observed<T> | undefined;
    await waitFor(
      what,
      timeoutMs,
      async () => {
        found = this.first(predicate);
        return found !== undefined;
      },
      100,
    );
    return found as Observed<T>;
  }
}

/** The kubelet's stats summary for a node, through the API server's node proxy. */
export async function statsSummary(nodeName: string): Promise<StatsSummary> {
  const raw: unknown = await core.connectGetNodeProxyWithPath({ name: nodeName, path: 'stats/summary' });
  return (typeof raw === 'string' ? JSON.parse(raw) : raw) as StatsSummary;
}

export interface VolumeStats {
  name: string;
  pvcRef?: { name: string; namespace: string };
  capacityBytes?: number;
  usedBytes?: number;
  availableBytes?: number;
  inodes?: number;
  inodesUsed?: number;
  time?: string;
}

export interface StatsSummary {
  pods?: { podRef: { name: string; namespace: string }; volume?: VolumeStats[] }[];
}

/** Runs a command in the pod's container (podManifest's "main") to its end; rejects unless it succeeds. */
export async function execInPod(namespace: string, pod: string, command: string[]): Promise<void> {
  const sink = () => new Writable({ write: (_c, _e, cb) => cb() });
  await new Promise<void>((resolve, reject) => {
    new Exec(kc)
      .exec(namespace, pod, 'main', command, sink(), sink(), null, false, (s) =>
        s.status === 'Success' ? resolve() : reject(new Error(`${command.join(' ')}: ${JSON.stringify(s)}`)),
      )
      .catch(reject);
  });
}

/**
 * Labels namespace `namespace` with `label`=`name` and creates ClusterVolumeExpansionPolicy `name`
 * with these guardrails over the namespaces of that label: a test's guardrail, selecting its own
 * namespace alone.
 */
export async function guardNamespace(namespace: string, label: string, name: string, guardrails: Record<string, unknown>): Promise<void> {
  await core.patchNamespace({ name: namespace, body: { metadata: { labels: { [label]: name } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  await KubernetesObjectApi.makeApiClient(kc).create({
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'ClusterVolumeExpansionPolicy',
    metadata: { name },
    spec: { namespaceSelector: { matchLabels: { [label]: name } }, guardrails },
  } as KubernetesObject);
}

/** A claim of this class made and bound (with a running pod of its name mounting it, if `mount`): its PersistentVolume. */
export async function provisionedVolume(namespace: string, claim: string, storageClass: string, size: string, mount = true): Promise<V1PersistentVolume> {
  await createPVC(namespace, claim, storageClass, size);
  const bound = await bindPVC(namespace, claim);
  if (mount) {
    await createPod(namespace, claim, claim);
    await waitForPodRunning(namespace, claim);
  }
  return readPV(bound.spec?.volumeName as string);
}
