// The KubeClient port on the real API server, through both of its adapters (client-node's, and
// pvx's own HTTP client that `pvx run` uses for static credentials), side by side with the
// in-memory fake the unit tests and the simulation rely on: every refusal pvx's decisions depend
// on — the claim's UID and resourceVersion preconditions, PersistentVolumeClaimResize admission,
// lowering at or below status.capacity — must come back with the same code from all three, or the
// fake proves nothing; and every other call of the port must do the same through either adapter.
import {
  AppsV1Api,
  CustomObjectsApi,
  PatchStrategy,
  PolicyV1Api,
  setHeaderOptions,
  type V1Node,
  type KubernetesObject,
  type V1ConfigMap,
  type V1Lease,
  type V1PersistentVolumeClaim,
  type V1Pod,
  type V1PodDisruptionBudget,
  type V1StatefulSet,
  type V1StorageClass,
} from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient, PvcSizePatch, WatchEvent } from '../../src/k8s/client.ts';
import { kubeconfigConnection } from '../../src/k8s/connection.ts';
import { readDeletion } from '../../src/k8s/history.ts';
import { ApiError, isAlreadyExists, isConflict, isGone, isNotServed } from '../../src/k8s/errors.ts';
import { FakeKubeClient, podDisruptionBudgets } from '../../src/k8s/testing/fake-client.ts';
import { HttpKubeClient } from '../../src/k8s/http-client.ts';
import { NodeKubeClient } from '../../src/k8s/node-client.ts';
import { clusterVolumeExpansionPolicies, resources, volumeExpansionPolicies, volumeExpansionRequests, type ResourceType } from '../../src/k8s/resources.ts';
import { kubeConfigAccess, kubeletClient, kubeletFlags } from '../../src/cli/kubelet.ts';
import { HttpsKubeletClient } from '../../src/usage/kubelet-client.ts';
import { e2eEnv } from './support/env.ts';
import { ensureKubeletReader, pvxNamespace, serviceAccountKubeconfig, tokenKubeconfig } from './support/identity.ts';
import { signingKeys, tokenSignature } from '../../src/operator/endpoints/token-signature.ts';
import { compactEtcd } from './support/etcd.ts';
import {
  bindPVC,
  core,
  createNamespace,
  createPVC,
  deleteNamespace,
  e2eHoldFinalizer,
  kc,
  readPVC,
  storage,
  waitFor,
  waitForPodRunning,
} from './support/kube.ts';

const resolved = await kubeconfigConnection(e2eEnv.kubeconfig);
if (!('connection' in resolved)) throw new Error(`the e2e kubeconfig needs client-node: ${resolved.unsupported}`);
const { connection } = resolved;

const adapters: [string, () => KubeClient][] = [
  ['client-node', () => new NodeKubeClient(kc)],
  ['http', () => new HttpKubeClient(connection)],
];

let ns: string;

beforeAll(async () => {
  ns = await createNamespace('pvx-e2e-contract');
});

afterAll(async () => {
  if (ns) await deleteNamespace(ns);
});

/** A StatefulSet of no replicas in the test's namespace (nothing runs: only its object is tested). */
function emptyStatefulSet(name: string, finalizers?: string[]): V1StatefulSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, namespace: ns, ...(finalizers ? { finalizers } : {}) },
    spec: {
      replicas: 0,
      serviceName: name,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image: e2eEnv.image }] } },
    },
  };
}

/**
 * The version to delete a StatefulSet at: the StatefulSet controller writes its status once it
 * has seen the object, so the one after that (on the fake, which has no controller, the one there is).
 */
async function settledVersion(client: KubeClient, isFake: boolean, name: string): Promise<string> {
  let rv = '';
  await waitFor(`StatefulSet ${name} observed by its controller`, 60_000, async () => {
    const sts = await client.getStatefulSet(ns, name);
    rv = sts?.metadata?.resourceVersion as string;
    return isFake || sts?.status?.observedGeneration === sts?.metadata?.generation;
  });
  return rv;
}

/** The code a patch ends with: 200, or the API error's code. */
async function outcome(patch: () => Promise<unknown>): Promise<number> {
  try {
    await patch();
    return 200;
  } catch (err) {
    if (err instanceof ApiError) return err.code;
    throw err;
  }
}

/** The same claim and class in the fake, as the real API server holds them. */
async function mirror(claim: V1PersistentVolumeClaim): Promise<FakeKubeClient> {
  const fake = new FakeKubeClient();
  const sc = await storage.readStorageClass({ name: claim.spec?.storageClassName as string });
  fake.create(resources.storageClasses, { ...sc, metadata: { name: sc.metadata?.name } } as V1StorageClass);
  fake.create(resources.persistentVolumeClaims, { ...claim, metadata: { name: claim.metadata?.name, namespace: ns, uid: claim.metadata?.uid } });
  return fake;
}

