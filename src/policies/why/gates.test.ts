import type { CoreV1Event, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1ResourceQuota, V1StorageClass } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { PolicySpec, VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import type { RequestStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { GiB } from '../../k8s/quantity.ts';
import type { AuditSnapshot } from '../audit/rules.ts';
import type { UsageSample } from '../autoscale/sampling.ts';
import { driverProfiles } from '../budget/drivers.ts';
import { embeddedDriverProfiles } from '../budget/drivers.testing.ts';
import { claimsHeld, gateIds, why, type Gate, type GateId, type WhyInput } from './gates.ts';
import { claim, condition, minutesAgo, now } from '../claim/claims.testing.ts';

const ago = minutesAgo;
const storageClass = (over: Partial<V1StorageClass> = {}): V1StorageClass => ({
  metadata: { name: 'fast' },
  provisioner: 'hostpath.pvx.dev',
  allowVolumeExpansion: true,
  ...over,
});
const pv: V1PersistentVolume = { metadata: { name: 'pv-data' }, spec: { capacity: { storage: '10Gi' } } };
const pod: V1Pod = {
  metadata: { name: 'app', namespace: 'db' },
  spec: { containers: [], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'data' } }] },
  status: { phase: 'Running' },
};
const policy = (spec: Partial<PolicySpec> = {}): VolumeExpansionPolicy => ({
  apiVersion: 'pvx.dev/v1alpha1',
  kind: 'VolumeExpansionPolicy',
  metadata: { name: 'grow', namespace: 'db', uid: 'p1' },
  spec: { triggers: { usedPercent: 80, sustainedSamples: 1 }, ...spec },
});
const request = (
  name: string,
  createdMinutesAgo: number,
  status?: RequestStatus,
  spec: Partial<VolumeExpansionRequest['spec']> = {},
): VolumeExpansionRequest => ({
  apiVersion: 'pvx.dev/v1alpha1',
  kind: 'VolumeExpansionRequest',
  metadata: { name, namespace: 'db', uid: `r-${name}`, creationTimestamp: ago(createdMinutesAgo) as unknown as Date },
  spec: { target: { pvcName: 'data' }, size: '20Gi', ...spec },
  ...(status ? { status } : {}),
});
const sample = (usedGi: number, minutes = 1): UsageSample => ({
  at: new Date(ago(minutes)),
  usedBytes: BigInt(usedGi * 1024) * (GiB / 1024n),
  capacityBytes: 10n * GiB,
});
const quota = (hard: string, used: string): V1ResourceQuota => ({
  metadata: { name: 'storage', namespace: 'db' },
  spec: { hard: { 'requests.storage': hard } },
  status: { hard: { 'requests.storage': hard }, used: { 'requests.storage': used } },
});

/** A claim nothing holds: an Auto policy, 90% used, a running pod, no request. */
function healthy(over: Partial<AuditSnapshot> = {}): AuditSnapshot {
  return {
    pvcs: [claim()],
    pvs: [pv],
    storageClasses: [storageClass()],
    statefulSets: [],
    resourceQuotas: [],
    pods: [pod],
    requests: [],
    policies: [policy()],
    clusterPolicies: [],
    namespaces: [{ metadata: { name: 'db' } }],
    ...over,
  };
}

function explain(snapshot: AuditSnapshot, extra: Partial<WhyInput> = {}) {
  return why({ snapshot, claim: snapshot.pvcs[0] as V1PersistentVolumeClaim, now, samples: () => [sample(9)], usageSource: 'kubelet', ...extra });
}
const gateOf = (gates: Gate[], id: GateId) => gates.find((g) => g.gate === id) as Gate;

