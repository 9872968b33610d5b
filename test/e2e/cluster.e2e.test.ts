// Proves the cluster, not pvx: the PVC expansion chain that pvx orchestrates behaves on it as
// Kubernetes documents, with a real API server, controller-manager, external-resizer, kubelet and
// CSI driver. Runs on the embedded cluster, or on any cluster given by KUBECONFIG (see support/env.ts).
import { ApiException, Exec, type CoreV1Event, type V1PersistentVolume, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2eEnv } from './support/env.ts';
import {
  WatchRecorder,
  bindPVC,
  core,
  createNamespace,
  createPod,
  createPVC,
  deleteNamespace,
  kc,
  patchPVCSize,
  readPVC,
  statsSummary,
  waitFor,
  waitForPodRunning,
  type VolumeStats,
} from './support/kube.ts';

const GiB = 1024 ** 3;

const allocatedStatus = (pvc: V1PersistentVolumeClaim) => pvc.status?.allocatedResourceStatuses?.storage;
const hasCondition = (pvc: V1PersistentVolumeClaim, type: string) => pvc.status?.conditions?.some((c) => c.type === type) ?? false;
const capacity = (pvc: V1PersistentVolumeClaim) => pvc.status?.capacity?.storage;

let ns: string;

beforeAll(async () => {
  ns = await createNamespace('pvx-e2e-cluster');
});

afterAll(async () => {
  if (ns) await deleteNamespace(ns);
});

describe.skipIf(!e2eEnv.expandableClass)('expansion with a pod mounting the volume', () => {
  // Step 2 of the chain: for CSI volumes, kube-controller-manager's expand controller hands the
  // PVC to the external resizer with an ExternalExpanding Event. (Kubernetes 1.34 sets the
  // volume.kubernetes.io/storage-resizer annotation only for CSI-migrated in-tree volumes.) The
  // resizer does not wait for that Event — both react to the same spec change — so the Event is
  // required but not ordered; every later step depends on the one before and is ordered.
  it('goes ExternalExpanding → ControllerResizeInProgress → PV capacity → NodeResizePending/FileSystemResizePending → capacity, in order', async () => {
    const sc = e2eEnv.expandableClass as string;
    await createPVC(ns, 'grow', sc, '1Gi');
    const bound = await bindPVC(ns, 'grow');
    await createPod(ns, 'grow', 'grow');
    await waitForPodRunning(ns, 'grow');

    const pvName = bound.spec?.volumeName as string;
    const pvcEvents = new WatchRecorder<V1PersistentVolumeClaim>(`/api/v1/namespaces/${ns}/persistentvolumeclaims`, 'metadata.name=grow');
    const pvEvents = new WatchRecorder<V1PersistentVolume>('/api/v1/persistentvolumes', `metadata.name=${pvName}`);
    const kubeEvents = new WatchRecorder<CoreV1Event>(`/api/v1/namespaces/${ns}/events`, 'involvedObject.kind=PersistentVolumeClaim,involvedObject.name=grow');
    const current = await readPVC(ns, 'grow');
    await pvcEvents.start(current.metadata?.resourceVersion);
    await pvEvents.start((await core.readPersistentVolume({ name: pvName })).metadata?.resourceVersion);
    await kubeEvents.start();
    try {
      const started = Date.now();
      await patchPVCSize(ns, 'grow', '2Gi');

      const done = await pvcEvents.waitFor('capacity 2Gi', (p) => capacity(p) === '2Gi', 180_000);
      const handedOver = kubeEvents.first((e) => e.reason === 'ExternalExpanding' && e.source?.component === 'volume_expand');
      const controllerInProgress = pvcEvents.first(
        (p) => p.status?.allocatedResources?.storage === '2Gi' && allocatedStatus(p) === 'ControllerResizeInProgress',
      );
      const pvGrown = pvEvents.first((pv) => pv.spec?.capacity?.storage === '2Gi');
      const nodePending = pvcEvents.first((p) => allocatedStatus(p) === 'NodeResizePending' && hasCondition(p, 'FileSystemResizePending'));

      expect(handedOver, 'ExternalExpanding event from the expand controller').toBeDefined();
      expect(controllerInProgress, 'allocatedResources 2Gi with ControllerResizeInProgress').toBeDefined();
      expect(pvGrown, 'PV capacity 2Gi').toBeDefined();
      expect(nodePending, 'NodeResizePending with FileSystemResizePending').toBeDefined();
      // PVC and PV arrive on two watch streams; their resourceVersions (etcd revisions, one
      // sequence for the whole cluster) order them exactly.
      const order = [controllerInProgress, pvGrown, nodePending, done].map((e) => Number(e?.object.metadata?.resourceVersion));
      expect(order).toEqual([...order].sort((a, b) => a - b));

      expect(handedOver?.object.message).toMatch(/waiting for an external controller to expand this PVC/);
      const final = done.object;
      expect(allocatedStatus(final)).toBeUndefined();
      expect(hasCondition(final, 'FileSystemResizePending')).toBe(false);
      expect(hasCondition(final, 'Resizing')).toBe(false);

      const ms = (e: { at: number } | undefined) => (e ? `${e.at - started} ms` : '-');
      console.log(
        `1Gi→2Gi on ${sc}: handed to the resizer ${ms(handedOver)}, controller ${ms(controllerInProgress)}, PV ${ms(pvGrown)}, ` +
          `node pending ${ms(nodePending)}, completed ${ms(done)} after the patch`,
      );
    } finally {
      pvcEvents.stop();
      pvEvents.stop();
      kubeEvents.stop();
    }
  });
});

