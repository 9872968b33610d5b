// How a request's status moves: the next status from the current one and what a decision wants
// shown, its conditions, and whether anything a reader sees changed. Pure, with the clock passed
// in: the reconciler writes only when `changed` says so, so a reconcile that changes nothing
// writes nothing.
import { runDefaults } from '../../crds/defaults.ts';
import type { Condition, Phase, RequestStatus } from '../../crds/volume-expansion-request.ts';
import { clip, limits } from '../../crds/limits.ts';
import { parseDuration } from '../shared/duration.ts';

/**
 * How long an in-flight step of a healthy expansion may go unshown: as long as the audit takes
 * before it calls a resize stuck (--audit-stuck-after's default). A claim usually passes the
 * resizer and the kubelet in seconds, and under load in minutes; writing each step would cost a
 * status write per step (it did: 2.9 writes per request when 300 ran at once, at 15 s). A step is
 * folded into the next write, which carries its time in the timeline; one that lasts this long
 * is stuck, and shown. A wait, an error or the end is written at once. The steps themselves are
 * read live from the claim (`pvx wait`, `pvx why`), which has them as they happen.
 */
export const showStepAfterMs = parseDuration(runDefaults['audit-stuck-after']) as number;

/** The steps of a healthy expansion (or class change) after the claim's patch: shown late (showStepAfterMs), never as an Event. */
const steps: ReadonlySet<Phase> = new Set(['Expanding', 'ControllerExpanding', 'NodeExpansionPending', 'Modifying']);
const stepReasons = new Set(['WaitingForResizer', 'ControllerResizeInProgress', 'NodeResizePending', 'NodeResizeInProgress', 'ModifyVolumeInProgress']);

/** A patched single-claim request moving normally between the resizer and the kubelet. */
export function isInFlightStep(s: RequestStatus): boolean {
  return Boolean(s.timeline?.patchedAt) && !s.targets && steps.has(s.phase as Phase) && stepReasons.has(s.reason ?? '');
}

/**
 * A phase change worth an Event: not the quiet steps of a healthy expansion (the claim's patch and
 * the end have their own Events), so a request that goes well records two Events.
 */
export function phaseChangeIsNews(s: RequestStatus): boolean {
  return !steps.has(s.phase as Phase) || (!isInFlightStep(s) && s.reason !== 'Accepted');
}

export interface StatusUpdate {
  status: RequestStatus;
  /** Something a reader sees differs from the current status (times of unchanged conditions aside). */
  changed: boolean;
  /** The phase differs from the current one (an Event, a condition transition, a duration). */
  phaseChanged: boolean;
}

export function nextStatus(current: RequestStatus | undefined, next: RequestStatus, now: Date, generation?: number): StatusUpdate {
  const cur = current ?? {};
  const phaseChanged = next.phase !== undefined && next.phase !== cur.phase;
  const merged: RequestStatus = {
    ...cur,
    ...next,
    // The CRD bounds a condition's message, and the conditions repeat it (crds/limits.ts).
    ...(next.message !== undefined ? { message: clip(next.message, limits.conditionMessage) } : {}),
    ...(generation !== undefined ? { observedGeneration: generation } : {}),
    phaseSince: phaseChanged ? now.toISOString() : cur.phaseSince,
  };
  merged.conditions = conditionsFor(merged, cur.conditions ?? [], now, generation);
  return { status: merged, changed: !sameContent(visible(merged), visible(cur)), phaseChanged };
}

/**
 * Accepted: validation passed. Complete: the expansion finished (True), failed or is running
 * (False). TemplateUpdated, for a request that carries its size into a StatefulSet's template:
 * True once it did, False (with why) until then or when it was left as it is.
 */
function conditionsFor(s: RequestStatus, previous: Condition[], now: Date, generation?: number): Condition[] {
  const accepted = s.phase !== 'Rejected' && s.phase !== 'Pending';
  const tpl = s.statefulSetTemplate;
  const wanted: Omit<Condition, 'lastTransitionTime'>[] = [
    {
      type: 'Accepted',
      status: accepted ? 'True' : 'False',
      reason: accepted ? 'Validated' : (s.reason ?? 'Pending'),
      message: accepted ? 'validation passed' : (s.message ?? ''),
    },
    { type: 'Complete', status: s.phase === 'Completed' ? 'True' : 'False', reason: s.reason ?? s.phase ?? 'Unknown', message: s.message ?? '' },
    ...(tpl
      ? [
          {
            type: 'TemplateUpdated',
            status: tpl.phase === 'Updated' ? ('True' as const) : ('False' as const),
            reason: tpl.reason ?? tpl.phase,
            message: tpl.message ?? '',
          },
        ]
      : []),
  ];
  return wanted.map((c) => {
    const old = previous.find((p) => p.type === c.type);
    const lastTransitionTime = old && old.status === c.status ? old.lastTransitionTime : now.toISOString();
    return { ...c, lastTransitionTime, ...(generation !== undefined ? { observedGeneration: generation } : {}) };
  });
}

/** A reader of `written` would see `next` differ (times of conditions that did not transition aside). */
export function differs(written: RequestStatus | undefined, next: RequestStatus): boolean {
  return !sameContent(visible(next), visible(written ?? {}));
}

/** What a reader compares: everything but the transition times of conditions that did not transition. */
function visible(s: RequestStatus): unknown {
  return { ...s, conditions: (s.conditions ?? []).map(({ lastTransitionTime: _t, ...c }) => c) };
}

/**
 * Deep equality of JSON values whatever the order of object keys: the API server returns objects
 * with keys in its own order, so a comparison of serialised text would see a change in every
 * status it sends back and write again.
 */
export function sameContent(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => sameContent(x, b[i]));
  const defined = (o: object) => Object.entries(o).filter(([, v]) => v !== undefined);
  const ea = defined(a);
  const eb = new Map(defined(b));
  return ea.length === eb.size && ea.every(([k, v]) => eb.has(k) && sameContent(v, eb.get(k)));
}
