// What a user relies on from a request, each case a regression test of a failure found by reading
// and driving the reconciler: the reconciler with its real caches over the in-memory API server,
// the clock stepped by the test.
import type {
  V1Namespace,
  V1PersistentVolumeClaim,
  V1PersistentVolumeClaimCondition,
  V1Pod,
  V1StatefulSet,
  V1StorageClass,
  V1VolumeAttributesClass,
} from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { createExpansionMetrics } from '../../metrics/expansion.ts';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { ApiError } from '../../k8s/errors.ts';
import { FakeKubeClient } from '../../k8s/testing/fake-client.ts';
import { clusterVolumeExpansionPolicies, namespaces, resources, volumeExpansionPolicies, volumeExpansionRequests } from '../../k8s/resources.ts';
import type { VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import type { ExpansionRequestReconciler } from './expansion-request.ts';
import { showStepAfterMs } from '../../policies/request/status.ts';
import { crashAfterNextPatch, RequestHarness, settle } from './request-harness.testing.ts';
import { staleCacheMs } from './unseen-writes.ts';

const t0 = new Date('2026-11-29T12:00:00.000Z');
let fake: FakeKubeClient;
let harness: RequestHarness;
let clock = t0;

// The monotonic clock follows the test's clock unless a test sets its own.
const reconciler = (opts: Partial<Parameters<RequestHarness['reconciler']>[0]> = {}) =>
  harness.reconciler({ now: () => clock, monotonicMs: () => clock.getTime(), ...opts });
/** The caches stop where they are, as after a restart or while a watch lags. */
const restart = () => harness.stopCaches();
const advance = (ms: number) => {
  clock = new Date(clock.getTime() + ms);
  vi.setSystemTime(clock);
};

function claim(name: string, size: string, extra: Partial<V1PersistentVolumeClaim['status']> = {}, className = 'fast'): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'db' },
    spec: { storageClassName: className, resources: { requests: { storage: size } } },
    status: { phase: 'Bound', capacity: { storage: size }, ...extra },
  } as V1PersistentVolumeClaim;
}

function newRequest(name: string, spec: Partial<VolumeExpansionRequest['spec']>, annotations?: Record<string, string>): VolumeExpansionRequest {
  return fake.create(volumeExpansionRequests, {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: { name, namespace: 'db', annotations },
    spec: { target: { pvcName: 'data' }, ...spec },
  } as VolumeExpansionRequest);
}

const readClaim = (name = 'data') => fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', name) as V1PersistentVolumeClaim;
const readRequest = (name: string) => fake.get<VolumeExpansionRequest>(volumeExpansionRequests, 'db', name) as VolumeExpansionRequest;
const sizePatches = () => fake.calls.filter((c) => c.startsWith('patchPvcSize'));
function updateClaim(name: string, change: (c: V1PersistentVolumeClaim) => V1PersistentVolumeClaim) {
  const c = readClaim(name);
  fake.update(resources.persistentVolumeClaims, { ...change(c), metadata: { ...change(c).metadata, resourceVersion: undefined } });
}
/** One reconcile and the caches catching up with what it wrote. */
async function step(r: ExpansionRequestReconciler, key = 'db/grow'): Promise<void> {
  await r.reconcile(key);
  await settle();
}

function annotate(name: string, annotations: Record<string, string>) {
  const r = readRequest(name);
  fake.update(volumeExpansionRequests, {
    ...r,
    metadata: { ...r.metadata, resourceVersion: undefined, annotations: { ...r.metadata.annotations, ...annotations } },
  });
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  clock = t0;
  vi.setSystemTime(clock);
  fake = new FakeKubeClient();
  harness = new RequestHarness(fake);
  fake.create(resources.storageClasses, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'fast' },
    provisioner: 'hostpath.pvx.dev',
    allowVolumeExpansion: true,
  } as V1StorageClass);
  fake.create(resources.persistentVolumeClaims, claim('data', '1Gi'));
});

afterEach(async () => {
  await restart();
  vi.useRealTimers();
  // Whatever a test drives, a reconcile that changes nothing writes nothing.
  expect(fake.noOpWrites).toEqual([]);
});

