// pvx with the real AWS EBS CSI driver (Amazon's controller, v1.63.0) against the embedded
// cluster's EC2 emulator: the seed's gp3 30Gi → 40Gi, EBS's modification budget held back by pvx
// before anything reaches EC2, the driver's own refusals (rate limit, optimizing) shown as waits,
// and the per-type size limits. pvx runs as its ServiceAccount.
//
// Every test uses a volume of its own, so they run concurrently; EBS's timings are set once for
// the suite (modifications take seconds, the rate limit's window minutes) and pvx is told the same
// window with --modification-budget.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeName } from '../cluster/layout.ts';
import { apiserverAudits, auditLogEnd, readAuditEvents } from './support/audit-log.ts';
import { ec2Call, ec2Calls, ec2Volume, resetEc2Timing, setEc2Timing, type Ec2Call } from './support/ec2.ts';
import { e2eEnv } from './support/env.ts';
import { pvxNamespace, serviceAccountKubeconfig } from './support/identity.ts';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import type { VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import {
  WatchRecorder,
  core,
  createNamespace,
  kc,
  createPod,
  deleteNamespace,
  patchPVCSize,
  provisionedVolume,
  readPVC,
  statsSummary,
  waitFor,
  waitForPodRunning,
} from './support/kube.ts';
import { startLeadingPvx, stopPvx, type PvxProcess } from './support/pvx-process.ts';
import { requestsIn, type Requests } from './support/requests.ts';

const custom = kc.makeApiClient(CustomObjectsApi);

const GiB = 1024 ** 3;
const windowSeconds = 200;
const timing = { modifyingSeconds: 2, optimizingSeconds: 20, modificationWindowSeconds: windowSeconds, modificationsPerWindow: 4 };

let ns: string;
let pvx: PvxProcess;
let requests: Requests;

// The emulator and its call log exist only in the embedded cluster; on EKS this suite does not apply.
describe.skipIf(!e2eEnv.embedded)('the AWS EBS driver with EC2 emulated', () => {
  beforeAll(async () => {
    await setEc2Timing(timing);
    ns = await createNamespace('pvx-e2e-ebs');
    requests = requestsIn(ns);
    pvx = await startLeadingPvx(
      'ebs',
      { namespace: pvxNamespace, id: 'pvx-e2e-ebs' },
      ['--modification-budget', `ebs.csi.aws.com=4/${windowSeconds}s`],
      await serviceAccountKubeconfig(),
    );
  });

  afterAll(async () => {
    if (pvx) await stopPvx(pvx);
    if (ns) await deleteNamespace(ns);
    resetEc2Timing();
  });

  /** A bound claim of this class with a running pod mounting it; its EBS volume ID. */
  async function mountedVolume(claim: string, storageClass: string, size: string, mount = true): Promise<string> {
    return (await provisionedVolume(ns, claim, storageClass, size, mount)).spec?.csi?.volumeHandle as string;
  }

  /** The capacity of the claim's filesystem as the kubelet measures it (statfs in the pod's mount). */
  async function filesystemBytes(claim: string): Promise<number | undefined> {
    const summary = await statsSummary(nodeName);
    const volume = summary.pods?.flatMap((p) => p.volume ?? []).find((v) => v.pvcRef?.namespace === ns && v.pvcRef.name === claim);
    return volume?.capacityBytes;
  }

  const succeeded = (calls: Ec2Call[]) => calls.filter((c) => c.result === 'ok');

  describe.concurrent('requests', () => {
    it("grows the seed's gp3 claim 30Gi → 40Gi with one ModifyVolume, through every phase, filesystem included", async () => {
      const volumeId = await mountedVolume('seed', 'ebs-gp3', '30Gi');
      let before: number | undefined;
      await waitFor('the kubelet to measure the new filesystem', 60_000, async () => (before = await filesystemBytes('seed')) !== undefined, 1000);
      expect(before).toBeLessThan(30 * GiB);
      // Kubernetes' side of the chain, as the resizer and the kubelet write it on the claim.
      const claimEvents = new WatchRecorder<V1PersistentVolumeClaim>(`/api/v1/namespaces/${ns}/persistentvolumeclaims`, 'metadata.name=seed');
      await claimEvents.start((await readPVC(ns, 'seed')).metadata?.resourceVersion);
      await requests.create('grow-seed', { target: { pvcName: 'seed' }, size: '40Gi' });
      const { phases, request } = await requests.follow('grow-seed');
      claimEvents.stop();
      const stages = claimEvents.events.map(
        (e) => e.object.status?.allocatedResourceStatuses?.storage ?? (e.object.status?.capacity?.storage === '40Gi' ? 'Done' : 'None'),
      );
      // The kubelet may be seen at work (NodeResizeInProgress) between pending and done.
      const chain = stages.filter((stage, i) => stage !== stages[i - 1] && stage !== 'None' && stage !== 'NodeResizeInProgress');
      expect(chain).toEqual(['ControllerResizeInProgress', 'NodeResizePending', 'Done']);

      expect(request.status?.phase, request.status?.message).toBe('Completed');
      expect(phases).toEqual(expect.arrayContaining(['Expanding', 'Completed']));
      expect(request.status).toMatchObject({ fromCapacity: '30Gi', targetSize: '40Gi', capacity: '40Gi' });
      const modifications = await ec2Calls(volumeId, 'ModifyVolume');
      expect(modifications.map((c) => [c.params.Size, c.result])).toEqual([['40', 'ok']]);
      await waitFor('the kubelet to measure the grown filesystem', 60_000, async () => ((await filesystemBytes('seed')) ?? 0) > 39 * GiB, 1000);

      const t = request.status?.timeline ?? {};
      const at = (k: keyof typeof t) => Date.parse(t[k] as string);
      // pvx's side: each step timed, in order.
      expect(at('acceptedAt')).toBeLessThanOrEqual(at('patchedAt'));
      expect(at('patchedAt')).toBeLessThan(at('controllerExpandedAt'));
      expect(at('controllerExpandedAt')).toBeLessThanOrEqual(at('completedAt'));
      // The measured times test/cluster/README.md quotes.
      console.log(
        `gp3 30Gi→40Gi: phases ${phases.join(' → ')}; accepted→patched ${at('patchedAt') - at('acceptedAt')} ms, patched→controller expanded ${at('controllerExpandedAt') - at('patchedAt')} ms, →completed ${at('completedAt') - at('controllerExpandedAt')} ms, total ${at('completedAt') - at('acceptedAt')} ms`,
      );
    });

    it('spends four modifications, holds the fifth back with the time it may go, and sends nothing to EC2 meanwhile', async () => {
      const volumeId = await mountedVolume('budget', 'ebs-gp3', '1Gi');
      const firstAt = Date.now();
      for (let i = 1; i <= 4; i++) {
        await requests.create(`budget-${i}`, { target: { pvcName: 'budget' }, size: `${1 + i}Gi` });
        const { request } = await requests.follow(`budget-${i}`);
        expect(request.status?.phase, request.status?.message).toBe('Completed');
      }
      expect(Date.now() - firstAt, 'the four expansions fit in the window').toBeLessThan(windowSeconds * 1000);

      await requests.create('budget-5', { target: { pvcName: 'budget' }, size: '6Gi' });
      const held = await requests.follow('budget-5', ['Pending', 'Completed', 'Failed', 'Rejected'], 30_000);
      expect(held.request.status?.reason, held.request.status?.message).toBe('ModificationBudgetExhausted');
      console.log(`budget held back: ${held.request.status?.message}`);
      const nextAt = /next is allowed at (\S+?Z)/.exec(held.request.status?.message ?? '')?.[1];
      expect(nextAt, held.request.status?.message).toBeDefined();
      expect((await readPVC(ns, 'budget')).spec?.resources?.requests?.storage).toBe('5Gi');

      const { request } = await requests.follow('budget-5', undefined, (windowSeconds + 120) * 1000);
      expect(request.status?.phase, request.status?.message).toBe('Completed');
      expect(Date.parse(request.status?.timeline?.patchedAt as string)).toBeGreaterThanOrEqual(Date.parse(nextAt as string));
      const modifications = await ec2Calls(volumeId, 'ModifyVolume');
      expect(succeeded(modifications).map((c) => c.params.Size)).toEqual(['2', '3', '4', '5', '6']);
      expect(
        modifications.filter((c) => c.result === 'VolumeModificationRateExceeded'),
        'pvx never sent a modification EC2 had to refuse',
      ).toEqual([]);
    });

    it('counts modifications made by hand on the claim, and says so', async () => {
      const volumeId = await mountedVolume('by-hand', 'ebs-gp3', '1Gi');
      for (let size = 2; size <= 5; size++) {
        await patchPVCSize(ns, 'by-hand', `${size}Gi`);
        await waitFor(`by-hand to reach ${size}Gi`, 90_000, async () => (await readPVC(ns, 'by-hand')).status?.capacity?.storage === `${size}Gi`, 1000);
      }
      await requests.create('after-hand', { target: { pvcName: 'by-hand' }, size: '6Gi' });
      const held = await requests.follow('after-hand', ['Pending', 'Completed', 'Failed', 'Rejected'], 30_000);
      expect(held.request.status?.reason, held.request.status?.message).toBe('ModificationBudgetExhausted');
      expect(held.request.status?.message).toMatch(/observed/);
      console.log(`budget spent by hand: ${held.request.status?.message}`);
      expect(succeeded(await ec2Calls(volumeId, 'ModifyVolume'))).toHaveLength(4);
      expect((await readPVC(ns, 'by-hand')).metadata?.annotations?.['pvx.dev/modifications'], 'the count is kept on the claim').toBeDefined();
    });

    it(
      "shows the driver's rate limit, with the time it lifts, when the budget was spent where Kubernetes cannot see it",
      async () => {
        const volumeId = await mountedVolume('elsewhere', 'ebs-gp3', '1Gi');
        // Four modifications through EC2 directly (the AWS console, another tool): throughput changes.
        for (const throughput of [130, 140, 150, 160]) {
          await ec2ModifyThroughput(volumeId, throughput);
        }
        const auditFrom = auditLogEnd();
        await requests.create('after-elsewhere', { target: { pvcName: 'elsewhere' }, size: '2Gi' });
        const limited = await requests.follow('after-elsewhere', ['Completed', 'Failed', 'Rejected'], 60_000).catch(() => undefined);
        expect(limited, 'the request cannot complete while EC2 refuses').toBeUndefined();
        const shown = await requests.read('after-elsewhere');
        expect(shown.status?.reason, shown.status?.message).toBe('DriverRateLimited');
        expect(shown.status?.message).toMatch(/VolumeModificationRateExceeded/);
        console.log(`rate limited: ${shown.status?.message}`);
        expect(shown.status?.message).toMatch(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
        const refused = await ec2Calls(volumeId, 'ModifyVolume');
        expect(refused.some((c) => c.result === 'VolumeModificationRateExceeded')).toBe(true);

        const { request } = await requests.follow('after-elsewhere', undefined, (windowSeconds + 120) * 1000);
        expect(request.status?.phase, request.status?.message).toBe('Completed');
        if (apiserverAudits()) {
          const claimPatches = readAuditEvents(auditFrom).filter(
            (e) =>
              e.verb === 'patch' &&
              e.objectRef?.resource === 'persistentvolumeclaims' &&
              e.objectRef.name === 'elsewhere' &&
              !e.objectRef.subresource &&
              e.user.username.includes('pvx'),
          );
          expect(claimPatches, 'pvx patched the claim once and let the resizer retry').toHaveLength(1);
        }
      },
      (windowSeconds + 300) * 1000,
    );

    it(
      'a policy makes one request and raises nothing while EBS refuses it, and the claim grows once the window allows',
      async () => {
        const volumeId = await mountedVolume('filling', 'ebs-gp3', '1Gi', false);
        await patchClaimLabels('filling', { fill: 'ebs' });
        for (const throughput of [130, 140, 150, 160]) await ec2ModifyThroughput(volumeId, throughput);
        await createPod(ns, 'filling', 'filling', 'dd if=/dev/zero of=/data/fill bs=1M count=700 && sync; sleep 3600');
        await waitForPodRunning(ns, 'filling');
        await custom.createNamespacedCustomObject({
          group: 'pvx.dev',
          version: 'v1alpha1',
          plural: 'volumeexpansionpolicies',
          namespace: ns,
          body: {
            apiVersion: 'pvx.dev/v1alpha1',
            kind: 'VolumeExpansionPolicy',
            metadata: { name: 'grow-ebs' },
            spec: {
              selector: { matchLabels: { fill: 'ebs' } },
              triggers: { usedPercent: 50, sustainedSamples: 2 },
              step: { percent: 100, minimum: '1Gi' },
              maxSize: '8Gi',
              cooldown: '10s',
            },
          },
        });
        let first: VolumeExpansionRequest | undefined;
        await waitFor('the policy to create a request', 180_000, async () => (first = (await policyRequests('grow-ebs'))[0]) !== undefined, 1000);
        const name = first?.metadata.name as string;
        await waitFor('EBS to refuse it', 120_000, async () => (await requests.read(name)).status?.reason === 'DriverRateLimited', 1000);
        const target = (await readPVC(ns, 'filling')).spec?.resources?.requests?.storage;
        // Many evaluation intervals and resizer retries later: still that one request, that one target.
        await sleep(60_000);
        expect((await policyRequests('grow-ebs')).map((r) => r.metadata.name)).toEqual([name]);
        expect((await readPVC(ns, 'filling')).spec?.resources?.requests?.storage).toBe(target);
        const { request } = await requests.follow(name, undefined, (windowSeconds + 120) * 1000);
        expect(request.status?.phase, request.status?.message).toBe('Completed');
      },
      (windowSeconds + 400) * 1000,
    );

    it('waits while EBS is still optimizing the previous modification, and completes', async () => {
      await mountedVolume('optimizing', 'ebs-gp3', '1Gi');
      await requests.create('optimizing-1', { target: { pvcName: 'optimizing' }, size: '2Gi' });
      expect((await requests.follow('optimizing-1')).request.status?.phase).toBe('Completed');
      // Well within the 20 s the first modification stays `optimizing`.
      await requests.create('optimizing-2', { target: { pvcName: 'optimizing' }, size: '3Gi' });
      const { phases, reasons, messages, request } = await requests.follow('optimizing-2', undefined, 240_000);
      expect(request.status?.phase, request.status?.message).toBe('Completed');
      expect(reasons, phases.join(' → ')).toContain('DriverModificationInProgress');
      console.log(`optimizing: ${messages.get('DriverModificationInProgress')}`);
      expect(phases).not.toContain('Failed');
    });

    it('refuses gp2 past 16 TiB before any write, and lets io2 grow to 20 TiB', async () => {
      const gp2 = await mountedVolume('gp2', 'ebs-gp2', '1Gi', false);
      const io2 = await mountedVolume('io2', 'ebs-io2', '4Gi', false);
      await requests.create('gp2-20ti', { target: { pvcName: 'gp2' }, size: '20Ti' });
      await requests.create('io2-20ti', { target: { pvcName: 'io2' }, size: '20Ti' });

      const refused = await requests.follow('gp2-20ti');
      expect(refused.request.status?.phase).toBe('Rejected');
      expect(refused.request.status?.reason).toBe('ExceedsDriverLimit');
      expect((await readPVC(ns, 'gp2')).spec?.resources?.requests?.storage).toBe('1Gi');
      expect(await ec2Calls(gp2, 'ModifyVolume')).toEqual([]);

      // No pod mounts the io2 claim: EBS grows the volume, the filesystem waits for a pod.
      const grown = await requests.follow('io2-20ti', ['WaitingForPod', 'Completed', 'Failed', 'Rejected']);
      expect(grown.request.status?.phase, grown.request.status?.message).toBe('WaitingForPod');
      expect(succeeded(await ec2Calls(io2, 'ModifyVolume')).map((c) => c.params.Size)).toEqual(['20480']);
    });
  });

  // A VolumeAttributesClass change is an EBS modification like a resize: gp3 allows 500 IOPS per GiB,
  // so ebs-gp3-fast (6000 IOPS) needs at least 12 GiB.
  describe.concurrent('VolumeAttributesClass changes', () => {
    it('changes size and class in one claim patch, which the driver makes one ModifyVolume', async () => {
      const volumeId = await mountedVolume('size-and-class', 'ebs-gp3', '10Gi');
      const auditFrom = auditLogEnd();
      await requests.create('faster-and-larger', { target: { pvcName: 'size-and-class' }, size: '12Gi', volumeAttributesClassName: 'ebs-gp3-fast' });
      const { phases, request } = await requests.follow('faster-and-larger', undefined, 240_000);
      expect(request.status?.phase, `${phases.join(' → ')}: ${request.status?.message}`).toBe('Completed');
      const pvc = await readPVC(ns, 'size-and-class');
      expect(pvc.status?.currentVolumeAttributesClassName).toBe('ebs-gp3-fast');
      expect(pvc.status?.capacity?.storage).toBe('12Gi');
      const modifications = succeeded(await ec2Calls(volumeId, 'ModifyVolume'));
      expect(modifications.map((c) => [c.params.Size, c.params.Iops, c.params.Throughput])).toEqual([['12', '6000', '250']]);
      if (apiserverAudits()) {
        const writes = readAuditEvents(auditFrom).filter(
          (e) =>
            e.verb === 'patch' &&
            e.objectRef?.resource === 'persistentvolumeclaims' &&
            e.objectRef.name === 'size-and-class' &&
            !e.objectRef.subresource &&
            e.user.username.includes('pvx'),
        );
        expect(
          writes.map((e) => e.requestObject?.spec),
          'one patch carries both',
        ).toEqual([{ resources: { requests: { storage: '12Gi' } }, volumeAttributesClassName: 'ebs-gp3-fast' }]);
      }
    });

    it('changes the class alone', async () => {
      const volumeId = await mountedVolume('class-only', 'ebs-gp3', '12Gi');
      await requests.create('faster', { target: { pvcName: 'class-only' }, volumeAttributesClassName: 'ebs-gp3-fast' });
      const { phases, request } = await requests.follow('faster', undefined, 240_000);
      expect(request.status?.phase, `${phases.join(' → ')}: ${request.status?.message}`).toBe('Completed');
      expect(phases).toContain('Modifying');
      expect((await readPVC(ns, 'class-only')).status?.currentVolumeAttributesClassName).toBe('ebs-gp3-fast');
      const modifications = succeeded(await ec2Calls(volumeId, 'ModifyVolume'));
      expect(modifications.map((c) => [c.params.Size, c.params.Iops, c.params.Throughput])).toEqual([[undefined, '6000', '250']]);
    });

    it('fails a class EBS refuses for this volume (Infeasible), with what to do', async () => {
      const volumeId = await mountedVolume('too-small-for-fast', 'ebs-gp3', '1Gi', false);
      await requests.create('too-fast', { target: { pvcName: 'too-small-for-fast' }, volumeAttributesClassName: 'ebs-gp3-fast' });
      const { request } = await requests.follow('too-fast', undefined, 240_000);
      expect(request.status?.phase, request.status?.message).toBe('Failed');
      expect(request.status?.reason).toBe('ModifyVolumeInfeasible');
      // EC2's refusal, through the driver and the resizer.
      expect(request.status?.message).toMatch(/Iops to volume size ratio/);
      expect(request.status?.message).toMatch(/kubectl patch/);
      console.log(`infeasible class: ${request.status?.message}`);
      expect(succeeded(await ec2Calls(volumeId, 'ModifyVolume'))).toEqual([]);
    });
  });
});

async function patchClaimLabels(claim: string, labels: Record<string, string>): Promise<void> {
  await core.patchNamespacedPersistentVolumeClaim(
    { namespace: ns, name: claim, body: { metadata: { labels } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

async function policyRequests(policy: string): Promise<VolumeExpansionRequest[]> {
  const list = (await custom.listNamespacedCustomObject({
    group: 'pvx.dev',
    version: 'v1alpha1',
    plural: 'volumeexpansionrequests',
    namespace: ns,
    labelSelector: `pvx.dev/policy=${policy}`,
  })) as { items: VolumeExpansionRequest[] };
  return list.items;
}

/** One EC2 ModifyVolume sent straight to the emulator (as the AWS console would), then waits for it to complete. */
async function ec2ModifyThroughput(volumeId: string, throughput: number): Promise<void> {
  await ec2Call({ Action: 'ModifyVolume', VolumeId: volumeId, Throughput: String(throughput) });
  await waitFor(
    `the throughput change to ${throughput} to complete`,
    60_000,
    async () => (await ec2Volume(volumeId))?.latestModification?.modificationState === 'completed',
    1000,
  );
}
