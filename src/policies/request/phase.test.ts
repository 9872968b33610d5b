import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { GiB } from '../../k8s/quantity.ts';
import type { Phase, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { defaultDriverProfiles } from '../budget/drivers.ts';
import { derivePhase, inFlight, oldestPhaseAges, type PhaseInput } from './phase.ts';

const claim = (status: { capacity?: string; alloc?: string; conditions?: { type: string; message?: string }[]; uid?: string }): V1PersistentVolumeClaim => ({
  metadata: { name: 'data', uid: status.uid ?? 'u1' },
  status: {
    capacity: { storage: status.capacity ?? '1Gi' },
    ...(status.alloc ? { allocatedResourceStatuses: { storage: status.alloc } } : {}),
    conditions: (status.conditions ?? []).map((c) => ({ ...c, status: 'True' })),
  },
});
const ebs = defaultDriverProfiles('ebs.csi.aws.com');
const phaseOf = (over: Partial<PhaseInput>) =>
  derivePhase({ pvc: claim({}), pvcUID: 'u1', targetBytes: 2n * GiB, mountedByRunningPod: true, now: new Date('2026-11-29T12:00:00Z'), ...over });

describe('derivePhase', () => {
  it.each<[string, Partial<PhaseInput>, string, string]>([
    ['capacity reached', { pvc: claim({ capacity: '2Gi' }) }, 'Completed', 'Completed'],
    ['capacity beyond the target', { pvc: claim({ capacity: '3Gi' }) }, 'Completed', 'Completed'],
    ['patched, resizer not started', {}, 'Expanding', 'WaitingForResizer'],
    ['ControllerResizeInProgress', { pvc: claim({ alloc: 'ControllerResizeInProgress' }) }, 'ControllerExpanding', 'ControllerResizeInProgress'],
    ['Resizing condition only (older clusters)', { pvc: claim({ conditions: [{ type: 'Resizing' }] }) }, 'ControllerExpanding', 'ControllerResizeInProgress'],
    [
      'NodeResizePending with a pod',
      { pvc: claim({ alloc: 'NodeResizePending', conditions: [{ type: 'FileSystemResizePending' }] }) },
      'NodeExpansionPending',
      'NodeResizePending',
    ],
    ['NodeResizePending without a pod', { pvc: claim({ alloc: 'NodeResizePending' }), mountedByRunningPod: false }, 'WaitingForPod', 'NodeResizePending'],
    [
      'FileSystemResizePending only, no pod',
      { pvc: claim({ conditions: [{ type: 'FileSystemResizePending' }] }), mountedByRunningPod: false },
      'WaitingForPod',
      'NodeResizePending',
    ],
    ['NodeResizeInProgress', { pvc: claim({ alloc: 'NodeResizeInProgress' }) }, 'NodeExpansionPending', 'NodeResizeInProgress'],
    // Older clusters leave Resizing True while the node stage waits: the node stage wins.
    [
      'Resizing and FileSystemResizePending, with a pod',
      { pvc: claim({ conditions: [{ type: 'Resizing' }, { type: 'FileSystemResizePending' }] }) },
      'NodeExpansionPending',
      'FileSystemResizePending',
    ],
    [
      'Resizing and FileSystemResizePending, no pod',
      { pvc: claim({ conditions: [{ type: 'Resizing' }, { type: 'FileSystemResizePending' }] }), mountedByRunningPod: false },
      'WaitingForPod',
      'NodeResizePending',
    ],
    [
      'ControllerResizeInfeasible',
      { pvc: claim({ alloc: 'ControllerResizeInfeasible', conditions: [{ type: 'ControllerResizeError', message: 'OutOfRange: too big' }] }) },
      'Failed',
      'ControllerResizeInfeasible',
    ],
    ['NodeResizeInfeasible', { pvc: claim({ alloc: 'NodeResizeInfeasible' }) }, 'Failed', 'NodeResizeInfeasible'],
    ['legacy ControllerResizeFailed', { pvc: claim({ alloc: 'ControllerResizeFailed' }) }, 'Failed', 'ControllerResizeFailed'],
    ['an unknown status value', { pvc: claim({ alloc: 'SomethingNew' }) }, 'Expanding', 'UnknownResizeStatus'],
    [
      'controller error, retrying',
      { pvc: claim({ alloc: 'ControllerResizeInProgress', conditions: [{ type: 'ControllerResizeError', message: 'rpc error: Internal' }] }) },
      'ControllerExpanding',
      'ControllerResizeError',
    ],
    [
      'EBS rate limit',
      {
        driver: ebs,
        pvc: claim({
          alloc: 'ControllerResizeInProgress',
          conditions: [{ type: 'ControllerResizeError', message: 'VolumeModificationRateExceeded: wait 6h' }],
        }),
      },
      'ControllerExpanding',
      'DriverRateLimited',
    ],
    [
      'EBS: the previous modification still optimizing (a wait)',
      {
        driver: ebs,
        pvc: claim({
          alloc: 'ControllerResizeInProgress',
          conditions: [
            { type: 'ControllerResizeError', message: 'Could not resize volume "vol-1": volume "vol-1" in OPTIMIZING state, cannot currently modify' },
          ],
        }),
      },
      'ControllerExpanding',
      'DriverModificationInProgress',
    ],
    [
      'a driver text of another driver is not recognised',
      { pvc: claim({ alloc: 'ControllerResizeInProgress', conditions: [{ type: 'ControllerResizeError', message: 'VolumeModificationRateExceeded' }] }) },
      'ControllerExpanding',
      'ControllerResizeError',
    ],
    ['PVC deleted', { pvc: undefined }, 'Failed', 'PVCDeleted'],
    ['PVC replaced', { pvc: claim({ uid: 'u2' }) }, 'Failed', 'PVCReplaced'],
    ['deadline passed', { pvc: claim({ alloc: 'NodeResizePending' }), deadline: new Date('2026-11-29T11:00:00Z') }, 'Failed', 'DeadlineExceeded'],
    ['deadline passed but complete', { pvc: claim({ capacity: '2Gi' }), deadline: new Date('2026-11-29T11:00:00Z') }, 'Completed', 'Completed'],
  ])('%s → %s (%s)', (_name, over, phase, reason) => {
    expect(phaseOf(over)).toMatchObject({ phase, reason });
  });

  it('says when the EBS budget allows the next modification after a rate-limit error', () => {
    const now = new Date('2026-11-29T12:00:00Z');
    const h = (hours: number) => new Date(now.getTime() - hours * 3_600_000);
    const p = phaseOf({
      driver: ebs,
      now,
      modifications: [h(23), h(12), h(6), h(0.1)].map((at) => ({ at, by: 'ver/grow' })),
      pvc: claim({
        alloc: 'ControllerResizeInProgress',
        conditions: [{ type: 'ControllerResizeError', message: 'rpc error: code = Internal desc = VolumeModificationRateExceeded' }],
      }),
    });
    expect(p.reason).toBe('DriverRateLimited');
    expect(p.message).toContain('next modification at 2026-11-29T13:00:00.000Z'); // the one 23 h ago leaves the 24 h window
  });

  it('tells the user to start a pod while waiting for node expansion', () => {
    expect(phaseOf({ pvc: claim({ alloc: 'NodeResizePending' }), mountedByRunningPod: false }).message).toMatch(/start a pod/);
  });

  describe('volume.kubernetes.io/node-expansion-not-required (external-resizer v2.0): no pod is waited for', () => {
    const noNodeStep = (c: V1PersistentVolumeClaim): V1PersistentVolumeClaim => ({
      ...c,
      metadata: { ...c.metadata, annotations: { 'volume.kubernetes.io/node-expansion-not-required': 'true' } },
    });

    it('completes as soon as the resizer recorded the capacity, without any pod, and says there was no node step', () => {
      const p = phaseOf({ pvc: noNodeStep(claim({ capacity: '2Gi' })), mountedByRunningPod: false });
      expect(p).toMatchObject({ phase: 'Completed', reason: 'Completed' });
      expect(p.message).toMatch(/no node step/);
    });

    it('never asks for a pod, even while a node-stage condition is still shown', () => {
      const stale = noNodeStep(claim({ conditions: [{ type: 'FileSystemResizePending' }] }));
      const p = phaseOf({ pvc: stale, mountedByRunningPod: false });
      expect(p).toMatchObject({ phase: 'NodeExpansionPending', reason: 'NodeExpansionNotRequired' });
      expect(p.message).not.toMatch(/start a pod/);
      // Without the annotation, the same claim waits for a pod.
      expect(phaseOf({ pvc: claim({ conditions: [{ type: 'FileSystemResizePending' }] }), mountedByRunningPod: false }).phase).toBe('WaitingForPod');
    });

    it('only "true" counts', () => {
      const c = claim({ alloc: 'NodeResizePending' });
      expect(
        phaseOf({
          pvc: { ...c, metadata: { ...c.metadata, annotations: { 'volume.kubernetes.io/node-expansion-not-required': 'false' } } },
          mountedByRunningPod: false,
        }).phase,
      ).toBe('WaitingForPod');
    });
  });
});

describe('derivePhase with a VolumeAttributesClass', () => {
  const now = new Date('2026-11-29T12:00:00Z');
  /** Claim data at `capacity` asking for `spec`, with `current` applied and maybe a change under way. */
  const classed = (c: {
    capacity?: string;
    alloc?: string;
    spec?: string;
    current?: string;
    modify?: { target?: string; status: string };
    conditions?: { type: string; message?: string }[];
  }) => {
    const base = claim({ capacity: c.capacity, alloc: c.alloc, conditions: c.conditions });
    return {
      ...base,
      metadata: { ...base.metadata, namespace: 'db' },
      spec: { volumeAttributesClassName: c.spec ?? 'io2' },
      status: {
        ...base.status,
        ...(c.current ? { currentVolumeAttributesClassName: c.current } : {}),
        ...(c.modify
          ? { modifyVolumeStatus: { ...(c.modify.target ? { targetVolumeAttributesClassName: c.modify.target } : {}), status: c.modify.status } }
          : {}),
      },
    } as V1PersistentVolumeClaim;
  };
  const inProgress = { target: 'io2', status: 'InProgress' };
  const classOnly = (pvc: V1PersistentVolumeClaim, over: Partial<PhaseInput> = {}) =>
    derivePhase({ pvc, pvcUID: 'u1', targetClass: 'io2', mountedByRunningPod: true, now, ...over });
  const both = (pvc: V1PersistentVolumeClaim, over: Partial<PhaseInput> = {}) => classOnly(pvc, { targetBytes: 2n * GiB, ...over });

  it.each<[string, V1PersistentVolumeClaim, string, string]>([
    ['applied', classed({ current: 'io2' }), 'Completed', 'Completed'],
    ['patched, not taken up yet', classed({ current: 'gp3' }), 'Modifying', 'WaitingForResizer'],
    ['Pending (the class is not there for the resizer)', classed({ current: 'gp3', modify: { status: 'Pending' } }), 'Modifying', 'ModifyVolumePending'],
    ['InProgress', classed({ current: 'gp3', modify: inProgress, conditions: [{ type: 'ModifyingVolume' }] }), 'Modifying', 'ModifyVolumeInProgress'],
    [
      'InProgress after a driver error, retrying',
      classed({
        current: 'gp3',
        modify: inProgress,
        conditions: [{ type: 'ModifyingVolume' }, { type: 'ModifyVolumeError', message: 'rpc error: code = Internal desc = timeout' }],
      }),
      'Modifying',
      'ModifyVolumeError',
    ],
    ['an unknown status value', classed({ current: 'gp3', modify: { target: 'io2', status: 'Paused' } }), 'Modifying', 'UnknownModifyVolumeStatus'],
    [
      'Infeasible',
      classed({
        current: 'gp3',
        modify: { target: 'io2', status: 'Infeasible' },
        conditions: [{ type: 'ModifyVolumeError', message: 'iops 99999 above the maximum' }],
      }),
      'Failed',
      'ModifyVolumeInfeasible',
    ],
    ['the claim set to another class since', classed({ spec: 'gp3', current: 'gp3' }), 'Failed', 'VolumeAttributesClassChanged'],
  ])('class only, %s → %s (%s)', (_name, pvc, phase, reason) => {
    expect(classOnly(pvc)).toMatchObject({ phase, reason });
  });

  it('a driver rate limit on the class change reads as one, with the budget’s next slot', () => {
    const h = (hours: number) => new Date(now.getTime() - hours * 3_600_000);
    const pvc = classed({
      current: 'gp3',
      modify: inProgress,
      conditions: [{ type: 'ModifyVolumeError', message: 'rpc error: code = Internal desc = VolumeModificationRateExceeded' }],
    });
    const p = classOnly(pvc, {
      driver: defaultDriverProfiles('ebs.csi.aws.com'),
      modifications: [h(23), h(12), h(6), h(0.1)].map((at) => ({ at, by: 'ver/earlier' })),
    });
    expect(p).toMatchObject({ phase: 'Modifying', reason: 'DriverRateLimited' });
    expect(p.message).toContain('next modification at 2026-11-29T13:00:00.000Z');
  });

  it('Infeasible tells how to cancel: the class set back to the one applied, or removed when there was none', () => {
    const infeasible = { target: 'io2', status: 'Infeasible' };
    expect(classOnly(classed({ current: 'gp3', modify: infeasible })).message).toMatch(
      /set its spec\.volumeAttributesClassName back to gp3 \(kubectl patch pvc data -n db --type merge -p '\{"spec":\{"volumeAttributesClassName":"gp3"\}\}'\)/,
    );
    expect(classOnly(classed({ modify: infeasible })).message).toMatch(/remove its spec\.volumeAttributesClassName \(it had none/);
  });

  it.each<[string, V1PersistentVolumeClaim, string, string]>([
    [
      'neither done: the resize speaks first',
      classed({ alloc: 'ControllerResizeInProgress', current: 'gp3', modify: inProgress }),
      'ControllerExpanding',
      'ControllerResizeInProgress',
    ],
    ['the class applied, the size not yet', classed({ alloc: 'NodeResizePending', current: 'io2' }), 'NodeExpansionPending', 'NodeResizePending'],
    ['the size reached, the class not yet', classed({ capacity: '2Gi', current: 'gp3', modify: inProgress }), 'Modifying', 'ModifyVolumeInProgress'],
    ['both done', classed({ capacity: '2Gi', current: 'io2' }), 'Completed', 'Completed'],
    [
      'the class infeasible while the size grows',
      classed({ alloc: 'ControllerResizeInProgress', current: 'gp3', modify: { target: 'io2', status: 'Infeasible' } }),
      'Failed',
      'ModifyVolumeInfeasible',
    ],
    ['the size infeasible', classed({ alloc: 'ControllerResizeInfeasible', current: 'io2' }), 'Failed', 'ControllerResizeInfeasible'],
    [
      'a class change error while the resize waits for the resizer',
      classed({ current: 'gp3', modify: inProgress, conditions: [{ type: 'ModifyVolumeError', message: 'busy' }] }),
      'Expanding',
      'ModifyVolumeError',
    ],
  ])('size and class, %s → %s (%s)', (_name, pvc, phase, reason) => {
    expect(both(pvc)).toMatchObject({ phase, reason });
  });

  it('says both figures when done, and when the deadline passes', () => {
    expect(both(classed({ capacity: '2Gi', current: 'io2' })).message).toBe('capacity is 2Gi; VolumeAttributesClass is io2');
    expect(classOnly(classed({ current: 'io2' })).message).toBe('VolumeAttributesClass is io2');
    const late = both(classed({ capacity: '2Gi', current: 'gp3', modify: inProgress }), { deadline: new Date(now.getTime() - 1) });
    expect(late).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
    expect(late.message).toMatch(/\(capacity 2Gi; VolumeAttributesClass gp3\)$/);
  });

  it('a size reached is not failed by someone else’s infeasible resize: only the class is followed then', () => {
    expect(both(classed({ capacity: '3Gi', alloc: 'ControllerResizeInfeasible', current: 'gp3', modify: inProgress }))).toMatchObject({
      phase: 'Modifying',
      reason: 'ModifyVolumeInProgress',
    });
  });
});

describe('request gauges', () => {
  const at = new Date('2026-11-29T12:00:00Z');
  const req = (phase: Phase, secondsInPhase: number, patched = true) =>
    ({
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: `${phase}-${secondsInPhase}` },
      spec: { target: { pvcName: 'x' }, size: '2Gi' },
      status: { phase, phaseSince: new Date(at.getTime() - secondsInPhase * 1000).toISOString(), timeline: patched ? { patchedAt: at.toISOString() } : {} },
    }) as VolumeExpansionRequest;

  it('oldestPhaseAges keeps the longest wait per unfinished phase and ignores finished ones', () => {
    const ages = oldestPhaseAges(
      [req('WaitingForPod', 30), req('WaitingForPod', 600), req('NodeExpansionPending', 5), req('Completed', 9999), req('Rejected', 9999, false)],
      at,
    );
    expect(Object.fromEntries(ages)).toEqual({ WaitingForPod: 600, NodeExpansionPending: 5 });
  });

  it('inFlight counts patched, unfinished requests', () => {
    expect(inFlight([req('WaitingForPod', 1), req('Pending', 1, false), req('Completed', 1)])).toBe(1);
  });
});
