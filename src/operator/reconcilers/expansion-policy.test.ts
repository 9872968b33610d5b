import type { KubernetesObject, V1Namespace, V1PersistentVolumeClaim, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ClusterPolicySpec, ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import type { PolicySpec, VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { ApiError } from '../../k8s/errors.ts';
import { FakeKubeClient } from '../../k8s/testing/fake-client.ts';
import { GiB } from '../../k8s/quantity.ts';
import { clusterVolumeExpansionPolicies, namespaces, resources, volumeExpansionPolicies, volumeExpansionRequests } from '../../k8s/resources.ts';
import { SampleStore } from '../../usage/samples.ts';
import type { UsageSource } from '../../usage/source.ts';
import { Informer } from '../../k8s/informer.ts';
import { createPolicyMetrics } from '../../metrics/policy.ts';
import { maxStatusVolumes, policyPass } from '../../policies/autoscale/policy-pass.ts';
import { PolicyEvaluator, unseenCreateMs } from './expansion-policy.ts';
import { staleCacheMs, UnseenCreates, UnseenWrites } from './unseen-writes.ts';

const logger = pino({ level: 'silent' });
let fake: FakeKubeClient;
let informers: Informer[] = [];
let now = new Date('2026-11-29T12:00:00Z');
let usedGiB = 9;

function informer<T extends KubernetesObject>(type: Parameters<typeof fake.create>[0]): Informer<T> {
  const i = new Informer<T>({ type, client: fake, logger });
  informers.push(i as unknown as Informer);
  i.start();
  return i;
}

/** Set to make the source report a measurement taken then rather than now (the same one, read again). */
let measuredAt: Date | undefined;
/** Bytes on top of usedGiB: the wobble of a steady volume. */
let extraBytes = 0n;

/** A usage source whose volume "data" reports usedGiB of 10 GiB, measured now (or at measuredAt). */
const source: UsageSource = {
  name: 'test',
  collect: async () => ({
    samples: new Map([['db/data', { at: measuredAt ?? now, usedBytes: BigInt(usedGiB) * GiB + extraBytes, capacityBytes: 10n * GiB }]]),
    errors: [],
  }),
};

async function evaluator(extra: Partial<ConstructorParameters<typeof PolicyEvaluator>[0]> = {}) {
  const e = new PolicyEvaluator({
    client: fake,
    policies: informer<VolumeExpansionPolicy>(volumeExpansionPolicies),
    requests: informer<VolumeExpansionRequest>(volumeExpansionRequests),
    pvcs: informer<V1PersistentVolumeClaim>(resources.persistentVolumeClaims),
    storageClasses: informer<V1StorageClass>(resources.storageClasses),
    statefulSets: informer<V1StatefulSet>(resources.statefulSets),
    clusterPolicies: informer<ClusterVolumeExpansionPolicy>(clusterVolumeExpansionPolicies),
    namespaces: informer<V1Namespace>(namespaces),
    source,
    samples: new SampleStore(),
    logger,
    canWrite: () => true,
    intervalMs: 30_000,
    now: () => now,
    ...extra,
  });
  await Promise.all(informers.map((i) => i.waitForSync()));
  return e;
}

const settle = () => new Promise((r) => setTimeout(r, 5));

/** One evaluation pass per simulated minute. */
async function passes(e: PolicyEvaluator, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    now = new Date(now.getTime() + 60_000);
    await e.reconcile();
    await settle();
  }
}

function policy(spec: Partial<PolicySpec> = {}): void {
  fake.create(volumeExpansionPolicies, {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionPolicy',
    metadata: { name: 'grow', namespace: 'db' },
    spec: { triggers: { usedPercent: 80, sustainedSamples: 2 }, cooldown: '30m', ...spec },
  } as VolumeExpansionPolicy);
}

function clusterPolicy(name: string, spec: Partial<ClusterPolicySpec> = {}): void {
  fake.create(clusterVolumeExpansionPolicies, {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'ClusterVolumeExpansionPolicy',
    metadata: { name, uid: `uid-${name}` },
    spec: { namespaceSelector: { matchLabels: { tier: 'data' } }, triggers: { usedPercent: 80, sustainedSamples: 2 }, cooldown: '30m', ...spec },
  } as ClusterVolumeExpansionPolicy);
}

const clusterStatus = (name: string) => fake.get<ClusterVolumeExpansionPolicy>(clusterVolumeExpansionPolicies, undefined, name)?.status;

const requests = () => fake.calls.filter((c) => c.startsWith('createRequest'));
/** The requests created, oldest first (a growing claim is not listed in the policy's status: its request is the record). */
const created = () =>
  fake.snapshot<VolumeExpansionRequest>(volumeExpansionRequests).sort((a, b) => Number(a.metadata.resourceVersion) - Number(b.metadata.resourceVersion));
const volumeStatus = () => fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'grow')?.status?.volumes?.[0];

beforeEach(() => {
  fake = new FakeKubeClient();
  // The fake stamps creationTimestamp with the real clock; the simulated one starts there.
  now = new Date();
  usedGiB = 9;
  measuredAt = undefined;
  extraBytes = 0n;
  fake.create(namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'db', labels: { tier: 'data' } } });
  fake.create(resources.persistentVolumeClaims, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'data', namespace: 'db' },
    spec: { storageClassName: 'fast', resources: { requests: { storage: '10Gi' } } },
    status: { phase: 'Bound', capacity: { storage: '10Gi' } },
  } as V1PersistentVolumeClaim);
});

