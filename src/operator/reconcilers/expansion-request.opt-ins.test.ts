// The two opt-ins end to end through the reconciler, with its real caches over the in-memory API
// server: a StatefulSet request that carries its size into the template (and a crash between the
// StatefulSet's deletion and its creation), and a request that evicts the pod of a claim whose
// driver grows filesystems only offline (a PodDisruptionBudget that first refuses).
import type {
  KubernetesObject,
  V1ConfigMap,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodDisruptionBudget,
  V1StatefulSet,
  V1StorageClass,
} from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { FakeKubeClient, podDisruptionBudgets } from '../../k8s/testing/fake-client.ts';
import { ApiError } from '../../k8s/errors.ts';
import { NotLeaderError } from '../../k8s/fenced-client.ts';
import { pvcAnnotations } from '../../crds/keys.ts';
import { namespaces, resources, volumeExpansionRequests } from '../../k8s/resources.ts';
import type { ExpansionRequestReconciler } from './expansion-request.ts';
import { RequestHarness, recordNamespace, settle } from './request-harness.testing.ts';
import { staleCacheMs, UnseenCreates } from './unseen-writes.ts';
import type { StatefulSetRecordKeeper } from './statefulset-records.ts';

const t0 = new Date('2026-11-29T12:00:00.000Z');
let fake: FakeKubeClient;
let harness: RequestHarness;
let clock = t0;
const advance = (ms: number) => {
  clock = new Date(clock.getTime() + ms);
  vi.setSystemTime(clock);
};
const reconciler = () => harness.reconciler({ now: () => clock, monotonicMs: () => clock.getTime() });

const readRequest = (name: string) => fake.get<VolumeExpansionRequest>(volumeExpansionRequests, 'db', name) as VolumeExpansionRequest;
const readSts = () => fake.get<V1StatefulSet>(resources.statefulSets, 'db', 'web');
const pods = () => fake.snapshot<V1Pod>(resources.pods);
const records = () => fake.snapshot<V1ConfigMap>(resources.statefulSetRecords);

function claim(name: string): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'db' },
    spec: { storageClassName: 'fast', resources: { requests: { storage: '1Gi' } } },
    status: { phase: 'Bound', capacity: { storage: '1Gi' } },
  };
}

function pod(name: string, claimName: string, ownerUID: string): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'db',
      labels: { app: 'web' },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: ownerUID, controller: true }],
    },
    spec: { containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

/** A StatefulSet web of two replicas at template size 1Gi, its claims and its running pods. */
function workload(): V1StatefulSet {
  const sts = fake.create(resources.statefulSets, {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'web', namespace: 'db', generation: 1 },
    spec: {
      replicas: 2,
      serviceName: 'web',
      selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
      volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
    },
    status: { replicas: 2, observedGeneration: 1, currentRevision: 'web-1', updateRevision: 'web-1' },
  } as V1StatefulSet);
  for (const i of [0, 1]) {
    fake.create(resources.persistentVolumeClaims, claim(`data-web-${i}`));
    fake.create(resources.pods, pod(`web-${i}`, `data-web-${i}`, sts.metadata?.uid as string));
  }
  return sts;
}

/** The resizer and the kubelet, as a driver that grows online: a claim asking for more grows to it. */
function growClaims(): void {
  for (const c of fake.snapshot<V1PersistentVolumeClaim>(resources.persistentVolumeClaims)) {
    const spec = c.spec?.resources?.requests?.storage;
    if (spec && spec !== c.status?.capacity?.storage)
      fake.update(resources.persistentVolumeClaims, {
        ...c,
        metadata: { ...c.metadata, resourceVersion: undefined },
        status: { ...c.status, capacity: { storage: spec } },
      });
  }
}

/** Reconciles every request (and, with a keeper, every StatefulSet record), lets the other actors act, again, until `done` or the rounds run out. */
async function run(
  r: ExpansionRequestReconciler,
  done: () => boolean,
  actors: () => void = () => undefined,
  rounds = 40,
  keeper?: StatefulSetRecordKeeper,
): Promise<void> {
  for (let i = 0; i < rounds && !done(); i++) {
    for (const req of fake.snapshot<VolumeExpansionRequest>(volumeExpansionRequests)) {
      await r.reconcile(`db/${req.metadata.name}`).catch(() => undefined);
      await settle();
    }
    for (const cm of keeper ? records() : []) {
      await keeper?.reconcile(`${recordNamespace}/${cm.metadata?.name}`).catch(() => undefined);
      await settle();
    }
    actors();
    await settle();
    advance(2000);
  }
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] });
  clock = t0;
  vi.setSystemTime(clock);
  fake = new FakeKubeClient();
  harness = new RequestHarness(fake);
  fake.create(namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'db' } });
  fake.create(resources.storageClasses, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'fast' },
    provisioner: 'hostpath.pvx.dev',
    allowVolumeExpansion: true,
  } as V1StorageClass);
});

afterEach(async () => {
  await harness.stopCaches();
  vi.useRealTimers();
});

/** The workload, and a request growing every claim of StatefulSet web (no template step). */
function growAllOfWeb(name: string): void {
  workload();
  fake.create(volumeExpansionRequests, {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: { name, namespace: 'db' },
    spec: { target: { statefulSetName: 'web', volumeClaimTemplate: 'data' }, size: '2Gi' },
  } as VolumeExpansionRequest);
}

// Simulation seed 55622: a requests' cache 18 s behind showed a StatefulSet request accepted and
// its claims pinned, not yet its children — which had been made, and taken by the garbage
// collector with their deleted parent: pvx made them again, to grow the claims once more.
it('makes no children from a parent its cache shows behind the API server', async () => {
  growAllOfWeb('fan');
  const r = await reconciler();
  await r.reconcile('db/fan');
  await settle();
  expect(readRequest('fan').status?.targets?.length).toBeGreaterThan(0);
  expect(fake.calls.filter((c) => c.startsWith('createRequest'))).toEqual([]);
  await harness.stopCache(volumeExpansionRequests);
  fake.delete(volumeExpansionRequests, 'db', 'fan');
  await r.reconcile('db/fan').catch(() => undefined);
  expect(fake.calls.filter((c) => c.startsWith('createRequest'))).toEqual([]);
});