describe.each(adapters)('through the %s adapter', (adapter, makeClient) => {
  const real = makeClient();

  describe.skipIf(!e2eEnv.expandableClass || !e2eEnv.fixedClass)('patchPvcSize refusals: the real API server and the fake agree', () => {
    const cases: { name: string; claim: string; class: () => string; change: (c: V1PersistentVolumeClaim) => Partial<PvcSizePatch>; want: number }[] = [
      {
        name: 'a UID that is not the claim’s (a claim re-created under the same name)',
        claim: 'uid',
        class: () => e2eEnv.expandableClass as string,
        change: () => ({ uid: 'not-this-claim', storage: '2Gi' }),
        want: 409,
      },
      {
        name: 'a stale resourceVersion',
        claim: 'stale',
        class: () => e2eEnv.expandableClass as string,
        change: () => ({ resourceVersion: '1', storage: '2Gi' }),
        want: 409,
      },
      {
        name: 'a class that does not allow expansion',
        claim: 'fixed',
        class: () => e2eEnv.fixedClass as string,
        change: () => ({ storage: '2Gi' }),
        want: 403,
      },
      { name: 'lowering to the capacity', claim: 'lower', class: () => e2eEnv.expandableClass as string, change: () => ({ storage: '512Mi' }), want: 422 },
      {
        name: 'growing, with the claim’s own UID and resourceVersion',
        claim: 'grow',
        class: () => e2eEnv.expandableClass as string,
        change: () => ({ storage: '2Gi' }),
        want: 200,
      },
      // A VolumeAttributesClass (Kubernetes 1.34): with the size in one patch, or alone; its existence
      // is not checked at admission (the claim's modification waits Pending for it).
      {
        name: 'growing and setting a VolumeAttributesClass in one patch',
        claim: 'grow-class',
        class: () => e2eEnv.expandableClass as string,
        change: () => ({ storage: '2Gi', volumeAttributesClassName: 'pvx-e2e-absent' }),
        want: 200,
      },
      {
        name: 'a VolumeAttributesClass alone, the size left as it is',
        claim: 'class',
        class: () => e2eEnv.expandableClass as string,
        change: () => ({ storage: undefined, volumeAttributesClassName: 'pvx-e2e-absent' }),
        want: 200,
      },
      {
        name: 'a VolumeAttributesClass on a class that does not allow expansion (no resize: no PersistentVolumeClaimResize refusal)',
        claim: 'fixed-class',
        class: () => e2eEnv.fixedClass as string,
        change: () => ({ storage: undefined, volumeAttributesClassName: 'pvx-e2e-absent' }),
        want: 200,
      },
    ];

    it.each(cases)('$name → $want', async (c) => {
      await createPVC(ns, `${adapter}-${c.claim}`, c.class(), '1Gi');
      await bindPVC(ns, `${adapter}-${c.claim}`);
      const claimName = `${adapter}-${c.claim}`;
      const claim = await readPVC(ns, claimName);
      const patch = (target: V1PersistentVolumeClaim): PvcSizePatch => ({
        uid: target.metadata?.uid as string,
        resourceVersion: target.metadata?.resourceVersion as string,
        storage: '2Gi',
        annotations: { 'pvx.dev/e2e': 'contract' },
        ...c.change(target),
      });
      const fake = await mirror(claim);
      const fakeClaim = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, ns, claimName) as V1PersistentVolumeClaim;
      const fromReal = await outcome(() => real.patchPvcSize(ns, claimName, patch(claim)));
      const fromFake = await outcome(() => fake.patchPvcSize(ns, claimName, patch(fakeClaim)));
      expect({ real: fromReal, fake: fromFake }).toEqual({ real: c.want, fake: c.want });
      const after = await readPVC(ns, claimName);
      if (c.want !== 200) expect(after.spec?.resources?.requests?.storage).toBe('1Gi');
      // What the patch set, and only that: the fake's claim ends as the real one.
      const fakeAfter = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, ns, claimName);
      expect([fakeAfter?.spec?.resources?.requests?.storage, fakeAfter?.spec?.volumeAttributesClassName]).toEqual([
        after.spec?.resources?.requests?.storage,
        after.spec?.volumeAttributesClassName,
      ]);
    });
  });

  it('patchPvcSize: a VolumeAttributesClass on a claim that is not Bound → 422 from both (its spec is immutable until then)', async () => {
    const claimName = `${adapter}-unbound-class`;
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: claimName },
        spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'pvx-e2e-unprovisioned', resources: { requests: { storage: '1Gi' } } },
      },
    });
    const claim = await readPVC(ns, claimName);
    const fake = new FakeKubeClient();
    fake.create(resources.persistentVolumeClaims, { ...claim, metadata: { name: claimName, namespace: ns, uid: claim.metadata?.uid } });
    const patch = (c: V1PersistentVolumeClaim): PvcSizePatch => ({
      uid: c.metadata?.uid as string,
      resourceVersion: c.metadata?.resourceVersion as string,
      volumeAttributesClassName: 'pvx-e2e-absent',
      annotations: {},
    });
    const fakeClaim = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, ns, claimName) as V1PersistentVolumeClaim;
    expect({
      real: await outcome(() => real.patchPvcSize(ns, claimName, patch(claim))),
      fake: await outcome(() => fake.patchPvcSize(ns, claimName, patch(fakeClaim))),
    }).toEqual({ real: 422, fake: 422 });
  });

  describe('patchRequestStatus: a status decided from a stale copy is refused by both', () => {
    it.each([
      ['the request as last read', (rv: string) => rv, 200],
      ['a stale resourceVersion', () => '1', 409],
    ])('%s → %s', async (_name, version, want) => {
      const name = `${adapter}-status-${want}`;
      const request = {
        apiVersion: 'pvx.dev/v1alpha1',
        kind: 'VolumeExpansionRequest',
        metadata: { name, namespace: ns },
        spec: { target: { pvcName: 'none' }, size: '2Gi', dryRun: true },
      };
      await real.createRequest(ns, request);
      const page = await real.list(volumeExpansionRequests, { namespace: ns, fieldSelector: `metadata.name=${name}` });
      const rv = page.items[0]?.metadata?.resourceVersion as string;
      const fake = new FakeKubeClient();
      const mirrored = fake.create<KubernetesObject>(volumeExpansionRequests, { ...request, metadata: { ...request.metadata } });
      const fromReal = await outcome(() => real.patchRequestStatus(ns, name, { phase: 'Pending', reason: 'Contract', message: 'e2e' }, version(rv)));
      const fromFake = await outcome(() =>
        fake.patchRequestStatus(ns, name, { phase: 'Pending', reason: 'Contract', message: 'e2e' }, version(mirrored.metadata?.resourceVersion as string)),
      );
      expect({ real: fromReal, fake: fromFake }).toEqual({ real: want, fake: want });
    });
  });

  describe('the rest of the port', () => {
    const unprovisioned = 'pvx-e2e-unprovisioned'; // no provisioner serves it: claims stay Pending and cost nothing
    const claim = (name: string, labels: Record<string, string> = {}) =>
      core.createNamespacedPersistentVolumeClaim({
        namespace: ns,
        body: {
          metadata: { name, labels },
          spec: { accessModes: ['ReadWriteOnce'], storageClassName: unprovisioned, resources: { requests: { storage: '1Gi' } } },
        },
      });

    it('list: a namespaced kind page by page, each item with its apiVersion and kind; a kind not served', async () => {
      for (const n of ['a', 'b', 'c']) await claim(`${adapter}-list-${n}`, { 'pvx.dev/e2e-list': adapter });
      const selection = { namespace: ns, labelSelector: `pvx.dev/e2e-list=${adapter}` };
      const first = await real.list(resources.persistentVolumeClaims, { ...selection, limit: 2 });
      const rest = await real.list(resources.persistentVolumeClaims, { ...selection, limit: 2, continue: first.continue });
      expect(first.resourceVersion).toMatch(/^\d+$/);
      expect([first.items.length, Boolean(first.continue), rest.items.length, rest.continue]).toEqual([2, true, 1, undefined]);
      expect([...first.items, ...rest.items].map((i) => `${i.apiVersion} ${i.kind} ${i.metadata?.name}`)).toEqual(
        ['a', 'b', 'c'].map((n) => `v1 PersistentVolumeClaim ${adapter}-list-${n}`),
      );
      const nothing: ResourceType = { resource: 'nothings', group: 'pvx.dev', version: 'v1alpha1', kind: 'Nothing', namespaced: true };
      expect(isNotServed(await real.list(nothing, { namespace: ns }).catch((e: unknown) => e))).toBe(true);
    });

    it('list: VolumeAttributesClasses (storage.k8s.io/v1, cluster-scoped), each with its apiVersion and kind', async () => {
      const name = `pvx-e2e-contract-${adapter}-${randomBytes(3).toString('hex')}`;
      // Any driver name will do: a class is only read here.
      await storage.createVolumeAttributesClass({ body: { metadata: { name }, driverName: 'contract.pvx.dev', parameters: { iops: '3000' } } });
      try {
        const page = await real.list(resources.volumeAttributesClasses, {});
        const found = page.items.find((i) => i.metadata?.name === name) as (KubernetesObject & { driverName?: string }) | undefined;
        expect([found?.apiVersion, found?.kind, found?.driverName]).toEqual(['storage.k8s.io/v1', 'VolumeAttributesClass', 'contract.pvx.dev']);
      } finally {
        await storage.deleteVolumeAttributesClass({ name }).catch(() => undefined);
      }
    });

    it('watch: the changes after a version, then a normal end at the server’s timeout; a version long compacted is Gone', async () => {
      const start = await real.list(resources.persistentVolumeClaims, { namespace: ns, limit: 1 });
      const seen: WatchEvent[] = [];
      let opened!: () => void;
      const open = new Promise<void>((r) => (opened = r));
      const ended = new Promise<unknown>((resolve) => {
        void real
          .watch(resources.persistentVolumeClaims, { namespace: ns, resourceVersion: start.resourceVersion, timeoutSeconds: 3 }, (e) => seen.push(e), resolve)
          .then(opened);
      });
      await open;
      await claim(`${adapter}-watched`);
      expect(await ended).toBeUndefined();
      expect(seen.filter((e) => e.type === 'ADDED').map((e) => e.object.metadata?.name)).toEqual([`${adapter}-watched`]);
      // A version long compacted: etcd compacted up to now, and a kind whose watch cache began well
      // after version 1 (pvx's requests: their CRD is installed once the cluster runs). A kind cached
      // since the API server started may hold version 1 in its window on a fresh cluster, and answer
      // a watch from it (this test, first of a run, saw that for claims).
      // Asked again for up to a minute: the answer must come to be Gone, whatever the cache's state.
      let gone: unknown;
      await waitFor(
        'a watch from a long-compacted version to be refused with 410 Gone',
        60_000,
        async () => {
          if (e2eEnv.embedded) await compactEtcd();
          gone = await new Promise<unknown>((resolve) => {
            void real.watch(
              volumeExpansionRequests,
              { namespace: ns, resourceVersion: '1', timeoutSeconds: 5 },
              (e) => e.type === 'ERROR' && resolve(e.object),
              resolve,
            );
          });
          // the watch cache says so in an ERROR event of a 200 stream; etcd, by refusing the request
          return isGone(gone) || (gone as { code?: number } | undefined)?.code === 410;
        },
        1000,
      );
      expect(isGone(gone) || (gone as { code?: number }).code === 410).toBe(true);
    });

    it('createRequest and deleteRequest: AlreadyExists, and the UID precondition — as the fake answers', async () => {
      const name = `${adapter}-lifecycle`;
      const body = {
        apiVersion: 'pvx.dev/v1alpha1',
        kind: 'VolumeExpansionRequest',
        metadata: { name, namespace: ns },
        spec: { target: { pvcName: 'none' }, size: '2Gi', dryRun: true },
      };
      const fake = new FakeKubeClient();
      const steps = async (client: KubeClient, uidOf: () => Promise<string>) => [
        await outcome(() => client.createRequest(ns, structuredClone(body))),
        await outcome(() => client.createRequest(ns, structuredClone(body))),
        await outcome(() => client.deleteRequest(ns, name, 'not-its-uid')),
        await outcome(async () => client.deleteRequest(ns, name, await uidOf())),
        await outcome(() => client.deleteRequest(ns, name, 'any')),
      ];
      const uidIn = (client: KubeClient) => async () =>
        (await client.list(volumeExpansionRequests, { namespace: ns, fieldSelector: `metadata.name=${name}` })).items[0]?.metadata?.uid as string;
      expect(await steps(real, uidIn(real))).toEqual([200, 409, 409, 200, 404]);
      expect(await steps(fake, uidIn(fake))).toEqual([200, 409, 409, 200, 404]);
      expect(
        isAlreadyExists(
          await real
            .createRequest(ns, structuredClone(body))
            .then(() => real.createRequest(ns, structuredClone(body)))
            .catch((e: unknown) => e),
        ),
      ).toBe(true);
    });

    it('deleteStatefulSetOrphan and createStatefulSet: the preconditions, the orphaning delete, AlreadyExists — as the fake answers', async () => {
      const name = `${adapter}-sts`;
      const body = emptyStatefulSet(name);
      const fake = new FakeKubeClient();
      const settled = (client: KubeClient) => settledVersion(client, client === fake, name);
      const steps = async (client: KubeClient, collect: () => Promise<void>) => {
        const created = await client.createStatefulSet(ns, structuredClone(body));
        const uid = created.metadata?.uid as string;
        const rv = await settled(client);
        const codes = [
          await outcome(() => client.createStatefulSet(ns, structuredClone(body))),
          await outcome(() => client.deleteStatefulSetOrphan(ns, name, { uid: 'not-its-uid', resourceVersion: rv })),
          await outcome(() => client.deleteStatefulSetOrphan(ns, name, { uid, resourceVersion: '1' })),
          await outcome(() => client.deleteStatefulSetOrphan(ns, name, { uid, resourceVersion: rv })),
        ];
        await collect();
        codes.push(await outcome(() => client.deleteStatefulSetOrphan(ns, name, { uid, resourceVersion: rv })));
        codes.push((await client.getStatefulSet(ns, name)) === undefined ? 404 : 200);
        const again = await client.createStatefulSet(ns, structuredClone(body));
        codes.push(again.metadata?.uid !== uid ? 201 : 0);
        return codes;
      };
      const gone = async () => waitFor(`StatefulSet ${name} gone`, 60_000, async () => (await real.getStatefulSet(ns, name)) === undefined);
      const want = [409, 409, 409, 200, 404, 404, 201];
      expect(await steps(real, gone)).toEqual(want);
      expect(await steps(fake, async () => void fake.collectGarbage())).toEqual(want);
    });

    it('deleteStatefulSetOrphan’s version and readDeletion: an edit made while a finalizer holds the deletion is in the history, to the DELETED event — as the fake answers', async () => {
      const name = `${adapter}-history`;
      const hold = e2eHoldFinalizer;
      const body = emptyStatefulSet(name, [hold]);
      const fake = new FakeKubeClient();
      const appsApi = kc.makeApiClient(AppsV1Api);
      // An owner's write: through the apps API on the real server, the store's own update on the fake.
      // (A conflict with the StatefulSet controller's own write is written again, as kubectl edit would.)
      const write = async (client: KubeClient, change: (sts: V1StatefulSet) => void) => {
        for (let attempt = 0; ; attempt++) {
          const sts = (await client.getStatefulSet(ns, name)) as V1StatefulSet;
          change(sts);
          try {
            if (client === fake) fake.update(resources.statefulSets, sts);
            else await appsApi.replaceNamespacedStatefulSet({ namespace: ns, name, body: sts });
            return;
          } catch (err) {
            if ((err as { code?: number }).code !== 409 || attempt > 5) throw err;
          }
        }
      };
      const settled = (client: KubeClient) => settledVersion(client, client === fake, name);
      const steps = async (client: KubeClient) => {
        const created = await client.createStatefulSet(ns, structuredClone(body));
        const uid = created.metadata?.uid as string;
        const rv = created.metadata?.resourceVersion as string;
        const still = await readDeletion(client, resources.statefulSets, ns, name, rv, 1000);
        const left = await client.deleteStatefulSetOrphan(ns, name, { uid, resourceVersion: await settled(client) });
        await write(client, (sts) => (sts.metadata = { ...sts.metadata, labels: { ...sts.metadata?.labels, edited: 'while-deleting' } }));
        const history = readDeletion(client, resources.statefulSets, ns, name, left as string, 30_000);
        await write(client, (sts) => (sts.metadata = { ...sts.metadata, finalizers: (sts.metadata?.finalizers ?? []).filter((f) => f !== hold) }));
        if (client === fake) fake.collectGarbage();
        const h = await history;
        return {
          still: still.kind,
          left: left !== undefined && left !== rv,
          history: h.kind,
          editSeen: h.kind === 'deleted' && h.versions.some((v) => v.metadata?.labels?.edited === 'while-deleting'),
          lastIsIt: h.kind === 'deleted' && h.last.metadata?.uid === uid && h.last.metadata?.labels?.edited === 'while-deleting',
        };
      };
      const want = { still: 'present', left: true, history: 'deleted', editSeen: true, lastIsIt: true };
      expect(await steps(real)).toEqual(want);
      expect(await steps(fake)).toEqual(want);
    });

    it('createRecord, updateRecord and deleteRecord: AlreadyExists, the resourceVersion and UID preconditions — as the fake answers', async () => {
      const name = `${adapter}-record`;
      const record: V1ConfigMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: { 'step.json': '{}' } };
      const fake = new FakeKubeClient();
      const steps = async (client: KubeClient) => {
        const created = await client.createRecord(ns, structuredClone(record));
        const codes = [await outcome(() => client.createRecord(ns, structuredClone(record)))];
        const next = { ...record, metadata: { ...record.metadata, resourceVersion: created.metadata?.resourceVersion }, data: { 'step.json': '{"a":1}' } };
        const updated = await client.updateRecord(ns, structuredClone(next));
        codes.push(updated.data?.['step.json'] === '{"a":1}' ? 200 : 0);
        codes.push(await outcome(() => client.updateRecord(ns, structuredClone(next))));
        codes.push(await outcome(() => client.deleteRecord(ns, name, 'not-its-uid')));
        codes.push(await outcome(() => client.deleteRecord(ns, name, created.metadata?.uid as string)));
        codes.push(await outcome(() => client.deleteRecord(ns, name, created.metadata?.uid as string)));
        return codes;
      };
      const want = [409, 200, 409, 409, 200, 404];
      expect(await steps(real)).toEqual(want);
      expect(await steps(fake)).toEqual(want);
    });

    it('patchRequestFinalizers: the resourceVersion precondition; a request deleted with a finalizer stays until it goes — as the fake answers', async () => {
      const name = `${adapter}-finalizers`;
      const body = {
        apiVersion: 'pvx.dev/v1alpha1',
        kind: 'VolumeExpansionRequest',
        metadata: { name, namespace: ns },
        spec: { target: { pvcName: 'none' }, size: '2Gi', dryRun: true },
      };
      const fake = new FakeKubeClient();
      const steps = async (client: KubeClient) => {
        await client.createRequest(ns, structuredClone(body));
        const read = async () => (await client.list(volumeExpansionRequests, { namespace: ns, fieldSelector: `metadata.name=${name}` })).items[0];
        const first = (await read())?.metadata;
        const rv = await client.patchRequestFinalizers(ns, name, ['pvx.dev/statefulset-record'], first?.resourceVersion as string);
        const codes = [await outcome(() => client.patchRequestFinalizers(ns, name, [], first?.resourceVersion as string))];
        codes.push(await outcome(() => client.deleteRequest(ns, name, first?.uid as string)));
        const deleting = await read();
        codes.push(deleting?.metadata?.deletionTimestamp ? 200 : 0);
        codes.push(await outcome(() => client.patchRequestFinalizers(ns, name, [], deleting?.metadata?.resourceVersion as string)));
        codes.push((await read()) === undefined ? 404 : 200);
        return [rv === first?.resourceVersion ? 0 : 200, ...codes];
      };
      const want = [200, 409, 200, 200, 200, 404];
      expect(await steps(real)).toEqual(want);
      expect(await steps(fake)).toEqual(want);
    });

    it('evictPod: a PodDisruptionBudget that allows none (429, naming it, even for another UID), then one that allows it — as the fake answers', async () => {
      const name = `${adapter}-evict`;
      const labels = { app: name };
      const pod: V1Pod = {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name, namespace: ns, labels },
        spec: {
          hostNetwork: true,
          terminationGracePeriodSeconds: 1,
          automountServiceAccountToken: false,
          containers: [{ name: 'main', image: e2eEnv.image, imagePullPolicy: e2eEnv.imagePullPolicy, command: ['sh', '-c', 'sleep 3600'] }],
        },
      };
      const budget = (minAvailable: number): V1PodDisruptionBudget => ({
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name, namespace: ns },
        spec: { minAvailable, selector: { matchLabels: labels } },
      });
      const policy = kc.makeApiClient(PolicyV1Api);
      const created = await core.createNamespacedPod({ namespace: ns, body: pod });
      await waitForPodRunning(ns, name);
      await policy.createNamespacedPodDisruptionBudget({ namespace: ns, body: budget(1) });
      const allows = (n: number) =>
        waitFor(
          `budget ${name} to allow ${n}`,
          60_000,
          async () => (await policy.readNamespacedPodDisruptionBudget({ namespace: ns, name })).status?.disruptionsAllowed === n,
        );
      await allows(0);
      const uid = created.metadata?.uid as string;
      const refused = (await real.evictPod(ns, name, uid).catch((e: unknown) => e)) as ApiError;
      const realCodes = [await outcome(() => real.evictPod(ns, name, 'not-its-uid')), refused.code];
      expect(refused.causes.join(' ')).toMatch(new RegExp(`The disruption budget ${name} needs 1 healthy pods and has 1 currently`));
      await policy.patchNamespacedPodDisruptionBudget(
        { namespace: ns, name, body: { spec: { minAvailable: 0 } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await allows(1);
      realCodes.push(await outcome(() => real.evictPod(ns, name, uid)));
      await waitFor(`pod ${name} gone`, 60_000, async () => !(await core.readNamespacedPod({ namespace: ns, name }).catch(() => undefined)));
      realCodes.push(await outcome(() => real.evictPod(ns, name, uid)));
      await policy.deleteNamespacedPodDisruptionBudget({ namespace: ns, name });

      const fake = new FakeKubeClient();
      const fakePod = fake.create(resources.pods, { ...pod, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } } as V1Pod);
      fake.create(podDisruptionBudgets, {
        ...budget(1),
        status: { disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1 },
      } as V1PodDisruptionBudget);
      const fakeUID = fakePod.metadata?.uid as string;
      const fakeCodes = [await outcome(() => fake.evictPod(ns, name, 'not-its-uid')), await outcome(() => fake.evictPod(ns, name, fakeUID))];
      const b = fake.get<V1PodDisruptionBudget>(podDisruptionBudgets, ns, name) as V1PodDisruptionBudget;
      fake.update(podDisruptionBudgets, {
        ...b,
        metadata: { ...b.metadata, resourceVersion: undefined },
        status: { ...b.status, disruptionsAllowed: 1 },
      } as V1PodDisruptionBudget);
      fakeCodes.push(await outcome(() => fake.evictPod(ns, name, fakeUID)), await outcome(() => fake.evictPod(ns, name, fakeUID)));
      // The budget is checked before the UID precondition: another pod's UID, refused by the budget, is a 429.
      expect(realCodes).toEqual([429, 429, 200, 404]);
      expect(fakeCodes).toEqual(realCodes);
    });

    it('patchPolicyStatus: a namespaced and a cluster policy', async () => {
      const custom = kc.makeApiClient(CustomObjectsApi);
      const spec = { selector: { matchLabels: { 'pvx.dev/e2e-none': 'x' } }, triggers: { usedPercent: 80 }, step: { percent: 25 }, mode: 'DryRun' };
      const name = `${adapter}-policy`;
      const clusterName = `pvx-e2e-contract-${adapter}-${randomBytes(3).toString('hex')}`;
      const group = { group: 'pvx.dev', version: 'v1alpha1' };
      await custom.createNamespacedCustomObject({
        ...group,
        namespace: ns,
        plural: 'volumeexpansionpolicies',
        body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionPolicy', metadata: { name }, spec },
      });
      await custom.createClusterCustomObject({
        ...group,
        plural: 'clustervolumeexpansionpolicies',
        body: {
          apiVersion: 'pvx.dev/v1alpha1',
          kind: 'ClusterVolumeExpansionPolicy',
          metadata: { name: clusterName },
          spec: { namespaceSelector: { matchLabels: { 'pvx.dev/e2e-none': 'x' } }, guardrails: { maxSize: '1Gi' } },
        },
      });
      try {
        // Another suite's pvx may evaluate this policy and write its own status in between: the
        // write is tried again (three times at most) until it is read back before anyone else's.
        const readBack = async () => {
          await real.patchPolicyStatus({ kind: 'VolumeExpansionPolicy', namespace: ns, name }, { matchedPVCs: 3, volumes: [] });
          await real.patchPolicyStatus({ kind: 'ClusterVolumeExpansionPolicy', name: clusterName }, { matchedPVCs: 4, volumes: [] });
          const namespaced = await real.list(volumeExpansionPolicies, { namespace: ns, fieldSelector: `metadata.name=${name}` });
          const cluster = await real.list(clusterVolumeExpansionPolicies, { fieldSelector: `metadata.name=${clusterName}` });
          return [namespaced.items[0], cluster.items[0]].map((p) => (p as { status?: { matchedPVCs?: number } }).status?.matchedPVCs);
        };
        let seen = await readBack();
        for (let attempt = 1; attempt < 3 && !(seen[0] === 3 && seen[1] === 4); attempt++) seen = await readBack();
        expect(seen).toEqual([3, 4]);
      } finally {
        await custom.deleteClusterCustomObject({ ...group, plural: 'clustervolumeexpansionpolicies', name: clusterName }).catch(() => undefined);
      }
    });

    it('emitEvent: a core/v1 Event about the object, from pvx', async () => {
      const reason = `Contract${adapter === 'http' ? 'Http' : 'ClientNode'}`;
      await real.emitEvent({
        regarding: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: ns, name: 'some-claim', uid: 'u-1' },
        type: 'Warning',
        reason,
        message: 'm'.repeat(2000),
      });
      const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: `reason=${reason}` });
      expect(
        events.items.map((e) => [e.involvedObject.name, e.involvedObject.uid, e.type, e.message?.length, e.source?.component, e.reportingComponent, e.count]),
      ).toEqual([['some-claim', 'u-1', 'Warning', 1024, 'pvx', 'pvx.dev/operator', 1]]);
    });

    it('getServiceAccountKeys: the key set the API server signs tokens with, which verifies a token it minted', async () => {
      const keys = signingKeys(await real.getServiceAccountKeys());
      expect(keys.length).toBeGreaterThan(0);
      await ensureKubeletReader();
      const minted = await core.createNamespacedServiceAccountToken({
        namespace: pvxNamespace,
        name: 'pvx-usage-reader',
        body: { spec: { expirationSeconds: 600 } },
      });
      expect(tokenSignature(minted.status?.token ?? '', keys, Date.now() / 1000)).toEqual({
        kind: 'signed',
        subject: `system:serviceaccount:${pvxNamespace}:pvx-usage-reader`,
      });
    });

    it('leases: a missing one, creation, AlreadyExists, renewal with microsecond times, a stale version refused', async () => {
      const name = `${adapter}-lease`;
      const micro = (ms: number) => new Date(ms).toISOString().replace('Z', '123Z'); // six fractional digits, as MicroTime wants
      expect(await real.getLease(ns, name)).toBeUndefined();
      const lease: V1Lease = {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, namespace: ns },
        spec: { holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 0 },
      };
      const withTimes = (l: V1Lease, at: number): V1Lease => ({
        ...l,
        spec: { ...l.spec, acquireTime: micro(at) as unknown as Date, renewTime: micro(at) as unknown as Date },
      });
      await real.createLease(ns, withTimes(lease, Date.now()));
      expect(isAlreadyExists(await real.createLease(ns, withTimes(lease, Date.now())).catch((e: unknown) => e))).toBe(true);
      const read = (await real.getLease(ns, name)) as V1Lease;
      const renewed = await real.updateLease(ns, { ...read, spec: { ...read.spec, renewTime: micro(Date.now() + 1000) as unknown as Date } });
      expect(renewed.spec?.holderIdentity).toBe('a');
      expect(String(JSON.parse(JSON.stringify(renewed.spec?.renewTime)))).not.toBe(String(JSON.parse(JSON.stringify(read.spec?.renewTime))));
      expect(isConflict(await real.updateLease(ns, read).catch((e: unknown) => e))).toBe(true);
      await waitFor('the lease readable', 5_000, async () => Boolean(await real.getLease(ns, name)));
    });
  });
});

