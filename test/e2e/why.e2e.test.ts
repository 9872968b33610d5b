// `pvx why` run as a process against the real cluster: for each gate, a claim the cluster's own
// controllers, resizer and kubelet (and pvx's operator) put where that gate holds it; `pvx why`
// names the gate on its line; then what actually happens next is checked against what it said —
// the API server refuses, the operator waits or acts, the expansion completes once the step it
// named is taken.
//
// One operator handles this suite's namespace, with a modification budget of 1 per volume per
// 24h for the embedded driver (so the budget gate can be met), policies every 2 s and the audit
// every 5 s. The quota test has a namespace of its own (a quota would hold every claim of this
// one) where no operator runs. Every test has claims, policies and requests of its own (policies
// select by label), so the tests run concurrently.
import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PolicySpec, VolumeExpansionPolicy, VolumeStatus } from '../../src/crds/volume-expansion-policy.ts';
import type { RequestSpec, VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import type { GateId, WhyReport } from '../../src/policies/why/gates.ts';
import { runPvx, type CliResult } from './support/cli.ts';
import { e2eEnv } from './support/env.ts';
import {
  bindPVC,
  core,
  createNamespace,
  createPod,
  createPVC,
  deleteNamespace,
  execInPod,
  kc,
  patchPVCSize,
  readPVC,
  storage,
  waitFor,
  waitForPodRunning,
} from './support/kube.ts';
import { startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';

const custom = kc.makeApiClient(CustomObjectsApi);
const group = { group: 'pvx.dev', version: 'v1alpha1' };
/** The budget the operator is given, and `pvx why` with it. */
const budget = 'hostpath.pvx.dev=1/24h';
/** A class of the embedded driver that binds only once a pod uses the claim: a claim can wait Pending. */
const lateClass = `pvx-e2e-why-late-${process.pid}`;

let ns: string;
let quotaNs: string;
let pvx: PvxProcess;

beforeAll(async () => {
  [ns, quotaNs] = await Promise.all([createNamespace('pvx-e2e-why'), createNamespace('pvx-e2e-why-quota')]);
  await storage.createStorageClass({
    body: {
      metadata: { name: lateClass },
      provisioner: 'hostpath.pvx.dev',
      parameters: { backing: 'dir' },
      volumeBindingMode: 'WaitForFirstConsumer',
      allowVolumeExpansion: true,
      reclaimPolicy: 'Delete',
    },
  });
  pvx = startPvx('why', ['--leader-elect=false', '--namespace', ns, '--policy-interval', '2s', '--audit-interval', '5s', '--modification-budget', budget]);
  await waitReady(pvx);
});

afterAll(async () => {
  if (pvx) await stopPvx(pvx);
  await Promise.all([ns && deleteNamespace(ns), quotaNs && deleteNamespace(quotaNs)]);
  await storage.deleteStorageClass({ name: lateClass }).catch(() => undefined);
});

/** Runs `pvx why ARGS` as a process. */
const pvxWhy = (args: string[]): Promise<CliResult> => runPvx(['why', '--kubeconfig', e2eEnv.kubeconfig, ...args]);

/** The table's line of a gate: "GATE   STATE   EVIDENCE". */
const gateLine = (stdout: string, gate: GateId) => stdout.split('\n').find((l) => l.startsWith(`${gate} `)) ?? `(no ${gate} line in:\n${stdout})`;
const nextLine = (stdout: string) => stdout.split('\n').find((l) => l.startsWith('next: ')) ?? '';

/** `pvx why REF -n NS ARGS` as a table: exit 3 and the gate's line when it holds. */
async function why(ref: string, namespace: string, ...args: string[]): Promise<CliResult> {
  return pvxWhy([ref, '-n', namespace, ...args]);
}

/** `pvx why REF -o json`: the report (exit 0 or 3: 3 exactly when a gate holds). */
async function report(ref: string, namespace: string, ...args: string[]): Promise<WhyReport> {
  const r = await pvxWhy([ref, '-n', namespace, '-o', 'json', ...args]);
  expect([0, 3], r.stderr).toContain(r.code);
  const parsed = JSON.parse(r.stdout) as WhyReport;
  expect(r.code === 3, `exit ${r.code} with heldBy ${parsed.heldBy}`).toBe(parsed.heldBy !== undefined);
  return parsed;
}

/** Waits until `pvx why` says `gate` holds the claim (the cluster gets there on its own time); the table run then. */
async function waitForHeld(ref: string, namespace: string, gate: GateId | undefined, args: string[] = [], timeoutMs = 120_000): Promise<CliResult> {
  let last: WhyReport | undefined;
  await waitFor(
    `pvx why ${ref} to be held by ${gate ?? 'nothing'}`,
    timeoutMs,
    async () => {
      last = await report(ref, namespace, ...args);
      return last.heldBy === gate;
    },
    2000,
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; last report: ${JSON.stringify(last, null, 2)}`);
  });
  const table = await why(ref, namespace, ...args);
  expect(table.code, table.stderr).toBe(gate ? 3 : 0);
  return table;
}

async function createPolicy(name: string, spec: PolicySpec): Promise<void> {
  await custom.createNamespacedCustomObject({
    ...group,
    plural: 'volumeexpansionpolicies',
    namespace: ns,
    body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionPolicy', metadata: { name }, spec },
  });
}

async function readPolicy(name: string): Promise<VolumeExpansionPolicy> {
  return (await custom.getNamespacedCustomObject({ ...group, plural: 'volumeexpansionpolicies', namespace: ns, name })) as VolumeExpansionPolicy;
}

async function createRequest(namespace: string, name: string, spec: RequestSpec, annotations?: Record<string, string>): Promise<void> {
  await custom.createNamespacedCustomObject({
    ...group,
    plural: 'volumeexpansionrequests',
    namespace,
    body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionRequest', metadata: { name, annotations }, spec },
  });
}

async function readRequest(name: string): Promise<VolumeExpansionRequest> {
  return (await custom.getNamespacedCustomObject({ ...group, plural: 'volumeexpansionrequests', namespace: ns, name })) as VolumeExpansionRequest;
}

async function policyRequests(policy: string): Promise<VolumeExpansionRequest[]> {
  return (
    (await custom.listNamespacedCustomObject({ ...group, plural: 'volumeexpansionrequests', namespace: ns, labelSelector: `pvx.dev/policy=${policy}` })) as {
      items: VolumeExpansionRequest[];
    }
  ).items;
}

const waitForPhase = (name: string, phase: string, timeoutMs = 120_000) =>
  waitFor(`ver/${name} to be ${phase}`, timeoutMs, async () => (await readRequest(name)).status?.phase === phase, 1000);

/** What the operator's policy says of one claim (its status), once it says `decision`. */
async function waitForDecision(policy: string, claim: string, decision: string, timeoutMs = 180_000) {
  let volume: VolumeStatus | undefined;
  await waitFor(
    `vep/${policy} to decide ${decision} for ${claim}`,
    timeoutMs,
    async () => {
      volume = (await readPolicy(policy)).status?.volumes?.find((v) => v.pvcName === claim);
      return volume?.decision === decision;
    },
    2000,
  );
  return volume;
}

/** A bound claim of `storageClassName` labelled why=LABEL (the policies here select by it). */
async function labelledClaim(namespace: string, name: string, storageClassName: string, label: string, size = '1Gi'): Promise<void> {
  await core.createNamespacedPersistentVolumeClaim({
    namespace,
    body: {
      metadata: { name, labels: { why: label } },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName, resources: { requests: { storage: size } } },
    },
  });
  await bindPVC(namespace, name);
}

/** A claim with a running pod that mounts it (the kubelet measures it, and grows its filesystem). */
async function mountedClaim(name: string, label: string): Promise<void> {
  await labelledClaim(ns, name, e2eEnv.usageClass as string, label);
  await createPod(ns, name, name);
  await waitForPodRunning(ns, name);
}

/** A trigger every measurement breaches: the policy would grow the claim whenever nothing else holds it. */
const alwaysFull = { minFree: '100Gi', sustainedSamples: 1 } as const;

const refused = async (p: Promise<unknown>): Promise<number | undefined> =>
  p.then(
    () => undefined,
    (err: unknown) => (err instanceof ApiException ? err.code : -1),
  );

describe.skipIf(!e2eEnv.usageClass || !e2eEnv.fixedClass || !e2eEnv.hiddenCapClass || !e2eEnv.expandableClass)('pvx why, gate by gate', () => {
  describe.concurrent('before a request', () => {
    it('storage-class: a class that does not allow expansion holds; the API server refuses the resize; the operator counts the claim', async () => {
      await createPVC(ns, 'fixed', e2eEnv.fixedClass as string, '1Gi');
      await bindPVC(ns, 'fixed');
      const r = await why('pvc/fixed', ns, '--usage', 'none');
      expect(r.code, r.stderr).toBe(3);
      expect(gateLine(r.stdout, 'storage-class')).toMatch(
        new RegExp(`^storage-class\\s+holding\\s+StorageClass ${e2eEnv.fixedClass} does not allow volume expansion .*\\(ExpansionNotAllowed\\)$`),
      );
      expect(r.stdout).toMatch(/^held by: storage-class$/m);
      expect(nextLine(r.stdout)).toMatch(/allowVolumeExpansion: true/);
      // What happens next: PersistentVolumeClaimResize admission says the same.
      expect(await refused(patchPVCSize(ns, 'fixed', '2Gi'))).toBe(403);
      // The operator's audit pass counts it under the same gate.
      await waitFor(
        'pvx_claims_held{gate="storage-class"} for the namespace',
        60_000,
        async () => ((await pvx.metric('pvx_claims_held', { namespace: ns, gate: 'storage-class' })) ?? 0) >= 1,
        1000,
      );
    });

    it('binding: a claim waiting for its first consumer holds; once a pod binds it, binding passes', async () => {
      await createPVC(ns, 'late', lateClass, '1Gi');
      const r = await why('pvc/late', ns, '--usage', 'none');
      expect(r.code, r.stderr).toBe(3);
      expect(gateLine(r.stdout, 'storage-class')).toMatch(/^storage-class\s+passed\s+/);
      expect(gateLine(r.stdout, 'binding')).toMatch(/^binding\s+holding\s+PersistentVolumeClaim late is Pending; only a Bound claim can be expanded/);
      // The API server refuses to grow a claim that is not bound yet (422: only bound claims may be resized).
      expect(await refused(patchPVCSize(ns, 'late', '2Gi'))).toBe(422);
      await bindPVC(ns, 'late');
      const after = await why('pvc/late', ns, '--usage', 'none');
      expect(gateLine(after.stdout, 'binding')).toMatch(/^binding\s+passed\s+Bound to pvc-\S+ \(capacity 1Gi\)$/);
      // Nothing else selects it: the next gate holds.
      expect(after.stdout).toMatch(/^held by: policy$/m);
    });

    it('policy: a claim no policy selects holds; a request for it gets it going', async () => {
      await createPVC(ns, 'alone', e2eEnv.expandableClass as string, '1Gi');
      await bindPVC(ns, 'alone');
      const r = await why('pvc/alone', ns, '--usage', 'none');
      expect(r.code, r.stderr).toBe(3);
      expect(gateLine(r.stdout, 'policy')).toMatch(
        /^policy\s+holding\s+no VolumeExpansionPolicy or ClusterVolumeExpansionPolicy with triggers selects it, and no request for it is open$/,
      );
      expect(nextLine(r.stdout)).toBe(`next: create a VolumeExpansionPolicy in ${ns} that selects alone, or grow it now with a VolumeExpansionRequest`);
      await createRequest(ns, 'alone', { target: { pvcName: 'alone' }, size: '2Gi' });
      // No pod mounts it: the volume grows and waits for one.
      const after = await waitForHeld('pvc/alone', ns, 'node-stage', ['--usage', 'none']);
      expect(gateLine(after.stdout, 'policy')).toMatch(/^policy\s+passed\s+request ver\/alone asks for 2Gi$/);
      expect(gateLine(after.stdout, 'resizer')).toMatch(
        /^resizer\s+passed\s+the volume grew (from 1Gi \(the PersistentVolume's volume\.alpha\.kubernetes\.io\/pre-resize-capacity\) )?to 2Gi/,
      );
      expect((await readRequest('alone')).status?.phase).toBe('WaitingForPod');
    });

    it('usage: the kubelet has nothing for an unmounted claim; once a pod mounts it, the policy acts', async () => {
      await labelledClaim(ns, 'unmounted', e2eEnv.usageClass as string, 'usage');
      await createPolicy('usage', { selector: { matchLabels: { why: 'usage' } }, triggers: alwaysFull });
      const r = await why('pvc/unmounted', ns);
      expect(r.code, r.stderr).toBe(3);
      expect(gateLine(r.stdout, 'policy')).toMatch(/^policy\s+passed\s+vep\/usage selects it \(mode Auto; triggers: less than 100Gi free/);
      expect(gateLine(r.stdout, 'usage')).toMatch(/^usage\s+unknown\s+the kubelet reports no stats for unmounted volumes: no running pod mounts the claim$/);
      expect(r.stdout).toMatch(/^held by: usage$/m);
      // The operator sees the same: no samples, no decision, no request.
      expect(await waitForDecision('usage', 'unmounted', 'unknown', 60_000)).toMatchObject({ reason: 'NoSamples' });
      expect(await policyRequests('usage')).toHaveLength(0);
      await createPod(ns, 'unmounted', 'unmounted');
      await waitForPodRunning(ns, 'unmounted');
      await waitFor(
        'vep/usage to create a request once the kubelet measures the claim',
        240_000,
        async () => (await policyRequests('usage')).length === 1,
        2000,
      );
    }, 420_000);

    it('threshold: a nearly empty volume holds under the policy’s threshold; filled, the policy creates a request', async () => {
      await mountedClaim('quiet', 'threshold');
      await createPolicy('threshold', { selector: { matchLabels: { why: 'threshold' } }, triggers: { usedPercent: 90, sustainedSamples: 1 } });
      const r = await waitForHeld('pvc/quiet', ns, 'threshold', [], 180_000);
      expect(gateLine(r.stdout, 'usage')).toMatch(/^usage\s+passed\s+measured at \S+ by kubelet: .* used$/);
      expect(gateLine(r.stdout, 'threshold')).toMatch(
        /^threshold\s+holding\s+\d+\.\d% used, .* free.*: under every trigger of vep\/threshold: used ≥ 90% \(in 1 measurement in a row\)$/,
      );
      expect(await policyRequests('threshold')).toHaveLength(0);
      // Filled past 90%: the policy grows it.
      await execInPod(ns, 'quiet', ['dd', 'if=/dev/zero', 'of=/data/fill', 'bs=1M', 'count=960']).catch(() => undefined);
      await waitFor('vep/threshold to create a request', 240_000, async () => (await policyRequests('threshold')).length === 1, 2000);
    }, 420_000);

    it('cooldown: a claim just grown holds in the cooldown; the operator does not grow it again', async () => {
      await mountedClaim('cool', 'cooldown');
      await createRequest(ns, 'cool-1', { target: { pvcName: 'cool' }, size: '2Gi' });
      await waitForPhase('cool-1', 'Completed');
      await createPolicy('cooldown', { selector: { matchLabels: { why: 'cooldown' } }, triggers: alwaysFull, cooldown: '1h' });
      const r = await why('pvc/cool', ns, '--usage', 'none');
      expect(gateLine(r.stdout, 'cooldown')).toMatch(/^cooldown\s+holding\s+last expansion \S+Z, cooldown 60m, next allowed \S+Z$/);
      // With usage from the kubelet, the cooldown is what holds the claim, as the operator says.
      const measured = await waitForHeld('pvc/cool', ns, 'cooldown', [], 180_000);
      expect(nextLine(measured.stdout)).toMatch(/^next: wait until \S+Z, or shorten spec.cooldown of vep\/cooldown$/);
      expect(await waitForDecision('cooldown', 'cool', 'blocked')).toMatchObject({ reason: 'Cooldown' });
      expect(await policyRequests('cooldown')).toHaveLength(0);
    }, 420_000);

    it('window: outside the maintenance window the claim holds; the operator defers it too', async () => {
      await mountedClaim('night', 'window');
      await createPolicy('window', {
        selector: { matchLabels: { why: 'window' } },
        triggers: alwaysFull,
        windows: [{ schedule: '0 0 1 1 *', duration: '1m' }],
      });
      const r = await why('pvc/night', ns, '--usage', 'none');
      expect(gateLine(r.stdout, 'window')).toMatch(
        /^window\s+holding\s+outside the maintenance windows \("0 0 1 1 \*" for 60s\); the next opens at \d{4}-01-01T00:00:00Z$/,
      );
      await waitForHeld('pvc/night', ns, 'window', [], 180_000);
      expect(await waitForDecision('window', 'night', 'blocked')).toMatchObject({ reason: 'OutsideWindow' });
      expect(await policyRequests('window')).toHaveLength(0);
    }, 420_000);

    it("max-size: at the policy's maximum the claim holds; the operator reports it at its maximum", async () => {
      await mountedClaim('capped', 'max');
      await createPolicy('max', { selector: { matchLabels: { why: 'max' } }, triggers: alwaysFull, maxSize: '1Gi' });
      const r = await why('pvc/capped', ns, '--usage', 'none');
      expect(gateLine(r.stdout, 'max-size')).toMatch(/^max-size\s+holding\s+at vep\/max's maximum size 1Gi \(capacity 1Gi\)$/);
      const measured = await waitForHeld('pvc/capped', ns, 'max-size', [], 180_000);
      expect(nextLine(measured.stdout)).toBe('next: raise spec.maxSize of vep/max');
      await waitForDecision('max', 'capped', 'atMax');
      expect(await policyRequests('max')).toHaveLength(0);
    }, 420_000);

    it('budget: a volume modified once holds a second request; the operator waits on the budget too', async () => {
      await mountedClaim('spent', 'budget');
      await createRequest(ns, 'spent-1', { target: { pvcName: 'spent' }, size: '2Gi' });
      await waitForPhase('spent-1', 'Completed');
      await createRequest(ns, 'spent-2', { target: { pvcName: 'spent' }, size: '3Gi' });
      await waitFor(
        'ver/spent-2 to wait on the budget',
        60_000,
        async () => (await readRequest('spent-2')).status?.reason === 'ModificationBudgetExhausted',
        1000,
      );
      const r = await why('ver/spent-2', ns, '--usage', 'none', '--modification-budget', budget);
      expect(r.code, r.stderr).toBe(3);
      expect(r.stdout.split('\n')[0]).toBe(`pvc/spent in namespace ${ns}, request ver/spent-2`);
      expect(gateLine(r.stdout, 'budget')).toMatch(
        /^budget\s+holding\s+hostpath\.pvx\.dev allows 1 modification per volume per 24h; spent has 1 in the window \(1 by pvx request.*\); the next is allowed at \S+$/,
      );
      expect(gateLine(r.stdout, 'request')).toMatch(/^request\s+holding\s+ver\/spent-2 is Pending \(ModificationBudgetExhausted\)/);
      expect(r.stdout).toMatch(/^held by: budget$/m);
      // Without the operator's budget, pvx why does not invent one.
      const unbudgeted = await report('ver/spent-2', ns, '--usage', 'none');
      expect(unbudgeted.gates.find((g) => g.gate === 'budget')?.state).toBe('not-applicable');
    });

    it('quota: a ResourceQuota without room holds; the API server refuses the resize', async () => {
      await core.createNamespacedResourceQuota({
        namespace: quotaNs,
        body: { metadata: { name: 'storage' }, spec: { hard: { 'requests.storage': '1536Mi' } } },
      });
      await createPVC(quotaNs, 'q', e2eEnv.expandableClass as string, '1Gi');
      await bindPVC(quotaNs, 'q');
      await createRequest(quotaNs, 'q', { target: { pvcName: 'q' }, size: '2Gi' });
      await waitFor(
        'the quota to count q',
        30_000,
        async () => (await core.readNamespacedResourceQuota({ namespace: quotaNs, name: 'storage' })).status?.used?.['requests.storage'] === '1Gi',
        500,
      );
      const r = await why('ver/q', quotaNs, '--usage', 'none');
      expect(r.code, r.stderr).toBe(3);
      expect(gateLine(r.stdout, 'quota')).toMatch(
        /^quota\s+holding\s+ResourceQuota storage limits requests\.storage to 1536Mi; 1Gi is used and growing q to 2Gi needs 1 GiB more$/,
      );
      expect(r.stdout).toMatch(/^held by: quota$/m);
      // No operator runs in this namespace: the request itself would hold next.
      expect(gateLine(r.stdout, 'request')).toMatch(/^request\s+holding\s+ver\/q has no status: pvx's operator has not taken it up$/);
      const code = await refused(patchPVCSize(quotaNs, 'q', '2Gi'));
      expect(code).toBe(403);
    });
  });

  describe.concurrent('after the request', () => {
    it('request: a request awaiting approval holds; pvx approve lets it complete, and then nothing holds', async () => {
      await mountedClaim('ask', 'request');
      await createRequest(ns, 'ask', { target: { pvcName: 'ask' }, size: '2Gi' }, { 'pvx.dev/approval': 'required' });
      await waitFor('ver/ask to await approval', 60_000, async () => (await readRequest('ask')).status?.reason === 'AwaitingApproval', 1000);
      const r = await why('ver/ask', ns, '--usage', 'none');
      expect(r.code, r.stderr).toBe(3);
      expect(gateLine(r.stdout, 'request')).toMatch(/^request\s+holding\s+ver\/ask is Pending \(AwaitingApproval\): would grow ask from 1Gi to 2Gi/);
      expect(nextLine(r.stdout)).toBe(`next: pvx approve ver/ask -n ${ns}`);
      const approve = await runPvx(['approve', 'ver/ask', '-n', ns, '--kubeconfig', e2eEnv.kubeconfig]);
      expect(approve.code, approve.stderr).toBe(0);
      await waitForPhase('ask', 'Completed');
      const done = await why('ver/ask', ns, '--usage', 'none');
      expect(done.code, done.stdout).toBe(0);
      expect(gateLine(done.stdout, 'request')).toMatch(/^request\s+passed\s+ver\/ask is Completed/);
      expect(gateLine(done.stdout, 'node-stage')).toMatch(/^node-stage\s+passed\s+done: the filesystem grew \(capacity 2Gi\)$/);
      expect(done.stdout).toMatch(/^next: nothing: ver\/ask completed$/m);
    });

    it('resizer: a size the driver cannot reach holds at the resizer; lowered, the volume grows', async () => {
      await createPVC(ns, 'toobig', e2eEnv.hiddenCapClass as string, '1Gi');
      await bindPVC(ns, 'toobig');
      await patchPVCSize(ns, 'toobig', '5Gi');
      // The resizer holds from the patch on ("has not taken up the change"); the gate this test names is the
      // driver's refusal, which comes once the external-resizer has tried: wait for its mark on the claim.
      await waitFor(
        "the resizer's infeasible mark on toobig",
        120_000,
        async () => (await readPVC(ns, 'toobig')).status?.allocatedResourceStatuses?.storage === 'ControllerResizeInfeasible',
        1000,
      );
      const r = await waitForHeld('pvc/toobig', ns, 'resizer', ['--usage', 'none']);
      expect(gateLine(r.stdout, 'policy')).toMatch(
        /^policy\s+not-applicable\s+no policy or request: the claim's own request was raised outside pvx \(requests 5Gi, capacity 1Gi\)$/,
      );
      expect(gateLine(r.stdout, 'resizer')).toMatch(/^resizer\s+holding\s+ControllerResizeInfeasible: /);
      expect(nextLine(r.stdout)).toMatch(/^next: Lower spec\.resources\.requests\.storage to a size the driver can provide/);
      // What it says to do: lower the request (allowed after an infeasible resize); the controller stage then completes.
      await patchPVCSize(ns, 'toobig', '2Gi');
      const after = await waitForHeld('pvc/toobig', ns, 'node-stage', ['--usage', 'none']);
      expect(gateLine(after.stdout, 'resizer')).toMatch(
        /^resizer\s+passed\s+the volume grew (from 1Gi \(the PersistentVolume's volume\.alpha\.kubernetes\.io\/pre-resize-capacity\) )?to 2Gi/,
      );
      expect((await readPVC(ns, 'toobig')).status?.allocatedResources?.storage).toBe('2Gi');
    });

    it('node-stage: the volume grew and waits for a pod; started, the expansion completes and the node stage passes', async () => {
      await labelledClaim(ns, 'grow', e2eEnv.usageClass as string, 'node');
      await createRequest(ns, 'grow', { target: { pvcName: 'grow' }, size: '2Gi' });
      await waitForPhase('grow', 'WaitingForPod');
      const r = await waitForHeld('ver/grow', ns, 'node-stage', ['--usage', 'none']);
      expect(gateLine(r.stdout, 'resizer')).toMatch(
        /^resizer\s+passed\s+the volume grew (from 1Gi \(the PersistentVolume's volume\.alpha\.kubernetes\.io\/pre-resize-capacity\) )?to 2Gi \(NodeResizePending\)$/,
      );
      expect(gateLine(r.stdout, 'node-stage')).toMatch(
        /^node-stage\s+holding\s+NodeResizePending since \S+Z: no running pod mounts the claim; start one(; last Event: .*)?$/,
      );
      expect(nextLine(r.stdout)).toBe('next: start a pod that mounts grow (or scale its workload up): the kubelet then grows the filesystem');
      // What it says to do: start a pod. The kubelet grows the filesystem and the request completes.
      await createPod(ns, 'grow', 'grow');
      await waitForPodRunning(ns, 'grow');
      await waitForPhase('grow', 'Completed');
      const done = await waitForHeld('ver/grow', ns, undefined, ['--usage', 'none']);
      expect(gateLine(done.stdout, 'node-stage')).toMatch(/^node-stage\s+passed\s+done: the filesystem grew \(capacity 2Gi\)$/);
    });
  });

  describe.concurrent('the command itself', () => {
    it('exits 1 naming a claim or request that does not exist, 2 on a usage error; -o yaml carries the gates', async () => {
      const missing = await why('pvc/nope', ns, '--usage', 'none');
      expect(missing.code).toBe(1);
      expect(missing.stderr).toBe(`pvx: PersistentVolumeClaim nope not found in namespace ${ns}\n`);
      const missingRequest = await why('ver/nope', ns, '--usage', 'none');
      expect(missingRequest.code).toBe(1);
      expect(missingRequest.stderr).toMatch(/VolumeExpansionRequest nope not found/);
      expect((await why('pod/x', ns)).code).toBe(2);

      await createPVC(ns, 'doc', e2eEnv.expandableClass as string, '1Gi');
      await bindPVC(ns, 'doc');
      const yaml = await why('pvc/doc', ns, '--usage', 'none', '-o', 'yaml');
      expect(yaml.code).toBe(3);
      expect(yaml.stdout).toMatch(/^heldBy: policy$/m);
      expect(yaml.stdout).toMatch(/^ {2}- gate: storage-class\n {4}state: passed$/m);
    });
  });
});