afterEach(async () => {
  await Promise.all(informers.map((i) => i.stop()));
  informers = [];
});

describe('PolicyEvaluator', () => {
  it('creates one request, owned and labelled, once the breach is sustained', async () => {
    policy();
    const e = await evaluator();
    await passes(e, 1);
    expect(requests()).toHaveLength(0); // one sample is not yet sustained
    await passes(e, 1);
    expect(requests()).toHaveLength(1);
    const [req] = created();
    expect(req?.spec).toEqual({ target: { pvcName: 'data' }, size: '12Gi' });
    expect(req?.metadata.labels).toEqual({ 'pvx.dev/policy': 'grow' });
    expect(req?.metadata.annotations).toMatchObject({
      'pvx.dev/trigger': 'UsedRatio',
      'pvx.dev/decision': expect.stringMatching(/grow 10Gi → 12Gi \(90\.0% used/),
    });
    expect(req?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'VolumeExpansionPolicy', name: 'grow', controller: true });
    await passes(e, 10);
    expect(requests()).toHaveLength(1); // the unfinished request blocks further ones
    // Growing is routine: the policy's status does not list the claim, and records no Event of it.
    expect(volumeStatus()).toBeUndefined();
    expect(fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'grow')?.status?.matchedPVCs).toBe(1);
    expect(fake.events).toEqual([]);
  });

  it.each([
    ['another controller of this process created a request for the claim (seed 4242)', 'request'],
    ['the claim changed', 'claim'],
  ] as const)('creates nothing when, between its decision and its create, %s: it decides again at the next pass', async (_name, what) => {
    policy();
    const ownCreates = new UnseenCreates<VolumeExpansionRequest>(unseenCreateMs);
    let moveOnce = true;
    // The pass decides; then, before the evaluator's create, the claim moves.
    const pass: typeof policyPass = (input) => {
      const plans = policyPass(input);
      if (moveOnce && plans.some((p) => p.volumes.some((v) => v.action.kind === 'create'))) {
        moveOnce = false;
        if (what === 'request') {
          const child = {
            apiVersion: 'pvx.dev/v1alpha1',
            kind: 'VolumeExpansionRequest',
            metadata: { name: 'sts-0', namespace: 'db', creationTimestamp: now },
            spec: { target: { pvcName: 'data' }, size: '11Gi' },
          } as VolumeExpansionRequest;
          ownCreates.created('db/sts-0', child, performance.now());
        } else {
          const c = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
          fake.update(resources.persistentVolumeClaims, { ...c, metadata: { ...c.metadata, resourceVersion: undefined, labels: { moved: 'yes' } } });
        }
      }
      return plans;
    };
    const e = await evaluator({ pass, ownCreates });
    await passes(e, 1);
    if (what === 'claim') await settle();
    await passes(e, 1);
    expect(requests()).toHaveLength(0);
    if (what === 'claim') {
      // Nothing else in the way: the next pass asks.
      await passes(e, 1);
      expect(requests()).toHaveLength(1);
    }
  });

  // Simulation seed 700662: a person deleted the policy's request two seconds after its create,
  // before the requests' cache showed it; it counted in flight for ten minutes.
  it('a request it created that the cache has not shown for a while is read from the API server: deleted, it is in flight no more', async () => {
    policy();
    const ownCreates = new UnseenCreates<VolumeExpansionRequest>(unseenCreateMs);
    const gone = {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'a-grow-data-1', namespace: 'db', creationTimestamp: now, labels: { 'pvx.dev/policy': 'grow' } },
      spec: { target: { pvcName: 'data' }, size: '11Gi' },
    } as VolumeExpansionRequest;
    let monotonic = 0;
    ownCreates.created('db/a-grow-data-1', gone, monotonic);
    const e = await evaluator({ ownCreates, monotonicMs: () => monotonic });
    // Unseen for less than staleCacheMs: it may be in the cache's way yet, and counts in flight.
    monotonic = staleCacheMs - 1;
    await passes(e, 1);
    expect(requests()).toHaveLength(0);
    monotonic = staleCacheMs + 1;
    await passes(e, 1);
    expect(requests()).toHaveLength(1);
  });

  it('asks nothing from a claim copy older than this process’s own patch of it, until the cache shows the patch (seed 41955)', async () => {
    policy();
    const ownClaimPatches = new UnseenWrites();
    // The request reconciler patched the claim from the version the cache still shows: that patch's
    // event is late (or lost, and its request deleted since), so the copy shows neither raise nor time.
    const cached = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
    ownClaimPatches.wrote('db/data', cached.metadata?.resourceVersion as string);
    const e = await evaluator({ ownClaimPatches });
    await passes(e, 3);
    expect(requests()).toHaveLength(0);
    // The cache shows a newer version: the pass decides from it, and asks.
    fake.update(resources.persistentVolumeClaims, { ...cached, metadata: { ...cached.metadata, resourceVersion: undefined, labels: { seen: 'yes' } } });
    await settle();
    await passes(e, 2);
    expect(requests()).toHaveLength(1);
  });

  // Seed 1217471: a claim deleted and created again under its name while a pod of the old one still
  // ran; the first pass saw only the new claim, and a measurement of the old volume (5 Gi, nearly
  // full) made a forecast for it.
  it('reads no measurement made before the claim was created (a claim of the name before it)', async () => {
    const old = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
    fake.delete(resources.persistentVolumeClaims, 'db', 'data');
    fake.create(resources.persistentVolumeClaims, {
      ...old,
      metadata: { name: 'data', namespace: 'db', creationTimestamp: new Date(now.getTime() + 150_000) },
    } as V1PersistentVolumeClaim);
    policy();
    const e = await evaluator();
    await passes(e, 2); // both measurements predate the claim: sustained, but not of its volume
    expect(requests()).toHaveLength(0);
    await passes(e, 2); // two of its own
    expect(requests()).toHaveLength(1);
  });

  it('does not ask again at every pass after its request was refused (cooldown counts from the request)', async () => {
    policy({ cooldown: '30m' });
    const e = await evaluator();
    await passes(e, 2);
    expect(requests()).toHaveLength(1);
    const req = created()[0] as VolumeExpansionRequest;
    fake.update(volumeExpansionRequests, {
      ...req,
      metadata: { ...req.metadata, resourceVersion: undefined },
      status: { phase: 'Rejected', reason: 'GuardrailMaxSize' },
    });
    await passes(e, 20);
    expect(requests()).toHaveLength(1);
    expect(volumeStatus()).toMatchObject({ decision: 'blocked', reason: 'Cooldown' });
    await passes(e, 15);
    expect(requests()).toHaveLength(2);
  });

  it('DryRun reports the plan and creates nothing', async () => {
    policy({ mode: 'DryRun' });
    const e = await evaluator();
    await passes(e, 3);
    expect(requests()).toHaveLength(0);
    expect(volumeStatus()).toMatchObject({ decision: 'dryRun' });
    expect(volumeStatus()?.message).toMatch(/would .*grow 10Gi → 12Gi/);
  });

  it('Approval marks the request as needing approval', async () => {
    policy({ mode: 'Approval' });
    const e = await evaluator();
    await passes(e, 2);
    const [req] = created();
    expect(req?.metadata.annotations?.['pvx.dev/approval']).toBe('required');
    // Someone must act: the Event says so.
    expect(fake.events.map((ev) => ev.reason)).toEqual(['RequestCreated']);
  });

  it('leaves PVCs its selector does not take alone', async () => {
    policy({ selector: { matchLabels: { app: 'other' } } });
    const e = await evaluator();
    await passes(e, 3);
    expect(requests()).toHaveLength(0);
    expect(fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'grow')?.status?.matchedPVCs).toBe(0);
  });

  it.each([
    ['the claims of its StatefulSet', 'db', 1],
    ['no claims of another StatefulSet', 'other', 0],
  ])('with statefulSetName, takes %s', async (_name, sts, matched) => {
    fake.create(resources.statefulSets, {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db', namespace: 'db' },
      spec: { selector: {}, serviceName: 'db', template: {}, volumeClaimTemplates: [{ metadata: { name: 'data' } }] },
    } as V1StatefulSet);
    const pvc = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
    fake.create(resources.persistentVolumeClaims, { ...pvc, metadata: { name: 'data-db-0', namespace: 'db' } });
    policy({ statefulSetName: sts });
    const e = await evaluator();
    await passes(e, 1);
    expect(fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'grow')?.status?.matchedPVCs).toBe(matched);
  });

  // Review, 2026-12-04: a policy pvx could not read — "it decides nothing", its status said —
  // still made the template request that deletes and re-creates its StatefulSet; and its error
  // was logged at every pass.
  describe('a policy that is not Ready', () => {
    beforeEach(() => {
      const sts = fake.create(resources.statefulSets, {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: 'db', namespace: 'db' },
        spec: {
          replicas: 1,
          selector: {},
          serviceName: 'db',
          template: {},
          volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '5Gi' } } } }],
        },
      } as V1StatefulSet);
      const pvc = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
      fake.create(resources.persistentVolumeClaims, { ...pvc, metadata: { name: 'data-db-0', namespace: 'db', uid: undefined } });
      expect(sts.metadata?.uid).toBeDefined();
    });

    it('creates no template request; a Ready one does', async () => {
      policy({ statefulSetName: 'db', statefulSetTemplate: { update: true }, windows: [{ schedule: '0 2 * * *', duration: '1h', timeZone: 'Mars/Olympus' }] });
      const e = await evaluator();
      await passes(e, 2);
      expect(created().filter((r) => r.spec.target.statefulSetName)).toEqual([]);
      const readable = fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'grow') as VolumeExpansionPolicy;
      fake.update(volumeExpansionPolicies, {
        ...readable,
        metadata: { ...readable.metadata, resourceVersion: undefined },
        spec: { ...readable.spec, windows: [] },
      });
      await settle();
      await passes(e, 1);
      expect(created().filter((r) => r.spec.target.statefulSetName)).toHaveLength(1);
    });

    it('logs why once per change, not at every pass', async () => {
      const lines: string[] = [];
      const counting = pino({ level: 'error' }, { write: (line: string) => void lines.push(line) });
      policy({ windows: [{ schedule: 'every night', duration: '1h' }] });
      const e = await evaluator({ logger: counting });
      await passes(e, 5);
      expect(lines.filter((l) => l.includes('policy not evaluated'))).toHaveLength(1);
    });
  });

  it('says so at the maximum size, once, instead of stalling silently', async () => {
    policy({ maxSize: '10Gi' });
    const e = await evaluator();
    await passes(e, 5);
    expect(requests()).toHaveLength(0);
    expect(volumeStatus()).toMatchObject({ decision: 'atMax' });
    expect(fake.events.filter((ev) => ev.reason === 'AtMaxSize')).toHaveLength(1);
  });

  describe('ClusterVolumeExpansionPolicy with triggers', () => {
    it('grows a PVC of a selected namespace: the request is in the PVC’s namespace, labelled and owned by the cluster policy', async () => {
      clusterPolicy('fleet');
      const e = await evaluator();
      await passes(e, 2);
      expect(requests()).toEqual([expect.stringMatching(/^createRequest db\/fleet-data-/)]);
      const status = clusterStatus('fleet');
      expect(status?.matchedPVCs).toBe(1);
      expect(status?.volumes).toEqual([]); // growing is routine: not listed
      const [req] = created();
      expect(req?.spec).toEqual({ target: { pvcName: 'data' }, size: '12Gi' });
      expect(req?.metadata.labels).toEqual({ 'pvx.dev/cluster-policy': 'fleet' });
      expect(req?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'ClusterVolumeExpansionPolicy', name: 'fleet', uid: 'uid-fleet', controller: true });
      // No Event at creation: the expansion's one Event goes on the PVC when it completes.
      expect(fake.events).toEqual([]);
    });

    it('leaves namespaces its selector does not take alone', async () => {
      clusterPolicy('fleet', { namespaceSelector: { matchLabels: { tier: 'web' } } });
      const e = await evaluator();
      await passes(e, 3);
      expect(requests()).toHaveLength(0);
      expect(clusterStatus('fleet')?.matchedPVCs).toBe(0);
    });

    it('leaves a PVC that a namespaced policy selects to that policy', async () => {
      policy();
      clusterPolicy('fleet');
      const e = await evaluator();
      await passes(e, 2);
      expect(requests()).toEqual([expect.stringMatching(/^createRequest db\/grow-data-/)]);
      expect(clusterStatus('fleet')?.matchedPVCs).toBe(0);
    });

    it('of two cluster policies selecting one PVC, only the first by name grows it', async () => {
      clusterPolicy('b-second');
      clusterPolicy('a-first');
      const e = await evaluator();
      await passes(e, 5);
      expect(requests()).toEqual([expect.stringMatching(/^createRequest db\/a-first-data-/)]);
      expect(clusterStatus('b-second')?.matchedPVCs).toBe(0);
    });

    it('with guardrails only, grows nothing', async () => {
      clusterPolicy('caps', { triggers: undefined, guardrails: { maxSize: '100Gi' } });
      const e = await evaluator();
      await passes(e, 3);
      expect(requests()).toHaveLength(0);
      expect(clusterStatus('caps')).toBeUndefined();
    });
  });

  it('drops a PVC’s per-volume series once no policy selects it any more', async () => {
    policy();
    const registry = new Registry();
    const e = await evaluator({ metrics: createPolicyMetrics(registry) });
    await passes(e, 1);
    const ratio = async () => (await registry.getSingleMetric('pvx_volume_used_ratio')?.get())?.values.length;
    expect(await ratio()).toBe(1);
    fake.delete(volumeExpansionPolicies, 'db', 'grow');
    await settle();
    await passes(e, 1);
    expect(await ratio()).toBe(0);
  });

  it('reads usage with no policy at all (the audit needs it)', async () => {
    const samples = new SampleStore();
    const e = await evaluator({ samples });
    await passes(e, 1);
    expect(samples.get('db/data')).toHaveLength(1);
  });

  it(`keeps at most ${maxStatusVolumes} volumes in a status, and counts the rest; a growing claim is not one of them`, async () => {
    const pvc = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
    for (let i = 0; i < maxStatusVolumes + 5; i++)
      fake.create(resources.persistentVolumeClaims, { ...pvc, metadata: { name: `unmeasured-${i}`, namespace: 'db' } });
    policy();
    const e = await evaluator();
    await passes(e, 2);
    const status = fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'grow')?.status;
    expect(status?.matchedPVCs).toBe(maxStatusVolumes + 6);
    // Only "data" has usage (over the threshold: it grows, and is not listed); the others, unmeasured, need a look.
    expect(status?.volumes).toHaveLength(maxStatusVolumes);
    expect(status?.volumesOmitted).toBe(5);
    expect(status?.volumes?.every((v) => v.decision === 'unknown' && v.pvcName.startsWith('unmeasured-'))).toBe(true);
    expect(requests()).toHaveLength(1);
  });
});