describe('why: every gate, in order', () => {
  it('lists every gate of the table in the chain’s order, and nothing holds a claim its policy grows now', () => {
    const report = explain(healthy());
    expect(report.gates.map((g) => g.gate)).toEqual([...gateIds]);
    expect(report.heldBy).toBeUndefined();
    expect(report.policy).toBe('vep/grow');
    expect(report.next).toBe("nothing: vep/grow asks to grow data 10Gi → 12Gi at its next pass (pvx's operator must be running)");
    const states = Object.fromEntries(report.gates.map((g) => [g.gate, g.state]));
    expect(states).toEqual({
      'storage-class': 'passed',
      binding: 'passed',
      policy: 'passed',
      usage: 'passed',
      threshold: 'passed',
      cooldown: 'passed',
      window: 'not-applicable',
      'max-size': 'passed',
      budget: 'not-applicable',
      quota: 'passed',
      request: 'not-applicable',
      resizer: 'not-applicable',
      'node-stage': 'not-applicable',
    });
    expect(gateOf(report.gates, 'threshold').evidence).toMatch(/^used ≥ 80% in the last measurement \(90\.0% used, 1 GiB free/);
  });

  // Review, 2026-12-04: a policy asking for 2 measurements in a row read "in 1 measurement in a
  // row" — the count a one-off reading judges on (--samples), shown as the policy's.
  it('says how many measurements in a row the policy asks for, and on how many readings a one-off look judges', () => {
    const twice = healthy({ policies: [policy({ triggers: { usedPercent: 80, sustainedSamples: 2 } })] });
    expect(gateOf(explain(twice).gates, 'policy').evidence).toMatch(/triggers: used ≥ 80% \(in 2 measurements in a row\)\)$/);
    expect(gateOf(explain(twice, { sustainedSamples: 1 }).gates, 'policy').evidence).toMatch(
      /triggers: used ≥ 80% \(in 2 measurements in a row; judged here on the 1 reading taken \(--samples\)\)\)$/,
    );
    expect(gateOf(explain(healthy()).gates, 'policy').evidence).toMatch(/\(in 1 measurement in a row\)\)$/);
  });

  const ebs = driverProfiles({ 'hostpath.pvx.dev': { count: 1, windowMs: 24 * 3_600_000 } });
  const cases: [GateId, string, AuditSnapshot, Partial<WhyInput>, RegExp, RegExp?][] = [
    [
      'storage-class',
      'a class that does not allow expansion',
      healthy({ storageClasses: [storageClass({ allowVolumeExpansion: false })] }),
      {},
      /StorageClass fast does not allow volume expansion.*\(ExpansionNotAllowed\)/,
      /allowVolumeExpansion: true/,
    ],
    ['binding', 'a claim still Pending', healthy({ pvcs: [claim({ phase: 'Pending' })] }), {}, /is Pending; only a Bound claim/, /wait for data to be bound/],
    ['binding', 'a lost volume', healthy({ pvs: [] }), {}, /PersistentVolume pv-data, which does not exist/],
    [
      'policy',
      'no policy and no request',
      healthy({ policies: [] }),
      {},
      /no VolumeExpansionPolicy or ClusterVolumeExpansionPolicy with triggers selects it/,
      /create a VolumeExpansionPolicy in db/,
    ],
    ['policy', 'a DryRun policy', healthy({ policies: [policy({ mode: 'DryRun' })] }), {}, /vep\/grow selects it in DryRun mode/, /spec.mode Auto/],
    [
      'threshold',
      'a volume under its threshold',
      healthy(),
      { samples: () => [sample(5)] },
      /50\.0% used, 5 GiB free: under every trigger of vep\/grow: used ≥ 80%/,
      /grows once a trigger of vep\/grow fires/,
    ],
    [
      'cooldown',
      'a claim grown 10 minutes ago',
      healthy({ requests: [request('done', 12, { phase: 'Completed', timeline: { patchedAt: ago(10), completedAt: ago(10) } })] }),
      {},
      /last expansion 2026-11-29T11:50:00Z, cooldown 30m, next allowed 2026-11-29T12:20:00Z/,
      /wait until 2026-11-29T12:20:00Z/,
    ],
    [
      'window',
      'outside the maintenance window',
      healthy({ policies: [policy({ windows: [{ schedule: '0 2 * * *', duration: '1h' }] })] }),
      {},
      /outside the maintenance windows \("0 2 \* \* \*" for 60m\); the next opens at 2026-11-30T02:00:00Z/,
    ],
    [
      'max-size',
      "the policy's maximum",
      healthy({ policies: [policy({ maxSize: '10Gi' })] }),
      {},
      /at vep\/grow's maximum size 10Gi/,
      /raise spec.maxSize of vep\/grow/,
    ],
    [
      'budget',
      "the driver's budget spent",
      healthy({ requests: [request('done', 120, { phase: 'Completed', timeline: { patchedAt: ago(60), completedAt: ago(59) } })] }),
      { profiles: ebs },
      /allows 1 modification per volume per 24h; data has 1 in the window/,
      /wait until 2026-11-30T11:00:00Z/,
    ],
    [
      'quota',
      'a quota without room',
      healthy({ resourceQuotas: [quota('11Gi', '10Gi')] }),
      {},
      /ResourceQuota storage limits requests.storage to 11Gi; 10Gi is used and growing data to 12Gi/,
      /Raise the ResourceQuota/,
    ],
    [
      'request',
      'a request the operator has not taken up',
      healthy({ requests: [request('grow-data', 1)] }),
      {},
      /ver\/grow-data has no status: pvx's operator has not taken it up/,
      /start pvx's operator/,
    ],
    [
      'request',
      'a request awaiting approval',
      healthy({ requests: [request('grow-data', 1, { phase: 'Pending', reason: 'AwaitingApproval', message: 'would grow data from 10Gi to 20Gi' })] }),
      {},
      /Pending \(AwaitingApproval\)/,
      /^pvx approve ver\/grow-data -n db$/,
    ],
    [
      'resizer',
      'a controller resize error',
      healthy({
        pvcs: [
          claim({
            request: '20Gi',
            allocated: '20Gi',
            allocatedStatus: 'ControllerResizeInProgress',
            conditions: [condition('Resizing', 20), condition('ControllerResizeError', 15, 'rpc error: code = Internal desc = VolumeModificationRateExceeded')],
          }),
        ],
        requests: [request('grow-data', 30, { phase: 'ControllerExpanding', reason: 'ControllerResizeError', timeline: { patchedAt: ago(25) } })],
      }),
      {},
      /ControllerResizeError "rpc error: code = Internal desc = VolumeModificationRateExceeded" since 2026-11-29T11:45:00Z/,
      /external-resizer's log/,
    ],
    [
      'resizer',
      'an infeasible size',
      healthy({
        pvcs: [
          claim({
            request: '20Gi',
            allocated: '20Gi',
            allocatedStatus: 'ControllerResizeInfeasible',
            conditions: [condition('ControllerResizeError', 5, 'too large')],
          }),
        ],
      }),
      {},
      /ControllerResizeInfeasible: too large/,
      /Lower data's|Lower spec/,
    ],
    [
      'node-stage',
      'a node stage without a pod',
      healthy({
        pods: [],
        pvcs: [claim({ request: '20Gi', allocated: '20Gi', allocatedStatus: 'NodeResizePending', conditions: [condition('FileSystemResizePending', 7)] })],
      }),
      { samples: () => [] },
      /NodeResizePending since 2026-11-29T11:53:00Z: no running pod mounts the claim; start one/,
      /start a pod that mounts data/,
    ],
  ];

  it.each(cases)('%s holds for %s', (id, _what, snapshot, extra, evidence, next) => {
    const report = explain(snapshot, extra);
    expect(report.heldBy).toBe(id);
    const g = gateOf(report.gates, id);
    expect(g.state).toBe('holding');
    expect(g.evidence).toMatch(evidence);
    if (next) expect(report.next).toMatch(next);
  });

  it('a claim raised outside pvx, with no policy: the policy gate does not apply, the resize’s gates say where it stands', () => {
    const report = explain(healthy({ policies: [], pods: [], pvcs: [claim({ request: '20Gi', allocated: '20Gi', allocatedStatus: 'NodeResizePending' })] }));
    expect(gateOf(report.gates, 'policy')).toMatchObject({
      state: 'not-applicable',
      evidence: "no policy or request: the claim's own request was raised outside pvx (requests 20Gi, capacity 10Gi)",
    });
    expect(report.heldBy).toBe('node-stage');
  });

  it.each([
    ['a schedule that is not cron', { schedule: 'every night', duration: '1h' }],
    ['a time zone the runtime does not know', { schedule: '0 2 * * *', duration: '1h', timeZone: 'Mars/Olympus_Mons' }],
  ])('a window pvx cannot read (%s): the policy decides nothing, the policy gate says so and what to fix; it never throws', (_name, window) => {
    const report = explain(healthy({ policies: [policy({ windows: [window] })] }));
    expect(report.heldBy).toBe('policy');
    expect(gateOf(report.gates, 'policy')).toMatchObject({ state: 'unknown', evidence: 'pvx cannot read the spec of vep/grow: it decides nothing' });
    expect(report.next).toMatch(/fix the spec of vep\/grow/);
  });

  it('usage is unknown when the kubelet has nothing for an unmounted claim', () => {
    const report = explain(healthy({ pods: [] }), { samples: () => [] });
    expect(report.heldBy).toBe('usage');
    expect(gateOf(report.gates, 'usage')).toMatchObject({
      state: 'unknown',
      evidence: 'the kubelet reports no stats for unmounted volumes: no running pod mounts the claim',
    });
    expect(gateOf(report.gates, 'threshold').state).toBe('unknown');
  });

  it('usage is unknown without a usage source, and says how to give one', () => {
    const report = explain(healthy(), { usageSource: undefined, samples: () => [] });
    expect(gateOf(report.gates, 'usage')).toMatchObject({
      state: 'unknown',
      next: 'read usage from the kubelet or Prometheus (pvx why --usage kubelet|prometheus; pvx run --usage-source)',
    });
  });

  it('passes the window, the budget and the request when they allow the change, and the resizer once the volume grew', () => {
    const snapshot = healthy({
      policies: [policy({ windows: [{ schedule: '0 12 * * *', duration: '1h' }] })],
      pvcs: [claim({ request: '20Gi', allocated: '20Gi', allocatedStatus: 'NodeResizeInProgress', conditions: [condition('FileSystemResizePending', 1)] })],
      requests: [request('grow-data', 5, { phase: 'NodeExpansionPending', reason: 'NodeResizeInProgress', timeline: { patchedAt: ago(4) } })],
    });
    const report = explain(snapshot, { profiles: driverProfiles({ 'hostpath.pvx.dev': { count: 4, windowMs: 24 * 3_600_000 } }) });
    expect(report.request).toBe('grow-data');
    expect(gateOf(report.gates, 'policy').evidence).toMatch(/^request ver\/grow-data asks for 20Gi; vep\/grow also selects it/);
    expect(gateOf(report.gates, 'window').state).toBe('not-applicable');
    expect(gateOf(report.gates, 'budget')).toMatchObject({ state: 'passed', evidence: 'ver/grow-data patched the claim at ' + ago(4) });
    expect(gateOf(report.gates, 'request')).toMatchObject({ state: 'passed' });
    expect(gateOf(report.gates, 'resizer')).toMatchObject({ state: 'passed', evidence: 'the volume grew to 20Gi (NodeResizeInProgress)' });
    expect(report.heldBy).toBe('node-stage');
    expect(gateOf(report.gates, 'node-stage').evidence).toMatch(/the kubelet grows the filesystem for pod app/);
    // Inside its window, the policy's own chain passes the window gate.
    expect(gateOf(explain(healthy({ policies: [policy({ windows: [{ schedule: '0 12 * * *', duration: '1h' }] })] })).gates, 'window').state).toBe('passed');
    expect(gateOf(explain(healthy(), { profiles: driverProfiles({ 'hostpath.pvx.dev': { count: 4, windowMs: 3_600_000 } }) }).gates, 'budget')).toMatchObject({
      state: 'passed',
      evidence: '0 of 4 modifications per volume per 60m spent in the window',
    });
  });

  it('explains a request from its own point of view: Completed, every gate passed to the node stage', () => {
    const done = request('grow-data', 30, {
      phase: 'Completed',
      reason: 'Completed',
      message: 'capacity is 20Gi',
      timeline: { patchedAt: ago(29), completedAt: ago(28) },
    });
    const snapshot = healthy({ pvcs: [claim({ request: '20Gi', capacity: '20Gi' })], requests: [done] });
    const report = explain(snapshot, { request: done, samples: () => [] });
    expect(report.heldBy).toBeUndefined();
    expect(report.next).toBe('nothing: ver/grow-data completed');
    expect(gateOf(report.gates, 'usage').state).toBe('not-applicable');
    expect(gateOf(report.gates, 'resizer')).toMatchObject({ state: 'passed' });
    expect(gateOf(report.gates, 'node-stage')).toMatchObject({ state: 'passed', evidence: 'done: the filesystem grew (capacity 20Gi)' });
  });

  it('a claim the resizer completed without a node step: the node stage says it was not needed, and asks for no pod', () => {
    const done = request('grow-data', 30, { phase: 'Completed', reason: 'Completed', timeline: { patchedAt: ago(29), completedAt: ago(28) } });
    const rwx = claim({ request: '20Gi', capacity: '20Gi', annotations: { 'volume.kubernetes.io/node-expansion-not-required': 'true' } });
    const report = explain(healthy({ pods: [], pvcs: [rwx], requests: [done], pvs: [{ ...pv, spec: { capacity: { storage: '20Gi' } } }] }), {
      request: done,
      samples: () => [],
    });
    expect(gateOf(report.gates, 'node-stage')).toMatchObject({
      state: 'passed',
      evidence: 'not needed: the resizer completed the expansion without a node step (volume.kubernetes.io/node-expansion-not-required) (capacity 20Gi)',
    });
    expect(report.next).not.toMatch(/pod/);
    const fromTheClaim = explain(healthy({ pods: [], pvcs: [rwx], requests: [done], pvs: [{ ...pv, spec: { capacity: { storage: '20Gi' } } }] }), {
      samples: () => [],
    });
    expect(gateOf(fromTheClaim.gates, 'node-stage')).toMatchObject({
      state: 'not-applicable',
      evidence: 'no resize under way (capacity 20Gi); the last one needed no node step (volume.kubernetes.io/node-expansion-not-required)',
    });
  });

  it.each<[string, Record<string, string> | undefined, RegExp]>([
    [
      'read where the resizer recorded it',
      { 'volume.alpha.kubernetes.io/pre-resize-capacity': '10Gi' },
      /^the volume grew from 10Gi \(the PersistentVolume's volume\.alpha\.kubernetes\.io\/pre-resize-capacity\) to 20Gi \(NodeResizePending\)$/,
    ],
    ['ignored where absent', undefined, /^the volume grew to 20Gi \(NodeResizePending\)$/],
    ['ignored where it is not a quantity', { 'volume.alpha.kubernetes.io/pre-resize-capacity': 'ten gigs' }, /^the volume grew to 20Gi \(NodeResizePending\)$/],
  ])('the PersistentVolume’s pre-resize-capacity is %s', (_name, annotations, evidence) => {
    const grown: V1PersistentVolume = { metadata: { name: 'pv-data', ...(annotations ? { annotations } : {}) }, spec: { capacity: { storage: '20Gi' } } };
    const pending = claim({ request: '20Gi', allocated: '20Gi', allocatedStatus: 'NodeResizePending', conditions: [condition('FileSystemResizePending', 7)] });
    const report = explain(healthy({ pods: [], pvcs: [pending], pvs: [grown] }), { samples: () => [] });
    expect(gateOf(report.gates, 'resizer').evidence).toMatch(evidence);
    expect(report.heldBy).toBe('node-stage');
  });

  it('shows the StatefulSet template a claim has outgrown (the audit’s drift, seen from the claim), and says nothing of one it has not', () => {
    const sts = {
      metadata: { name: 'web', namespace: 'db' },
      spec: {
        selector: {},
        serviceName: 'web',
        template: {},
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '10Gi' } } } }],
      },
    };
    const grown = claim({ name: 'data-web-0', request: '20Gi', capacity: '20Gi' });
    const report = explain(healthy({ pvcs: [grown], statefulSets: [sts] }), { samples: () => [] });
    expect(report.template).toMatch(
      /^StatefulSet web's volumeClaimTemplate data asks for 10Gi, less than this claim's 20Gi: new replicas start at 10Gi\. Let pvx carry 20Gi into the template/,
    );
    expect(explain(healthy({ pvcs: [claim({ name: 'data-web-0' })], statefulSets: [sts] })).template).toBeUndefined();
  });

  describe('a driver that grows filesystems only when mounted anew (the kubelet refused in use)', () => {
    const refused = claim({
      request: '20Gi',
      allocated: '20Gi',
      allocatedStatus: 'NodeResizeInProgress',
      conditions: [
        condition('FileSystemResizePending', 9),
        condition(
          'NodeResizeError',
          8,
          'failed to expand pvc with Expander.NodeExpand failed to expand the volume : rpc error: code = FailedPrecondition desc = volume in use',
        ),
      ],
    });
    const patchedRequest = (spec: Partial<VolumeExpansionRequest['spec']>, status: RequestStatus = {}) =>
      request('grow-data', 10, { phase: 'NodeExpansionPending', reason: 'PodRestartRequired', timeline: { patchedAt: ago(9) }, ...status }, spec);

    it('names the pod to restart, and the opt-in that lets pvx do it', () => {
      const report = explain(healthy({ pvcs: [refused], requests: [patchedRequest({})] }), { samples: () => [] });
      expect(report.heldBy).toBe('node-stage');
      const g = gateOf(report.gates, 'node-stage');
      expect(g.evidence).toMatch(
        /^the kubelet cannot grow the filesystem while pod app mounts the claim \(its driver grows it only when mounted anew\): NodeResizeError/,
      );
      expect(g.next).toBe(
        'restart pod app (kubectl delete pod app -n db: its controller creates it again and the kubelet grows the filesystem as it mounts the claim), or let pvx evict it: a request with spec.offlineNodeExpansion: EvictPod',
      );
    });

    it('with the opt-in: says pvx evicts it, or waits for its PodDisruptionBudget', () => {
      const evicting = explain(healthy({ pvcs: [refused], requests: [patchedRequest({ offlineNodeExpansion: 'EvictPod' })] }), { samples: () => [] });
      expect(gateOf(evicting.gates, 'node-stage').next).toMatch(/^wait: ver\/grow-data evicts pod app/);
      const blocked = patchedRequest(
        { offlineNodeExpansion: 'EvictPod' },
        { eviction: { phase: 'Blocked', podName: 'app', podUID: 'p', reason: 'DisruptionBudget', message: 'refused for now' } },
      );
      const report = explain(healthy({ pvcs: [refused], requests: [blocked] }), { samples: () => [] });
      expect(gateOf(report.gates, 'node-stage').evidence).toMatch(/ver\/grow-data: eviction of pod app Blocked \(refused for now\)/);
      expect(gateOf(report.gates, 'node-stage').next).toMatch(/^wait: pvx evicts pod app once its PodDisruptionBudget allows/);
    });
  });

  // A driver that grows the volume only detached (Azure, past 4 TiB; vSphere before 7.0U2): the
  // resizer retries for ever, and only stopping the pods finishes it.
  it('a driver that grows the volume only detached: names what it means and the pods to stop', () => {
    const attached = claim({
      request: '20Gi',
      allocated: '20Gi',
      allocatedStatus: 'ControllerResizeInProgress',
      conditions: [
        condition(
          'ControllerResizeError',
          8,
          'resize volume "pv-data" by resizer "disk.csi.azure.com" failed: rpc error: code = Internal desc = failed to resize disk(d) with error(azureDisk - disk resize is only supported on Unattached disk, current disk state: Attached, already attached to node-0)',
        ),
      ],
    });
    const report = explain(healthy({ pvcs: [attached], storageClasses: [storageClass({ provisioner: 'disk.csi.azure.com' })] }), { samples: () => [] });
    expect(report.heldBy).toBe('resizer');
    const g = gateOf(report.gates, 'resizer');
    expect(g.evidence).toMatch(/Azure grows this disk only while it is detached/);
    expect(g.next).toBe(
      'stop every pod that mounts the claim (scale its workload to zero) until the resize is done: the resizer retries and Azure grows the detached disk; then start them again (pod app mounts it)',
    );
  });

  // ResourceExhausted is not final to the resizer: it retries with no condition, and says so only in
  // its Event (external-resizer v2.3.0 pkg/util IsFinalError).
  it('a rate limit the driver answered shows only in the resizer’s Event: named, with the wait', () => {
    const limited = claim({ request: '20Gi', allocated: '20Gi', allocatedStatus: 'ControllerResizeInProgress' });
    const events: CoreV1Event[] = [
      {
        metadata: {},
        involvedObject: {},
        type: 'Warning',
        reason: 'VolumeResizeFailed',
        message:
          'resize volume "pv-data" by resizer "pd.csi.storage.gke.io" failed: rpc error: code = ResourceExhausted desc = ControllerExpandVolume failed to resize disk: operation operation-1 failed (RESOURCE_OPERATION_RATE_EXCEEDED): Operation rate exceeded for resource \'projects/p/zones/z/disks/d\'.',
        lastTimestamp: new Date(ago(2)),
      },
      // Each retry begins with this, so it is newer than the failure it follows.
      {
        metadata: {},
        involvedObject: {},
        type: 'Normal',
        reason: 'Resizing',
        message: 'External resizer is resizing volume pv-data',
        lastTimestamp: new Date(ago(1)),
      },
    ];
    const gce = storageClass({ provisioner: 'pd.csi.storage.gke.io' });
    const report = explain(healthy({ pvcs: [limited], storageClasses: [gce] }), { events });
    expect(report.heldBy).toBe('resizer');
    const g = gateOf(report.gates, 'resizer');
    expect(g.evidence).toMatch(
      /the driver's last attempt failed \(DriverRateLimited: ".*code = ResourceExhausted desc = .*"\) — Compute Engine limits how often the disk/,
    );
    expect(g.next).toMatch(/^wait: the resizer tries again with backoff/);
    // A failure from before this resize began is a past resize's: not this one's reason.
    const later = { ...limited, status: { ...limited.status, conditions: [condition('Resizing', 0)] } };
    const past = explain(healthy({ pvcs: [later], storageClasses: [gce] }), { events });
    expect(gateOf(past.gates, 'resizer').evidence).not.toMatch(/DriverRateLimited/);
  });

  it('a rejected request holds at the gate that refused it while that still holds, else at the request', () => {
    const rejected = request('grow-data', 5, { phase: 'Rejected', reason: 'QuotaExceeded', message: 'ResourceQuota storage limits …' });
    const over = explain(healthy({ requests: [rejected], resourceQuotas: [quota('11Gi', '10Gi')] }), { request: rejected });
    expect(over.heldBy).toBe('quota');
    const cleared = explain(healthy({ requests: [rejected] }), { request: rejected });
    expect(cleared.heldBy).toBe('request');
    expect(cleared.next).toMatch(/create a new request/);
  });

  it('quotes the claim’s newest resize Event as evidence', () => {
    const events: CoreV1Event[] = [
      {
        metadata: {},
        involvedObject: {},
        type: 'Normal',
        reason: 'ExternalExpanding',
        message: 'waiting for an external controller to expand this PVC',
        lastTimestamp: new Date(ago(3)),
      },
      {
        metadata: {},
        involvedObject: {},
        type: 'Warning',
        reason: 'VolumeResizeFailed',
        message: 'resize volume "pvc-1" by resizer "hostpath.pvx.dev" failed',
        lastTimestamp: new Date(ago(1)),
        count: 3,
      },
    ];
    const report = explain(healthy({ pvcs: [claim({ request: '20Gi' })] }), { events });
    expect(report.heldBy).toBe('resizer');
    expect(gateOf(report.gates, 'resizer').evidence).toMatch(
      /the external-resizer has not taken up the change .*; last Event: Warning VolumeResizeFailed "resize volume "pvc-1" by resizer "hostpath.pvx.dev" failed" at 2026-11-29T11:59:00Z \(×3\)$/,
    );
  });

  it('a kind the reader may not list makes its gate unknown, not holding', () => {
    const report = explain(healthy({ policies: [] }), { unreadable: new Set(['volumeexpansionpolicies']) });
    expect(gateOf(report.gates, 'policy').state).toBe('unknown');
    const noPvs = explain(healthy({ pvs: [] }), { unreadable: new Set(['persistentvolumes']) });
    expect(gateOf(noPvs.gates, 'binding').state).toBe('passed');
  });

  it('a quantity it cannot read makes the gates that need it unknown, and the chain goes on', () => {
    const report = explain(healthy({ storageClasses: [storageClass({ parameters: { maxVolumeSize: 'lots' } })] }), { profiles: embeddedDriverProfiles });
    expect(gateOf(report.gates, 'storage-class')).toMatchObject({
      state: 'unknown',
      evidence: expect.stringMatching(/^pvx cannot read a quantity it needs: .*maxVolumeSize/),
    });
    expect(report.heldBy).toBe('storage-class');
    expect(gateOf(report.gates, 'binding').state).toBe('passed');
  });

  it('several policies: the one that governs the claim speaks for it, and the others are named as leaving it alone', () => {
    const newer: VolumeExpansionPolicy = {
      ...policy({ maxSize: '10Gi' }),
      metadata: { name: 'a-capped', namespace: 'db', uid: 'p2', creationTimestamp: new Date(now.getTime() + 1000) },
    };
    const report = explain(
      healthy({ policies: [newer, { ...policy(), metadata: { ...policy().metadata, creationTimestamp: new Date(now.getTime() - 60_000) } }] }),
    );
    expect(report.policy).toBe('vep/grow');
    expect(gateOf(report.gates, 'policy').evidence).toContain('vep/a-capped selects it too and leaves it to vep/grow');
    expect(report.heldBy).toBeUndefined();
  });
});

describe('claimsHeld', () => {
  it('gives each claim the first gate that holds it, as the operator counts them', () => {
    const other = { ...claim(), metadata: { name: 'logs', namespace: 'db', uid: 'u2' } };
    const snapshot = healthy({ pvcs: [claim(), other], policies: [{ ...policy(), spec: { ...policy().spec, selector: { matchLabels: { grow: 'yes' } } } }] });
    snapshot.pvcs[0]!.metadata!.labels = { grow: 'yes' };
    const held = claimsHeld(snapshot, { now, samples: (key) => (key === 'db/data' ? [sample(5)] : []), usageSource: 'kubelet' });
    expect(held).toEqual([
      { namespace: 'db', name: 'data', gate: 'threshold' },
      { namespace: 'db', name: 'logs', gate: 'policy' },
    ]);
  });
});