// The kubelet usage source reads /stats/summary from each kubelet itself (not through the API
// server's nodes/proxy): as the kubelet reader's ServiceAccount (pvx-usage-reader), whose only
// grant is nodes/stats get — pvx's own ServiceAccount has none, so a kubelet never sees pvx's
// token — and as the admin kubeconfig's client certificate, the kubelet's certificate checked
// against the cluster CA (the default when no --kubelet-ca-file is given).
describe('the kubelet read, from the kubelet itself', () => {
  const defaults = kubeletFlags({}, {});
  const firstNode = async () => (await core.listNode()).items[0] as V1Node;

  /** A kubelet client presenting the token of the kubeconfig at `path`, trusting the cluster CA. */
  async function kubeletClientAs(path: string) {
    const sa = await kubeconfigConnection(path);
    if (!('connection' in sa)) throw new Error(sa.unsupported);
    const http = new HttpKubeClient(sa.connection);
    return kubeletClient(defaults, {
      credentials: () => ({ token: http.bearerToken() }),
      clusterCa: { pem: sa.connection.ca as Buffer, source: 'the cluster CA' },
    });
  }

  it('as the kubelet reader ServiceAccount (token; RBAC nodes/stats get only), checked against the cluster CA', async () => {
    await ensureKubeletReader();
    const reader = await kubeletClientAs(await tokenKubeconfig(pvxNamespace, 'pvx-usage-reader', 'pvx-usage-reader.kubeconfig'));
    const node = await firstNode();
    const summary = (await reader.statsSummary(node)) as { node?: { nodeName?: string } };
    expect(summary.node?.nodeName).toBe(node.metadata?.name);
    reader.close();
  });

  it('not as pvx’s own ServiceAccount: the kubelet forbids it, naming the grant it lacks', async () => {
    const reader = await kubeletClientAs(await serviceAccountKubeconfig());
    await expect(reader.statsSummary(await firstNode())).rejects.toThrow(/403 Forbidden.*user=system:serviceaccount:pvx-system:pvx/);
    reader.close();
  });

  it('as the admin kubeconfig’s identity, through client-node’s credentials', async () => {
    const node = await firstNode();
    const reader = kubeletClient(defaults, kubeConfigAccess(kc));
    expect(((await reader.statsSummary(node)) as { node?: { nodeName?: string } }).node?.nodeName).toBe(node.metadata?.name);
    reader.close();
  });

  it('refuses a kubelet whose certificate the given CA does not sign, naming the CA and the address', async () => {
    const node = await firstNode();
    const reader = new HttpsKubeletClient({ credentials: () => ({}), trust: { source: "the system's trusted CAs" } });
    await expect(reader.statsSummary(node)).rejects.toThrow(/serving certificate is not trusted .*checked against the system's trusted CAs/);
    reader.close();
  });
});
