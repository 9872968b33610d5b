// The in-memory API server's claim patch where it concerns a VolumeAttributesClass, as the real one
// answers (Kubernetes 1.34 validation, pkg/apis/core/validation: ValidatePersistentVolumeClaimUpdate):
// the class changes with or without the size, in one write; only a Bound claim's may change; a
// class that does not exist is not refused (the claim's modification waits Pending for it).
import type {
  KubernetesObject,
  V1Namespace,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodDisruptionBudget,
  V1StatefulSet,
  V1StorageClass,
} from '@kubernetes/client-node';
import { beforeEach, describe, expect, it } from 'vitest';
import { ApiError, isNamespaceTerminating } from '../errors.ts';
import { FakeKubeClient, podDisruptionBudgets, type WriteRecord } from './fake-client.ts';
import { namespaces, resources, volumeExpansionRequests } from '../resources.ts';
import type { WatchEvent } from '../client.ts';

let fake: FakeKubeClient;
let claim: V1PersistentVolumeClaim;

function createClaim(phase = 'Bound'): V1PersistentVolumeClaim {
  return fake.create(resources.persistentVolumeClaims, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'data', namespace: 'db' },
    spec: { storageClassName: 'gp3', volumeAttributesClassName: 'gp3-default', resources: { requests: { storage: '10Gi' } } },
    status: { phase, capacity: { storage: '10Gi' } },
  } as V1PersistentVolumeClaim);
}

beforeEach(() => {
  fake = new FakeKubeClient();
  fake.create(resources.storageClasses, { metadata: { name: 'gp3' }, provisioner: 'ebs.csi.aws.com', allowVolumeExpansion: true } as V1StorageClass);
  claim = createClaim();
});

const preconditions = () => ({ uid: claim.metadata?.uid as string, resourceVersion: claim.metadata?.resourceVersion as string });
const read = () => fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;