describe('PolicyEvaluator, one bad claim', () => {
  function badClaims(): void {
    const pvc = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
    fake.create(resources.persistentVolumeClaims, {
      ...pvc,
      metadata: { name: 'bad-request', namespace: 'db' },
      spec: { ...pvc.spec, resources: { requests: { storage: '12 Gi' } } },
    });
    fake.create(resources.persistentVolumeClaims, {
      ...pvc,
      metadata: { name: 'bad-capacity', namespace: 'db' },
      status: { ...pvc.status, capacity: { storage: 'lots' } },
    });
  }

  it('is one unknown/Unreadable entry in each policy’s status; the other claims and policies are decided and written', async () => {
    badClaims();
    policy();
    fake.create(volumeExpansionPolicies, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionPolicy',
      metadata: { name: 'watch', namespace: 'db' },
      spec: { triggers: { usedPercent: 95 }, mode: 'DryRun' },
    } as VolumeExpansionPolicy);
    const e = await evaluator();
    await passes(e, 2);
    expect(requests()).toEqual([expect.stringMatching(/^createRequest db\/grow-data-/)]);
    const statusOf = (name: string) => fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', name)?.status;
    const grow = statusOf('grow');
    expect(grow?.matchedPVCs).toBe(3);
    const byClaim = Object.fromEntries((grow?.volumes ?? []).map((v) => [v.pvcName, v]));
    expect(byClaim['bad-request']).toMatchObject({
      decision: 'unknown',
      reason: 'Unreadable',
      message: expect.stringContaining('spec.resources.requests.storage: "12 Gi"'),
    });
    expect(byClaim['bad-capacity']).toMatchObject({
      decision: 'unknown',
      reason: 'Unreadable',
      message: expect.stringContaining('status.capacity.storage: "lots"'),
    });
    expect(byClaim.data?.decision).not.toBe('unknown');
    // The other policy selects the same claims and leaves them to grow (one policy per claim): it is written too.
    expect(statusOf('watch')?.volumes?.map((v) => v.decision)).toEqual(['overlap', 'overlap', 'overlap']);
  });
});

