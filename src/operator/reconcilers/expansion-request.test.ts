import type { V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { FakeKubeClient } from '../../k8s/testing/fake-client.ts';
import { resources, volumeExpansionRequests } from '../../k8s/resources.ts';
import { ConflictError } from '../runtime/errors.ts';
import { crashAfterNextPatch, RequestHarness, settle } from './request-harness.testing.ts';
import { requestEvents } from './expansion-request.ts';
import { RetryAfterError } from '../../k8s/errors.ts';

let fake: FakeKubeClient;
let harness: RequestHarness;
let leader = true;

const reconcilerWithCaches = (now = () => new Date('2026-11-29T12:00:00Z')) => harness.reconciler({ canWrite: () => leader, now });
/** Stops the caches' watches (keeping their contents): later writes reach the API, not the cache. */
const freezeCaches = () => harness.stopCaches();

beforeEach(() => {
  fake = new FakeKubeClient();
  harness = new RequestHarness(fake);
  leader = true;
  fake.create(resources.storageClasses, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'fast' },
    provisioner: 'hostpath.pvx.dev',
    allowVolumeExpansion: true,
  } as V1StorageClass);
  fake.create(resources.storageClasses, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'fixed' },
    provisioner: 'hostpath.pvx.dev',
    allowVolumeExpansion: true,
  } as V1StorageClass);
  for (const [name, sc] of [
    ['data', 'fast'],
    ['other', 'fixed'],
  ]) {
    fake.create(resources.persistentVolumeClaims, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace: 'db' },
      spec: { storageClassName: sc, resources: { requests: { storage: '1Gi' } } },
      status: { phase: 'Bound', capacity: { storage: '1Gi' } },
    } as V1PersistentVolumeClaim);
  }
  fake.create(volumeExpansionRequests, {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: { name: 'grow', namespace: 'db' },
    spec: { target: { pvcName: 'data' }, size: '2Gi' },
  } as VolumeExpansionRequest);
});

afterEach(() => harness.stopCaches());

const pvcPatches = () => fake.calls.filter((c) => c.startsWith('patchPvcSize'));

const request = () => fake.get<VolumeExpansionRequest>(volumeExpansionRequests, 'db', 'grow') as VolumeExpansionRequest;

