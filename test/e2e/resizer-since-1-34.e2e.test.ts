// What Kubernetes and the external-resizer added since 1.34, as the real components write it:
//   - volume.kubernetes.io/node-expansion-not-required (external-resizer v2.0): a claim grown in the
//     controller alone completes without any pod, and pvx why asks for none;
//   - volume.alpha.kubernetes.io/pre-resize-capacity on the PersistentVolume (AnnotateFsResize,
//     beta in v2.2): read where it explains the node stage, gone (and not missed) once it is done;
//   - a modifyVolumeStatus value pvx does not know: the API server takes it, and pvx shows it as
//     it is rather than failing the request.
// The suite runs on whichever Kubernetes release the embedded cluster was brought up with
// (PVX_KUBERNETES_VERSION: 1.34 and 1.37 in CI).
import { PatchStrategy, setHeaderOptions, StorageV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csiDriverName } from '../cluster/layout.ts';
import { runPvx } from './support/cli.ts';
import { e2eEnv } from './support/env.ts';
import { pvxNamespace, serviceAccountKubeconfig } from './support/identity.ts';
import { bindPVC, core, createNamespace, createPod, createPVC, deleteNamespace, kc, readPV, readPVC, waitFor, waitForPodRunning } from './support/kube.ts';
import { startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';
import { requestsIn, type Requests } from './support/requests.ts';

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const storageApi = kc.makeApiClient(StorageV1Api);
const leaseId = 'pvx-e2e-since-1-34';
let ns = '';
let requests: Requests;
let pvx: PvxProcess | undefined;
let attributesClass = '';

const why = async (target: string) => (await runPvx(['why', target, '-n', ns, '--kubeconfig', e2eEnv.kubeconfig, '-o', 'json'], 120_000)).stdout;
const gate = (report: string, id: string) =>
  (JSON.parse(report) as { gates: { gate: string; state: string; evidence: string; next?: string }[] }).gates.find((g) => g.gate === id);

beforeAll(async () => {
  ns = await createNamespace('pvx-e2e-134');
  requests = requestsIn(ns);
  pvx = startPvx(
    'since-1-34',
    ['--leader-election-namespace', pvxNamespace, '--leader-election-id', leaseId, '--namespace', ns, '--usage-source', 'none'],
    await serviceAccountKubeconfig(),
    { metrics: 'plain' },
  );
  await waitReady(pvx, 90_000);
  await waitFor('pvx to lead', 90_000, async () => (await pvx?.metric('leader_election_master_status', { name: leaseId })) === 1, 1000);
}, 180_000);

afterAll(async () => {
  if (pvx) await stopPvx(pvx);
  if (ns) await deleteNamespace(ns);
  if (attributesClass) await storageApi.deleteVolumeAttributesClass({ name: attributesClass }).catch(() => undefined);
}, 120_000);

describe.skipIf(!e2eEnv.embedded)('the external-resizer’s annotations and status values since Kubernetes 1.34', () => {
  it('node-expansion-not-required: a claim grown in the controller alone completes with no pod, and pvx why asks for none', async () => {
    await createPVC(ns, 'shared', 'pvx-hostpath-online', '1Gi');
    await bindPVC(ns, 'shared');
    await requests.create('grow-shared', { target: { pvcName: 'shared' }, size: '2Gi' });
    const { request, phases } = await requests.follow('grow-shared', ['Completed', 'Failed', 'Rejected'], 180_000);
    expect(request.status).toMatchObject({ phase: 'Completed', capacity: '2Gi' });
    expect(phases).not.toContain('WaitingForPod');
    const claim = await readPVC(ns, 'shared');
    expect(claim.metadata?.annotations?.['volume.kubernetes.io/node-expansion-not-required']).toBe('true');
    expect(request.status?.message).toMatch(/no node step/);
    const node = gate(await why('ver/grow-shared'), 'node-stage');
    expect(node).toMatchObject({ state: 'passed', evidence: expect.stringMatching(/^not needed: the resizer completed the expansion without a node step/) });
    expect(node?.next).toBeUndefined();
    expect(gate(await why('pvc/shared'), 'node-stage')).toMatchObject({
      state: 'not-applicable',
      evidence: expect.stringMatching(/; the last one needed no node step \(volume\.kubernetes\.io\/node-expansion-not-required\)$/),
    });
  }, 300_000);

  it('pre-resize-capacity: names the capacity the filesystem still has while it waits for a pod, and is not missed once gone', async () => {
    await createPVC(ns, 'idle', e2eEnv.expandableClass as string, '1Gi');
    await bindPVC(ns, 'idle');
    await requests.create('grow-idle', { target: { pvcName: 'idle' }, size: '2Gi' });
    await requests.follow('grow-idle', ['WaitingForPod'], 180_000);
    const pvName = (await readPVC(ns, 'idle')).spec?.volumeName as string;
    await waitFor(
      'the resizer to annotate the PersistentVolume',
      60_000,
      async () => (await readPV(pvName)).metadata?.annotations?.['volume.alpha.kubernetes.io/pre-resize-capacity'] !== undefined,
      1000,
    );
    expect((await readPV(pvName)).metadata?.annotations?.['volume.alpha.kubernetes.io/pre-resize-capacity']).toBe('1Gi');
    expect(gate(await why('pvc/idle'), 'resizer')?.evidence).toMatch(
      /^the volume grew from 1Gi \(the PersistentVolume's volume\.alpha\.kubernetes\.io\/pre-resize-capacity\) to 2Gi/,
    );
    await createPod(ns, 'idle', 'idle');
    await waitForPodRunning(ns, 'idle');
    const { request } = await requests.follow('grow-idle', ['Completed', 'Failed', 'Rejected'], 180_000);
    expect(request.status?.phase).toBe('Completed');
    await waitFor(
      'the resizer to remove the annotation',
      120_000,
      async () => (await readPV(pvName)).metadata?.annotations?.['volume.alpha.kubernetes.io/pre-resize-capacity'] === undefined,
      1000,
    );
    expect(gate(await why('pvc/idle'), 'node-stage')?.state).not.toBe('holding');
  }, 300_000);

  it('a modifyVolumeStatus value pvx does not know: taken by the API server, shown by pvx as it is', async () => {
    attributesClass = `${ns}-gold`;
    await storageApi.createVolumeAttributesClass({
      body: {
        apiVersion: 'storage.k8s.io/v1',
        kind: 'VolumeAttributesClass',
        metadata: { name: attributesClass },
        driverName: csiDriverName,
        parameters: { tier: 'gold' },
      },
    });
    await createPVC(ns, 'tiered', e2eEnv.expandableClass as string, '1Gi');
    await bindPVC(ns, 'tiered');
    await requests.create('gold-tiered', { target: { pvcName: 'tiered' }, volumeAttributesClassName: attributesClass });
    await waitFor('pvx to set the class', 120_000, async () => (await readPVC(ns, 'tiered')).spec?.volumeAttributesClassName === attributesClass, 1000);
    // The test driver modifies nothing (no modify controller runs for it): the status is written here, as a newer resizer might.
    await core.patchNamespacedPersistentVolumeClaimStatus(
      { namespace: ns, name: 'tiered', body: { status: { modifyVolumeStatus: { targetVolumeAttributesClassName: attributesClass, status: 'Paused' } } } },
      merge,
    );
    expect((await readPVC(ns, 'tiered')).status?.modifyVolumeStatus?.status).toBe('Paused');
    const { request } = await requests.follow('gold-tiered', ['Modifying'], 120_000);
    await waitFor(
      'pvx to show the unknown status',
      120_000,
      async () => (await requests.read('gold-tiered')).status?.reason === 'UnknownModifyVolumeStatus',
      1000,
    );
    const shown = await requests.read('gold-tiered');
    expect(shown.status).toMatchObject({
      phase: 'Modifying',
      reason: 'UnknownModifyVolumeStatus',
      message: expect.stringMatching(/unrecognised modifyVolumeStatus "Paused"/),
    });
    expect(request.status?.phase).not.toBe('Failed');
    // The value goes, the class is applied: the request completes.
    await core.patchNamespacedPersistentVolumeClaimStatus(
      { namespace: ns, name: 'tiered', body: { status: { modifyVolumeStatus: null, currentVolumeAttributesClassName: attributesClass } } },
      merge,
    );
    expect((await requests.follow('gold-tiered', ['Completed', 'Failed', 'Rejected'], 120_000)).request.status?.phase).toBe('Completed');
  }, 300_000);
});