describe('PolicyEvaluator, one policy whose window cannot be read', () => {
  it.each([
    ['schedule "every night"', { schedule: 'every night', duration: '1h' }],
    ['time zone Mars/Olympus_Mons', { schedule: '0 2 * * *', duration: '1h', timeZone: 'Mars/Olympus_Mons' }],
  ])('%s: its status says why; the other policy still creates its request and writes its status', async (_name, window) => {
    // Two claims, each full, each taken by its own policy; the broken one is decided first.
    fake.create(resources.persistentVolumeClaims, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'logs', namespace: 'db', labels: { app: 'logs' } },
      spec: { storageClassName: 'fast', resources: { requests: { storage: '10Gi' } } },
      status: { phase: 'Bound', capacity: { storage: '10Gi' } },
    } as V1PersistentVolumeClaim);
    fake.create(volumeExpansionPolicies, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionPolicy',
      metadata: { name: 'a-broken', namespace: 'db' },
      spec: { selector: { matchLabels: { app: 'logs' } }, triggers: { usedPercent: 80, sustainedSamples: 1 }, windows: [window] },
    } as VolumeExpansionPolicy);
    const data = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
    fake.update(resources.persistentVolumeClaims, { ...data, metadata: { ...data.metadata, resourceVersion: undefined, labels: { app: 'data' } } });
    policy({ selector: { matchLabels: { app: 'data' } } });
    const both: UsageSource = {
      name: 'test',
      collect: async () => ({
        samples: new Map(['db/data', 'db/logs'].map((k) => [k, { at: now, usedBytes: 9n * GiB, capacityBytes: 10n * GiB }])),
        errors: [],
      }),
    };
    const e = await evaluator({ source: both });
    await passes(e, 2);
    expect(requests()).toHaveLength(1);
    expect(created()[0]?.spec.target.pvcName).toBe('data');
    expect(fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'grow')?.status?.matchedPVCs).toBe(1);
    const broken = fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'a-broken')?.status;
    expect(broken?.conditions).toEqual([expect.objectContaining({ type: 'Ready', status: 'False', reason: 'InvalidSpec' })]);
    expect(broken?.conditions?.[0]?.message).toContain('timeZone' in window ? window.timeZone : window.schedule);
  });
});

