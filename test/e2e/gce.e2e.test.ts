// pvx with the real GCE PD CSI driver (Google's controller, v1.28.1) against the embedded cluster's
// Compute Engine emulator: a pd-balanced claim grown with its filesystem, a Hyperdisk performance
// change held back inside its window with the time the next may go, a size past a disk type's
// largest refused before any write, and Compute Engine's rate limit (ResourceExhausted) named as
// one by `pvx why`. pvx runs as its ServiceAccount.
//
// Every test uses a disk of its own, so they run concurrently.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeName } from '../cluster/layout.ts';
import { computeCalls, computeDisk, diskName, setComputeConfig, type ComputeCall } from './support/compute.ts';
import { e2eEnv } from './support/env.ts';
import { pvxNamespace, serviceAccountKubeconfig } from './support/identity.ts';
import { createNamespace, deleteNamespace, provisionedVolume, readPVC, statsSummary, waitFor } from './support/kube.ts';
import { runPvx } from './support/cli.ts';
import { startLeadingPvx, stopPvx, type PvxProcess } from './support/pvx-process.ts';
import { requestsIn, type Requests } from './support/requests.ts';

const GiB = 1024 ** 3;
const driver = 'pd.csi.storage.gke.io';
/** Hyperdisk's window for performance changes, as Google states it: once every 4 hours. */
const performanceWindowMs = 4 * 3600_000;

let ns: string;
let pvx: PvxProcess;
let requests: Requests;