describe('a request costs few writes', () => {
  const statusWrites = () => fake.calls.filter((c) => c.startsWith('patchRequestStatus'));
  const moveClaim = (statuses: Record<string, string> | undefined, capacity = '1Gi') =>
    updateClaim('data', (c) => ({
      ...c,
      status: { ...c.status, capacity: { storage: capacity }, allocatedResources: { storage: '2Gi' }, allocatedResourceStatuses: statuses },
    }));
  beforeEach(() => {
    fake.create(resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'app', namespace: 'db' },
      spec: { nodeName: 'n1', volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'data' } }] },
      status: { phase: 'Running' },
    } as V1Pod);
  });

  it('one that goes well: one claim patch, two status writes (the accepted plan, the end) and two Events (Patched on the request, Expanded on the claim), every step timed', async () => {
    newRequest('grow', { size: '2Gi' });
    const r = await reconciler();
    await step(r); // accepted, patched
    advance(2_000);
    moveClaim({ storage: 'ControllerResizeInProgress' });
    await settle();
    await step(r);
    advance(3_000);
    moveClaim({ storage: 'NodeResizePending' });
    await settle();
    await step(r);
    await step(r); // nothing changed: nothing written
    advance(4_000);
    moveClaim(undefined, '2Gi');
    await settle();
    await step(r);
    expect(sizePatches()).toHaveLength(1);
    expect(statusWrites()).toHaveLength(2);
    expect(fake.events.map((e) => e.reason)).toEqual(['Patched', 'Expanded']);
    const status = readRequest('grow').status;
    expect(status?.phase).toBe('Completed');
    expect(status?.timeline).toMatchObject({
      acceptedAt: t0.toISOString(),
      patchedAt: t0.toISOString(),
      controllerExpandedAt: '2026-11-29T12:00:05.000Z',
      completedAt: '2026-11-29T12:00:09.000Z',
    });
    // The end is told on the claim, where people look: from what to what, by whom, each stage's time.
    expect(fake.events[1]).toEqual({
      regarding: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'db', name: 'data', uid: readClaim().metadata?.uid },
      type: 'Normal',
      reason: 'Expanded',
      message: '1Gi → 2Gi in 9s by VolumeExpansionRequest grow [claim patched +0s, controller done +5s, completed +9s]',
    });
  });

  it('one a policy made: the same writes, and its one Event on the claim, naming the policy and why it grew the claim', async () => {
    fake.create(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: {
        name: 'grow',
        namespace: 'db',
        labels: { 'pvx.dev/policy': 'fill' },
        annotations: { 'pvx.dev/trigger': 'UsedRatio', 'pvx.dev/decision': 'used ≥ 90%: grow 1Gi → 2Gi (93.0% used)' },
      },
      spec: { target: { pvcName: 'data' }, size: '2Gi' },
    } as VolumeExpansionRequest);
    const r = await reconciler();
    await step(r);
    advance(6_000);
    moveClaim(undefined, '2Gi');
    await settle();
    await step(r);
    expect(sizePatches()).toHaveLength(1);
    expect(statusWrites()).toHaveLength(2);
    expect(fake.events).toEqual([
      {
        regarding: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'db', name: 'data', uid: readClaim().metadata?.uid },
        type: 'Normal',
        reason: 'Expanded',
        message:
          '1Gi → 2Gi in 6s by VolumeExpansionPolicy fill (VolumeExpansionRequest grow): used ≥ 90%: grow 1Gi → 2Gi (93.0% used) [claim patched +0s, controller done +6s, completed +6s]',
      },
    ]);
  });

  // Simulation seed 1401945: approved after its policy was deleted and another of the name (a smaller
  // maxSize) created, a policy's request grew the claim past the policy that governs it now.
  it("one a policy made is carried out only while that policy (its owner's UID) is there, within its maxSize now", async () => {
    const policy = (uid: string, maxSize: string) =>
      ({
        apiVersion: 'pvx.dev/v1alpha1',
        kind: 'VolumeExpansionPolicy',
        metadata: { name: 'fill', namespace: 'db', uid },
        spec: { triggers: { usedPercent: 80 }, maxSize },
      }) as VolumeExpansionPolicy;
    const made = (name: string, size: string) =>
      fake.create(volumeExpansionRequests, {
        apiVersion: 'pvx.dev/v1alpha1',
        kind: 'VolumeExpansionRequest',
        metadata: {
          name,
          namespace: 'db',
          labels: { 'pvx.dev/policy': 'fill' },
          ownerReferences: [{ apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionPolicy', name: 'fill', uid: 'p-old', controller: true }],
        },
        spec: { target: { pvcName: 'data' }, size },
      } as VolumeExpansionRequest);
    fake.create(volumeExpansionPolicies, policy('p-old', '10Gi'));
    made('grow', '2Gi');
    const r = await reconciler({ policies: harness.cache<VolumeExpansionPolicy>(volumeExpansionPolicies) });
    await step(r);
    expect(sizePatches()).toHaveLength(1);
    moveClaim(undefined, '2Gi');
    await settle();
    await step(r);
    expect(readRequest('grow').status?.phase).toBe('Completed');

    fake.delete(volumeExpansionPolicies, 'db', 'fill');
    fake.create(volumeExpansionPolicies, policy('p-new', '10Gi'));
    made('grow-2', '3Gi');
    await settle();
    await step(r, 'db/grow-2');
    expect(sizePatches()).toHaveLength(1);
    expect(readRequest('grow-2').status).toMatchObject({ phase: 'Rejected', reason: 'PolicyDeleted' });
  });

  it('a step that lasts is shown once it has lasted showStepAfterMs, without an Event; a wait is shown at once, with one', async () => {
    newRequest('grow', { size: '2Gi' });
    const r = await reconciler();
    await step(r);
    moveClaim({ storage: 'ControllerResizeInProgress' });
    await settle();
    const held = await r.reconcile('db/grow');
    expect(held.requeueAfterMs).toBeLessThanOrEqual(showStepAfterMs); // looked at again by the time the step is due to be shown
    expect(statusWrites()).toHaveLength(1);
    advance(showStepAfterMs);
    await step(r);
    expect(statusWrites()).toHaveLength(2);
    expect(readRequest('grow').status).toMatchObject({ phase: 'ControllerExpanding', reason: 'ControllerResizeInProgress' });
    fake.delete(resources.pods, 'db', 'app');
    moveClaim({ storage: 'NodeResizePending' });
    await settle();
    await step(r);
    expect(statusWrites()).toHaveLength(3);
    expect(readRequest('grow').status?.phase).toBe('WaitingForPod');
    expect(fake.events.map((e) => e.reason)).toEqual(['Patched', 'NodeResizePending']);
  });
});

describe('a cluster guardrail fails closed', () => {
  it('a request in a namespace not yet in the cache waits for it, and is then held to the guardrail that selects it by label', async () => {
    fake.create(clusterVolumeExpansionPolicies, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'ClusterVolumeExpansionPolicy',
      metadata: { name: 'cap' },
      spec: { namespaceSelector: { matchLabels: { team: 'db' } }, guardrails: { maxSize: '1536Mi' } },
    } as ClusterVolumeExpansionPolicy);
    newRequest('grow', { size: '2Gi' });
    const r = await reconciler({
      clusterPolicies: harness.cache<ClusterVolumeExpansionPolicy>(clusterVolumeExpansionPolicies),
      namespaces: harness.cache<V1Namespace>(namespaces),
    });
    await step(r);
    expect(readRequest('grow').status).toMatchObject({ phase: 'Pending', reason: 'GuardrailsUnknown' });
    expect(sizePatches()).toHaveLength(0);
    fake.create(namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'db', labels: { team: 'db' } } });
    await settle();
    await step(r);
    expect(readRequest('grow').status).toMatchObject({ phase: 'Rejected', reason: 'GuardrailMaxSize' });
    expect(sizePatches()).toHaveLength(0);
  });
});