describe('PolicyEvaluator, what it reads of usage', () => {
  it('asks the source for inode counts only while a policy has an inode trigger', async () => {
    const asked: (boolean | undefined)[] = [];
    const recording: UsageSource = { name: 'test', collect: async (at, wanted) => (asked.push(wanted?.inodes), source.collect(at)) };
    policy();
    const e = await evaluator({ source: recording });
    await passes(e, 1);
    clusterPolicy('inodes', { triggers: { inodesUsedPercent: 90 } });
    await settle();
    await passes(e, 1);
    expect(asked).toEqual([false, true]);
  });
});

describe('PolicyEvaluator, its own creates', () => {
  it('while its requests’ cache lags, a request it created counts as in flight: two passes a minute apart create one request, not two', async () => {
    policy();
    const lagging = informer<VolumeExpansionRequest>(volumeExpansionRequests);
    const e = await evaluator({ requests: lagging });
    await lagging.stop(); // the requests' watch lags from here: it never shows the create
    await passes(e, 2);
    expect(requests()).toHaveLength(1);
    await passes(e, 3);
    expect(requests()).toHaveLength(1);
    // In flight, which is routine: the status lists nothing (no error, no second decision to grow).
    expect(fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'grow')?.status).toMatchObject({ matchedPVCs: 1, volumes: [] });
  });

  it.each([
    ['made, its answer lost (seed 500998): the next pass reads that it exists and asks nothing more', true, 1],
    ['not made (a server error before it reached storage): the next pass reads that it does not exist and asks again', false, 2],
  ])('a create with no answer, the cache lagging — %s', async (_name, made, creates) => {
    policy();
    const lagging = informer<VolumeExpansionRequest>(volumeExpansionRequests);
    const e = await evaluator({ requests: lagging });
    await lagging.stop();
    const create = fake.createRequest.bind(fake);
    let attempts = 0;
    fake.createRequest = async (ns, req) => {
      if (++attempts > 1) return create(ns, req);
      if (made) await create(ns, req);
      throw new ApiError(503, 'ServiceUnavailable', 'the answer was lost');
    };
    await passes(e, 2);
    await passes(e, 2);
    expect(attempts).toBe(creates);
  });

  it('a request for the claim its cache never showed (another process’s, its ADDED event lost) is read on the API server before a create: no second request (seed 2289932)', async () => {
    policy();
    const lagging = informer<VolumeExpansionRequest>(volumeExpansionRequests);
    const e = await evaluator({ requests: lagging });
    await lagging.stop(); // the requests' watch shows nothing from here
    fake.create(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'data-by-the-last-leader', namespace: 'db', labels: { 'pvx.dev/policy': 'grow' } },
      spec: { target: { pvcName: 'data' }, size: '12Gi' },
    } as VolumeExpansionRequest);
    const lists = () => fake.calls.filter((c) => c === 'list volumeexpansionrequests').length;
    const listed = lists();
    await passes(e, 2);
    expect(requests()).toHaveLength(0);
    // Read once, just before the create it stopped; counted in flight from then on: later passes
    // neither ask nor read the namespace's requests again.
    expect(lists()).toBe(listed + 1);
    const before = lists();
    await passes(e, 3);
    expect(requests()).toHaveLength(0);
    expect(lists()).toBe(before);
  });

  it('a claim deleted and created again under its name, the claims’ cache behind it, is read on the API server before a create: no request (seed 2957629)', async () => {
    policy();
    const lagging = informer<V1PersistentVolumeClaim>(resources.persistentVolumeClaims);
    const e = await evaluator({ pvcs: lagging });
    await passes(e, 1); // one measurement over the trigger: not sustained yet
    await lagging.stop(); // the claims' watch shows nothing from here; the cache keeps the old claim
    const old = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
    fake.delete(resources.persistentVolumeClaims, 'db', 'data');
    fake.create(resources.persistentVolumeClaims, { ...old, metadata: { name: 'data', namespace: 'db' } });
    const claimReads = () => fake.calls.filter((c) => c === 'list persistentvolumeclaims').length;
    const read = claimReads();
    await passes(e, 1); // sustained: decided to grow the old claim's copy, and read live before the create
    expect(claimReads()).toBe(read + 1);
    expect(requests()).toHaveLength(0);
  });

  it('counts it only until the cache shows it, and for ten minutes at most (a request deleted before the cache saw it)', () => {
    const unseen = new UnseenCreates<string>(600_000);
    unseen.created('db/a', 'a', 0);
    unseen.created('db/b', 'b', 0);
    expect(unseen.unseen(() => false, 1000)).toEqual(['a', 'b']);
    expect(unseen.unseen((k) => k === 'db/a', 2000)).toEqual(['b']);
    expect(unseen.unseen(() => false, 600_001)).toEqual([]);
  });
});

