import type { V1PersistentVolumeClaim, V1PersistentVolumeClaimCondition, V1Pod, V1ResourceQuota, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import type { PolicySpec, VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { GiB, parseBytes } from '../../k8s/quantity.ts';
import { resizeState } from '../claim/resize.ts';
import { atOrAbove, audit, auditContext, auditRules, severities, type AuditSnapshot, type Finding, type RuleId } from './rules.ts';
import type { UsageSample } from '../autoscale/sampling.ts';
import { driverProfiles, type DriverProfiles } from '../budget/drivers.ts';
import { claim, condition, minutesAgo, now, type ClaimOptions } from '../claim/claims.testing.ts';

const storageClass = (name: string, over: Partial<V1StorageClass> = {}): V1StorageClass => ({
  metadata: { name },
  provisioner: 'hostpath.pvx.dev',
  allowVolumeExpansion: true,
  ...over,
});

function pod(claimName: string, phase = 'Running', name = `pod-${claimName}`, namespace = 'db'): V1Pod {
  return { metadata: { name, namespace }, spec: { containers: [], volumes: [{ name: 'v', persistentVolumeClaim: { claimName } }] }, status: { phase } };
}

const policy = (name: string, spec: Partial<PolicySpec> = {}, namespace = 'db'): VolumeExpansionPolicy => ({
  apiVersion: 'pvx.dev/v1alpha1',
  kind: 'VolumeExpansionPolicy',
  metadata: { name, namespace },
  spec: { triggers: { usedPercent: 80 }, ...spec },
});

const clusterPolicy = (name: string, spec: Partial<ClusterVolumeExpansionPolicy['spec']>): ClusterVolumeExpansionPolicy => ({
  apiVersion: 'pvx.dev/v1alpha1',
  kind: 'ClusterVolumeExpansionPolicy',
  metadata: { name },
  spec: spec as ClusterVolumeExpansionPolicy['spec'],
});

const quota = (hard: Record<string, string>, used: Record<string, string>, namespace = 'db'): V1ResourceQuota => ({
  metadata: { name: 'storage', namespace },
  spec: { hard },
  status: { hard, used },
});

const patchedAt = (minutes: number, pvcName = 'data'): VolumeExpansionRequest => ({
  apiVersion: 'pvx.dev/v1alpha1',
  kind: 'VolumeExpansionRequest',
  metadata: { name: `grow-${minutes}`, namespace: 'db' },
  spec: { target: { pvcName }, increment: '1Gi' },
  status: { phase: 'Completed', timeline: { patchedAt: minutesAgo(minutes) } },
});

const sample = (usedGi: number, capacityGi = 10, at = now): UsageSample => ({
  at,
  usedBytes: BigInt(Math.round(usedGi * 1024)) * (GiB / 1024n),
  capacityBytes: BigInt(capacityGi) * GiB,
});

function snapshot(over: Partial<AuditSnapshot> = {}): AuditSnapshot {
  return {
    pvcs: [claim()],
    pvs: [{ metadata: { name: 'pv-data' }, spec: { capacity: { storage: '10Gi' } } }],
    storageClasses: [storageClass('fast'), storageClass('fixed', { allowVolumeExpansion: false }), storageClass('ebs', { provisioner: 'ebs.csi.aws.com' })],
    statefulSets: [],
    resourceQuotas: [],
    pods: [],
    requests: [],
    policies: [],
    clusterPolicies: [],
    ...over,
  };
}

/** The findings of one rule on a snapshot. */
const run = (rule: RuleId, s: AuditSnapshot, opts: { stuckAfterMs?: number; nearlyFullRatio?: number; profiles?: DriverProfiles } = {}): Finding[] =>
  checkOf(rule)(auditContext(s, { now, ...opts }));

function checkOf(id: RuleId): (typeof auditRules)[number]['check'] {
  const found = auditRules.find((r) => r.id === id);
  if (!found) throw new Error(`no rule ${id} in the table`);
  return found.check;
}

describe('the rule table', () => {
  it('has one entry per rule id, each with a title and remedy', () => {
    expect(new Set(auditRules.map((r) => r.id)).size).toBe(auditRules.length);
    for (const r of auditRules) {
      expect(severities).toContain(r.severity);
      expect(r.title.length).toBeGreaterThan(10);
      expect(r.remedy.length).toBeGreaterThan(10);
    }
  });
});

describe('class-not-expandable', () => {
  it.each([
    ['allowVolumeExpansion false', claim({ storageClass: 'fixed' }), /StorageClass fixed of data \(10Gi\) has allowVolumeExpansion false/],
    ['a StorageClass that does not exist', claim({ storageClass: 'gone' }), /StorageClass gone of data does not exist/],
    ['no StorageClass at all', claim({ storageClass: null }), /has no StorageClass/],
  ])('fires for a Bound claim with %s', (_, pvc, message) => {
    const [f, ...more] = run('class-not-expandable', snapshot({ pvcs: [pvc] }));
    expect(more).toEqual([]);
    expect(f).toMatchObject({ rule: 'class-not-expandable', severity: 'warning', namespace: 'db', kind: 'PersistentVolumeClaim', name: 'data' });
    expect(f?.message).toMatch(message);
  });

  it.each([
    ['an expandable class', claim({ storageClass: 'fast' })],
    ['a Pending claim of a fixed class', claim({ storageClass: 'fixed', phase: 'Pending' })],
  ])('does not fire for %s', (_, pvc) => {
    expect(run('class-not-expandable', snapshot({ pvcs: [pvc] }))).toEqual([]);
  });
});

describe('resizeState', () => {
  it.each([
    ['no resize', {}, undefined],
    [
      'ControllerResizeInProgress',
      { allocatedStatus: 'ControllerResizeInProgress', conditions: [condition('Resizing', 20)] },
      { stage: 'controller', reason: 'ControllerResizeInProgress', since: new Date(minutesAgo(20)) },
    ],
    // The resizer leaves Resizing True while the node stage waits: the status decides.
    [
      'NodeResizePending with Resizing still True',
      { allocatedStatus: 'NodeResizePending', conditions: [condition('Resizing', 30), condition('FileSystemResizePending', 20)] },
      { stage: 'node', reason: 'NodeResizePending', since: new Date(minutesAgo(20)) },
    ],
    [
      'the old FileSystemResizePending condition alone',
      { conditions: [condition('Resizing', 30), condition('FileSystemResizePending', 20)] },
      { stage: 'node', reason: 'FileSystemResizePending', since: new Date(minutesAgo(20)) },
    ],
    [
      'the new NodeResizePending condition alone',
      { conditions: [condition('NodeResizePending', 5)] },
      { stage: 'node', reason: 'NodeResizePending', since: new Date(minutesAgo(5)) },
    ],
    [
      'the old Resizing condition alone',
      { conditions: [condition('Resizing', 5)] },
      { stage: 'controller', reason: 'Resizing', since: new Date(minutesAgo(5)) },
    ],
    [
      'ControllerResizeInfeasible',
      { allocatedStatus: 'ControllerResizeInfeasible', conditions: [condition('ControllerResizeError', 3, 'too big')] },
      { stage: 'infeasible', reason: 'ControllerResizeInfeasible', since: new Date(minutesAgo(3)) },
    ],
  ])('%s', (_, o, want) => {
    expect(resizeState(claim(o as ClaimOptions))).toEqual(want);
  });

  it('ignores conditions that are not True', () => {
    expect(resizeState(claim({ conditions: [{ type: 'Resizing', status: 'False' }] }))).toBeUndefined();
  });
});

describe('resize-stuck', () => {
  const controller = (minutes: number) =>
    claim({ request: '20Gi', allocated: '20Gi', allocatedStatus: 'ControllerResizeInProgress', conditions: [condition('Resizing', minutes)] });
  const node = (minutes: number) =>
    claim({
      request: '20Gi',
      allocated: '20Gi',
      allocatedStatus: 'NodeResizePending',
      conditions: [condition('Resizing', minutes + 1), condition('FileSystemResizePending', minutes)],
    });

  it.each([
    [
      'the controller stage for 20m',
      controller(20),
      [],
      /^data: stuck for 20m in the controller stage \(ControllerResizeInProgress\): the storage backend has not finished expanding the volume \(requests 20Gi, capacity 10Gi\)$/,
    ],
    [
      'the node stage for 20m while a pod runs',
      node(20),
      [pod('data')],
      /^data: stuck for 20m in the node stage \(NodeResizePending\): the filesystem has not grown although pod pod-data runs with it \(requests 20Gi, capacity 10Gi\)$/,
    ],
    [
      'the controller stage per the old Resizing condition only',
      claim({ request: '20Gi', conditions: [condition('Resizing', 16)] }),
      [],
      /stuck for 16m in the controller stage \(Resizing\)/,
    ],
  ])('fires for %s', (_, pvc, pods, message) => {
    const [f, ...more] = run('resize-stuck', snapshot({ pvcs: [pvc], pods }));
    expect(more).toEqual([]);
    expect(f).toMatchObject({ rule: 'resize-stuck', severity: 'critical', name: 'data' });
    expect(f?.message).toMatch(message);
    expect(f?.since).toBeDefined();
  });

  it.each([
    ['a controller stage younger than stuckAfter', controller(10), []],
    ['a node stage without a running pod (waiting-for-pod instead)', node(60), []],
    ['a node stage whose only pod is Pending', node(60), [pod('data', 'Pending')]],
    ['a pod of another claim', node(60), [pod('other')]],
    ['an infeasible resize', claim({ allocatedStatus: 'ControllerResizeInfeasible', conditions: [condition('ControllerResizeError', 60)] }), []],
    ['no resize', claim(), [pod('data')]],
  ])('does not fire for %s', (_, pvc, pods) => {
    expect(run('resize-stuck', snapshot({ pvcs: [pvc], pods }))).toEqual([]);
  });

  it('counts the node stage from when a pod could first mount the claim, not from a long wait for one', () => {
    const scheduled = (minutes: number): V1Pod => {
      const p = pod('data');
      return {
        ...p,
        status: { ...p.status, conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: minutesAgo(minutes) as unknown as Date }] },
      };
    };
    // Waited 2 h for a pod; the pod came 5 min ago: not stuck yet.
    expect(run('resize-stuck', snapshot({ pvcs: [node(120)], pods: [scheduled(5)] }))).toEqual([]);
    // The pod came 20 min ago and the file system still has not grown: stuck for 20 min.
    const [f] = run('resize-stuck', snapshot({ pvcs: [node(120)], pods: [scheduled(20)] }));
    expect(f?.message).toMatch(/stuck for 20m in the node stage/);
    expect(f?.since).toBe(minutesAgo(20));
  });

  it('uses stuckAfterMs', () => {
    expect(run('resize-stuck', snapshot({ pvcs: [controller(10)] }), { stuckAfterMs: 5 * 60_000 })).toHaveLength(1);
    expect(run('resize-stuck', snapshot({ pvcs: [controller(20)] }), { stuckAfterMs: 30 * 60_000 })).toEqual([]);
  });
});