describe('ExpansionRequestReconciler', () => {
  it('patches the claim once, with the request UID and previous capacity in the same write', async () => {
    const r = await reconcilerWithCaches();
    await r.reconcile('db/grow');
    const pvc = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data');
    expect(pvc?.spec?.resources?.requests?.storage).toBe('2Gi');
    expect(pvc?.metadata?.annotations).toMatchObject({
      'pvx.dev/request-uid': request().metadata.uid,
      'pvx.dev/previous-capacity': '1Gi',
      'pvx.dev/target-size': '2Gi',
    });
    expect(request().status).toMatchObject({ phase: 'Expanding', fromCapacity: '1Gi', targetSize: '2Gi' });
    await settle();
    await r.reconcile('db/grow');
    await r.reconcile('db/grow');
    expect(pvcPatches()).toHaveLength(1);
  });

  it('never patches twice after a crash between the PVC patch and the status write', async () => {
    const first = await reconcilerWithCaches();
    crashAfterNextPatch(fake);
    await expect(first.reconcile('db/grow')).rejects.toThrow('process killed here');
    expect(pvcPatches()).toHaveLength(1);
    expect(request().status?.timeline?.patchedAt).toBeUndefined(); // the status write was lost
    await harness.stopCaches();

    const restarted = await reconcilerWithCaches(); // fresh caches, as after a restart
    await restarted.reconcile('db/grow');
    expect(pvcPatches()).toHaveLength(1);
    expect(request().status).toMatchObject({ targetSize: '2Gi', fromCapacity: '1Gi' });
  });

  it('turns a 409 on the claim into a ConflictError (requeue), leaving the claim as it was', async () => {
    const r = await reconcilerWithCaches();
    await freezeCaches();
    // Someone else writes the claim after the cache saw it.
    const pvc = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
    fake.update(resources.persistentVolumeClaims, { ...pvc, metadata: { ...pvc.metadata, labels: { touched: 'yes' } } });
    await expect(r.reconcile('db/grow')).rejects.toBeInstanceOf(ConflictError);
    expect(fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data')?.spec?.resources?.requests?.storage).toBe('1Gi');
  });

  it('rejects with the API server’s message when admission refuses the patch', async () => {
    // The cache still believes the class allows expansion; the API server knows better.
    const r = await reconcilerWithCaches();
    await freezeCaches();
    fake.update(resources.storageClasses, { ...(fake.get(resources.storageClasses, undefined, 'fast') as V1StorageClass), allowVolumeExpansion: false });
    await r.reconcile('db/grow');
    expect(request().status).toMatchObject({ phase: 'Rejected', reason: 'AdmissionDenied' });
    expect(request().status?.message).toMatch(/storageclass that provisions the pvc must support resize/);
    expect(fake.events.map((e) => `${e.type} ${e.reason}`)).toContain('Warning AdmissionDenied');
  });

  it('does not write while not the leader', async () => {
    leader = false;
    const r = await reconcilerWithCaches();
    await expect(r.reconcile('db/grow')).rejects.toBeInstanceOf(RetryAfterError);
    expect(pvcPatches()).toHaveLength(0);
  });

  it('writes status and events only on change', async () => {
    const r = await reconcilerWithCaches();
    await r.reconcile('db/grow');
    await settle();
    const writes = () => fake.calls.filter((c) => c.startsWith('patchRequestStatus')).length;
    const before = writes();
    await r.reconcile('db/grow');
    await settle();
    await r.reconcile('db/grow');
    expect(writes()).toBe(before);
  });
});

describe('ttlSecondsAfterFinished', () => {
  it('keeps a finished request until its TTL passes, then deletes it', async () => {
    let now = new Date('2026-11-29T12:00:00Z');
    const req = request();
    fake.update(volumeExpansionRequests, {
      ...req,
      metadata: { ...req.metadata, resourceVersion: undefined },
      spec: { ...req.spec, ttlSecondsAfterFinished: 60 },
    });
    const r = await reconcilerWithCaches(() => now);
    await r.reconcile('db/grow'); // patched
    const pvc = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
    fake.update(resources.persistentVolumeClaims, { ...pvc, status: { ...pvc.status, capacity: { storage: '2Gi' } } });
    await settle();
    await r.reconcile('db/grow'); // completed
    expect(request().status?.phase).toBe('Completed');
    await settle();
    expect(await r.reconcile('db/grow')).toEqual({ requeueAfterMs: 60_000 });
    now = new Date(now.getTime() + 60_000);
    await r.reconcile('db/grow');
    expect(fake.get(volumeExpansionRequests, 'db', 'grow')).toBeUndefined();
  });

  it('keeps finished requests without a TTL forever', async () => {
    const r = await reconcilerWithCaches();
    const req = request();
    fake.update(volumeExpansionRequests, {
      ...req,
      metadata: { ...req.metadata, resourceVersion: undefined },
      status: { phase: 'Rejected', phaseSince: '2020-01-01T00:00:00Z' },
    });
    await settle();
    expect(await r.reconcile('db/grow')).toEqual({});
    expect(fake.get(volumeExpansionRequests, 'db', 'grow')).toBeDefined();
  });
});

describe('requestEvents', () => {
  const req = (name: string, phase?: 'Completed' | 'Expanding', parent?: string): VolumeExpansionRequest => ({
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: { name, namespace: 'db', ...(parent ? { labels: { 'pvx.dev/parent-request': parent } } : {}) },
    spec: { target: { pvcName: 'data' }, size: '2Gi' },
    ...(phase ? { status: { phase } } : {}),
  });
  const added = (event: (h: ReturnType<typeof requestEvents>) => void) => {
    const keys: string[] = [];
    event(
      requestEvents(
        (k) => keys.push(k),
        () => ['db/waiting'],
      ),
    );
    return keys;
  };

  it('a deleted request is enqueued (its memory dropped), with its parent and the requests waiting for its claim', () => {
    expect(added((h) => h.onDelete?.(req('grow-0', 'Expanding', 'grow')))).toEqual(['db/grow-0', 'db/grow', 'db/waiting']);
  });

  it('an update enqueues the request; a finished one frees its claim for the next', () => {
    expect(added((h) => h.onUpdate?.(req('a', 'Expanding'), req('a', 'Expanding')))).toEqual(['db/a']);
    expect(added((h) => h.onUpdate?.(req('a', 'Expanding'), req('a', 'Completed')))).toEqual(['db/a', 'db/waiting']);
  });
});