describe.skipIf(!e2eEnv.fixedClass)('a class without allowVolumeExpansion', () => {
  it('has the size increase refused by the API server with 403 and the admission message', async () => {
    await createPVC(ns, 'fixed', e2eEnv.fixedClass as string, '1Gi');
    await bindPVC(ns, 'fixed');
    const err = await patchPVCSize(ns, 'fixed', '2Gi').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiException);
    const apiErr = err as ApiException<string>;
    expect(apiErr.code).toBe(403);
    expect(String(apiErr.body)).toMatch(/only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize/);
    expect((await readPVC(ns, 'fixed')).spec?.resources?.requests?.storage).toBe('1Gi');
  });
});

describe.skipIf(!e2eEnv.cappedClass)('an expansion beyond the driver limit', () => {
  it('ends in ControllerResizeInfeasible and leaves capacity unchanged', async () => {
    await createPVC(ns, 'capped', e2eEnv.cappedClass as string, '1Gi');
    await bindPVC(ns, 'capped');
    await patchPVCSize(ns, 'capped', e2eEnv.cappedTooLarge as string);
    let pvc: V1PersistentVolumeClaim | undefined;
    await waitFor('ControllerResizeInfeasible', 120_000, async () => {
      pvc = await readPVC(ns, 'capped');
      return allocatedStatus(pvc) === 'ControllerResizeInfeasible';
    });
    expect(capacity(pvc as V1PersistentVolumeClaim)).toBe('1Gi');
    const condition = pvc?.status?.conditions?.find((c) => c.type === 'ControllerResizeError');
    expect(condition?.message ?? '').toMatch(/exceeds|OutOfRange|maximum/i);
  });
});

