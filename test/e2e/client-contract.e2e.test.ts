// The KubeClient port's claim patch on the real API server, side by side with the in-memory fake
// the unit tests and the simulation rely on: every refusal pvx's decisions depend on — the claim's
// UID and resourceVersion preconditions, PersistentVolumeClaimResize admission, lowering at or
// below status.capacity — must come back with the same code from both, or the fake proves nothing.
import type { KubernetesObject, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PvcSizePatch } from '../../src/k8s/client.ts';
import { ApiError } from '../../src/k8s/errors.ts';
import { FakeKubeClient } from '../../src/k8s/fake-client.ts';
import { NodeKubeClient } from '../../src/k8s/node-client.ts';
import { resources, volumeExpansionRequests } from '../../src/k8s/resources.ts';
import { e2eEnv } from './support/env.ts';
import { bindPVC, createNamespace, createPVC, deleteNamespace, kc, readPVC, storage } from './support/kube.ts';

const real = new NodeKubeClient(kc);
let ns: string;

beforeAll(async () => {
  ns = await createNamespace('pvx-e2e-contract');
});

afterAll(async () => {
  if (ns) await deleteNamespace(ns);
});

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

describe.skipIf(!e2eEnv.expandableClass || !e2eEnv.fixedClass)('patchPvcSize refusals: the real API server and the fake agree', () => {
  const cases: { name: string; claim: string; class: () => string; change: (c: V1PersistentVolumeClaim) => Partial<PvcSizePatch>; want: number }[] = [
    { name: 'a UID that is not the claim’s (a claim re-created under the same name)', claim: 'uid', class: () => e2eEnv.expandableClass as string, change: () => ({ uid: 'not-this-claim', storage: '2Gi' }), want: 409 },
    { name: 'a stale resourceVersion', claim: 'stale', class: () => e2eEnv.expandableClass as string, change: () => ({ resourceVersion: '1', storage: '2Gi' }), want: 409 },
    { name: 'a class that does not allow expansion', claim: 'fixed', class: () => e2eEnv.fixedClass as string, change: () => ({ storage: '2Gi' }), want: 403 },
    { name: 'lowering to the capacity', claim: 'lower', class: () => e2eEnv.expandableClass as string, change: () => ({ storage: '512Mi' }), want: 422 },
    { name: 'growing, with the claim’s own UID and resourceVersion', claim: 'grow', class: () => e2eEnv.expandableClass as string, change: () => ({ storage: '2Gi' }), want: 200 },
  ];

  it.each(cases)('$name → $want', async (c) => {
    await createPVC(ns, c.claim, c.class(), '1Gi');
    await bindPVC(ns, c.claim);
    const claim = await readPVC(ns, c.claim);
    const patch = (target: V1PersistentVolumeClaim): PvcSizePatch => ({
      uid: target.metadata?.uid as string,
      resourceVersion: target.metadata?.resourceVersion as string,
      storage: '2Gi',
      annotations: { 'pvx.dev/e2e': 'contract' },
      ...c.change(target),
    });
    const fake = await mirror(claim);
    const fakeClaim = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, ns, c.claim) as V1PersistentVolumeClaim;
    const fromReal = await outcome(() => real.patchPvcSize(ns, c.claim, patch(claim)));
    const fromFake = await outcome(() => fake.patchPvcSize(ns, c.claim, patch(fakeClaim)));
    expect({ real: fromReal, fake: fromFake }).toEqual({ real: c.want, fake: c.want });
    if (c.want !== 200) expect((await readPVC(ns, c.claim)).spec?.resources?.requests?.storage).toBe('1Gi');
  });
});

describe('patchRequestStatus: a status decided from a stale copy is refused by both', () => {
  it.each([
    ['the request as last read', (rv: string) => rv, 200],
    ['a stale resourceVersion', () => '1', 409],
  ])('%s → %s', async (_name, version, want) => {
    const name = `status-${want}`;
    const request = { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionRequest', metadata: { name, namespace: ns }, spec: { target: { pvcName: 'none' }, size: '2Gi', dryRun: true } };
    await real.createRequest(ns, request);
    const page = await real.list(volumeExpansionRequests, { namespace: ns, fieldSelector: `metadata.name=${name}` });
    const rv = page.items[0]?.metadata?.resourceVersion as string;
    const fake = new FakeKubeClient();
    const mirrored = fake.create<KubernetesObject>(volumeExpansionRequests, { ...request, metadata: { ...request.metadata } });
    const fromReal = await outcome(() => real.patchRequestStatus(ns, name, { phase: 'Pending', reason: 'Contract', message: 'e2e' }, version(rv)));
    const fromFake = await outcome(() => fake.patchRequestStatus(ns, name, { phase: 'Pending', reason: 'Contract', message: 'e2e' }, version(mirrored.metadata?.resourceVersion as string)));
    expect({ real: fromReal, fake: fromFake }).toEqual({ real: want, fake: want });
  });
});
