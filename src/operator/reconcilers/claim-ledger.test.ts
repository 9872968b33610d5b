import type { KubernetesObject, V1ManagedFieldsEntry, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { pvcAnnotations } from '../../crds/keys.ts';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { ApiError, RetryAfterError } from '../../k8s/errors.ts';
import { FakeKubeClient } from '../../k8s/testing/fake-client.ts';
import { resources, storageRequestFields, volumeExpansionRequests, type ResourceType } from '../../k8s/resources.ts';
import { driverProfiles } from '../../policies/budget/drivers.ts';
import { readLedger } from '../../policies/budget/ledger.ts';
import { staleCacheMs } from './unseen-writes.ts';
import { classify, ConflictError } from '../runtime/errors.ts';
import { Informer } from '../../k8s/informer.ts';
import { ClaimLedgerRecorder, ledgerClassEvents } from './claim-ledger.ts';
import { RequestHarness, settle } from './request-harness.testing.ts';

const logger = pino({ level: 'silent' });
const now = new Date('2026-11-29T12:00:00Z');
const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000);

let fake: FakeKubeClient;
let informers: Informer[];
let leader: boolean;

function informer<T extends KubernetesObject>(type: ResourceType): Informer<T> {
  const i = new Informer<T>({ type, client: fake, logger });
  informers.push(i as unknown as Informer);
  i.start();
  return i;
}

async function recorder(over: Partial<ConstructorParameters<typeof ClaimLedgerRecorder>[0]> = {}): Promise<ClaimLedgerRecorder> {
  const r = new ClaimLedgerRecorder({
    client: fake,
    pvcs: informer<V1PersistentVolumeClaim>(resources.persistentVolumeClaims),
    storageClasses: informer<V1StorageClass>(resources.storageClasses),
    logger,
    canWrite: () => leader,
    now: () => now,
    ...over,
  });
  await Promise.all(informers.map((i) => i.waitForSync()));
  return r;
}

const stopCaches = async () => {
  await Promise.all(informers.map((i) => i.stop()));
  informers = [];
};

const kubectlResize = (at: Date): V1ManagedFieldsEntry => ({ manager: 'kubectl-patch', operation: 'Update', time: at, fieldsV1: storageRequestFields });

const claim = () => fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
/** Someone resizes the claim with kubectl (not pvx): the API server records them as the writer of the size. */
function resizeOutside(size: string, at = ago(3)): void {
  const pvc = claim();
  fake.update(resources.persistentVolumeClaims, {
    ...pvc,
    metadata: { ...pvc.metadata, resourceVersion: undefined, managedFields: [...(pvc.metadata?.managedFields ?? []), kubectlResize(at)] },
    spec: { ...pvc.spec, resources: { requests: { storage: size } } },
  });
}
const annotationPatches = () => fake.calls.filter((c) => c.startsWith('patchPvcAnnotations'));

beforeEach(() => {
  fake = new FakeKubeClient();
  informers = [];
  leader = true;
  fake.create(resources.storageClasses, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'gp3' },
    provisioner: 'ebs.csi.aws.com',
    parameters: { type: 'gp3' },
    allowVolumeExpansion: true,
  } as V1StorageClass);
  fake.create(resources.storageClasses, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'local' },
    provisioner: 'hostpath.pvx.dev',
    allowVolumeExpansion: true,
  } as V1StorageClass);
  fake.create(resources.persistentVolumeClaims, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: 'data',
      namespace: 'db',
      managedFields: [{ manager: 'kubectl-client-side-apply', operation: 'Update', time: ago(6000), fieldsV1: storageRequestFields }],
    },
    spec: { storageClassName: 'gp3', resources: { requests: { storage: '10Gi' } } },
    status: { phase: 'Bound', capacity: { storage: '10Gi' } },
  } as V1PersistentVolumeClaim);
});

afterEach(() => stopCaches());

