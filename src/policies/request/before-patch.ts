// A request before its claim is patched: the claim it is for (the one validated or measured, not
// a later one of its name), its validation, its deadline, its approval, and the one patch of the
// size and class together, carrying the request's record in the claim's annotations.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { pvcAnnotations, requestAnnotations } from '../../crds/keys.ts';
import type { RequestStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { QuantityError, formatBytes, readBytes } from '../../k8s/quantity.ts';
import { claimModifications } from '../budget/budget.ts';
import { defaultDriverProfiles } from '../budget/drivers.ts';
import { ledgerAnnotations } from '../budget/ledger.ts';
import { isFinished } from './phase.ts';
import { policyOf } from './claim-event.ts';
import { validateRequest, type Validation } from './validation.ts';
import { asDryRun, finish, type RequestDecision } from './decision.ts';
import { claimRequest, type ClaimContext, type RequestInput } from './request-input.ts';
import { clock, nextLook, trackEveryMs } from './timing.ts';
import { approval, approvalGuardrail, describePlan, needsApproval, type Plan } from './plan.ts';

/**
 * How long a request waits for the VolumeAttributesClass it names to appear before it is rejected:
 * a class applied together with the request may reach pvx's cache a moment after it, while a
 * misspelt name should be refused soon.
 */
export const missingClassWaitMs = 2 * 60_000;

/**
 * Whether another unfinished request has the claim before this one: created earlier, or the one
 * whose patch the claim carries (its UID annotation) while it follows it — whatever their ages
 * (seed 256575: an older request patched a claim a younger one had patched just before a crash,
 * and the younger, its patch no longer recognised, raised the claim a second time).
 */
function holdsClaimBefore(
  other: VolumeExpansionRequest,
  req: VolumeExpansionRequest,
  claim: V1PersistentVolumeClaim | undefined,
  created: (r: VolumeExpansionRequest) => string,
): boolean {
  if (isFinished(other)) return false;
  return created(other) < created(req) || claim?.metadata?.annotations?.[pvcAnnotations.requestUID] === other.metadata.uid;
}

export function validate(input: RequestInput, pvcName: string, ctx: ClaimContext): Validation {
  const { request: req, now } = input;
  const profiles = input.profiles ?? defaultDriverProfiles;
  const created = (r: VolumeExpansionRequest) => `${new Date(r.metadata.creationTimestamp ?? 0).toISOString()}/${r.metadata.name}`;
  const others = ctx.otherRequests.filter((r) => r.metadata.uid !== req.metadata.uid);
  try {
    return validateRequest({
      spec: req.spec,
      pvcName,
      pvc: ctx.claim,
      storageClass: ctx.storageClass,
      volumeAttributesClass: input.volumeAttributesClass,
      volumeAttributesClassesServed: input.volumeAttributesClassesServed,
      missingClassWaitUntil: new Date(clock(req, now).acceptedAt.getTime() + missingClassWaitMs),
      quotas: ctx.quotas,
      earlierActiveRequests: others.filter((r) => holdsClaimBefore(r, req, ctx.claim, created)).map((r) => r.metadata.name as string),
      modifications: claimModifications(ctx.claim, profiles(ctx.storageClass?.provisioner).modificationBudget, others, now, ctx.claimSeenAt),
      guardrails: ctx.guardrails,
      guardrailsUnknown: ctx.guardrailsUnknown,
      profiles,
      now,
    });
  } catch (err) {
    // A claim, class or quota holding a quantity pvx cannot read: refuse rather than guess.
    if (err instanceof QuantityError) return { kind: 'reject', reason: 'Unreadable', message: `cannot read ${pvcName} or what limits it: ${err.message}` };
    throw err;
  }
}

/** The policy that created the request, in words ("policy grow", "cluster policy fleet"), if one did. */
function requestPolicy(req: VolumeExpansionRequest): string | undefined {
  const policy = policyOf(req);
  if (!policy) return undefined;
  return `${policy.kind === 'ClusterVolumeExpansionPolicy' ? 'cluster policy' : 'policy'} ${policy.name}`;
}

/**
 * How a policy's claim changed since the policy measured it (its capacity then is on the request),
 * in words, or undefined when it has not: asked larger since (by anyone), or of another capacity.
 * A measurement pvx cannot read is no measurement: the request goes on as before it was recorded.
 */
function grownSinceMeasured(req: VolumeExpansionRequest, claim: V1PersistentVolumeClaim | undefined): string | undefined {
  const measuredText = req.metadata.annotations?.[requestAnnotations.measuredCapacity];
  if (!claim || measuredText === undefined) return undefined;
  const measured = readBytes(measuredText);
  const capacity = readBytes(claim.status?.capacity?.storage);
  const requested = readBytes(claim.spec?.resources?.requests?.storage);
  if (measured === undefined) return undefined;
  if (requested !== undefined && requested > measured && (capacity === undefined || requested > capacity)) {
    return `was asked to grow from ${formatBytes(measured)} to ${formatBytes(requested)}`;
  }
  if (capacity !== undefined && capacity !== measured) return `went from ${formatBytes(measured)} to ${formatBytes(capacity)}`;
  return undefined;
}

/**
 * Why a policy's request is not carried out, when the policy that made it is gone: deleted (its
 * requests with it, unless the deletion orphaned them), or another created under its name, whose
 * rules are not the ones that decided this (simulation seed 1401945: a request awaiting approval
 * was approved after its policy had been replaced by one of a smaller maxSize, and grew the claim
 * past it). Checked until the claim is patched.
 */
function policyWithdrawn(input: RequestInput, policy: string | undefined): string | undefined {
  if (!policy || input.askingPolicy?.present !== false) return undefined;
  return `${policy}, which made this request, was deleted (or another was created under its name) before it was carried out: nothing was changed; the policy of that name, if any, decides again from the claim as it is`;
}

/** Why a policy's request asks for more than its policy allows now (its maxSize lowered since): undefined when it does not. */
function abovePolicyMaximum(input: RequestInput, policy: string | undefined, v: Extract<Validation, { kind: 'accept' }>): string | undefined {
  const maxSize = input.askingPolicy?.present ? input.askingPolicy.maxSize : undefined;
  const max = maxSize === undefined ? undefined : readBytes(maxSize);
  if (!policy || max === undefined || v.targetBytes === undefined || v.targetBytes <= max) return undefined;
  return `${policy} allows at most ${formatBytes(max)} now (its maxSize was lowered after it made this request for ${formatBytes(v.targetBytes)}): nothing was changed; the policy decides again from the claim as it is`;
}

/**
 * The plan a request recorded just before patching (status.acceptedPlan: the claim's UID and the
 * sizes), kept whatever the request shows later. Recording it first means that whatever happens
 * between the patch and the status write after it (a crash, a lost answer, the claim deleted and
 * created again), the request knows which claim it may have changed.
 */
function acceptedPlan(status: RequestStatus): Plan | undefined {
  return status.timeline?.patchedAt ? undefined : status.acceptedPlan;
}

/** What every step before the patch reads: the request, its claim as read now, its clock and its records. */
interface Before {
  input: RequestInput;
  ctx: ClaimContext;
  req: VolumeExpansionRequest;
  status: RequestStatus;
  pvcName: string;
  /** The claim of that name now ('' when there is none). */
  pvcUID: string;
  timeline: { acceptedAt: string };
  deadline: Date | undefined;
  now: Date;
  /** The plan recorded just before a patch whose outcome is not known (acceptedPlan). */
  intent: Plan | undefined;
  /** The policy that made the request, in words, if one did. */
  policy: string | undefined;
}

type Accepted = Extract<Validation, { kind: 'accept' }>;

/**
 * A request before its claim is patched, step by step: it is for the claim it was validated or
 * measured on, and its policy still asks for it; then its validation, its deadline, a claim
 * replaced while it waited, a wait the validation names, and — accepted — its plan: nothing to
 * change, a dry run, an approval to wait for, or the one patch.
 */
export function beforePatch(input: RequestInput, ctx: ClaimContext): RequestDecision {
  const b = before(input, ctx);
  return notTheClaimAsked(b) ?? supersededSinceMeasured(b) ?? policyGone(b) ?? acceptedClaimGone(b) ?? afterValidation(b, validate(input, b.pvcName, ctx));
}

function before(input: RequestInput, ctx: ClaimContext): Before {
  const { request: req, now } = input;
  const status = req.status ?? {};
  const { acceptedAt, deadline } = clock(req, now);
  return {
    input,
    ctx,
    req,
    status,
    pvcName: claimRequest(req),
    pvcUID: ctx.claim?.metadata?.uid ?? '',
    timeline: { acceptedAt: acceptedAt.toISOString() },
    deadline,
    now,
    intent: acceptedPlan(status),
    policy: requestPolicy(req),
  };
}

/** A StatefulSet request's child is for the claim its parent validated, a policy's request for the claim the policy measured: not a later one of its name. */
function notTheClaimAsked(b: Before): RequestDecision | undefined {
  const validated = b.req.metadata.annotations?.[requestAnnotations.claimUID];
  if (!validated || validated === b.pvcUID) return undefined;
  const replaced = b.ctx.claim ? `was deleted and created again (uid ${validated} → ${b.pvcUID})` : 'was deleted';
  const after = b.policy
    ? `${b.policy} measured it; the new claim is not grown on that measurement: the policy decides on it afresh`
    : 'its StatefulSet request validated it; the new claim is not grown on that validation: create a new request for it';
  return finish('Failed', b.ctx.claim ? 'PVCReplaced' : 'PVCDeleted', `${b.pvcName} ${replaced} after ${after}`, {
    timeline: b.timeline,
    pvcName: b.pvcName,
  });
}

function supersededSinceMeasured(b: Before): RequestDecision | undefined {
  const superseded = b.policy ? grownSinceMeasured(b.req, b.ctx.claim) : undefined;
  if (!superseded) return undefined;
  return finish(
    'Rejected',
    'Superseded',
    `${b.pvcName} ${superseded} since ${b.policy} measured it; growing it on that measurement would grow it twice for one breach: nothing was changed, and the policy decides again from the claim as it is`,
    { timeline: b.timeline, pvcName: b.pvcName },
  );
}

function policyGone(b: Before): RequestDecision | undefined {
  const withdrawn = b.intent ? undefined : policyWithdrawn(b.input, b.policy);
  return withdrawn ? finish('Rejected', 'PolicyDeleted', withdrawn, { timeline: b.timeline, pvcName: b.pvcName }) : undefined;
}

/**
 * Accepted for a claim that is gone: the patch may have reached it just before its record was
 * lost. Growing the claim now of that name would be a second expansion on one acceptance.
 */
function acceptedClaimGone(b: Before): RequestDecision | undefined {
  const { intent } = b;
  if (!intent || intent.pvcUID === b.pvcUID) return undefined;
  const gone = b.ctx.claim ? `was deleted and created again (uid ${intent.pvcUID} → ${b.pvcUID})` : 'was deleted';
  return finish(
    'Failed',
    b.ctx.claim ? 'PVCReplaced' : 'PVCDeleted',
    `${b.pvcName} ${gone} after this request was accepted for it; the new claim is not grown on that acceptance: create a new request for it`,
    { timeline: b.timeline, pvcName: b.pvcName, ...intent },
  );
}

function afterValidation(b: Before, v: Validation): RequestDecision {
  if (v.kind === 'reject') return finish('Rejected', v.reason, v.message, { timeline: b.timeline, pvcName: b.pvcName });
  const ended = pastDeadline(b) ?? claimReplacedWhileWaiting(b);
  if (ended) return ended;
  if (v.kind === 'wait') {
    return {
      kind: 'status',
      status: { phase: 'Pending', reason: v.reason, message: v.message, pvcName: b.pvcName, pvcUID: b.pvcUID, timeline: b.timeline },
      requeueAfterMs: nextLook(v.retryAfterMs, b.deadline, b.now),
    };
  }
  return accepted(b, v);
}

function pastDeadline(b: Before): RequestDecision | undefined {
  const { deadline, status } = b;
  if (!deadline || b.now < deadline) return undefined;
  const why = status.phase === 'Pending' && status.message ? ` (it was waiting: ${status.message})` : '';
  return finish('Failed', 'DeadlineExceeded', `not started by the deadline ${deadline.toISOString()}${why}; nothing was changed`, {
    timeline: b.timeline,
    pvcName: b.pvcName,
  });
}

/**
 * A wait was recorded for one claim; the claim of that name is now another (deleted and created
 * again). Nothing was patched (no acceptance was recorded): say so and record the new claim before
 * going on, so the request's record always names the claim it is about to change.
 */
function claimReplacedWhileWaiting(b: Before): RequestDecision | undefined {
  const was = b.status.pvcUID;
  if (b.intent || !was || was === b.pvcUID || needsApproval(b.req, b.ctx)) return undefined;
  return {
    kind: 'status',
    status: {
      phase: 'Pending',
      reason: 'ClaimReplaced',
      message: `${b.pvcName} was deleted and created again (uid ${was} → ${b.pvcUID}) while this request waited; validating it again against the new claim`,
      pvcName: b.pvcName,
      pvcUID: b.pvcUID,
      timeline: b.timeline,
    },
    requeueAfterMs: 1000,
  };
}

/** Validated: within its policy's maximum now, then nothing to change, a dry run, an approval to wait for, or the patch. */
function accepted(b: Before, v: Accepted): RequestDecision {
  const aboveMax = b.intent ? undefined : abovePolicyMaximum(b.input, b.policy, v);
  if (aboveMax) return finish('Rejected', 'AbovePolicyMaximum', aboveMax, { timeline: b.timeline, pvcName: b.pvcName });
  if (v.targetBytes === undefined && v.targetClass === undefined) return alreadyApplied(b, v);
  const plan = planOf(b, v);
  const sizes = { pvcName: b.pvcName, ...plan };
  if (b.req.spec.dryRun) {
    return asDryRun(finish('Completed', 'DryRun', `dry run: would ${describePlan(b.pvcName, plan)}; nothing was changed`, { ...sizes, timeline: b.timeline }));
  }
  if (needsApproval(b.req, b.ctx)) {
    const { intent, timeline, deadline, now } = b;
    const waiting = approval(b.req, { plan, intent, sizes, timeline, deadline, now, guardrail: approvalGuardrail(b.ctx) });
    if (waiting) return waiting;
  }
  return claimPatch(b, plan);
}

/** Declarative: the claim already is as asked, which is what the request wanted (a re-applied manifest must not read as a failure); the reason says nothing was done. */
function alreadyApplied(b: Before, v: Accepted): RequestDecision {
  const done = finish(
    'Completed',
    'AlreadyApplied',
    `${b.pvcName} already has VolumeAttributesClass ${b.req.spec.volumeAttributesClassName}; nothing to change`,
    { timeline: b.timeline, pvcName: b.pvcName, pvcUID: b.pvcUID, currentVolumeAttributesClassName: v.fromClass },
  );
  return b.req.spec.dryRun ? asDryRun(done) : done;
}

/**
 * The plan: the claim, from what, to what. The class the request names is in it even when already
 * applied (with a size): the plan's fields then stay the same ones for the request's life, so a
 * shown plan compares whole.
 */
function planOf(b: Before, v: Accepted): Plan {
  const targetClass = b.req.spec.volumeAttributesClassName;
  return {
    pvcUID: b.pvcUID,
    fromCapacity: formatBytes(v.fromBytes),
    ...(v.targetBytes !== undefined ? { targetSize: formatBytes(v.targetBytes) } : {}),
    ...(targetClass !== undefined
      ? { targetVolumeAttributesClassName: targetClass, ...(v.fromClass ? { fromVolumeAttributesClassName: v.fromClass } : {}) }
      : {}),
  };
}

/**
 * The one patch: the size and the class together (one modification of the volume: the EBS driver
 * makes a resize and a class change that arrive together one ModifyVolume), with the request's
 * record in the claim's annotations, the plan recorded first.
 */
function claimPatch(b: Before, plan: Plan): RequestDecision {
  const { pvcName, timeline, deadline } = b;
  const claim = b.ctx.claim as V1PersistentVolumeClaim;
  const sizes = { pvcName, ...plan };
  const phase = plan.targetSize ? 'Expanding' : 'Modifying';
  return {
    kind: 'patch',
    record: { ...sizes, acceptedPlan: plan, phase, reason: 'Accepted', message: `validated: ${describePlan(pvcName, plan)}`, timeline },
    patch: {
      claimName: pvcName,
      uid: b.pvcUID,
      resourceVersion: claim.metadata?.resourceVersion ?? '',
      ...(plan.targetSize ? { storage: plan.targetSize } : {}),
      ...(plan.targetVolumeAttributesClassName ? { volumeAttributesClassName: plan.targetVolumeAttributesClassName } : {}),
      annotations: requestRecord(b, claim, plan),
    },
    event: { reason: 'Patched', message: patchedMessage(pvcName, plan) },
    onPatched: (patchedAt) => ({
      kind: 'status',
      status: {
        ...sizes,
        phase,
        reason: 'WaitingForResizer',
        message: 'the claim was patched; waiting for the external resizer',
        capacity: claim.status?.capacity?.storage,
        timeline: { ...timeline, patchedAt: patchedAt.toISOString() },
      },
      requeueAfterMs: nextLook(trackEveryMs, deadline, patchedAt),
    }),
    onRefused: (code, message) =>
      finish('Rejected', code === 403 ? 'AdmissionDenied' : 'Invalid', `the API server refused the change: ${message}`, { ...sizes, timeline }),
  };
}

/** The request's record in the claim's annotations, written with the patch: which request, from what, to what, and the driver's ledger. */
function requestRecord(b: Before, claim: V1PersistentVolumeClaim, plan: Plan): Record<string, string | null> {
  const { req } = b;
  return {
    [pvcAnnotations.request]: req.metadata.name as string,
    [pvcAnnotations.requestUID]: req.metadata.uid as string,
    [pvcAnnotations.previousCapacity]: plan.fromCapacity,
    // Each target this request does not change is removed: an earlier request's is not this one's.
    [pvcAnnotations.targetSize]: plan.targetSize ?? null,
    ...classAnnotations(plan),
    // A size an earlier request's recovery lowered the claim to is not this request's.
    [pvcAnnotations.recoveredTo]: null,
    ...ledgerAnnotations(
      claim,
      (b.input.profiles ?? defaultDriverProfiles)(b.ctx.storageClass?.provisioner).modificationBudget,
      { request: req.metadata.name as string, size: plan.targetSize, class: plan.targetVolumeAttributesClassName, spends: true },
      b.now,
      b.ctx.claimSeenAt,
    ),
  };
}

/** The claim's record of a class change: the class before ("" for none) and the target; both removed when the plan has none. */
function classAnnotations(plan: Plan): Record<string, string | null> {
  const target = plan.targetVolumeAttributesClassName;
  return {
    [pvcAnnotations.previousVolumeAttributesClass]: target ? (plan.fromVolumeAttributesClassName ?? '') : null,
    [pvcAnnotations.targetVolumeAttributesClass]: target ?? null,
  };
}

/** The Patched Event's message: what the patch changed. */
function patchedMessage(pvcName: string, plan: Plan): string {
  const raised = plan.targetSize ? `raised ${pvcName}'s request from ${plan.fromCapacity} to ${plan.targetSize}` : '';
  const to = plan.targetVolumeAttributesClassName;
  const set =
    to && to !== plan.fromVolumeAttributesClassName
      ? `set ${raised ? 'its' : `${pvcName}'s`} VolumeAttributesClass from ${plan.fromVolumeAttributesClassName ?? '(none)'} to ${to}`
      : '';
  return [raised, set].filter(Boolean).join(' and ');
}