describe('a cache behind any of a reconcile’s writes is waited for', () => {
  it('two status writes in one reconcile, the requests’ cache still older than the first: the next reconcile writes nothing (no 409)', async () => {
    newRequest('grow', { size: '2Gi' });
    const r = await reconciler();
    await harness.stopCache(volumeExpansionRequests); // the requests' watch lags from here on
    // Admission refuses the patch: the accepted plan, then the request Rejected — two writes.
    fake.patchPvcSize = async () => {
      throw new ApiError(403, 'Forbidden', 'exceeded quota: storage');
    };
    await r.reconcile('db/grow');
    const writes = fake.calls.filter((c) => c.startsWith('patchRequestStatus')).length;
    expect(writes).toBe(2);
    // It looks again when the copy would count as stale, not before: polling sooner finds the same
    // copy (simulation seed 2150930: a parent request looked at every 5 s through a lagging watch).
    await expect(r.reconcile('db/grow')).resolves.toMatchObject({ requeueAfterMs: staleCacheMs });
    advance(10_000);
    await expect(r.reconcile('db/grow')).resolves.toMatchObject({ requeueAfterMs: staleCacheMs - 10_000 });
    expect(fake.calls.filter((c) => c.startsWith('patchRequestStatus'))).toHaveLength(writes);
  });
});

describe('a cache that never shows pvx’s own write (its watch event lost)', () => {
  it('is waited for a while, then the request is read from the API server: its deadline still holds (simulation seed 504096)', async () => {
    newRequest('grow', { size: '2Gi', deadline: '1m' });
    const r = await reconciler();
    await harness.stopCache(volumeExpansionRequests); // the status writes' events never reach the cache
    await r.reconcile('db/grow'); // accepted, patched
    expect(readRequest('grow').status?.phase).toBe('Expanding');
    await expect(r.reconcile('db/grow')).resolves.toEqual({ requeueAfterMs: staleCacheMs });
    advance(120_000);
    await r.reconcile('db/grow');
    expect(readRequest('grow').status).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
    // Seed 2877: the cache still holds its stale copy after the live read; deciding from it again
    // (a StatefulSet request made a child again that way) is what the live read was for.
    const writes = fake.calls.filter((c) => c.startsWith('patchRequestStatus')).length;
    await expect(r.reconcile('db/grow')).resolves.toEqual({});
    expect(fake.calls.filter((c) => c.startsWith('patchRequestStatus'))).toHaveLength(writes);
    expect(readRequest('grow').status).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
  });
});

describe('a cache that never shows another writer’s change (its watch event lost)', () => {
  it('after the status write met a 409, waits a while, then reads the request from the API server: its deadline still holds (simulation seed 100795)', async () => {
    newRequest('grow', { size: '2Gi', deadline: '1m' }, { 'pvx.dev/approval': 'required' });
    const r = await reconciler();
    await r.reconcile('db/grow');
    expect(readRequest('grow').status).toMatchObject({ phase: 'Pending', reason: 'AwaitingApproval' });
    await harness.stopCache(volumeExpansionRequests); // the approval's event never reaches the cache
    annotate('grow', { 'pvx.dev/approved': 'true' });
    advance(120_000);
    // Decided from the copy before the approval: its write meets a 409.
    await expect(r.reconcile('db/grow')).rejects.toThrow(/changed meanwhile/);
    const writes = () => fake.calls.filter((c) => c.startsWith('patchRequestStatus')).length;
    const before = writes();
    await expect(r.reconcile('db/grow')).resolves.toEqual({ requeueAfterMs: staleCacheMs });
    expect(writes()).toBe(before);
    advance(120_000);
    await r.reconcile('db/grow');
    expect(readRequest('grow').status).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
    expect(sizePatches()).toHaveLength(0);
  });
});

describe('how long a step has lasted is measured on the monotonic clock', () => {
  it('a step that lasted past showStepAfterMs is shown though the wall clock stepped back an hour meanwhile', async () => {
    fake.create(resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'app', namespace: 'db' },
      spec: { nodeName: 'n1', volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'data' } }] },
      status: { phase: 'Running' },
    } as V1Pod);
    let monotonic = 0;
    newRequest('grow', { size: '2Gi' });
    const r = await reconciler({ monotonicMs: () => monotonic });
    await step(r); // accepted, patched
    updateClaim('data', (c) => ({
      ...c,
      status: { ...c.status, allocatedResources: { storage: '2Gi' }, allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' } },
    }));
    await settle();
    await step(r); // the step begins: held
    expect(readRequest('grow').status?.phase).toBe('Expanding');
    advance(-3_600_000 + showStepAfterMs + 5_000);
    monotonic += showStepAfterMs + 5_000;
    await step(r);
    expect(readRequest('grow').status).toMatchObject({ phase: 'ControllerExpanding', reason: 'ControllerResizeInProgress' });
  });
});

describe('an approval applies to the plan that was shown', () => {
  it('does not patch a claim re-created after the plan was shown, even once approved; it shows the new plan and waits for an approval of it', async () => {
    newRequest('grow', { increment: '100%' }, { 'pvx.dev/approval': 'required' });
    const r = await reconciler();
    await r.reconcile('db/grow');
    const shown = readRequest('grow').status;
    expect(shown).toMatchObject({ phase: 'Pending', reason: 'AwaitingApproval', fromCapacity: '1Gi', targetSize: '2Gi', pvcUID: readClaim().metadata?.uid });

    // The claim is deleted and created again at 50Gi; then the approver approves what was shown.
    fake.delete(resources.persistentVolumeClaims, 'db', 'data');
    fake.create(resources.persistentVolumeClaims, claim('data', '50Gi'));
    annotate('grow', { 'pvx.dev/approved': 'true' });
    await settle();
    await r.reconcile('db/grow');
    await settle();
    await r.reconcile('db/grow');
    expect(sizePatches()).toHaveLength(0);
    expect(readClaim().spec?.resources?.requests?.storage).toBe('50Gi');
    const asked = readRequest('grow').status;
    expect(asked).toMatchObject({ phase: 'Pending', reason: 'PlanChanged', fromCapacity: '50Gi', targetSize: '100Gi', pvcUID: readClaim().metadata?.uid });

    // An approval naming the new plan lets it through, to exactly what was shown.
    const token = /pvx\.dev\/approved=([^\s)]+)/.exec(asked?.message ?? '')?.[1] as string;
    annotate('grow', { 'pvx.dev/approved': token });
    await settle();
    await r.reconcile('db/grow');
    expect(sizePatches()).toHaveLength(1);
    expect(readClaim().spec?.resources?.requests?.storage).toBe('100Gi');
  });

  it('patches the plan shown when the approval comes and nothing changed', async () => {
    newRequest('grow', { size: '2Gi' }, { 'pvx.dev/approval': 'required' });
    const r = await reconciler();
    await r.reconcile('db/grow');
    annotate('grow', { 'pvx.dev/approved': 'true' });
    await settle();
    await r.reconcile('db/grow');
    expect(readClaim().spec?.resources?.requests?.storage).toBe('2Gi');
  });

  it('never patches a claim whose UID differs from the one validated, even when the cache is behind', async () => {
    newRequest('grow', { size: '2Gi' });
    const r = await reconciler();
    await restart(); // the caches keep the old claim
    fake.delete(resources.persistentVolumeClaims, 'db', 'data');
    fake.create(resources.persistentVolumeClaims, claim('data', '1Gi'));
    await expect(r.reconcile('db/grow')).rejects.toThrow(/changed meanwhile/);
    expect(readClaim().spec?.resources?.requests?.storage).toBe('1Gi');
  });
});

