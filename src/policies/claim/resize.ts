// Where a PVC's resize stands, read from the claim alone: allocatedResourceStatuses where the API
// server has it (Kubernetes ≥ 1.31), else the conditions — one reading for the request's phases,
// the policies' "expansion in flight" and the audit's rules.
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1PersistentVolumeClaimCondition } from '@kubernetes/client-node';
import { kubernetesAnnotations } from '../../crds/keys.ts';
import { readBytes } from '../../k8s/quantity.ts';

/** Timestamps arrive as Date from client-node's typed lists and as strings from raw JSON. */
export function toDate(value: Date | string | null | undefined): Date | undefined {
  if (value === undefined || value === null) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

export function trueCondition(pvc: V1PersistentVolumeClaim, ...types: string[]): V1PersistentVolumeClaimCondition | undefined {
  return (pvc.status?.conditions ?? []).find((c) => c.status === 'True' && types.includes(c.type));
}

/** Condition names: Kubernetes' older and newer spellings of the same resize stage. */
const controllerStageConditions = ['Resizing', 'ControllerResizeInProgress'];
const nodeStageConditions = ['FileSystemResizePending', 'NodeResizePending'];
export const errorConditions = ['ControllerResizeError', 'NodeResizeError'];
/** allocatedResourceStatuses values after which the resize cannot succeed (the Failed ones are pre-1.31 names). */
export const infeasibleStatuses: ReadonlySet<string> = new Set([
  'ControllerResizeInfeasible',
  'NodeResizeInfeasible',
  'ControllerResizeFailed',
  'NodeResizeFailed',
]);

export interface ResizeState {
  stage: 'controller' | 'node' | 'infeasible' | 'unknown';
  /** The allocatedResourceStatuses value, or the condition that told the stage. */
  reason: string;
  since?: Date;
}

/**
 * Where a claim's resize stands, or undefined when none is under way. allocatedResourceStatuses
 * (Kubernetes ≥ 1.31) decides when present: the resizer leaves Resizing True while the node stage
 * waits, so the conditions alone are read node stage first.
 */
export function resizeState(pvc: V1PersistentVolumeClaim): ResizeState | undefined {
  const status = pvc.status?.allocatedResourceStatuses?.storage;
  const nodeCondition = trueCondition(pvc, ...nodeStageConditions);
  const controllerCondition = trueCondition(pvc, ...controllerStageConditions);
  if (status && infeasibleStatuses.has(status)) {
    return { stage: 'infeasible', reason: status, since: toDate(trueCondition(pvc, ...errorConditions)?.lastTransitionTime) };
  }
  if (status === 'ControllerResizeInProgress') return { stage: 'controller', reason: status, since: toDate(controllerCondition?.lastTransitionTime) };
  if (status === 'NodeResizePending' || status === 'NodeResizeInProgress') {
    return { stage: 'node', reason: status, since: toDate((nodeCondition ?? controllerCondition)?.lastTransitionTime) };
  }
  if (status) return { stage: 'unknown', reason: status };
  if (nodeCondition) return { stage: 'node', reason: nodeCondition.type, since: toDate(nodeCondition.lastTransitionTime) };
  if (controllerCondition) return { stage: 'controller', reason: controllerCondition.type, since: toDate(controllerCondition.lastTransitionTime) };
  return undefined;
}

/** Any sign of a resize under way, retrying or stuck: a policy must not ask for another. */
export function resizeUnderway(pvc: V1PersistentVolumeClaim): boolean {
  return resizeState(pvc) !== undefined || trueCondition(pvc, ...errorConditions) !== undefined;
}

/**
 * The external-resizer (v2.0 on) finished the claim's expansion without a node step and said so
 * with volume.kubernetes.io/node-expansion-not-required: no pod has to mount the claim for it to
 * complete (the kubelet of a node that mounts it leaves it alone too).
 */
export function nodeExpansionNotRequired(pvc: V1PersistentVolumeClaim): boolean {
  return pvc.metadata?.annotations?.[kubernetesAnnotations.nodeExpansionNotRequired] === 'true';
}

/**
 * The claim's capacity before an expansion whose filesystem step has not happened yet, as the
 * external-resizer records it on the PersistentVolume (volume.alpha.kubernetes.io/pre-resize-capacity,
 * AnnotateFsResize: beta in v2.2, removed once the node step is done). Undefined when absent or not
 * a quantity: it only explains a stage, nothing is decided on it.
 */
export function preResizeCapacity(pv: V1PersistentVolume | undefined): bigint | undefined {
  const value = pv?.metadata?.annotations?.[kubernetesAnnotations.preResizeCapacity];
  return value === undefined ? undefined : readBytes(value);
}

/**
 * The kubelet tried to grow the claim's filesystem while a pod mounts it and the driver refused
 * (NodeExpandVolume FailedPrecondition: "volume in use", the CSI spec's answer of a driver that
 * expands only offline). Kubernetes records it as the NodeResizeError condition and does not retry
 * on that node until the volume is mounted anew (actual state of world: in-use expansion error):
 * the filesystem grows when a pod mounts the claim again.
 */
export function kubeletRefusedInUse(pvc: V1PersistentVolumeClaim): boolean {
  const error = trueCondition(pvc, 'NodeResizeError');
  return error !== undefined && /code = FailedPrecondition/.test(error.message ?? '');
}