describe.skipIf(!e2eEnv.expandableClass)('an expansion with no pod mounting the volume', () => {
  it('stays NodeResizePending until a pod starts, then completes', async () => {
    await createPVC(ns, 'idle', e2eEnv.expandableClass as string, '1Gi');
    await bindPVC(ns, 'idle');
    await patchPVCSize(ns, 'idle', '2Gi');
    await waitFor('NodeResizePending', 120_000, async () => allocatedStatus(await readPVC(ns, 'idle')) === 'NodeResizePending');

    // Longer than the kubelet's pod sync period (3 s on the embedded cluster): nothing can finish
    // the resize while no pod mounts the volume.
    await sleep(15_000);
    const waiting = await readPVC(ns, 'idle');
    expect(allocatedStatus(waiting)).toBe('NodeResizePending');
    expect(capacity(waiting)).toBe('1Gi');
    expect(hasCondition(waiting, 'FileSystemResizePending')).toBe(true);

    await createPod(ns, 'idle', 'idle');
    await waitForPodRunning(ns, 'idle');
    let done: V1PersistentVolumeClaim | undefined;
    await waitFor('capacity 2Gi after the pod started', 120_000, async () => {
      done = await readPVC(ns, 'idle');
      return capacity(done) === '2Gi';
    });
    expect(allocatedStatus(done as V1PersistentVolumeClaim)).toBeUndefined();
    expect(hasCondition(done as V1PersistentVolumeClaim, 'FileSystemResizePending')).toBe(false);
  });
});

describe.skipIf(!e2eEnv.usageClass)('volume usage from the kubelet', () => {
  it('reports the volume’s own capacity and used bytes, which grow when the pod writes', async () => {
    await createPVC(ns, 'usage', e2eEnv.usageClass as string, '1Gi');
    await bindPVC(ns, 'usage');
    // The pod writes 200 MiB once /data/go appears; until then the volume holds only its filesystem.
    await createPod(
      ns,
      'usage',
      'usage',
      'until [ -e /data/go ]; do sleep 1; done; dd if=/dev/zero of=/data/fill bs=1M count=200 && sync && touch /data/written; sleep 3600',
    );
    const pod = await waitForPodRunning(ns, 'usage');
    const node = pod.spec?.nodeName as string;

    const volumeStats = async (): Promise<VolumeStats | undefined> => {
      const summary = await statsSummary(node);
      const podStats = summary.pods?.find((p) => p.podRef.namespace === ns && p.podRef.name === 'usage');
      return podStats?.volume?.find((v) => v.pvcRef?.name === 'usage');
    };
    let before: VolumeStats | undefined;
    await waitFor(
      'first volume stats',
      120_000,
      async () => {
        before = await volumeStats();
        return before?.usedBytes !== undefined;
      },
      2000,
    );
    const b = before as VolumeStats;
    // The volume's own filesystem: about the claim's size, not the node's disk.
    expect(b.capacityBytes).toBeGreaterThan(0.9 * GiB);
    expect(b.capacityBytes).toBeLessThanOrEqual(1.0 * GiB);
    expect(b.usedBytes).toBeLessThan(100 * 1024 ** 2);

    await execTouch(ns, 'usage', '/data/go');
    let after: VolumeStats | undefined;
    await waitFor(
      'used bytes to grow by the 200 MiB written',
      120_000,
      async () => {
        after = await volumeStats();
        return (after?.usedBytes ?? 0) >= (b.usedBytes ?? 0) + 190 * 1024 ** 2;
      },
      2000,
    );
    expect(after?.capacityBytes).toBe(b.capacityBytes);
    console.log(`usage on ${e2eEnv.usageClass}: used ${b.usedBytes} → ${after?.usedBytes} bytes of ${b.capacityBytes}`);
  });
});

/** Creates a file in a pod's volume through the API server's exec endpoint. */
async function execTouch(namespace: string, pod: string, path: string): Promise<void> {
  const sink = () => new Writable({ write: (_c, _e, cb) => cb() });
  await new Promise<void>((resolve, reject) => {
    new Exec(kc)
      .exec(namespace, pod, 'main', ['touch', path], sink(), sink(), null, false, (status) => {
        if (status.status === 'Success') resolve();
        else reject(new Error(`exec touch ${path}: ${JSON.stringify(status)}`));
      })
      .catch(reject);
  });
}
