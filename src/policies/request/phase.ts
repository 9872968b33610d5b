// The phase of an accepted, patched request, derived from the PVC's state alone (never from
// memory), so it is the same after a restart. Pure, with the clock passed in. A request that sets
// a VolumeAttributesClass follows its change (../claim/modify.ts) beside the resize: the resize's phases
// while the size is not reached, then Modifying until the class is applied.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import type { Phase, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { formatBytes, parseBytes } from '../../k8s/quantity.ts';
import { currentClass, modificationState, modifyErrorCondition, specClass, type ModificationState } from '../claim/modify.ts';
import { budgetSpentBy, rateLimitNote, type Modification } from '../budget/budget.ts';
import { driverError, type DriverError, type DriverProfile } from '../budget/drivers.ts';
import { errorConditions, kubeletRefusedInUse, nodeExpansionNotRequired, resizeState, trueCondition } from '../claim/resize.ts';

export interface Progress {
  phase: Phase;
  reason: string;
  message: string;
}

export interface PhaseInput {
  pvc: V1PersistentVolumeClaim | undefined;
  /** The UID of the PVC the request patched. */
  pvcUID: string;
  /** The size the request grows the claim to; undefined when it changes only the class. */
  targetBytes?: bigint;
  /** The VolumeAttributesClass the request sets, if any. */
  targetClass?: string;
  /** A running pod mounts the claim (node expansion can happen). */
  mountedByRunningPod: boolean;
  /** The profile of the claim's driver: which of its errors are waits, which a rate limit. */
  driver?: DriverProfile;
  /** When the request fails if not complete. */
  deadline?: Date;
  /** The volume's modifications pvx knows of (this request's patch included), for a rate limit. */
  modifications?: Modification[];
  /** When pvx first saw the driver's current rate-limit refusal (now, the first time). */
  rateLimitedSince?: Date;
  /** The request's own modification in `modifications` (`ver/NAME`): a rate limit refuses it, so it is not one the driver counted. */
  ownModification?: string;
  now: Date;
}