describe('spec.deadline counts in every phase', () => {
  it('fails a request still Pending (expansion in flight) at its deadline, and looks again by then', async () => {
    updateClaim('data', (c) => ({ ...c, spec: { ...c.spec, resources: { requests: { storage: '3Gi' } } } })); // someone else's expansion
    newRequest('grow', { size: '5Gi', deadline: '1m' });
    const r = await reconciler();
    const first = await r.reconcile('db/grow');
    expect(readRequest('grow').status).toMatchObject({ phase: 'Pending', reason: 'ExpansionInFlight' });
    expect(first.requeueAfterMs).toBeLessThanOrEqual(60_000);
    await settle();
    advance(2 * 60 * 60_000);
    await r.reconcile('db/grow');
    expect(readRequest('grow').status).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
    expect(sizePatches()).toHaveLength(0);
  });

  it('fails a request awaiting approval at its deadline', async () => {
    newRequest('grow', { size: '2Gi', deadline: '10m' }, { 'pvx.dev/approval': 'required' });
    const r = await reconciler();
    const first = await r.reconcile('db/grow');
    expect(readRequest('grow').status?.reason).toBe('AwaitingApproval');
    expect(first.requeueAfterMs).toBe(10 * 60_000);
    await settle();
    advance(11 * 60_000);
    annotate('grow', { 'pvx.dev/approved': 'true' }); // too late
    await settle();
    await r.reconcile('db/grow');
    expect(readRequest('grow').status).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
    expect(sizePatches()).toHaveLength(0);
  });
});

describe('a StatefulSet request finishes only when every replica’s claim has', () => {
  beforeEach(() => {
    fake.create(resources.statefulSets, {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db', namespace: 'db' },
      spec: {
        replicas: 2,
        selector: {},
        serviceName: 'db',
        template: {},
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '1Gi' } } } }],
      },
    } as unknown as V1StatefulSet);
    for (const name of ['data-db-0', 'data-db-1']) fake.create(resources.persistentVolumeClaims, claim(name, '1Gi'));
    fake.create(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow-sts', namespace: 'db' },
      spec: { target: { statefulSetName: 'db', volumeClaimTemplate: 'data' }, size: '2Gi' },
    } as VolumeExpansionRequest);
  });

  it('retries the creation of a child that failed, and does not complete with one replica done', async () => {
    const r = await reconciler();
    const reconcileUntilQuiet = async () => {
      for (let i = 0; i < 6; i++) {
        await r.reconcile('db/grow-sts').catch(() => undefined);
        await settle();
      }
    };
    // The claims are pinned, the first child is created and the second refused twice (an
    // object-count quota, a transient error).
    let creates = 0;
    const create = fake.createRequest.bind(fake);
    fake.createRequest = async (ns, obj) => {
      creates++;
      if (obj.metadata?.name === 'grow-sts-1' && creates <= 2) throw new ApiError(403, 'Forbidden', 'exceeded quota: count/volumeexpansionrequests.pvx.dev=1');
      return create(ns, obj);
    };
    await reconcileUntilQuiet();
    // Complete the first child's claim and the first child, as the single-claim path would.
    const child0 = readRequest('grow-sts-0');
    expect(child0).toBeDefined();
    fake.update(volumeExpansionRequests, {
      ...child0,
      metadata: { ...child0.metadata, resourceVersion: undefined },
      status: { phase: 'Completed', reason: 'Completed', message: 'done' },
    });
    await settle();
    await reconcileUntilQuiet();
    expect(readRequest('grow-sts-1')).toBeDefined(); // created on a later reconcile
    expect(readRequest('grow-sts').status?.phase).not.toBe('Completed');
    expect(readRequest('grow-sts').status?.targets?.map((t) => t.pvcName)).toEqual(['data-db-0', 'data-db-1']);
  });
});