describe('waiting-for-pod', () => {
  it.each([
    [
      'NodeResizePending',
      claim({ request: '20Gi', allocated: '20Gi', allocatedStatus: 'NodeResizePending', conditions: [condition('FileSystemResizePending', 7)] }),
      7,
      /grew to 20Gi but its filesystem \(capacity 10Gi\).*no running pod does \(NodeResizePending for 7m\)/,
    ],
    [
      'FileSystemResizePending without a status',
      claim({ request: '20Gi', conditions: [condition('FileSystemResizePending', 2)] }),
      2,
      /FileSystemResizePending for 2m/,
    ],
  ])('fires for %s with no running pod, telling to start one', (_, pvc, minutes, message) => {
    const [f, ...more] = run('waiting-for-pod', snapshot({ pvcs: [pvc], pods: [pod('data', 'Succeeded')] }));
    expect(more).toEqual([]);
    expect(f).toMatchObject({ rule: 'waiting-for-pod', severity: 'info', name: 'data', since: minutesAgo(minutes) });
    expect(f?.message).toMatch(message);
    expect(f?.remedy).toMatch(/Start a pod that mounts data/);
  });

  it.each([
    ['a running pod mounts the claim', claim({ allocatedStatus: 'NodeResizePending', conditions: [condition('FileSystemResizePending', 7)] }), [pod('data')]],
    ['the controller stage', claim({ allocatedStatus: 'ControllerResizeInProgress', conditions: [condition('Resizing', 7)] }), []],
    ['no resize', claim(), []],
  ])('does not fire when %s', (_, pvc, pods) => {
    expect(run('waiting-for-pod', snapshot({ pvcs: [pvc], pods }))).toEqual([]);
  });
});