// Simulation seed 701694: a first child patched its claim, the parent's record of it was lost
// with its leader, a person deleted the child, and the claims' cache (its watch silent) still
// showed the claim untouched: the next leader made the child again.
it('makes no child whose claim, as the API server has it, shows a child of that name at work (a claims cache behind)', async () => {
  growAllOfWeb('fan');
  const r = await reconciler();
  await r.reconcile('db/fan');
  await settle();
  expect(readRequest('fan').status?.targets?.length).toBeGreaterThan(0);
  await harness.stopCache(resources.persistentVolumeClaims);
  const patched = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data-web-0') as V1PersistentVolumeClaim;
  fake.update(resources.persistentVolumeClaims, { ...patched, metadata: { ...patched.metadata, annotations: { [pvcAnnotations.request]: 'fan-0' } } });
  await expect(r.reconcile('db/fan')).rejects.toThrow(/claim data-web-0 shows request fan-0 at work on it/);
  expect(fake.calls.filter((c) => c.startsWith('createRequest'))).toEqual([]);
});

// Simulation seed 1366: a child's ADDED event lost, the cache never showed it, and nothing
// reconciled it until the next relist: its deadline not held.
it('reads a child the cache never showed from the API server once it should have: it is decided all the same', async () => {
  growAllOfWeb('fan');
  const woken: string[] = [];
  const r = await harness.reconciler({
    now: () => clock,
    monotonicMs: () => clock.getTime(),
    ownCreates: new UnseenCreates<VolumeExpansionRequest>(10 * 60_000),
    wakeAfter: (key) => woken.push(key),
  });
  await r.reconcile('db/fan');
  await settle();
  await harness.stopCache(volumeExpansionRequests);
  await r.reconcile('db/fan').catch(() => undefined);
  expect(readRequest('fan-0')).toBeDefined();
  expect(woken).toContain('db/fan-0');
  await r.reconcile('db/fan-0');
  expect(readRequest('fan-0').status).toBeUndefined();
  advance(staleCacheMs + 1000);
  await r.reconcile('db/fan-0');
  expect(readRequest('fan-0').status?.phase).toBeDefined();
});