describe('a StatefulSet request never grows a claim twice', () => {
  beforeEach(() => {
    fake.create(resources.statefulSets, {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'web', namespace: 'db' },
      spec: {
        replicas: 2,
        selector: {},
        serviceName: 'web',
        template: {},
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '1Gi' } } } }],
      },
    } as unknown as V1StatefulSet);
    for (const name of ['data-web-0', 'data-web-1']) fake.create(resources.persistentVolumeClaims, claim(name, '1Gi'));
  });
  const grown = (name: string) =>
    updateClaim(name, (c) => ({ ...c, status: { ...c.status, capacity: { storage: c.spec?.resources?.requests?.storage as string } } }));
  /** Reconciles the StatefulSet request grow and its two children once each, in turn. */
  const reconcileAll = async (r: ExpansionRequestReconciler) => {
    for (const key of ['db/grow', 'db/grow-0', 'db/grow-1']) {
      await r.reconcile(key).catch(() => undefined);
      await settle();
    }
  };

  it('past its deadline, reads its children from the API server: their last events may be lost (simulation seed 55262)', async () => {
    fake.create(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow', namespace: 'db' },
      spec: { target: { statefulSetName: 'web', volumeClaimTemplate: 'data' }, increment: '1Gi', deadline: '2m' },
    } as VolumeExpansionRequest);
    const r = await reconciler();
    const all = () => reconcileAll(r);
    await all(); // pinned
    await all(); // children created and patched
    expect(readRequest('grow-0').status?.phase).toBe('Expanding');
    // The requests' cache stops here: the children's ends never reach it.
    await harness.stopCache(volumeExpansionRequests);
    for (const child of ['grow-0', 'grow-1'])
      await fake.patchRequestStatus('db', child, { ...readRequest(child).status, phase: 'Failed', reason: 'DeadlineExceeded', message: 'late' }, '');
    advance(60_000);
    await r.reconcile('db/grow');
    expect(readRequest('grow').status?.phase).not.toMatch(/Failed|Completed/); // within its deadline: the cache is believed
    advance(2 * 60_000);
    await r.reconcile('db/grow');
    expect(readRequest('grow').status).toMatchObject({ phase: 'Failed', reason: 'TargetFailed' });
  });

  it('pins each claim as the API server has it, not as a lagging cache does (simulation seed 502159)', async () => {
    fake.create(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow', namespace: 'db' },
      spec: { target: { statefulSetName: 'web', volumeClaimTemplate: 'data' }, increment: '1Gi' },
    } as VolumeExpansionRequest);
    const r = await reconciler();
    await harness.stopCache(resources.persistentVolumeClaims); // the claims' cache lags from here
    updateClaim('data-web-0', (c) => ({
      ...c,
      spec: { ...c.spec, resources: { requests: { storage: '3Gi' } } },
      status: { ...c.status, capacity: { storage: '3Gi' } },
    }));
    await r.reconcile('db/grow');
    expect(readRequest('grow').status?.targets).toEqual([
      expect.objectContaining({ pvcName: 'data-web-0', fromCapacity: '3Gi', targetSize: '4Gi' }),
      expect.objectContaining({ pvcName: 'data-web-1', fromCapacity: '1Gi', targetSize: '2Gi' }),
    ]);
  });

  it.each([
    ['a finished child deleted by its TTL while its sibling still runs', 'ttl'],
    ['a finished child deleted by hand', 'hand'],
  ])('%s is not made again: its claim grows once (1Gi → 2Gi with an increment of 1Gi)', async (_name, how) => {
    fake.create(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow', namespace: 'db' },
      spec: { target: { statefulSetName: 'web', volumeClaimTemplate: 'data' }, increment: '1Gi', ...(how === 'ttl' ? { ttlSecondsAfterFinished: 0 } : {}) },
    } as VolumeExpansionRequest);
    // The parent's last status, kept even after its own TTL deletes it.
    let parentStatus: VolumeExpansionRequest['status'];
    fake.observeWrites((w) => {
      if (w.resource === volumeExpansionRequests.resource && (w.after as VolumeExpansionRequest | undefined)?.metadata.name === 'grow')
        parentStatus = (w.after as VolumeExpansionRequest).status;
    });
    const r = await reconciler();
    const all = () => reconcileAll(r);
    await all(); // pinned
    await all(); // children created and patched
    grown('data-web-0');
    await settle();
    await all(); // the first child completes (and, with a TTL of its own, would be deleted)
    expect(readRequest('grow-0')?.status?.phase ?? 'deleted').toMatch(/Completed|deleted/);
    if (readRequest('grow-0')) fake.delete(volumeExpansionRequests, 'db', 'grow-0');
    await settle();
    for (let i = 0; i < 3; i++) await all();
    grown('data-web-1');
    await settle();
    for (let i = 0; i < 3; i++) await all();
    expect(readClaim('data-web-0').spec?.resources?.requests?.storage).toBe('2Gi');
    expect(readClaim('data-web-1').spec?.resources?.requests?.storage).toBe('2Gi');
    expect(sizePatches().filter((c) => c.includes('data-web-0'))).toHaveLength(1);
    expect(parentStatus).toMatchObject({
      phase: 'Completed',
      targets: [
        { pvcName: 'data-web-0', phase: 'Completed' },
        { pvcName: 'data-web-1', phase: 'Completed' },
      ],
    });
  });
});

describe('recovery reads what pvx itself wrote', () => {
  it('after lowering the claim, a reconcile that still sees the old status waits for the resizer instead of failing', async () => {
    fake.create(resources.storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'capped' },
      provisioner: 'hostpath.pvx.dev',
      allowVolumeExpansion: true,
      parameters: { maxVolumeSize: '3Gi' },
    } as V1StorageClass);
    fake.delete(resources.persistentVolumeClaims, 'db', 'data');
    fake.create(resources.persistentVolumeClaims, claim('data', '1Gi', {}, 'other'));
    // A class pvx knows no limit of; the driver finds the target infeasible.
    fake.create(resources.storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'other' },
      provisioner: 'hostpath.pvx.dev',
      allowVolumeExpansion: true,
    } as V1StorageClass);
    newRequest('grow', { size: '5Gi', recovery: 'Auto' });
    const r = await reconciler();
    await r.reconcile('db/grow'); // patched to 5Gi
    updateClaim('data', (c) => ({
      ...c,
      status: {
        ...c.status,
        allocatedResources: { storage: '5Gi' },
        allocatedResourceStatuses: { storage: 'ControllerResizeInfeasible' },
        conditions: [{ type: 'ControllerResizeError', status: 'True', message: 'exceeds the maximum volume size' }],
      },
    }));
    await settle();
    // The lowering patch goes through; the status write after it is lost.
    crashAfterNextPatch(fake);
    await expect(r.reconcile('db/grow')).rejects.toThrow('process killed here');
    expect(readClaim().spec?.resources?.requests?.storage).toBe('1025Mi');
    await settle();
    await r.reconcile('db/grow');
    expect(readRequest('grow').status).toMatchObject({ phase: 'Recovering', reason: 'LoweredRequest' });
    expect(readRequest('grow').status?.recovery?.attemptedSizes).toEqual(['1025Mi']);
  });
});