describe('resize-infeasible', () => {
  it.each(['ControllerResizeInfeasible', 'NodeResizeInfeasible'])('fires for %s with the driver error', (status) => {
    const pvc = claim({
      request: '64Ti',
      allocated: '64Ti',
      allocatedStatus: status,
      conditions: [condition(status.startsWith('Node') ? 'NodeResizeError' : 'ControllerResizeError', 4, 'exceeds the maximum volume size')],
    });
    const [f, ...more] = run('resize-infeasible', snapshot({ pvcs: [pvc] }));
    expect(more).toEqual([]);
    expect(f).toMatchObject({ rule: 'resize-infeasible', severity: 'critical', since: minutesAgo(4) });
    expect(f?.message).toBe(`data: the resize is ${status} (requests 64Ti, capacity 10Gi): exceeds the maximum volume size`);
    expect(f?.remedy).toMatch(/above 10Gi.*recovery: Auto/);
  });

  it.each([['NodeResizePending'], ['ControllerResizeInProgress']])('does not fire for %s', (status) => {
    expect(run('resize-infeasible', snapshot({ pvcs: [claim({ allocatedStatus: status })] }))).toEqual([]);
  });
});

describe('resize-error', () => {
  it.each(['ControllerResizeError', 'NodeResizeError'])('fires for a True %s with its message', (type) => {
    const [f, ...more] = run(
      'resize-error',
      snapshot({ pvcs: [claim({ request: '20Gi', allocatedStatus: 'ControllerResizeInProgress', conditions: [condition(type, 3, 'rpc error: Internal')] })] }),
    );
    expect(more).toEqual([]);
    expect(f).toMatchObject({ rule: 'resize-error', severity: 'warning', since: minutesAgo(3) });
    expect(f?.message).toBe(`data: ${type} (requests 20Gi, capacity 10Gi) for 3m: rpc error: Internal`);
  });

  const sizeAsked = (minutes: number) => [
    {
      manager: 'kubectl-patch',
      operation: 'Update',
      time: minutesAgo(minutes),
      fieldsV1: { 'f:spec': { 'f:resources': { 'f:requests': { 'f:storage': {} } } } },
    },
  ];
  it('a retry rewrites the condition: the failure is dated from when the size was asked for, not from the latest attempt', () => {
    const pvc = claim({
      request: '20Gi',
      allocatedStatus: 'ControllerResizeInProgress',
      conditions: [condition('ControllerResizeError', 0.5, 'rpc error: Internal')],
      managedFields: sizeAsked(8),
    });
    const [f] = run('resize-error', snapshot({ pvcs: [pvc] }));
    expect(f).toMatchObject({ since: minutesAgo(8) });
    expect(f?.message).toBe(
      'data: ControllerResizeError (requests 20Gi, capacity 10Gi) since the resize was asked for 8m ago (latest attempt 30s ago): rpc error: Internal',
    );
  });

  it('pvx’s own request knows since when the driver has refused: its errorSince', () => {
    const pvc = claim({
      request: '20Gi',
      allocatedStatus: 'ControllerResizeInProgress',
      conditions: [condition('ControllerResizeError', 0.5, 'rpc error: Internal')],
      managedFields: sizeAsked(30),
    });
    const req: VolumeExpansionRequest = {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow', namespace: 'db' },
      spec: { target: { pvcName: 'data' }, size: '20Gi' },
      status: { phase: 'ControllerExpanding', reason: 'ControllerResizeError', errorSince: minutesAgo(12) },
    };
    const [f] = run('resize-error', snapshot({ pvcs: [pvc], requests: [req] }));
    expect(f).toMatchObject({ since: minutesAgo(12) });
    expect(f?.message).toContain(' for 12m: rpc error: Internal');
  });

  it.each([
    ['no error condition', claim({ conditions: [condition('Resizing', 3)] })],
    ['an error condition that is False', claim({ conditions: [{ type: 'ControllerResizeError', status: 'False', message: 'old' }] })],
    [
      'an infeasible resize (reported by resize-infeasible)',
      claim({ allocatedStatus: 'ControllerResizeInfeasible', conditions: [condition('ControllerResizeError', 3, 'too big')] }),
    ],
  ])('does not fire for %s', (_, pvc) => {
    expect(run('resize-error', snapshot({ pvcs: [pvc] }))).toEqual([]);
  });
});