export function derivePhase(input: PhaseInput): Progress {
  const { pvc, targetBytes, targetClass } = input;
  if (!pvc) return { phase: 'Failed', reason: 'PVCDeleted', message: 'the PersistentVolumeClaim was deleted before the expansion completed' };
  if (pvc.metadata?.uid !== input.pvcUID) {
    return {
      phase: 'Failed',
      reason: 'PVCReplaced',
      message: `the PersistentVolumeClaim was deleted and created again (uid ${pvc.metadata?.uid}, expected ${input.pvcUID})`,
    };
  }
  const capacity = pvc.status?.capacity?.storage ? parseBytes(pvc.status.capacity.storage) : 0n;
  const sized = targetBytes === undefined || capacity >= targetBytes;
  const modification = targetClass === undefined ? undefined : modificationState(pvc, targetClass);
  const modified = modification === undefined || modification.stage === 'applied';
  // What the claim has of what the request changes: "capacity 2Gi; VolumeAttributesClass gold".
  const figures = (verb: string) =>
    [
      targetBytes === undefined ? '' : `capacity ${verb}${formatBytes(capacity)}`,
      targetClass === undefined ? '' : `VolumeAttributesClass ${verb}${currentClass(pvc) ?? '(none)'}`,
    ]
      .filter(Boolean)
      .join('; ');
  if (sized && modified) {
    const noNodeStep = targetBytes !== undefined && nodeExpansionNotRequired(pvc) ? ' (no node step: the resizer marked it node-expansion-not-required)' : '';
    return { phase: 'Completed', reason: 'Completed', message: `${figures('is ')}${noNodeStep}` };
  }

  const state = sized ? undefined : resizeState(pvc);
  // The driver error the request shows: the resize's while it lasts, else the class change's.
  const errorCondition =
    (sized ? undefined : trueCondition(pvc, ...errorConditions)) ??
    (modification?.stage === 'inProgress' ? trueCondition(pvc, modifyErrorCondition) : undefined);

  if (state?.stage === 'infeasible') {
    return { phase: 'Failed', reason: state.reason, message: errorCondition?.message ?? `the resize is ${state.reason}` };
  }
  const classFailure = modification && targetClass !== undefined ? modificationFailure(pvc, targetClass, modification) : undefined;
  if (classFailure) return classFailure;
  if (input.deadline && input.now >= input.deadline) {
    return { phase: 'Failed', reason: 'DeadlineExceeded', message: `not completed by the deadline ${input.deadline.toISOString()} (${figures('')})` };
  }

  let progress: Progress;
  // NodeResizeInProgress: the kubelet is at it, so a pod mounts the claim whatever the cache says.
  // A claim the resizer marked node-expansion-not-required waits for no pod, whatever a stale
  // condition still says: the resizer completes it.
  const nodeWaiting = state?.stage === 'node' && state.reason !== 'NodeResizeInProgress' && !nodeExpansionNotRequired(pvc);
  if (sized) {
    progress = modifying(targetClass as string, modification as ModificationState);
  } else if (state?.stage === 'controller') {
    progress = {
      phase: 'ControllerExpanding',
      reason: 'ControllerResizeInProgress',
      message: 'the CSI driver is expanding the volume (ControllerExpandVolume)',
    };
  } else if (nodeWaiting && !input.mountedByRunningPod) {
    progress = {
      phase: 'WaitingForPod',
      reason: 'NodeResizePending',
      message: 'the volume grew; its filesystem grows when a pod mounts the claim: start a pod that uses it to finish the expansion',
    };
  } else if (state?.stage === 'node' && nodeExpansionNotRequired(pvc)) {
    progress = {
      phase: 'NodeExpansionPending',
      reason: 'NodeExpansionNotRequired',
      message: 'the resizer marked the claim node-expansion-not-required: no pod is needed; waiting for it to record the capacity',
    };
  } else if (state?.stage === 'node') {
    progress = { phase: 'NodeExpansionPending', reason: state.reason, message: 'waiting for the kubelet to grow the filesystem (NodeExpandVolume)' };
  } else if (state?.stage === 'unknown') {
    progress = {
      phase: 'Expanding',
      reason: 'UnknownResizeStatus',
      message: `unrecognised allocatedResourceStatuses value "${state.reason}"; following the capacity`,
    };
  } else {
    progress = { phase: 'Expanding', reason: 'WaitingForResizer', message: 'the claim was patched; waiting for the external resizer' };
  }
  if (errorCondition && state?.stage === 'node' && kubeletRefusedInUse(pvc)) {
    // Not a driver error to retry: the kubelet waits for the volume to be mounted anew.
    if (!input.mountedByRunningPod) {
      return {
        phase: 'WaitingForPod',
        reason: 'NodeResizePending',
        message:
          'the volume grew; its filesystem grows when a pod mounts the claim anew (its driver grows it only then): start a pod that uses it to finish the expansion',
      };
    }
    return {
      phase: 'NodeExpansionPending',
      reason: 'PodRestartRequired',
      message: `the kubelet cannot grow the filesystem while the volume is in use (its driver grows it only when the volume is mounted anew): it grows when a pod mounts the claim again — restart the pod that mounts it; ${errorCondition.message ?? ''}`,
    };
  }
  if (errorCondition) {
    const text = errorCondition.message ?? '';
    const recognised = input.driver ? driverError(input.driver, text) : undefined;
    const meaning = recognised ? `; ${errorMeaning(input, recognised)}` : '';
    progress = {
      ...progress,
      reason: recognised?.reason ?? errorCondition.type,
      message: `${progress.message}; retrying after ${errorCondition.type}: ${text}${meaning}`,
    };
  }
  return progress;
}

/** What a recognised driver error means for the request: when a rate limit lets it go on, or the error's meaning and what a person does about it. */
function errorMeaning(input: PhaseInput, recognised: DriverError): string {
  if (recognised.kind === 'rateLimited') {
    // A budget the refused change does not spend (a size change under a performance budget) says nothing of the refusal.
    const counted = budgetSpentBy(input.driver?.modificationBudget, { performance: input.targetClass !== undefined });
    return rateLimitNote(counted, input.modifications ?? [], input.rateLimitedSince ?? input.now, input.now, input.ownModification);
  }
  return `${recognised.meaning}${recognised.fix ? `: ${recognised.fix}` : ''}`;
}

