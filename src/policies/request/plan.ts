// The plan a request shows and an approver approves (which claim, from what, to what), its token,
// and the wait for an approval: shown, changed, withdrawn, or given for exactly this plan.
import { requestAnnotations } from '../../crds/keys.ts';
import type { RequestStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { type Guardrail } from './validation.ts';
import { type RequestDecision } from './decision.ts';
import { claimRequest, type ClaimContext } from './request-input.ts';
import { nextLook } from './timing.ts';

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

export const approvalRequired = (req: VolumeExpansionRequest) => req.metadata.annotations?.[requestAnnotations.approval] === 'required';
/** The cluster guardrail that requires an approval of every expansion in the request's namespace, if one does. */
export const approvalGuardrail = (ctx: Pick<ClaimContext, 'guardrails'>): Guardrail | undefined => ctx.guardrails.find((g) => g.requireApproval);
/** Whether the request waits for an approval: marked so (a policy in Approval mode), or under a guardrail that requires one. */
export const needsApproval = (req: VolumeExpansionRequest, ctx: Pick<ClaimContext, 'guardrails'>): boolean =>
  approvalRequired(req) || approvalGuardrail(ctx) !== undefined;
const samePlan = (a: Plan, b: Plan) => planToken(a) === planToken(b) && a.pvcUID === b.pvcUID;
const approvalReasons = new Set(['AwaitingApproval', 'PlanChanged', 'ApprovalWithdrawn']);
/** A request that waits for an approval (of the plan its status shows), by its status. */
export const awaitingApproval = (s: RequestStatus | undefined): boolean => s?.phase === 'Pending' && approvalReasons.has(s.reason ?? '');

/**
 * For a request that needs approval: what to show while it waits, or undefined once the plan now
 * is the plan that was shown and approved. An approval names the plan (`pvx approve` writes its
 * token); a bare "true" approves only the first plan ever shown.
 */
export function approval(
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