describe('VolumeAttributesClass changes', () => {
  /** The claim data asking for `spec`, with `current` applied and maybe a change under way, maybe from pvx's request. */
  const classed = (
    spec: string,
    current: string | undefined,
    status?: { target?: string; status: string },
    conditions: V1PersistentVolumeClaimCondition[] = [],
    annotations?: Record<string, string>,
  ) => {
    const c = claim({ conditions, annotations });
    return {
      ...c,
      spec: { ...c.spec, volumeAttributesClassName: spec },
      status: {
        ...c.status,
        ...(current ? { currentVolumeAttributesClassName: current } : {}),
        ...(status ? { modifyVolumeStatus: { ...(status.target ? { targetVolumeAttributesClassName: status.target } : {}), status: status.status } } : {}),
      },
    } as V1PersistentVolumeClaim;
  };
  const vacs = [{ metadata: { name: 'io2' }, driverName: 'hostpath.pvx.dev', parameters: { iops: '4000' } }];
  /** pvx's request that set the claim to io2, patched `minutes` ago. */
  const classRequest = (minutes: number): VolumeExpansionRequest => ({
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: { name: 'perf', namespace: 'db', uid: 'req-perf' },
    spec: { target: { pvcName: 'data' }, volumeAttributesClassName: 'io2' },
    status: { phase: 'Modifying', timeline: { patchedAt: minutesAgo(minutes) } },
  });
  const byPvx = { 'pvx.dev/request-uid': 'req-perf' };

  describe('modify-stuck', () => {
    it('fires for a change InProgress longer than the threshold, with the driver’s last error', () => {
      const pvc = classed('io2', 'gp3', { target: 'io2', status: 'InProgress' }, [
        condition('ModifyingVolume', 40),
        condition('ModifyVolumeError', 5, 'rpc error: code = Internal desc = volume is still optimizing'),
      ]);
      const [f, ...more] = run('modify-stuck', snapshot({ pvcs: [pvc], volumeAttributesClasses: vacs }));
      expect(more).toEqual([]);
      expect(f).toMatchObject({ rule: 'modify-stuck', severity: 'warning', since: minutesAgo(40) });
      expect(f?.message).toBe(
        'data: the change to VolumeAttributesClass io2 has not been applied for 40m (applied: gp3); modifyVolumeStatus InProgress; the driver last said: rpc error: code = Internal desc = volume is still optimizing',
      );
    });

    it('fires at once for a class that does not exist, whoever asked for it, saying what to create', () => {
      const [f] = run('modify-stuck', snapshot({ pvcs: [classed('io3', 'gp3', { status: 'Pending' })], volumeAttributesClasses: vacs }));
      expect(f?.message).toBe('data asks for VolumeAttributesClass io3, which does not exist: the change cannot start (Pending; applied: gp3)');
      expect(f?.remedy).toBe("Create VolumeAttributesClass io3 for driver hostpath.pvx.dev, or set data's spec.volumeAttributesClassName back to gp3.");
    });

    it('shows a modifyVolumeStatus value it does not know as the API server has it, once it lasts', () => {
      const pvc = classed('io2', 'gp3', { target: 'io2', status: 'Paused' }, [condition('ModifyingVolume', 40)]);
      const [f] = run('modify-stuck', snapshot({ pvcs: [pvc], volumeAttributesClasses: vacs }));
      expect(f).toMatchObject({ rule: 'modify-stuck', since: minutesAgo(40) });
      expect(f?.message).toBe(
        'data: the change to VolumeAttributesClass io2 has not been applied for 40m (applied: gp3); modifyVolumeStatus Paused (a value this version of pvx does not know, shown as the API server has it)',
      );
      expect(
        run(
          'modify-stuck',
          snapshot({ pvcs: [classed('io2', 'gp3', { target: 'io2', status: 'Paused' }, [condition('ModifyingVolume', 5)])], volumeAttributesClasses: vacs }),
        ),
      ).toEqual([]);
    });

    it('times a change Pending or not taken up from pvx’s patch', () => {
      const pending = run(
        'modify-stuck',
        snapshot({ pvcs: [classed('io2', 'gp3', { status: 'Pending' }, [], byPvx)], volumeAttributesClasses: vacs, requests: [classRequest(30)] }),
      );
      expect(pending).toMatchObject([{ since: minutesAgo(30) }]);
      const [untaken] = run(
        'modify-stuck',
        snapshot({ pvcs: [classed('io2', 'gp3', undefined, [], byPvx)], volumeAttributesClasses: vacs, requests: [classRequest(30)] }),
      );
      expect(untaken?.message).toMatch(/has not taken it up \(no modifyVolumeStatus\)/);
    });

    it.each<[string, Partial<AuditSnapshot>]>([
      [
        'a change InProgress within the threshold',
        { pvcs: [classed('io2', 'gp3', { target: 'io2', status: 'InProgress' }, [condition('ModifyingVolume', 10)])], volumeAttributesClasses: vacs },
      ],
      ['a class applied', { pvcs: [classed('io2', 'io2')], volumeAttributesClasses: vacs }],
      ['a change Infeasible (modify-infeasible’s)', { pvcs: [classed('io2', 'gp3', { target: 'io2', status: 'Infeasible' })], volumeAttributesClasses: vacs }],
      ['a change not taken up, of unknown age (not pvx’s)', { pvcs: [classed('io2', 'gp3')], volumeAttributesClasses: vacs }],
      [
        'a change pvx made recently',
        { pvcs: [classed('io2', 'gp3', { status: 'Pending' }, [], byPvx)], volumeAttributesClasses: vacs, requests: [classRequest(5)] },
      ],
      ['a class pvx may not list (it may well exist)', { pvcs: [classed('io3', 'gp3', { status: 'Pending' })] }],
    ])('does not fire for %s', (_name, over) => {
      expect(run('modify-stuck', snapshot(over))).toEqual([]);
    });
  });

  describe('modify-infeasible', () => {
    it('fires with the driver’s refusal and the class to set back', () => {
      const pvc = classed('io2', 'gp3', { target: 'io2', status: 'Infeasible' }, [
        condition('ModifyingVolume', 9),
        condition('ModifyVolumeError', 8, 'rpc error: code = InvalidArgument desc = iops too high'),
      ]);
      const [f, ...more] = run('modify-infeasible', snapshot({ pvcs: [pvc] }));
      expect(more).toEqual([]);
      expect(f).toMatchObject({ rule: 'modify-infeasible', severity: 'critical', since: minutesAgo(8) });
      expect(f?.message).toBe(
        'data: the driver refused VolumeAttributesClass io2 as infeasible (applied: gp3): rpc error: code = InvalidArgument desc = iops too high',
      );
      expect(f?.remedy).toMatch(/^Set data's spec\.volumeAttributesClassName back to gp3 to cancel/);
    });

    it('a claim that had no class is told to remove it', () => {
      expect(run('modify-infeasible', snapshot({ pvcs: [classed('io2', undefined, { target: 'io2', status: 'Infeasible' })] }))[0]?.remedy).toMatch(
        /back to none \(remove it/,
      );
    });

    it('does not fire for an earlier target’s Infeasible status the resizer has not replaced yet', () => {
      expect(run('modify-infeasible', snapshot({ pvcs: [classed('io2', 'gp3', { target: 'gp3-bad', status: 'Infeasible' })] }))).toEqual([]);
    });
  });
});

describe('capacity-mismatch', () => {
  const pv = (capacity: string) => ({ metadata: { name: 'pv-data' }, spec: { capacity: { storage: capacity } } });

  it('fires when the bound volume and the claim disagree and nothing resizes', () => {
    const [f, ...more] = run('capacity-mismatch', snapshot({ pvs: [pv('20Gi')] }));
    expect(more).toEqual([]);
    expect(f).toMatchObject({ rule: 'capacity-mismatch', severity: 'warning', name: 'data' });
    expect(f?.message).toBe('PersistentVolume pv-data has 20Gi but data reports a capacity of 10Gi, and no resize is in progress');
  });

  it('says the filesystem has not grown yet where the PersistentVolume’s pre-resize-capacity is the claim’s capacity', () => {
    const grown = { ...pv('20Gi'), metadata: { name: 'pv-data', annotations: { 'volume.alpha.kubernetes.io/pre-resize-capacity': '10Gi' } } };
    const [f] = run('capacity-mismatch', snapshot({ pvs: [grown] }));
    expect(f?.message).toBe(
      'PersistentVolume pv-data has 20Gi but data reports a capacity of 10Gi, and no resize is in progress; the volume was grown from 10Gi (its volume.alpha.kubernetes.io/pre-resize-capacity) and its filesystem not yet',
    );
    // An annotation that is not a quantity, or names another size, explains nothing.
    for (const value of ['later', '5Gi']) {
      const odd = { ...grown, metadata: { name: 'pv-data', annotations: { 'volume.alpha.kubernetes.io/pre-resize-capacity': value } } };
      expect(run('capacity-mismatch', snapshot({ pvs: [odd] }))[0]?.message).toBe(
        'PersistentVolume pv-data has 20Gi but data reports a capacity of 10Gi, and no resize is in progress',
      );
    }
  });

  it.each([
    ['equal sizes written differently', snapshot({ pvs: [pv('10240Mi')] })],
    ['a resize in progress (the PV grows first)', snapshot({ pvs: [pv('20Gi')], pvcs: [claim({ allocatedStatus: 'NodeResizePending' })] })],
    ['a resize per conditions only', snapshot({ pvs: [pv('20Gi')], pvcs: [claim({ conditions: [condition('FileSystemResizePending', 1)] })] })],
    ['a PV that is not in the snapshot', snapshot({ pvs: [] })],
  ])('does not fire for %s', (_, s) => {
    expect(run('capacity-mismatch', s)).toEqual([]);
  });
});

describe('policy-overlap', () => {
  const created = (p: VolumeExpansionPolicy, minutes: number): VolumeExpansionPolicy => ({
    ...p,
    metadata: { ...p.metadata, creationTimestamp: minutesAgo(minutes) as unknown as Date },
  });
  it('names the policy that grows the claim (the oldest that acts) and those that leave it alone', () => {
    const [f, ...more] = run('policy-overlap', snapshot({ policies: [created(policy('newer'), 1), created(policy('older'), 60)] }));
    expect(more).toEqual([]);
    expect(f).toMatchObject({ rule: 'policy-overlap', severity: 'warning', name: 'data' });
    expect(f?.message).toBe('data is selected by vep/older and by vep/newer: vep/older (the oldest that acts) grows it; vep/newer leaves it alone');
  });
  it.each([
    ['one policy', [policy('only')]],
    ['two policies over different claims', [policy('a'), policy('b', { selector: { matchLabels: { tier: 'x' } } })]],
  ])('is quiet with %s', (_name, policies) => {
    expect(run('policy-overlap', snapshot({ policies }))).toEqual([]);
  });
});

describe('nearly-full-uncovered', () => {
  const usage = (s: UsageSample) => new Map([['db/data', s]]);
  const namespaces = [{ metadata: { name: 'db', labels: { team: 'a' } } }];

  it('fires for a nearly full claim no policy grows, with the figures', () => {
    const [f, ...more] = run('nearly-full-uncovered', snapshot({ usage: usage(sample(9)) }));
    expect(more).toEqual([]);
    expect(f).toMatchObject({ rule: 'nearly-full-uncovered', severity: 'warning', name: 'data' });
    expect(f?.message).toBe(
      'data is 90.0% full (9 GiB of 10 GiB used, 1 GiB free) and no VolumeExpansionPolicy or ClusterVolumeExpansionPolicy with triggers grows it (one in DryRun only reports)',
    );
  });

  it.each([
    ['a namespaced policy of another namespace', { policies: [policy('p', {}, 'other')] }],
    ['a policy whose labels do not match', { policies: [policy('p', { selector: { matchLabels: { tier: 'x' } } })] }],
    ['a policy of another StorageClass', { policies: [policy('p', { storageClassNames: ['slow'] })] }],
    [
      'a policy of a StatefulSet the claim is not of',
      {
        policies: [policy('p', { statefulSetName: 'web' })],
        statefulSets: [{ metadata: { name: 'web', namespace: 'db' }, spec: { volumeClaimTemplates: [{ metadata: { name: 'data' } }] } } as V1StatefulSet],
      },
    ],
    ['a cluster policy without triggers (guardrails only)', { clusterPolicies: [clusterPolicy('guard', { guardrails: { maxSize: '1Ti' } })], namespaces }],
    [
      'a cluster policy whose namespaceSelector does not match',
      { clusterPolicies: [clusterPolicy('c', { triggers: { usedPercent: 80 }, namespaceSelector: { matchLabels: { team: 'b' } } })], namespaces },
    ],
    [
      'a cluster policy of another StorageClass',
      { clusterPolicies: [clusterPolicy('c', { triggers: { usedPercent: 80 }, storageClassNames: ['slow'] })], namespaces },
    ],
    ['a policy in DryRun (it selects the claim but never grows it)', { policies: [policy('p', { mode: 'DryRun' })] }],
  ])('still fires despite %s', (_, over) => {
    expect(run('nearly-full-uncovered', snapshot({ usage: usage(sample(9)), ...over }))).toHaveLength(1);
  });

  it.each([
    ['below the ratio', { usage: usage(sample(8)) }, {}],
    ['below a raised ratio', { usage: usage(sample(9)) }, { nearlyFullRatio: 0.95 }],
    ['without a usage source', {}, {}],
    ['without a sample of the claim', { usage: new Map([['db/other', sample(10)]]) }, {}],
    ['a stale sample', { usage: usage(sample(9.5, 10, new Date(now.getTime() - 3_600_000))) }, {}],
    // Hostpath volumes report the host filesystem: its fullness is not the volume's.
    ['a sample of another filesystem', { usage: usage(sample(95, 100)) }, {}],
    [
      'a namespaced policy that selects it',
      { usage: usage(sample(9)), policies: [policy('p', { selector: { matchLabels: { app: 'pg' } } })], pvcs: [claim({ labels: { app: 'pg' } })] },
      {},
    ],
    [
      'a policy of its StatefulSet',
      {
        usage: new Map([['db/data-web-0', sample(9)]]),
        pvcs: [claim({ name: 'data-web-0' })],
        policies: [policy('p', { statefulSetName: 'web' })],
        statefulSets: [{ metadata: { name: 'web', namespace: 'db' }, spec: { volumeClaimTemplates: [{ metadata: { name: 'data' } }] } } as V1StatefulSet],
      },
      {},
    ],
    [
      'a cluster policy with triggers whose selectors match',
      {
        usage: usage(sample(9)),
        clusterPolicies: [
          clusterPolicy('c', { triggers: { usedPercent: 80 }, namespaceSelector: { matchLabels: { team: 'a' } }, storageClassNames: ['fast'] }),
        ],
        namespaces,
      },
      {},
    ],
  ])('does not fire with %s', (_, over, opts) => {
    expect(run('nearly-full-uncovered', snapshot(over as Partial<AuditSnapshot>), opts)).toEqual([]);
  });
});

describe('quota-headroom', () => {
  it.each([
    [
      'requests.storage',
      quota({ 'requests.storage': '50Gi' }, { 'requests.storage': '49Gi' }),
      /ResourceQuota storage limits requests.storage to 50Gi; 49Gi is used and growing data to 12Gi needs 2 GiB more/,
    ],
    [
      'the class quota',
      quota({ 'fast.storageclass.storage.k8s.io/requests.storage': '11Gi' }, { 'fast.storageclass.storage.k8s.io/requests.storage': '10Gi' }),
      /limits fast.storageclass.storage.k8s.io\/requests.storage to 11Gi/,
    ],
  ])('fires when the policy step exceeds the headroom of %s', (_, q, message) => {
    const [f, ...more] = run('quota-headroom', snapshot({ policies: [policy('grow')], resourceQuotas: [q] }));
    expect(more).toEqual([]);
    expect(f).toMatchObject({ rule: 'quota-headroom', severity: 'warning', name: 'data' });
    expect(f?.message).toMatch(/^the next expansion by VolumeExpansionPolicy grow \(10Gi → 12Gi\) would be rejected: /);
    expect(f?.message).toMatch(message);
  });

  it('takes the cluster policy that grows the claim when no namespaced one does', () => {
    const [f] = run(
      'quota-headroom',
      snapshot({
        clusterPolicies: [clusterPolicy('all', { triggers: { usedPercent: 80 }, step: { percent: 100 } })],
        resourceQuotas: [quota({ 'requests.storage': '15Gi' }, { 'requests.storage': '10Gi' })],
      }),
    );
    expect(f?.message).toMatch(/^the next expansion by ClusterVolumeExpansionPolicy all \(10Gi → 20Gi\)/);
  });

  it.each([
    ['enough headroom', { policies: [policy('grow')], resourceQuotas: [quota({ 'requests.storage': '50Gi' }, { 'requests.storage': '48Gi' })] }],
    ['no policy grows the claim', { resourceQuotas: [quota({ 'requests.storage': '10Gi' }, { 'requests.storage': '10Gi' })] }],
    [
      'a quota of another namespace',
      { policies: [policy('grow')], resourceQuotas: [quota({ 'requests.storage': '10Gi' }, { 'requests.storage': '10Gi' }, 'other')] },
    ],
    ['a quota of another class', { policies: [policy('grow')], resourceQuotas: [quota({ 'slow.storageclass.storage.k8s.io/requests.storage': '10Gi' }, {})] }],
    [
      'a claim at the policy maximum',
      { policies: [policy('grow', { maxSize: '10Gi' })], resourceQuotas: [quota({ 'requests.storage': '10Gi' }, { 'requests.storage': '10Gi' })] },
    ],
  ])('does not fire with %s', (_, over) => {
    expect(run('quota-headroom', snapshot(over as Partial<AuditSnapshot>))).toEqual([]);
  });
});

describe('driver-budget-exhausted', () => {
  const ebsClaim = claim({ storageClass: 'ebs' });

  it('fires when pvx used the EBS budget of 4 per 24 h, saying when the next is allowed', () => {
    const requests = [patchedAt(600), patchedAt(300), patchedAt(120), patchedAt(60)];
    const [f, ...more] = run('driver-budget-exhausted', snapshot({ pvcs: [ebsClaim], requests }));
    expect(more).toEqual([]);
    expect(f).toMatchObject({ rule: 'driver-budget-exhausted', severity: 'warning', name: 'data', since: minutesAgo(60) });
    expect(f?.message).toBe(
      'ebs.csi.aws.com allows 4 modifications per volume per 24h; data has 4 in the window (4 by pvx requests); the next is allowed at 2026-11-30T02:00:00.000Z (in 14h)',
    );
  });

  it("counts the changes the claim's ledger observed, and pvx's own entries there once with their requests", () => {
    const ledger = {
      spec: { size: '13Gi' },
      mods: [
        { at: minutesAgo(200), by: 'observed:kubectl-patch', size: ['10Gi', '11Gi'], timeFrom: 'managedFields' },
        { at: minutesAgo(120), by: 'ver/grow-120', size: ['11Gi', '12Gi'] },
        { at: minutesAgo(60), by: 'ver/grow-60', size: ['12Gi', '13Gi'] },
      ],
    };
    const pvc = claim({ storageClass: 'ebs', request: '13Gi', capacity: '13Gi', annotations: { 'pvx.dev/modifications': JSON.stringify(ledger) } });
    const requests = [patchedAt(600), patchedAt(120), patchedAt(60)];
    const [f] = run('driver-budget-exhausted', snapshot({ pvcs: [pvc], requests }));
    expect(f?.message).toBe(
      `ebs.csi.aws.com allows 4 modifications per volume per 24h; data has 4 in the window (3 by pvx requests, 1 observed: resized 10Gi → 11Gi by kubectl-patch at ${minutesAgo(200)}); the next is allowed at 2026-11-30T02:00:00.000Z (in 14h)`,
    );
    // Without the ledger, pvx's history alone is three: no finding.
    expect(run('driver-budget-exhausted', snapshot({ pvcs: [claim({ storageClass: 'ebs' })], requests }))).toEqual([]);
  });

  it('reads the budget from the profiles it is given (--modification-budget)', () => {
    const requests = [patchedAt(300), patchedAt(60)];
    const profiles = driverProfiles({ 'ebs.csi.aws.com': { count: 2, windowMs: 6 * 3_600_000 } });
    const [f] = run('driver-budget-exhausted', snapshot({ pvcs: [ebsClaim], requests }), { profiles });
    expect(f?.message).toMatch(
      /^ebs\.csi\.aws\.com allows 2 modifications per volume per 6h; data has 2 in the window .* the next is allowed at 2026-11-29T13:00:00.000Z/,
    );
    const none = driverProfiles({ 'ebs.csi.aws.com': null });
    expect(run('driver-budget-exhausted', snapshot({ pvcs: [ebsClaim], requests: [1, 2, 3, 4, 5].map((m) => patchedAt(m)) }), { profiles: none })).toEqual([]);
  });

  it.each([
    ['three modifications', { pvcs: [ebsClaim], requests: [patchedAt(300), patchedAt(120), patchedAt(60)] }],
    ['modifications older than the window', { pvcs: [ebsClaim], requests: [patchedAt(2000), patchedAt(1900), patchedAt(1800), patchedAt(60)] }],
    ['dry runs', { pvcs: [ebsClaim], requests: [1, 2, 3, 4].map((m) => ({ ...patchedAt(m), spec: { ...patchedAt(m).spec, dryRun: true } })) }],
    ["another claim's history", { pvcs: [ebsClaim], requests: [1, 2, 3, 4].map((m) => patchedAt(m, 'other')) }],
    ['a driver without a budget', { pvcs: [claim()], requests: [1, 2, 3, 4].map((m) => patchedAt(m)) }],
  ])('does not fire with %s', (_, over) => {
    expect(run('driver-budget-exhausted', snapshot(over as Partial<AuditSnapshot>))).toEqual([]);
  });
});

describe('statefulset-size-drift', () => {
  const sts = (templateSize: string): V1StatefulSet => ({
    metadata: { name: 'web', namespace: 'db' },
    spec: {
      selector: {},
      serviceName: 'web',
      template: {},
      volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: templateSize } } } }],
    },
  });
  const claims = (...sizes: string[]) => sizes.map((request, i) => claim({ name: `data-web-${i}`, request }));

  it.each([
    [
      'claims larger than the template',
      sts('10Gi'),
      claims('20Gi', '20Gi'),
      'volumeClaimTemplate data requests 10Gi but its claims request data-web-0 20Gi, data-web-1 20Gi: new replicas start at 10Gi',
    ],
    [
      'claims that differ from each other',
      sts('10Gi'),
      claims('10Gi', '20Gi', '10Gi'),
      'volumeClaimTemplate data requests 10Gi but its claims request data-web-0 10Gi, data-web-1 20Gi, data-web-2 10Gi: new replicas start at 10Gi',
    ],
  ])('fires for %s', (_, set, pvcs, message) => {
    const [f, ...more] = run('statefulset-size-drift', snapshot({ statefulSets: [set], pvcs }));
    expect(more).toEqual([]);
    expect(f).toMatchObject({ rule: 'statefulset-size-drift', severity: 'info', namespace: 'db', kind: 'StatefulSet', name: 'web', message });
  });

  it('says how to carry the size into the template: pvx’s opt-in, or the source of a StatefulSet a GitOps tool manages', () => {
    const [own] = run('statefulset-size-drift', snapshot({ statefulSets: [sts('10Gi')], pvcs: claims('20Gi', '15Gi') }));
    expect(own?.remedy).toMatch(
      /^Let pvx carry 20Gi into the template: a VolumeExpansionRequest on StatefulSet web \(template data, size 20Gi\) with spec\.statefulSetTemplate\.update \(its RBAC is an opt-in: chart value statefulSetTemplates\.enabled\)/,
    );
    const argo = {
      ...sts('10Gi'),
      metadata: { name: 'web', namespace: 'db', annotations: { 'argocd.argoproj.io/tracking-id': 'shop:apps/StatefulSet:db/web' } },
    };
    const [managed] = run('statefulset-size-drift', snapshot({ statefulSets: [argo], pvcs: claims('20Gi', '20Gi') }));
    expect(managed?.remedy).toMatch(
      /^StatefulSet web is managed by Argo CD \(annotation argocd\.argoproj\.io\/tracking-id\): change volumeClaimTemplate data to 20Gi in its source\. The sync then fails on the immutable field: delete the StatefulSet with kubectl delete statefulset web -n db --cascade=orphan/,
    );
  });

  it.each([
    ['claims at the template size, written differently', sts('10Gi'), claims('10Gi', '10240Mi')],
    ['no claims yet', sts('10Gi'), []],
    [
      'claims of another StatefulSet with a similar name',
      sts('10Gi'),
      [claim({ name: 'data-web-x-0', request: '20Gi' }), claim({ name: 'data-webapp-0', request: '20Gi' })],
    ],
    ['claims in another namespace', sts('10Gi'), [claim({ name: 'data-web-0', namespace: 'other', request: '20Gi' })]],
  ])('does not fire for %s', (_, set, pvcs) => {
    expect(run('statefulset-size-drift', snapshot({ statefulSets: [set], pvcs }))).toEqual([]);
  });
});

