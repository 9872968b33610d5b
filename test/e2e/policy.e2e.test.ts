// Auto-expansion on real usage: a pod fills an XFS volume (its own usage in the kubelet's stats),
// a VolumeExpansionPolicy notices through the kubelet source and creates a request, the volume
// grows, and no second expansion follows while usage statistics catch up.
import { CustomObjectsApi, Exec } from '@kubernetes/client-node';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PolicySpec, VolumeExpansionPolicy } from '../../src/crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import { e2eEnv } from './support/env.ts';
import { bindPVC, core, createNamespace, createPod, deleteNamespace, kc, readPVC, waitFor, waitForPodRunning } from './support/kube.ts';
import { startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';

const custom = kc.makeApiClient(CustomObjectsApi);
const group = { group: 'pvx.dev', version: 'v1alpha1' };
let ns: string;
let pvx: PvxProcess;

beforeAll(async () => {
  ns = await createNamespace('pvx-e2e-policy');
  pvx = startPvx('policy', ['--leader-elect=false', '--namespace', ns, '--policy-interval', '2s']);
  await waitReady(pvx);
});

afterAll(async () => {
  if (pvx) await stopPvx(pvx);
  if (ns) await deleteNamespace(ns);
});

async function createPolicy(name: string, spec: PolicySpec): Promise<void> {
  await custom.createNamespacedCustomObject({ ...group, plural: 'volumeexpansionpolicies', namespace: ns, body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionPolicy', metadata: { name }, spec } });
}

async function policyRequests(policy: string): Promise<VolumeExpansionRequest[]> {
  const list = (await custom.listNamespacedCustomObject({ ...group, plural: 'volumeexpansionrequests', namespace: ns, labelSelector: `pvx.dev/policy=${policy}` })) as { items: VolumeExpansionRequest[] };
  return list.items;
}

async function readPolicy(name: string): Promise<VolumeExpansionPolicy> {
  return (await custom.getNamespacedCustomObject({ ...group, plural: 'volumeexpansionpolicies', namespace: ns, name })) as VolumeExpansionPolicy;
}

/** A pod on the claim that writes `mib` MiB once /data/go exists. */
async function fillingPod(claim: string, mib: number): Promise<void> {
  await createPod(ns, claim, claim, `until [ -e /data/go ]; do sleep 1; done; dd if=/dev/zero of=/data/fill bs=1M count=${mib} && sync; sleep 3600`);
  await waitForPodRunning(ns, claim);
}

async function startFilling(pod: string): Promise<void> {
  const sink = () => new Writable({ write: (_c, _e, cb) => cb() });
  await new Promise<void>((resolve, reject) => {
    new Exec(kc)
      .exec(ns, pod, 'main', ['touch', '/data/go'], sink(), sink(), null, false, (s) => (s.status === 'Success' ? resolve() : reject(new Error(JSON.stringify(s)))))
      .catch(reject);
  });
}

const usageClass = e2eEnv.usageClass as string;

/** A 1Gi claim labelled for one test's policy (policies here select by label, so tests stay apart), with a filling pod. */
async function labelledClaim(name: string, mode: string): Promise<void> {
  await core.createNamespacedPersistentVolumeClaim({
    namespace: ns,
    body: { metadata: { name, labels: { mode } }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: usageClass, resources: { requests: { storage: '1Gi' } } } },
  });
  await bindPVC(ns, name);
  await fillingPod(name, 800);
}

describe.skipIf(!e2eEnv.usageClass)('a policy on a filling volume', () => {
  it('creates one request when usage crosses the threshold, the volume grows, and no second expansion follows while usage lags', async () => {
    await labelledClaim('fill', 'auto');
    await createPolicy('grow-when-full', {
      selector: { matchLabels: { mode: 'auto' } },
      storageClassNames: [usageClass],
      triggers: { usedPercent: 75, sustainedSamples: 2 },
      step: { percent: 100, minimum: '1Gi' },
      cooldown: '10s',
    });
    // Before the pod writes: the policy sees the volume and decides nothing.
    await waitFor('the policy to report the volume as idle', 60_000, async () => (await readPolicy('grow-when-full')).status?.volumes?.find((v) => v.pvcName === 'fill')?.decision === 'idle', 1000);
    expect(await policyRequests('grow-when-full')).toHaveLength(0);

    const started = Date.now();
    await startFilling('fill');
    let request: VolumeExpansionRequest | undefined;
    await waitFor('the policy to create a request', 120_000, async () => {
      request = (await policyRequests('grow-when-full'))[0];
      return request !== undefined;
    }, 1000);
    expect(request?.spec).toMatchObject({ target: { pvcName: 'fill' }, size: '2Gi' });
    expect(request?.metadata.annotations?.['pvx.dev/trigger']).toBe('UsedRatio');
    await waitFor('the request to complete', 120_000, async () => (await custom.getNamespacedCustomObject({ ...group, plural: 'volumeexpansionrequests', namespace: ns, name: request?.metadata.name as string }) as VolumeExpansionRequest).status?.phase === 'Completed', 1000);
    expect((await readPVC(ns, 'fill')).status?.capacity?.storage).toBe('2Gi');
    const grownAfter = Date.now() - started;

    // Well past the 10 s cooldown and several kubelet stats periods: still one request.
    await sleep(40_000);
    expect(await policyRequests('grow-when-full')).toHaveLength(1);
    const status = (await readPolicy('grow-when-full')).status?.volumes?.find((v) => v.pvcName === 'fill');
    expect(status?.decision).toBe('idle');
    expect(status?.usedPercent).toBeLessThan(75);
    const ratio = await pvx.metric('pvx_volume_used_ratio', { namespace: ns, persistentvolumeclaim: 'fill' });
    expect(ratio).toBeLessThan(0.75);
    console.log(`policy: 800 MiB written into 1Gi → request → 2Gi in ${grownAfter} ms; used ${status?.usedPercent}% afterwards`);
  });
});

describe.skipIf(!e2eEnv.usageClass)('policy modes', () => {
  it('DryRun says what it would do and creates no request', async () => {
    await labelledClaim('dry', 'dry');
    await createPolicy('dry', { selector: { matchLabels: { mode: 'dry' } }, triggers: { usedPercent: 75, sustainedSamples: 2 }, mode: 'DryRun' });
    await startFilling('dry');
    await waitFor('a dry-run decision', 120_000, async () => (await readPolicy('dry')).status?.volumes?.find((v) => v.pvcName === 'dry')?.decision === 'dryRun', 1000);
    const v = (await readPolicy('dry')).status?.volumes?.find((x) => x.pvcName === 'dry');
    expect(v?.message).toMatch(/dry run: would .*grow 1Gi → 2Gi/);
    expect(await policyRequests('dry')).toHaveLength(0);
    expect((await readPVC(ns, 'dry')).spec?.resources?.requests?.storage).toBe('1Gi');
  });

  it('Approval creates a request that waits until it is approved', async () => {
    await labelledClaim('ask', 'ask');
    await createPolicy('ask', { selector: { matchLabels: { mode: 'ask' } }, triggers: { usedPercent: 75, sustainedSamples: 2 }, mode: 'Approval' });
    await startFilling('ask');
    let request: VolumeExpansionRequest | undefined;
    await waitFor('a request awaiting approval', 120_000, async () => {
      request = (await policyRequests('ask'))[0];
      return request?.status?.reason === 'AwaitingApproval';
    }, 1000);
    expect(request?.status?.message).toMatch(/kubectl annotate ver .* pvx\.dev\/approved=true/);
    await sleep(5000);
    expect((await readPVC(ns, 'ask')).spec?.resources?.requests?.storage).toBe('1Gi');

    // As a user would: `kubectl pvx approve ver/NAME -n NS`.
    const approved = spawnSync(process.execPath, [resolve(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts'), 'approve', `ver/${request?.metadata.name}`, '-n', ns, '--kubeconfig', e2eEnv.kubeconfig], { encoding: 'utf8' });
    expect(approved.status, approved.stderr).toBe(0);
    expect(approved.stdout).toMatch(/approved/);
    await waitFor('the approved request to complete', 120_000, async () => (await custom.getNamespacedCustomObject({ ...group, plural: 'volumeexpansionrequests', namespace: ns, name: request?.metadata.name as string }) as VolumeExpansionRequest).status?.phase === 'Completed', 1000);
    expect((await readPVC(ns, 'ask')).status?.capacity?.storage).toBe('2Gi');
  });
});

describe.skipIf(!e2eEnv.usageClass)('policy guards on a full volume', () => {
  it('at its maximum size it says so instead of asking; outside its maintenance window it defers to the next one', async () => {
    await labelledClaim('full', 'guards');
    // Opens daily at a fixed hour 12 h away from now (UTC), for one hour: closed now.
    const closedHour = (new Date().getUTCHours() + 12) % 24;
    await createPolicy('capped', { selector: { matchLabels: { mode: 'guards' } }, triggers: { usedPercent: 75, sustainedSamples: 2 }, maxSize: '1Gi' });
    await createPolicy('windowed', {
      selector: { matchLabels: { mode: 'guards' } },
      triggers: { usedPercent: 75, sustainedSamples: 2 },
      windows: [{ schedule: `0 ${closedHour} * * *`, duration: '1h', timeZone: 'UTC' }],
    });
    await startFilling('full');
    await waitFor('both policies to see the breach', 120_000, async () => {
      const [c, w] = [await readPolicy('capped'), await readPolicy('windowed')];
      return c.status?.volumes?.[0]?.decision === 'atMax' && w.status?.volumes?.[0]?.decision === 'blocked';
    }, 1000);
    const windowed = (await readPolicy('windowed')).status?.volumes?.[0];
    expect(windowed).toMatchObject({ reason: 'OutsideWindow' });
    expect(new Date(windowed?.nextEligibleAt as string).getUTCHours()).toBe(closedHour);
    expect((await readPolicy('capped')).status?.volumes?.[0]?.message).toMatch(/maximum size 1Gi/);
    expect(await policyRequests('capped')).toHaveLength(0);
    expect(await policyRequests('windowed')).toHaveLength(0);
    expect(await pvx.metric('pvx_volume_at_max_size', { namespace: ns, persistentvolumeclaim: 'full' })).toBe(1);
    const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.name=capped' });
    expect(events.items.filter((e) => e.reason === 'AtMaxSize')).toHaveLength(1);
  });
});
