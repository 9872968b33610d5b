import type { V1PersistentVolumeClaim, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { ClusterPolicySpec, ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import type { PolicySpec, PolicyStatus, VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import type { Phase, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { PolicyRef } from '../../k8s/client.ts';
import { GiB, parseBytes } from '../../k8s/quantity.ts';
import type { UsageSample } from './sampling.ts';
import { limits } from '../../crds/limits.ts';
import { isRequestAskedFor, maxStatusVolumes, policyPass, policyRequestName, sameStatus, type PassInput, type PolicyPlan } from './policy-pass.ts';
import { claimPolicies, maxOverlappingPolicies, policiesByNamespace, selectionLookups } from './selection.ts';

const now = new Date('2026-11-29T12:00:00Z');
const minutesAgo = (m: number) => new Date(now.getTime() - m * 60_000);

const claim = (name: string, over: { capacity?: string; request?: string; namespace?: string } = {}): V1PersistentVolumeClaim => ({
  metadata: { name, namespace: over.namespace ?? 'db', uid: `uid-${name}` },
  spec: { storageClassName: 'fast', resources: { requests: { storage: over.request ?? over.capacity ?? '10Gi' } } },
  status: { phase: 'Bound', capacity: { storage: over.capacity ?? '10Gi' } },
});

const policy = (spec: Partial<PolicySpec> = {}, name = 'grow'): VolumeExpansionPolicy => ({
  apiVersion: 'pvx.dev/v1alpha1',
  kind: 'VolumeExpansionPolicy',
  metadata: { name, namespace: 'db', uid: `uid-${name}` },
  spec: { triggers: { usedPercent: 80, sustainedSamples: 2 }, cooldown: '30m', ...spec },
});

const clusterPolicy = (name: string, spec: Partial<ClusterPolicySpec> = {}): ClusterVolumeExpansionPolicy => ({
  apiVersion: 'pvx.dev/v1alpha1',
  kind: 'ClusterVolumeExpansionPolicy',
  metadata: { name, uid: `uid-${name}` },
  spec: { triggers: { usedPercent: 80, sustainedSamples: 2 }, cooldown: '30m', ...spec },
});

const request = (pvcName: string, phase: Phase | undefined, createdMinutesAgo: number): VolumeExpansionRequest => ({
  apiVersion: 'pvx.dev/v1alpha1',
  kind: 'VolumeExpansionRequest',
  metadata: { name: `r-${pvcName}`, namespace: 'db', creationTimestamp: minutesAgo(createdMinutesAgo).toISOString() as unknown as Date },
  spec: { target: { pvcName }, size: '12Gi' },
  ...(phase ? { status: { phase } } : {}),
});

/** Two fresh samples of usedGiB of 10 GiB: a breach sustained for the policies above at 9 GiB. */
const usage = (usedGiB: number, capacityGiB = 10): UsageSample[] =>
  [2, 1].map((m) => ({ at: minutesAgo(m), usedBytes: BigInt(Math.round(usedGiB * 1024)) * (GiB / 1024n), capacityBytes: BigInt(capacityGiB) * GiB }));

const fast: V1StorageClass = { metadata: { name: 'fast' }, provisioner: 'csi.example.com', allowVolumeExpansion: true };

function pass(over: Partial<PassInput> & { usedGiB?: Record<string, number> } = {}): PolicyPlan[] {
  const used = over.usedGiB ?? {};
  return policyPass({
    policies: [],
    clusterPolicies: [],
    claims: [claim('data')],
    storageClasses: [fast],
    requests: [],
    lookups: selectionLookups([{ metadata: { name: 'db', labels: { tier: 'data' } } }], []),
    samples: (key) => (used[key] !== undefined ? usage(used[key]) : usage(9)),
    lastCapacityChangeAt: () => undefined,
    now,
    ...over,
  });
}

const only = (plans: PolicyPlan[]) => {
  expect(plans).toHaveLength(1);
  return plans[0] as PolicyPlan;
};

describe('policyPass', () => {
  const decided = 'used ≥ 80% in each of the last 2 measurements: grow 10Gi → 12Gi (90.0% used, 1 GiB free)';
  // The claim the decision was about: the request is carried out on that claim at that size only.
  const measured = { 'pvx.dev/measured-capacity': '10Gi', 'pvx.dev/claim-uid': 'uid-data' };
  it.each([
    ['Auto', { annotations: { ...measured, 'pvx.dev/trigger': 'UsedRatio', 'pvx.dev/decision': decided } }],
    ['Approval', { annotations: { ...measured, 'pvx.dev/trigger': 'UsedRatio', 'pvx.dev/decision': decided, 'pvx.dev/approval': 'required' } }],
  ] as const)('%s: creates the request, owned and labelled, with why and the claim it measured in its annotations', (mode, want) => {
    const plan = only(pass({ policies: [policy({ mode })] }));
    const [v] = plan.volumes;
    expect(v?.decision).toMatchObject({ kind: 'expand', targetBytes: 12n * GiB });
    expect(v?.action.kind).toBe('create');
    if (v?.action.kind !== 'create') return;
    const { request: req, event, namespace } = v.action;
    expect(namespace).toBe('db');
    expect(req.metadata).toMatchObject({
      namespace: 'db',
      labels: { 'pvx.dev/policy': 'grow' },
      ...want,
      ownerReferences: [{ apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionPolicy', name: 'grow', uid: 'uid-grow', controller: true }],
    });
    expect(req.metadata.name).toMatch(/^grow-data-[0-9a-f]{16}$/);
    expect(req.spec).toEqual({ target: { pvcName: 'data' }, size: '12Gi' });
    expect(v.status).toEqual({
      pvcName: 'data',
      decision: 'expand',
      request: req.metadata.name,
      capacity: '10 GiB',
      message: 'used ≥ 80% in each of the last 2 measurements: grow 10Gi → 12Gi',
    });
    // A growing claim is routine: the request records it, and the policy's status does not list it.
    expect(plan.status).toMatchObject({ matchedPVCs: 1, volumes: [], volumesOmitted: 0 });
    if (mode === 'Auto') {
      // Its one Event goes on the claim when it completes (the request reconciler's).
      expect(event).toBeUndefined();
      return;
    }
    // Approval: someone must act, and the Event says so, with the measured figures.
    expect(event).toMatchObject({ type: 'Normal', reason: 'RequestCreated', regarding: { kind: 'VolumeExpansionPolicy', name: 'grow' } });
    expect(event?.message).toBe(`data: ${decided}: created VolumeExpansionRequest ${req.metadata.name} (awaiting approval)`);
  });

  it('DryRun: reports what it would do and acts on nothing', () => {
    const [v] = only(pass({ policies: [policy({ mode: 'DryRun' })] })).volumes;
    expect(v?.action).toEqual({ kind: 'none' });
    expect(v?.status).toMatchObject({ decision: 'dryRun', message: expect.stringMatching(/^dry run: would .*grow 10Gi → 12Gi/) });
    expect(v?.status.request).toBeUndefined();
  });

  it.each<[string, Partial<PassInput>, object]>([
    ['an unfinished request', { requests: [request('data', 'Expanding', 5)] }, { kind: 'blocked', reason: 'InFlight' }],
    ['a request not yet accepted', { requests: [request('data', undefined, 1)] }, { kind: 'blocked', reason: 'InFlight' }],
    ['a claim asking for more than its capacity', { claims: [claim('data', { capacity: '10Gi', request: '12Gi' })] }, { kind: 'blocked', reason: 'InFlight' }],
    ['a request rejected 10 min ago (cooldown 30m)', { requests: [request('data', 'Rejected', 10)] }, { kind: 'blocked', reason: 'Cooldown' }],
    ['a request completed 40 min ago', { requests: [request('data', 'Completed', 40)] }, { kind: 'expand' }],
    ['a capacity change after the samples', { lastCapacityChangeAt: () => minutesAgo(0.5) }, { kind: 'unknown', reason: 'JustGrown' }],
  ])('with %s decides %o', (_name, over, want) => {
    const [v] = only(pass({ policies: [policy()], ...over })).volumes;
    expect(v?.decision).toMatchObject(want);
    expect(v?.action.kind).toBe(v?.decision.kind === 'expand' ? 'create' : 'none');
  });

  describe('a volume about to fill (10Gi at 64 MiB/s, 54 % used: full in 73 s)', () => {
    const filling = (): UsageSample[] =>
      [40, 20, 1].map((s) => ({
        at: new Date(now.getTime() - s * 1000),
        usedBytes: 3n * GiB + BigInt(40 - s) * 64n * 1024n * 1024n,
        capacityBytes: 10n * GiB,
      }));
    it.each<[string, VolumeExpansionRequest[], object]>([
      ['is grown before any threshold', [], { kind: 'expand', trigger: 'Forecast' }],
      ['is grown within the cooldown of a completed expansion', [request('data', 'Completed', 5)], { kind: 'expand', trigger: 'Forecast' }],
      ['waits out the cooldown after a rejected request (no request at every pass)', [request('data', 'Rejected', 5)], { kind: 'blocked', reason: 'Cooldown' }],
      [
        'is grown within the cooldown of a request superseded by a change of the claim (not a refusal)',
        [{ ...request('data', 'Rejected', 5), status: { phase: 'Rejected', reason: 'Superseded' } }],
        { kind: 'expand', trigger: 'Forecast' },
      ],
      [
        'waits out the cooldown after a failed request',
        [
          request('data', 'Completed', 20),
          { ...request('data', 'Failed', 5), metadata: { name: 'r2', namespace: 'db', creationTimestamp: minutesAgo(5).toISOString() as unknown as Date } },
        ],
        { kind: 'blocked', reason: 'Cooldown' },
      ],
    ])('%s', (_name, requests, want) => {
      const [v] = only(pass({ policies: [policy({ triggers: { usedPercent: 95 } })], requests, samples: filling })).volumes;
      expect(v?.decision).toMatchObject(want);
      // After a refused request only time changes the decision: nothing to read early for.
      expect(v?.watch).toBe(false);
    });
  });

  describe('an unfinished StatefulSet request counts for the claims whose step it has not finished: it grows them through children it may not have made yet (seed 65026)', () => {
    const sts = { metadata: { name: 'web', namespace: 'db' }, spec: { replicas: 2, selector: {}, serviceName: 'web', template: {} } } as V1StatefulSet;
    const stsRequest = (status?: VolumeExpansionRequest['status']): VolumeExpansionRequest => ({
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow-web', namespace: 'db', creationTimestamp: minutesAgo(60).toISOString() as unknown as Date },
      spec: { target: { statefulSetName: 'web', volumeClaimTemplate: 'data' }, increment: '1Gi' },
      ...(status ? { status } : {}),
    });
    const decide = (requests: VolumeExpansionRequest[]) =>
      only(
        pass({
          policies: [policy()],
          claims: [claim('data-web-1')],
          requests,
          lookups: selectionLookups([{ metadata: { name: 'db', labels: { tier: 'data' } } }], [sts]),
        }),
      ).volumes[0]?.decision;
    it.each<[string, VolumeExpansionRequest[], object]>([
      ['not pinned yet: each claim of its StatefulSet', [stsRequest()], { kind: 'blocked', reason: 'InFlight' }],
      [
        'pinned: each claim it pinned',
        [stsRequest({ phase: 'Expanding', targets: [{ pvcName: 'data-web-1' }] } as never)],
        { kind: 'blocked', reason: 'InFlight' },
      ],
      ['pinned, another claim only', [stsRequest({ phase: 'Expanding', targets: [{ pvcName: 'data-web-0' }] } as never)], { kind: 'expand' }],
      ['finished: none', [stsRequest({ phase: 'Completed', targets: [{ pvcName: 'data-web-1' }] } as never)], { kind: 'expand' }],
      // Review, 2026-12-04: a request done with every claim and waiting on its template step (a
      // partitioned canary, a rollout stuck on a crash-looping pod) held a filling claim for as
      // long as it waited; so did a replica's claim completed while another waited for its pod.
      [
        'waiting on its template step, every claim done: none',
        [stsRequest({ phase: 'UpdatingTemplate', targets: [{ pvcName: 'data-web-1', phase: 'Completed' }] } as never)],
        { kind: 'expand' },
      ],
      [
        'another replica waiting for its pod: only that one',
        [
          stsRequest({
            phase: 'WaitingForPod',
            targets: [
              { pvcName: 'data-web-0', phase: 'WaitingForPod' },
              { pvcName: 'data-web-1', phase: 'Completed' },
            ],
          } as never),
        ],
        { kind: 'expand' },
      ],
      [
        'the claim already at size when pinned: none',
        [stsRequest({ phase: 'Expanding', targets: [{ pvcName: 'data-web-1', phase: 'Completed', reason: 'AlreadyAtSize' }] } as never)],
        { kind: 'expand' },
      ],
      [
        'the claim’s own step unfinished: it',
        [stsRequest({ phase: 'WaitingForPod', targets: [{ pvcName: 'data-web-1', phase: 'WaitingForPod' }] } as never)],
        { kind: 'blocked', reason: 'InFlight' },
      ],
    ])('%s', (_name, requests, want) => {
      expect(decide(requests)).toMatchObject(want);
    });

    // A namespace editor's replicas: 2^32 threw building a claim name per replica, and so stopped
    // the pass for every namespace; such a request is refused before it touches a claim.
    it('not pinned, of more replicas than one request grows: none, and nothing built per replica', () => {
      const huge = { ...sts, spec: { ...sts.spec, replicas: 2 ** 32 } } as V1StatefulSet;
      const plan = pass({
        policies: [policy()],
        claims: [claim('data-web-1')],
        requests: [stsRequest()],
        lookups: selectionLookups([{ metadata: { name: 'db', labels: { tier: 'data' } } }], [huge]),
      });
      expect(only(plan).volumes[0]?.decision).toMatchObject({ kind: 'expand' });
    });
  });

  it('at the maximum size: says so with a Warning instead of stalling silently', () => {
    const [v] = only(pass({ policies: [policy({ maxSize: '10Gi' })] })).volumes;
    expect(v?.decision.kind).toBe('atMax');
    expect(v?.status.decision).toBe('atMax');
    expect(v?.action).toMatchObject({ kind: 'event', event: { type: 'Warning', reason: 'AtMaxSize' } });
  });

  it('caps sustainedSamples for a plan made from fewer samples', () => {
    const one = (): UsageSample[] => usage(9).slice(-1);
    expect(only(pass({ policies: [policy()], samples: one })).volumes[0]?.decision.kind).toBe('idle');
    expect(only(pass({ policies: [policy()], samples: one, sustainedSamples: 1 })).volumes[0]?.decision.kind).toBe('expand');
  });

  describe('which policy takes a claim', () => {
    const names = (plans: PolicyPlan[]) => plans.map((p) => [p.policy.ref.name, p.volumes.map((v) => v.pvc.metadata?.name)]);

    it.each<[string, Partial<PassInput>, [string, (string | undefined)[]][]]>([
      [
        'every namespaced policy that selects it',
        { policies: [policy({}, 'a'), policy({}, 'b')] },
        [
          ['a', ['data']],
          ['b', ['data']],
        ],
      ],
      [
        'a namespaced policy before any cluster policy',
        { policies: [policy()], clusterPolicies: [clusterPolicy('fleet')] },
        [
          ['grow', ['data']],
          ['fleet', []],
        ],
      ],
      [
        'of cluster policies, the first by name',
        { clusterPolicies: [clusterPolicy('b-second'), clusterPolicy('a-first')] },
        [
          ['a-first', ['data']],
          ['b-second', []],
        ],
      ],
      [
        'no cluster policy whose namespaceSelector does not match',
        { clusterPolicies: [clusterPolicy('web', { namespaceSelector: { matchLabels: { tier: 'web' } } })] },
        [['web', []]],
      ],
      ['no cluster policy without triggers (guardrails only)', { clusterPolicies: [clusterPolicy('caps', { triggers: undefined })] }, []],
    ])('%s', (_name, over, want) => {
      expect(names(pass(over))).toEqual(want);
    });

    it('a cluster policy reports the namespace, creates the request in the claim’s namespace and records its Events (Approval’s) on the claim', () => {
      const plan = pass({ clusterPolicies: [clusterPolicy('fleet')] })[0] as PolicyPlan;
      const [v] = plan.volumes;
      expect(v?.status).toMatchObject({ namespace: 'db', pvcName: 'data' });
      expect(v?.action).toMatchObject({
        kind: 'create',
        namespace: 'db',
        request: {
          metadata: {
            labels: { 'pvx.dev/cluster-policy': 'fleet' },
            ownerReferences: [{ kind: 'ClusterVolumeExpansionPolicy', name: 'fleet', uid: 'uid-fleet' }],
          },
        },
      });
      expect(v?.action).not.toHaveProperty('event');
      const [approval] = (pass({ clusterPolicies: [clusterPolicy('fleet', { mode: 'Approval' })] })[0] as PolicyPlan).volumes;
      expect(approval?.action).toMatchObject({
        kind: 'create',
        event: { regarding: { kind: 'PersistentVolumeClaim', namespace: 'db', name: 'data', uid: 'uid-data' } },
      });
    });
  });

  it(`keeps at most ${maxStatusVolumes} volumes in a status, those needing attention first, and counts the rest`, () => {
    const unread = Array.from({ length: maxStatusVolumes + 5 }, (_, i) => claim(`unread-${i}`));
    const { status } = only(
      pass({ policies: [policy({ maxSize: '10Gi' })], claims: [...unread, claim('zz-full')], samples: (key) => (key === 'db/zz-full' ? usage(9) : []) }),
    );
    expect(status.matchedPVCs).toBe(maxStatusVolumes + 6);
    expect(status.volumes).toHaveLength(maxStatusVolumes);
    expect(status.volumesOmitted).toBe(6);
    expect(status.volumes?.[0]).toMatchObject({ pvcName: 'zz-full', decision: 'atMax' });
    expect(status.volumes?.slice(1).every((v) => v.decision === 'unknown')).toBe(true);
  });

  it('lists no claim it handles as it should: idle, growing (its request created, or in flight), or just grown', () => {
    const claims = [claim('idle'), claim('growing'), claim('in-flight'), claim('grown')];
    const { status } = only(
      pass({
        policies: [policy()],
        claims,
        usedGiB: { 'db/idle': 1 },
        requests: [request('in-flight', 'ControllerExpanding', 1)],
        lastCapacityChangeAt: (key) => (key === 'db/grown' ? minutesAgo(0.5) : undefined),
      }),
    );
    expect(status).toMatchObject({ matchedPVCs: 4, volumes: [], volumesOmitted: 0 });
  });

  it('keeps a volume’s message and reason within the bounds of a list item', () => {
    const { status } = only(pass({ policies: [policy()], claims: [claim('bad', { capacity: '10Gi', request: `${'9'.repeat(3000)} Gi` })] }));
    expect(status.volumes?.[0]?.message.length).toBeLessThanOrEqual(limits.itemMessage);
  });

  describe('a claim pvx cannot read is one unknown decision; the others are decided', () => {
    it.each([
      ['spec.resources.requests.storage', claim('bad', { capacity: '10Gi', request: '12 Gi' }), /spec\.resources\.requests\.storage: "12 Gi"/],
      ['status.capacity.storage', claim('bad', { capacity: 'lots', request: '10Gi' }), /status\.capacity\.storage: "lots"/],
    ])('%s', (_field, bad, message) => {
      const plans = pass({
        policies: [policy()],
        clusterPolicies: [clusterPolicy('fleet')],
        claims: [claim('before'), bad, claim('after', { namespace: 'web' })],
      });
      for (const plan of plans) {
        expect(plan.volumes.map((v) => [v.pvc.metadata?.name, v.decision.kind])).toEqual(
          plan.policy.ref.kind === 'VolumeExpansionPolicy'
            ? [
                ['before', 'expand'],
                ['bad', 'unknown'],
              ]
            : [['after', 'expand']],
        );
        if (plan.policy.ref.kind !== 'VolumeExpansionPolicy') continue;
        const unreadable = plan.volumes[1];
        expect(unreadable?.decision).toMatchObject({ reason: 'Unreadable', message });
        expect(unreadable?.status).toMatchObject({ decision: 'unknown', reason: 'Unreadable', message });
        expect(unreadable?.action).toEqual({ kind: 'none' });
      }
    });

    // The API server's canonical form of 1.0001Gi. Read as soon as the quantity parser knows the
    // micro suffix; until then unreadable like any other value it refuses — checked here both ways.
    it('status.capacity.storage 1073849198182400u', () => {
      const parserKnowsMicro = (() => {
        try {
          return parseBytes('1073849198182400u') === 1073849199n;
        } catch {
          return false;
        }
      })();
      const plans = pass({
        policies: [policy()],
        claims: [claim('micro', { capacity: '1073849198182400u', request: '1Gi' }), claim('data')],
        samples: (key) => (key === 'db/micro' ? usage(0.95, 1) : usage(9)),
      });
      const [micro, data] = only(plans).volumes;
      expect(data?.decision.kind).toBe('expand');
      if (parserKnowsMicro) expect(micro?.decision).toMatchObject({ kind: 'expand', fromBytes: 1073849199n, targetBytes: 3n * GiB });
      else
        expect(micro?.decision).toMatchObject({
          kind: 'unknown',
          reason: 'Unreadable',
          message: expect.stringContaining('status.capacity.storage: "1073849198182400u"'),
        });
    });
  });
});

describe('the cooldown outlives the request that made the expansion', () => {
  it('a claim pvx patched 5 minutes ago, its request since deleted (or gone with its TTL): still cooling down (simulation seed 475)', () => {
    const patched = {
      ...claim('data'),
      metadata: { ...claim('data').metadata, managedFields: [{ manager: 'pvx', operation: 'Update', time: minutesAgo(5) }] },
    } as V1PersistentVolumeClaim;
    const [v] = only(pass({ policies: [policy()], claims: [patched], requests: [] })).volumes;
    expect(v?.decision).toMatchObject({ kind: 'blocked', reason: 'Cooldown' });
    const [fresh] = only(pass({ policies: [policy()], claims: [claim('data')], requests: [] })).volumes;
    expect(fresh?.decision.kind).toBe('expand');
  });
});

describe('one policy per claim: two policies over one claim act once per breach', () => {
  const at = (p: VolumeExpansionPolicy, minutes: number, mode?: 'DryRun' | 'Auto'): VolumeExpansionPolicy => ({
    ...p,
    metadata: { ...p.metadata, creationTimestamp: minutesAgo(minutes).toISOString() as unknown as Date },
    spec: { ...p.spec, ...(mode ? { mode } : {}) },
  });
  const decisions = (plans: PolicyPlan[]) => Object.fromEntries(plans.map((p) => [p.policy.ref.name, p.volumes.map((v) => v.decision.kind)]));

  it('the oldest grows it; the newer shows it as governed by the oldest and creates nothing (not 10Gi → 12Gi → 15Gi)', () => {
    const plans = pass({ policies: [at(policy({ step: { percent: 50 } }, 'newer'), 5), at(policy({}, 'older'), 60)] });
    expect(decisions(plans)).toEqual({ newer: ['overlap'], older: ['expand'] });
    const newer = plans.find((p) => p.policy.ref.name === 'newer') as PolicyPlan;
    expect(newer.volumes[0]?.action).toEqual({ kind: 'none' });
    expect(newer.volumes[0]?.status).toMatchObject({
      decision: 'overlap',
      reason: 'OverlappingPolicy',
      message: expect.stringContaining('db/older selects it too and grows it'),
    });
  });

  // Review, 2026-12-04: the policy that leaves a shared claim alone listed it with its capacity,
  // so each expansion by the governing policy rewrote the other's status.
  it('the policy that leaves the claim alone says the same before and after the other grows it: its status is not rewritten', () => {
    const policies = [at(policy({ step: { percent: 50 } }, 'newer'), 5), at(policy({}, 'older'), 60)];
    const newer = (plans: PolicyPlan[]) => (plans.find((p) => p.policy.ref.name === 'newer') as PolicyPlan).status;
    const before = newer(pass({ policies, samples: () => usage(9) }));
    const after = newer(pass({ policies, claims: [claim('data', { capacity: '12Gi' })], samples: () => usage(5, 12) }));
    expect(sameStatus(before, after)).toBe(true);
  });

  it('created in the same second: the first by name', () => {
    expect(decisions(pass({ policies: [at(policy({}, 'b'), 1), at(policy({}, 'a'), 1)] }))).toEqual({ a: ['expand'], b: ['overlap'] });
  });

  it('a policy that only reports (DryRun) never holds a claim from one that acts', () => {
    expect(decisions(pass({ policies: [at(policy({}, 'preview'), 60, 'DryRun'), at(policy({}, 'grow'), 1)] }))).toEqual({
      preview: ['overlap'],
      grow: ['expand'],
    });
  });

  it('a policy pvx cannot read governs nothing: the next one grows the claim', () => {
    const broken = at(policy({ windows: [{ schedule: 'every night', duration: '1h' }] }, 'broken'), 60);
    expect(decisions(pass({ policies: [broken, at(policy({}, 'grow'), 1)] }))).toEqual({ broken: [], grow: ['expand'] });
  });
});

describe('one policy can never stop another', () => {
  it.each([
    ['a schedule that is not cron', { schedule: 'every night', duration: '1h' }, /every night/],
    [
      'a time zone the runtime does not know',
      { schedule: '0 2 * * *', duration: '1h', timeZone: 'Mars/Olympus_Mons' },
      /unknown time zone "Mars\/Olympus_Mons"/,
    ],
  ])('%s: that policy decides nothing and says why in its Ready condition; the other is decided as usual', (_name, window, why) => {
    const plans = pass({
      claims: [claim('data'), claim('logs')],
      policies: [policy({ windows: [window], selector: { matchLabels: {} } }, 'broken'), policy({}, 'grow')],
    });
    const broken = plans.find((p) => p.policy.ref.name === 'broken') as PolicyPlan;
    const grow = plans.find((p) => p.policy.ref.name === 'grow') as PolicyPlan;
    expect(broken.error).toMatch(why);
    expect(broken.volumes).toEqual([]);
    expect(broken.status.conditions).toEqual([
      expect.objectContaining({ type: 'Ready', status: 'False', reason: 'InvalidSpec', message: expect.stringMatching(why) }),
    ]);
    expect(grow.error).toBeUndefined();
    expect(grow.volumes.map((v) => v.action.kind)).toEqual(['create', 'create']);
    expect(grow.status.conditions).toEqual([expect.objectContaining({ type: 'Ready', status: 'True', reason: 'Evaluated' })]);
  });

  it('the Ready condition keeps its time while its status holds, and moves when it changes', () => {
    const earlier = '2026-11-01T00:00:00.000Z';
    const held = policy({}, 'grow');
    held.status = { conditions: [{ type: 'Ready', status: 'True', reason: 'Evaluated', message: 'x', lastTransitionTime: earlier }] };
    expect(only(pass({ policies: [held] })).ready.lastTransitionTime).toBe(earlier);
    const broken = { ...held, spec: { ...held.spec, windows: [{ schedule: 'every night', duration: '1h' }] } };
    expect(only(pass({ policies: [broken] })).ready).toMatchObject({ status: 'False', lastTransitionTime: now.toISOString() });
  });
});

describe('a policy on EBS, while the driver refuses', () => {
  const gp3: V1StorageClass = { metadata: { name: 'fast' }, provisioner: 'ebs.csi.aws.com', allowVolumeExpansion: true, parameters: { type: 'gp3' } };
  const rateLimited =
    'rpc error: code = Internal desc = Could not resize volume "vol-0abc": operation error EC2: ModifyVolume, https response error StatusCode: 400, api error VolumeModificationRateExceeded: slow down';
  /** The claim as pvx's request left it: raised to 12Gi, the driver refusing. */
  const refused = (): V1PersistentVolumeClaim => ({
    ...claim('data', { capacity: '10Gi', request: '12Gi' }),
    status: {
      phase: 'Bound',
      capacity: { storage: '10Gi' },
      allocatedResources: { storage: '12Gi' },
      allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' },
      conditions: [{ type: 'ControllerResizeError', status: 'True', message: rateLimited }],
    },
  });
  const ours = (phase: Phase, reason: string): VolumeExpansionRequest => ({
    ...request('data', phase, 60),
    metadata: { ...request('data', phase, 60).metadata, labels: { 'pvx.dev/policy': 'grow' } },
    status: { phase, reason },
  });

  it('asks for nothing more, names the request that waits on the driver, and says so the same way at every pass', () => {
    const messages = new Set<string>();
    for (const usedGiB of [9, 9.5, 9.9, 9.99]) {
      const [v] = only(
        pass({
          policies: [policy()],
          storageClasses: [gp3],
          claims: [refused()],
          requests: [ours('ControllerExpanding', 'DriverRateLimited')],
          usedGiB: { 'db/data': usedGiB },
        }),
      ).volumes;
      expect(v?.decision).toMatchObject({ kind: 'blocked', reason: 'InFlight' });
      expect(v?.action).toEqual({ kind: 'none' });
      messages.add(v?.decision.message ?? '');
    }
    expect([...messages]).toEqual([
      'used ≥ 80% in each of the last 2 measurements, but an expansion is already in flight (request r-data waits on the driver: DriverRateLimited; nothing more is asked until it completes)',
    ]);
  });

  it('asks for nothing more after its request ended while the claim still asks for more than it has (no ratchet toward the maximum)', () => {
    const [v] = only(
      pass({ policies: [policy({ maxSize: '100Gi' })], storageClasses: [gp3], claims: [refused()], requests: [ours('Failed', 'DeadlineExceeded')] }),
    ).volumes;
    expect(v?.decision).toMatchObject({ kind: 'blocked', reason: 'InFlight' });
  });

  const waits = fc.constantFrom<[Phase, string]>(
    ['ControllerExpanding', 'DriverRateLimited'],
    ['ControllerExpanding', 'DriverModificationInProgress'],
    ['Expanding', 'DriverRateLimited'],
    ['Failed', 'DriverKeepsRefusing'],
    ['Failed', 'DeadlineExceeded'],
  );
  test.prop([
    fc.array(fc.double({ min: 0, max: 12, noNaN: true }), { minLength: 1, maxLength: 30 }),
    waits,
    fc.constantFrom('Auto', 'Approval'),
    fc.option(fc.constantFrom('12Gi', '20Gi', '1Ti'), { nil: undefined }),
  ])('never creates a request, nor a larger target, whatever the usage, while the claim waits on the driver', (usedSeries, [phase, reason], mode, maxSize) => {
    for (const usedGiB of usedSeries) {
      const plans = pass({
        policies: [policy({ mode, ...(maxSize ? { maxSize } : {}) })],
        storageClasses: [gp3],
        claims: [refused()],
        requests: [ours(phase, reason)],
        usedGiB: { 'db/data': Math.min(usedGiB, 10) },
      });
      for (const v of only(plans).volumes) {
        expect(v.action.kind).not.toBe('create');
        expect(v.decision.kind).not.toBe('expand');
      }
    }
  });
});

describe('sameStatus', () => {
  const status: PolicyStatus = {
    matchedPVCs: 1,
    volumes: [{ pvcName: 'data', decision: 'idle', message: 'no trigger', capacity: '10 GiB' }],
    volumesOmitted: 0,
  };

  it.each<[string, PolicyStatus | undefined, boolean]>([
    ['the same status', structuredClone(status), true],
    [
      'keys in another order (as the API server returns them)',
      { volumesOmitted: 0, volumes: [{ capacity: '10 GiB', message: 'no trigger', decision: 'idle', pvcName: 'data' }], matchedPVCs: 1 },
      true,
    ],
    // Written by an earlier version, which wrote figures of each measurement: rewritten once, without them.
    ['an evaluation time of an earlier version', { ...status, lastEvaluatedAt: '2026-11-29T11:00:00Z' }, false],
    ['usage figures of an earlier version', { ...status, volumes: [{ ...status.volumes![0]!, usedPercent: 50, sampledAt: '2026-11-29T11:00:00Z' }] }, false],
    ['no status yet', undefined, false],
    ['another decision', { ...status, volumes: [{ ...status.volumes![0]!, decision: 'blocked' }] }, false],
    ['another capacity', { ...status, volumes: [{ ...status.volumes![0]!, capacity: '12 GiB' }] }, false],
    ['another count', { ...status, matchedPVCs: 2 }, false],
  ])('%s: %s', (_name, current, same) => {
    expect(sameStatus(current, status)).toBe(same);
  });
});

describe('isRequestAskedFor', () => {
  const wanted = (only(pass({ policies: [policy()] })).volumes[0]?.action as { request: VolumeExpansionRequest }).request;
  const stored: VolumeExpansionRequest = {
    ...structuredClone(wanted),
    metadata: { ...structuredClone(wanted.metadata), uid: 'u', resourceVersion: '7', creationTimestamp: now },
    spec: { ...wanted.spec, roundUpTo: '1Gi', dryRun: false, recovery: 'None' },
  };

  it.each<[string, VolumeExpansionRequest, boolean]>([
    ['our own request, as the API server stored it (defaults, uid, times added)', stored, true],
    ['another size', { ...stored, spec: { ...stored.spec, size: '20Gi' } }, false],
    ['another claim', { ...stored, spec: { ...stored.spec, target: { pvcName: 'other' } } }, false],
    [
      'another owner',
      { ...stored, metadata: { ...stored.metadata, ownerReferences: [{ ...stored.metadata.ownerReferences![0]!, uid: 'someone-else' }] } },
      false,
    ],
    ['no labels', { ...stored, metadata: { ...stored.metadata, labels: undefined } }, false],
  ])('%s: %s', (_name, existing, asked) => {
    expect(isRequestAskedFor(existing, wanted)).toBe(asked);
  });
});

describe('policyRequestName', () => {
  // Valid Kubernetes object names: DNS subdomains of up to 253 characters.
  const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);
  const objectName = fc
    .array(label, { minLength: 1, maxLength: 6 })
    .map((labels) => labels.join('.'))
    .filter((n) => n.length <= 253);
  const policyRef = fc.oneof(
    fc.record({ kind: fc.constant('VolumeExpansionPolicy' as const), namespace: label, name: objectName }),
    fc.record({ kind: fc.constant('ClusterVolumeExpansionPolicy' as const), name: objectName }),
  ) as fc.Arbitrary<PolicyRef>;
  const input = fc.record({
    policy: policyRef,
    claim: fc.record({ namespace: label, name: objectName, uid: fc.uuid() }),
    target: fc.bigInt({ min: 1n, max: 2n ** 60n }),
    at: fc.date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }),
  });
  const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

  test.prop([input])('is a valid object name whatever the names', ({ policy, claim, target, at }) => {
    const name = policyRequestName(policy, claim, target, at);
    expect(name.length).toBeLessThanOrEqual(253);
    expect(name).toMatch(dnsSubdomain);
  });

  test.prop([input, input])('differs for different intents', (a, b) => {
    const key = (i: typeof a) => JSON.stringify([i.policy.kind, i.policy.namespace, i.policy.name, i.claim, i.target.toString(), i.at.toISOString()]);
    fc.pre(key(a) !== key(b));
    expect(policyRequestName(a.policy, a.claim, a.target, a.at)).not.toBe(policyRequestName(b.policy, b.claim, b.target, b.at));
  });

  it('differs between two expansions of one long-named claim a second apart (the time is never cut off)', () => {
    const ref: PolicyRef = { kind: 'VolumeExpansionPolicy', namespace: 'db', name: 'grow' };
    const c = { namespace: 'db', name: 'x'.repeat(250), uid: 'u' };
    const first = policyRequestName(ref, c, 12n * GiB, now);
    expect(first.startsWith('grow-xxxx')).toBe(true);
    expect(policyRequestName(ref, c, 12n * GiB, new Date(now.getTime() + 1000))).not.toBe(first);
  });

  it('is the same for the same intent (a retried create meets its own request)', () => {
    const ref: PolicyRef = { kind: 'ClusterVolumeExpansionPolicy', name: 'Fleet.Wide' };
    expect(policyRequestName(ref, { namespace: 'db', name: 'data' }, GiB, now)).toBe(policyRequestName(ref, { namespace: 'db', name: 'data' }, GiB, now));
    expect(policyRequestName(ref, { namespace: 'db', name: 'data' }, GiB, now)).toMatch(/^fleet-wide-data-[0-9a-f]{16}$/);
  });
});

describe('one namespace’s policies cost its own claims', () => {
  it('a tenant’s 200 policies are not asked about 100 claims of another namespace (work counted in reads of their namespace)', () => {
    let reads = 0;
    const counted = (i: number): VolumeExpansionPolicy => {
      const p = policy({}, `tenant-${i}`);
      const metadata = { ...p.metadata };
      Object.defineProperty(metadata, 'namespace', {
        get: () => {
          reads++;
          return 'tenant';
        },
        enumerable: true,
      });
      return { ...p, metadata };
    };
    const tenantPolicies = Array.from({ length: 200 }, (_, i) => counted(i));
    const others = Array.from({ length: 100 }, (_, i) => claim(`data-${i}`));
    const plans = pass({ policies: [...tenantPolicies, policy()], claims: others });
    expect(plans.find((p) => p.policy.ref.namespace === 'db')?.volumes).toHaveLength(100);
    // Read once per policy or a few times: 20,000 reads were one per claim and policy.
    expect(reads).toBeLessThan(200 * 10);
  });
});

describe('every policy of a namespace over every claim of it', () => {
  const many = (n: number, mode: (i: number) => PolicySpec['mode']) =>
    Array.from({ length: n }, (_, i) => {
      const p = policy({ mode: mode(i) }, `p-${String(i).padStart(2, '0')}`);
      return { ...p, metadata: { ...p.metadata, creationTimestamp: minutesAgo(1000 - i) } };
    });

  it(`lists each claim in the policy that grows it and ${maxOverlappingPolicies} others at most (30 policies over 20 claims: 180 volumes, not 600)`, () => {
    const claims = Array.from({ length: 20 }, (_, i) => claim(`data-${i}`));
    const plans = pass({ policies: many(30, () => 'Auto'), claims });
    expect(plans.reduce((n, p) => n + p.volumes.length, 0)).toBe(20 * (1 + maxOverlappingPolicies));
    // The oldest grows every claim; the next eight show it as governed by the oldest.
    expect(plans.find((p) => p.policy.ref.name === 'p-00')?.volumes.every((v) => v.decision.kind !== 'overlap')).toBe(true);
    expect(plans.filter((p) => p.volumes.some((v) => v.decision.kind === 'overlap')).map((p) => p.policy.ref.name)).toEqual([
      'p-01',
      'p-02',
      'p-03',
      'p-04',
      'p-05',
      'p-06',
      'p-07',
      'p-08',
    ]);
  });

  it('the oldest that acts governs however many older ones only report (DryRun), from a namespace index or a plain list', () => {
    const policies = many(20, (i) => (i === 12 ? 'Auto' : 'DryRun'));
    for (const list of [policiesByNamespace(policies)('db'), [...policies].reverse()]) {
      const c = claimPolicies(claim('data'), list, [], selectionLookups([], []));
      expect(c.governing?.policy.metadata.name).toBe('p-12');
      expect(c.overlapping.map((o) => o.policy.metadata.name)).toEqual(['p-00', 'p-01', 'p-02', 'p-03', 'p-04', 'p-05', 'p-06', 'p-07']);
    }
  });
});

describe('a namespace’s policies indexed by what they select', () => {
  const lookups = selectionLookups(
    [],
    ['web', 'db-main'].map((name) => ({
      metadata: { name, namespace: 'db' },
      spec: { selector: {}, serviceName: name, template: {}, volumeClaimTemplates: [{ metadata: { name: 'data' } }] },
    })),
  );
  const arbPolicy = fc.record({
    label: fc.option(fc.constantFrom('a', 'b'), { nil: undefined }),
    second: fc.option(fc.constantFrom('a', 'c'), { nil: undefined }),
    statefulSetName: fc.option(fc.constantFrom('web', 'db-main', 'gone'), { nil: undefined }),
    classes: fc.option(fc.subarray(['fast', 'slow']), { nil: undefined }),
    mode: fc.constantFrom<PolicySpec['mode']>('Auto', 'DryRun', 'Approval'),
    unreadable: fc.boolean(),
    minute: fc.integer({ min: 0, max: 5 }),
  });
  const arbClaim = fc.record({
    name: fc.constantFrom('data-web-0', 'data-db-main-1', 'data-main-2', 'other-0', 'x'),
    label: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined }),
    class: fc.constantFrom('fast', 'slow'),
    bound: fc.boolean(),
  });

  test.prop([fc.array(arbPolicy, { maxLength: 30 }), arbClaim])('selects for a claim exactly what the plain list does', (specs, c) => {
    const policies = specs.map((s, i): VolumeExpansionPolicy => {
      const matchLabels = { ...(s.label ? { app: s.label } : {}), ...(s.second ? { tier: s.second } : {}) };
      const p = policy(
        {
          mode: s.mode,
          ...(Object.keys(matchLabels).length ? { selector: { matchLabels } } : {}),
          ...(s.statefulSetName ? { statefulSetName: s.statefulSetName } : {}),
          ...(s.classes ? { storageClassNames: s.classes } : {}),
          ...(s.unreadable ? { maxSize: 'not a size' } : {}),
        },
        `p-${i}`,
      );
      return { ...p, metadata: { ...p.metadata, creationTimestamp: minutesAgo(s.minute) } };
    });
    const pvc = claim(c.name);
    pvc.metadata = { ...pvc.metadata, labels: c.label ? { app: c.label, tier: c.label } : {} };
    pvc.spec = { ...pvc.spec, storageClassName: c.class };
    if (!c.bound) pvc.status = { phase: 'Pending' };
    const names = (r: ReturnType<typeof claimPolicies>) => ({
      governing: r.governing?.policy.metadata.name,
      overlapping: r.overlapping.map((o) => o.policy.metadata.name),
      unreadable: r.unreadable.map((o) => o.policy.metadata.name),
    });
    expect(names(claimPolicies(pvc, policiesByNamespace(policies)('db'), [], lookups))).toEqual(names(claimPolicies(pvc, policies, [], lookups)));
  });

  it('a tenant’s policies that each select one label cost a claim the few filed under its labels (4,000 policies, 4,000 claims)', () => {
    const policies = Array.from({ length: 4000 }, (_, i) => policy({ selector: { matchLabels: { app: `none-${i}` } } }, `p-${i}`));
    const claims = Array.from({ length: 4000 }, (_, i) => ({
      ...claim(`data-${i}`),
      metadata: { name: `data-${i}`, namespace: 'db', uid: `c${i}`, labels: { app: 'db' } },
    }));
    let selects = 0;
    const counting = policies.map((p) => ({
      ...p,
      get spec() {
        selects++;
        return p.spec;
      },
    }));
    pass({ policies: counting, claims });
    // Each policy's spec read a handful of times (filing it, judging it once per pass), not once per claim (16 million).
    expect(selects).toBeLessThan(4000 * 20);
  });
});
