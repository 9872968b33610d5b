// Chaos on the real cluster: a seeded, bounded loop of user actions and faults (requests, pvx
// killed with -9 under leader election, kube-apiserver and csi-resizer restarts, a class's
// allowVolumeExpansion flipped, claims deleted and re-created under the same name, pods started
// and stopped), then a quiet period, then pvx's invariants checked from the API server's audit
// log (test/cluster/audit.ts) and the objects — never from pvx's own logs.
//
// A failure prints its seed: rerun it with PVX_CHAOS_SEED=<seed> (PVX_CHAOS_ROUNDS sets the length).
// The same interleaving is not guaranteed on a real cluster, but the same actions in the same order are.
import {
  ApiException,
  CoordinationV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1PersistentVolumeClaim,
  type V1StorageClass,
} from '@kubernetes/client-node';
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestSpec, VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import { GiB, parseBytes, roundUp } from '../../src/k8s/quantity.ts';
import { killComponent, startComponentByName, stopComponent } from '../cluster/cluster.ts';
import { csiDriverName } from '../cluster/layout.ts';
import { Random } from '../sim/random.ts';
import { apiserverAudits, auditLogEnd, auditLogPath, describeAuditEvent, readAuditEvents } from './support/audit-log.ts';
import { checkInvariants, finishedPhases as finished } from './support/chaos-invariants.ts';
import { e2eEnv } from './support/env.ts';
import { pvxNamespace, serviceAccountKubeconfig } from './support/identity.ts';
import { core, createNamespace, deleteNamespace, deletePod, kc, podManifest, pvcManifest, storage, waitFor, waitForPodRunning } from './support/kube.ts';
import { startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';

const custom = kc.makeApiClient(CustomObjectsApi);
const crd = { group: 'pvx.dev', version: 'v1alpha1', plural: 'volumeexpansionrequests' };
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

const seed = process.env.PVX_CHAOS_SEED ? Number(process.env.PVX_CHAOS_SEED) : randomInt(2 ** 31);
const rounds = Number(process.env.PVX_CHAOS_ROUNDS ?? 50);
/** pvx runs as its ServiceAccount: its writes are the audit events with this user. */
const pvxUser = `system:serviceaccount:${pvxNamespace}:pvx`;
const quietTimeoutMs = 150_000;
/** Nothing changed for this long while every request waits on the user: settled (pvx looks again every 30 s). */
const quietStableMs = 35_000;
/** Reconciles of the request controller per request per minute once settled (tracking every 30 s is 2). */
const maxReconcilesPerRequestPerMinute = 6;

type ClassKind = 'grow' | 'hidden' | 'capped';
/** The classes the suite makes for itself (so flipping them disturbs no other suite). */
const classParameters: Record<ClassKind, Record<string, string>> = {
  grow: { backing: 'dir' },
  // A limit pvx cannot know: larger targets fail at the driver (ControllerResizeInfeasible).
  hidden: { backing: 'dir', hiddenMaxVolumeSize: '3Gi' },
  // A limit pvx's driver profile reads: larger targets must be rejected, never patched.
  capped: { backing: 'dir', maxVolumeSize: '4Gi' },
};
const claimClasses: Record<string, ClassKind> = { c0: 'grow', c1: 'grow', c2: 'hidden', c3: 'capped' };
const claimNames = Object.keys(claimClasses);

type ActionKind = 'request' | 'killPvx' | 'restartApiserver' | 'restartResizer' | 'flipClass' | 'recreateClaim' | 'togglePod';
const actionWeights: [ActionKind, number][] = [
  ['request', 34],
  ['killPvx', 12],
  ['restartApiserver', 6],
  ['restartResizer', 8],
  ['flipClass', 10],
  ['recreateClaim', 8],
  ['togglePod', 22],
];

let ns = '';
let leaseName = '';
let saKubeconfig = '';
let auditFrom = 0;
const className = (k: ClassKind) => `${ns}-${k}`;
const pvxs: PvxProcess[] = [];
let pvxCount = 0;
const classExpandable: Record<ClassKind, boolean> = { grow: true, hidden: true, capped: true };
/** Every UID each claim name has had, oldest first (the suite created them all). */
const claimUIDs = new Map<string, string[]>();
/** Pods the suite started per claim and has not deleted. */
const podsOf = new Map<string, string[]>();
let podCount = 0;
const actionsDone: Record<string, number> = {};

function log(line: string): void {
  console.log(`chaos: ${new Date().toISOString()} ${line}`);
}

function spawnPvx(): PvxProcess {
  // Plain HTTP metrics: the run restarts the API server, which reviews every scrape's token.
  const p = startPvx(
    `chaos-${++pvxCount}`,
    ['--leader-election-namespace', pvxNamespace, '--leader-election-id', leaseName, '--namespace', ns, '--usage-source', 'none'],
    saKubeconfig,
    { metrics: 'plain' },
  );
  pvxs.push(p);
  return p;
}

const alive = (p: PvxProcess) => p.child.exitCode === null && p.child.signalCode === null;

async function createClaim(name: string): Promise<void> {
  const created = await core.createNamespacedPersistentVolumeClaim({
    namespace: ns,
    body: pvcManifest(name, className(claimClasses[name] as ClassKind), '1Gi'),
  });
  claimUIDs.set(name, [...(claimUIDs.get(name) ?? []), created.metadata?.uid ?? '']);
}

async function readClaim(name: string): Promise<V1PersistentVolumeClaim | undefined> {
  try {
    return await core.readNamespacedPersistentVolumeClaim({ namespace: ns, name });
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) return undefined;
    throw err;
  }
}