// The emulator and its call log exist only in the embedded cluster; on GKE this suite does not apply.
describe.skipIf(!e2eEnv.embedded)('the GCE PD driver with Compute Engine emulated', () => {
  beforeAll(async () => {
    await setComputeConfig({ performanceChangesPerWindow: 1, performanceWindowSeconds: performanceWindowMs / 1000, faults: [] });
    ns = await createNamespace('pvx-e2e-gce');
    requests = requestsIn(ns);
    pvx = await startLeadingPvx(
      'gce',
      { namespace: pvxNamespace, id: 'pvx-e2e-gce' },
      // The profile's own budget (one performance change per 4 h): no --modification-budget.
      [],
      await serviceAccountKubeconfig(),
    );
  });

  afterAll(async () => {
    if (pvx) await stopPvx(pvx);
    if (ns) await deleteNamespace(ns);
    await setComputeConfig({ faults: [] }).catch(() => undefined);
  });

  /** A bound claim of this class (with a running pod mounting it, if `mount`); its disk's name. */
  async function provisionedDisk(claim: string, storageClass: string, size: string, mount = true): Promise<string> {
    const pv = await provisionedVolume(ns, claim, storageClass, size, mount);
    expect(pv.spec?.csi?.driver).toBe(driver);
    return diskName(pv.spec?.csi?.volumeHandle as string);
  }

  async function filesystemBytes(claim: string): Promise<number | undefined> {
    const summary = await statsSummary(nodeName);
    return summary.pods?.flatMap((p) => p.volume ?? []).find((v) => v.pvcRef?.namespace === ns && v.pvcRef.name === claim)?.capacityBytes;
  }

  const succeeded = (calls: ComputeCall[]) => calls.filter((c) => c.result === 'ok');

  describe.concurrent('requests', () => {
    it('grows a pd-balanced claim 10Gi → 20Gi with one disks.resize, filesystem included', async () => {
      const disk = await provisionedDisk('balanced', 'gce-pd-balanced', '10Gi');
      expect(await computeDisk(disk)).toMatchObject({ type: 'pd-balanced', sizeGb: 10 });
      await waitFor('the kubelet to measure the filesystem', 60_000, async () => ((await filesystemBytes('balanced')) ?? 0) > 0, 1000);
      await requests.create('grow-balanced', { target: { pvcName: 'balanced' }, size: '20Gi' });
      const { phases, request } = await requests.follow('grow-balanced');
      expect(request.status?.phase, `${phases.join(' → ')}: ${request.status?.message}`).toBe('Completed');
      expect(request.status).toMatchObject({ fromCapacity: '10Gi', targetSize: '20Gi', capacity: '20Gi' });
      expect(succeeded(await computeCalls(disk, 'disks.resize')).map((c) => c.body)).toEqual([{ sizeGb: '20' }]);
      expect(await computeDisk(disk)).toMatchObject({ sizeGb: 20 });
      await waitFor('the kubelet to measure the grown filesystem', 60_000, async () => ((await filesystemBytes('balanced')) ?? 0) > 19 * GiB, 1000);
      const t = request.status?.timeline ?? {};
      console.log(`pd-balanced 10Gi→20Gi: phases ${phases.join(' → ')}; total ${Date.parse(t.completedAt as string) - Date.parse(t.acceptedAt as string)} ms`);
    });

    it('changes a Hyperdisk’s performance once, and holds the second change back with the time it may go, sending nothing to Compute Engine', async () => {
      const disk = await provisionedDisk('hyperdisk', 'gce-hyperdisk-balanced', '10Gi', false);
      await requests.create('faster', { target: { pvcName: 'hyperdisk' }, volumeAttributesClassName: 'gce-hyperdisk-fast' });
      const first = await requests.follow('faster', undefined, 240_000);
      expect(first.request.status?.phase, `${first.phases.join(' → ')}: ${first.request.status?.message}`).toBe('Completed');
      expect(await computeDisk(disk)).toMatchObject({ provisionedIops: 6000, provisionedThroughput: 250 });
      const patchedAt = Date.parse(first.request.status?.timeline?.patchedAt as string);

      await requests.create('back-to-baseline', { target: { pvcName: 'hyperdisk' }, volumeAttributesClassName: 'gce-hyperdisk-baseline' });
      const held = await requests.follow('back-to-baseline', ['Pending', 'Completed', 'Failed', 'Rejected'], 30_000);
      expect(held.request.status?.reason, held.request.status?.message).toBe('ModificationBudgetExhausted');
      console.log(`Hyperdisk change held back: ${held.request.status?.message}`);
      const nextAt = Date.parse(/next is allowed at (\S+?Z)/.exec(held.request.status?.message ?? '')?.[1] ?? '');
      // Four hours after the first change (counted from pvx's own patch, a moment before the driver's update).
      expect(Math.abs(nextAt - (patchedAt + performanceWindowMs))).toBeLessThan(5000);
      expect((await readPVC(ns, 'hyperdisk')).spec?.volumeAttributesClassName).toBe('gce-hyperdisk-fast');
      const updates = await computeCalls(disk, 'disks.update');
      expect(updates.map((c) => [c.paths, c.result])).toEqual([[['provisionedIops', 'provisionedThroughput'], 'ok']]);
    });

    it('refuses a Hyperdisk Throughput claim past 32 TiB before any write', async () => {
      const disk = await provisionedDisk('throughput', 'gce-hyperdisk-throughput', '2Ti', false);
      await requests.create('too-large', { target: { pvcName: 'throughput' }, size: '40Ti' });
      const { request } = await requests.follow('too-large');
      expect(request.status?.phase).toBe('Rejected');
      expect(request.status?.reason).toBe('ExceedsDriverLimit');
      expect(request.status?.message).toMatch(/32Ti/);
      expect((await readPVC(ns, 'throughput')).spec?.resources?.requests?.storage).toBe('2Ti');
      expect(await computeCalls(disk, 'disks.resize')).toEqual([]);
    });

    it('names Compute Engine’s rate limit (ResourceExhausted) as one in `pvx why`, and completes once it lifts', async () => {
      const disk = await provisionedDisk('limited', 'gce-pd-balanced', '10Gi', false);
      const message = `Operation rate exceeded for resource 'projects/pvx-embedded/zones/us-central1-a/disks/${disk}'. Too frequent operations from the source resource.`;
      // Compute Engine refuses every resize of the disk for 40 s; the resizer retries with backoff (up to 30 s here).
      await setComputeConfig({ faults: [{ call: 'disks.resize', disk, seconds: 40, operationError: { code: 'RESOURCE_OPERATION_RATE_EXCEEDED', message } }] });
      await requests.create('grow-limited', { target: { pvcName: 'limited' }, size: '20Gi' });
      await waitFor('the driver to meet the rate limit', 60_000, async () => (await computeCalls(disk, 'disks.resize')).length > 0, 1000);
      let why = '';
      await waitFor(
        '`pvx why` to name the rate limit',
        60_000,
        async () => {
          why = (await runPvx(['why', 'pvc/limited', '-n', ns, '--kubeconfig', e2eEnv.kubeconfig], 120_000)).stdout;
          return /DriverRateLimited|limits how often/.test(why);
        },
        2000,
      );
      console.log(`pvx why under Compute Engine's rate limit:\n${why}`);
      expect(why).toMatch(/ResourceExhausted/);
      const { request } = await requests.follow('grow-limited', ['WaitingForPod', 'Completed', 'Failed', 'Rejected'], 240_000);
      expect(request.status?.phase, request.status?.message).toBe('WaitingForPod');
      const results = (await computeCalls(disk, 'disks.resize')).map((c) => c.result);
      expect(results.at(-1), 'the resize that went through once the limit lifted').toBe('ok');
      expect(results.slice(0, -1).length, 'refused while the limit held').toBeGreaterThan(0);
      expect(new Set(results.slice(0, -1))).toEqual(new Set(['operation:RESOURCE_OPERATION_RATE_EXCEEDED']));
    });
  });
});