describe('resized-outside-pvx', () => {
  // managedFields as the API server writes them (read from a real cluster: kubectl create, then
  // kubectl patch of the size, which moves ownership of f:storage to the patching manager).
  const owns = (manager: string, time: string, operation = 'Update') => ({
    manager,
    operation,
    time,
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:spec': { 'f:resources': { 'f:requests': { 'f:storage': {} } } } },
  });
  const created = {
    manager: 'kubectl-create',
    operation: 'Update',
    time: minutesAgo(60),
    fieldsV1: { 'f:spec': { 'f:accessModes': {}, 'f:resources': { 'f:requests': {} } } },
  };
  const labelled = { manager: 'kubectl-label', operation: 'Update', time: minutesAgo(1), fieldsV1: { 'f:metadata': { 'f:labels': { 'f:x': {} } } } };

  it.each([
    [
      'a kubectl patch of an expanded claim',
      claim({ request: '20Gi', capacity: '20Gi', allocated: '20Gi', managedFields: [created, owns('kubectl-patch', minutesAgo(30)), labelled] }),
      'kubectl-patch',
    ],
    [
      'a pending resize by a script (request above capacity)',
      claim({ request: '20Gi', managedFields: [created, owns('resize-bot', minutesAgo(2))] }),
      'resize-bot',
    ],
    [
      "a size other than pvx's target, set after pvx",
      claim({
        request: '30Gi',
        capacity: '30Gi',
        allocated: '30Gi',
        annotations: { 'pvx.dev/target-size': '20Gi' },
        managedFields: [owns('pvx', minutesAgo(50)), owns('kubectl-edit', minutesAgo(5))],
      }),
      'kubectl-edit',
    ],
    [
      'the creator re-applying a larger size',
      claim({ request: '20Gi', capacity: '20Gi', allocated: '20Gi', managedFields: [owns('kubectl-client-side-apply', minutesAgo(10))] }),
      'kubectl-client-side-apply',
    ],
  ])('fires for %s', (_, pvc, manager) => {
    const [f, ...more] = run('resized-outside-pvx', snapshot({ pvcs: [pvc] }));
    expect(more).toEqual([]);
    expect(f).toMatchObject({ rule: 'resized-outside-pvx', severity: 'info', name: 'data' });
    expect(f?.message).toContain(`was last set by ${manager} (Update at `);
    expect(f?.since).toBeDefined();
  });

  it("names pvx's own last size", () => {
    const pvc = claim({
      request: '30Gi',
      capacity: '30Gi',
      allocated: '30Gi',
      annotations: { 'pvx.dev/target-size': '20Gi' },
      managedFields: [owns('kubectl-edit', minutesAgo(5))],
    });
    expect(run('resized-outside-pvx', snapshot({ pvcs: [pvc] }))[0]?.message).toBe(
      `data's size 30Gi was last set by kubectl-edit (Update at ${minutesAgo(5)}), not by pvx (pvx last set 20Gi)`,
    );
  });

  it.each([
    ['a claim never expanded (its creator owns the size)', claim({ managedFields: [owns('kubectl-create', minutesAgo(60)), labelled] })],
    ['a StatefulSet claim never expanded', claim({ managedFields: [owns('kube-controller-manager', minutesAgo(60))] })],
    ["pvx's own patch", claim({ request: '20Gi', capacity: '20Gi', allocated: '20Gi', managedFields: [created, owns('pvx', minutesAgo(10)), labelled] })],
    [
      "another manager re-applying pvx's target size",
      claim({
        request: '20Gi',
        capacity: '20Gi',
        allocated: '20Gi',
        annotations: { 'pvx.dev/target-size': '20Gi' },
        managedFields: [owns('pvx', minutesAgo(20)), owns('kubectl', minutesAgo(10), 'Apply')],
      }),
    ],
    [
      "pvx's recovery size",
      claim({
        request: '15Gi',
        allocated: '15Gi',
        annotations: { 'pvx.dev/target-size': '64Ti', 'pvx.dev/recovered-to': '15Gi' },
        managedFields: [owns('someone', minutesAgo(1))],
      }),
    ],
    ['no managedFields (stripped by the reader)', claim({ request: '20Gi', capacity: '20Gi', allocated: '20Gi' })],
  ])('does not fire for %s', (_, pvc) => {
    expect(run('resized-outside-pvx', snapshot({ pvcs: [pvc] }))).toEqual([]);
  });

  it('takes the most recent owner when ownership is shared (server-side apply)', () => {
    const pvc = claim({
      request: '20Gi',
      capacity: '20Gi',
      allocated: '20Gi',
      managedFields: [owns('kubectl', minutesAgo(10), 'Apply'), owns('pvx', minutesAgo(5))],
    });
    expect(run('resized-outside-pvx', snapshot({ pvcs: [pvc] }))).toEqual([]);
    const reversed = claim({
      request: '20Gi',
      capacity: '20Gi',
      allocated: '20Gi',
      managedFields: [owns('pvx', minutesAgo(10)), owns('kubectl', minutesAgo(5), 'Apply')],
    });
    expect(run('resized-outside-pvx', snapshot({ pvcs: [reversed] }))[0]?.message).toContain('last set by kubectl (Apply');
  });
});

