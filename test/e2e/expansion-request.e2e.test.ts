// VolumeExpansionRequests handled by a running pvx process against a real cluster.
import {
  ApiException,
  AppsV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1ObjectMeta,
  type V1PersistentVolumeClaim,
} from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestSpec, VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import { fieldManager } from '../../src/k8s/resources.ts';
import { apiserverAudits, auditLogEnd, readAuditEvents } from './support/audit-log.ts';
import { e2eEnv } from './support/env.ts';
import {
  bindPVC,
  core,
  createNamespace,
  createPod,
  createPVC,
  deleteNamespace,
  guardNamespace,
  kc,
  readPVC,
  waitFor,
  waitForPodRunning,
} from './support/kube.ts';
import { pvxNamespace, serviceAccountKubeconfig } from './support/identity.ts';
import { startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';

const custom = kc.makeApiClient(CustomObjectsApi);
const crd = { group: 'pvx.dev', version: 'v1alpha1', plural: 'volumeexpansionrequests' };
let ns: string;
let pvx: PvxProcess;

// pvx runs as its ServiceAccount with config/rbac/'s permissions only, leader election on.
beforeAll(async () => {
  ns = await createNamespace('pvx-e2e-ver');
  pvx = startPvx('ver', ['--leader-election-namespace', pvxNamespace, '--leader-election-id', 'pvx-e2e-ver'], await serviceAccountKubeconfig());
  await waitReady(pvx);
  await waitFor('pvx to lead', 30_000, async () => (await pvx.metric('leader_election_master_status', { name: 'pvx-e2e-ver' })) === 1);
});

afterAll(async () => {
  if (pvx) await stopPvx(pvx);
  if (ns) await deleteNamespace(ns);
});

async function createRequest(name: string, spec: RequestSpec): Promise<void> {
  await custom.createNamespacedCustomObject({
    ...crd,
    namespace: ns,
    body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionRequest', metadata: { name }, spec },
  });
}

async function readRequest(name: string): Promise<VolumeExpansionRequest> {
  return (await custom.getNamespacedCustomObject({ ...crd, namespace: ns, name })) as VolumeExpansionRequest;
}

/** Polls the request, recording each phase it shows, until one of the final phases. */
async function followPhases(name: string, until: string[], timeoutMs = 180_000): Promise<{ phases: string[]; request: VolumeExpansionRequest }> {
  const phases: string[] = [];
  let request: VolumeExpansionRequest | undefined;
  await waitFor(
    `request ${name} to reach ${until.join('/')}`,
    timeoutMs,
    async () => {
      request = await readRequest(name);
      const phase = request.status?.phase;
      if (phase && phases[phases.length - 1] !== phase) phases.push(phase);
      return phase !== undefined && until.includes(phase);
    },
    100,
  );
  return { phases, request: request as VolumeExpansionRequest };
}

const expandable = e2eEnv.expandableClass as string;

describe.skipIf(!e2eEnv.expandableClass)('a request for a PVC mounted by a pod', () => {
  it('patches once and follows the chain to Completed, with a timeline and the audit annotations', async () => {
    await createPVC(ns, 'happy', expandable, '1Gi');
    await bindPVC(ns, 'happy');
    await createPod(ns, 'happy', 'happy');
    await waitForPodRunning(ns, 'happy');
    const started = Date.now();
    await createRequest('grow-happy', { target: { pvcName: 'happy' }, size: '2Gi' });
    const { phases, request } = await followPhases('grow-happy', ['Completed', 'Failed', 'Rejected']);
    const tookMs = Date.now() - started;

    expect(request.status?.phase).toBe('Completed');
    expect(phases.indexOf('Completed')).toBe(phases.length - 1);
    expect(request.status).toMatchObject({ pvcName: 'happy', fromCapacity: '1Gi', targetSize: '2Gi', capacity: '2Gi' });
    const t = request.status?.timeline ?? {};
    for (const k of ['acceptedAt', 'patchedAt', 'controllerExpandedAt', 'completedAt'] as const) expect(t[k], k).toBeDefined();
    expect(Date.parse(t.acceptedAt as string)).toBeLessThanOrEqual(Date.parse(t.patchedAt as string));
    expect(Date.parse(t.patchedAt as string)).toBeLessThanOrEqual(Date.parse(t.completedAt as string));
    expect(request.status?.conditions?.find((c) => c.type === 'Complete')?.status).toBe('True');

    const pvc = await readPVC(ns, 'happy');
    expect(pvc.spec?.resources?.requests?.storage).toBe('2Gi');
    expect(pvc.metadata?.annotations?.['pvx.dev/request-uid']).toBe(request.metadata.uid);
    expect(pvc.metadata?.annotations?.['pvx.dev/previous-capacity']).toBe('1Gi');
    // Exactly one write to the claim's size, by pvx's field manager.
    const writers = (pvc.metadata?.managedFields ?? []).filter((f) => JSON.stringify(f.fieldsV1 ?? {}).includes('"f:storage"') && f.operation === 'Update');
    expect(writers.map((w) => w.manager)).toContain('pvx');

    // Patched on the request; the end on the claim, where people look: from what to what, by whom.
    await waitFor('the Patched and Expanded events', 10_000, async () => {
      const onRequest = await core.listNamespacedEvent({
        namespace: ns,
        fieldSelector: 'involvedObject.kind=VolumeExpansionRequest,involvedObject.name=grow-happy',
      });
      const onClaim = await core.listNamespacedEvent({
        namespace: ns,
        fieldSelector: `involvedObject.kind=PersistentVolumeClaim,involvedObject.name=${pvc.metadata?.name},reason=Expanded`,
      });
      return (
        onRequest.items.some((e) => e.reason === 'Patched') &&
        onClaim.items.some((e) => /^1Gi → 2Gi in \S+ by VolumeExpansionRequest grow-happy \[claim patched/.test(e.message ?? ''))
      );
    });
    console.log(`request grow-happy 1Gi→2Gi: phases ${phases.join(' → ')}, ${tookMs} ms from create to Completed`);
  });
});

describe.skipIf(!e2eEnv.expandableClass)('a request for a PVC no pod mounts', () => {
  it('waits in WaitingForPod, telling the user to start one, and completes once a pod runs', async () => {
    await createPVC(ns, 'idle', expandable, '1Gi');
    await bindPVC(ns, 'idle');
    await createRequest('grow-idle', { target: { pvcName: 'idle' }, increment: '100%' });
    const waiting = await followPhases('grow-idle', ['WaitingForPod', 'Completed', 'Failed', 'Rejected']);
    expect(waiting.request.status?.phase).toBe('WaitingForPod');
    expect(waiting.request.status?.message).toMatch(/start a pod/);
    await sleep(3000);
    expect((await readRequest('grow-idle')).status?.phase).toBe('WaitingForPod');

    await createPod(ns, 'idle', 'idle');
    await waitForPodRunning(ns, 'idle');
    const done = await followPhases('grow-idle', ['Completed', 'Failed']);
    expect(done.request.status).toMatchObject({ phase: 'Completed', targetSize: '2Gi', capacity: '2Gi' });
  });
});

describe.skipIf(!e2eEnv.expandableClass)('a PVC deleted while its request runs', () => {
  it('fails the request with PVCDeleted', async () => {
    await createPVC(ns, 'doomed', expandable, '1Gi');
    await bindPVC(ns, 'doomed');
    await createRequest('grow-doomed', { target: { pvcName: 'doomed' }, size: '2Gi' });
    await followPhases('grow-doomed', ['WaitingForPod', 'Failed', 'Completed', 'Rejected']);
    await core.deleteNamespacedPersistentVolumeClaim({ namespace: ns, name: 'doomed' });
    const { request } = await followPhases('grow-doomed', ['Failed', 'Completed', 'Rejected'], 120_000);
    expect(request.status).toMatchObject({ phase: 'Failed', reason: 'PVCDeleted' });
  });
});

/** A claim's metadata without what the API server moves on any write, pvx's or another's. */
function withoutServerFields(metadata: V1ObjectMeta | undefined): V1ObjectMeta {
  const { resourceVersion: _resourceVersion, managedFields: _managedFields, ...rest } = metadata ?? {};
  return rest;
}

/**
 * The claim as it was before `from` (an audit log offset), as far as pvx is concerned: its spec and
 * metadata unchanged, no pvx.dev/ annotation and no field of it pvx's, and no write of it by pvx in
 * the API server's record. Not its resourceVersion: from Kubernetes v1.37 the controller-manager
 * sets the claim's `Unused` condition in status, seconds after it binds and whenever pods come and go.
 */
async function expectUntouchedByPvx(before: V1PersistentVolumeClaim, from: number): Promise<void> {
  const name = before.metadata?.name as string;
  const after = await readPVC(ns, name);
  expect(after.spec).toEqual(before.spec);
  expect(withoutServerFields(after.metadata)).toEqual(withoutServerFields(before.metadata));
  expect(Object.keys(after.metadata?.annotations ?? {}).filter((k) => k.startsWith('pvx.dev/'))).toEqual([]);
  expect((after.metadata?.managedFields ?? []).map((f) => f.manager)).not.toContain(fieldManager);
  if (apiserverAudits()) {
    const byPvx = readAuditEvents(from).filter(
      (e) =>
        e.objectRef?.resource === 'persistentvolumeclaims' &&
        e.objectRef.namespace === ns &&
        e.objectRef.name === name &&
        e.user.username === `system:serviceaccount:${pvxNamespace}:pvx`,
    );
    expect(byPvx.map((e) => `${e.verb} ${e.objectRef?.subresource ?? ''}`)).toEqual([]);
  }
}

describe('requests pvx must refuse, leaving the PVC untouched', () => {
  async function expectRejected(pvcName: string, reqName: string, spec: RequestSpec, reason: string, message: RegExp): Promise<void> {
    const before = await readPVC(ns, pvcName);
    const from = auditLogEnd();
    await createRequest(reqName, spec);
    const { request } = await followPhases(reqName, ['Rejected', 'Completed', 'Failed'], 60_000);
    expect(request.status).toMatchObject({ phase: 'Rejected', reason });
    expect(request.status?.message).toMatch(message);
    await expectUntouchedByPvx(before, from);
    await waitFor(`a Warning event ${reason} on ${reqName}`, 10_000, async () => {
      const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${reqName}` });
      return events.items.some((e) => e.type === 'Warning' && e.reason === reason);
    });
  }

  it.skipIf(!e2eEnv.fixedClass)('rejects a class without allowVolumeExpansion', async () => {
    await createPVC(ns, 'fixed', e2eEnv.fixedClass as string, '1Gi');
    await bindPVC(ns, 'fixed');
    await expectRejected('fixed', 'grow-fixed', { target: { pvcName: 'fixed' }, size: '2Gi' }, 'ExpansionNotAllowed', /allowVolumeExpansion/);
  });

  it.skipIf(!e2eEnv.expandableClass)('rejects shrinking and equal sizes', async () => {
    await createPVC(ns, 'same', expandable, '2Gi');
    await bindPVC(ns, 'same');
    await expectRejected('same', 'shrink', { target: { pvcName: 'same' }, size: '1Gi' }, 'NotLarger', /cannot shrink/);
    await expectRejected('same', 'equal', { target: { pvcName: 'same' }, size: '2Gi' }, 'NotLarger', /not larger/);
  });

  it.skipIf(!e2eEnv.expandableClass)('rejects growth beyond a ResourceQuota without retrying in a loop', async () => {
    await createPVC(ns, 'quota', expandable, '1Gi');
    await bindPVC(ns, 'quota');
    await core.createNamespacedResourceQuota({ namespace: ns, body: { metadata: { name: 'storage' }, spec: { hard: { 'requests.storage': '30Gi' } } } });
    // The quota goes whatever happens here: left behind, it would refuse the later tests' claims in
    // this namespace and turn one failure into several.
    try {
      await waitFor(
        'quota usage to be computed',
        60_000,
        async () => (await core.readNamespacedResourceQuota({ namespace: ns, name: 'storage' })).status?.used?.['requests.storage'] !== undefined,
      );
      await expectRejected(
        'quota',
        'grow-quota',
        { target: { pvcName: 'quota' }, size: '100Gi' },
        'QuotaExceeded',
        /ResourceQuota storage limits requests.storage to 30Gi/,
      );
      // A terminal rejection is not retried. Judged on this request: in the next 5 s pvx neither
      // rewrites its status nor records another Event about it. pvx's reconcile counters are for
      // every request in the cluster (other files' requests, in namespaces still being deleted,
      // reconcile in the same seconds), so they only bound a hot loop, which makes hundreds.
      const settled = await readRequest('grow-quota');
      const reconcilesBefore = await reconciles();
      await sleep(5000);
      expect((await readRequest('grow-quota')).metadata?.resourceVersion).toBe(settled.metadata?.resourceVersion);
      const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.name=grow-quota' });
      expect(events.items.filter((e) => e.reason === 'QuotaExceeded').reduce((n, e) => n + (e.count ?? 1), 0)).toBe(1);
      expect((await reconciles()) - reconcilesBefore).toBeLessThan(20);
    } finally {
      await core.deleteNamespacedResourceQuota({ namespace: ns, name: 'storage' });
    }
  });

  it('rejects a PVC that does not exist', async () => {
    await createRequest('grow-nothing', { target: { pvcName: 'nothing' }, size: '2Gi' });
    const { request } = await followPhases('grow-nothing', ['Rejected'], 60_000);
    expect(request.status).toMatchObject({ phase: 'Rejected', reason: 'PVCNotFound' });
  });

  /** Every reconcile of the request controller, whatever its result. */
  async function reconciles(): Promise<number> {
    return pvx.metricSum('controller_runtime_reconcile_total', { controller: 'expansion-request' });
  }
});

describe('dry run', () => {
  it.skipIf(!e2eEnv.expandableClass)('reports the plan and writes nothing to the PVC', async () => {
    await createPVC(ns, 'dry', expandable, '1Gi');
    const before = await bindPVC(ns, 'dry');
    const from = auditLogEnd();
    await createRequest('grow-dry', { target: { pvcName: 'dry' }, increment: '3Gi', dryRun: true });
    const { request } = await followPhases('grow-dry', ['Completed', 'Rejected', 'Failed'], 60_000);
    expect(request.status).toMatchObject({ phase: 'Completed', reason: 'DryRun', targetSize: '4Gi' });
    expect(before.spec?.resources?.requests?.storage).toBe('1Gi');
    await expectUntouchedByPvx(before, from);
  });
});

describe('admission (CEL rules in the CRD)', () => {
  it.each<[string, Record<string, unknown>, RegExp]>([
    ['both size and increment', { target: { pvcName: 'x' }, size: '2Gi', increment: '1Gi' }, /set at most one of size and increment/],
    ['neither size, increment nor class', { target: { pvcName: 'x' } }, /set a size \(size or increment\), a volumeAttributesClassName, or both/],
    [
      'a class name that is not a DNS subdomain',
      { target: { pvcName: 'x' }, volumeAttributesClassName: 'Fast_Class' },
      /volumeAttributesClassName in body should match/,
    ],
    ['no target', { target: {}, size: '2Gi' }, /exactly one of pvcName and statefulSetName/],
    ['a StatefulSet without its template', { target: { statefulSetName: 'db' }, size: '2Gi' }, /volumeClaimTemplate goes with statefulSetName/],
    ['a size that is not a quantity', { target: { pvcName: 'x' }, size: 'lots' }, /must be a positive quantity/],
    ['a negative increment', { target: { pvcName: 'x' }, increment: '-1Gi' }, /positive quantity .* or a positive percentage/],
    ['a zero percentage', { target: { pvcName: 'x' }, increment: '0%' }, /positive percentage/],
    ['a malformed deadline', { target: { pvcName: 'x' }, size: '2Gi', deadline: 'soon' }, /positive duration/],
    ['an unknown recovery mode', { target: { pvcName: 'x' }, size: '2Gi', recovery: 'Sometimes' }, /Unsupported value/],
  ])('refuses %s with 422 and the rule’s message', async (_name, spec, message) => {
    const err = await custom
      .createNamespacedCustomObject({
        ...crd,
        namespace: ns,
        body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionRequest', metadata: { name: 'bad' }, spec },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(ApiException);
    expect((err as ApiException<string>).code).toBe(422);
    expect(String((err as ApiException<string>).body)).toMatch(message);
  });

  it('refuses changes to the spec of an existing request', async () => {
    await createRequest('immutable', { target: { pvcName: 'nothing-here' }, size: '2Gi', dryRun: true });
    await followPhases('immutable', ['Rejected'], 60_000); // pvx is done writing its status
    const cur = await readRequest('immutable');
    const err = await custom
      .replaceNamespacedCustomObject({ ...crd, namespace: ns, name: 'immutable', body: { ...cur, spec: { ...cur.spec, size: '3Gi' } } })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((err as ApiException<string>).code).toBe(422);
    expect(String((err as ApiException<string>).body)).toMatch(/immutable/);
  });
});

describe.skipIf(!e2eEnv.expandableClass)('two requests for one PVC', () => {
  it('runs them one at a time, the later one from the capacity the first produced', async () => {
    await createPVC(ns, 'shared', expandable, '1Gi');
    await bindPVC(ns, 'shared');
    await createPod(ns, 'shared', 'shared');
    await waitForPodRunning(ns, 'shared');
    await createRequest('shared-a', { target: { pvcName: 'shared' }, size: '2Gi' });
    await createRequest('shared-b', { target: { pvcName: 'shared' }, increment: '1Gi' });
    const b = await followPhases('shared-b', ['Completed', 'Failed', 'Rejected']);
    const a = await readRequest('shared-a');
    expect(a.status).toMatchObject({ phase: 'Completed', fromCapacity: '1Gi', targetSize: '2Gi' });
    expect(b.request.status).toMatchObject({ phase: 'Completed', fromCapacity: '2Gi', targetSize: '3Gi', capacity: '3Gi' });
    expect(Date.parse(b.request.status?.timeline?.patchedAt as string)).toBeGreaterThanOrEqual(Date.parse(a.status?.timeline?.completedAt as string));
    expect(b.phases[0]).toBe('Pending'); // it waited its turn
  });
});

describe.skipIf(!e2eEnv.expandableClass)('pvx killed with SIGKILL while a request runs', () => {
  // A second pvx process, under the admin identity, killed and restarted at several points.
  it.each([
    ['just after the request is created', 0],
    ['a moment later', 150],
    ['while it waits for a pod', -1],
  ])('%s: the restarted pvx completes it with exactly one patch of the claim', async (_when, delayMs) => {
    const claim = `crash-${delayMs < 0 ? 'wait' : delayMs}`;
    await createPVC(ns, claim, expandable, '1Gi');
    await bindPVC(ns, claim);
    await stopPvx(pvx); // only the crashing processes below handle requests now
    let crashing = startPvx(`crash-${claim}`, ['--leader-elect=false', '--namespace', ns]);
    try {
      await waitReady(crashing);
      await createRequest(claim, { target: { pvcName: claim }, size: '2Gi' });
      if (delayMs >= 0) await sleep(delayMs);
      else await followPhases(claim, ['WaitingForPod']);
      crashing.kill('SIGKILL');
      await crashing.exited;
      crashing = startPvx(`restarted-${claim}`, ['--leader-elect=false', '--namespace', ns]);
      await waitReady(crashing);
      await createPod(ns, claim, claim);
      const { request } = await followPhases(claim, ['Completed', 'Failed', 'Rejected']);
      expect(request.status).toMatchObject({ phase: 'Completed', fromCapacity: '1Gi', targetSize: '2Gi', capacity: '2Gi' });
      const pvc = await readPVC(ns, claim);
      expect(pvc.spec?.resources?.requests?.storage).toBe('2Gi');
      expect(pvc.metadata?.annotations?.['pvx.dev/request-uid']).toBe(request.metadata.uid);
      const patched = (await core.listNamespacedEvent({ namespace: ns, fieldSelector: `involvedObject.name=${claim}` })).items.filter(
        (e) => e.reason === 'Patched',
      );
      expect(patched.length).toBeLessThanOrEqual(1); // 0 if the kill fell between the patch and its Event
    } finally {
      await stopPvx(crashing);
      pvx = startPvx('ver', ['--leader-election-namespace', pvxNamespace, '--leader-election-id', 'pvx-e2e-ver'], await serviceAccountKubeconfig());
      await waitReady(pvx);
    }
  });
});

describe.skipIf(!e2eEnv.hiddenCapClass)('a target the driver finds infeasible', () => {
  const hidden = e2eEnv.hiddenCapClass as string;

  it('fails with ControllerResizeInfeasible and, with recovery None, only reports', async () => {
    await createPVC(ns, 'infeasible', hidden, '1Gi');
    await bindPVC(ns, 'infeasible');
    await createRequest('grow-infeasible', { target: { pvcName: 'infeasible' }, size: '5Gi' });
    const { request } = await followPhases('grow-infeasible', ['Failed', 'Completed', 'Rejected']);
    expect(request.status).toMatchObject({ phase: 'Failed', reason: 'ControllerResizeInfeasible' });
    expect(request.status?.message).toMatch(/exceeds the maximum volume size/);
    const pvc = await readPVC(ns, 'infeasible');
    expect(pvc.spec?.resources?.requests?.storage).toBe('5Gi');
    expect(pvc.status?.allocatedResourceStatuses?.storage).toBe('ControllerResizeInfeasible');
  });

  it('with recovery Auto, lowers the claim to what Kubernetes and the driver accept, leaving it healthy', async () => {
    await createPVC(ns, 'recover', hidden, '1Gi');
    await bindPVC(ns, 'recover');
    await createPod(ns, 'recover', 'recover');
    await waitForPodRunning(ns, 'recover');
    await createRequest('grow-recover', { target: { pvcName: 'recover' }, size: '5Gi', recovery: 'Auto' });
    const { phases, request } = await followPhases('grow-recover', ['Failed', 'Completed', 'Rejected']);
    expect(phases).toContain('Recovering');
    expect(request.status).toMatchObject({ phase: 'Failed', reason: 'RecoveredAtLowerSize' });
    // pvx's profile of this class knows no limit, so it went back as far as Kubernetes permits:
    // just above status.capacity (whole MiB).
    expect(request.status?.recovery?.attemptedSizes).toEqual(['1025Mi']);
    const pvc = await readPVC(ns, 'recover');
    expect(pvc.spec?.resources?.requests?.storage).toBe('1025Mi');
    expect(pvc.status?.capacity?.storage).toBe('1025Mi');
    expect(pvc.status?.allocatedResourceStatuses?.storage).toBeUndefined();
  });
});

describe.skipIf(!e2eEnv.expandableClass)('a request for a StatefulSet volumeClaimTemplate', () => {
  it('grows the PVC of every replica, tracking each, and notes that new replicas keep the template size', async () => {
    const apps = kc.makeApiClient(AppsV1Api);
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: 'db' },
        spec: {
          serviceName: 'db',
          replicas: 3,
          podManagementPolicy: 'Parallel',
          selector: { matchLabels: { app: 'db' } },
          template: {
            metadata: { labels: { app: 'db' } },
            spec: {
              hostNetwork: true,
              automountServiceAccountToken: false,
              terminationGracePeriodSeconds: 1,
              containers: [
                {
                  name: 'db',
                  image: e2eEnv.image,
                  imagePullPolicy: e2eEnv.imagePullPolicy,
                  command: ['sleep', '3600'],
                  volumeMounts: [{ name: 'data', mountPath: '/data' }],
                },
              ],
            },
          },
          volumeClaimTemplates: [
            { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: expandable, resources: { requests: { storage: '1Gi' } } } },
          ],
        },
      },
    });
    // A replica the scheduler tried before its claim was bound waits in its unschedulable queue;
    // seen once taking two minutes to be retried (kube-scheduler 1.34), hence more than the usual two.
    for (let i = 0; i < 3; i++) await waitForPodRunning(ns, `db-${i}`, 300_000);
    await createRequest('grow-db', { target: { statefulSetName: 'db', volumeClaimTemplate: 'data' }, size: '2Gi' });
    const { request } = await followPhases('grow-db', ['Completed', 'Failed', 'Rejected']);
    expect(request.status?.phase).toBe('Completed');
    expect(request.status?.message).toMatch(/new replicas are still created at the template size 1Gi/);
    expect(request.status?.targets?.map((t) => [t.pvcName, t.phase, t.capacity])).toEqual([
      ['data-db-0', 'Completed', '2Gi'],
      ['data-db-1', 'Completed', '2Gi'],
      ['data-db-2', 'Completed', '2Gi'],
    ]);
    for (let i = 0; i < 3; i++) expect((await readPVC(ns, `data-db-${i}`)).status?.capacity?.storage).toBe('2Gi');
  }, 600_000);

  it('is rejected when the StatefulSet has no such volumeClaimTemplate, creating nothing', async () => {
    const apps = kc.makeApiClient(AppsV1Api);
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: 'gone' },
        spec: {
          serviceName: 'gone',
          replicas: 0,
          selector: { matchLabels: { app: 'gone' } },
          template: { metadata: { labels: { app: 'gone' } }, spec: { containers: [{ name: 'c', image: e2eEnv.image, command: ['sleep', '1'] }] } },
          volumeClaimTemplates: [
            { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: expandable, resources: { requests: { storage: '1Gi' } } } },
          ],
        },
      },
    });
    await createRequest('grow-gone', { target: { statefulSetName: 'gone', volumeClaimTemplate: 'nope' }, size: '2Gi' });
    const { request } = await followPhases('grow-gone', ['Rejected', 'Completed', 'Failed'], 60_000);
    expect(request.status).toMatchObject({ phase: 'Rejected', reason: 'TemplateNotFound' });
    const children = (await custom.listNamespacedCustomObject({ ...crd, namespace: ns, labelSelector: 'pvx.dev/parent-request=grow-gone' })) as {
      items: unknown[];
    };
    expect(children.items).toHaveLength(0);
  });
});

describe.skipIf(!e2eEnv.expandableClass)('guardrails of a ClusterVolumeExpansionPolicy', () => {
  const policyName = `pvx-e2e-guard-${Math.random().toString(36).slice(2, 8)}`;
  afterAll(async () => {
    await custom.deleteClusterCustomObject({ ...crd, plural: 'clustervolumeexpansionpolicies', name: policyName }).catch(() => undefined);
  });

  it('cap manual requests in the namespaces they select', async () => {
    await guardNamespace(ns, 'pvx.dev/guardrail-test', policyName, { maxSize: '3Gi', maxStep: '1Gi' });
    await createPVC(ns, 'guarded', expandable, '1Gi');
    await bindPVC(ns, 'guarded');
    await sleep(2000); // pvx's caches see the policy and the namespace label
    await createRequest('guard-size', { target: { pvcName: 'guarded' }, size: '5Gi' });
    expect((await followPhases('guard-size', ['Rejected', 'Completed', 'Failed', 'WaitingForPod'], 60_000)).request.status).toMatchObject({
      phase: 'Rejected',
      reason: 'GuardrailMaxSize',
    });
    await createRequest('guard-step', { target: { pvcName: 'guarded' }, size: '3Gi' });
    const step = (await followPhases('guard-step', ['Rejected', 'Completed', 'Failed', 'WaitingForPod'], 60_000)).request;
    expect(step.status).toMatchObject({ phase: 'Rejected', reason: 'GuardrailMaxStep' });
    expect(step.status?.message).toContain(`ClusterVolumeExpansionPolicy ${policyName}`);
    await createRequest('guard-ok', { target: { pvcName: 'guarded' }, size: '2Gi' });
    expect((await followPhases('guard-ok', ['Rejected', 'Completed', 'Failed', 'WaitingForPod'], 60_000)).request.status?.phase).toBe('WaitingForPod');
    expect((await readPVC(ns, 'guarded')).spec?.resources?.requests?.storage).toBe('2Gi');
  });

  // Review, 2026-12-04: an editor routed around a policy's Approval mode with a request of their own.
  it('requireApproval alone (admitted as a guardrail) holds an editor’s unmarked request for an approval, then it grows', async () => {
    const approvalPolicy = `${policyName}-approval`;
    await guardNamespace(ns, 'pvx.dev/guardrail-test', approvalPolicy, { requireApproval: true });
    try {
      await createPVC(ns, 'held', expandable, '1Gi');
      await bindPVC(ns, 'held');
      await sleep(2000); // pvx's cache sees the policy
      await createRequest('held-grow', { target: { pvcName: 'held' }, size: '2Gi' });
      await waitFor('the request to await approval', 60_000, async () => (await readRequest('held-grow')).status?.reason === 'AwaitingApproval');
      const waiting = await readRequest('held-grow');
      expect(waiting.status?.message).toMatch(
        new RegExp(`^ClusterVolumeExpansionPolicy ${approvalPolicy} requires an approval of every expansion in namespace ${ns}: would grow held`),
      );
      await sleep(3000);
      expect((await readPVC(ns, 'held')).spec?.resources?.requests?.storage).toBe('1Gi');
      await custom.patchNamespacedCustomObject(
        { ...crd, namespace: ns, name: 'held-grow', body: { metadata: { annotations: { 'pvx.dev/approved': 'true' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      expect((await followPhases('held-grow', ['Rejected', 'Completed', 'Failed', 'WaitingForPod'], 60_000)).request.status?.phase).toBe('WaitingForPod');
      expect((await readPVC(ns, 'held')).spec?.resources?.requests?.storage).toBe('2Gi');
    } finally {
      await custom.deleteClusterCustomObject({ ...crd, plural: 'clustervolumeexpansionpolicies', name: approvalPolicy }).catch(() => undefined);
    }
  });
});