describe('a claim’s recovery record belongs to the request that recovered it', () => {
  it('a later request does not take an earlier request’s lowering for its own (chaos seed 7807194)', async () => {
    // An earlier request's recovery left its mark on the claim.
    updateClaim('data', (c) => ({
      ...c,
      metadata: { ...c.metadata, annotations: { 'pvx.dev/recovered-to': '1025Mi', 'pvx.dev/request-uid': 'an-earlier-request' } },
      spec: { ...c.spec, resources: { requests: { storage: '1025Mi' } } },
      status: { ...c.status, capacity: { storage: '1025Mi' } },
    }));
    newRequest('grow', { increment: '2Gi' });
    const r = await reconciler();
    await step(r);
    expect(readClaim().metadata?.annotations?.['pvx.dev/recovered-to']).toBeUndefined();
    updateClaim('data', (c) => ({
      ...c,
      status: {
        ...c.status,
        allocatedResources: { storage: '4Gi' },
        allocatedResourceStatuses: { storage: 'ControllerResizeInfeasible' },
        conditions: [{ type: 'ControllerResizeError', status: 'True', message: 'exceeds the maximum volume size' }],
      },
    }));
    await settle();
    await r.reconcile('db/grow');
    expect(readRequest('grow').status).toMatchObject({ phase: 'Failed', reason: 'ControllerResizeInfeasible' });
    expect(readRequest('grow').status?.recovery).toBeUndefined();
  });
});

describe('a target the driver keeps refusing is not a dead end', () => {
  it('ends a request whose driver error persists for the timeout, and recovery then lowers the claim', async () => {
    newRequest('grow', { size: '1Ei', recovery: 'Auto' });
    const r = await reconciler({ driverErrorTimeoutMs: 60 * 60_000 });
    await r.reconcile('db/grow');
    expect(readClaim().spec?.resources?.requests?.storage).toBe('1Ei');
    updateClaim('data', (c) => ({
      ...c,
      status: {
        ...c.status,
        allocatedResources: { storage: '1Ei' },
        allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' },
        conditions: [{ type: 'ControllerResizeError', status: 'True', message: 'rpc error: code = Internal desc = no space for 1Ei' }],
      },
    }));
    await settle();
    await r.reconcile('db/grow');
    expect(readRequest('grow').status).toMatchObject({ phase: 'ControllerExpanding', reason: 'ControllerResizeError' });
    await settle();
    advance(61 * 60_000);
    await r.reconcile('db/grow');
    expect(readClaim().spec?.resources?.requests?.storage).toBe('1025Mi');
    expect(readRequest('grow').status).toMatchObject({ phase: 'Recovering', reason: 'LoweredRequest' });
  });

  it('without recovery, fails it with the driver’s message', async () => {
    newRequest('grow', { size: '1Ei' });
    const r = await reconciler({ driverErrorTimeoutMs: 60 * 60_000 });
    await r.reconcile('db/grow');
    updateClaim('data', (c) => ({
      ...c,
      status: {
        ...c.status,
        allocatedResources: { storage: '1Ei' },
        allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' },
        conditions: [{ type: 'ControllerResizeError', status: 'True', message: 'no space for 1Ei' }],
      },
    }));
    await settle();
    await r.reconcile('db/grow');
    await settle();
    advance(30 * 60_000);
    await r.reconcile('db/grow');
    expect(readRequest('grow').status?.phase).toBe('ControllerExpanding');
    await settle();
    advance(31 * 60_000);
    await r.reconcile('db/grow');
    expect(readRequest('grow').status).toMatchObject({ phase: 'Failed', reason: 'DriverKeepsRefusing' });
    expect(readRequest('grow').status?.message).toMatch(/no space for 1Ei/);
  });
});

describe('the record tells the truth after a crash', () => {
  it('takes patchedAt from the API server’s record of the patch, not from the restart', async () => {
    newRequest('grow', { size: '2Gi' });
    const first = await reconciler();
    advance(2_400);
    crashAfterNextPatch(fake);
    await expect(first.reconcile('db/grow')).rejects.toThrow('process killed here');
    await restart();
    advance(7_000); // the restart comes seconds later
    const restarted = await reconciler();
    await restarted.reconcile('db/grow');
    expect(sizePatches()).toHaveLength(1);
    advance(showStepAfterMs); // the step (waiting for the resizer) is written once it has lasted
    await restarted.reconcile('db/grow');
    // Accepted (recorded just before the patch) at 12:00:02.400; the API server recorded the patch
    // in whole seconds, so the acceptance bounds it from below.
    expect(readRequest('grow').status?.timeline?.patchedAt).toBe('2026-11-29T12:00:02.400Z');
  });
});

describe('one expansion per request, whatever is lost', () => {
  it('a claim re-created after a patch whose record was lost is not grown again (simulation seed 63)', async () => {
    newRequest('grow', { increment: '1Gi' });
    const r = await reconciler();
    crashAfterNextPatch(fake);
    await expect(r.reconcile('db/grow')).rejects.toThrow('process killed here');
    expect(sizePatches()).toHaveLength(1); // the old claim grew; nothing but that claim recorded it
    fake.delete(resources.persistentVolumeClaims, 'db', 'data');
    fake.create(resources.persistentVolumeClaims, claim('data', '1Gi'));
    await restart();
    const restarted = await reconciler();
    await step(restarted);
    await restarted.reconcile('db/grow');
    expect(sizePatches()).toHaveLength(1);
    expect(readRequest('grow').status).toMatchObject({ phase: 'Failed', reason: 'PVCReplaced' });
  });
});

describe('a finished request stays finished', () => {
  it('a reconcile from a stale cache does not reopen a request another write finished', async () => {
    newRequest('grow', { size: '2Gi' });
    const r = await reconciler();
    await r.reconcile('db/grow'); // patched, Expanding
    // The volume grew and waits for a pod: a wait the request shows at once.
    updateClaim('data', (c) => ({
      ...c,
      status: { ...c.status, allocatedResources: { storage: '2Gi' }, allocatedResourceStatuses: { storage: 'NodeResizePending' } },
    }));
    await settle();
    await restart(); // the caches stop here: the request Expanding, its claim in the node stage
    const done = readRequest('grow');
    fake.update(volumeExpansionRequests, {
      ...done,
      metadata: { ...done.metadata, resourceVersion: undefined },
      status: { ...done.status, phase: 'Completed', reason: 'Completed' },
    });
    await expect(r.reconcile('db/grow')).rejects.toThrow(/changed meanwhile/);
    expect(readRequest('grow').status?.phase).toBe('Completed');
  });
});