describe('spec.statefulSetTemplate.update', () => {
  function growWeb(): void {
    fake.create(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow', namespace: 'db' },
      spec: { target: { statefulSetName: 'web', volumeClaimTemplate: 'data' }, size: '2Gi', statefulSetTemplate: { update: true } },
    } as VolumeExpansionRequest);
  }
  const finished = () => readRequest('grow')?.status?.phase === 'Completed' && records().length === 0;
  /** The claims grow until pvx deletes the StatefulSet; then the garbage collector works until the request completes. */
  const untilTemplateStepEnds = async (r: ExpansionRequestReconciler, keeper: StatefulSetRecordKeeper) => {
    await run(r, () => readSts()?.metadata?.deletionTimestamp !== undefined, growClaims, 40, keeper);
    await run(
      r,
      () => readRequest('grow')?.status?.phase === 'Completed',
      () => fake.collectGarbage(),
      40,
      keeper,
    );
  };
  /** A reconciler and the record keeper over the same caches, as `pvx run` wires them. */
  const both = async () => {
    const r = await reconciler();
    return { r, keeper: await harness.keeper({ now: () => clock }) };
  };

  it('grows every claim, then re-creates the StatefulSet with the new size from a record in pvx’s namespace: its pods untouched, the record gone', async () => {
    const before = workload();
    const podUIDs = pods().map((p) => p.metadata?.uid);
    growWeb();
    const { r, keeper } = await both();
    await run(r, finished, () => (growClaims(), fake.collectGarbage()), 40, keeper);
    const req = readRequest('grow');
    expect(req.status).toMatchObject({
      phase: 'Completed',
      reason: 'Completed',
      statefulSetTemplate: {
        phase: 'Updated',
        reason: 'Recreated',
        fromSize: '1Gi',
        toSize: '2Gi',
        recordName: `${recordNamespace}/pvx-sts-${req.metadata.uid}`,
      },
    });
    expect(req.status?.conditions).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'TemplateUpdated', status: 'True' })]));
    expect(req.metadata.finalizers ?? []).toEqual([]);
    const after = readSts() as V1StatefulSet;
    expect(after.metadata?.uid).not.toBe(before.metadata?.uid);
    expect(req.status?.statefulSetTemplate?.recreatedUID).toBe(after.metadata?.uid);
    expect(after.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage).toBe('2Gi');
    expect(after.spec?.template).toEqual(before.spec?.template);
    expect(after.metadata?.annotations).toMatchObject({ 'pvx.dev/template-request': 'grow' });
    // Orphaned, never deleted: the same pods (the StatefulSet controller adopts them).
    expect(pods().map((p) => p.metadata?.uid)).toEqual(podUIDs);
    expect(
      fake.calls.filter((c) =>
        /^(patchRequestFinalizers|getStatefulSet|deleteStatefulSetOrphan|createStatefulSet|createRecord|updateRecord|deleteRecord) /.test(c),
      ),
    ).toEqual([
      'getStatefulSet db/web',
      `createRecord ${recordNamespace}/pvx-sts-${req.metadata.uid}`,
      `updateRecord ${recordNamespace}/pvx-sts-${req.metadata.uid}`,
      'deleteStatefulSetOrphan db/web',
      `updateRecord ${recordNamespace}/pvx-sts-${req.metadata.uid}`,
      'createStatefulSet db/web',
      `updateRecord ${recordNamespace}/pvx-sts-${req.metadata.uid}`,
      `deleteRecord ${recordNamespace}/pvx-sts-${req.metadata.uid}`,
    ]);
  });

  it('pvx killed between the delete and the create: the next process creates it again from the record', async () => {
    workload();
    growWeb();
    const del = fake.deleteStatefulSetOrphan.bind(fake);
    fake.deleteStatefulSetOrphan = async (...args) => {
      fake.deleteStatefulSetOrphan = del;
      await del(...args);
      throw new Error('process killed here');
    };
    const first = await both();
    await run(first.r, () => readSts()?.metadata?.deletionTimestamp !== undefined, growClaims, 40, first.keeper);
    expect(readRequest('grow').status?.statefulSetTemplate).toMatchObject({ phase: 'Recorded' });
    await harness.stopCaches();
    // The garbage collector finishes while no pvx runs: the StatefulSet is gone.
    fake.collectGarbage();
    expect(readSts()).toBeUndefined();
    // A new process: it knows only what the API server has.
    const second = await both();
    await run(second.r, finished, () => fake.collectGarbage(), 40, second.keeper);
    expect(readSts()?.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage).toBe('2Gi');
    expect(readRequest('grow').status).toMatchObject({ phase: 'Completed', statefulSetTemplate: { phase: 'Updated', reason: 'Recreated' } });
    expect(fake.calls.filter((c) => c.startsWith('createStatefulSet'))).toHaveLength(1);
  });

  // Simulation seed 914: every pvx process stalled while the namespace was deleted and created
  // again; the namespaces' cache, behind, still showed the old one, and the StatefulSet was created
  // in the new namespace — perhaps another tenant's.
  it('creates nothing in a namespace of the name created since the record was made, though the namespaces’ cache shows the old one', async () => {
    workload();
    growWeb();
    const { r, keeper } = await both();
    await run(r, () => readSts()?.metadata?.deletionTimestamp !== undefined, growClaims, 40, keeper);
    await harness.stopCache(namespaces);
    fake.collectGarbage();
    const old = fake.get<KubernetesObject>(namespaces, undefined, 'db') as KubernetesObject;
    fake.delete(namespaces, undefined, 'db');
    fake.create(namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'db' } });
    expect(fake.get<KubernetesObject>(namespaces, undefined, 'db')?.metadata?.uid).not.toBe(old.metadata?.uid);
    await run(
      r,
      () => records().every((cm) => /Abandoned/.test(JSON.stringify(cm.data))),
      () => fake.collectGarbage(),
      20,
      keeper,
    );
    expect(fake.calls.filter((c) => c.startsWith('createStatefulSet'))).toEqual([]);
    expect(JSON.stringify(records()[0]?.data)).toMatch(/NamespaceDeleted/);
  });

  // Review, 2026-12-04: the record was guarded only by a finalizer on the request, which any
  // namespace editor may remove; removed between the delete and the create, the StatefulSet was
  // never created again and its pods ran with no controller.
  it('a namespace editor deleting the request (its finalizers removed) between the delete and the create does not lose the StatefulSet', async () => {
    workload();
    growWeb();
    const { r, keeper } = await both();
    await run(r, () => readSts()?.metadata?.deletionTimestamp !== undefined, growClaims, 40, keeper);
    expect(readSts()?.metadata?.deletionTimestamp).toBeDefined();
    const req = readRequest('grow');
    expect(req.metadata.finalizers ?? []).toEqual([]);
    fake.update(volumeExpansionRequests, { ...req, metadata: { ...req.metadata, resourceVersion: undefined, finalizers: undefined } });
    fake.delete(volumeExpansionRequests, 'db', 'grow');
    expect(readRequest('grow')).toBeUndefined();
    await run(
      r,
      () => records().length === 0,
      () => fake.collectGarbage(),
      40,
      keeper,
    );
    expect(readSts()?.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage).toBe('2Gi');
    expect(readSts()?.metadata?.deletionTimestamp).toBeUndefined();
  });

  // Review, 2026-12-04: an edit made while the StatefulSet was being deleted (it lives on with a
  // deletionTimestamp until the garbage collector lets it go) was reverted by the re-create.
  it('an edit its owner made between pvx’s delete and the re-create is kept', async () => {
    workload();
    growWeb();
    const { r, keeper } = await both();
    await run(r, () => readSts()?.metadata?.deletionTimestamp !== undefined, growClaims, 40, keeper);
    const deleting = readSts() as V1StatefulSet;
    const edited = structuredClone(deleting);
    (edited.spec?.template.spec?.containers[0] as { image: string }).image = 'busybox:1.37';
    fake.update(resources.statefulSets, { ...edited, metadata: { ...edited.metadata, resourceVersion: undefined, labels: { tier: 'gold' } } });
    await run(r, finished, () => fake.collectGarbage(), 40, keeper);
    expect(readSts()?.spec?.template.spec?.containers[0]?.image).toBe('busybox:1.37');
    expect(readSts()?.metadata?.labels).toEqual({ tier: 'gold' });
    expect(readSts()?.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage).toBe('2Gi');
  });

  // Review, 2026-12-04: a StatefulSet its owner deleted (here a foreground cascade) while pvx held
  // a record it had not acted on was created again.
  it('a StatefulSet its owner deletes while pvx holds a record it has not acted on is never created again', async () => {
    workload();
    growWeb();
    const { r, keeper } = await both();
    await run(r, () => records().length > 0, growClaims, 40);
    expect(records()).toHaveLength(1);
    fake.delete(resources.statefulSets, 'db', 'web', 'Foreground');
    await run(r, finished, () => fake.collectGarbage(), 40, keeper);
    expect(readRequest('grow').status).toMatchObject({
      phase: 'Completed',
      reason: 'TemplateNotUpdated',
      statefulSetTemplate: { phase: 'Skipped', reason: 'DeletedByOwner' },
    });
    expect(fake.calls.filter((c) => /^(deleteStatefulSetOrphan|createStatefulSet) /.test(c))).toEqual([]);
  });

  // Simulation seed 51433: its owner's orphaning delete landed between pvx's "Deleting" and pvx's
  // own delete (refused then: 409), and writing that down failed once; the deletion was then read
  // as pvx's own whose answer was lost, and the StatefulSet created again.
  it('an owner’s orphaning delete just before pvx’s own is never taken for pvx’s, even when writing that down fails', async () => {
    workload();
    growWeb();
    const del = fake.deleteStatefulSetOrphan.bind(fake);
    fake.deleteStatefulSetOrphan = async (...args) => {
      fake.deleteStatefulSetOrphan = del;
      fake.delete(resources.statefulSets, 'db', 'web', 'Orphan');
      const update = fake.updateRecord.bind(fake);
      fake.updateRecord = async () => {
        fake.updateRecord = update;
        throw new ApiError(503, 'ServiceUnavailable', 'the server is currently unable to handle the request');
      };
      return del(...args);
    };
    const { r, keeper } = await both();
    await untilTemplateStepEnds(r, keeper);
    expect(readSts()).toBeUndefined();
    expect(readRequest('grow').status).toMatchObject({ statefulSetTemplate: { phase: 'Skipped', reason: 'DeletedByOwner' } });
    expect(fake.calls.filter((c) => c.startsWith('createStatefulSet'))).toEqual([]);
  });

  // Simulation seed 4380: a record keeper whose records' cache was behind its own "Recreated" read
  // the record as still Deleting and, the new StatefulSet deleted by its owner meanwhile, created it
  // once more from the first one's history.
  it('creates nothing from a record its cache shows behind pvx’s own last write of it', async () => {
    workload();
    growWeb();
    const { r, keeper } = await both();
    await run(r, () => readSts()?.metadata?.deletionTimestamp !== undefined, growClaims, 40, keeper);
    const cache = harness.records();
    const behind = cache.get(`${recordNamespace}/${records()[0]?.metadata?.name}`) as V1ConfigMap;
    expect(behind.data?.['step.json']).toContain('Deleting');
    await run(
      r,
      () => readSts() !== undefined && !readSts()?.metadata?.deletionTimestamp,
      () => fake.collectGarbage(),
      40,
      keeper,
    );
    expect(fake.calls.filter((c) => c.startsWith('createStatefulSet'))).toHaveLength(1);
    // Its owner deletes the new one; a keeper reading the record as it was before "Recreated".
    fake.delete(resources.statefulSets, 'db', 'web');
    fake.collectGarbage();
    const staleRecords = new Proxy(cache, { get: (t, p) => (p === 'get' ? () => behind : Reflect.get(t, p, t)) as unknown });
    const lagging = await harness.keeper({ now: () => clock, records: staleRecords });
    await lagging.reconcile(`${recordNamespace}/${behind.metadata?.name}`).catch(() => undefined);
    await settle();
    expect(fake.calls.filter((c) => c.startsWith('createStatefulSet'))).toHaveLength(1);
    expect(readSts()).toBeUndefined();
  });

  // Simulation seed 1655911: the records' watch lost pvx's own update of a record, and for a minute
  // every look at it was a conflict; the backoff those conflicts added up then held the record's
  // deletion a quarter of an hour after its request was gone. A stale copy is now decided again
  // from the API server's record within the same look.
  it('decides again from the API server’s record when its cache is behind pvx’s own last write of it', async () => {
    workload();
    growWeb();
    const cache = harness.records();
    const { r, keeper } = await both();
    await run(r, () => readSts()?.metadata?.deletionTimestamp !== undefined, growClaims, 40, keeper);
    fake.collectGarbage();
    // The record as the cache had it before pvx's "Deleting": an older version, Recorded.
    const now = records()[0] as V1ConfigMap;
    const step = JSON.parse(now.data?.['step.json'] ?? '{}') as Record<string, unknown>;
    const recorded: V1ConfigMap = {
      ...now,
      metadata: { ...now.metadata, resourceVersion: '1' },
      data: { ...now.data, 'step.json': JSON.stringify({ ...step, phase: 'Recorded', reason: 'Recorded', deletedResourceVersion: undefined }) },
    };
    expect(readSts()).toBeUndefined();
    // A keeper whose records' cache still shows the record as it was before pvx's delete.
    const staleRecords = new Proxy(cache, { get: (t, p) => (p === 'get' ? () => recorded : Reflect.get(t, p, t)) as unknown });
    const lagging = await harness.keeper({ now: () => clock, records: staleRecords });
    await lagging.reconcile(`${recordNamespace}/${recorded.metadata?.name}`);
    expect(readSts()?.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage).toBe('2Gi');
  });

  // Simulation seed 252273: a refused delete (403) ended the record Abandoned; a keeper whose
  // records' cache still showed it Deleting found "Deleting" unchanged, wrote nothing, deleted the
  // StatefulSet all the same — and the Abandoned record was let go: the StatefulSet lost.
  it('deletes nothing on a record its cache shows behind pvx’s own last write of it', async () => {
    workload();
    growWeb();
    const del = fake.deleteStatefulSetOrphan.bind(fake);
    const cache = harness.records();
    let deleting: V1ConfigMap | undefined;
    fake.deleteStatefulSetOrphan = async () => {
      fake.deleteStatefulSetOrphan = del;
      deleting = records()[0];
      throw new ApiError(403, 'Forbidden', 'statefulsets "web" is forbidden');
    };
    const { r, keeper } = await both();
    await run(r, () => deleting !== undefined && JSON.stringify(records()[0]?.data).includes('Abandoned'), growClaims, 40, keeper);
    expect(deleting?.data?.['step.json']).toContain('Deleting');
    const staleRecords = new Proxy(cache, { get: (t, p) => (p === 'get' ? () => deleting : Reflect.get(t, p, t)) as unknown });
    const lagging = await harness.keeper({ now: () => clock, records: staleRecords });
    await lagging.reconcile(`${recordNamespace}/${deleting?.metadata?.name}`).catch(() => undefined);
    await settle();
    expect(fake.calls.filter((c) => c.startsWith('deleteStatefulSetOrphan'))).toEqual([]);
    expect(readSts()?.metadata?.deletionTimestamp).toBeUndefined();
  });

  // Simulation seed 401169: writing the version pvx's delete left failed (409), and the history
  // read from the older recorded version was compacted: FinalStateUnknown, though the history since
  // pvx's delete was whole.
  it('reads how the StatefulSet went from where pvx’s own delete left it, even when writing that version failed', async () => {
    workload();
    growWeb();
    const del = fake.deleteStatefulSetOrphan.bind(fake);
    fake.deleteStatefulSetOrphan = async (...args) => {
      fake.deleteStatefulSetOrphan = del;
      fake.compact();
      const left = await del(...args);
      // The garbage collector lets it go before pvx looks again: no deleting version left to read.
      fake.collectGarbage();
      const update = fake.updateRecord.bind(fake);
      fake.updateRecord = async () => {
        fake.updateRecord = update;
        throw new ApiError(409, 'Conflict', 'Operation cannot be fulfilled: the object has been modified');
      };
      return left;
    };
    const { r, keeper } = await both();
    await run(r, () => readSts()?.metadata?.deletionTimestamp !== undefined, growClaims, 40, keeper);
    await run(r, finished, () => fake.collectGarbage(), 40, keeper);
    expect(readSts()?.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage).toBe('2Gi');
    expect(readRequest('grow').status).toMatchObject({ statefulSetTemplate: { phase: 'Updated', reason: 'Recreated' } });
  });

  /** The record keeper's first look at its record, just before its delete, fails (after `meanwhile`); says whether it came. */
  function failFirstRecordLook(meanwhile: () => void = () => undefined): () => boolean {
    let looked = false;
    const list = fake.list.bind(fake);
    fake.list = (async (type: Parameters<typeof fake.list>[0], opts: Parameters<typeof fake.list>[1]) => {
      if (!looked && type.resource === 'configmaps' && opts?.fieldSelector) {
        looked = true;
        meanwhile();
        throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      }
      return list(type, opts);
    }) as typeof fake.list;
    return () => looked;
  }

  // Simulation seed 706586: the record's read just before pvx's delete failed, so no delete was
  // sent; its owner's orphaning delete came meanwhile and was taken for pvx's own.
  it('a deletion seen before pvx sent its own delete is its owner’s, also when the look before it failed', async () => {
    workload();
    growWeb();
    const del = fake.deleteStatefulSetOrphan.bind(fake);
    const looked = failFirstRecordLook(() => fake.delete(resources.statefulSets, 'db', 'web', 'Orphan'));
    const { r, keeper } = await both();
    await untilTemplateStepEnds(r, keeper);
    expect(looked()).toBe(true);
    expect(fake.calls.filter((c) => c.startsWith('createStatefulSet'))).toEqual([]);
    expect(readRequest('grow').status).toMatchObject({ statefulSetTemplate: { phase: 'Skipped', reason: 'DeletedByOwner' } });
    fake.deleteStatefulSetOrphan = del;
  });

  // Simulation seed 2082956: its owner's orphaning delete landed just before pvx's, whose answer was
  // a 503 (the delete not applied, as pvx cannot know): the deletion was taken for pvx's own whose
  // answer was lost, and the StatefulSet was created again once the garbage collector let it go.
  it('a deletion that began before pvx sends its delete is its owner’s, also when the delete’s answer is lost', async () => {
    workload();
    growWeb();
    const del = fake.deleteStatefulSetOrphan.bind(fake);
    let ownerDeleted = false;
    const list = fake.list.bind(fake);
    fake.list = (async (type: Parameters<typeof fake.list>[0], opts: Parameters<typeof fake.list>[1]) => {
      // The owner deletes as the keeper looks at its record, just before its own delete.
      if (!ownerDeleted && type.resource === 'configmaps' && opts?.fieldSelector && fake.calls.some((c) => c.startsWith('createRecord'))) {
        ownerDeleted = true;
        fake.delete(resources.statefulSets, 'db', 'web', 'Orphan');
      }
      return list(type, opts);
    }) as typeof fake.list;
    fake.deleteStatefulSetOrphan = async () => {
      fake.deleteStatefulSetOrphan = del;
      throw new ApiError(503, 'ServiceUnavailable', 'the server is currently unable to handle the request');
    };
    const { r, keeper } = await both();
    await untilTemplateStepEnds(r, keeper);
    expect(ownerDeleted).toBe(true);
    expect(fake.calls.filter((c) => c.startsWith('createStatefulSet'))).toEqual([]);
    expect(readRequest('grow').status).toMatchObject({ statefulSetTemplate: { phase: 'Skipped', reason: 'DeletedByOwner' } });
    fake.deleteStatefulSetOrphan = del;
    fake.list = list;
  });

  // Simulation seed 1306497: the lease lapsed between the record keeper's look at the fence and its
  // delete, so the fenced client sent none; its owner's orphaning delete came meanwhile and was
  // taken for pvx's own whose answer was lost: the StatefulSet was created again.
  it('a delete the leader fence held back was not sent: a deletion seen since is its owner’s', async () => {
    workload();
    growWeb();
    const del = fake.deleteStatefulSetOrphan.bind(fake);
    let heldBack = false;
    fake.deleteStatefulSetOrphan = async () => {
      fake.deleteStatefulSetOrphan = del;
      heldBack = true;
      fake.delete(resources.statefulSets, 'db', 'web', 'Orphan');
      throw new NotLeaderError('not the leader (or the leader lease was not renewed within its deadline): did not delete StatefulSet db/web', 2000);
    };
    const { r, keeper } = await both();
    await untilTemplateStepEnds(r, keeper);
    expect(heldBack).toBe(true);
    expect(fake.calls.filter((c) => c.startsWith('createStatefulSet'))).toEqual([]);
    expect(readRequest('grow').status).toMatchObject({ statefulSetTemplate: { phase: 'Skipped', reason: 'DeletedByOwner' } });
  });

  // Simulation seed 2470271: the lease lapsed once "Deleting" was written, and the fence held the
  // delete back before its look at the StatefulSet; its owner's orphaning delete came meanwhile and
  // was taken for pvx's own whose answer was lost: the StatefulSet was created again.
  it('a delete the leader fence held back before anything was sent: a deletion seen since is its owner’s', async () => {
    workload();
    growWeb();
    let fenced = false;
    const r = await reconciler();
    const deleting = () => records().some((cm) => cm.data?.['step.json']?.includes('"phase":"Deleting"'));
    const canWrite = () => {
      if (fenced || !deleting()) return true;
      fenced = true;
      fake.delete(resources.statefulSets, 'db', 'web', 'Orphan');
      return false;
    };
    const keeper = await harness.keeper({ now: () => clock, canWrite });
    await untilTemplateStepEnds(r, keeper);
    expect(fenced).toBe(true);
    expect(fake.calls.filter((c) => c.startsWith('createStatefulSet'))).toEqual([]);
    expect(readRequest('grow').status).toMatchObject({ statefulSetTemplate: { phase: 'Skipped', reason: 'DeletedByOwner' } });
  });

  // Simulation seed 1215755: the look before the delete failed once (the version noted as not
  // deleted by pvx); the next attempt's delete landed and its answer was lost, and pvx took its own
  // deletion for its owner's: the StatefulSet was lost.
  it('a deletion seen after pvx sent its delete may be its own, whatever an earlier attempt that sent none noted', async () => {
    workload();
    growWeb();
    const del = fake.deleteStatefulSetOrphan.bind(fake);
    const looked = failFirstRecordLook();
    fake.deleteStatefulSetOrphan = async (...args) => {
      fake.deleteStatefulSetOrphan = del;
      await del(...args);
      throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    };
    const { r, keeper } = await both();
    await untilTemplateStepEnds(r, keeper);
    expect(looked()).toBe(true);
    expect(readRequest('grow').status).toMatchObject({ statefulSetTemplate: { phase: 'Updated', reason: 'Recreated' } });
    expect(readSts()?.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage).toBe('2Gi');
  });

  // Simulation seed 4573: a conflict on deleting a served record was read as "gone already", and
  // nothing woke the record again: it outlived its request for good.
  it('a conflict on deleting a served record is looked at again, not taken for done', async () => {
    workload();
    growWeb();
    fake.deleteRecord = async () => {
      throw new ApiError(409, 'Conflict', 'Operation cannot be fulfilled: the object has been modified');
    };
    const { r, keeper } = await both();
    await untilTemplateStepEnds(r, keeper);
    const [served] = records();
    expect(served?.data?.['step.json']).toContain('Recreated');
    await expect(keeper.reconcile(`${recordNamespace}/${served?.metadata?.name}`)).rejects.toThrow(/changed meanwhile/);
  });

  it('a StatefulSet owned by another controller is left as it is, and the request says why', async () => {
    const sts = workload();
    fake.update(resources.statefulSets, {
      ...sts,
      metadata: {
        ...sts.metadata,
        resourceVersion: undefined,
        ownerReferences: [{ apiVersion: 'db.example/v1', kind: 'Cluster', name: 'main', uid: 'c1', controller: true }],
      },
    });
    growWeb();
    const { r, keeper } = await both();
    await run(r, finished, growClaims, 40, keeper);
    expect(readRequest('grow').status).toMatchObject({
      phase: 'Completed',
      reason: 'TemplateNotUpdated',
      statefulSetTemplate: { phase: 'Skipped', reason: 'OwnedByController' },
    });
    expect(readSts()?.metadata?.uid).toBe(sts.metadata?.uid);
    expect(fake.calls.filter((c) => /^(getStatefulSet|deleteStatefulSetOrphan|createStatefulSet|createRecord) /.test(c))).toEqual([]);
  });
});