describe('patchPvcSize with a VolumeAttributesClass', () => {
  it('sets the class and leaves the size when the patch has no size', async () => {
    await fake.patchPvcSize('db', 'data', {
      ...preconditions(),
      volumeAttributesClassName: 'io2',
      annotations: { 'pvx.dev/target-volume-attributes-class': 'io2' },
    });
    expect(read().spec).toMatchObject({ volumeAttributesClassName: 'io2', resources: { requests: { storage: '10Gi' } } });
    expect(read().metadata?.annotations).toEqual({ 'pvx.dev/target-volume-attributes-class': 'io2' });
  });

  it('sets the size and the class in one write', async () => {
    const writes: WriteRecord[] = [];
    fake.observeWrites((w) => writes.push(w));
    await fake.patchPvcSize('db', 'data', { ...preconditions(), storage: '20Gi', volumeAttributesClassName: 'io2', annotations: {} });
    expect(writes).toHaveLength(1);
    expect((writes[0]?.after as V1PersistentVolumeClaim).spec).toMatchObject({
      volumeAttributesClassName: 'io2',
      resources: { requests: { storage: '20Gi' } },
    });
  });

  it('accepts a class that does not exist: Kubernetes does not look it up at admission', async () => {
    await expect(fake.patchPvcSize('db', 'data', { ...preconditions(), volumeAttributesClassName: 'no-such-class', annotations: {} })).resolves.toBeDefined();
  });

  it('refuses a new class on a claim that is not Bound (422: its spec is immutable until then)', async () => {
    fake.delete(resources.persistentVolumeClaims, 'db', 'data');
    claim = createClaim('Pending');
    const err = await fake.patchPvcSize('db', 'data', { ...preconditions(), volumeAttributesClassName: 'io2', annotations: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe(422);
    expect(read().spec?.volumeAttributesClassName).toBe('gp3-default');
  });

  it('keeps its preconditions: a stale resourceVersion is 409 whatever the patch changes', async () => {
    await fake.patchPvcSize('db', 'data', { ...preconditions(), volumeAttributesClassName: 'io2', annotations: {} });
    const err = await fake.patchPvcSize('db', 'data', { ...preconditions(), volumeAttributesClassName: 'io2-fast', annotations: {} }).catch((e: unknown) => e);
    expect((err as ApiError).code).toBe(409);
  });
});

// The in-memory API server's StatefulSet re-creation and Eviction API, as the real ones answer
// (test/e2e/client-contract.e2e.test.ts holds both to the real API server).
describe('deleting with propagationPolicy Orphan, finalizers, and creating again', () => {
  const sts = (): V1StatefulSet =>
    fake.create(resources.statefulSets, {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'web', namespace: 'db' },
      spec: {
        serviceName: 'web',
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } } },
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '1Gi' } } } }],
      },
    } as V1StatefulSet);

  it('marks the StatefulSet deleted with the orphan finalizer; the garbage collector orphans its pods, then it is gone', async () => {
    const web = sts();
    fake.create(resources.pods, {
      metadata: {
        name: 'web-0',
        namespace: 'db',
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: web.metadata?.uid as string, controller: true }],
      },
    } as V1Pod);
    await fake.deleteStatefulSetOrphan('db', 'web', { uid: web.metadata?.uid as string, resourceVersion: web.metadata?.resourceVersion as string });
    const terminating = await fake.getStatefulSet('db', 'web');
    expect(terminating?.metadata).toMatchObject({ finalizers: ['orphan'] });
    expect(terminating?.metadata?.deletionTimestamp).toBeDefined();
    // Until then, a StatefulSet of the name exists: creating one is AlreadyExists.
    await expect(fake.createStatefulSet('db', { metadata: { name: 'web' }, spec: web.spec })).rejects.toMatchObject({ code: 409, reason: 'AlreadyExists' });
    expect(fake.collectGarbage()).toEqual(['db/web']);
    expect(await fake.getStatefulSet('db', 'web')).toBeUndefined();
    expect(fake.get<V1Pod>(resources.pods, 'db', 'web-0')?.metadata?.ownerReferences).toBeUndefined();
    const again = await fake.createStatefulSet('db', { metadata: { name: 'web', uid: 'ignored' }, spec: web.spec });
    expect(again.metadata?.uid).not.toBe(web.metadata?.uid);
    expect(again.metadata?.uid).not.toBe('ignored');
  });

  it('refuses a delete whose UID or resourceVersion is not the StatefulSet’s now (409), and one that is gone (404)', async () => {
    const web = sts();
    const uid = web.metadata?.uid as string;
    await expect(fake.deleteStatefulSetOrphan('db', 'web', { uid: 'other', resourceVersion: web.metadata?.resourceVersion as string })).rejects.toMatchObject({
      code: 409,
    });
    await expect(fake.deleteStatefulSetOrphan('db', 'web', { uid, resourceVersion: '1' })).rejects.toMatchObject({ code: 409 });
    await expect(fake.deleteStatefulSetOrphan('db', 'gone', { uid, resourceVersion: '1' })).rejects.toMatchObject({ code: 404 });
    expect((await fake.getStatefulSet('db', 'web'))?.metadata?.deletionTimestamp).toBeUndefined();
  });

  it('keeps an object with finalizers until the last is removed; its deletionTimestamp is the server’s', async () => {
    const req = fake.create(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow', namespace: 'db', finalizers: ['pvx.dev/statefulset-record'] },
      spec: {},
    } as KubernetesObject);
    fake.delete(volumeExpansionRequests, 'db', 'grow');
    const deleting = fake.get<KubernetesObject>(volumeExpansionRequests, 'db', 'grow');
    expect(deleting?.metadata?.deletionTimestamp).toBeDefined();
    // A write cannot take the deletionTimestamp away.
    fake.update(volumeExpansionRequests, {
      ...deleting,
      metadata: { ...deleting?.metadata, resourceVersion: undefined, deletionTimestamp: undefined, labels: { x: 'y' } },
    } as KubernetesObject);
    expect(fake.get<KubernetesObject>(volumeExpansionRequests, 'db', 'grow')?.metadata?.deletionTimestamp).toBeDefined();
    const rv = fake.get<KubernetesObject>(volumeExpansionRequests, 'db', 'grow')?.metadata?.resourceVersion as string;
    await expect(fake.patchRequestFinalizers('db', 'grow', [], req.metadata?.resourceVersion as string)).rejects.toMatchObject({ code: 409 });
    await fake.patchRequestFinalizers('db', 'grow', [], rv);
    expect(fake.get(volumeExpansionRequests, 'db', 'grow')).toBeUndefined();
  });
});