/** Where a change to VolumeAttributesClass `target` that has not ended stands. */
function modifying(target: string, m: ModificationState): Progress {
  switch (m.stage) {
    case 'pending':
      return {
        phase: 'Modifying',
        reason: 'ModifyVolumePending',
        message: `the external resizer has not started the change to VolumeAttributesClass ${target}: Pending (the class does not exist, or the change waits for something else); it starts once it can`,
      };
    case 'inProgress':
      return {
        phase: 'Modifying',
        reason: 'ModifyVolumeInProgress',
        message: `the CSI driver is changing the volume to VolumeAttributesClass ${target} (ControllerModifyVolume)`,
      };
    case 'unknown':
      return {
        phase: 'Modifying',
        reason: 'UnknownModifyVolumeStatus',
        message: `unrecognised modifyVolumeStatus "${m.status}"; following status.currentVolumeAttributesClassName`,
      };
    default:
      return {
        phase: 'Modifying',
        reason: 'WaitingForResizer',
        message: `the claim asks for VolumeAttributesClass ${target}; waiting for the external resizer to take it up`,
      };
  }
}

/**
 * A change to VolumeAttributesClass `target` that cannot end as asked: the driver refused it as
 * infeasible (InvalidArgument), or the claim now asks for another class. Undefined otherwise.
 */
function modificationFailure(pvc: V1PersistentVolumeClaim, target: string, m: ModificationState): Progress | undefined {
  if (m.stage === 'elsewhere') {
    return {
      phase: 'Failed',
      reason: 'VolumeAttributesClassChanged',
      message: `the claim's spec.volumeAttributesClassName was changed to ${specClass(pvc) ?? '(none)'} after pvx set it to ${target}, before ${target} was applied`,
    };
  }
  if (m.stage !== 'infeasible') return undefined;
  // Kubernetes lets an infeasible change be cancelled by setting the class back (to none, if it had none).
  const previous = currentClass(pvc);
  const cancel = previous
    ? `set its spec.volumeAttributesClassName back to ${previous} (kubectl patch pvc ${pvc.metadata?.name} -n ${pvc.metadata?.namespace} --type merge -p '{"spec":{"volumeAttributesClassName":"${previous}"}}')`
    : `remove its spec.volumeAttributesClassName (it had none: kubectl patch pvc ${pvc.metadata?.name} -n ${pvc.metadata?.namespace} --type merge -p '{"spec":{"volumeAttributesClassName":null}}')`;
  return {
    phase: 'Failed',
    reason: 'ModifyVolumeInfeasible',
    message: `the CSI driver refused VolumeAttributesClass ${target} as infeasible${m.error ? `: ${m.error}` : ''}. The claim still asks for ${target} (the external resizer retries it only slowly) and its volume keeps ${previous ?? 'no class'}: to cancel, ${cancel}; or create a request for a class the driver accepts`,
  };
}

const finishedPhases: ReadonlySet<string> = new Set<Phase>(['Completed', 'Failed', 'Rejected']);

/** A phase a request ends in (Completed, Failed or Rejected): it stays so for good. */
export const isFinishedPhase = (phase: string | undefined): boolean => phase !== undefined && finishedPhases.has(phase);

/** A request that ended (Completed, Failed or Rejected): it stays so for good. */
export const isFinished = (r: { status?: { phase?: string } }): boolean => isFinishedPhase(r.status?.phase);

/** Accepted (the PVC was patched) and not finished: what `pvx_expansions_in_flight` counts. */
export function inFlight(requests: readonly VolumeExpansionRequest[]): number {
  return requests.filter((r) => r.status?.timeline?.patchedAt && !isFinished(r)).length;
}

/**
 * Per unfinished phase, how long its oldest request has been in it (seconds): a request stuck in
 * NodeExpansionPending or WaitingForPod shows here while it is stuck, not only once it leaves.
 */
export function oldestPhaseAges(requests: readonly VolumeExpansionRequest[], now: Date): Map<Phase, number> {
  const ages = new Map<Phase, number>();
  for (const r of requests) {
    const phase = r.status?.phase;
    const since = r.status?.phaseSince;
    if (!phase || !since || isFinishedPhase(phase)) continue;
    const age = Math.max(0, (now.getTime() - new Date(since).getTime()) / 1000);
    if (age > (ages.get(phase) ?? -1)) ages.set(phase, age);
  }
  return ages;
}