describe('a VolumeAttributesClass change', () => {
  const statusWrites = () => fake.calls.filter((c) => c.startsWith('patchRequestStatus'));
  const vac = (name: string, driverName = 'hostpath.pvx.dev'): V1VolumeAttributesClass =>
    fake.create(resources.volumeAttributesClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'VolumeAttributesClass',
      metadata: { name },
      driverName,
      parameters: { iops: '4000' },
    } as V1VolumeAttributesClass);
  const modifying = (message: string): V1PersistentVolumeClaimCondition => ({ type: 'ModifyingVolume', status: 'True', message, lastTransitionTime: clock });
  /** The external-resizer's modify controller, as it writes the claim's status. */
  const resizer = {
    takesUp: (target: string) =>
      updateClaim('data', (c) => ({
        ...c,
        status: {
          ...c.status,
          modifyVolumeStatus: { targetVolumeAttributesClassName: target, status: 'InProgress' },
          conditions: [modifying(`Modifying volume to "${target}" is in progress.`)],
        },
      })),
    refuses: (target: string, message: string) =>
      updateClaim('data', (c) => ({
        ...c,
        status: {
          ...c.status,
          modifyVolumeStatus: { targetVolumeAttributesClassName: target, status: 'Infeasible' },
          conditions: [
            modifying(`Modifying volume to "${target}" failed. Waiting for retry.`),
            { type: 'ModifyVolumeError', status: 'True', reason: 'InvalidArgument', message, lastTransitionTime: clock },
          ],
        },
      })),
    completes: (target: string) =>
      updateClaim('data', (c) => ({ ...c, status: { ...c.status, modifyVolumeStatus: undefined, currentVolumeAttributesClassName: target, conditions: [] } })),
  };
  beforeEach(() => {
    vac('gold');
    updateClaim('data', (c) => ({
      ...c,
      spec: { ...c.spec, volumeAttributesClassName: 'silver' },
      status: { ...c.status, currentVolumeAttributesClassName: 'silver' },
    }));
  });

  it('alone: one patch of the class (the size untouched), two status writes, Patched and VolumeAttributesClassChanged on the claim, when it was applied in the timeline', async () => {
    newRequest('grow', { volumeAttributesClassName: 'gold' });
    const r = await reconciler();
    await step(r);
    expect(sizePatches()).toHaveLength(1);
    expect(readClaim().spec).toMatchObject({ volumeAttributesClassName: 'gold', resources: { requests: { storage: '1Gi' } } });
    expect(readClaim().metadata?.annotations).toMatchObject({
      'pvx.dev/previous-volume-attributes-class': 'silver',
      'pvx.dev/target-volume-attributes-class': 'gold',
    });
    advance(2_000);
    resizer.takesUp('gold');
    await settle();
    await step(r);
    advance(3_000);
    resizer.completes('gold');
    await settle();
    await step(r);
    expect(sizePatches()).toHaveLength(1);
    expect(statusWrites()).toHaveLength(2);
    expect(fake.events.map((e) => [e.reason, e.message])).toEqual([
      ['Patched', "set data's VolumeAttributesClass from silver to gold"],
      [
        'VolumeAttributesClassChanged',
        'VolumeAttributesClass silver → gold in 5s by VolumeExpansionRequest grow [claim patched +0s, class applied +5s, completed +5s]',
      ],
    ]);
    expect(readRequest('grow').status).toMatchObject({
      phase: 'Completed',
      fromVolumeAttributesClassName: 'silver',
      targetVolumeAttributesClassName: 'gold',
      currentVolumeAttributesClassName: 'gold',
      timeline: { patchedAt: t0.toISOString(), modifiedAt: '2026-11-29T12:00:05.000Z', completedAt: '2026-11-29T12:00:05.000Z' },
    });
  });

  it('a claim cache that has not seen the patch yet is waited for, not read as the class changed back', async () => {
    newRequest('grow', { volumeAttributesClassName: 'gold' });
    const r = await reconciler();
    await harness.stopCache(resources.persistentVolumeClaims); // the claims' watch lags; the requests' does not
    await step(r);
    expect(readRequest('grow').status?.phase).toBe('Modifying');
    await r.reconcile('db/grow');
    expect(readRequest('grow').status?.phase).toBe('Modifying');
    expect(sizePatches()).toHaveLength(1);
  });

  it('with a size: both in the one patch of the claim; done when both are', async () => {
    newRequest('grow', { size: '2Gi', volumeAttributesClassName: 'gold' });
    const r = await reconciler();
    await step(r);
    expect(sizePatches()).toHaveLength(1);
    expect(readClaim().spec).toMatchObject({ volumeAttributesClassName: 'gold', resources: { requests: { storage: '2Gi' } } });
    resizer.completes('gold');
    await settle();
    await step(r);
    expect(readRequest('grow').status?.phase).not.toBe('Completed');
    updateClaim('data', (c) => ({ ...c, status: { ...c.status, capacity: { storage: '2Gi' } } }));
    await settle();
    await step(r);
    expect(readRequest('grow').status).toMatchObject({ phase: 'Completed', message: 'capacity is 2Gi; VolumeAttributesClass is gold' });
  });

  it('Infeasible fails the request with the driver’s message and how to cancel, in a Warning Event', async () => {
    newRequest('grow', { volumeAttributesClassName: 'gold' });
    const r = await reconciler();
    await step(r);
    resizer.refuses('gold', 'rpc error: code = InvalidArgument desc = iops 4000 is not allowed for this volume type');
    await settle();
    await step(r);
    const status = readRequest('grow').status;
    expect(status).toMatchObject({ phase: 'Failed', reason: 'ModifyVolumeInfeasible' });
    expect(status?.message).toMatch(/iops 4000 is not allowed.*back to silver/);
    expect(fake.events.at(-1)).toMatchObject({ type: 'Warning', reason: 'ModifyVolumeInfeasible' });
  });

  it('waits for a class that is not there yet, and goes on once it is (applied together with the request)', async () => {
    newRequest('grow', { volumeAttributesClassName: 'platinum' });
    const r = await reconciler();
    await step(r);
    expect(readRequest('grow').status).toMatchObject({ phase: 'Pending', reason: 'VolumeAttributesClassNotFound' });
    expect(sizePatches()).toHaveLength(0);
    vac('platinum');
    await settle();
    advance(10_000);
    await step(r);
    expect(sizePatches()).toHaveLength(1);
    expect(readClaim().spec?.volumeAttributesClassName).toBe('platinum');
  });

  it('a class already applied: Completed at once, the claim untouched', async () => {
    newRequest('grow', { volumeAttributesClassName: 'silver' });
    const r = await reconciler();
    await step(r);
    expect(sizePatches()).toHaveLength(0);
    expect(readRequest('grow').status).toMatchObject({ phase: 'Completed', reason: 'AlreadyApplied' });
  });

  it('a crash right after the patch: the restart follows the class change from the claim, and never patches again', async () => {
    newRequest('grow', { volumeAttributesClassName: 'gold' });
    crashAfterNextPatch(fake);
    await expect((await reconciler()).reconcile('db/grow')).rejects.toThrow('process killed');
    await restart();
    const r = await reconciler();
    await step(r);
    resizer.completes('gold');
    await settle();
    await step(r);
    expect(sizePatches()).toHaveLength(1);
    expect(readRequest('grow').status).toMatchObject({ phase: 'Completed', targetVolumeAttributesClassName: 'gold', fromVolumeAttributesClassName: 'silver' });
  });

  it('counts and times it as a change of class', async () => {
    const registry = new Registry();
    const metrics = createExpansionMetrics(registry, () => []);
    newRequest('grow', { volumeAttributesClassName: 'gold' });
    const r = await reconciler({ metrics });
    await step(r);
    resizer.completes('gold');
    await settle();
    await step(r);
    const counted = (await registry.getSingleMetric('pvx_expansion_requests_total')?.get())?.values;
    expect(counted).toEqual([expect.objectContaining({ labels: { result: 'completed', change: 'class' }, value: 1 })]);
    const timed = (await registry.getSingleMetric('pvx_expansion_phase_duration_seconds')?.get())?.values.filter((v) =>
      (v as { metricName?: string }).metricName?.endsWith('_count'),
    );
    expect(timed).toEqual([expect.objectContaining({ labels: { phase: 'Modifying', change: 'class' }, value: 1 })]);
  });

  it('times its own part, from its first sight of the new request to the claim patch sent, once', async () => {
    const registry = new Registry();
    const metrics = createExpansionMetrics(registry, () => []);
    let monotonic = 1_000;
    const r = await reconciler({ metrics, monotonicMs: () => monotonic });
    r.watch(() => undefined); // its caches' events, as the manager wires them: the request's ADDED is its first sight
    newRequest('grow', { volumeAttributesClassName: 'gold' });
    await settle();
    monotonic += 250;
    await step(r);
    expect(sizePatches()).toHaveLength(1);
    resizer.completes('gold');
    await settle();
    await step(r);
    const timed = (await registry.getSingleMetric('pvx_request_seen_to_patch_seconds')?.get())?.values;
    expect(timed?.find((v) => (v as { metricName?: string }).metricName?.endsWith('_count'))?.value).toBe(1);
    expect(timed?.find((v) => (v as { metricName?: string }).metricName?.endsWith('_sum'))?.value).toBe(0.25);
  });
});