describe('ClaimLedgerRecorder', () => {
  it('writes nothing for a claim that shows nothing new: no ledger yet, the spec as the volume has it', async () => {
    const r = await recorder();
    expect(await r.reconcile('db/data')).toEqual({});
    expect(fake.calls.filter((c) => !c.startsWith('list') && !c.startsWith('watch'))).toEqual([]);
  });

  it('records a resize under way that pvx did not make, with one annotation patch and an Event, then writes nothing more', async () => {
    resizeOutside('20Gi');
    const r = await recorder();
    await r.reconcile('db/data');
    expect(annotationPatches()).toHaveLength(1);
    expect(readLedger(claim())).toEqual({
      spec: { size: '20Gi' },
      mods: [{ at: ago(3).toISOString(), by: 'observed:kubectl-patch', size: ['10Gi', '20Gi'], timeFrom: 'managedFields' }],
    });
    expect(claim().spec?.resources?.requests?.storage).toBe('20Gi');
    expect(fake.events).toMatchObject([
      {
        type: 'Normal',
        reason: 'ModificationObserved',
        regarding: { kind: 'PersistentVolumeClaim', name: 'data' },
        message: `resized 10Gi → 20Gi by kubectl-patch at ${ago(3).toISOString()}: counted against ebs.csi.aws.com's budget of 4 modifications per volume per 24h (the claim's ledger holds 1 in the window)`,
      },
    ]);
    await settle();
    await r.reconcile('db/data');
    await r.reconcile('db/data');
    expect(annotationPatches()).toHaveLength(1);
    expect(fake.noOpWrites).toEqual([]);
  });

  it("records each later change against the ledger's baseline, even one finished before pvx looked", async () => {
    resizeOutside('20Gi', ago(60));
    const r = await recorder();
    await r.reconcile('db/data');
    await settle();
    // The resize completes, then someone resizes again and that completes too, all unseen.
    const pvc = claim();
    fake.update(resources.persistentVolumeClaims, {
      ...pvc,
      metadata: { ...pvc.metadata, resourceVersion: undefined },
      status: { ...pvc.status, capacity: { storage: '20Gi' } },
    });
    resizeOutside('30Gi', ago(2));
    const grown = claim();
    fake.update(resources.persistentVolumeClaims, {
      ...grown,
      metadata: { ...grown.metadata, resourceVersion: undefined },
      status: { ...grown.status, capacity: { storage: '30Gi' } },
    });
    await settle();
    await r.reconcile('db/data');
    expect(readLedger(claim())?.mods.map((m) => [m.by, m.size])).toEqual([
      ['observed:kubectl-patch', ['10Gi', '20Gi']],
      ['observed:kubectl-patch', ['20Gi', '30Gi']],
    ]);
  });

  it('keeps no ledger for a driver without a budget, nor one configured without (--modification-budget DRIVER=none)', async () => {
    resizeOutside('20Gi');
    const pvc = claim();
    fake.update(resources.persistentVolumeClaims, {
      ...pvc,
      metadata: { ...pvc.metadata, resourceVersion: undefined },
      spec: { ...pvc.spec, storageClassName: 'local' },
    });
    const r = await recorder();
    await r.reconcile('db/data');
    await stopCaches();
    const ebsWithout = await recorder({ profiles: driverProfiles({ 'ebs.csi.aws.com': null }) });
    fake.update(resources.persistentVolumeClaims, {
      ...claim(),
      metadata: { ...claim().metadata, resourceVersion: undefined },
      spec: { ...claim().spec, storageClassName: 'gp3' },
    });
    await settle();
    await ebsWithout.reconcile('db/data');
    expect(annotationPatches()).toEqual([]);
  });

  it('writes nothing while not the leader', async () => {
    resizeOutside('20Gi');
    leader = false;
    const r = await recorder();
    await expect(r.reconcile('db/data')).rejects.toBeInstanceOf(RetryAfterError);
    expect(annotationPatches()).toEqual([]);
  });

  it('waits for the cache to show its own write', async () => {
    resizeOutside('20Gi');
    const r = await recorder();
    await stopCaches(); // the cache will not see the write
    await r.reconcile('db/data');
    expect(readLedger(claim())?.spec).toEqual({ size: '20Gi' });
    expect(await r.reconcile('db/data')).toEqual({ requeueAfterMs: staleCacheMs });
    expect(annotationPatches()).toHaveLength(1);
  });

  // Seed 1663 of the simulation: the cache lags, and the resize it shows under way on a claim with
  // no ledger moves the claim's status on (the resizer, the kubelet) until it is done. Deciding
  // again from the cache met 409 every time, until the cache showed the resize done: no trace.
  it("records a change the cache showed under way when only the claim's status moved on (409): from the API server's copy, even if the change is done", async () => {
    resizeOutside('20Gi');
    const r = await recorder();
    await stopCaches(); // the cache keeps what it had: 20Gi asked, 10Gi had
    const pvc = claim();
    fake.update(resources.persistentVolumeClaims, {
      ...pvc,
      metadata: { ...pvc.metadata, resourceVersion: undefined },
      status: { ...pvc.status, capacity: { storage: '20Gi' } },
    });
    expect(await r.reconcile('db/data')).toEqual({});
    expect(readLedger(claim())).toEqual({
      spec: { size: '20Gi' },
      mods: [{ at: ago(3).toISOString(), by: 'observed:kubectl-patch', size: ['10Gi', '20Gi'], timeFrom: 'managedFields' }],
    });
    expect(annotationPatches()).toHaveLength(2); // the refused one, and the write
    expect(fake.events.map((e) => e.reason)).toEqual(['ModificationObserved']);
  });

  it("decides again from the API server's copy when the claim's spec changed after the cache saw it (409)", async () => {
    resizeOutside('20Gi');
    const r = await recorder();
    await stopCaches(); // the cache keeps what it had: the claim at 20Gi
    resizeOutside('25Gi');
    await r.reconcile('db/data');
    expect(readLedger(claim())).toEqual({
      spec: { size: '25Gi' },
      mods: [{ at: ago(3).toISOString(), by: 'observed:kubectl-patch', size: ['10Gi', '25Gi'], timeFrom: 'managedFields' }],
    });
    expect(annotationPatches()).toHaveLength(2);
  });

  it("leaves a claim that changed again after the API server's copy to a later pass (409 twice), writing nothing", async () => {
    resizeOutside('20Gi');
    const r = await recorder();
    const conflict = new ApiError(409, 'Conflict', 'the object has been modified');
    fake.failNext('patchPvcAnnotations', conflict);
    fake.failNext('patchPvcAnnotations', conflict);
    await expect(r.reconcile('db/data')).rejects.toBeInstanceOf(ConflictError);
    expect(readLedger(claim())).toBeUndefined();
  });

  it('a refused ledger write (422) is retried with backoff, not dropped until the spec changes again', async () => {
    resizeOutside('20Gi');
    const r = await recorder();
    fake.failNext('patchPvcAnnotations', new ApiError(422, 'Invalid', 'metadata.annotations: Invalid value'));
    const failure = await r.reconcile('db/data').then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(classify(failure)).toEqual({ kind: 'backoff' });
    expect(String(failure)).toMatch(/refused the ledger annotation of db\/data \(422\)/);
    await r.reconcile('db/data');
    expect(readLedger(claim())?.spec).toEqual({ size: '20Gi' });
  });

  it("a claim event is worth a look when its size, class, ledger or binding changed, or a class change was taken up, not for a resize's status", () => {
    const pvc = claim();
    const status = { ...pvc, status: { ...pvc.status, allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' } } };
    expect(ClaimLedgerRecorder.worthALook(pvc, status)).toBe(false);
    expect(ClaimLedgerRecorder.worthALook(pvc, { ...pvc, spec: { ...pvc.spec, resources: { requests: { storage: '11Gi' } } } })).toBe(true);
    expect(ClaimLedgerRecorder.worthALook(pvc, { ...pvc, spec: { ...pvc.spec, volumeAttributesClassName: 'fast' } })).toBe(true);
    expect(ClaimLedgerRecorder.worthALook(pvc, { ...pvc, metadata: { ...pvc.metadata, annotations: { [pvcAnnotations.modifications]: '{}' } } })).toBe(true);
    expect(ClaimLedgerRecorder.worthALook(pvc, { ...pvc, status: { phase: 'Lost' } })).toBe(true);
    expect(
      ClaimLedgerRecorder.worthALook(pvc, {
        ...pvc,
        status: { ...pvc.status, modifyVolumeStatus: { targetVolumeAttributesClassName: 'fast', status: 'InProgress' } },
      }),
    ).toBe(true);
  });
});

describe('the budget, with the ledger kept on the claim', () => {
  const request = (name: string): VolumeExpansionRequest => ({
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: { name, namespace: 'db' },
    spec: { target: { pvcName: 'data' }, increment: '10Gi' },
  });
  const status = (name: string) => fake.get<VolumeExpansionRequest>(volumeExpansionRequests, 'db', name)?.status;
  /** The resizer and the kubelet finish the claim's resize. */
  function grow(): void {
    const pvc = claim();
    fake.update(resources.persistentVolumeClaims, {
      ...pvc,
      metadata: { ...pvc.metadata, resourceVersion: undefined },
      status: { ...pvc.status, capacity: { storage: pvc.spec?.resources?.requests?.storage as string } },
    });
  }

  it("pvx's own patch writes its entry in the same write as the size, and the recorder sees nothing to record after it", async () => {
    const harness = new RequestHarness(fake);
    fake.create(volumeExpansionRequests, request('grow'));
    const requests = await harness.reconciler({ now: () => now });
    const r = await recorder();
    await requests.reconcile('db/grow');
    expect(fake.calls.filter((c) => c.startsWith('patchPvc'))).toEqual(['patchPvcSize db/data']);
    expect(readLedger(claim())).toEqual({ spec: { size: '20Gi' }, mods: [{ at: now.toISOString(), by: 'ver/grow', size: ['10Gi', '20Gi'] }] });
    await settle();
    await r.reconcile('db/data');
    expect(annotationPatches()).toEqual([]);
    await harness.stopCaches();
  });

  it('holds a request back for changes made outside pvx, read back from the claim after a restart, and says how it counted', async () => {
    // Three resizes by kubectl within the hour, each recorded as it happened; then pvx restarts.
    let r = await recorder();
    for (const [size, minutes] of [
      ['20Gi', 50],
      ['30Gi', 40],
      ['40Gi', 30],
    ] as const) {
      resizeOutside(size, ago(minutes));
      await settle();
      await r.reconcile('db/data');
      await settle();
      grow();
      await settle();
    }
    await stopCaches();
    r = await recorder();
    await r.reconcile('db/data');
    expect(annotationPatches()).toHaveLength(3);

    // A request now: one modification left, pvx makes it.
    const harness = new RequestHarness(fake);
    fake.create(volumeExpansionRequests, request('grow-1'));
    const requests = await harness.reconciler({ now: () => now });
    await requests.reconcile('db/grow-1');
    expect(status('grow-1')).toMatchObject({ phase: 'Expanding', targetSize: '50Gi' });
    grow();
    await settle();
    await requests.reconcile('db/grow-1');
    expect(status('grow-1')?.phase).toBe('Completed');

    // A second one: the window is full.
    fake.create(volumeExpansionRequests, request('grow-2'));
    await settle();
    await requests.reconcile('db/grow-2');
    expect(status('grow-2')).toMatchObject({ phase: 'Pending', reason: 'ModificationBudgetExhausted' });
    expect(status('grow-2')?.message).toBe(
      `ebs.csi.aws.com allows 4 modifications per volume per 24h; data has 4 in the window (1 by pvx request, 3 observed: resized 10Gi → 20Gi by kubectl-patch at ${ago(50).toISOString()}; resized 20Gi → 30Gi by kubectl-patch at ${ago(40).toISOString()}; resized 30Gi → 40Gi by kubectl-patch at ${ago(30).toISOString()}); the next is allowed at ${new Date(ago(50).getTime() + 86_400_000).toISOString()}`,
    );
    expect(fake.calls.filter((c) => c.startsWith('patchPvcSize'))).toHaveLength(1);
    expect(fake.noOpWrites).toEqual([]);
    await harness.stopCaches();
  });
});

describe('a change no writer dates, not in the ledger yet', () => {
  // Simulation seed 2617610: a class changed by a writer no managedFields entry names, the claims'
  // cache behind the ledger that recorded it. Dated "now" at every look, the budget's message moved
  // with the clock: each status write woke the request, and it wrote again, eight times a second.
  it("is dated by the request reconciler's first sight of the claim as it is: its status is written once, not at every look", async () => {
    const four = [50, 40, 30].map((m, i) => ({ at: ago(m).toISOString(), by: 'observed:kubectl-patch', size: [`${10 + i * 10}Gi`, `${20 + i * 10}Gi`] }));
    const pvc = claim();
    fake.update(resources.persistentVolumeClaims, {
      ...pvc,
      metadata: {
        ...pvc.metadata,
        resourceVersion: undefined,
        managedFields: [],
        annotations: { [pvcAnnotations.modifications]: JSON.stringify({ spec: { size: '40Gi' }, mods: four }) },
      },
      // Raised by someone no managedFields entry names, and not recorded: no recorder runs here.
      spec: { ...pvc.spec, resources: { requests: { storage: '50Gi' } } },
      status: { ...pvc.status, capacity: { storage: '50Gi' } },
    });
    let clock = now;
    const harness = new RequestHarness(fake);
    fake.create(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow', namespace: 'db' },
      spec: { target: { pvcName: 'data' }, increment: '10Gi' },
    });
    const requests = await harness.reconciler({ now: () => clock });
    await requests.reconcile('db/grow');
    const written = fake.get<VolumeExpansionRequest>(volumeExpansionRequests, 'db', 'grow')?.status;
    expect(written).toMatchObject({ phase: 'Pending', reason: 'ModificationBudgetExhausted' });
    expect(written?.message).toContain(`resized 40Gi → 50Gi by unknown at ${now.toISOString()}`);
    const writes = () => fake.calls.filter((c) => c.startsWith('patchRequestStatus')).length;
    const before = writes();
    for (const seconds of [1, 2, 30]) {
      clock = new Date(now.getTime() + seconds * 1000);
      await settle();
      await requests.reconcile('db/grow');
    }
    expect(writes()).toBe(before);
    expect(fake.get<VolumeExpansionRequest>(volumeExpansionRequests, 'db', 'grow')?.status?.message).toBe(written?.message);
    await harness.stopCaches();
  });
});

describe('ledgerClassEvents', () => {
  // Seed 1313: a claim of an EBS class was raised by hand while its StorageClass was deleted (no
  // class, no budget: nothing to count), and the class was created again; no claim event came
  // after, so the raise went uncounted until the next resync, ten minutes on.
  it('a class created (again) enqueues the claims of that class: what they show is counted against its driver’s budget', () => {
    const keys: string[] = [];
    const claims: Record<string, string[]> = { ebs: ['db/data-0', 'web/data'], other: ['db/x'] };
    const h = ledgerClassEvents(
      (k) => keys.push(k),
      (className) => claims[className] ?? [],
    );
    h.onAdd?.({ metadata: { name: 'ebs' }, provisioner: 'ebs.csi.aws.com' });
    expect(keys).toEqual(['db/data-0', 'web/data']);
  });
});
