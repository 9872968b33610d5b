// Offline node expansion (spec.offlineNodeExpansion: EvictPod) on the real cluster: a class of the
// test driver whose filesystems grow only when a volume is mounted anew (NodeExpandVolume answers
// FailedPrecondition on a volume in use, and the real kubelet records NodeResizeError and waits for
// a remount). pvx, as its ServiceAccount with the opt-in role of config/components/offline-expansion,
// evicts the pod through the Eviction API: a PodDisruptionBudget first refuses (429, waited out),
// then allows; the StatefulSet creates the pod again and the kubelet finishes the expansion. Without
// the opt-in the request and `pvx why` name the pod to restart, and nothing is evicted. Each run
// prints what it cost (the API server's audit log) and how long eviction → completion took.
import { AppsV1Api, BatchV1Api, PatchStrategy, PolicyV1Api, setHeaderOptions, type V1Pod, type V1StatefulSet } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csiDriverName } from '../cluster/layout.ts';
import { apiserverAudits, auditLogEnd, readAuditEvents, writesBy } from './support/audit-log.ts';
import { runPvx } from './support/cli.ts';
import { e2eEnv } from './support/env.ts';
import { grantOptIn, pvxNamespace, serviceAccountKubeconfig } from './support/identity.ts';
import { core, createNamespace, deleteNamespace, kc, readPVC, storage, waitFor } from './support/kube.ts';
import { startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';
import { requestsIn, type Requests } from './support/requests.ts';

const apps = kc.makeApiClient(AppsV1Api);
const policy = kc.makeApiClient(PolicyV1Api);
const batch = kc.makeApiClient(BatchV1Api);
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const pvxUser = `system:serviceaccount:${pvxNamespace}:pvx`;
const leaseId = 'pvx-e2e-offline';
let ns = '';
let offlineClass = '';
/** A class whose volumes the controller grows only while no pod mounts them (as Azure Disk past 4 TiB, vCenter before 7.0U2). */
let detachedClass = '';
let requests: Requests;
let pvx: PvxProcess | undefined;
let revoke: (() => Promise<void>) | undefined;

function statefulSet(name: string, storageClassName = offlineClass): V1StatefulSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name },
    spec: {
      replicas: 1,
      serviceName: name,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          hostNetwork: true,
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 1,
          containers: [
            {
              name: 'main',
              image: e2eEnv.image,
              imagePullPolicy: e2eEnv.imagePullPolicy,
              command: ['sh', '-c', 'sleep 3600'],
              volumeMounts: [{ name: 'data', mountPath: '/data' }],
            },
          ],
        },
      },
      volumeClaimTemplates: [
        { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName, resources: { requests: { storage: '1Gi' } } } },
      ],
    },
  };
}