describe('PolicyEvaluator, status writes', () => {
  const statusWrites = () => fake.calls.filter((c) => c.startsWith('patchPolicyStatus'));

  it('writes a policy’s status once while its decisions hold, however the measurements move, and not for a claim it grows', async () => {
    usedGiB = 5;
    policy();
    const registry = new Registry();
    const e = await evaluator({ metrics: createPolicyMetrics(registry) });
    await passes(e, 1);
    expect(statusWrites()).toHaveLength(1);
    // A steady claim: every pass a new measurement, a few MiB up or down, a whole GiB more once.
    for (const [i, wobble] of [3, -2, 7, 1, -5, 4, 0, 9].entries()) {
      extraBytes = BigInt(wobble) * 1024n * 1024n;
      if (i === 4) usedGiB = 6;
      await passes(e, 1);
    }
    expect(statusWrites()).toHaveLength(1);
    expect(fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'grow')?.status?.lastEvaluatedAt).toBeUndefined();
    // An idle claim is not listed: the status says how many claims the policy takes.
    expect(fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'grow')?.status).toMatchObject({ matchedPVCs: 1, volumes: [], volumesOmitted: 0 });
    // When it was evaluated, and the usage, are metrics instead.
    const last = (await registry.getSingleMetric('pvx_policy_last_evaluation_timestamp_seconds')?.get())?.values;
    expect(last).toEqual([expect.objectContaining({ labels: { policy: 'grow' }, value: now.getTime() / 1000 })]);
    const ratio = (await registry.getSingleMetric('pvx_volume_used_ratio')?.get())?.values[0]?.value;
    expect(ratio).toBeCloseTo(0.6, 2);
    // Over the threshold: the first breach is not yet a trigger, the second is — and growing the
    // claim (the request created, then in flight whatever the usage does) is routine: no write.
    usedGiB = 9;
    await passes(e, 2);
    expect(requests()).toHaveLength(1);
    for (const wobble of [1, 2, 3, 4, 5]) {
      extraBytes = BigInt(wobble) * 1024n * 1024n;
      await passes(e, 1);
    }
    expect(statusWrites()).toHaveLength(1);
    // A decision that needs a person is written at once: here the maximum size, reached.
    const grown = fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
    fake.delete(volumeExpansionRequests, 'db', created()[0]?.metadata.name as string);
    fake.update(volumeExpansionPolicies, {
      ...(fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'grow') as VolumeExpansionPolicy),
      spec: { triggers: { usedPercent: 80, sustainedSamples: 2 }, cooldown: '30m', maxSize: grown.spec?.resources?.requests?.storage },
    });
    await settle();
    await passes(e, 1);
    expect(statusWrites()).toHaveLength(2);
    expect(volumeStatus()).toMatchObject({ decision: 'atMax' });
  });
});

