// Where a claim's VolumeAttributesClass change stands, read from the claim alone — the counterpart
// of resize.ts for spec.volumeAttributesClassName. The external-resizer's modify controller
// (v2.3.0, pkg/modifycontroller) writes what is read here:
//   - before it calls the driver's ControllerModifyVolume it sets status.modifyVolumeStatus to
//     {targetVolumeAttributesClassName: <spec's class>, status: InProgress} and the condition
//     ModifyingVolume (its lastTransitionTime: when the change began);
//   - a class that does not exist (in its cache) makes the status Pending, with no condition, and
//     the target left as it was (often unset): Pending is read against the claim's spec;
//   - a driver error adds the condition ModifyVolumeError (reason: the gRPC code, message: the
//     driver's) and keeps InProgress, retried with backoff; only InvalidArgument makes it
//     Infeasible, retried slowly until spec.volumeAttributesClassName changes (setting it back
//     cancels, as Kubernetes' API documents);
//   - success removes modifyVolumeStatus and both conditions, and sets
//     status.currentVolumeAttributesClassName to the target.
// Kubernetes says new status values may come (core/v1 types.go, 1.34): unknown ones are tolerated.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { toDate, trueCondition } from './resize.ts';

export const modifyingCondition = 'ModifyingVolume';
export const modifyErrorCondition = 'ModifyVolumeError';

/** The claim's applied VolumeAttributesClass; undefined when it has none. */
export function currentClass(pvc: V1PersistentVolumeClaim): string | undefined {
  return pvc.status?.currentVolumeAttributesClassName || undefined;
}

/** The class the claim asks for; undefined when none. */
export function specClass(pvc: V1PersistentVolumeClaim): string | undefined {
  return pvc.spec?.volumeAttributesClassName || undefined;
}

export interface ModificationState {
  /**
   * applied: the volume has the class; requested: the claim asks for it and the resizer has not
   * taken it up yet; pending / inProgress / infeasible: modifyVolumeStatus for it; unknown: a
   * status value this version does not know; elsewhere: the claim now asks for another class.
   */
  stage: 'applied' | 'requested' | 'pending' | 'inProgress' | 'infeasible' | 'unknown' | 'elsewhere';
  /** The modifyVolumeStatus value, when there is one for this class. */
  status?: string;
  /** What the driver said last (the ModifyVolumeError condition's message). */
  error?: string;
  /** When the change began (the ModifyingVolume condition), when known. */
  since?: Date;
}

/**
 * How the change of the claim to `target` stands. The modify controller's status may still speak
 * of an earlier target (an Infeasible one, or an uncertain one it finishes first) until it takes
 * up the claim's current spec: that is read as not taken up yet, never as this class's outcome.
 */
export function modificationState(pvc: V1PersistentVolumeClaim, target: string): ModificationState {
  const status = pvc.status?.modifyVolumeStatus;
  if (currentClass(pvc) === target && (!status || specClass(pvc) !== target)) return { stage: 'applied' };
  if (specClass(pvc) !== target) return { stage: 'elsewhere' };
  if (!status) return { stage: 'requested' };
  const error = trueCondition(pvc, modifyErrorCondition)?.message;
  const since = toDate(trueCondition(pvc, modifyingCondition)?.lastTransitionTime);
  const about = { status: status.status, ...(error ? { error } : {}), ...(since ? { since } : {}) };
  // Pending is set without a target (the class was not found), so it is always the spec's.
  if (status.status === 'Pending') return { stage: 'pending', ...about };
  if (status.targetVolumeAttributesClassName !== target) return { stage: 'requested' };
  if (status.status === 'InProgress') return { stage: 'inProgress', ...about };
  if (status.status === 'Infeasible') return { stage: 'infeasible', ...about };
  return { stage: 'unknown', ...about };
}

/**
 * A change of the volume's class that is under way or about to be, which another change must not
 * overlap (EBS refuses to modify a volume still modifying, and each counts against its budget):
 * the resizer is at it (InProgress), or the claim asks for a class it has not taken up yet. A
 * Pending or Infeasible change does nothing to the volume, and Kubernetes lets the claim's class
 * be changed to leave it: it is not in flight. Undefined when none is.
 */
export function modificationInFlight(pvc: V1PersistentVolumeClaim): { target: string; since?: Date } | undefined {
  const status = pvc.status?.modifyVolumeStatus;
  const since = toDate(trueCondition(pvc, modifyingCondition)?.lastTransitionTime);
  if (status?.status === 'InProgress') return { target: status.targetVolumeAttributesClassName || (specClass(pvc) ?? ''), ...(since ? { since } : {}) };
  const wanted = specClass(pvc);
  if (!status && wanted && wanted !== currentClass(pvc)) return { target: wanted };
  return undefined;
}