describe('spec.offlineNodeExpansion: EvictPod', () => {
  const refusal = 'failed to expand pvc with Expander.NodeExpand failed to expand the volume : rpc error: code = FailedPrecondition desc = volume is in use';

  /** The resizer, and a kubelet whose driver refuses to grow a filesystem in use: it grows at the next mount. */
  function offlineDriver(): void {
    const mounted = new Set(pods().flatMap((p) => (p.spec?.volumes ?? []).map((v) => v.persistentVolumeClaim?.claimName)));
    for (const c of fake.snapshot<V1PersistentVolumeClaim>(resources.persistentVolumeClaims)) {
      const spec = c.spec?.resources?.requests?.storage as string;
      if (spec === c.status?.capacity?.storage) continue;
      const write = (status: V1PersistentVolumeClaim['status']) =>
        fake.update(resources.persistentVolumeClaims, { ...c, metadata: { ...c.metadata, resourceVersion: undefined }, status });
      const state = c.status?.allocatedResourceStatuses?.storage;
      if (!state)
        write({
          ...c.status,
          allocatedResources: { storage: spec },
          allocatedResourceStatuses: { storage: 'NodeResizePending' },
          conditions: [{ type: 'FileSystemResizePending', status: 'True' }],
        });
      else if (state === 'NodeResizePending' && mounted.has(c.metadata?.name)) {
        write({
          ...c.status,
          allocatedResourceStatuses: { storage: 'NodeResizeInProgress' },
          conditions: [
            { type: 'FileSystemResizePending', status: 'True' },
            { type: 'NodeResizeError', status: 'True', message: refusal },
          ],
        });
      }
    }
  }

  /** The StatefulSet controller creates a missing pod again; its mount grows the filesystem. */
  function statefulSetController(ownerUID: string): void {
    for (const i of [0, 1]) {
      if (fake.get(resources.pods, 'db', `web-${i}`)) continue;
      fake.create(resources.pods, pod(`web-${i}`, `data-web-${i}`, ownerUID));
      const c = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', `data-web-${i}`) as V1PersistentVolumeClaim;
      fake.update(resources.persistentVolumeClaims, {
        ...c,
        metadata: { ...c.metadata, resourceVersion: undefined },
        status: { phase: 'Bound', capacity: { storage: c.spec?.resources?.requests?.storage as string } },
      });
    }
  }

  function pdb(allowed: number): void {
    const existing = fake.get<V1PodDisruptionBudget>(podDisruptionBudgets, 'db', 'web');
    const status = { disruptionsAllowed: allowed, currentHealthy: 2, desiredHealthy: 2 - allowed, expectedPods: 2 };
    if (existing)
      fake.update(podDisruptionBudgets, { ...existing, metadata: { ...existing.metadata, resourceVersion: undefined }, status } as V1PodDisruptionBudget);
    else
      fake.create(podDisruptionBudgets, {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'web', namespace: 'db' },
        spec: { minAvailable: 2, selector: { matchLabels: { app: 'web' } } },
        status,
      } as KubernetesObject);
  }

  const claimNamed = (c: string) => fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', c) as V1PersistentVolumeClaim;

  /** The kubelet reports the claim in use, its filesystem not grown (its driver grows it only at a mount). */
  function refuseInUse(c: string): void {
    const pvc = claimNamed(c);
    fake.update(resources.persistentVolumeClaims, {
      ...pvc,
      metadata: { ...pvc.metadata, resourceVersion: undefined },
      status: {
        ...pvc.status,
        allocatedResourceStatuses: { storage: 'NodeResizeInProgress' },
        conditions: [
          { type: 'FileSystemResizePending', status: 'True' },
          { type: 'NodeResizeError', status: 'True', message: refusal },
        ],
      },
    });
  }

  /** A reconciler that has run both requests of growBoth until both claims wait for the kubelet (the resizer's part only). */
  async function bothAtNodeStage(): Promise<ExpansionRequestReconciler> {
    const atNodeStage = (c: string) => claimNamed(c)?.status?.allocatedResourceStatuses?.storage === 'NodeResizePending';
    const resizer = () => {
      for (const c of ['data-web-0', 'data-web-1']) {
        const pvc = claimNamed(c);
        const spec = pvc.spec?.resources?.requests?.storage as string;
        if (spec === pvc.status?.capacity?.storage || pvc.status?.allocatedResourceStatuses) continue;
        fake.update(resources.persistentVolumeClaims, {
          ...pvc,
          metadata: { ...pvc.metadata, resourceVersion: undefined },
          status: { ...pvc.status, allocatedResources: { storage: spec }, allocatedResourceStatuses: { storage: 'NodeResizePending' } },
        });
      }
    };
    const r = await reconciler();
    await run(r, () => atNodeStage('data-web-0') && atNodeStage('data-web-1'), resizer);
    return r;
  }

  /** Two EvictPod requests: `first` grows data-web-0, `second` data-web-1. */
  function growBoth(first: string, second: string): void {
    for (const [name, claimName] of [
      [first, 'data-web-0'],
      [second, 'data-web-1'],
    ] as const) {
      fake.create(volumeExpansionRequests, {
        apiVersion: 'pvx.dev/v1alpha1',
        kind: 'VolumeExpansionRequest',
        metadata: { name, namespace: 'db' },
        spec: { target: { pvcName: claimName }, size: '2Gi', offlineNodeExpansion: 'EvictPod' },
      } as VolumeExpansionRequest);
    }
  }

  /** Whether the kubelet reports the claim in use, its filesystem not grown. */
  const refusedInUse = (claimName: string) =>
    fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', claimName)?.status?.conditions?.some((x) => x.type === 'NodeResizeError');

  function growOne(offline: 'EvictPod' | 'Wait'): void {
    fake.create(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow', namespace: 'db' },
      spec: { target: { pvcName: 'data-web-0' }, size: '2Gi', offlineNodeExpansion: offline },
    } as VolumeExpansionRequest);
  }

  it('waits while a PodDisruptionBudget refuses, evicts once it allows, and the claim completes with the next pod', async () => {
    const sts = workload();
    pdb(0);
    growOne('EvictPod');
    const r = await reconciler();
    await run(r, () => readRequest('grow')?.status?.eviction?.phase === 'Blocked', offlineDriver);
    expect(readRequest('grow').status).toMatchObject({
      phase: 'NodeExpansionPending',
      eviction: { phase: 'Blocked', reason: 'DisruptionBudget', podName: 'web-0' },
    });
    expect(readRequest('grow').status?.eviction?.message).toMatch(/The disruption budget web needs 2 healthy pods and has 2 currently/);
    expect(fake.get(resources.pods, 'db', 'web-0')).toBeDefined();
    pdb(1);
    const first = fake.get<V1Pod>(resources.pods, 'db', 'web-0')?.metadata?.uid;
    await run(
      r,
      () => readRequest('grow')?.status?.phase === 'Completed',
      () => (offlineDriver(), statefulSetController(sts.metadata?.uid as string)),
    );
    const done = readRequest('grow');
    expect(done.status).toMatchObject({ phase: 'Completed', eviction: { phase: 'Evicted', podUID: first } });
    expect(done.status?.timeline?.evictedAt).toBeDefined();
    expect(fake.get<V1Pod>(resources.pods, 'db', 'web-0')?.metadata?.uid).not.toBe(first);
    // One eviction that went through; web-1 never touched.
    expect(fake.calls.filter((c) => c === 'evictPod db/web-0').length).toBeGreaterThanOrEqual(2);
    expect(fake.calls.filter((c) => c.startsWith('evictPod') && c !== 'evictPod db/web-0')).toEqual([]);
  });

  it('one pod of a workload at a time, even while the caches have not seen the eviction: the second request waits', async () => {
    workload();
    growBoth('a', 'b');
    const r = await reconciler();
    await run(r, () => Boolean(refusedInUse('data-web-0') && refusedInUse('data-web-1')), offlineDriver);
    expect(fake.calls.filter((c) => c.startsWith('evictPod'))).toEqual([]);
    // The requests' and the pods' watches lag from here: a's record and its eviction reach the API server only.
    await harness.stopCache(volumeExpansionRequests);
    await harness.stopCache(resources.pods);
    await r.reconcile('db/a');
    expect(fake.calls.filter((c) => c.startsWith('evictPod'))).toEqual(['evictPod db/web-0']);
    // Its pod gone, the kubelet no longer reports data-web-0 in use — and the claims' cache shows that.
    const c = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data-web-0') as V1PersistentVolumeClaim;
    fake.update(resources.persistentVolumeClaims, {
      ...c,
      metadata: { ...c.metadata, resourceVersion: undefined },
      status: { ...c.status, allocatedResourceStatuses: { storage: 'NodeResizePending' }, conditions: [{ type: 'FileSystemResizePending', status: 'True' }] },
    });
    await settle();
    await r.reconcile('db/b');
    expect(fake.calls.filter((c) => c.startsWith('evictPod'))).toEqual(['evictPod db/web-0']);
    expect(readRequest('b').status).toMatchObject({ reason: 'EvictionWaits' });
    expect(readRequest('b').status?.message).toMatch(/request a is evicting pod web-0/);
  });

  // Seed 2570: the record on its way; seed 150653: the claim's mark, written before it.
  it.each(['record', 'mark'] as const)('one pod of a workload at a time while the first eviction’s %s is still being written', async (what) => {
    workload();
    // z grows data-web-0, a grows data-web-1: a goes first by name once both claims are refused in use.
    growBoth('z', 'a');
    const r = await bothAtNodeStage();
    refuseInUse('data-web-0');
    await settle();
    // z's eviction record (or mark) is on its way to the API server (a slow answer) when a is reconciled.
    let release = (): void => undefined;
    let held: (() => void) | undefined;
    const holding = new Promise<void>((resolve) => (held = resolve));
    const hold = async () => {
      if (!held) return;
      held();
      held = undefined;
      await new Promise<void>((resolve) => (release = resolve));
    };
    const write = fake.patchRequestStatus.bind(fake);
    fake.patchRequestStatus = async (ns, name, status, rv) => {
      if (what === 'record' && name === 'z' && status.eviction) await hold();
      return write(ns, name, status, rv);
    };
    const mark = fake.patchPvcAnnotations.bind(fake);
    fake.patchPvcAnnotations = async (ns, name, patch) => {
      if (what === 'mark' && name === 'data-web-0' && patch.annotations[pvcAnnotations.eviction]) await hold();
      return mark(ns, name, patch);
    };
    const first = r.reconcile('db/z');
    await holding;
    refuseInUse('data-web-1');
    await settle();
    await r.reconcile('db/a');
    expect(fake.calls.filter((c) => c.startsWith('evictPod'))).toEqual([]);
    expect(readRequest('a').status).toMatchObject({ reason: 'EvictionWaits' });
    expect(readRequest('a').status?.message).toMatch(/request z is evicting pod web-0/);
    release();
    await first;
    expect(fake.calls.filter((c) => c.startsWith('evictPod'))).toEqual(['evictPod db/web-0']);
  });

  // Seed 2830612: a claims cache behind pvx's first mark made a request decide a second pod; the
  // mark's precondition refused it, and the decision, remembered, held the workload ten minutes.
  it('an eviction whose mark the API server refuses (the claim changed since) holds no other request of the workload up', async () => {
    workload();
    growBoth('z', 'a');
    const r = await bothAtNodeStage();
    refuseInUse('data-web-0');
    await settle();
    const mark = fake.patchPvcAnnotations.bind(fake);
    fake.patchPvcAnnotations = async (ns, name, patch) => {
      if (name === 'data-web-0' && patch.annotations[pvcAnnotations.eviction]) throw new ApiError(409, 'Conflict', 'the object has been modified');
      return mark(ns, name, patch);
    };
    await expect(r.reconcile('db/z')).rejects.toThrow(/changed meanwhile/);
    expect(readRequest('z').status?.eviction).toBeUndefined();
    refuseInUse('data-web-1');
    await settle();
    await r.reconcile('db/a');
    expect(fake.calls.filter((c) => c.startsWith('evictPod'))).toEqual(['evictPod db/web-1']);
  });

  it('one pod of a workload at a time after the first request is deleted, its pod not back yet (seed 59505)', async () => {
    workload();
    growBoth('a', 'b');
    const r = await reconciler();
    await run(r, () => Boolean(refusedInUse('data-web-0') && refusedInUse('data-web-1')), offlineDriver);
    // The pods' watch lags from here: web-0's eviction does not reach that cache.
    await harness.stopCache(resources.pods);
    await r.reconcile('db/a');
    expect(fake.calls.filter((c) => c.startsWith('evictPod'))).toEqual(['evictPod db/web-0']);
    await settle();
    // a is deleted (its record with it) before web-0 is back.
    fake.delete(volumeExpansionRequests, 'db', 'a');
    await settle();
    await r.reconcile('db/b');
    expect(fake.calls.filter((c) => c.startsWith('evictPod'))).toEqual(['evictPod db/web-0']);
    expect(readRequest('b').status).toMatchObject({ reason: 'EvictionWaits' });
  });

  // Seed 2273189: an eviction decided, its record's write answered 500 (kept: it may have landed),
  // and the request then completed (its pod had mounted the claim anew); remembered for ten
  // minutes, that decision held the workload's next eviction as "request a is evicting pod web-0".
  it('an eviction decided for a request that has ended since holds no other request of the workload', async () => {
    workload();
    growBoth('a', 'b');
    const r = await reconciler();
    await run(r, () => Boolean(refusedInUse('data-web-0') && refusedInUse('data-web-1')), offlineDriver);
    const write = fake.patchRequestStatus.bind(fake);
    fake.patchRequestStatus = async (ns, name, status, rv) => {
      if (name === 'a' && status.eviction) throw new ApiError(500, 'Internal', 'etcd timeout');
      return write(ns, name, status, rv);
    };
    await expect(r.reconcile('db/a')).rejects.toThrow();
    fake.patchRequestStatus = write;
    expect(fake.calls.filter((c) => c.startsWith('evictPod'))).toEqual([]);
    // The kubelet grows data-web-0 after all (its pod mounted it anew): a completes.
    const claim0 = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data-web-0') as V1PersistentVolumeClaim;
    fake.update(resources.persistentVolumeClaims, {
      ...claim0,
      metadata: { ...claim0.metadata, resourceVersion: undefined },
      status: { phase: 'Bound', capacity: { storage: '2Gi' } },
    });
    await settle();
    await r.reconcile('db/a');
    await settle();
    expect(readRequest('a').status?.phase).toBe('Completed');
    await r.reconcile('db/b');
    expect(readRequest('b').status?.message ?? '').not.toMatch(/request a is evicting/);
    expect(fake.calls.filter((c) => c.startsWith('evictPod'))).toEqual(['evictPod db/web-1']);
  });

  it('without the opt-in: names the pod to restart, evicts nothing', async () => {
    workload();
    growOne('Wait');
    await run(await reconciler(), () => readRequest('grow')?.status?.reason === 'PodRestartRequired', offlineDriver);
    expect(readRequest('grow').status?.message).toMatch(/restart pod web-0/);
    expect(fake.calls.filter((c) => c.startsWith('evictPod'))).toEqual([]);
  });
});