describe('PolicyEvaluator, a new leader', () => {
  const statusWrites = () => fake.calls.filter((c) => c.startsWith('patchPolicyStatus'));

  // Simulation seed 1751291: the policies' watch of the next leader lost the old leader's status
  // write; its first pass wrote the same status again, changing nothing.
  it('writes no status the API server already has, though its cache missed the last leader’s write', async () => {
    usedGiB = 5;
    policy();
    const before = fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'grow') as VolumeExpansionPolicy;
    const leader = await evaluator();
    await passes(leader, 1);
    expect(statusWrites()).toHaveLength(1);
    const cache = informer<VolumeExpansionPolicy>(volumeExpansionPolicies);
    const behind = new Proxy(cache, { get: (t, p) => (p === 'get' ? () => before : Reflect.get(t, p, t)) as unknown });
    const next = await evaluator({ policies: behind });
    await passes(next, 2);
    expect(statusWrites()).toHaveLength(1);
  });
});

describe('PolicyEvaluator, usage sampling', () => {
  it('counts a measurement read again once: repeated readings of it never make a breach sustained', async () => {
    policy();
    const samples = new SampleStore();
    const e = await evaluator({ samples });
    measuredAt = new Date(now.getTime() + 60_000);
    await passes(e, 5);
    expect(samples.get('db/data')).toHaveLength(1);
    expect(requests()).toHaveLength(0);
    // A second measurement: sustained (the policy asks for 2).
    measuredAt = undefined;
    await passes(e, 1);
    expect(samples.get('db/data')).toHaveLength(2);
    expect(requests()).toHaveLength(1);
  });

  it('reads again at --policy-interval when no claim’s next measurement may change a decision', async () => {
    usedGiB = 1;
    policy();
    const e = await evaluator({ intervalMs: 30_000 });
    now = new Date(now.getTime() + 60_000);
    expect(await e.reconcile()).toEqual({ requeueAfterMs: 30_000 });
  });

  it('reads again just after the next measurement of a claim breaching a threshold is due, not at --policy-interval', async () => {
    policy({ triggers: { usedPercent: 80, sustainedSamples: 3 } });
    const e = await evaluator({ intervalMs: 30_000 });
    // The kubelet measured at 0 s and at 10 s (its period: 10 s); pvx reads at 1 s, 11 s and 16 s.
    const t0 = now.getTime();
    const read = async (measured: number, at: number) => {
      measuredAt = new Date(t0 + measured);
      now = new Date(t0 + at);
      const { requeueAfterMs } = await e.reconcile();
      await settle();
      return requeueAfterMs;
    };
    await read(0, 1000);
    // Half a period after the newest measurement, and 2 s to let it finish: at 17 s.
    expect(await read(10_000, 11_000)).toBe(6000);
    // Then every quarter period (2.5 s) until the next is seen, but never sooner than 5 s.
    expect(await read(10_000, 17_000)).toBe(5000);
    expect(requests()).toHaveLength(0);
  });
});