describe('evictPod (the Eviction API)', () => {
  const ready = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] };
  const pod = (labels = { app: 'web' }, status: V1Pod['status'] = ready) =>
    fake.create(resources.pods, { metadata: { name: 'web-0', namespace: 'db', labels }, status } as V1Pod);
  const pdb = (name: string, disruptionsAllowed: number) =>
    fake.create(podDisruptionBudgets, {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name, namespace: 'db' },
      spec: { minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
      status: { disruptionsAllowed, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1 },
    } as V1PodDisruptionBudget);

  it('refuses while the budget allows no disruption (429, naming it), then evicts and spends the allowance', async () => {
    const p = pod();
    pdb('web', 0);
    const refused = (await fake.evictPod('db', 'web-0', p.metadata?.uid as string).catch((e: unknown) => e)) as ApiError;
    expect(refused).toMatchObject({ code: 429, reason: 'TooManyRequests' });
    expect(refused.causes).toEqual(['The disruption budget web needs 1 healthy pods and has 1 currently']);
    const budget = fake.get<V1PodDisruptionBudget>(podDisruptionBudgets, 'db', 'web') as V1PodDisruptionBudget;
    fake.update(podDisruptionBudgets, { ...budget, status: { ...budget.status, disruptionsAllowed: 1 } } as V1PodDisruptionBudget);
    await fake.evictPod('db', 'web-0', p.metadata?.uid as string);
    expect(fake.get(resources.pods, 'db', 'web-0')).toBeUndefined();
    expect(fake.get<V1PodDisruptionBudget>(podDisruptionBudgets, 'db', 'web')?.status?.disruptionsAllowed).toBe(0);
  });

  it('404 for a pod that is gone, 409 for another pod of the name, 500 for two budgets over one pod; without a budget it evicts', async () => {
    await expect(fake.evictPod('db', 'web-0', 'x')).rejects.toMatchObject({ code: 404 });
    const p = pod();
    await expect(fake.evictPod('db', 'web-0', 'another')).rejects.toMatchObject({ code: 409 });
    pdb('a', 1);
    pdb('b', 1);
    await expect(fake.evictPod('db', 'web-0', p.metadata?.uid as string)).rejects.toMatchObject({ code: 500 });
    fake.delete(podDisruptionBudgets, 'db', 'a');
    fake.delete(podDisruptionBudgets, 'db', 'b');
    await fake.evictPod('db', 'web-0', p.metadata?.uid as string);
    expect(fake.get(resources.pods, 'db', 'web-0')).toBeUndefined();
  });

  it("in the API server's order: the budget before the UID (429 for another pod of the name while it refuses; allowed, it is spent and then 409)", async () => {
    pod();
    pdb('web', 0);
    await expect(fake.evictPod('db', 'web-0', 'another')).rejects.toMatchObject({ code: 429 });
    const budget = fake.get<V1PodDisruptionBudget>(podDisruptionBudgets, 'db', 'web') as V1PodDisruptionBudget;
    fake.update(podDisruptionBudgets, { ...budget, status: { ...budget.status, disruptionsAllowed: 1 } } as V1PodDisruptionBudget);
    await expect(fake.evictPod('db', 'web-0', 'another')).rejects.toMatchObject({ code: 409 });
    expect(fake.get<V1PodDisruptionBudget>(podDisruptionBudgets, 'db', 'web')?.status?.disruptionsAllowed).toBe(0);
  });

  it('a pod Pending or deleting goes without a budget; an unready one without spending it while the budget has its healthy pods', async () => {
    const pending = pod({ app: 'web' }, { phase: 'Pending' });
    pdb('web', 0);
    await fake.evictPod('db', 'web-0', pending.metadata?.uid as string);
    const unready = pod({ app: 'web' }, { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] });
    await fake.evictPod('db', 'web-0', unready.metadata?.uid as string);
    expect(fake.get(resources.pods, 'db', 'web-0')).toBeUndefined();
    expect(fake.get<V1PodDisruptionBudget>(podDisruptionBudgets, 'db', 'web')?.status?.disruptionsAllowed).toBe(0);
    const budget = fake.get<V1PodDisruptionBudget>(podDisruptionBudgets, 'db', 'web') as V1PodDisruptionBudget;
    fake.update(podDisruptionBudgets, { ...budget, status: { ...budget.status, currentHealthy: 0 } } as V1PodDisruptionBudget);
    const unhealthy = pod({ app: 'web' }, { phase: 'Running' });
    await expect(fake.evictPod('db', 'web-0', unhealthy.metadata?.uid as string)).rejects.toMatchObject({ code: 429 });
  });
});

