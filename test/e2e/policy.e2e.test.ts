// Auto-expansion on real usage: a pod fills an XFS volume (its own usage in the kubelet's stats),
// a VolumeExpansionPolicy notices through the kubelet source (pvx as its ServiceAccount, reading the
// kubelet directly with nodes/stats) and creates a request, the volume
// grows, and no second expansion follows while usage statistics catch up. Also: the cooldown
// between two real expansions, the forecast firing on a steadily filling volume before the ratio
// would, and a ClusterVolumeExpansionPolicy growing a volume of a namespace it selects.
//
// Every test has claims and policies of its own (policies here select by label), so the tests run
// concurrently: they mostly wait on the kubelet's stats and pvx's clocks, and one after another
// they took 7 min.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { ClusterPolicySpec } from '../../src/crds/cluster-volume-expansion-policy.ts';
import type { PolicySpec, VolumeExpansionPolicy } from '../../src/crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import { runPvx } from './support/cli.ts';
import { e2eEnv } from './support/env.ts';
import { bindPVC, core, createNamespace, createPod, deleteNamespace, execInPod, kc, readPVC, waitFor, waitForPodRunning } from './support/kube.ts';
import { apiserverAudits, auditLogEnd, readAuditEvents, type AuditEvent } from './support/audit-log.ts';
import { pvxNamespace, serviceAccountKubeconfig } from './support/identity.ts';
import { startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';

const custom = kc.makeApiClient(CustomObjectsApi);
const group = { group: 'pvx.dev', version: 'v1alpha1' };
let ns: string;
let pvx: PvxProcess;

beforeAll(async () => {
  ns = await createNamespace('pvx-e2e-policy');
  // As pvx's ServiceAccount (config/rbac/): the kubelet usage source reads each kubelet directly,
  // which lets it in on nodes/stats get alone — the kubelet's webhook authorization asks the API server.
  pvx = startPvx('policy', ['--leader-elect=false', '--namespace', ns, '--policy-interval', '2s'], await serviceAccountKubeconfig());
  await waitReady(pvx);
});

afterAll(async () => {
  if (pvx) await stopPvx(pvx);
  if (ns) await deleteNamespace(ns);
});

async function createPolicy(name: string, spec: PolicySpec): Promise<void> {
  await custom.createNamespacedCustomObject({
    ...group,
    plural: 'volumeexpansionpolicies',
    namespace: ns,
    body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionPolicy', metadata: { name }, spec },
  });
}

async function policyRequests(policy: string, label = 'pvx.dev/policy'): Promise<VolumeExpansionRequest[]> {
  const list = (await custom.listNamespacedCustomObject({
    ...group,
    plural: 'volumeexpansionrequests',
    namespace: ns,
    labelSelector: `${label}=${policy}`,
  })) as { items: VolumeExpansionRequest[] };
  return list.items.sort((a, b) => String(a.metadata.creationTimestamp).localeCompare(String(b.metadata.creationTimestamp)));
}

async function readRequest(name: string): Promise<VolumeExpansionRequest> {
  return (await custom.getNamespacedCustomObject({ ...group, plural: 'volumeexpansionrequests', namespace: ns, name })) as VolumeExpansionRequest;
}

const waitForCompletion = (name: string) =>
  waitFor(`request ${name} to complete`, 120_000, async () => (await readRequest(name)).status?.phase === 'Completed', 1000);

async function readPolicy(name: string): Promise<VolumeExpansionPolicy> {
  return (await custom.getNamespacedCustomObject({ ...group, plural: 'volumeexpansionpolicies', namespace: ns, name })) as VolumeExpansionPolicy;
}

/** A pod on the claim that writes `mib` MiB once /data/go exists. */
async function fillingPod(claim: string, mib: number): Promise<void> {
  await createPod(ns, claim, claim, `until [ -e /data/go ]; do sleep 1; done; dd if=/dev/zero of=/data/fill bs=1M count=${mib} && sync; sleep 3600`);
  await waitForPodRunning(ns, claim);
}

const execIn = (pod: string, command: string[]) => execInPod(ns, pod, command);

const startFilling = (pod: string) => execIn(pod, ['touch', '/data/go']);

const usageClass = e2eEnv.usageClass as string;

/** A 1Gi claim labelled for one test's policy (policies here select by label, so tests stay apart). */
async function labelledClaimOnly(name: string, mode: string): Promise<void> {
  await core.createNamespacedPersistentVolumeClaim({
    namespace: ns,
    body: {
      metadata: { name, labels: { mode } },
      spec: { accessModes: ['ReadWriteOnce'], storageClassName: usageClass, resources: { requests: { storage: '1Gi' } } },
    },
  });
  await bindPVC(ns, name);
}

/** The same, with a pod that writes 800 MiB once told to. */
async function labelledClaim(name: string, mode: string): Promise<void> {
  await labelledClaimOnly(name, mode);
  await fillingPod(name, 800);
}

describe.skipIf(!e2eEnv.usageClass).concurrent('a policy on a filling volume', () => {
  it('creates one request when usage crosses the threshold, the volume grows, and no second expansion follows while usage lags', async () => {
    await labelledClaim('fill', 'auto');
    await createPolicy('grow-when-full', {
      selector: { matchLabels: { mode: 'auto' } },
      storageClassNames: [usageClass],
      triggers: { usedPercent: 75, sustainedSamples: 2 },
      step: { percent: 100, minimum: '1Gi' },
      cooldown: '10s',
    });
    // Before the pod writes: the policy takes the volume and decides nothing (an idle claim is not listed).
    await waitFor(
      'the policy to take the volume, idle',
      60_000,
      async () => {
        const status = (await readPolicy('grow-when-full')).status;
        return status?.matchedPVCs === 1 && status.volumes?.length === 0;
      },
      1000,
    );
    expect(await policyRequests('grow-when-full')).toHaveLength(0);

    const started = Date.now();
    const auditFrom = auditLogEnd();
    await startFilling('fill');
    let request: VolumeExpansionRequest | undefined;
    await waitFor(
      'the policy to create a request',
      120_000,
      async () => {
        request = (await policyRequests('grow-when-full'))[0];
        return request !== undefined;
      },
      1000,
    );
    expect(request?.spec).toMatchObject({ target: { pvcName: 'fill' }, size: '2Gi' });
    // The threshold, or — when a kubelet measurement fell inside the write, so that two intervals in
    // a row grew — the fill rate: 800 MiB in seconds is a fill that would have filled the volume.
    expect(request?.metadata.annotations?.['pvx.dev/trigger']).toMatch(/^(UsedRatio|Forecast)$/);
    await waitFor(
      'the request to complete',
      120_000,
      async () =>
        (
          (await custom.getNamespacedCustomObject({
            ...group,
            plural: 'volumeexpansionrequests',
            namespace: ns,
            name: request?.metadata.name as string,
          })) as VolumeExpansionRequest
        ).status?.phase === 'Completed',
      1000,
    );
    expect((await readPVC(ns, 'fill')).status?.capacity?.storage).toBe('2Gi');
    const grownAfter = Date.now() - started;

    // Well past the 10 s cooldown and several kubelet stats periods: still one request.
    await sleep(40_000);
    expect(await policyRequests('grow-when-full')).toHaveLength(1);
    // What the expansion cost, as the API server recorded it: at most five writes — the request's
    // creation, its two status writes (the plan accepted, the end), the claim's patch and the
    // claim's one Event — and no write of the policy's status. Counted on this expansion's objects
    // (the claim, the policy, the request and the Events about them, which pvx names after their
    // object): the other tests' expansions run in the same namespace meanwhile.
    if (apiserverAudits()) {
      const what = (e: AuditEvent) => `${e.verb} ${e.objectRef?.resource}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
      const objects = ['fill', 'grow-when-full', request?.metadata.name as string];
      const ofThisExpansion = (name = '') => objects.some((o) => name === o || name.startsWith(`${o}.`));
      const writes = readAuditEvents(auditFrom).filter(
        (e) =>
          e.user.username === `system:serviceaccount:${pvxNamespace}:pvx` &&
          e.objectRef?.namespace === ns &&
          ofThisExpansion(e.objectRef.name) &&
          ['create', 'update', 'patch', 'delete'].includes(e.verb) &&
          (e.responseStatus?.code ?? 0) < 300,
      );
      console.log(`policy: writes for one auto-expansion: ${writes.map(what).join(', ')}`);
      expect(writes.map(what).sort()).toEqual([
        'create events',
        'create volumeexpansionrequests',
        'patch persistentvolumeclaims',
        'patch volumeexpansionrequests/status',
        'patch volumeexpansionrequests/status',
      ]);
    }
    // Idle again, and a routine expansion is not listed: the request is the record, the claim's Event the story.
    expect((await readPolicy('grow-when-full')).status).toMatchObject({ matchedPVCs: 1, volumes: [] });
    const grown = await core.listNamespacedEvent({
      namespace: ns,
      fieldSelector: 'involvedObject.kind=PersistentVolumeClaim,involvedObject.name=fill,reason=Expanded',
    });
    expect(grown.items.map((e) => e.message)).toEqual([
      expect.stringMatching(
        new RegExp(`^1Gi → 2Gi in \\S+ by VolumeExpansionPolicy grow-when-full \\(VolumeExpansionRequest ${request?.metadata.name}\\): .*% used`),
      ),
    ]);
    const ratio = await pvx.metric('pvx_volume_used_ratio', { namespace: ns, persistentvolumeclaim: 'fill' });
    expect(ratio).toBeLessThan(0.75);
    console.log(
      `policy: 800 MiB written into 1Gi → request (${request?.metadata.annotations?.['pvx.dev/trigger']}) → 2Gi in ${grownAfter} ms; used ${Math.round((ratio ?? 0) * 100)}% afterwards`,
    );
  });
});

describe.skipIf(!e2eEnv.usageClass).concurrent('policy modes', () => {
  it('DryRun says what it would do and creates no request', async () => {
    await labelledClaim('dry', 'dry');
    await createPolicy('dry', { selector: { matchLabels: { mode: 'dry' } }, triggers: { usedPercent: 75, sustainedSamples: 2 }, mode: 'DryRun' });
    await startFilling('dry');
    await waitFor(
      'a dry-run decision',
      120_000,
      async () => (await readPolicy('dry')).status?.volumes?.find((v) => v.pvcName === 'dry')?.decision === 'dryRun',
      1000,
    );
    const v = (await readPolicy('dry')).status?.volumes?.find((x) => x.pvcName === 'dry');
    expect(v?.message).toMatch(/dry run: would .*grow 1Gi → 2Gi/);
    expect(await policyRequests('dry')).toHaveLength(0);
    expect((await readPVC(ns, 'dry')).spec?.resources?.requests?.storage).toBe('1Gi');

    // `pvx plan`, read-only from outside the operator, comes to the same decision.
    const planned = await runPvx(['plan', '-n', ns, '-o', 'json', '--kubeconfig', e2eEnv.kubeconfig]);
    expect(planned.code, planned.stderr).toBe(0);
    const rows = (JSON.parse(planned.stdout) as { rows: { policy: string; pvc: string; decision: string; target?: string; message: string }[] }).rows;
    expect(rows.find((r) => r.policy === 'vep/dry' && r.pvc === 'dry')).toMatchObject({
      decision: 'dryRun',
      target: '2 GiB',
      message: expect.stringMatching(/grow 1Gi → 2Gi/),
    });
    expect(await policyRequests('dry')).toHaveLength(0);
  });

  it('Approval creates a request that waits until it is approved', async () => {
    await labelledClaim('ask', 'ask');
    await createPolicy('ask', { selector: { matchLabels: { mode: 'ask' } }, triggers: { usedPercent: 75, sustainedSamples: 2 }, mode: 'Approval' });
    await startFilling('ask');
    let request: VolumeExpansionRequest | undefined;
    await waitFor(
      'a request awaiting approval',
      120_000,
      async () => {
        request = (await policyRequests('ask'))[0];
        return request?.status?.reason === 'AwaitingApproval';
      },
      1000,
    );
    expect(request?.status?.message).toMatch(/pvx approve ver\/.* \(or kubectl annotate --overwrite ver .* pvx\.dev\/approved=\S+-to-\S+\)/);
    await sleep(5000);
    expect((await readPVC(ns, 'ask')).spec?.resources?.requests?.storage).toBe('1Gi');

    // As a user would: `kubectl pvx approve ver/NAME -n NS`.
    const approved = await runPvx(['approve', `ver/${request?.metadata.name}`, '-n', ns, '--kubeconfig', e2eEnv.kubeconfig]);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toMatch(/approved/);
    await waitFor(
      'the approved request to complete',
      120_000,
      async () =>
        (
          (await custom.getNamespacedCustomObject({
            ...group,
            plural: 'volumeexpansionrequests',
            namespace: ns,
            name: request?.metadata.name as string,
          })) as VolumeExpansionRequest
        ).status?.phase === 'Completed',
      1000,
    );
    expect((await readPVC(ns, 'ask')).status?.capacity?.storage).toBe('2Gi');
  });
});

describe.skipIf(!e2eEnv.usageClass).concurrent('policy guards on a full volume', () => {
  it('at its maximum size it says so instead of asking; outside its maintenance window it defers to the next one; a younger policy over the same claim leaves it alone', async () => {
    // One claim per guard: of several policies over one claim only the oldest acts (claimPolicies).
    await Promise.all([labelledClaim('full', 'guards-max'), labelledClaim('shut', 'guards-window')]);
    // Opens daily at a fixed hour 12 h away from now (UTC), for one hour: closed now.
    const closedHour = (new Date().getUTCHours() + 12) % 24;
    await createPolicy('capped', { selector: { matchLabels: { mode: 'guards-max' } }, triggers: { usedPercent: 75, sustainedSamples: 2 }, maxSize: '1Gi' });
    await createPolicy('windowed', {
      selector: { matchLabels: { mode: 'guards-window' } },
      triggers: { usedPercent: 75, sustainedSamples: 2 },
      windows: [{ schedule: `0 ${closedHour} * * *`, duration: '1h', timeZone: 'UTC' }],
    });
    // Created after `capped`, over the same claim, and with room to grow it: it must not.
    await sleep(1100); // creationTimestamp has second resolution; the older one governs
    await createPolicy('younger', {
      selector: { matchLabels: { mode: 'guards-max' } },
      triggers: { usedPercent: 75, sustainedSamples: 2 },
      step: { percent: 100, minimum: '1Gi' },
    });
    await Promise.all([startFilling('full'), startFilling('shut')]);
    await waitFor(
      'both policies to see the breach',
      150_000,
      async () => {
        const [c, w] = [await readPolicy('capped'), await readPolicy('windowed')];
        return c.status?.volumes?.[0]?.decision === 'atMax' && w.status?.volumes?.[0]?.decision === 'blocked';
      },
      1000,
    );
    const windowed = (await readPolicy('windowed')).status?.volumes?.[0];
    expect(windowed).toMatchObject({ pvcName: 'shut', reason: 'OutsideWindow' });
    expect(new Date(windowed?.nextEligibleAt as string).getUTCHours()).toBe(closedHour);
    expect((await readPolicy('capped')).status?.volumes?.[0]?.message).toMatch(/maximum size 1Gi/);
    expect((await readPolicy('younger')).status?.volumes?.[0]).toMatchObject({
      pvcName: 'full',
      decision: 'overlap',
      reason: 'OverlappingPolicy',
      message: expect.stringMatching(/capped/),
    });
    for (const policy of ['capped', 'windowed', 'younger']) expect(await policyRequests(policy)).toHaveLength(0);
    expect((await readPVC(ns, 'full')).spec?.resources?.requests?.storage).toBe('1Gi');
    expect(await pvx.metric('pvx_volume_at_max_size', { namespace: ns, persistentvolumeclaim: 'full' })).toBe(1);
    const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.name=capped' });
    expect(events.items.filter((e) => e.reason === 'AtMaxSize')).toHaveLength(1);
  });
});

describe.skipIf(!e2eEnv.usageClass).concurrent('policy timing on real usage', () => {
  it('keeps the cooldown between two real expansions of one volume', async () => {
    await labelledClaim('twice', 'twice');
    const cooldownMs = 90_000;
    await createPolicy('twice', {
      selector: { matchLabels: { mode: 'twice' } },
      // Four measurements: a write of seconds spans at most two of the kubelet's 10–20 s intervals,
      // so it never reads as a fill about to fill the volume (which the cooldown would not hold).
      triggers: { usedPercent: 60, sustainedSamples: 4 },
      step: { percent: 100, minimum: '1Gi' },
      cooldown: `${cooldownMs / 1000}s`,
    });
    await startFilling('twice'); // 800 MiB of 1Gi: 78 %
    await waitFor('the first request', 180_000, async () => (await policyRequests('twice')).length === 1, 1000);
    const first = (await policyRequests('twice'))[0] as VolumeExpansionRequest;
    await waitForCompletion(first.metadata.name as string);
    expect((await readPVC(ns, 'twice')).status?.capacity?.storage).toBe('2Gi');

    // At once, 600 MiB more: 1400 MiB of 2Gi is 68 %, over the threshold again — within the cooldown.
    await execIn('twice', ['dd', 'if=/dev/zero', 'of=/data/more', 'bs=1M', 'count=600', 'conv=fsync']);
    await waitFor(
      'the policy to hold back for the cooldown',
      150_000,
      async () => {
        const v = (await readPolicy('twice')).status?.volumes?.find((x) => x.pvcName === 'twice');
        return v?.decision === 'blocked' && v.reason === 'Cooldown';
      },
      1000,
    );
    expect(await policyRequests('twice')).toHaveLength(1);
    await waitFor('the second request', 240_000, async () => (await policyRequests('twice')).length === 2, 1000);
    const [done, second] = (await policyRequests('twice')) as [VolumeExpansionRequest, VolumeExpansionRequest];
    const completedAt = new Date(done.status?.timeline?.completedAt as string).getTime();
    const secondAt = new Date(second.metadata.creationTimestamp as unknown as string).getTime();
    // The cooldown counts from the first expansion's last activity (its completion).
    expect(secondAt - completedAt).toBeGreaterThanOrEqual(cooldownMs - 1000);
    expect(second.spec).toMatchObject({ target: { pvcName: 'twice' }, size: '4Gi' });
    await waitForCompletion(second.metadata.name as string);
    expect((await readPVC(ns, 'twice')).status?.capacity?.storage).toBe('4Gi');
    console.log(
      `policy cooldown: second expansion ${Math.round((secondAt - completedAt) / 1000)} s after the first completed (cooldown ${cooldownMs / 1000} s)`,
    );
  });

  it('the forecast fires on a steadily filling volume before the ratio threshold would', async () => {
    await labelledClaimOnly('steady', 'steady');
    // 4 MiB a second, up to 600 MiB: the kubelet's 10 s stats see a straight line.
    await createPod(
      ns,
      'steady',
      'steady',
      'until [ -e /data/go ]; do sleep 1; done; i=0; while [ $i -lt 150 ]; do dd if=/dev/zero of=/data/f$i bs=1M count=4 conv=fsync 2>/dev/null; i=$((i+1)); sleep 1; done; sleep 3600',
    );
    await waitForPodRunning(ns, 'steady');
    await createPolicy('steady', {
      selector: { matchLabels: { mode: 'steady' } },
      triggers: { usedPercent: 90, sustainedSamples: 2, forecast: { horizon: '30m', window: '3m' } },
      step: { percent: 100, minimum: '1Gi' },
      maxSize: '2Gi',
    });
    await startFilling('steady');
    let request: VolumeExpansionRequest | undefined;
    await waitFor(
      'the forecast to create a request',
      240_000,
      async () => {
        request = (await policyRequests('steady'))[0];
        return request !== undefined;
      },
      1000,
    );
    expect(request?.metadata.annotations?.['pvx.dev/trigger']).toBe('Forecast');
    // The request says why, with the usage then: well under the 90 % threshold (and the claim's
    // Event repeats it when the expansion completes).
    const why = request?.metadata.annotations?.['pvx.dev/decision'] ?? '';
    const usedPercent = Number(/\((\d+(?:\.\d+)?)% used/.exec(why)?.[1]);
    expect(usedPercent).toBeLessThan(90);
    await waitForCompletion(request?.metadata.name as string);
    expect((await readPVC(ns, 'steady')).status?.capacity?.storage).toBe('2Gi');
    console.log(`policy forecast: request at ${usedPercent}% used (${why})`);
  });
});

describe.skipIf(!e2eEnv.usageClass).concurrent('a ClusterVolumeExpansionPolicy with triggers', () => {
  const name = `pvx-e2e-fleet-${Math.random().toString(36).slice(2, 8)}`;
  afterAll(async () => {
    await custom.deleteClusterCustomObject({ ...group, plural: 'clustervolumeexpansionpolicies', name }).catch(() => undefined);
  });

  it('grows a volume in a namespace it selects, through a request in that namespace', async () => {
    await labelledClaim('fleet', 'fleet');
    const spec: ClusterPolicySpec = {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
      selector: { matchLabels: { mode: 'fleet' } },
      triggers: { usedPercent: 75, sustainedSamples: 2 },
      step: { percent: 100, minimum: '1Gi' },
    };
    await custom.createClusterCustomObject({
      ...group,
      plural: 'clustervolumeexpansionpolicies',
      body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'ClusterVolumeExpansionPolicy', metadata: { name }, spec },
    });
    await startFilling('fleet');
    let request: VolumeExpansionRequest | undefined;
    await waitFor(
      'the cluster policy to create a request',
      120_000,
      async () => {
        request = (await policyRequests(name, 'pvx.dev/cluster-policy'))[0];
        return request !== undefined;
      },
      1000,
    );
    expect(request?.spec).toMatchObject({ target: { pvcName: 'fleet' }, size: '2Gi' });
    expect(request?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'ClusterVolumeExpansionPolicy', name });
    await waitForCompletion(request?.metadata.name as string);
    expect((await readPVC(ns, 'fleet')).status?.capacity?.storage).toBe('2Gi');
    const policy = (await custom.getClusterCustomObject({ ...group, plural: 'clustervolumeexpansionpolicies', name })) as {
      status?: { matchedPVCs?: number; volumes?: { namespace?: string; pvcName: string }[] };
    };
    expect(policy.status?.matchedPVCs).toBe(1);
    // Its one Event is on the claim, where the namespace's owners look.
    await waitFor('the claim’s Expanded event', 10_000, async () => {
      const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.name=fleet,reason=Expanded' });
      return events.items.some((e) => new RegExp(`^1Gi → 2Gi in \\S+ by ClusterVolumeExpansionPolicy ${name} `).test(e.message ?? ''));
    });
  });

  it('is refused at admission with neither guardrails nor triggers', async () => {
    const err = await custom
      .createClusterCustomObject({
        ...group,
        plural: 'clustervolumeexpansionpolicies',
        body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'ClusterVolumeExpansionPolicy', metadata: { name: `${name}-empty` }, spec: { mode: 'Auto' } },
      })
      .then(
        () => undefined,
        (e: unknown) => e as { code?: number; body?: string },
      );
    expect(err?.code).toBe(422);
    expect(String(err?.body)).toMatch(/set guardrails, triggers or both/);
  });
});

describe.concurrent('config/samples', () => {
  const dir = resolve(import.meta.dirname, '..', '..', 'config', 'samples');
  const plurals: Record<string, string> = {
    VolumeExpansionRequest: 'volumeexpansionrequests',
    VolumeExpansionPolicy: 'volumeexpansionpolicies',
    ClusterVolumeExpansionPolicy: 'clustervolumeexpansionpolicies',
  };
  it.each(readdirSync(dir).filter((f) => f.endsWith('.yaml')))('%s is admitted by the API server (server-side dry run)', async (file) => {
    const body = parse(readFileSync(resolve(dir, file), 'utf8')) as { kind: string };
    const plural = plurals[body.kind];
    expect(plural, `a sample of an unknown kind ${body.kind}`).toBeDefined();
    const created = (await (body.kind.startsWith('Cluster')
      ? custom.createClusterCustomObject({ ...group, plural: plural as string, body, dryRun: 'All' })
      : custom.createNamespacedCustomObject({ ...group, plural: plural as string, namespace: ns, body, dryRun: 'All' }))) as { metadata?: { uid?: string } };
    expect(created.metadata?.uid).toBeTruthy();
  });
});