describe('PolicyEvaluator, a 1Gi XFS volume filling at 8 MiB/s (full in about 2 min) at the defaults', () => {
  // As measured against pvc-autoresizer on the embedded cluster: its kubelet measures each pod's
  // volumes every 10–20 s (volumeStatsAggPeriod 10s, a jitter factor of 1.0), a pod writes 8 MiB/s
  // into a 1Gi XFS volume (1014 MiB of file system, 39 MiB used empty), the policy at the defaults
  // with a 90 % threshold (pvc-autoresizer's 10 % free), pvx reading every 30 s at the latest and
  // otherwise when its evaluator asks to be requeued. The expansion then takes at most 14 s there.
  const MiB = 1024n * 1024n;
  const fsBytes = 1014n * MiB;
  const fullAfterS = (1014 - 39) / 8;

  /** A small deterministic generator, so each seed is one reproducible run. */
  const random = (seed: number) => {
    let x = (seed * 2654435761) % 2 ** 32 || 1;
    return () => {
      x ^= x << 13;
      x >>>= 0;
      x ^= x >>> 17;
      x ^= x << 5;
      x >>>= 0;
      return x / 2 ** 32;
    };
  };

  it.each(Array.from({ length: 12 }, (_, i) => i + 1))(
    'seed %i: the request comes from the fill rate, early enough for the volume to grow before it is full',
    async (seed) => {
      const r = random(seed);
      const t0 = now.getTime();
      // The kubelet's measurements (whole seconds), the first somewhere in its first period.
      const measurements: number[] = [];
      for (let t = Math.floor(r() * 10); t < 300; t += Math.round(10 * (1 + r()))) measurements.push(t);
      const usedAt = (s: number) => 39n * MiB + BigInt(Math.max(0, s)) * 8n * MiB;
      const kubelet: UsageSource = {
        name: 'kubelet',
        collect: async () => {
          const s = (now.getTime() - t0) / 1000;
          const m = [...measurements].reverse().find((x) => x <= s);
          return {
            samples:
              m === undefined
                ? new Map()
                : new Map([['db/fill', { at: new Date(t0 + m * 1000), usedBytes: usedAt(m) < fsBytes ? usedAt(m) : fsBytes, capacityBytes: fsBytes }]]),
            errors: [],
          };
        },
      };
      fake.create(resources.persistentVolumeClaims, {
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        metadata: { name: 'fill', namespace: 'db' },
        spec: { storageClassName: 'fast', resources: { requests: { storage: '1Gi' } } },
        status: { phase: 'Bound', capacity: { storage: '1Gi' } },
      } as V1PersistentVolumeClaim);
      policy({ selector: {}, triggers: { usedPercent: 90 }, cooldown: undefined });
      const e = await evaluator({ source: kubelet, intervalMs: 30_000 });
      // pvx's own phase: its first pass anywhere in an interval.
      now = new Date(t0 + Math.round(r() * 30_000));
      let requestedAt: number | undefined;
      let passCount = 0;
      while (now.getTime() - t0 < 300_000 && requestedAt === undefined) {
        const { requeueAfterMs } = await e.reconcile();
        await settle();
        passCount++;
        if (requests().some((c) => c.includes('grow-fill-'))) requestedAt = (now.getTime() - t0) / 1000;
        now = new Date(now.getTime() + (requeueAfterMs ?? 30_000) + 50);
      }
      expect(requestedAt).toBeDefined();
      const req = fake.peek<VolumeExpansionRequest>(volumeExpansionRequests).find((x) => x.spec.target.pvcName === 'fill');
      expect(req?.metadata.annotations?.['pvx.dev/trigger']).toBe('Forecast');
      expect(req?.spec.size).toBe('2Gi');
      // Requested, then grown within the embedded cluster's 14 s, before the file system is full.
      expect(requestedAt as number).toBeLessThan(fullAfterS - 14);
      // Long before the 90 % threshold would even have been crossed.
      expect((39 + 8 * (requestedAt as number)) / 1014).toBeLessThan(0.9);
      expect(passCount).toBeLessThan(15);
    },
  );
});

describe('PolicyEvaluator, a request name that already exists', () => {
  it('is success when the existing request is its own (a create retried after its response was lost)', async () => {
    policy();
    const create = fake.createRequest.bind(fake);
    // The first create reaches the API server; the client retries and meets it.
    fake.createRequest = async (ns, req) => {
      await create(ns, req);
      return create(ns, req);
    };
    const e = await evaluator();
    await passes(e, 2);
    // Taken for its own: the claim grows, with no error in the status.
    expect(volumeStatus()).toBeUndefined();
    expect(created().map((r) => [r.metadata.name?.startsWith('grow-data-'), r.spec.size])).toEqual([[true, '12Gi']]);
  });

  it('is an error in the policy’s status, not success, when the existing request is someone else’s', async () => {
    policy();
    const create = fake.createRequest.bind(fake);
    fake.createRequest = async (ns, req) => {
      // Another object got the name first.
      fake.create(volumeExpansionRequests, {
        ...req,
        metadata: { name: req.metadata?.name, namespace: ns },
        spec: { target: { pvcName: 'data' }, size: '100Gi' },
      });
      return create(ns, req);
    };
    const e = await evaluator();
    await passes(e, 2);
    expect(volumeStatus()).toMatchObject({
      decision: 'error',
      reason: 'RequestNameTaken',
      message: expect.stringMatching(/already exists and is not the one this policy asked for/),
    });
    expect(volumeStatus()?.request).toBeUndefined();
    expect(fake.events.filter((ev) => ev.reason === 'RequestCreated')).toHaveLength(0);
  });

  // Simulation seed 180: an object-count quota on requests refused the policy's create (403); the
  // refusal escaped the pass, the policy's status was never written (no Ready condition) and no
  // one was told why nothing grew.
  it('is an error in the policy’s status when the API server refuses the create (an object-count quota), and the status is written', async () => {
    policy();
    fake.createRequest = async () => {
      throw new ApiError(
        403,
        'Forbidden',
        'volumeexpansionrequests.pvx.dev "x" is forbidden: exceeded quota: objects, requested: count/volumeexpansionrequests.pvx.dev=1, used: count/volumeexpansionrequests.pvx.dev=5, limited: count/volumeexpansionrequests.pvx.dev=5',
      );
    };
    const e = await evaluator();
    await passes(e, 2);
    expect(volumeStatus()).toMatchObject({ decision: 'error', reason: 'RequestRefused', message: expect.stringMatching(/exceeded quota/) });
    expect(fake.get<VolumeExpansionPolicy>(volumeExpansionPolicies, 'db', 'grow')?.status?.conditions).toEqual([
      expect.objectContaining({ type: 'Ready', status: 'True' }),
    ]);
  });
});