describe('audit', () => {
  const findings = () =>
    audit(
      snapshot({
        pvcs: [
          claim({ name: 'b-fixed', storageClass: 'fixed' }),
          claim({ name: 'a-infeasible', volumeName: 'none', allocatedStatus: 'ControllerResizeInfeasible' }),
          claim({ name: 'c-waiting', volumeName: 'none', namespace: 'app', allocatedStatus: 'NodeResizePending' }),
          claim({ name: 'a-fixed', storageClass: 'fixed', namespace: 'app' }),
        ],
        pvs: [],
      }),
      { now },
    );

  it('sorts by severity (most severe first), then namespace, name and rule', () => {
    expect(findings().map((f) => `${f.severity} ${f.namespace}/${f.name} ${f.rule}`)).toEqual([
      'critical db/a-infeasible resize-infeasible',
      'warning app/a-fixed class-not-expandable',
      'warning db/b-fixed class-not-expandable',
      'info app/c-waiting waiting-for-pod',
    ]);
  });

  it('reports nothing for a healthy snapshot', () => {
    expect(audit(snapshot(), { now })).toEqual([]);
  });

  it.each([
    ['info', 4],
    ['warning', 3],
    ['critical', 1],
  ] as const)('atOrAbove(%s) keeps %i', (severity, count) => {
    expect(atOrAbove(findings(), severity)).toHaveLength(count);
  });
});