async function claimGone(name: string, timeoutMs: number): Promise<void> {
  await waitFor(`claim ${name} to be gone`, timeoutMs, async () => (await readClaim(name)) === undefined);
}

async function startPod(claim: string): Promise<string> {
  const name = `${claim}-p${++podCount}`;
  await core.createNamespacedPod({ namespace: ns, body: podManifest(name, claim) });
  podsOf.set(claim, [...(podsOf.get(claim) ?? []), name]);
  return name;
}

async function setExpandable(kind: ClassKind, allow: boolean): Promise<void> {
  await storage.patchStorageClass({ name: className(kind), body: { allowVolumeExpansion: allow } }, merge);
  classExpandable[kind] = allow;
}

// --- the actions ------------------------------------------------------------------------------

async function createRequest(rng: Random, round: number): Promise<string> {
  // The hidden-cap claim more often than the others: its infeasible targets and recovery are the rarest paths.
  const claim = rng.weighted([
    ['c0', 2],
    ['c1', 2],
    ['c2', 3],
    ['c3', 2],
  ] as const);
  const kind = claimClasses[claim] as ClassKind;
  const pvc = await readClaim(claim);
  const capacityGi = Number(roundUp(parseBytes(pvc?.status?.capacity?.storage ?? '1Gi')) / GiB);
  const spec: RequestSpec = { target: { pvcName: claim } };
  if (kind === 'hidden' && rng.chance(0.6)) {
    spec.size = `${rng.int(4, 6)}Gi`; // beyond the driver's hidden 3Gi
    spec.recovery = rng.chance(0.8) ? 'Auto' : 'None';
  } else if (rng.chance(0.5)) {
    // Mostly larger than the claim, sometimes not (a rejection), sometimes past the capped class's limit.
    spec.size = `${Math.max(1, capacityGi + rng.int(0, 3))}Gi`;
  } else {
    spec.increment = rng.pick(['1Gi', '2Gi', '50%']);
  }
  if (rng.chance(0.25)) spec.deadline = rng.pick(['15s', '45s', '2m']);
  const name = `r${round}-${claim}`;
  await custom.createNamespacedCustomObject({
    ...crd,
    namespace: ns,
    body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionRequest', metadata: { name }, spec },
  });
  return `${name} ${JSON.stringify(spec)}`;
}

/** Processes whose end is accounted for: killed by the suite, or noted as having exited by themselves. */
const ended = new Set<PvxProcess>();
/** Replicas that exited by themselves (one that loses its lease exits, to rejoin afresh), with their exit codes. */
const selfExits: string[] = [];

/**
 * Two replicas always run, as a Deployment's would: one that ended is replaced at once. The new
 * one is not waited for, so faults overlap its start.
 */
function keepTwoReplicas(): string[] {
  for (const p of pvxs) {
    if (alive(p) || ended.has(p)) continue;
    ended.add(p);
    selfExits.push(`${p.name} (exit ${p.child.exitCode ?? p.child.signalCode})`);
  }
  const started: string[] = [];
  while (pvxs.filter(alive).length < 2) started.push(spawnPvx().name);
  return started;
}

async function killPvx(rng: Random): Promise<string> {
  const running = pvxs.filter(alive);
  const victim = running.length > 0 ? rng.pick(running) : undefined;
  if (victim) {
    ended.add(victim);
    victim.kill('SIGKILL');
    await victim.exited;
  }
  return `killed ${victim?.name ?? 'none'}, started ${keepTwoReplicas().join(', ')}`;
}

