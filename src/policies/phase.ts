// The phase of an accepted, patched request, derived from the PVC's state alone (never from
// memory), so it is the same after a restart. Pure, with the clock passed in.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import type { Phase, VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import { formatBytes, parseBytes } from '../k8s/quantity.ts';
import { rateLimitNote, type Modification } from './budget.ts';
import { driverError, type DriverProfile } from './drivers.ts';
import { errorConditions, resizeState, trueCondition } from './resize.ts';

export interface Progress {
  phase: Phase;
  reason: string;
  message: string;
}

export interface PhaseInput {
  pvc: V1PersistentVolumeClaim | undefined;
  /** The UID of the PVC the request patched. */
  pvcUID: string;
  targetBytes: bigint;
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
  now: Date;
}

export function derivePhase(input: PhaseInput): Progress {
  const { pvc, targetBytes } = input;
  if (!pvc) return { phase: 'Failed', reason: 'PVCDeleted', message: 'the PersistentVolumeClaim was deleted before the expansion completed' };
  if (pvc.metadata?.uid !== input.pvcUID) {
    return { phase: 'Failed', reason: 'PVCReplaced', message: `the PersistentVolumeClaim was deleted and created again (uid ${pvc.metadata?.uid}, expected ${input.pvcUID})` };
  }
  const capacity = pvc.status?.capacity?.storage ? parseBytes(pvc.status.capacity.storage) : 0n;
  if (capacity >= targetBytes) return { phase: 'Completed', reason: 'Completed', message: `capacity is ${formatBytes(capacity)}` };

  const state = resizeState(pvc);
  const errorCondition = trueCondition(pvc, ...errorConditions);

  if (state?.stage === 'infeasible') {
    return { phase: 'Failed', reason: state.reason, message: errorCondition?.message ?? `the resize is ${state.reason}` };
  }
  if (input.deadline && input.now >= input.deadline) {
    return { phase: 'Failed', reason: 'DeadlineExceeded', message: `not completed by the deadline ${input.deadline.toISOString()} (capacity ${formatBytes(capacity)})` };
  }

  let progress: Progress;
  // NodeResizeInProgress: the kubelet is at it, so a pod mounts the claim whatever the cache says.
  const nodeWaiting = state?.stage === 'node' && state.reason !== 'NodeResizeInProgress';
  if (state?.stage === 'controller') {
    progress = { phase: 'ControllerExpanding', reason: 'ControllerResizeInProgress', message: 'the CSI driver is expanding the volume (ControllerExpandVolume)' };
  } else if (nodeWaiting && !input.mountedByRunningPod) {
    progress = {
      phase: 'WaitingForPod',
      reason: 'NodeResizePending',
      message: 'the volume grew; its filesystem grows when a pod mounts the claim: start a pod that uses it to finish the expansion',
    };
  } else if (state?.stage === 'node') {
    progress = { phase: 'NodeExpansionPending', reason: state.reason, message: 'waiting for the kubelet to grow the filesystem (NodeExpandVolume)' };
  } else if (state?.stage === 'unknown') {
    progress = { phase: 'Expanding', reason: 'UnknownResizeStatus', message: `unrecognised allocatedResourceStatuses value "${state.reason}"; following the capacity` };
  } else {
    progress = { phase: 'Expanding', reason: 'WaitingForResizer', message: 'the claim was patched; waiting for the external resizer' };
  }
  if (errorCondition) {
    const text = errorCondition.message ?? '';
    const recognised = input.driver ? driverError(input.driver, text) : undefined;
    const meaning = !recognised
      ? ''
      : recognised.kind === 'rateLimited'
        ? `; ${rateLimitNote(input.driver?.modificationBudget, input.modifications ?? [], input.rateLimitedSince ?? input.now, input.now)}`
        : `; ${recognised.meaning}`;
    progress = {
      ...progress,
      reason: recognised?.reason ?? errorCondition.type,
      message: `${progress.message}; retrying after ${errorCondition.type}: ${text}${meaning}`,
    };
  }
  return progress;
}

export const finishedPhases: ReadonlySet<Phase> = new Set(['Completed', 'Failed', 'Rejected']);

/** Accepted (the PVC was patched) and not finished: what `pvx_expansions_in_flight` counts. */
export function inFlight(requests: readonly VolumeExpansionRequest[]): number {
  return requests.filter((r) => r.status?.timeline?.patchedAt && !finishedPhases.has(r.status.phase as Phase)).length;
}

/**
 * Per unfinished phase, how long its oldest request has been in it (seconds): a request stuck in
 * NodeExpansionPending or WaitingForPod shows here while it is stuck, not only once it leaves.
 */
export function oldestPhaseAges(requests: readonly VolumeExpansionRequest[], now: Date): Map<Phase, number> {
  const ages = new Map<Phase, number>();
  for (const r of requests) {
    const phase = r.status?.phase as Phase | undefined;
    const since = r.status?.phaseSince;
    if (!phase || !since || finishedPhases.has(phase)) continue;
    const age = Math.max(0, (now.getTime() - new Date(since).getTime()) / 1000);
    if (age > (ages.get(phase) ?? -1)) ages.set(phase, age);
  }
  return ages;
}