async function readyPod(name: string, timeoutMs = 180_000): Promise<V1Pod> {
  let pod: V1Pod | undefined;
  await waitFor(
    `pod ${name}-0 Running and Ready`,
    timeoutMs,
    async () => {
      pod = await core.readNamespacedPod({ namespace: ns, name: `${name}-0` }).catch(() => undefined);
      return (
        pod?.status?.phase === 'Running' &&
        !pod.metadata?.deletionTimestamp &&
        (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
      );
    },
    1000,
  );
  return pod as V1Pod;
}

async function pdbAllows(name: string, allowed: number): Promise<void> {
  await waitFor(
    `PodDisruptionBudget ${name} to allow ${allowed}`,
    120_000,
    async () => (await policy.readNamespacedPodDisruptionBudget({ namespace: ns, name })).status?.disruptionsAllowed === allowed,
    1000,
  );
}

/** A class of the test driver (directory volumes) with these parameters; its name. */
async function testDriverClass(name: string, parameters: Record<string, string>): Promise<string> {
  await storage.createStorageClass({
    body: {
      metadata: { name },
      provisioner: csiDriverName,
      parameters: { backing: 'dir', ...parameters },
      allowVolumeExpansion: true,
      reclaimPolicy: 'Delete',
      volumeBindingMode: 'Immediate',
    },
  });
  return name;
}

beforeAll(async () => {
  ns = await createNamespace('pvx-e2e-offline');
  requests = requestsIn(ns);
  offlineClass = await testDriverClass(`${ns}-offline`, { nodeExpansion: 'offline' });
  detachedClass = await testDriverClass(`${ns}-detached`, { controllerExpansion: 'offline' });
  revoke = await grantOptIn('offline-expansion', 'e2e');
  pvx = startPvx(
    'offline',
    ['--leader-election-namespace', pvxNamespace, '--leader-election-id', leaseId, '--namespace', ns, '--usage-source', 'none'],
    await serviceAccountKubeconfig(),
    { metrics: 'plain' },
  );
  await waitReady(pvx, 90_000);
  await waitFor('pvx to lead', 90_000, async () => (await pvx?.metric('leader_election_master_status', { name: leaseId })) === 1, 1000);
}, 180_000);

afterAll(async () => {
  if (pvx) await stopPvx(pvx);
  await revoke?.();
  if (ns) await deleteNamespace(ns);
  for (const name of [offlineClass, detachedClass]) if (name) await storage.deleteStorageClass({ name }).catch(() => undefined);
}, 120_000);

describe.skipIf(!e2eEnv.embedded)('a driver that grows filesystems only offline', () => {
  it('evicts the pod once its PodDisruptionBudget allows it (a 429 first), once, and the claim completes with the next pod', async () => {
    await apps.createNamespacedStatefulSet({ namespace: ns, body: statefulSet('app') });
    const first = await readyPod('app');
    await policy.createNamespacedPodDisruptionBudget({
      namespace: ns,
      body: { metadata: { name: 'app' }, spec: { minAvailable: 1, selector: { matchLabels: { app: 'app' } } } },
    });
    await pdbAllows('app', 0);
    const auditFrom = auditLogEnd();

    await requests.create('grow-app', { target: { pvcName: 'data-app-0' }, size: '2Gi', offlineNodeExpansion: 'EvictPod' });
    // The real kubelet refuses in use, pvx asks, the budget refuses.
    await waitFor(
      'the eviction refused by the PodDisruptionBudget',
      300_000,
      async () => (await requests.read('grow-app')).status?.eviction?.phase === 'Blocked',
      1000,
    );
    const blocked = await requests.read('grow-app');
    expect(blocked.status).toMatchObject({
      phase: 'NodeExpansionPending',
      reason: 'PodRestartRequired',
      eviction: { podName: 'app-0', podUID: first.metadata?.uid, reason: 'DisruptionBudget' },
    });
    expect(blocked.status?.eviction?.message).toMatch(/The disruption budget app needs 1 healthy pods and has 1 currently/);
    const claim = await readPVC(ns, 'data-app-0');
    expect(claim.status?.conditions?.find((c) => c.type === 'NodeResizeError')?.message).toMatch(/code = FailedPrecondition/);
    expect((await core.readNamespacedPod({ namespace: ns, name: 'app-0' })).metadata?.uid).toBe(first.metadata?.uid);

    await policy.patchNamespacedPodDisruptionBudget({ namespace: ns, name: 'app', body: { spec: { minAvailable: 0 } } }, merge);
    const { request } = await requests.follow('grow-app', ['Completed', 'Failed', 'Rejected'], 300_000);
    expect(request.status, JSON.stringify(request.status, null, 1)).toMatchObject({
      phase: 'Completed',
      capacity: '2Gi',
      eviction: { phase: 'Evicted', podUID: first.metadata?.uid },
    });
    const second = await readyPod('app');
    expect(second.metadata?.uid).not.toBe(first.metadata?.uid);
    expect((await readPVC(ns, 'data-app-0')).status?.capacity?.storage).toBe('2Gi');

    const { evictedAt, completedAt } = request.status?.timeline ?? {};
    console.log(
      `e2e measure: eviction → expansion complete: ${new Date(completedAt as string).getTime() - new Date(evictedAt as string).getTime()} ms; request created → complete: ${new Date(completedAt as string).getTime() - new Date(request.metadata.creationTimestamp as unknown as string).getTime()} ms`,
    );
    if (apiserverAudits()) {
      const events = readAuditEvents(auditFrom);
      const writes = writesBy(events, pvxUser);
      console.log(
        `e2e measure: pvx API writes for the offline expansion (one claim, a refused eviction, one eviction):\n${[...writes].map(([k, n]) => `  ${n}× ${k}`).join('\n')}`,
      );
      const evictions = events.filter((e) => e.user.username === pvxUser && e.objectRef?.subresource === 'eviction');
      // Refusals as many as the budget held it back (one per 20 s), then exactly one that went through.
      expect(evictions.filter((e) => (e.responseStatus?.code ?? 0) < 300)).toHaveLength(1);
      expect(evictions.filter((e) => e.responseStatus?.code === 429).length).toBeGreaterThanOrEqual(1);
    }
  }, 600_000);

  it('without the opt-in: the request and pvx why name the pod to restart, and nothing is evicted', async () => {
    await apps.createNamespacedStatefulSet({ namespace: ns, body: statefulSet('manual') });
    const pod = await readyPod('manual');
    await requests.create('grow-manual', { target: { pvcName: 'data-manual-0' }, size: '2Gi' });
    await waitFor(
      'the request to say the pod must restart',
      300_000,
      async () => (await requests.read('grow-manual')).status?.reason === 'PodRestartRequired',
      1000,
    );
    const request = await requests.read('grow-manual');
    expect(request.status?.message).toMatch(
      /restart pod manual-0 \(kubectl delete pod manual-0 -n pvx-e2e-offline-[0-9a-f]+: its controller creates it again\)/,
    );
    expect(request.status?.eviction).toBeUndefined();
    const why = await runPvx(['why', 'pvc/data-manual-0', '-n', ns, '--kubeconfig', e2eEnv.kubeconfig, '-o', 'json'], 120_000);
    const report = JSON.parse(why.stdout) as { heldBy?: string; next: string; gates: { gate: string; evidence: string; next?: string }[] };
    expect(report.heldBy).toBe('node-stage');
    expect(report.gates.find((g) => g.gate === 'node-stage')?.evidence).toMatch(/^the kubelet cannot grow the filesystem while pod manual-0 mounts the claim/);
    expect(report.next).toMatch(/^restart pod manual-0 \(kubectl delete pod manual-0/);
    expect((await core.readNamespacedPod({ namespace: ns, name: 'manual-0' })).metadata?.uid).toBe(pod.metadata?.uid);
  }, 600_000);

  // Review, 2026-12-04: a Job's pod (a backup) also mounted the claim; pvx evicted the StatefulSet's
  // pod, the Job kept the volume in use, and the filesystem could not grow.
  it('a claim a Job’s pod also mounts: nothing is evicted and the request names the pod; once the Job is gone, the eviction finishes it', async () => {
    await apps.createNamespacedStatefulSet({ namespace: ns, body: statefulSet('shared') });
    const first = await readyPod('shared');
    const job = await batch.createNamespacedJob({
      namespace: ns,
      body: {
        metadata: { name: 'backup' },
        spec: {
          backoffLimit: 0,
          template: {
            spec: {
              restartPolicy: 'Never',
              hostNetwork: true,
              automountServiceAccountToken: false,
              terminationGracePeriodSeconds: 1,
              containers: [
                {
                  name: 'backup',
                  image: e2eEnv.image,
                  imagePullPolicy: e2eEnv.imagePullPolicy,
                  command: ['sh', '-c', 'sleep 3600'],
                  volumeMounts: [{ name: 'data', mountPath: '/data' }],
                },
              ],
              volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data-shared-0' } }],
            },
          },
        },
      },
    });
    let jobPod: V1Pod | undefined;
    await waitFor(
      'the Job’s pod Running',
      180_000,
      async () => {
        jobPod = (await core.listNamespacedPod({ namespace: ns, labelSelector: `batch.kubernetes.io/job-name=backup` })).items.find(
          (p) => p.status?.phase === 'Running',
        );
        return jobPod !== undefined;
      },
      1000,
    );
    const auditFrom = auditLogEnd();
    await requests.create('grow-shared', { target: { pvcName: 'data-shared-0' }, size: '2Gi', offlineNodeExpansion: 'EvictPod' });
    await waitFor(
      'the request to name the pod that holds the volume',
      300_000,
      async () => (await requests.read('grow-shared')).status?.reason === 'VolumeHeldByOtherPod',
      1000,
    );
    const held = await requests.read('grow-shared');
    expect(held.status?.message).toMatch(
      new RegExp(`pod ${jobPod?.metadata?.name} \\(of Job backup\\) also mounts data-shared-0: evicting pod shared-0 would not grow the filesystem`),
    );
    expect(held.status?.eviction).toBeUndefined();
    expect((await core.readNamespacedPod({ namespace: ns, name: 'shared-0' })).metadata?.uid).toBe(first.metadata?.uid);
    if (apiserverAudits()) {
      const evictions = readAuditEvents(auditFrom).filter((e) => e.user.username === pvxUser && e.objectRef?.subresource === 'eviction');
      expect(evictions, 'no eviction asked while the Job holds the volume').toEqual([]);
    }
    // The Job done with: its pod goes, and the eviction finishes the expansion.
    await batch.deleteNamespacedJob({ namespace: ns, name: job.metadata?.name as string, body: { propagationPolicy: 'Foreground' } });
    const { request } = await requests.follow('grow-shared', ['Completed', 'Failed', 'Rejected'], 300_000);
    expect(request.status, JSON.stringify(request.status, null, 1)).toMatchObject({
      phase: 'Completed',
      capacity: '2Gi',
      eviction: { phase: 'Evicted', podUID: first.metadata?.uid },
    });
  }, 600_000);

  // A driver that grows the volume only detached: the controller answers FailedPrecondition while a
  // pod mounts it, and the resizer waits until no pod uses the claim. An eviction would not finish
  // it (the StatefulSet creates the pod again at once, before the resizer's next retry), so pvx
  // evicts nothing, even asked to, and says to stop the workload.
  it('a volume that grows only detached: pvx evicts nothing and names the pods to stop; scaled to zero and back, the request completes', async () => {
    await apps.createNamespacedStatefulSet({ namespace: ns, body: statefulSet('detached', detachedClass) });
    const pod = await readyPod('detached');
    const auditFrom = auditLogEnd();
    await requests.create('grow-detached', { target: { pvcName: 'data-detached-0' }, size: '2Gi', offlineNodeExpansion: 'EvictPod' });
    await waitFor(
      'the request to say the volume grows only detached',
      300_000,
      async () => (await requests.read('grow-detached')).status?.reason === 'DriverNeedsOfflineVolume',
      1000,
    );
    const waiting = await requests.read('grow-detached');
    expect(waiting.status?.phase).toBe('ControllerExpanding');
    expect(waiting.status?.message).toMatch(/code = FailedPrecondition desc = volume \S+ is in use/);
    expect(waiting.status?.message).toMatch(/scale its workload to zero/);
    expect(waiting.status?.eviction).toBeUndefined();
    const why = await runPvx(['why', 'pvc/data-detached-0', '-n', ns, '--kubeconfig', e2eEnv.kubeconfig, '-o', 'json'], 120_000);
    const report = JSON.parse(why.stdout) as { heldBy?: string; gates: { gate: string; evidence: string; next?: string }[] };
    expect(report.heldBy).toBe('resizer');
    expect(report.gates.find((g) => g.gate === 'resizer')?.next).toMatch(/^stop every pod that mounts the claim .*\(pod detached-0 mounts it\)$/);
    expect((await core.readNamespacedPod({ namespace: ns, name: 'detached-0' })).metadata?.uid).toBe(pod.metadata?.uid);
    if (apiserverAudits()) {
      const evictions = readAuditEvents(auditFrom).filter((e) => e.user.username === pvxUser && e.objectRef?.subresource === 'eviction');
      expect(evictions, 'no eviction for a volume that grows only detached').toEqual([]);
    }

    // The person does what the request says: the resizer grows the detached volume at its next retry.
    await apps.patchNamespacedStatefulSet({ namespace: ns, name: 'detached', body: { spec: { replicas: 0 } } }, merge);
    await waitFor(
      'the volume grown while no pod mounts it',
      420_000,
      async () => (await readPVC(ns, 'data-detached-0')).status?.allocatedResourceStatuses?.storage === 'NodeResizePending',
      2000,
    );
    await apps.patchNamespacedStatefulSet({ namespace: ns, name: 'detached', body: { spec: { replicas: 1 } } }, merge);
    const { request } = await requests.follow('grow-detached', ['Completed', 'Failed', 'Rejected'], 300_000);
    expect(request.status, JSON.stringify(request.status, null, 1)).toMatchObject({ phase: 'Completed', capacity: '2Gi' });
    expect(request.status?.eviction).toBeUndefined();
  }, 900_000);
});
