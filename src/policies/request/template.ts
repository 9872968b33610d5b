// Carrying a StatefulSet request's new size into the StatefulSet's volumeClaimTemplate once every
// replica's claim has grown (spec.statefulSetTemplate.update) — the chore every runbook does by
// hand: `kubectl delete sts --cascade=orphan`, then apply it again with the new size. The request's
// part of it, pure: the request, the StatefulSet as the cache has it, the request's record and the
// clock in; a decision out, whose steps the reconciler carries out one write at a time.
//
// The rules it keeps:
//   - the StatefulSet is recorded, as the API server serves it, in a record pvx keeps in its own
//     namespace (statefulset-record.ts: nothing a tenant writes decides what pvx creates, and
//     nothing a tenant removes loses the StatefulSet); the record keeper (record-keeper.ts) then
//     deletes it with propagation Orphan — its pods and claims stay, and keep running — and creates
//     it again from its last state with the new template size; its pods are adopted (same
//     selector, same pod template and so the same revision) and none restarts;
//   - a StatefulSet owned by another controller, or managed by a GitOps tool, is left as it is
//     unless the request says evenIfManaged: another writer would fight the change (or re-create
//     the StatefulSet its own way); the request says why;
//   - one mid-rollout (a partitioned rolling update, an observed generation behind) waits: a
//     StatefulSet created again starts its current revision at the update revision, which would
//     roll pods the partition holds back;
//   - the template asks for the larger of what the spec asks of it and what every claim has now
//     (the smallest claim's size): the next replica starts as large as the others, and a
//     StatefulSet controller that grows claims to their template (KEP-4650's InPlace) would grow
//     none of them;
//   - the request ends as its record does; the record outlives it only as long as the StatefulSet
//     needs it.
import type { V1StatefulSet } from '@kubernetes/client-node';
import { statefulSetRecordFinalizer } from '../../crds/keys.ts';
import type { RequestStatus, TemplateStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { formatBytes, readBytes } from '../../k8s/quantity.ts';
import type { RequestDecision } from './decision.ts';
import { targetBytes } from './sizing.ts';
import { recordName, recordOf, templateSize, unrecordable, type StatefulSetRecord } from './statefulset-record.ts';

/** What the template step reads. */
export interface TemplateInput {
  request: VolumeExpansionRequest;
  /** The StatefulSet of the request's target as the cache has it. */
  statefulSet: V1StatefulSet | undefined;
  now: Date;
  deadline?: Date;
  /** The request's status once every claim grew (targets, timeline), and what it says of them. */
  claimsDone: RequestStatus & { message: string };
  /** The request's record, as the records' cache has it (undefined: none seen). */
  record?: StatefulSetRecord;
  /** Where pvx keeps records (its own namespace), or undefined when it may not (the opt-in's Role is not granted). */
  recordNamespace?: string;
}

/** A spec the template step cannot act on (the API server refuses it at admission; pvx says so again). */
export function templateSpecProblem(spec: VolumeExpansionRequest['spec']): string | undefined {
  if (!spec.statefulSetTemplate) return undefined;
  if (!spec.target?.statefulSetName) return 'spec.statefulSetTemplate goes with target.statefulSetName (a StatefulSet request)';
  if (spec.statefulSetTemplate.update && spec.size === undefined && spec.increment === undefined)
    return 'a template update carries a size: set spec.size or spec.increment';
  return undefined;
}

/**
 * The request holds the finalizer an earlier pvx set while the request's status held a
 * StatefulSet's record: released at once (the record lives in pvx's namespace now, and no
 * request may hold up its namespace's deletion).
 */
export const holdsRecordFinalizer = (req: VolumeExpansionRequest): boolean => req.metadata.finalizers?.includes(statefulSetRecordFinalizer) ?? false;

/** The request's finalizers without the record's. */
export const withoutRecordFinalizer = (req: VolumeExpansionRequest): string[] =>
  (req.metadata.finalizers ?? []).filter((f) => f !== statefulSetRecordFinalizer);

/** The template step of a StatefulSet request whose claims have all grown. */
export function decideTemplate(t: TemplateInput): RequestDecision {
  const cur = t.request.status?.statefulSetTemplate;
  if (cur?.phase === 'Updated' || cur?.phase === 'Skipped') return done(t, cur);
  const own = t.record?.request.uid === t.request.metadata.uid ? t.record : undefined;
  if (own) return followRecord(t, own);
  if (cur) return recordNotSeen(t, cur);
  return beforeRecord(t);
}

/** The request ends Completed (its claims grew); whether the template followed is its own condition. */
function done(t: TemplateInput, tpl: TemplateStatus): RequestDecision {
  const updated = tpl.phase === 'Updated';
  const timeline = { ...t.claimsDone.timeline, ...(updated && tpl.reason !== 'AlreadyAtSize' ? { templateUpdatedAt: t.now.toISOString() } : {}) };
  return {
    kind: 'finish',
    status: {
      ...t.claimsDone,
      phase: 'Completed',
      reason: updated ? 'Completed' : 'TemplateNotUpdated',
      message: `${t.claimsDone.message}; ${tpl.message ?? ''}`,
      statefulSetTemplate: tpl,
      timeline: t.request.status?.timeline?.templateUpdatedAt ? { ...timeline, templateUpdatedAt: t.request.status.timeline.templateUpdatedAt } : timeline,
    },
    result: 'completed',
  };
}

function skipped(t: TemplateInput, reason: string, message: string, extra: Partial<TemplateStatus> = {}): RequestDecision {
  const spec = t.request.spec;
  return done(t, {
    statefulSetName: spec.target.statefulSetName as string,
    volumeClaimTemplate: spec.target.volumeClaimTemplate as string,
    ...extra,
    phase: 'Skipped',
    reason,
    message,
  });
}

/** The request's status while its record is followed: not finished, whatever else happens. */
function updating(t: TemplateInput, tpl: TemplateStatus): RequestStatus {
  return {
    ...t.claimsDone,
    phase: 'UpdatingTemplate',
    reason: tpl.reason as string,
    message: `${t.claimsDone.message}; ${tpl.message ?? ''}`,
    statefulSetTemplate: tpl,
  };
}

/** The template step as the request shows it, from its record: where the record keeper stands, or how it ended. */
export function templateStatus(r: StatefulSetRecord): TemplateStatus {
  const figures = {
    statefulSetName: r.statefulSet.name,
    volumeClaimTemplate: r.template,
    ...(r.fromSize ? { fromSize: r.fromSize } : {}),
    toSize: r.toSize,
    statefulSetUID: r.statefulSet.uid,
    resourceVersion: r.statefulSet.resourceVersion,
    recordName: `${r.namespace}/${r.name}`,
    reason: r.reason,
    message: r.message,
  };
  if (r.phase === 'Recreated') return { ...figures, phase: 'Updated', ...(r.recreatedUID ? { recreatedUID: r.recreatedUID } : {}) };
  if (r.phase === 'Abandoned')
    return { ...figures, phase: r.reason === 'AlreadyAtSize' ? 'Updated' : 'Skipped', ...(r.recreatedUID ? { recreatedUID: r.recreatedUID } : {}) };
  return { ...figures, phase: r.phase === 'Deleting' ? 'Deleted' : 'Recorded' };
}

/** Recorded: the request shows where its record stands, and ends as it does. */
function followRecord(t: TemplateInput, r: StatefulSetRecord): RequestDecision {
  const tpl = templateStatus(r);
  if (tpl.phase === 'Updated' || tpl.phase === 'Skipped') return done(t, tpl);
  // The record's changes wake the request; the look after 30 s only covers a lost event.
  return { kind: 'status', status: updating(t, tpl), requeueAfterMs: 30_000 };
}

/**
 * The status says a record was made, and the records' cache shows none: it may be behind the
 * create (the API server says), or the record is gone — then nothing of it can be followed, and the
 * request ends saying so (only pvx and the cluster's admins can delete a record).
 */
function recordNotSeen(t: TemplateInput, cur: TemplateStatus): RequestDecision {
  if (!t.recordNamespace) return skipped(t, 'Forbidden', forbidden(t.request.spec.target.statefulSetName as string));
  return {
    kind: 'readRecord',
    namespace: t.recordNamespace,
    name: recordName(t.request.metadata.uid as string),
    onRead: (r) =>
      r && r.request.uid === t.request.metadata.uid
        ? followRecord(t, r)
        : skipped(
            t,
            'RecordMissing',
            `the record of StatefulSet ${cur.statefulSetName} (ConfigMap ${t.recordNamespace}/${recordName(t.request.metadata.uid as string)}) is gone: pvx cannot follow the step it began; check that StatefulSet ${cur.statefulSetName} exists, and create it again from its source if not`,
            figuresOf(cur),
          ),
  };
}

/** What to say when pvx may not take the template step (nothing was touched). */
const forbidden = (name: string, detail = 'pvx keeps no records of StatefulSets (the opt-in’s Role in its namespace is not granted)') =>
  `${detail}: the cluster's admins grant the template step with the chart value statefulSetTemplates.enabled (or the kustomize component config/components/statefulset-templates); StatefulSet ${name} was left as it is`;

/** The size the template takes: what the spec asks of it, or what every claim has now if that is more. */
function toSizeOf(t: TemplateInput, fromBytes: bigint): { bytes: bigint } | { skip: string } {
  const sized = targetBytes(t.request.spec, fromBytes);
  if (!sized.ok) return { skip: sized.message };
  const claims = (t.claimsDone.targets ?? []).map((c) => readBytes(c.targetSize ?? c.capacity)).filter((b): b is bigint => b !== undefined);
  const smallest = claims.length > 0 ? claims.reduce((a, b) => (b < a ? b : a)) : 0n;
  return { bytes: smallest > sized.bytes ? smallest : sized.bytes };
}

/** Before anything is recorded: whether to go on, from the cache's StatefulSet (and, once read, the API server's). */
function beforeRecord(t: TemplateInput): RequestDecision {
  const req = t.request;
  const name = req.spec.target.statefulSetName as string;
  if (req.metadata.deletionTimestamp) return skipped(t, 'RequestDeleted', `the request is being deleted: StatefulSet ${name} was not touched`);
  if (!t.recordNamespace) return skipped(t, 'Forbidden', forbidden(name));
  const checked = eligible(t, t.statefulSet);
  if (checked.kind !== 'go') return checked.decision;
  return {
    kind: 'readStatefulSet',
    name,
    onRead: (fresh) => {
      const again = eligible(t, fresh);
      return again.kind === 'go' ? record(t, fresh as V1StatefulSet, again.toSize) : again.decision;
    },
    onRefused: (code, message) => skipped(t, 'Forbidden', forbidden(name, `pvx may not read StatefulSet ${name} (${code}: ${message})`)),
  };
}

/** Whether the StatefulSet may be recorded now: it exists, its template grows, nobody else manages it, it is steady, the deadline holds. */
function eligible(t: TemplateInput, sts: V1StatefulSet | undefined): { kind: 'go'; toSize: string } | { kind: 'stop'; decision: RequestDecision } {
  const spec = t.request.spec;
  const name = spec.target.statefulSetName as string;
  const template = spec.target.volumeClaimTemplate as string;
  const stop = (decision: RequestDecision) => ({ kind: 'stop' as const, decision });
  if (!sts) return stop(skipped(t, 'StatefulSetNotFound', `StatefulSet ${name} does not exist any more: no template to update`));
  const from = templateSize(sts, template);
  const fromBytes = from === undefined ? undefined : readBytes(from);
  const sized = fromBytes === undefined ? undefined : toSizeOf(t, fromBytes);
  if (sized && 'skip' in sized) return stop(skipped(t, 'InvalidSize', sized.skip));
  const toSize = sized ? formatBytes(sized.bytes) : '';
  const figures = { ...(fromBytes !== undefined ? { fromSize: formatBytes(fromBytes) } : {}), ...(toSize ? { toSize } : {}) };
  const unfit = unrecordable(sts, { name, template, toSize, evenIfManaged: spec.statefulSetTemplate?.evenIfManaged ?? false });
  if (unfit?.alreadyAtSize)
    return stop(done(t, { statefulSetName: name, volumeClaimTemplate: template, ...figures, phase: 'Updated', reason: unfit.reason, message: unfit.message }));
  if (unfit && !unfit.wait) return stop(skipped(t, unfit.reason, unfit.message, figures));
  if (t.deadline && t.now >= t.deadline)
    return stop(
      skipped(
        t,
        'DeadlineExceeded',
        `the deadline ${t.deadline.toISOString()} passed before StatefulSet ${name} was touched: its template still asks for ${from}`,
        figures,
      ),
    );
  if (unfit) {
    const status: RequestStatus = { ...t.claimsDone, phase: 'UpdatingTemplate', reason: unfit.reason, message: `${t.claimsDone.message}; ${unfit.message}` };
    const requeueAfterMs = t.deadline ? Math.max(1, Math.min(15_000, t.deadline.getTime() - t.now.getTime())) : 15_000;
    return stop({ kind: 'status', status, requeueAfterMs });
  }
  return { kind: 'go', toSize };
}

/** Record the StatefulSet as the API server served it, in pvx's namespace; the record keeper takes it from there. */
function record(t: TemplateInput, sts: V1StatefulSet, toSize: string): RequestDecision {
  const req = t.request;
  const name = req.spec.target.statefulSetName as string;
  const template = req.spec.target.volumeClaimTemplate as string;
  const r: StatefulSetRecord = {
    name: recordName(req.metadata.uid as string),
    namespace: t.recordNamespace as string,
    request: { namespace: req.metadata.namespace as string, name: req.metadata.name as string, uid: req.metadata.uid as string },
    statefulSet: { name, uid: sts.metadata?.uid as string, resourceVersion: sts.metadata?.resourceVersion as string },
    template,
    fromSize: formatBytes(readBytes(templateSize(sts, template)) ?? 0n),
    toSize,
    evenIfManaged: req.spec.statefulSetTemplate?.evenIfManaged ?? false,
    ...(t.deadline ? { deadline: t.deadline.toISOString() } : {}),
    phase: 'Recorded',
    reason: 'Recorded',
    message: `StatefulSet ${name} is recorded in pvx's namespace; pvx deletes it with propagation Orphan (its pods keep running) and creates it again with volumeClaimTemplate ${template} at ${toSize}`,
    object: recordOf(sts),
  };
  return {
    kind: 'recordStatefulSet',
    record: r,
    onRecorded: () => ({ kind: 'status', status: updating(t, templateStatus(r)), requeueAfterMs: 30_000 }),
    onRefused: (code, message) => skipped(t, 'Forbidden', forbidden(name, `pvx may not keep a record of StatefulSet ${name} (${code}: ${message})`)),
  };
}

const figuresOf = (tpl: TemplateStatus): Partial<TemplateStatus> => ({
  ...(tpl.fromSize ? { fromSize: tpl.fromSize } : {}),
  ...(tpl.toSize ? { toSize: tpl.toSize } : {}),
});

/** What a StatefulSet request says of its template while its claims grow: the size it carries, or that new replicas start small. */
export function templateNote(req: VolumeExpansionRequest, sts: V1StatefulSet | undefined): string {
  const template = req.spec.target.volumeClaimTemplate as string;
  const tpl = req.status?.statefulSetTemplate;
  const size = templateSize(sts, template) ?? tpl?.fromSize;
  if (req.spec.statefulSetTemplate?.update)
    return `the template${size ? ` (${size})` : ''} follows once every claim has grown (spec.statefulSetTemplate.update)`;
  return size
    ? `new replicas are still created at the template size ${size} (volumeClaimTemplates cannot change)`
    : 'new replicas are still created at the template size (volumeClaimTemplates cannot change)';
}
