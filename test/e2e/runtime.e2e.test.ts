// The operator runtime against a real API server: caches that heal across an API server restart
// and a compacted history (410 Gone), and leader election between two pvx processes.
import { CoordinationV1Api, PatchStrategy, setHeaderOptions, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startComponentByName, stopComponent } from '../cluster/cluster.ts';
import { e2eEnv } from './support/env.ts';
import { compactEtcd } from './support/etcd.ts';
import { core, createNamespace, deleteNamespace, kc, pvcManifest, waitFor } from './support/kube.ts';
import { startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';

let ns: string;
const running: PvxProcess[] = [];

beforeAll(async () => {
  ns = await createNamespace('pvx-e2e-runtime');
});
afterEach(async () => {
  await Promise.all(running.splice(0).map(stopPvx));
});
afterAll(async () => {
  if (ns) await deleteNamespace(ns);
});

function pvx(name: string, args: string[] = []): PvxProcess {
  // Plain HTTP metrics: these tests restart the API server, which reviews every scrape's token.
  const p = startPvx(name, args, undefined, { metrics: 'plain' });
  running.push(p);
  return p;
}

// A class no provisioner serves: the claims stay Pending and cost nothing.
const unboundPVC = (name: string): V1PersistentVolumeClaim => pvcManifest(name, 'pvx-e2e-unprovisioned', '1Gi');

const sorted = (entries: [string, string][]) => JSON.stringify(entries.sort(([a], [b]) => a.localeCompare(b)));

/** name → resourceVersion of the namespace's PVCs, as the API server has them. */
async function apiPVCs(): Promise<Record<string, string>> {
  const list = await core.listNamespacedPersistentVolumeClaim({ namespace: ns });
  return Object.fromEntries(list.items.map((p) => [`${ns}/${p.metadata?.name}`, p.metadata?.resourceVersion ?? '']));
}

/** The same, as pvx's cache has them. */
async function cachedPVCs(p: PvxProcess): Promise<Record<string, string>> {
  const all = JSON.parse((await p.get('/debug/informers/persistentvolumeclaims')).body) as Record<string, string>;
  return Object.fromEntries(Object.entries(all).filter(([k]) => k.startsWith(`${ns}/`)));
}

async function waitConverged(p: PvxProcess, timeoutMs = 90_000): Promise<Record<string, string>> {
  let want: Record<string, string> = {};
  let have: Record<string, string> = {};
  try {
    await waitFor(
      'pvx cache to equal the API server',
      timeoutMs,
      async () => {
        want = await apiPVCs();
        have = await cachedPVCs(p);
        return sorted(Object.entries(have)) === sorted(Object.entries(want));
      },
      500,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}\nAPI server: ${sorted(Object.entries(want))}\npvx cache:  ${sorted(Object.entries(have))}\n${p.logTail(10)}`, {
      cause: err,
    });
  }
  return want;
}

/** A deleted claim disappears from the API once its finalizers are gone. */
async function waitGone(name: string): Promise<void> {
  await waitFor(`PVC ${name} to be gone`, 60_000, async () => !(name in (await apiPVCs())));
}

async function createClaims(tag: string): Promise<void> {
  for (let i = 0; i < 4; i++) await core.createNamespacedPersistentVolumeClaim({ namespace: ns, body: unboundPVC(`${tag}-${i}`) });
}

/** A burst of changes to the claims createClaims(tag) made: updates, a delete and creates. */
async function changeClaims(tag: string): Promise<void> {
  for (const name of [`${tag}-0`, `${tag}-1`]) {
    await core.patchNamespacedPersistentVolumeClaim(
      { namespace: ns, name, body: { metadata: { labels: { changed: 'yes' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }
  await core.deleteNamespacedPersistentVolumeClaim({ namespace: ns, name: `${tag}-2` });
  // Its pvc-protection finalizer waits for kube-controller-manager, itself catching up after the
  // restart; the claim is unused, so the test lifts it and the delete completes at once.
  await core.patchNamespacedPersistentVolumeClaim(
    { namespace: ns, name: `${tag}-2`, body: { metadata: { finalizers: null } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  await core.createNamespacedPersistentVolumeClaim({ namespace: ns, body: unboundPVC(`${tag}-new-a`) });
  await core.createNamespacedPersistentVolumeClaim({ namespace: ns, body: unboundPVC(`${tag}-new-b`) });
}

describe.skipIf(!e2eEnv.embedded)('caches across API server outages (embedded cluster: restarts its API server)', () => {
  it('resumes after kube-apiserver restarts and sees every change made before pvx reconnected', async () => {
    await createClaims('restart');
    const p = pvx('cache-restart', ['--leader-elect=false', '--log-level=debug']);
    await waitReady(p);
    await waitConverged(p);
    const restartsBefore = (await p.metric('pvx_informer_watch_restarts_total', { resource: 'persistentvolumeclaims', reason: 'error' })) ?? 0;

    await stopComponent('kube-apiserver');
    await sleep(3000); // pvx notices and backs off
    await startComponentByName('kube-apiserver');
    await changeClaims('restart'); // typically before pvx's backoff ends
    await waitGone(`${ns}/restart-2`);
    const final = await waitConverged(p);

    expect(Object.keys(final)).toContain(`${ns}/restart-new-a`);
    expect(Object.keys(final)).not.toContain(`${ns}/restart-2`);
    const restartsAfter = (await p.metric('pvx_informer_watch_restarts_total', { resource: 'persistentvolumeclaims', reason: 'error' })) ?? 0;
    const relistsAfterGone = (await p.metric('pvx_informer_relists_total', { resource: 'persistentvolumeclaims', reason: 'gone' })) ?? 0;
    expect(restartsAfter + relistsAfterGone).toBeGreaterThan(restartsBefore);
    expect((await p.get('/readyz')).status).toBe(200);
  });

  // The embedded API server serves ResourceQuota watches from etcd directly (see
  // test/cluster/components.ts), so compacting etcd makes the version pvx resumes from history
  // that no longer exists: 410 Gone, deterministically.
  it('relists on 410 Gone when the history it would resume from was compacted', async () => {
    const quota = (name: string, storage: string) => ({ metadata: { name }, spec: { hard: { 'requests.storage': storage } } });
    const quotas = async (): Promise<Record<string, string>> => {
      const list = await core.listNamespacedResourceQuota({ namespace: ns });
      return Object.fromEntries(list.items.map((q) => [`${ns}/${q.metadata?.name}`, q.metadata?.resourceVersion ?? '']));
    };
    const cachedQuotas = async (p: PvxProcess) =>
      Object.fromEntries(
        Object.entries(JSON.parse((await p.get('/debug/informers/resourcequotas')).body) as Record<string, string>).filter(([k]) => k.startsWith(`${ns}/`)),
      );
    for (const n of ['q0', 'q1', 'q2']) await core.createNamespacedResourceQuota({ namespace: ns, body: quota(n, '10Gi') });

    const p = pvx('cache-410', ['--leader-elect=false']);
    await waitReady(p);
    const converged = (timeoutMs: number) =>
      waitFor(
        'pvx quota cache to equal the API server',
        timeoutMs,
        async () => sorted(Object.entries(await cachedQuotas(p))) === sorted(Object.entries(await quotas())),
        500,
      );
    await converged(30_000);
    const relistsBefore = (await p.metric('pvx_informer_relists_total', { resource: 'resourcequotas', reason: 'gone' })) ?? 0;

    // Frozen, pvx cannot resume; the restart ends its streams; the changes and the compaction
    // come after, so nothing of them is buffered on its old connection.
    p.kill('SIGSTOP');
    try {
      await stopComponent('kube-apiserver');
      await startComponentByName('kube-apiserver');
      await core.patchNamespacedResourceQuota(
        { namespace: ns, name: 'q0', body: { spec: { hard: { 'requests.storage': '20Gi' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      await core.deleteNamespacedResourceQuota({ namespace: ns, name: 'q1' });
      await core.createNamespacedResourceQuota({ namespace: ns, body: quota('q-new', '5Gi') });
      await compactEtcd();
    } finally {
      p.kill('SIGCONT');
    }
    await converged(60_000);
    expect(Object.keys(await cachedQuotas(p)).sort()).toEqual([`${ns}/q-new`, `${ns}/q0`, `${ns}/q2`]);
    const relistsAfter = (await p.metric('pvx_informer_relists_total', { resource: 'resourcequotas', reason: 'gone' })) ?? 0;
    expect(relistsAfter).toBe(relistsBefore + 1);
  });
});

describe('leader election between two pvx processes', () => {
  const lease = () => kc.makeApiClient(CoordinationV1Api).readNamespacedLease({ namespace: ns, name: 'pvx-e2e-leader' });
  const leaderArgs = () => ['--leader-election-namespace', ns, '--leader-election-id', 'pvx-e2e-leader'];
  const isLeading = async (p: PvxProcess) => (await p.metric('leader_election_master_status', { name: 'pvx-e2e-leader' }).catch(() => 0)) === 1;

  async function electedOf(a: PvxProcess, b: PvxProcess): Promise<[PvxProcess, PvxProcess]> {
    let leader: PvxProcess | undefined;
    await waitFor('one leader', 30_000, async () => {
      const [la, lb] = [await isLeading(a), await isLeading(b)];
      if (la && lb) throw new Error('two leaders at once');
      leader = la ? a : lb ? b : undefined;
      return leader !== undefined;
    });
    const l = leader as PvxProcess;
    expect((await lease()).spec?.holderIdentity).toBe(l.name);
    return [l, l === a ? b : a];
  }

  it('elects exactly one; after kill -9 the standby takes over within the lease duration; after SIGTERM at once', async () => {
    const a = pvx('le-a', leaderArgs());
    const b = pvx('le-b', leaderArgs());
    await Promise.all([waitReady(a), waitReady(b)]);
    const [leader, standby] = await electedOf(a, b);
    // Stays that way while both run.
    await sleep(5000);
    expect(await isLeading(leader)).toBe(true);
    expect(await isLeading(standby)).toBe(false);

    const killedAt = Date.now();
    leader.kill('SIGKILL');
    await waitFor('the standby to lead', 30_000, () => isLeading(standby), 200);
    const takeoverMs = Date.now() - killedAt;
    expect((await lease()).spec?.holderIdentity).toBe(standby.name);
    // Not before the lease could expire (15 s since the last renewal, at most 5 s — the renew
    // period — before the kill). At the latest: the standby sees the last renewal at its next
    // attempt (up to a retry period, 2.4 s with jitter, after it), counts the lease duration from
    // there, and takes over at its first attempt after that (up to 2.4 s more).
    expect(takeoverMs).toBeGreaterThan(9_500);
    expect(takeoverMs).toBeLessThan(15_000 + 2 * 2_400 + 1_500);

    const c = pvx('le-c', leaderArgs());
    await waitReady(c);
    await sleep(3000);
    expect(await isLeading(c)).toBe(false);
    const termAt = Date.now();
    standby.kill('SIGTERM');
    await waitFor('the new standby to lead', 15_000, () => isLeading(c), 100);
    const handoverMs = Date.now() - termAt;
    expect(await standby.exited).toBe(0);
    expect(handoverMs).toBeLessThan(4_000); // one retry period (2 s × up to 1.2) plus the release
    console.log(`leader election: takeover after kill -9 in ${takeoverMs} ms, after SIGTERM in ${handoverMs} ms`);
  });
});