// What the workload simulation leans on (test/sim/workload-controllers.ts), each as the API server
// answers: the record keeper's decisions are only as right as these.
describe('as the API server: namespaces, generations, cascades and selectors', () => {
  const statefulSet = (name: string, extra: Partial<V1StatefulSet['metadata']> = {}): V1StatefulSet =>
    fake.create(resources.statefulSets, {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name, namespace: 'db', labels: { app: name }, ...extra },
      spec: { serviceName: name, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } } } },
    } as V1StatefulSet);
  const podOf = (owner: V1StatefulSet, name: string): V1Pod =>
    fake.create(resources.pods, {
      metadata: {
        name,
        namespace: 'db',
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'StatefulSet', name: owner.metadata?.name as string, uid: owner.metadata?.uid as string, controller: true },
        ],
      },
    } as V1Pod);

  it('refuses a create in a namespace being deleted (403, NamespaceLifecycle’s words), and still takes updates there', async () => {
    fake.create(namespaces, { metadata: { name: 'db', finalizers: ['kubernetes'] } } as V1Namespace);
    const web = statefulSet('web');
    fake.delete(namespaces, undefined, 'db');
    const refused = await fake.createStatefulSet('db', { metadata: { name: 'other' }, spec: web.spec }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 403 });
    expect(isNamespaceTerminating(refused)).toBe(true);
    // Only creates: an object already there is still written (a controller finishing its work).
    fake.update(resources.statefulSets, { ...web, metadata: { ...web.metadata, labels: { app: 'web', edited: 'yes' } } });
    expect((await fake.getStatefulSet('db', 'web'))?.metadata?.labels).toMatchObject({ edited: 'yes' });
  });

  it('moves a StatefulSet’s generation with its spec only', () => {
    const web = statefulSet('web');
    expect(web.metadata?.generation).toBe(1);
    const labelled = fake.update(resources.statefulSets, { ...web, metadata: { ...web.metadata, labels: { app: 'web', x: 'y' } } });
    expect(labelled.metadata?.generation).toBe(1);
    const scaled = fake.update(resources.statefulSets, { ...labelled, spec: { ...labelled.spec, replicas: 3 } } as V1StatefulSet);
    expect(scaled.metadata?.generation).toBe(2);
  });

  it('a foreground delete takes the dependents first, the owner once none is left; a background one, the owner first', () => {
    const fg = statefulSet('fg');
    podOf(fg, 'fg-0');
    fake.delete(resources.statefulSets, 'db', 'fg', 'Foreground');
    expect(fake.get<V1StatefulSet>(resources.statefulSets, 'db', 'fg')?.metadata?.finalizers).toEqual(['foregroundDeletion']);
    fake.collectGarbage();
    expect(fake.get(resources.pods, 'db', 'fg-0')).toBeUndefined();
    expect(fake.get(resources.statefulSets, 'db', 'fg')).toBeDefined();
    fake.collectGarbage();
    expect(fake.get(resources.statefulSets, 'db', 'fg')).toBeUndefined();

    const bg = statefulSet('bg');
    podOf(bg, 'bg-0');
    fake.delete(resources.statefulSets, 'db', 'bg');
    expect(fake.get(resources.statefulSets, 'db', 'bg')).toBeUndefined();
    expect(fake.get(resources.pods, 'db', 'bg-0')).toBeDefined();
    fake.collectGarbage();
    expect(fake.get(resources.pods, 'db', 'bg-0')).toBeUndefined();
  });

  it('a second delete changes the propagation of one under way: orphan becomes foreground, and the pods go', () => {
    const web = statefulSet('web');
    podOf(web, 'web-0');
    fake.delete(resources.statefulSets, 'db', 'web', 'Orphan');
    fake.delete(resources.statefulSets, 'db', 'web', 'Foreground');
    expect(fake.get<V1StatefulSet>(resources.statefulSets, 'db', 'web')?.metadata?.finalizers).toEqual(['foregroundDeletion']);
    fake.collectGarbage();
    fake.collectGarbage();
    expect(fake.get(resources.pods, 'db', 'web-0')).toBeUndefined();
    expect(fake.get(resources.statefulSets, 'db', 'web')).toBeUndefined();
  });

  it('a second, Background delete of one being orphaned takes the orphan finalizer off: it goes at once, its last state as before, and its pods with it', async () => {
    const web = statefulSet('web');
    podOf(web, 'web-0');
    fake.delete(resources.statefulSets, 'db', 'web', 'Orphan');
    const from = fake.resourceVersion;
    const events: WatchEvent[] = [];
    const handle = await fake.watch(
      resources.statefulSets,
      { namespace: 'db', resourceVersion: from },
      (e) => events.push(e),
      () => {},
    );
    fake.delete(resources.statefulSets, 'db', 'web', 'Background');
    handle.stop();
    expect(fake.get(resources.statefulSets, 'db', 'web')).toBeUndefined();
    expect(events.map((e) => [e.type, e.object.metadata?.finalizers])).toEqual([['DELETED', ['orphan']]]);
    fake.collectGarbage();
    expect(fake.get(resources.pods, 'db', 'web-0')).toBeUndefined();
    // The kind's default keeps the propagation a first delete chose.
    statefulSet('queue');
    fake.delete(resources.statefulSets, 'db', 'queue', 'Orphan');
    fake.delete(resources.statefulSets, 'db', 'queue');
    expect(fake.get<V1StatefulSet>(resources.statefulSets, 'db', 'queue')?.metadata?.finalizers).toEqual(['orphan']);
  });

  it('lists and watches by label and by metadata.name, replaying a watch from a version with its selectors', async () => {
    const from = fake.resourceVersion;
    statefulSet('a', { labels: { app: 'a', tier: 'db' } });
    statefulSet('b', { labels: { app: 'b' } });
    expect((await fake.list(resources.statefulSets, { namespace: 'db', labelSelector: 'tier=db' })).items.map((o) => o.metadata?.name)).toEqual(['a']);
    expect((await fake.list(resources.statefulSets, { namespace: 'db', fieldSelector: 'metadata.name=b' })).items.map((o) => o.metadata?.name)).toEqual(['b']);
    const seen: string[] = [];
    const w = await fake.watch(
      resources.statefulSets,
      { namespace: 'db', fieldSelector: 'metadata.name=a', resourceVersion: from },
      (e) => seen.push(`${e.type} ${e.object.metadata?.name}`),
      () => undefined,
    );
    fake.delete(resources.statefulSets, 'db', 'b');
    fake.delete(resources.statefulSets, 'db', 'a');
    w.stop();
    expect(seen).toEqual(['ADDED a', 'DELETED a']);
  });
});