async function restartApiserver(rng: Random): Promise<string> {
  await stopComponent('kube-apiserver');
  const downMs = rng.int(0, 3000);
  await sleep(downMs);
  await startComponentByName('kube-apiserver');
  return `down ${downMs} ms`;
}

async function restartResizer(rng: Random): Promise<string> {
  const hard = rng.chance(0.5);
  if (hard) await killComponent('csi-resizer');
  else await stopComponent('csi-resizer');
  const downMs = rng.int(0, 5000);
  await sleep(downMs);
  await startComponentByName('csi-resizer');
  return `${hard ? 'SIGKILL' : 'SIGTERM'}, down ${downMs} ms`;
}

async function flipClass(rng: Random): Promise<string> {
  const kind = rng.pick(['grow', 'hidden', 'capped'] as const);
  await setExpandable(kind, !classExpandable[kind]);
  return `${className(kind)} allowVolumeExpansion=${classExpandable[kind]}`;
}

async function recreateClaim(rng: Random): Promise<string> {
  const claim = rng.pick(claimNames);
  // The claim's pods go first: pvc-protection holds a mounted claim until they are gone.
  const pods = (await core.listNamespacedPod({ namespace: ns })).items.filter((p) =>
    p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === claim),
  );
  await Promise.all(pods.map((p) => deletePod(ns, p.metadata?.name as string)));
  podsOf.set(claim, []);
  await core.deleteNamespacedPersistentVolumeClaim({ namespace: ns, name: claim }).catch((err: unknown) => {
    if (!(err instanceof ApiException && err.code === 404)) throw err;
  });
  await claimGone(claim, 60_000);
  await createClaim(claim);
  return `${claim} now uid ${claimUIDs.get(claim)?.at(-1)} (deleted ${pods.length} pods first)`;
}

async function togglePod(rng: Random): Promise<string> {
  const claim = rng.pick(claimNames);
  const pods = podsOf.get(claim) ?? [];
  if (pods.length > 0) {
    const victim = pods[pods.length - 1] as string;
    await core.deleteNamespacedPod({ namespace: ns, name: victim, gracePeriodSeconds: 0 }).catch(() => undefined);
    podsOf.set(claim, pods.slice(0, -1));
    return `stopped ${victim}`;
  }
  return `started ${await startPod(claim)}`;
}

const actions: Record<ActionKind, (rng: Random, round: number) => Promise<string>> = {
  request: createRequest,
  killPvx,
  restartApiserver,
  restartResizer,
  flipClass,
  recreateClaim,
  togglePod,
};

// --- the quiet period -------------------------------------------------------------------------

async function restoreCluster(): Promise<void> {
  // No-ops when they run (startComponent finds them ready).
  await startComponentByName('kube-apiserver');
  await startComponentByName('csi-resizer');
  for (const kind of Object.keys(classExpandable) as ClassKind[]) if (!classExpandable[kind]) await setExpandable(kind, true);
}

async function listRequests(): Promise<VolumeExpansionRequest[]> {
  return ((await custom.listNamespacedCustomObject({ ...crd, namespace: ns })) as { items: VolumeExpansionRequest[] }).items;
}

async function claimsMountedByRunningPods(): Promise<Set<string>> {
  const pods = (await core.listNamespacedPod({ namespace: ns })).items.filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
  return new Set(pods.flatMap((p) => (p.spec?.volumes ?? []).map((v) => v.persistentVolumeClaim?.claimName).filter((c): c is string => c !== undefined)));
}

/** Finished, or waiting for something only the user can give (as test/sim's settled check). */
function userMayAct(r: VolumeExpansionRequest, all: VolumeExpansionRequest[], mounted: Set<string>, depth = 0): boolean {
  const s = r.status ?? {};
  if (finished.has(s.phase ?? '')) return true;
  if (depth > 3) return false;
  const claim = r.spec.target.pvcName ?? '';
  if (s.reason === 'AwaitingApproval' || s.reason === 'ExpansionInFlight' || s.reason === 'ModificationBudgetExhausted') return true;
  if (s.phase === 'WaitingForPod') return !mounted.has(claim);
  if (s.reason === 'AnotherRequestActive') {
    return all.some((o) => o !== r && o.spec.target.pvcName === claim && !finished.has(o.status?.phase ?? '') && userMayAct(o, all, mounted, depth + 1));
  }
  return false;
}

const statusLine = (r: VolumeExpansionRequest) => {
  const s = r.status ?? {};
  return `${r.metadata.name} ${JSON.stringify(r.spec)}: ${s.phase ?? '(no status)'} ${s.reason ?? ''} — ${s.message ?? ''}`;
};

