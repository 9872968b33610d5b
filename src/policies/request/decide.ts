// What a VolumeExpansionRequest should do next: a pure function of the request, the objects it
// reads (its claim, the claim's class, quotas, other requests, pods, the StatefulSet and the
// children of a StatefulSet request) and the clock. It answers with one decision — write this
// status, patch the claim, create these child requests, delete the finished request, or wait —
// and the reconciler (src/operator/reconcilers/expansion-request.ts) only carries it out. Every
// branch is table-tested in decide.test.ts without a client.
//
// This file only dispatches, by stage, each in its own file: before the claim is patched
// (before-patch.ts: validation, approval with plan.ts, the one patch), after it (after-patch.ts:
// the resize followed, recovery.ts, the eviction), and a StatefulSet request's parent
// (statefulset-parent.ts: pins, children, the template step). What a stage reads is
// request-input.ts; its clock, timing.ts; what it answers, decision.ts.
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
import { pvcAnnotations } from '../../crds/keys.ts';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { isFinished } from './phase.ts';
import { holdsRecordFinalizer, templateSpecProblem, withoutRecordFinalizer } from './template.ts';
import { finish, type RequestDecision } from './decision.ts';
import { claimRequest, type RequestInput } from './request-input.ts';
import { beforePatch } from './before-patch.ts';
import { afterPatch } from './after-patch.ts';
import { decideStatefulSet } from './statefulset-parent.ts';

/** What a request changes, as the metrics label it: its size, its VolumeAttributesClass, or both in one patch. */
export function requestChange(spec: Pick<VolumeExpansionRequest['spec'], 'size' | 'increment' | 'volumeAttributesClassName'>): 'size' | 'class' | 'size+class' {
  const size = spec.size !== undefined || spec.increment !== undefined;
  if (spec.volumeAttributesClassName === undefined) return 'size';
  return size ? 'size+class' : 'class';
}

export type { ClaimPatch, RequestDecision, RequestResult } from './decision.ts';
export type { ClaimContext, RequestInput } from './request-input.ts';

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
  if (problem) return finish('Rejected', 'InvalidSpec', problem, { timeline: { acceptedAt: input.now.toISOString() } });
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