describe('an EBS volume whose budget was spent where Kubernetes cannot see it', () => {
  const rateLimited =
    'resize volume "pvc-1" by resizer "ebs.csi.aws.com" failed: rpc error: code = Internal desc = Could not resize volume "vol-0abc": operation error EC2: ModifyVolume, https response error StatusCode: 400, RequestID: 5e3c, api error VolumeModificationRateExceeded: You\'ve reached the maximum modification rate per volume limit.';

  it('shows DriverRateLimited with the latest time the next modification is allowed, never patches again, and completes when the resizer gets through', async () => {
    fake.create(resources.storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'gp3' },
      provisioner: 'ebs.csi.aws.com',
      parameters: { type: 'gp3' },
      allowVolumeExpansion: true,
    } as V1StorageClass);
    fake.create(resources.persistentVolumeClaims, claim('vol', '10Gi', {}, 'gp3'));
    fake.create(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow', namespace: 'db' },
      spec: { target: { pvcName: 'vol' }, size: '20Gi' },
    } as VolumeExpansionRequest);
    let r = await reconciler();
    await step(r);
    expect(sizePatches()).toHaveLength(1);
    // The driver refuses: four modifications were made from the EC2 console this morning.
    advance(60_000);
    updateClaim('vol', (c) => ({
      ...c,
      status: {
        ...c.status,
        allocatedResources: { storage: '20Gi' },
        allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' },
        conditions: [{ type: 'ControllerResizeError', status: 'True', message: rateLimited }],
      },
    }));
    await settle();
    await step(r);
    const refusedAt = clock.toISOString();
    expect(readRequest('grow').status).toMatchObject({ phase: 'ControllerExpanding', reason: 'DriverRateLimited', errorSince: refusedAt });
    expect(readRequest('grow').status?.message).toContain(
      `allows the next modification no later than ${new Date(clock.getTime() + 86_400_000).toISOString()} (it refused at ${refusedAt}); 4 of the 4 modifications it counted were made where pvx cannot see them`,
    );
    // Hours of the resizer retrying (each retry rewrites the condition), reconciles every 30 s, a restart.
    for (let i = 0; i < 40; i++) {
      advance(30 * 60_000);
      if (i === 20) {
        await restart();
        r = await reconciler();
      }
      await step(r);
    }
    expect(sizePatches()).toHaveLength(1);
    expect(readRequest('grow').status).toMatchObject({ phase: 'ControllerExpanding', reason: 'DriverRateLimited', errorSince: refusedAt });
    // The window frees one: the resizer's retry goes through.
    updateClaim('vol', (c) => ({ ...c, status: { phase: 'Bound', capacity: { storage: '20Gi' } } }));
    await settle();
    await step(r);
    expect(readRequest('grow').status?.phase).toBe('Completed');
    expect(sizePatches()).toHaveLength(1);
  });
});