describe('a claim pvx cannot read', () => {
  const bad = [
    claim({ name: 'bad-request', request: '12 Gi', labels: { app: 'db' } }),
    claim({ name: 'bad-capacity', capacity: 'lots', labels: { app: 'db' } }),
    claim({ name: 'data-db-0', request: 'lots', allocated: 'lots', allocatedStatus: 'NodeResizePending', labels: { app: 'db' } }),
  ];
  // Everything every rule reads about a claim: a quota and a policy (quota-headroom), usage
  // (nearly-full-uncovered), a StatefulSet (size drift), an EBS class with pvx's history (budget).
  const everything = (pvcs: V1PersistentVolumeClaim[]) =>
    snapshot({
      pvcs: [...pvcs, claim({ name: 'fixed', storageClass: 'fixed' })],
      resourceQuotas: [quota({ 'requests.storage': '100Gi' }, { 'requests.storage': '95Gi' })],
      policies: [policy('grow', { selector: { matchLabels: { app: 'db' } } })],
      statefulSets: [
        {
          metadata: { name: 'db', namespace: 'db' },
          spec: {
            selector: {},
            serviceName: 'db',
            template: {},
            volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '10Gi' } } } }],
          },
        },
      ],
      usage: new Map(pvcs.map((p) => [`db/${p.metadata?.name}`, sample(9.5)])),
      requests: [1, 2, 3, 4].map((m) => patchedAt(m * 60, 'bad-request')),
    });

  it('is one finding of its own, naming the field and the value; every other claim is audited', () => {
    const findings = audit(everything(bad), { now });
    expect(findings.find((f) => f.name === 'fixed')?.rule).toBe('class-not-expandable');
    const unreadable = findings.filter((f) => f.rule === 'claim-unreadable');
    expect(unreadable.map((f) => [f.name, f.message])).toEqual(
      expect.arrayContaining([
        ['bad-request', expect.stringContaining('spec.resources.requests.storage "12 Gi"')],
        ['bad-capacity', expect.stringContaining('status.capacity.storage "lots"')],
        ['data-db-0', expect.stringMatching(/spec\.resources\.requests\.storage "lots".*status\.allocatedResources\.storage "lots"/)],
      ]),
    );
    expect(unreadable).toHaveLength(3);
  });

  // The API server's canonical form of 1.0001Gi: read once the quantity parser knows the micro
  // suffix, until then a finding like any value it refuses — checked here both ways.
  it('with status.capacity.storage 1073849198182400u', () => {
    const parserKnowsMicro = (() => {
      try {
        return parseBytes('1073849198182400u') === 1073849199n;
      } catch {
        return false;
      }
    })();
    const findings = audit(everything([claim({ name: 'micro', capacity: '1073849198182400u', request: '1Gi', labels: { app: 'db' } })]), { now });
    expect(findings.find((f) => f.name === 'fixed')?.rule).toBe('class-not-expandable');
    expect(findings.filter((f) => f.rule === 'claim-unreadable').map((f) => f.name)).toEqual(parserKnowsMicro ? [] : ['micro']);
  });
});
