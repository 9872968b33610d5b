// What a VolumeExpansionRequest should do next: a pure function of the request, the objects it
// reads (its claim, the claim's class, quotas, other requests, pods, the StatefulSet and the
// children of a StatefulSet request) and the clock. It answers with one decision — write this
// status, patch the claim, create these child requests, delete the finished request, or wait —
// and the reconciler (src/operator/reconcilers/expansion-request.ts) only carries it out. Every
// branch is table-tested in request.test.ts without a client.
//
// The rules it keeps:
//   - one patch per request, of the size, the VolumeAttributesClass or both together, carrying the
//     request's UID, the size and class before and the targets in the claim's annotations (the
//     durable record: a restart reads it back, never memory);
//   - a patch only of the claim that was validated (its UID is the patch's precondition), and, for
//     a request awaiting approval, only the plan that was shown (claim UID, from, to);
//   - spec.deadline holds in every phase, waits included;
//   - a StatefulSet request finishes only when every replica's claim has;
//   - after an infeasible target, or a driver that keeps refusing, recovery (spec.recovery Auto)
//     lowers the claim, reading what pvx wrote on the claim as the fresh record.
import type { V1PersistentVolumeClaim, V1Pod, V1ResourceQuota, V1StatefulSet, V1StorageClass, V1VolumeAttributesClass } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { clip, limits } from '../../crds/limits.ts';
import { pvcAnnotations, requestAnnotations, requestLabels } from '../../crds/keys.ts';
import type { Phase, RequestStatus, TargetStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { MiB, QuantityError, formatBytes, parseBytes, readBytes, roundUp } from '../../k8s/quantity.ts';
import { claimModifications } from '../budget/budget.ts';
import { defaultDriverProfiles, type DriverProfile, type DriverProfiles } from '../budget/drivers.ts';
import { parseDuration } from '../shared/duration.ts';
import { currentClass, modificationState, modifyErrorCondition } from '../claim/modify.ts';
import { ledgerAnnotations } from '../budget/ledger.ts';
import { derivePhase, isFinished, isFinishedPhase, type Progress } from './phase.ts';
import { recordedPatchTime } from '../claim/writers.ts';
import { replicaClaimNames, replicaCount } from '../claim/statefulset.ts';
import { policyOf } from './claim-event.ts';
import { targetBytes } from './sizing.ts';
import { validateRequest, type Guardrail, type Validation } from './validation.ts';
import { decideEviction } from './eviction.ts';
import { decideTemplate, holdsRecordFinalizer, templateNote, templateSpecProblem, withoutRecordFinalizer } from './template.ts';
import type { StatefulSetRecord } from './statefulset-record.ts';
import type { RequestDecision, RequestResult } from './decision.ts';

/** How often an unfinished request is looked at again without any event (deadlines, missed events). */
export const trackEveryMs = 30_000;
/** A driver error (other than a rate limit) that lasts this long ends the request, as an infeasible size does. */
export const defaultDriverErrorTimeoutMs = 60 * 60_000;
/**
 * How long a request waits for the VolumeAttributesClass it names to appear before it is rejected:
 * a class applied together with the request may reach pvx's cache a moment after it, while a
 * misspelt name should be refused soon.
 */
export const missingClassWaitMs = 2 * 60_000;

/** Everything about one claim a request for it reads. */
export interface ClaimContext {
  claim: V1PersistentVolumeClaim | undefined;
  storageClass: V1StorageClass | undefined;
  quotas: V1ResourceQuota[];
  /** Every other request that targets the same claim. */
  otherRequests: VolumeExpansionRequest[];
  guardrails: Guardrail[];
  /** Why the guardrails that apply cannot be known yet (see guardrailsUnknown): the request waits. */
  guardrailsUnknown?: string;
  /** A running pod mounts the claim (the node stage can happen). */
  mountedByRunningPod: boolean;
}

export interface RequestInput {
  request: VolumeExpansionRequest;
  /** The context of a claim of the request's namespace, by name (its own claim, or each replica's). */
  claim: (name: string) => ClaimContext;
  /** For a StatefulSet target: the StatefulSet, its child requests, and any request by name (name clashes). */
  statefulSet?: V1StatefulSet;
  children?: VolumeExpansionRequest[];
  requestNamed?: (name: string) => VolumeExpansionRequest | undefined;
  now: Date;
  /** Default defaultDriverErrorTimeoutMs. */
  driverErrorTimeoutMs?: number;
  /** The VolumeAttributesClass spec.volumeAttributesClassName names, as pvx has it (undefined: not found). */
  volumeAttributesClass?: V1VolumeAttributesClass;
  /** False when the cluster does not serve VolumeAttributesClasses to pvx. Default true. */
  volumeAttributesClassesServed?: boolean;
  /** The driver profiles (--modification-budget); default defaultDriverProfiles. */
  profiles?: DriverProfiles;
  /** The pods of the request's namespace (the pod to evict, and its workload's other pods: spec.offlineNodeExpansion); read only when needed. */
  namespacePods?: () => readonly V1Pod[];
  /** Every request of the request's namespace (others evicting a pod of the same workload); read only when needed. */
  namespaceRequests?: () => readonly VolumeExpansionRequest[];
  /** A StatefulSet of the request's namespace by name (which pods its controller creates again). */
  statefulSetNamed?: (name: string) => V1StatefulSet | undefined;
  /** When this process last tried the request's eviction, if it did (a refused one is tried again less and less often). */
  lastEvictionAttemptAt?: Date;
  /** Whether this process decided a request's eviction (by UID) and remembers it (see EvictionInput.decidedHere). */
  evictionDecidedHere?: (requestUID: string) => boolean;
  /** The request's StatefulSet record as cached (spec.statefulSetTemplate.update), if any. */
  statefulSetRecord?: StatefulSetRecord;
  /** Where pvx keeps StatefulSet records (its own namespace); undefined where it may not. */
  recordNamespace?: string;
  /**
   * For a request a policy made (its policy label), that policy as pvx has it now: present (the
   * one its owner reference names, by UID) with its maximum, or not — deleted, or another created
   * under its name. Absent: not a policy's request, or pvx does not read the policies.
   */
  askingPolicy?: { present: true; maxSize?: string } | { present: false };
}

/** What a request changes, as the metrics label it: its size, its VolumeAttributesClass, or both in one patch. */
export function requestChange(spec: Pick<VolumeExpansionRequest['spec'], 'size' | 'increment' | 'volumeAttributesClassName'>): 'size' | 'class' | 'size+class' {
  const size = spec.size !== undefined || spec.increment !== undefined;
  if (spec.volumeAttributesClassName === undefined) return 'size';
  return size ? 'size+class' : 'class';
}

export type { ClaimPatch, RequestDecision, RequestResult } from './decision.ts';

const claimRequest = (req: VolumeExpansionRequest) => req.spec.target.pvcName as string;

export function decideRequest(input: RequestInput): RequestDecision {
  const req = input.request;
  const finished = isFinished(req);
  // A finalizer an earlier pvx held while the request's status was a StatefulSet's record: the
  // record is pvx's own now (template.ts), and no request holds its namespace's deletion up.
  if (holdsRecordFinalizer(req)) {
    return { kind: 'setFinalizers', finalizers: withoutRecordFinalizer(req), then: finished ? expiry(req, input.now) : { kind: 'wait', requeueAfterMs: 1000 } };
  }
  if (finished) return expiry(req, input.now);
  const problem = req.status?.phase ? undefined : templateSpecProblem(req.spec);
  if (problem) return finish('Rejected', 'InvalidSpec', problem, 'rejected', { timeline: { acceptedAt: input.now.toISOString() } });
  if (req.spec.target.statefulSetName) return decideStatefulSet(input);
  const ctx = input.claim(claimRequest(req));
  const patchedByUs = ctx.claim?.metadata?.annotations?.[pvcAnnotations.requestUID] === req.metadata.uid;
  if (!req.status?.timeline?.patchedAt && !patchedByUs) return beforePatch(input, ctx);
  return afterPatch(input, ctx, patchedByUs);
}

/**
 * Finished requests are the audit trail; with ttlSecondsAfterFinished they go after that long,
 * counted from when they finished. A finish time pvx cannot read is never taken as long past:
 * such a request is kept (it is deleted on a reading, never on a guess).
 */
function expiry(req: VolumeExpansionRequest, now: Date): RequestDecision {
  const ttl = req.spec.ttlSecondsAfterFinished;
  if (ttl === undefined) return { kind: 'wait' };
  const finishedAt = [req.status?.phaseSince, req.status?.timeline?.completedAt].map((t) => (t ? Date.parse(t) : Number.NaN)).find(Number.isFinite);
  if (finishedAt === undefined) return { kind: 'wait' };
  const remainingMs = finishedAt + ttl * 1000 - now.getTime();
  return remainingMs > 0 ? { kind: 'wait', requeueAfterMs: remainingMs } : { kind: 'delete' };
}

/**
 * When the request was accepted, and when its deadline passes: first looked at — or, for a
 * StatefulSet request's child, made: its parent accepted it then, and a child pvx sees late (its
 * watch event lost until a relist) does not get a later deadline than the one it was made with.
 */
function clock(req: VolumeExpansionRequest, now: Date): { acceptedAt: Date; deadline?: Date } {
  const created = req.metadata.creationTimestamp as Date | string | undefined;
  const made = req.metadata.labels?.[requestLabels.parent] && created !== undefined ? new Date(created).getTime() : Number.NaN;
  const firstLook = Number.isFinite(made) && made < now.getTime() ? new Date(made) : now;
  const acceptedAt = req.status?.timeline?.acceptedAt ? new Date(req.status.timeline.acceptedAt) : firstLook;
  const deadlineMs = req.spec.deadline ? parseDuration(req.spec.deadline) : undefined;
  return { acceptedAt, ...(deadlineMs !== undefined ? { deadline: new Date(acceptedAt.getTime() + deadlineMs) } : {}) };
}

/** When a request's spec.deadline passes, as its decisions count it, if it has one. */
export const requestDeadline = (req: VolumeExpansionRequest, now: Date): Date | undefined => clock(req, now).deadline;

/** How long until the next look: the usual period, the deadline if it comes first. */
function nextLook(everyMs: number, deadline: Date | undefined, now: Date): number {
  if (!deadline) return everyMs;
  return Math.max(1, Math.min(everyMs, deadline.getTime() - now.getTime()));
}

function finish(
  phase: 'Completed' | 'Failed' | 'Rejected',
  reason: string,
  message: string,
  result: RequestResult,
  extra: RequestStatus = {},
): RequestDecision {
  return { kind: 'finish', status: { ...extra, phase, reason, message }, result };
}

/**
 * Whether another unfinished request has the claim before this one: created earlier, or the one
 * whose patch the claim carries (its UID annotation) while it follows it — whatever their ages
 * (seed 256575: an older request patched a claim a younger one had patched just before a crash,
 * and the younger, its patch no longer recognised, raised the claim a second time).
 */
function holdsClaim(
  other: VolumeExpansionRequest,
  req: VolumeExpansionRequest,
  claim: V1PersistentVolumeClaim | undefined,
  created: (r: VolumeExpansionRequest) => string,
): boolean {
  if (isFinished(other)) return false;
  return created(other) < created(req) || claim?.metadata?.annotations?.[pvcAnnotations.requestUID] === other.metadata.uid;
}

function validate(input: RequestInput, pvcName: string, ctx: ClaimContext): Validation {
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
      earlierActiveRequests: others.filter((r) => holdsClaim(r, req, ctx.claim, created)).map((r) => r.metadata.name as string),
      modifications: claimModifications(ctx.claim, profiles(ctx.storageClass?.provisioner).modificationBudget, others, now),
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

/**
 * The plan an approver approves: which claim, from what, to what — its size, its
 * VolumeAttributesClass, or both (a class from none has no fromVolumeAttributesClassName).
 */
export interface Plan {
  pvcUID: string;
  fromCapacity: string;
  targetSize?: string;
  fromVolumeAttributesClassName?: string;
  targetVolumeAttributesClassName?: string;
}

/**
 * The annotation value that approves exactly this plan: `pvx approve` writes it, and once a plan
 * shown for approval has changed, only it approves (a bare "true" may have been meant for the old one).
 */
export function planToken(p: Plan): string {
  const size = p.targetSize ? `${p.fromCapacity}-to-${p.targetSize}` : p.fromCapacity;
  const vac = p.targetVolumeAttributesClassName ? `-class-${p.fromVolumeAttributesClassName ?? 'none'}-to-${p.targetVolumeAttributesClassName}` : '';
  return `${size}${vac}-${p.pvcUID.slice(0, 8)}`;
}

/**
 * The plan as a reader wants it: "grow data from 1Gi to 2Gi and change its VolumeAttributesClass
 * from gp3 to io2" (a plan always has a size or a class change).
 */
export function describePlan(pvcName: string, p: Omit<Plan, 'pvcUID'>): string {
  const grow = p.targetSize ? `grow ${pvcName} from ${p.fromCapacity} to ${p.targetSize}` : '';
  const to = p.targetVolumeAttributesClassName;
  if (!to) return grow;
  if (p.fromVolumeAttributesClassName === to) return `${grow} (VolumeAttributesClass ${to} is already applied)`;
  const vac = `VolumeAttributesClass from ${p.fromVolumeAttributesClassName ?? '(none)'} to ${to}`;
  return grow ? `${grow} and change its ${vac}` : `change ${pvcName}'s ${vac}`;
}

/** The plan a request shows in its status (the fields have the plan's names): what `pvx approve` approves. */
export function shownPlan(s: RequestStatus, pvcUID: string): Plan {
  return {
    pvcUID,
    fromCapacity: s.fromCapacity ?? '',
    ...(s.targetSize ? { targetSize: s.targetSize } : {}),
    ...(s.fromVolumeAttributesClassName ? { fromVolumeAttributesClassName: s.fromVolumeAttributesClassName } : {}),
    ...(s.targetVolumeAttributesClassName ? { targetVolumeAttributesClassName: s.targetVolumeAttributesClassName } : {}),
  };
}

const approvalRequired = (req: VolumeExpansionRequest) => req.metadata.annotations?.[requestAnnotations.approval] === 'required';
/** The cluster guardrail that requires an approval of every expansion in the request's namespace, if one does. */
const approvalGuardrail = (ctx: Pick<ClaimContext, 'guardrails'>): Guardrail | undefined => ctx.guardrails.find((g) => g.requireApproval);
/** Whether the request waits for an approval: marked so (a policy in Approval mode), or under a guardrail that requires one. */
const needsApproval = (req: VolumeExpansionRequest, ctx: Pick<ClaimContext, 'guardrails'>): boolean =>
  approvalRequired(req) || approvalGuardrail(ctx) !== undefined;
const samePlan = (a: Plan, b: Plan) => planToken(a) === planToken(b) && a.pvcUID === b.pvcUID;
const approvalReasons = new Set(['AwaitingApproval', 'PlanChanged', 'ApprovalWithdrawn']);
/** A request that waits for an approval (of the plan its status shows), by its status. */
export const awaitingApproval = (s: RequestStatus | undefined): boolean => s?.phase === 'Pending' && approvalReasons.has(s.reason ?? '');

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
function abovePolicyMaximum(input: RequestInput, policy: string | undefined, v: Extract<ReturnType<typeof validate>, { kind: 'accept' }>): string | undefined {
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

function beforePatch(input: RequestInput, ctx: ClaimContext): RequestDecision {
  const { request: req, now } = input;
  const status = req.status ?? {};
  const pvcName = claimRequest(req);
  const { acceptedAt, deadline } = clock(req, now);
  const timeline = { acceptedAt: acceptedAt.toISOString() };
  const pvcUID = ctx.claim?.metadata?.uid ?? '';
  const intent = acceptedPlan(status);
  // A StatefulSet request's child is for the claim its parent validated, a policy's request for the
  // claim the policy measured: not a later one of its name.
  const validated = req.metadata.annotations?.[requestAnnotations.claimUID];
  const policy = requestPolicy(req);
  if (validated && validated !== pvcUID) {
    const replaced = ctx.claim ? `was deleted and created again (uid ${validated} → ${pvcUID})` : 'was deleted';
    const after = policy
      ? `${policy} measured it; the new claim is not grown on that measurement: the policy decides on it afresh`
      : 'its StatefulSet request validated it; the new claim is not grown on that validation: create a new request for it';
    return finish('Failed', ctx.claim ? 'PVCReplaced' : 'PVCDeleted', `${pvcName} ${replaced} after ${after}`, 'failed', { timeline, pvcName });
  }
  const superseded = policy ? grownSinceMeasured(req, ctx.claim) : undefined;
  if (superseded) {
    return finish(
      'Rejected',
      'Superseded',
      `${pvcName} ${superseded} since ${policy} measured it; growing it on that measurement would grow it twice for one breach: nothing was changed, and the policy decides again from the claim as it is`,
      'rejected',
      { timeline, pvcName },
    );
  }
  const withdrawn = intent ? undefined : policyWithdrawn(input, policy);
  if (withdrawn) return finish('Rejected', 'PolicyDeleted', withdrawn, 'rejected', { timeline, pvcName });
  if (intent && intent.pvcUID !== pvcUID) {
    // Accepted for a claim that is gone: the patch may have reached it just before its record was
    // lost. Growing the claim now of that name would be a second expansion on one acceptance.
    const gone = ctx.claim ? `was deleted and created again (uid ${intent.pvcUID} → ${pvcUID})` : 'was deleted';
    return finish(
      'Failed',
      ctx.claim ? 'PVCReplaced' : 'PVCDeleted',
      `${pvcName} ${gone} after this request was accepted for it; the new claim is not grown on that acceptance: create a new request for it`,
      'failed',
      { timeline, pvcName, ...intent },
    );
  }
  const v = validate(input, pvcName, ctx);
  if (v.kind === 'reject') return finish('Rejected', v.reason, v.message, 'rejected', { timeline, pvcName });
  if (deadline && now >= deadline) {
    const why = status.phase === 'Pending' && status.message ? ` (it was waiting: ${status.message})` : '';
    return finish('Failed', 'DeadlineExceeded', `not started by the deadline ${deadline.toISOString()}${why}; nothing was changed`, 'failed', {
      timeline,
      pvcName,
    });
  }
  // A wait was recorded for one claim; the claim of that name is now another (deleted and created
  // again). Nothing was patched (no acceptance was recorded): say so and record the new claim
  // before going on, so the request's record always names the claim it is about to change.
  if (!intent && status.pvcUID && status.pvcUID !== pvcUID && !needsApproval(req, ctx)) {
    return {
      kind: 'status',
      status: {
        phase: 'Pending',
        reason: 'ClaimReplaced',
        message: `${pvcName} was deleted and created again (uid ${status.pvcUID} → ${pvcUID}) while this request waited; validating it again against the new claim`,
        pvcName,
        pvcUID,
        timeline,
      },
      requeueAfterMs: 1000,
    };
  }
  if (v.kind === 'wait') {
    return {
      kind: 'status',
      status: { phase: 'Pending', reason: v.reason, message: v.message, pvcName, pvcUID, timeline },
      requeueAfterMs: nextLook(v.retryAfterMs, deadline, now),
    };
  }
  const aboveMax = intent ? undefined : abovePolicyMaximum(input, policy, v);
  if (aboveMax) return finish('Rejected', 'AbovePolicyMaximum', aboveMax, 'rejected', { timeline, pvcName });
  if (v.targetBytes === undefined && v.targetClass === undefined) {
    // Declarative: the claim already is as asked, which is what the request wanted (a re-applied
    // manifest must not read as a failure); the reason says nothing was done.
    return finish(
      'Completed',
      'AlreadyApplied',
      `${pvcName} already has VolumeAttributesClass ${req.spec.volumeAttributesClassName}; nothing to change`,
      req.spec.dryRun ? 'dry_run' : 'completed',
      {
        timeline,
        pvcName,
        pvcUID,
        currentVolumeAttributesClassName: v.fromClass,
      },
    );
  }
  // The class the request names is in its plan even when already applied (with a size): the
  // plan's fields then stay the same ones for the request's life, so a shown plan compares whole.
  const targetClass = req.spec.volumeAttributesClassName;
  const plan: Plan = {
    pvcUID,
    fromCapacity: formatBytes(v.fromBytes),
    ...(v.targetBytes !== undefined ? { targetSize: formatBytes(v.targetBytes) } : {}),
    ...(targetClass !== undefined
      ? { targetVolumeAttributesClassName: targetClass, ...(v.fromClass ? { fromVolumeAttributesClassName: v.fromClass } : {}) }
      : {}),
  };
  const sizes = { pvcName, ...plan };
  const change = describePlan(pvcName, plan);
  if (req.spec.dryRun) {
    return finish('Completed', 'DryRun', `dry run: would ${change}; nothing was changed`, 'dry_run', { ...sizes, timeline });
  }
  if (needsApproval(req, ctx)) {
    const waiting = approval(req, { plan, intent, sizes, timeline, deadline, now, guardrail: approvalGuardrail(ctx) });
    if (waiting) return waiting;
  }
  const claim = ctx.claim as V1PersistentVolumeClaim;
  return {
    kind: 'patch',
    record: { ...sizes, acceptedPlan: plan, phase: plan.targetSize ? 'Expanding' : 'Modifying', reason: 'Accepted', message: `validated: ${change}`, timeline },
    // The size and the class in one patch: one modification of the volume (the EBS driver makes
    // a resize and a class change that arrive together one ModifyVolume).
    patch: {
      claimName: pvcName,
      uid: pvcUID,
      resourceVersion: claim.metadata?.resourceVersion ?? '',
      ...(plan.targetSize ? { storage: plan.targetSize } : {}),
      ...(plan.targetVolumeAttributesClassName ? { volumeAttributesClassName: plan.targetVolumeAttributesClassName } : {}),
      annotations: {
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
          (input.profiles ?? defaultDriverProfiles)(ctx.storageClass?.provisioner).modificationBudget,
          { request: req.metadata.name as string, size: plan.targetSize, class: plan.targetVolumeAttributesClassName, spends: true },
          now,
        ),
      },
    },
    event: { reason: 'Patched', message: patchedMessage(pvcName, plan) },
    onPatched: (patchedAt) => ({
      kind: 'status',
      status: {
        ...sizes,
        phase: plan.targetSize ? 'Expanding' : 'Modifying',
        reason: 'WaitingForResizer',
        message: 'the claim was patched; waiting for the external resizer',
        capacity: claim.status?.capacity?.storage,
        timeline: { ...timeline, patchedAt: patchedAt.toISOString() },
      },
      requeueAfterMs: nextLook(trackEveryMs, deadline, patchedAt),
    }),
    onRefused: (code, message) =>
      finish('Rejected', code === 403 ? 'AdmissionDenied' : 'Invalid', `the API server refused the change: ${message}`, 'rejected', { ...sizes, timeline }),
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

/**
 * For a request that needs approval: what to show while it waits, or undefined once the plan now
 * is the plan that was shown and approved. An approval names the plan (`pvx approve` writes its
 * token); a bare "true" approves only the first plan ever shown.
 */
function approval(
  req: VolumeExpansionRequest,
  w: {
    plan: Plan;
    intent: Plan | undefined;
    sizes: RequestStatus;
    timeline: RequestStatus['timeline'];
    deadline: Date | undefined;
    now: Date;
    /** The cluster guardrail that requires the approval, when the request is not marked for one. */
    guardrail: Guardrail | undefined;
  },
): RequestDecision | undefined {
  const { plan, intent, sizes, timeline, deadline, now } = w;
  const status = req.status ?? {};
  // Why it waits, when its creator did not ask for an approval: a cluster guardrail did.
  const why =
    w.guardrail && !approvalRequired(req)
      ? `ClusterVolumeExpansionPolicy ${w.guardrail.policy} requires an approval of every expansion in namespace ${req.metadata.namespace}: `
      : '';
  const pvcName = claimRequest(req);
  const token = planToken(plan);
  const approve = `kubectl annotate --overwrite ver ${req.metadata.name} ${requestAnnotations.approved}=${token}`;
  const approvedValue = req.metadata.annotations?.[requestAnnotations.approved];
  const requeueAfterMs = deadline ? nextLook(Number.MAX_SAFE_INTEGER, deadline, now) : undefined;
  // The plan the request shows for approval, else the one it accepted once approved.
  const showing = awaitingApproval(status) && status.pvcUID ? shownPlan(status, status.pvcUID) : undefined;
  const shown = showing ?? intent;
  if (shown && !samePlan(shown, plan)) {
    // The claim changed since the plan was shown (re-created, grown, resized): an approval given
    // for the old plan must not approve this one.
    const was = `${describePlan('the claim', shown)}, claim ${shown.pvcUID}`;
    return {
      kind: 'status',
      status: {
        ...sizes,
        phase: 'Pending',
        reason: 'PlanChanged',
        message: `${why}the claim changed since the plan was shown (${was}); would now ${describePlan(pvcName, plan)}; approve this plan with: ${approve}`,
        timeline,
      },
      requeueAfterMs,
    };
  }
  // Accepted after its approval, and unchanged since: the approval is read again at the moment of
  // the patch, from the approval itself — one taken back since (the annotation removed or changed)
  // stops it. A bare "true" could only have approved a plan never changed, which this one is.
  const stillApproved = approvedValue === token || approvedValue === 'true';
  if (!showing && intent && stillApproved) return undefined;
  const approved = showing !== undefined && (approvedValue === token || (approvedValue === 'true' && status.reason === 'AwaitingApproval'));
  if (approved) return undefined;
  // Accepted after an approval that is gone now. (Accepted and never marked for one: a guardrail
  // that requires approval came after the acceptance — it waits for a first approval, below.)
  if (!showing && intent && (approvalRequired(req) || approvedValue !== undefined)) {
    return {
      kind: 'status',
      status: {
        ...sizes,
        phase: 'Pending',
        reason: 'ApprovalWithdrawn',
        message: `the approval was taken back before ${pvcName} was patched: nothing was changed; would ${describePlan(pvcName, plan)}; approve again with: pvx approve ver/${req.metadata.name} -n ${req.metadata.namespace} (or ${approve})`,
        timeline,
      },
      requeueAfterMs,
    };
  }
  return {
    kind: 'status',
    status: {
      ...sizes,
      phase: 'Pending',
      reason: showing ? (status.reason as string) : 'AwaitingApproval',
      message: `${why}would ${describePlan(pvcName, plan)}; approve with: pvx approve ver/${req.metadata.name} -n ${req.metadata.namespace} (or ${approve})`,
      timeline,
    },
    requeueAfterMs,
  };
}

const infeasibleReasons = new Set(['ControllerResizeInfeasible', 'NodeResizeInfeasible']);
const driverErrorReasons = new Set(['ControllerResizeError', 'NodeResizeError', modifyErrorCondition]);
/** The reason the driver's rate-limit error shows as (DriverRateLimited for the drivers pvx knows). */
const rateLimitReason = (driver: DriverProfile) => driver.errors.find((e) => e.kind === 'rateLimited')?.reason ?? 'DriverRateLimited';

function afterPatch(input: RequestInput, ctx: ClaimContext, patchedByUs: boolean): RequestDecision {
  const { request: req, now } = input;
  const status = req.status ?? {};
  const pvc = ctx.claim;
  const pvcName = claimRequest(req);
  // After a crash between the claim's patch and the status write, the claim's annotations carry the plan.
  const anns = patchedByUs ? (pvc?.metadata?.annotations ?? {}) : {};
  const targetSize = status.targetSize ?? anns[pvcAnnotations.targetSize];
  const targetClass = status.targetVolumeAttributesClassName ?? anns[pvcAnnotations.targetVolumeAttributesClass];
  if (!targetSize && !targetClass)
    return finish('Failed', 'TargetUnknown', 'the request was patched but neither its target size nor its VolumeAttributesClass is recorded', 'failed');
  // The claim the request patched: as recorded with the patch, or — when that status write was
  // lost — the claim carrying the request's UID (a UID recorded while waiting may be an older claim's).
  const pvcUID = (status.timeline?.patchedAt ? status.pvcUID : undefined) ?? (patchedByUs ? pvc?.metadata?.uid : undefined) ?? status.pvcUID ?? '';
  // After a crash before any status write, the API server's record of the patch is the best
  // account of when the request was accepted and patched (acceptance came first).
  const recorded = status.timeline?.patchedAt ? undefined : recordedPatchTime(pvc);
  const { acceptedAt, deadline } = clock(req, recorded ?? now);
  const patchedAt = status.timeline?.patchedAt ?? (recorded && recorded > acceptedAt ? recorded : acceptedAt).toISOString();
  // Sizes recovery lowered the claim to: the request's record, and the claim's own (fresher: the
  // status write that follows a lowering may not be seen yet, or may have been lost).
  const attempted = [...(status.recovery?.attemptedSizes ?? [])];
  const lowered = anns[pvcAnnotations.recoveredTo];
  if (lowered && !attempted.includes(lowered)) attempted.push(lowered);
  const effectiveTarget = attempted[attempted.length - 1] ?? targetSize;
  // Sizes the API server refused to lower the claim to: never tried again, never waited on.
  const refused = status.recovery?.refusedSizes ?? [];
  const driver = (input.profiles ?? defaultDriverProfiles)(ctx.storageClass?.provisioner);
  // When this request first showed the driver's refusal (status.errorSince), a time the driver's
  // window is measured from: kept with the status, so a restart reads it back.
  const shownSince = (reason: string) => (status.reason === reason && status.errorSince ? new Date(status.errorSince) : now);
  let progress: Progress;
  try {
    progress = derivePhase({
      pvc,
      pvcUID,
      targetBytes: effectiveTarget === undefined ? undefined : parseBytes(effectiveTarget),
      targetClass,
      mountedByRunningPod: ctx.mountedByRunningPod,
      driver,
      deadline,
      modifications: claimModifications(pvc, driver.modificationBudget, [...ctx.otherRequests, req], now),
      ownModification: `ver/${req.metadata.name}`,
      rateLimitedSince: shownSince(rateLimitReason(driver)),
      now,
    });
  } catch (err) {
    if (!(err instanceof QuantityError)) throw err;
    progress = { phase: 'Expanding', reason: 'Unreadable', message: `cannot read the claim's sizes: ${err.message}` };
  }
  const timeline = { ...status.timeline, acceptedAt: acceptedAt.toISOString(), patchedAt };
  // Modifying comes after the size is reached.
  const pastController = targetSize !== undefined && ['NodeExpansionPending', 'WaitingForPod', 'Modifying', 'Completed'].includes(progress.phase);
  if (pastController && !timeline.controllerExpandedAt) timeline.controllerExpandedAt = now.toISOString();
  const ours = pvc?.metadata?.uid === pvcUID ? pvc : undefined;
  if (targetClass && ours && modificationState(ours, targetClass).stage === 'applied' && !timeline.modifiedAt) timeline.modifiedAt = now.toISOString();
  const base: RequestStatus = {
    pvcName,
    pvcUID,
    targetSize,
    fromCapacity: status.fromCapacity ?? anns[pvcAnnotations.previousCapacity],
    capacity: pvc?.status?.capacity?.storage,
    ...(targetClass ? classFigures(status, anns, targetClass, ours) : {}),
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

  // A driver that keeps refusing is as final as an infeasible size: without this, a target no
  // volume can have would wait for ever. Not a rate limit, nor a wait for the driver's previous
  // modification: those clear with time, and the resizer's retries complete the expansion.
  let driverGaveUp = false;
  const recognised = driver.errors.find((e) => e.reason === progress.reason);
  if (driverErrorReasons.has(progress.reason) || recognised) {
    const since = shownSince(progress.reason);
    base.errorSince = since.toISOString();
    const limitMs = input.driverErrorTimeoutMs ?? defaultDriverErrorTimeoutMs;
    const refusal = !recognised || recognised.kind === 'refused';
    if (refusal && now.getTime() - since.getTime() >= limitMs) {
      // A size out of reach may be recovered from (spec.recovery); a class the driver keeps refusing ends the request.
      driverGaveUp = progress.reason !== modifyErrorCondition;
      progress = {
        phase: 'Failed',
        reason: 'DriverKeepsRefusing',
        message: `the driver has refused for ${Math.round(limitMs / 60_000)} min: ${progress.message}`,
      };
    }
  }
  const unreachable = progress.phase === 'Failed' && (infeasibleReasons.has(progress.reason) || driverGaveUp);
  const allocated = pvc?.status?.allocatedResources?.storage;
  // The claim asks for more than this request (or its recovery) did: someone else raised it since,
  // and a size out of reach is theirs. pvx lowers only a size it asked for (seed 10285: a request
  // lowered a person's 62Gi to 60Gi, then waited for ever on it once they asked for 65Gi).
  const askedNow = pvc?.metadata?.uid === pvcUID ? readBytes(pvc.spec?.resources?.requests?.storage) : undefined;
  const ownAsk = effectiveTarget === undefined ? undefined : readBytes(effectiveTarget);
  const raisedElsewhere = askedNow !== undefined && ownAsk !== undefined && askedNow > ownAsk;
  // spec.deadline holds in every phase, recovery's included: past it the request ends, and the
  // claim is left as the last write made it (a lowered request goes on without pvx).
  const pastDeadline = deadline !== undefined && now >= deadline && progress.phase !== 'Completed';
  const deadlineExceeded = (state: string, extra: RequestStatus = {}): RequestDecision =>
    finish('Failed', 'DeadlineExceeded', `not completed by the deadline ${(deadline as Date).toISOString()}: ${state}`, 'failed', { ...base, ...extra });
  if (unreachable && raisedElsewhere) {
    return finish(
      'Failed',
      progress.reason,
      `${pvcName} was raised to ${formatBytes(askedNow as bigint)} after this request asked for ${effectiveTarget}, and that size is out of reach (${progress.message}); pvx lowers only a size it asked for: lower spec.resources.requests.storage of ${pvcName} by hand to a size its driver accepts, above its capacity ${pvc?.status?.capacity?.storage ?? '?'}`,
      'failed',
      base,
    );
  }
  if (unreachable && attempted.length > 0 && !driverGaveUp && (!allocated || readBytes(allocated) !== readBytes(effectiveTarget))) {
    if (pastDeadline)
      return deadlineExceeded(
        `${targetSize} was out of reach and the claim's request was lowered to ${effectiveTarget}, which the resizer had not taken up yet`,
      );
    // The infeasible status is the old one: the resizer has not acted on the lowered request yet.
    return {
      kind: 'status',
      status: { ...base, phase: 'Recovering', reason: 'LoweredRequest', message: `waiting for the resizer to act on the lowered request ${effectiveTarget}` },
      requeueAfterMs: nextLook(2000, deadline, now),
    };
  }
  if (unreachable && req.spec.recovery === 'Auto' && pvc) {
    const recovery = recover(req, pvc, ctx.storageClass, driver, base, attempted, refused, progress.message, now, pastDeadline ? deadlineExceeded : undefined);
    if (recovery) return recovery;
    if (refused.length > 0) {
      return finish(
        'Failed',
        'RecoveryRefused',
        `${targetSize} is out of reach (${base.recovery?.reason ?? progress.message}) and the API server refused lowering the claim to ${refused.join(', ')}; nothing else is left to try: lower spec.resources.requests.storage of ${pvcName} by hand to a size its driver accepts, above its capacity ${pvc.status?.capacity?.storage ?? '?'}`,
        'failed',
        base,
      );
    }
  }
  if (progress.phase === 'Completed' && attempted.length > 0) {
    return finish(
      'Failed',
      'RecoveredAtLowerSize',
      `${targetSize} could not be reached (${base.recovery?.reason ?? 'infeasible'}); the claim was lowered to ${effectiveTarget} and grew to it`,
      'failed',
      base,
    );
  }
  if (progress.phase === 'Completed') return finish('Completed', progress.reason, progress.message, 'completed', base);
  if (progress.phase === 'Failed') return finish('Failed', progress.reason, progress.message, 'failed', base);
  // Recovering names the story; a wait only a person can end (start a pod) shows as what it is.
  const recovering = attempted.length > 0 && progress.phase !== 'WaitingForPod';
  const shown = { ...base, ...progress, ...(recovering ? { phase: 'Recovering' as Phase } : {}) };
  const requeueAfterMs = nextLook(trackEveryMs, deadline, now);
  // A node stage the kubelet cannot finish while the volume is in use: the pod to restart
  // (spec.offlineNodeExpansion) — in Recovering too, once recovery lowered the claim and the node
  // step of the lowered size waits on the same restart. An eviction recorded and not known done
  // is followed whatever the claim shows meanwhile.
  const evictionOpen = req.status?.eviction !== undefined && req.status.eviction.phase !== 'Evicted';
  const evicting =
    pvc && (progress.phase === 'NodeExpansionPending' || evictionOpen)
      ? decideEviction({
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
        })
      : undefined;
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

/**
 * spec.recovery Auto after a target the driver cannot reach (KEP-1790): lower the claim's request
 * to the largest size the driver profile allows, else to the smallest Kubernetes permits (just
 * above status.capacity), so the claim is not left stuck. Each size is tried once; the API server
 * has the last word: a size it refuses is recorded as refused and the next one is tried.
 * Undefined when there is nothing left to try. Past the deadline (`ended`), the claim is still
 * lowered once, as recovery promises, and the request then ends.
 */
function recover(
  req: VolumeExpansionRequest,
  pvc: V1PersistentVolumeClaim,
  sc: V1StorageClass | undefined,
  profile: DriverProfile,
  base: RequestStatus,
  attempted: string[],
  refused: string[],
  why: string,
  now: Date,
  ended?: (state: string, extra: RequestStatus) => RequestDecision,
): RequestDecision | undefined {
  const name = pvc.metadata?.name as string;
  const capacity = readBytes(pvc.status?.capacity?.storage ?? '0') ?? 0n;
  const requested = readBytes(pvc.spec?.resources?.requests?.storage ?? '0') ?? 0n;
  const unit = profile.granularity > MiB ? profile.granularity : MiB;
  let max: bigint | undefined;
  try {
    max = profile.maxBytes(sc?.parameters ?? {});
  } catch {
    max = undefined;
  }
  const candidates = [max, roundUp(capacity + 1n, unit)].filter((b): b is bigint => b !== undefined && b > capacity && b < requested).map(formatBytes);
  const next = candidates.find((c) => !attempted.includes(c) && !refused.includes(c));
  if (!next) return undefined;
  const recovery = (lowered: string[], refusedSizes: string[]) => ({
    attemptedSizes: lowered,
    ...(refusedSizes.length > 0 ? { refusedSizes } : {}),
    reason: why,
  });
  return {
    kind: 'patch',
    // The size joins attemptedSizes once the API server has lowered the claim to it (refusedSizes
    // if it refused); a lowering whose answer was lost is read back from the claim's own pvx.dev/recovered-to.
    record: {
      ...base,
      phase: 'Recovering',
      reason: 'Lowering',
      message: `${base.targetSize} is out of reach (${why}); lowering the claim's request to ${next}`,
    },
    patch: {
      claimName: name,
      uid: pvc.metadata?.uid ?? '',
      resourceVersion: pvc.metadata?.resourceVersion ?? '',
      storage: next,
      annotations: {
        [pvcAnnotations.recoveredTo]: next,
        ...ledgerAnnotations(pvc, profile.modificationBudget, { request: req.metadata.name as string, size: next, spends: false }, now),
      },
    },
    event: { reason: 'Recovering', message: `${base.targetSize} is out of reach; lowered ${name}'s request to ${next}` },
    onPatched: () => {
      const lowered = { recovery: recovery([...attempted, next], refused) };
      if (ended) return ended(`${base.targetSize} was out of reach (${why}); the claim's request was lowered to ${next} so it is not left stuck`, lowered);
      return {
        kind: 'status',
        status: {
          ...base,
          ...lowered,
          phase: 'Recovering',
          reason: 'LoweredRequest',
          message: `${base.targetSize} is out of reach (${why}); lowered the claim's request to ${next}`,
        },
        requeueAfterMs: trackEveryMs,
      };
    },
    // Refused: remember it as refused and let the next reconcile try the next candidate (or end).
    onRefused: (_code, message) => ({
      kind: 'status',
      status: {
        ...base,
        recovery: recovery(attempted, [...refused, next]),
        phase: 'Recovering',
        reason: 'RecoveryRefused',
        message: `the API server refused lowering the claim to ${next}: ${message}`,
      },
      requeueAfterMs: 1000,
    }),
  };
}

/** The name of a StatefulSet request's child for one replica: readable, unique, a valid object name. */
export function childRequestName(parent: string, ordinal: number): string {
  const suffix = `-${ordinal}`;
  if (parent.length + suffix.length <= 253) return `${parent}${suffix}`;
  const hash = createHash('sha256').update(parent).digest('hex').slice(0, 8);
  return `${parent.slice(0, 253 - suffix.length - hash.length - 1).replace(/[-.]+$/, '')}-${hash}${suffix}`;
}

const rollUpOrder: Phase[] = ['Pending', 'Expanding', 'ControllerExpanding', 'Recovering', 'WaitingForPod', 'NodeExpansionPending', 'Modifying'];

/**
 * A StatefulSet target fans out. Accepting it validates the claim of every live replica (ordinals
 * spec.ordinals.start to start + replicas − 1; all or nothing: one refusal rejects the request and
 * nothing is changed) and pins them in status.targets — each claim's UID, its capacity and the
 * absolute size the spec asks for it, as validated. Then one child request per claim, owned by this
 * one and labelled with it, asks for exactly that size through the single-claim path. So a child
 * made again (its first was deleted, by hand or otherwise) can never grow a claim a second time:
 * it asks for a size the claim already has, which is refused as not larger.
 *
 * A child is made once: the parent records each child it sees (its UID), and a recorded child that
 * is gone is an outcome (its recorded end, or RequestDeleted), not a missing child to create again;
 * so is a child the claim's own annotations show to have patched it. Only a child never seen and
 * never at work is created (again): its first creation failed (an object-count quota, a lost
 * answer). Children carry no TTL of their own: they go with their parent (its TTL deletes it, and
 * the garbage collector its children), so the record of a fan-out is never partly gone. The parent
 * finishes only when every pinned claim's child has.
 */
function decideStatefulSet(input: RequestInput): RequestDecision {
  const { request: req, now } = input;
  const status = req.status ?? {};
  const stsName = req.spec.target.statefulSetName as string;
  const template = req.spec.target.volumeClaimTemplate as string;
  const sts = input.statefulSet;
  const note = templateNote(req, sts);
  const { acceptedAt, deadline } = clock(req, now);
  const timeline = { ...status.timeline, acceptedAt: acceptedAt.toISOString() };

  if (!status.targets?.length) {
    if (!sts) return finish('Rejected', 'StatefulSetNotFound', `StatefulSet ${stsName} does not exist in this namespace`, 'rejected', { timeline });
    const tpl = sts.spec?.volumeClaimTemplates?.find((t) => t.metadata?.name === template);
    if (!tpl) return finish('Rejected', 'TemplateNotFound', `StatefulSet ${stsName} has no volumeClaimTemplate named ${template}`, 'rejected', { timeline });
    const pvcNames = replicaClaimNames(sts, template);
    // Each claim is a target in the status, whose list the CRD bounds (crds/limits.ts).
    if (!pvcNames) {
      return finish(
        'Rejected',
        'TooManyClaims',
        `StatefulSet ${stsName} has ${replicaCount(sts)} replicas; one request grows at most ${limits.targets} claims: grow them with requests for single claims (target.pvcName)`,
        'rejected',
        { timeline },
      );
    }
    if (pvcNames.length === 0) {
      // Nothing live to grow: waiting for a scale-up could take for ever, and the claims kept from
      // earlier replicas are not what "every replica" names now.
      return finish(
        'Rejected',
        'NoReplicas',
        `StatefulSet ${stsName} has no replicas (spec.replicas is 0), so no live claim of template ${template} to grow: scale it up and create the request again, or grow a retained claim by name (spec.target.pvcName)`,
        'rejected',
        { timeline },
      );
    }
    // With spec.statefulSetTemplate.update, a claim already at the size is done, not a refusal:
    // what is asked for is the template to follow claims that have grown (a policy's request too).
    const alreadyAtSize = new Set<string>();
    const refusals = pvcNames.flatMap((pvcName) => {
      const v = validate(input, pvcName, input.claim(pvcName));
      if (v.kind === 'reject' && v.reason === 'NotLarger' && req.spec.statefulSetTemplate?.update) alreadyAtSize.add(pvcName);
      else if (v.kind === 'reject') return [`${pvcName}: ${v.message} (${v.reason})`];
      return [];
    });
    if (refusals.length > 0) return finish('Rejected', 'TargetRejected', `nothing was changed: ${refusals.join('; ')}`, 'rejected', { timeline });
    if (deadline && now >= deadline)
      return finish('Failed', 'DeadlineExceeded', `not started by the deadline ${deadline.toISOString()}; nothing was changed`, 'failed', { timeline });
    // Pinned before any child exists: a partial fan-out is finished later, never validated again.
    return {
      kind: 'status',
      status: {
        phase: 'Expanding',
        reason: 'Accepted',
        message: `validated ${pvcNames.length} claims; creating one request per claim; ${note}`,
        timeline,
        targets: pvcNames.map((pvcName) =>
          alreadyAtSize.has(pvcName)
            ? {
                ...pinTarget(req, pvcName, input.claim(pvcName).claim),
                phase: 'Completed',
                reason: 'AlreadyAtSize',
                message: 'the claim already has the size: no request is made for it',
              }
            : { ...pinTarget(req, pvcName, input.claim(pvcName).claim), phase: 'Pending' },
        ),
      },
      requeueAfterMs: 1000,
    };
  }

  const children = input.children ?? [];
  const childFor = new Map(children.map((c) => [c.spec.target.pvcName as string, c]));
  const parentName = req.metadata.name as string;
  const targets: TargetStatus[] = [];
  const missing: { pvcName: string; name: string; pin: TargetStatus }[] = [];
  status.targets.forEach((pin, i) => {
    const pvcName = pin.pvcName;
    const name = childRequestName(parentName, ordinalOf(pvcName, i));
    const pinned = pinnedFields(pin);
    if (pin.reason === 'AlreadyAtSize' && pin.phase === 'Completed') {
      targets.push(pin);
      return;
    }
    const c = childFor.get(pvcName);
    if (c) {
      targets.push({
        ...pinned,
        requestUID: c.metadata.uid,
        phase: c.status?.phase,
        reason: c.status?.reason,
        message: c.status?.message === undefined ? undefined : clip(c.status.message, limits.itemMessage),
        fromCapacity: c.status?.fromCapacity ?? pin.fromCapacity,
        targetSize: c.status?.targetSize ?? pin.targetSize,
        capacity: c.status?.capacity,
        targetVolumeAttributesClassName: c.status?.targetVolumeAttributesClassName,
      });
      return;
    }
    const gone = goneChild(pin, name, input.claim(pvcName).claim) ?? grownWithoutChild(pin, input.claim(pvcName).claim);
    if (gone) targets.push(gone);
    else {
      targets.push({ ...pinned, phase: 'Pending', reason: 'RequestNotCreated', message: 'its request is not created yet' });
      missing.push({ pvcName, name, pin });
    }
  });
  // A request of the same name that is not this one's child: say so rather than take it for ours.
  const clash = missing.find((m) => input.requestNamed?.(m.name) !== undefined);
  const done = targets.filter((t) => t.phase === 'Completed').length;
  const summary = `${done}/${targets.length} PVCs completed; ${note}`;

  if (missing.length > 0) {
    if (deadline && now >= deadline) {
      return finish(
        'Failed',
        'DeadlineExceeded',
        `${summary}; not every claim's request could be created by the deadline ${deadline.toISOString()} (${missing.map((m) => m.pvcName).join(', ')})`,
        'failed',
        { targets, timeline },
      );
    }
    if (clash) {
      return {
        kind: 'status',
        status: {
          phase: 'Expanding',
          reason: 'ChildNameTaken',
          message: `${summary}; cannot create request ${clash.name} for ${clash.pvcName}: a request of that name exists and is not this one's`,
          targets,
          timeline,
        },
        requeueAfterMs: nextLook(60_000, deadline, now),
      };
    }
    return {
      kind: 'createChildren',
      children: missing.map((m) => childRequest(req, m.name, m.pin)),
      onRefused: (code, message) => ({
        kind: 'status',
        status: {
          phase: 'Expanding',
          reason: 'ChildRequestRefused',
          message: `${summary}; the API server refused to create the request of ${missing.map((m) => m.pvcName).join(', ')} (${code}: ${message}); pvx tries again`,
          targets,
          timeline,
        },
        requeueAfterMs: nextLook(60_000, deadline, now),
      }),
      then: (created) => ({
        kind: 'status',
        status: {
          phase: 'Expanding',
          reason: 'RequestsCreated',
          message: `${summary}; created requests for ${missing.map((m) => m.pvcName).join(', ')}`,
          targets: targets.map((t) =>
            created.has(t.pvcName)
              ? { ...t, requestUID: created.get(t.pvcName), phase: 'Pending', reason: 'RequestCreated', message: 'its request is created' }
              : t,
          ),
          timeline,
        },
        requeueAfterMs: nextLook(trackEveryMs, deadline, now),
      }),
    };
  }

  const unfinished = targets.filter((t) => !isFinishedPhase(t.phase));
  if (unfinished.length === 0) {
    const failed = targets.filter((t) => t.phase !== 'Completed');
    if (failed.length === 0) {
      if (req.spec.statefulSetTemplate?.update)
        return decideTemplate({
          request: req,
          statefulSet: sts,
          now,
          ...(deadline ? { deadline } : {}),
          claimsDone: { targets, timeline, message: summary },
          ...(input.statefulSetRecord ? { record: input.statefulSetRecord } : {}),
          ...(input.recordNamespace ? { recordNamespace: input.recordNamespace } : {}),
        });
      return finish('Completed', 'Completed', summary, 'completed', { targets, timeline });
    }
    return finish('Failed', 'TargetFailed', `${summary}; ${failed.map((t) => `${t.pvcName}: ${t.phase} (${t.reason})`).join('; ')}`, 'failed', {
      targets,
      timeline,
    });
  }
  // The least advanced unfinished child speaks for the request; each child keeps its own deadline.
  const slowest = [...unfinished].sort((a, b) => rollUpOrder.indexOf(a.phase as Phase) - rollUpOrder.indexOf(b.phase as Phase))[0] as TargetStatus;
  return {
    kind: 'status',
    status: {
      phase: (slowest.phase as Phase) ?? 'Expanding',
      reason: slowest.reason ?? 'Expanding',
      message: `${summary}; ${slowest.pvcName}: ${slowest.message ?? ''}`,
      targets,
      timeline,
    },
    requeueAfterMs: trackEveryMs,
  };
}

/**
 * A replica's claim as validated: its UID, its capacity and the absolute size the spec asks for
 * it (increment and percentage applied once, here, rounded as the spec says).
 */
function pinTarget(req: VolumeExpansionRequest, pvcName: string, claim: V1PersistentVolumeClaim | undefined): TargetStatus {
  const capacity = claim?.status?.capacity?.storage;
  const pin: TargetStatus = { pvcName, ...(claim?.metadata?.uid ? { pvcUID: claim.metadata.uid } : {}) };
  const capacityBytes = capacity === undefined ? undefined : readBytes(capacity);
  if (capacityBytes === undefined) return pin;
  pin.fromCapacity = formatBytes(capacityBytes);
  if (req.spec.size === undefined && req.spec.increment === undefined) return pin;
  const sized = targetBytes(req.spec, capacityBytes);
  return sized.ok ? { ...pin, targetSize: formatBytes(sized.bytes) } : pin;
}

/** What the parent keeps of a target whatever its child shows: the claim and sizes as validated. */
function pinnedFields(t: TargetStatus): TargetStatus {
  return {
    pvcName: t.pvcName,
    ...(t.pvcUID ? { pvcUID: t.pvcUID } : {}),
    ...(t.requestUID ? { requestUID: t.requestUID } : {}),
    ...(t.fromCapacity ? { fromCapacity: t.fromCapacity } : {}),
    ...(t.targetSize ? { targetSize: t.targetSize } : {}),
  };
}

/**
 * The outcome of a target whose child is not there but once was: the parent saw it (its UID is
 * recorded), or the claim's annotations show it patched the claim. Undefined when the child never
 * existed (it is to be created).
 */
function goneChild(pin: TargetStatus, name: string, claim: V1PersistentVolumeClaim | undefined): TargetStatus | undefined {
  const anns = claim?.metadata?.annotations ?? {};
  const patchedIt = anns[pvcAnnotations.request] === name && (!pin.pvcUID || claim?.metadata?.uid === pin.pvcUID);
  if (!pin.requestUID && !patchedIt) return undefined;
  const base = pinnedFields(pin);
  if (pin.requestUID && isFinishedPhase(pin.phase)) return { ...pin, ...base };
  const target = pin.targetSize ?? anns[pvcAnnotations.targetSize];
  const capacity = claim?.status?.capacity?.storage;
  const targetB = target === undefined ? undefined : readBytes(target);
  const capacityB = capacity === undefined ? undefined : readBytes(capacity);
  if (targetB !== undefined && capacityB !== undefined && capacityB >= targetB && claim?.metadata?.uid === (pin.pvcUID ?? claim?.metadata?.uid)) {
    return {
      ...base,
      phase: 'Completed',
      reason: 'RequestDeleted',
      message: `its request ${name} was deleted after it patched the claim; the claim reached ${capacity}`,
      capacity,
    };
  }
  return {
    ...base,
    phase: 'Failed',
    reason: 'RequestDeleted',
    message: `its request ${name} was deleted before it finished${pin.phase ? ` (last seen ${pin.phase}${pin.reason ? `/${pin.reason}` : ''})` : ''}; it is not made again, so the claim is not grown twice: the claim is left as it is${capacity ? ` (capacity ${capacity})` : ''}`,
    ...(capacity ? { capacity } : {}),
  };
}

/**
 * A target without a child whose claim asks for the pinned size already: another request (or a
 * person) raised it. A child made now would be refused as not larger, and fail the parent; and
 * the child may have been made before and deleted, its mark on the claim overwritten by the later
 * raise (seed 1211372: the parent's record of it lost, a second request's patch over its mark; the
 * child was made again). None is made: the target is Completed if the capacity is there, else
 * Failed with the claim left to the raise that is under way — as a deleted child's target ends.
 */
function grownWithoutChild(pin: TargetStatus, claim: V1PersistentVolumeClaim | undefined): TargetStatus | undefined {
  const target = pin.targetSize === undefined ? undefined : readBytes(pin.targetSize);
  if (target === undefined || !claim || (pin.pvcUID && claim.metadata?.uid !== pin.pvcUID)) return undefined;
  const requested = readBytes(claim.spec?.resources?.requests?.storage);
  if (requested === undefined || requested < target) return undefined;
  const capacity = claim.status?.capacity?.storage;
  const capacityB = capacity === undefined ? undefined : readBytes(capacity);
  if (capacityB !== undefined && capacityB >= target) {
    return {
      ...pinnedFields(pin),
      phase: 'Completed',
      reason: 'AlreadyAtSize',
      message: `the claim reached ${capacity} without a request of this one's (another raised it): none is made for it`,
      capacity,
    };
  }
  return {
    ...pinnedFields(pin),
    phase: 'Failed',
    reason: 'RaisedByAnother',
    message: `the claim asks for ${claim.spec?.resources?.requests?.storage} already (another request or a person raised it) and has ${capacity ?? 'no capacity'}, not ${pin.targetSize}: no request is made for it, so it is not grown twice; it is left to the raise under way`,
    ...(capacity ? { capacity } : {}),
  };
}

/** The child request for one pinned claim: the parent's spec, asking for the pinned size, without a TTL of its own. */
function childRequest(req: VolumeExpansionRequest, name: string, pin: TargetStatus): VolumeExpansionRequest {
  // The template is the parent's to update, once every child is done: a child targets one claim.
  const { target: _target, ttlSecondsAfterFinished: _ttl, statefulSetTemplate: _template, size, increment, ...rest } = req.spec;
  // Older parents pinned no size: their children ask as the parent does.
  const sizing = pin.targetSize ? { size: pin.targetSize } : { ...(size !== undefined ? { size } : {}), ...(increment !== undefined ? { increment } : {}) };
  return {
    apiVersion: req.apiVersion,
    kind: req.kind,
    metadata: {
      name,
      namespace: req.metadata.namespace,
      labels: { [requestLabels.parent]: req.metadata.name as string },
      annotations: {
        // A request that needs approval fans out into children that each need it: each shows its plan.
        ...(approvalRequired(req) ? { [requestAnnotations.approval]: 'required' } : {}),
        ...(pin.pvcUID ? { [requestAnnotations.claimUID]: pin.pvcUID } : {}),
      },
      ownerReferences: [
        {
          apiVersion: req.apiVersion,
          kind: req.kind,
          name: req.metadata.name as string,
          uid: req.metadata.uid as string,
          // No blockOwnerDeletion: it only holds a foreground deletion of the parent up, and under
          // OwnerReferencesPermissionEnforcement it needs update on volumeexpansionrequests/finalizers,
          // which pvx does not hold — every child would be refused.
          controller: true,
        },
      ],
    },
    spec: { ...rest, ...sizing, target: { pvcName: pin.pvcName } },
  };
}

/** The replica ordinal at the end of a StatefulSet claim's name (<template>-<sts>-<ordinal>). */
function ordinalOf(pvcName: string, fallback: number): number {
  const m = /-(\d+)$/.exec(pvcName);
  return m ? Number(m[1]) : fallback;
}
