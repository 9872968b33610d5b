// A request after its claim is patched: where the expansion stands (the resizer's and the kubelet's
// steps, read from the claim), a driver that keeps refusing, the deadline, recovery from a size out
// of reach, and the pod to evict when the node step waits on a restart.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { pvcAnnotations } from '../../crds/keys.ts';
import type { Phase, RequestStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { QuantityError, formatBytes, parseBytes, readBytes } from '../../k8s/quantity.ts';
import { claimModifications } from '../budget/budget.ts';
import { defaultDriverProfiles, type DriverProfile } from '../budget/drivers.ts';
import { currentClass, modificationState, modifyErrorCondition } from '../claim/modify.ts';
import { derivePhase, type Progress } from './phase.ts';
import { recordedPatchTime } from '../claim/writers.ts';
import { decideEviction } from './eviction.ts';
import { finish, type RequestDecision } from './decision.ts';
import { claimRequest, type ClaimContext, type RequestInput } from './request-input.ts';
import { clock, nextLook, trackEveryMs } from './timing.ts';
import { recover } from './recovery.ts';

/** A driver error (other than a rate limit) that lasts this long ends the request, as an infeasible size does. */
export const defaultDriverErrorTimeoutMs = 60 * 60_000;

const infeasibleReasons = new Set(['ControllerResizeInfeasible', 'NodeResizeInfeasible']);
const driverErrorReasons = new Set(['ControllerResizeError', 'NodeResizeError', modifyErrorCondition]);
/** The reason the driver's rate-limit error shows as (DriverRateLimited for the drivers pvx knows). */
const rateLimitReason = (driver: DriverProfile) => driver.errors.find((e) => e.kind === 'rateLimited')?.reason ?? 'DriverRateLimited';

/** What pvx recorded of its patch (the request's status, else the claim's annotations), with the request's clock. */
interface PatchRecord {
  input: RequestInput;
  ctx: ClaimContext;
  req: VolumeExpansionRequest;
  status: RequestStatus;
  pvc: V1PersistentVolumeClaim | undefined;
  pvcName: string;
  /** The claim's annotations when the request's patch is on it: the plan, after a crash between the patch and the status write. */
  anns: Record<string, string>;
  targetSize: string | undefined;
  targetClass: string | undefined;
  /** The claim the request patched. */
  pvcUID: string;
  acceptedAt: Date;
  deadline: Date | undefined;
  patchedAt: string;
  /** Sizes recovery lowered the claim to, and sizes the API server refused to lower it to. */
  attempted: string[];
  refused: string[];
  /** The size the claim is asked for now: the last recovery lowered it to, else the target. */
  effectiveTarget: string | undefined;
  driver: DriverProfile;
  now: Date;
}

/** Where the expansion stands, and the status every outcome builds on. */
interface After extends PatchRecord {
  progress: Progress;
  base: RequestStatus;
  /** The driver has refused a size for longer than pvx waits (a class refused ends the request otherwise). */
  driverGaveUp: boolean;
}

/**
 * A request after its claim is patched, step by step: what was patched, where the expansion stands
 * (derivePhase) and a driver that keeps refusing; then a size out of reach (raised by someone else,
 * lowered and waited for, recovered from), the end (completed, failed), or the step to follow —
 * and the pod to evict when the node step waits on a restart.
 */
export function afterPatch(input: RequestInput, ctx: ClaimContext, patchedByUs: boolean): RequestDecision {
  const r = patchRecord(input, ctx, patchedByUs);
  if (!r.targetSize && !r.targetClass)
    return finish('Failed', 'TargetUnknown', 'the request was patched but neither its target size nor its VolumeAttributesClass is recorded');
  const a = where(r);
  return outOfReach(a) ?? ended(a) ?? following(a);
}

function patchRecord(input: RequestInput, ctx: ClaimContext, patchedByUs: boolean): PatchRecord {
  const { request: req, now } = input;
  const status = req.status ?? {};
  const pvc = ctx.claim;
  // After a crash between the claim's patch and the status write, the claim's annotations carry the plan.
  const anns = patchedByUs ? (pvc?.metadata?.annotations ?? {}) : {};
  const targetSize = status.targetSize ?? anns[pvcAnnotations.targetSize];
  // After a crash before any status write, the API server's record of the patch is the best
  // account of when the request was accepted and patched (acceptance came first).
  const recorded = status.timeline?.patchedAt ? undefined : recordedPatchTime(pvc);
  const { acceptedAt, deadline } = clock(req, recorded ?? now);
  const attempted = loweredSizes(status, anns);
  return {
    input,
    ctx,
    req,
    status,
    pvc,
    pvcName: claimRequest(req),
    anns,
    targetSize,
    targetClass: status.targetVolumeAttributesClassName ?? anns[pvcAnnotations.targetVolumeAttributesClass],
    pvcUID: patchedClaimUID(status, pvc, patchedByUs),
    acceptedAt,
    deadline,
    patchedAt: status.timeline?.patchedAt ?? (recorded && recorded > acceptedAt ? recorded : acceptedAt).toISOString(),
    attempted,
    // Sizes the API server refused to lower the claim to: never tried again, never waited on.
    refused: status.recovery?.refusedSizes ?? [],
    effectiveTarget: attempted[attempted.length - 1] ?? targetSize,
    driver: (input.profiles ?? defaultDriverProfiles)(ctx.storageClass?.provisioner),
    now,
  };
}

/**
 * The claim the request patched: as recorded with the patch, or — when that status write was lost
 * — the claim carrying the request's UID (a UID recorded while waiting may be an older claim's).
 */
function patchedClaimUID(status: RequestStatus, pvc: V1PersistentVolumeClaim | undefined, patchedByUs: boolean): string {
  return (status.timeline?.patchedAt ? status.pvcUID : undefined) ?? (patchedByUs ? pvc?.metadata?.uid : undefined) ?? status.pvcUID ?? '';
}

/**
 * Sizes recovery lowered the claim to: the request's record, and the claim's own (fresher: the
 * status write that follows a lowering may not be seen yet, or may have been lost).
 */
function loweredSizes(status: RequestStatus, anns: Record<string, string>): string[] {
  const attempted = [...(status.recovery?.attemptedSizes ?? [])];
  const lowered = anns[pvcAnnotations.recoveredTo];
  if (lowered && !attempted.includes(lowered)) attempted.push(lowered);
  return attempted;
}

/**
 * When this request first showed the driver's refusal (status.errorSince), a time the driver's
 * window is measured from: kept with the status, so a restart reads it back.
 */
const shownSince = (r: PatchRecord, reason: string): Date => (r.status.reason === reason && r.status.errorSince ? new Date(r.status.errorSince) : r.now);

/** Where the expansion stands, read from the claim (derivePhase), and the status each outcome builds on. */
function where(r: PatchRecord): After {
  const progress = progressOf(r);
  return { ...r, ...driverRefusal(r, progress, statusBase(r, progress)) };
}

function progressOf(r: PatchRecord): Progress {
  const { pvc, driver, now } = r;
  try {
    return derivePhase({
      pvc,
      pvcUID: r.pvcUID,
      targetBytes: r.effectiveTarget === undefined ? undefined : parseBytes(r.effectiveTarget),
      targetClass: r.targetClass,
      mountedByRunningPod: r.ctx.mountedByRunningPod,
      driver,
      deadline: r.deadline,
      modifications: claimModifications(pvc, driver.modificationBudget, [...r.ctx.otherRequests, r.req], now, r.ctx.claimSeenAt),
      ownModification: `ver/${r.req.metadata.name}`,
      rateLimitedSince: shownSince(r, rateLimitReason(driver)),
      now,
    });
  } catch (err) {
    if (!(err instanceof QuantityError)) throw err;
    return { phase: 'Expanding', reason: 'Unreadable', message: `cannot read the claim's sizes: ${err.message}` };
  }
}

/** The request's figures and times as they stand: the claim, the sizes, the classes, the timeline, recovery's sizes. */
function statusBase(r: PatchRecord, progress: Progress): RequestStatus {
  const { status, pvc, targetSize, targetClass, attempted, refused, now } = r;
  const timeline = { ...status.timeline, acceptedAt: r.acceptedAt.toISOString(), patchedAt: r.patchedAt };
  // Modifying comes after the size is reached.
  const pastController = targetSize !== undefined && ['NodeExpansionPending', 'WaitingForPod', 'Modifying', 'Completed'].includes(progress.phase);
  if (pastController && !timeline.controllerExpandedAt) timeline.controllerExpandedAt = now.toISOString();
  const ours = pvc?.metadata?.uid === r.pvcUID ? pvc : undefined;
  if (targetClass && ours && modificationState(ours, targetClass).stage === 'applied' && !timeline.modifiedAt) timeline.modifiedAt = now.toISOString();
  return {
    pvcName: r.pvcName,
    pvcUID: r.pvcUID,
    targetSize,
    fromCapacity: status.fromCapacity ?? r.anns[pvcAnnotations.previousCapacity],
    capacity: pvc?.status?.capacity?.storage,
    ...(targetClass ? classFigures(status, r.anns, targetClass, ours) : {}),
    timeline,
    ...(attempted.length > 0 || refused.length > 0
      ? {
          recovery: {
            attemptedSizes: attempted,
            ...(refused.length > 0 ? { refusedSizes: refused } : {}),
            reason: status.recovery?.reason ?? progress.message,
          },
        }
      : {}),
  };
}

/**
 * A driver that keeps refusing is as final as an infeasible size: without this, a target no volume
 * can have would wait for ever. A refusal its profile knows to be final (kind 'final') is so at
 * once. Not a rate limit, nor a wait for the driver's previous modification, nor a volume that
 * grows once no pod mounts it: those clear with time or with the pods, and the resizer's retries
 * complete the expansion.
 */
function driverRefusal(r: PatchRecord, progress: Progress, base: RequestStatus): { progress: Progress; base: RequestStatus; driverGaveUp: boolean } {
  const recognised = r.driver.errors.find((e) => e.reason === progress.reason);
  if (!driverErrorReasons.has(progress.reason) && !recognised) return { progress, base, driverGaveUp: false };
  const since = shownSince(r, progress.reason);
  const withSince = { ...base, errorSince: since.toISOString() };
  const limitMs = r.input.driverErrorTimeoutMs ?? defaultDriverErrorTimeoutMs;
  // A refusal the driver's profile knows no retry gets past ends the request at once, saying what to do.
  const final = recognised?.kind === 'final';
  const refusal = !recognised || recognised.kind === 'refused';
  if (!final && (!refusal || r.now.getTime() - since.getTime() < limitMs)) return { progress, base: withSince, driverGaveUp: false };
  return {
    progress: final
      ? { phase: 'Failed', reason: progress.reason, message: `the driver will not make this change until someone acts: ${progress.message}` }
      : { phase: 'Failed', reason: 'DriverKeepsRefusing', message: `the driver has refused for ${Math.round(limitMs / 60_000)} min: ${progress.message}` },
    base: withSince,
    // A size out of reach may be recovered from (spec.recovery); a class the driver keeps refusing ends the request.
    driverGaveUp: progress.reason !== modifyErrorCondition,
  };
}

/**
 * spec.deadline holds in every phase, recovery's included: past it the request ends, and the claim
 * is left as the last write made it (a lowered request goes on without pvx).
 */
const pastDeadline = (a: After): boolean => a.deadline !== undefined && a.now >= a.deadline && a.progress.phase !== 'Completed';
const deadlineExceeded =
  (a: After) =>
  (state: string, extra: RequestStatus = {}): RequestDecision =>
    finish('Failed', 'DeadlineExceeded', `not completed by the deadline ${(a.deadline as Date).toISOString()}: ${state}`, { ...a.base, ...extra });

/** A size out of reach: someone else's raise, a lowering the resizer has not taken up yet, or recovery's next step. */
function outOfReach(a: After): RequestDecision | undefined {
  const { progress } = a;
  if (!(progress.phase === 'Failed' && (infeasibleReasons.has(progress.reason) || a.driverGaveUp))) return undefined;
  return raisedElsewhere(a) ?? loweredNotTakenUp(a) ?? recovering(a);
}

/**
 * The claim asks for more than this request (or its recovery) did: someone else raised it since,
 * and a size out of reach is theirs. pvx lowers only a size it asked for (seed 10285: a request
 * lowered a person's 62Gi to 60Gi, then waited for ever on it once they asked for 65Gi).
 */
function raisedElsewhere(a: After): RequestDecision | undefined {
  const { pvc, pvcName } = a;
  const askedNow = pvc?.metadata?.uid === a.pvcUID ? readBytes(pvc.spec?.resources?.requests?.storage) : undefined;
  const ownAsk = a.effectiveTarget === undefined ? undefined : readBytes(a.effectiveTarget);
  if (askedNow === undefined || ownAsk === undefined || askedNow <= ownAsk) return undefined;
  return finish(
    'Failed',
    a.progress.reason,
    `${pvcName} was raised to ${formatBytes(askedNow)} after this request asked for ${a.effectiveTarget}, and that size is out of reach (${a.progress.message}); pvx lowers only a size it asked for: lower spec.resources.requests.storage of ${pvcName} by hand to a size its driver accepts, above its capacity ${pvc?.status?.capacity?.storage ?? '?'}`,
    a.base,
  );
}

/** Lowered by recovery, and the infeasible status is the old one: the resizer has not acted on the lowered request yet. */
function loweredNotTakenUp(a: After): RequestDecision | undefined {
  const allocated = a.pvc?.status?.allocatedResources?.storage;
  if (a.attempted.length === 0 || a.driverGaveUp || (allocated && readBytes(allocated) === readBytes(a.effectiveTarget))) return undefined;
  if (pastDeadline(a))
    return deadlineExceeded(a)(
      `${a.targetSize} was out of reach and the claim's request was lowered to ${a.effectiveTarget}, which the resizer had not taken up yet`,
    );
  return {
    kind: 'status',
    status: { ...a.base, phase: 'Recovering', reason: 'LoweredRequest', message: `waiting for the resizer to act on the lowered request ${a.effectiveTarget}` },
    // The claim's own events wake the request as the resizer takes the lowered request up; the
    // look at the tracking interval covers one lost. Every 2 s, a resizer down for three minutes
    // made 90 reconciles of one request (seed 2959522).
    requeueAfterMs: nextLook(trackEveryMs, a.deadline, a.now),
  };
}

/** spec.recovery Auto: the claim lowered to the next size to try, or — every size refused — the end, saying so. */
function recovering(a: After): RequestDecision | undefined {
  const { pvc, refused } = a;
  if (a.req.spec.recovery !== 'Auto' || !pvc) return undefined;
  const recovery = recover({
    request: a.req,
    pvc,
    storageClass: a.ctx.storageClass,
    profile: a.driver,
    base: a.base,
    attempted: a.attempted,
    refused,
    why: a.progress.message,
    now: a.now,
    ...(pastDeadline(a) ? { ended: deadlineExceeded(a) } : {}),
  });
  if (recovery || refused.length === 0) return recovery;
  return finish(
    'Failed',
    'RecoveryRefused',
    `${a.targetSize} is out of reach (${a.base.recovery?.reason ?? a.progress.message}) and the API server refused lowering the claim to ${refused.join(', ')}; nothing else is left to try: lower spec.resources.requests.storage of ${a.pvcName} by hand to a size its driver accepts, above its capacity ${pvc.status?.capacity?.storage ?? '?'}`,
    a.base,
  );
}

/** The end: completed (at a lower size after recovery: failed, saying so), or failed. */
function ended(a: After): RequestDecision | undefined {
  const { progress, base } = a;
  if (progress.phase === 'Completed' && a.attempted.length > 0) {
    return finish(
      'Failed',
      'RecoveredAtLowerSize',
      `${a.targetSize} could not be reached (${base.recovery?.reason ?? 'infeasible'}); the claim was lowered to ${a.effectiveTarget} and grew to it`,
      base,
    );
  }
  if (progress.phase === 'Completed') return finish('Completed', progress.reason, progress.message, base);
  if (progress.phase === 'Failed') return finish('Failed', progress.reason, progress.message, base);
  return undefined;
}

/**
 * The step to follow, shown as it stands. Recovering names the story; a wait only a person can end
 * (start a pod) shows as what it is. A node stage the kubelet cannot finish while the volume is in
 * use: the pod to restart (spec.offlineNodeExpansion) — in Recovering too, once recovery lowered
 * the claim and the node step of the lowered size waits on the same restart. An eviction recorded
 * and not known done is followed whatever the claim shows meanwhile.
 */
function following(a: After): RequestDecision {
  const { req, pvc, progress, input, deadline, now } = a;
  const inRecovery = a.attempted.length > 0 && progress.phase !== 'WaitingForPod';
  const shown = { ...a.base, ...progress, ...(inRecovery ? { phase: 'Recovering' as Phase } : {}) };
  const requeueAfterMs = nextLook(trackEveryMs, deadline, now);
  const evictionOpen = req.status?.eviction !== undefined && req.status.eviction.phase !== 'Evicted';
  if (!pvc || (progress.phase !== 'NodeExpansionPending' && !evictionOpen)) return { kind: 'status', status: shown, requeueAfterMs };
  const evicting = decideEviction({
    request: req,
    pvc,
    pods: input.namespacePods?.() ?? [],
    requests: input.namespaceRequests?.() ?? [],
    claimNamed: (name) => input.claim(name).claim,
    ...(input.statefulSetNamed ? { statefulSetNamed: input.statefulSetNamed } : {}),
    shown,
    now,
    requeueAfterMs,
    ...(deadline ? { deadline } : {}),
    ...(input.lastEvictionAttemptAt ? { lastAttemptAt: input.lastEvictionAttemptAt } : {}),
    ...(input.evictionDecidedHere ? { decidedHere: input.evictionDecidedHere } : {}),
  });
  return evicting ?? { kind: 'status', status: shown, requeueAfterMs };
}

/** The status's VolumeAttributesClass fields of a request that sets `targetClass` (only those known: a status field is never unset). */
function classFigures(status: RequestStatus, anns: Record<string, string>, targetClass: string, claim: V1PersistentVolumeClaim | undefined): RequestStatus {
  const from = status.fromVolumeAttributesClassName ?? (anns[pvcAnnotations.previousVolumeAttributesClass] || undefined);
  const current = claim ? currentClass(claim) : undefined;
  return {
    targetVolumeAttributesClassName: targetClass,
    ...(from !== undefined ? { fromVolumeAttributesClassName: from } : {}),
    ...(current !== undefined ? { currentVolumeAttributesClassName: current } : {}),
  };
}