async function settle(): Promise<{ requests: VolumeExpansionRequest[]; unsettled: VolumeExpansionRequest[] }> {
  const deadline = Date.now() + quietTimeoutMs;
  let lastChange = Date.now();
  let lastFingerprint = '';
  for (;;) {
    const requests = await listRequests().catch(() => undefined);
    if (requests) {
      const mounted = await claimsMountedByRunningPods();
      const fingerprint = JSON.stringify(requests.map((r) => [r.metadata.name, r.status?.phase, r.status?.reason]));
      if (fingerprint !== lastFingerprint) {
        lastFingerprint = fingerprint;
        lastChange = Date.now();
      }
      const unsettled = requests.filter((r) => !userMayAct(r, requests, mounted));
      const allFinished = requests.every((r) => finished.has(r.status?.phase ?? ''));
      if (allFinished || (unsettled.length === 0 && Date.now() - lastChange >= quietStableMs) || Date.now() > deadline) return { requests, unsettled };
    }
    await sleep(2000);
  }
}

// --- the suite --------------------------------------------------------------------------------

describe.skipIf(!e2eEnv.embedded)('chaos: requests under faults, checked against the API server’s audit log (embedded cluster)', () => {
  beforeAll(async () => {
    console.log(`chaos: seed ${seed} (rerun with PVX_CHAOS_SEED=${seed}), ${rounds} rounds; audit log ${auditLogPath}`);
    // A cluster started before the audit log existed runs its API server without it: restart it with it.
    if (!apiserverAudits()) {
      await stopComponent('kube-apiserver');
      await startComponentByName('kube-apiserver');
    }
    auditFrom = auditLogEnd();
    ns = await createNamespace('pvx-e2e-chaos');
    leaseName = `${ns}-leader`;
    for (const kind of Object.keys(classParameters) as ClassKind[]) {
      const body: V1StorageClass = {
        metadata: { name: className(kind), labels: { 'pvx.dev/e2e': 'true' } },
        provisioner: csiDriverName,
        parameters: classParameters[kind],
        reclaimPolicy: 'Delete',
        volumeBindingMode: 'Immediate',
        allowVolumeExpansion: true,
      };
      await storage.createStorageClass({ body });
    }
    for (const claim of claimNames) await createClaim(claim);
    await waitFor('the claims to be Bound', 120_000, async () => {
      for (const claim of claimNames) if ((await readClaim(claim))?.status?.phase !== 'Bound') return false;
      return true;
    });
    saKubeconfig = await serviceAccountKubeconfig();
    const first = [spawnPvx(), spawnPvx()];
    await Promise.all(first.map((p) => waitReady(p)));
  }, 240_000);

  afterAll(async () => {
    await Promise.all(pvxs.filter(alive).map(stopPvx));
    // Whatever happened, the cluster is left whole: API server and resizer running, classes expandable.
    await startComponentByName('kube-apiserver').catch((err: unknown) => console.error(`chaos: kube-apiserver did not come back: ${(err as Error).message}`));
    await startComponentByName('csi-resizer').catch((err: unknown) => console.error(`chaos: csi-resizer did not come back: ${(err as Error).message}`));
    if (!ns) return;
    await kc
      .makeApiClient(CoordinationV1Api)
      .deleteNamespacedLease({ namespace: pvxNamespace, name: leaseName })
      .catch(() => undefined);
    await deleteNamespace(ns);
    // The classes go once the namespace's volumes are deleted (their provisioner reads the class).
    await waitFor(`namespace ${ns} to be gone`, 60_000, async () => {
      try {
        await core.readNamespace({ name: ns });
        return false;
      } catch (err) {
        return err instanceof ApiException && err.code === 404;
      }
    }).catch(() => console.error(`chaos: namespace ${ns} is still terminating; deleting its classes anyway`));
    for (const kind of Object.keys(classParameters) as ClassKind[]) await storage.deleteStorageClass({ name: className(kind) }).catch(() => undefined);
  }, 120_000);

  it('keeps pvx’s invariants through faults, and settles', async () => {
    const rng = new Random(seed);
    const startedAt = Date.now();
    for (let round = 1; round <= rounds; round++) {
      const replaced = keepTwoReplicas();
      if (replaced.length > 0) log(`round ${round}: started ${replaced.join(', ')} for replicas that exited by themselves (${selfExits.join(', ')} so far)`);
      const kind = rng.weighted(actionWeights);
      // Each action draws from its own stream, so how one goes (a pod count, a failure) does not shift the next round's choice.
      const actionRng = rng.fork(round);
      const t0 = Date.now();
      try {
        const what = await actions[kind](actionRng, round);
        actionsDone[kind] = (actionsDone[kind] ?? 0) + 1;
        log(`round ${round} ${kind}: ${what} (${Date.now() - t0} ms)`);
      } catch (err) {
        // The cluster's own slowness (a claim slow to go, a refused create) is part of chaos, not a finding.
        actionsDone[`${kind}Failed`] = (actionsDone[`${kind}Failed`] ?? 0) + 1;
        log(`round ${round} ${kind}: failed (${(err as Error).message.split('\n')[0]})`);
      }
      await sleep(rng.int(300, 2500));
    }
    const chaosMs = Date.now() - startedAt;

    // Quiet: no more faults; everything runs, every claim exists and has a running pod.
    await restoreCluster();
    for (const claim of claimNames) {
      if ((await readClaim(claim))?.metadata?.deletionTimestamp) await claimGone(claim, 90_000);
      if (!(await readClaim(claim))) await createClaim(claim);
    }
    keepTwoReplicas();
    await Promise.all(pvxs.filter(alive).map((p) => waitReady(p)));
    const mounted = await claimsMountedByRunningPods();
    const podsToWait: string[] = [];
    for (const claim of claimNames) if (!mounted.has(claim)) podsToWait.push(await startPod(claim));
    await Promise.all(podsToWait.map((p) => waitForPodRunning(ns, p, 120_000)));
    const { requests, unsettled } = await settle();

    // Reconciles once settled, on the leader: a request looked at every 30 s is 2 a minute.
    const leader = (
      await Promise.all(
        pvxs.filter(alive).map(async (p) => ((await p.metric('leader_election_master_status', { name: leaseName }).catch(() => 0)) === 1 ? p : undefined)),
      )
    ).find(Boolean);
    let reconcilesPerMinute = 0;
    if (leader) {
      const before = await leader.metricSum('controller_runtime_reconcile_total', { controller: 'expansion-request' });
      await sleep(20_000);
      reconcilesPerMinute = ((await leader.metricSum('controller_runtime_reconcile_total', { controller: 'expansion-request' })) - before) * 3;
    }

    await sleep(1000); // the last writes' audit lines
    const events = readAuditEvents(auditFrom);
    const claims = new Map(await Promise.all(claimNames.map(async (c) => [c, await readClaim(c)] as const)));
    const classMax = new Map(
      claimNames.flatMap((c) => {
        const max = classParameters[claimClasses[c] as ClassKind].maxVolumeSize;
        return max ? [[c, max] as const] : [];
      }),
    );
    const { violations, patches, checked } = checkInvariants({ namespace: ns, pvxUser, events, requests, claims, claimUIDs, classMax, now: Date.now() });
    for (const r of unsettled)
      violations.push({ rule: 'settles', subject: r.metadata.name as string, message: `after the quiet period: ${statusLine(r)}`, evidence: [] });
    const reconcileBound = maxReconcilesPerRequestPerMinute * Math.max(1, requests.length);
    if (reconcilesPerMinute > reconcileBound) {
      violations.push({
        rule: 'no-hot-loop',
        subject: 'expansion-request controller',
        message: `${reconcilesPerMinute} reconciles a minute once settled, for ${requests.length} requests (at most ${reconcileBound})`,
        evidence: [],
      });
    }

    const byPhase: Record<string, number> = {};
    for (const r of requests) byPhase[r.status?.phase ?? 'none'] = (byPhase[r.status?.phase ?? 'none'] ?? 0) + 1;
    console.log(`chaos requests:\n  ${requests.map(statusLine).join('\n  ')}`);
    console.log(
      `chaos summary: seed ${seed}, ${rounds} rounds in ${Math.round(chaosMs / 1000)} s, actions ${JSON.stringify(actionsDone)}, ` +
        `requests ${requests.length} by phase ${JSON.stringify(byPhase)}, claim patches by pvx: ${patches.raises} raising, ${patches.lowerings} lowering, ${patches.refused} refused; ` +
        `pvx replicas that exited by themselves ${selfExits.length}, ${events.length} audit events read, ${checked} invariant checks, reconciles/min settled ${leader ? reconcilesPerMinute : 'n/a (no leader)'}, ${violations.length} violations`,
    );
    const report = violations
      .map((v) => `[${v.rule}] ${v.subject}: ${v.message}${v.evidence.map((e) => `\n    ${describeAuditEvent(e)}`).join('')}`)
      .join('\n');
    expect(violations, `seed ${seed} (PVX_CHAOS_SEED=${seed}):\n${report}`).toEqual([]);
  }, 600_000);
});
