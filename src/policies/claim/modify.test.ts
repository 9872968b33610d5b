// Where a claim's VolumeAttributesClass change stands, one row per state the external-resizer's
// modify controller (v2.3.0) can leave a claim in, and the ones in between.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { modificationInFlight, modificationState, type ModificationState } from './modify.ts';

const began = new Date('2026-11-29T11:50:00Z');

interface ClaimClass {
  spec?: string;
  current?: string;
  status?: { target?: string; status: string };
  error?: string;
}

function claim(c: ClaimClass): V1PersistentVolumeClaim {
  const modifying = c.status && c.status.status !== 'Pending';
  return {
    metadata: { name: 'data', namespace: 'db' },
    spec: { ...(c.spec !== undefined ? { volumeAttributesClassName: c.spec } : {}) },
    status: {
      phase: 'Bound',
      ...(c.current !== undefined ? { currentVolumeAttributesClassName: c.current } : {}),
      ...(c.status
        ? { modifyVolumeStatus: { ...(c.status.target !== undefined ? { targetVolumeAttributesClassName: c.status.target } : {}), status: c.status.status } }
        : {}),
      conditions: [
        ...(modifying ? [{ type: 'ModifyingVolume', status: 'True', lastTransitionTime: began }] : []),
        ...(c.error ? [{ type: 'ModifyVolumeError', status: 'True', reason: 'InvalidArgument', message: c.error, lastTransitionTime: began }] : []),
      ],
    },
  };
}

describe('modificationState: the change of the claim to io2', () => {
  it.each<[string, ClaimClass, Partial<ModificationState>]>([
    ['applied (current io2, no status)', { spec: 'io2', current: 'io2' }, { stage: 'applied' }],
    [
      'applied, and the claim has since asked for another class',
      { spec: 'gp3', current: 'io2', status: { target: 'gp3', status: 'InProgress' } },
      { stage: 'applied' },
    ],
    ['asked for, not taken up yet (no status)', { spec: 'io2', current: 'gp3' }, { stage: 'requested' }],
    ['asked for, from no class', { spec: 'io2' }, { stage: 'requested' }],
    [
      'the resizer still on an earlier, infeasible target',
      { spec: 'io2', current: 'gp3', status: { target: 'gp3-bad', status: 'Infeasible' }, error: 'bad iops' },
      { stage: 'requested' },
    ],
    [
      'the resizer finishing an earlier target first (uncertain)',
      { spec: 'io2', current: 'gp3', status: { target: 'gp3-fast', status: 'InProgress' } },
      { stage: 'requested' },
    ],
    [
      'Pending without a target (the class was not found)',
      { spec: 'io2', current: 'gp3', status: { status: 'Pending' } },
      { stage: 'pending', status: 'Pending' },
    ],
    ['Pending with a stale target', { spec: 'io2', current: 'gp3', status: { target: 'gp3-old', status: 'Pending' } }, { stage: 'pending' }],
    ['InProgress', { spec: 'io2', current: 'gp3', status: { target: 'io2', status: 'InProgress' } }, { stage: 'inProgress', since: began }],
    [
      'InProgress, retrying after a driver error',
      { spec: 'io2', current: 'gp3', status: { target: 'io2', status: 'InProgress' }, error: 'throttled' },
      { stage: 'inProgress', error: 'throttled' },
    ],
    [
      'Infeasible',
      { spec: 'io2', current: 'gp3', status: { target: 'io2', status: 'Infeasible' }, error: 'iops above the maximum' },
      { stage: 'infeasible', error: 'iops above the maximum' },
    ],
    [
      'a status value Kubernetes may add later',
      { spec: 'io2', current: 'gp3', status: { target: 'io2', status: 'Paused' } },
      { stage: 'unknown', status: 'Paused' },
    ],
    ['the claim now asks for another class', { spec: 'gp3-fast', current: 'gp3' }, { stage: 'elsewhere' }],
    ['the claim was set back to none', { current: 'gp3' }, { stage: 'elsewhere' }],
  ])('%s → %o', (_name, c, want) => {
    expect(modificationState(claim(c), 'io2')).toMatchObject(want);
  });
});

describe('modificationInFlight: a change of the volume another one must not overlap', () => {
  it.each<[string, ClaimClass, string | undefined]>([
    ['none asked for', {}, undefined],
    ['applied', { spec: 'io2', current: 'io2' }, undefined],
    ['asked for, not taken up yet', { spec: 'io2', current: 'gp3' }, 'io2'],
    ['InProgress', { spec: 'io2', current: 'gp3', status: { target: 'io2', status: 'InProgress' } }, 'io2'],
    [
      'InProgress on an earlier target while the claim asks for another',
      { spec: 'gp3-fast', current: 'gp3', status: { target: 'io2', status: 'InProgress' } },
      'io2',
    ],
    // Neither touches the volume, and Kubernetes lets the claim's class change to leave them.
    ['Pending', { spec: 'io2', current: 'gp3', status: { status: 'Pending' } }, undefined],
    ['Infeasible', { spec: 'io2', current: 'gp3', status: { target: 'io2', status: 'Infeasible' } }, undefined],
  ])('%s → %s', (_name, c, target) => {
    expect(modificationInFlight(claim(c))?.target).toBe(target);
  });
});
