// Carrying a StatefulSet request's new size into the StatefulSet's volumeClaimTemplate once every
// replica's claim has grown (spec.statefulSetTemplate.update) — the chore every runbook does by
// hand: `kubectl delete sts --cascade=orphan`, then apply it again with the new size. Pure: the
// request, the StatefulSet as the cache has it and the clock in; a decision out, whose steps the
// reconciler carries out one write at a time.
//
// The rules it keeps:
//   - the StatefulSet is recorded, whole, in the request's status (with its UID and
//     resourceVersion) before it is touched, and deleted only on those preconditions, with
//     propagation Orphan: its pods and claims stay, and keep running;
//   - once recorded and gone, it is created again from the record, whatever happened meanwhile (a
//     crash, a restart, the deadline, the request being deleted: the request holds a finalizer
//     while it holds the record) — so no StatefulSet is ever lost; created identical but for the
//     template's storage request, its pods are adopted (same selector, same pod template and so the
//     same revision) and none restarts;
//   - a StatefulSet owned by another controller, or managed by a GitOps tool, is left as it is
//     unless the request says evenIfManaged: another writer would fight the change (or re-create
//     the StatefulSet its own way); the request says why;
//   - one mid-rollout (a partitioned rolling update, an observed generation behind) waits: a
//     StatefulSet created again starts its current revision at the update revision, which would
//     roll pods the partition holds back.
import type { V1StatefulSet } from '@kubernetes/client-node';
import { statefulSetAnnotations, statefulSetRecordFinalizer } from '../../crds/keys.ts';
import type { RequestStatus, TemplateStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { formatBytes, readBytes } from '../../k8s/quantity.ts';
import type { RequestDecision } from './decision.ts';
import { targetBytes } from './sizing.ts';

/** What the template step reads. */
export interface TemplateInput {
  request: VolumeExpansionRequest;
  /** The StatefulSet of the request's target as the cache has it. */
  statefulSet: V1StatefulSet | undefined;
  now: Date;
  deadline?: Date;
  /** The request's status once every claim grew (targets, timeline), and what it says of them. */
  claimsDone: RequestStatus & { message: string };
}

/** Labels and annotations by which GitOps tools and release managers mark what they manage (and would set back). */
const managerMarkers: { tool: string; label?: string; annotation?: string }[] = [
  { tool: 'Argo CD', annotation: 'argocd.argoproj.io/tracking-id' },
  { tool: 'Argo CD', label: 'argocd.argoproj.io/instance' },
  // Argo CD's label tracking (its default before 3.0); Helm charts set it too.
  { tool: 'Argo CD (label tracking)', label: 'app.kubernetes.io/instance' },
  { tool: 'Flux', label: 'kustomize.toolkit.fluxcd.io/name' },
  { tool: 'Flux', label: 'helm.toolkit.fluxcd.io/name' },
  { tool: 'Helm', annotation: 'meta.helm.sh/release-name' },
  { tool: 'kapp', label: 'kapp.k14s.io/app' },
];

/**
 * Who else manages the StatefulSet, in words, or undefined: a controller that owns it (an
 * ownerReference with controller: true), or a tool whose well-known label or annotation it carries.
 */
export function otherManager(sts: V1StatefulSet): { reason: 'OwnedByController' | 'ManagedByGitOps'; who: string } | undefined {
  const owner = sts.metadata?.ownerReferences?.find((r) => r.controller);
  if (owner) return { reason: 'OwnedByController', who: `owned by ${owner.kind} ${owner.name} (an ownerReference with controller: true)` };
  const labels = sts.metadata?.labels ?? {};
  const annotations = sts.metadata?.annotations ?? {};
  for (const m of managerMarkers) {
    if (m.label && labels[m.label] !== undefined) return { reason: 'ManagedByGitOps', who: `managed by ${m.tool} (label ${m.label}=${labels[m.label]})` };
    if (m.annotation && annotations[m.annotation] !== undefined) return { reason: 'ManagedByGitOps', who: `managed by ${m.tool} (annotation ${m.annotation})` };
  }
  const managedBy = labels['app.kubernetes.io/managed-by'];
  if (managedBy !== undefined) return { reason: 'ManagedByGitOps', who: `managed by ${managedBy} (label app.kubernetes.io/managed-by)` };
  return undefined;
}

/**
 * Why a StatefulSet cannot be created again right now without rolling pods, or undefined: its
 * controller has not observed its latest spec, or a rolling update is under way (a StatefulSet
 * created again takes its update revision as current, and would roll the pods a partition holds).
 * OnDelete leaves pods alone whatever the revisions say.
 */
export function notSteady(sts: V1StatefulSet): string | undefined {
  const generation = sts.metadata?.generation;
  const observed = sts.status?.observedGeneration;
  if (generation !== undefined && (observed === undefined || observed < generation))
    return `its controller has not observed generation ${generation} yet (observed ${observed ?? 'none'})`;
  const { currentRevision, updateRevision } = sts.status ?? {};
  if (sts.spec?.updateStrategy?.type !== 'OnDelete' && currentRevision && updateRevision && currentRevision !== updateRevision) {
    return `a rolling update is under way (current revision ${currentRevision}, update revision ${updateRevision})`;
  }
  return undefined;
}

/** The StatefulSet as it can be created again: metadata the user set, its spec; nothing the server owns. */
export function recordOf(sts: V1StatefulSet): Record<string, unknown> {
  const m = sts.metadata ?? {};
  const finalizers = (m.finalizers ?? []).filter((f) => f !== 'orphan' && f !== 'foregroundDeletion');
  const metadata = {
    name: m.name,
    namespace: m.namespace,
    ...(m.labels ? { labels: m.labels } : {}),
    ...(m.annotations ? { annotations: m.annotations } : {}),
    ...(m.ownerReferences ? { ownerReferences: m.ownerReferences } : {}),
    ...(finalizers.length > 0 ? { finalizers } : {}),
  };
  return JSON.parse(JSON.stringify({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata, spec: sts.spec })) as Record<string, unknown>;
}

/** The StatefulSet to create again: the record, with the template's new size and the request that did it named. */
export function recreated(record: Record<string, unknown>, template: string, toSize: string, req: VolumeExpansionRequest): V1StatefulSet {
  const sts = JSON.parse(JSON.stringify(record)) as V1StatefulSet;
  const vct = sts.spec?.volumeClaimTemplates?.find((t) => t.metadata?.name === template);
  if (vct) vct.spec = { ...vct.spec, resources: { ...vct.spec?.resources, requests: { ...vct.spec?.resources?.requests, storage: toSize } } };
  sts.metadata = {
    ...sts.metadata,
    annotations: {
      ...sts.metadata?.annotations,
      [statefulSetAnnotations.templateRequest]: req.metadata.name as string,
      [statefulSetAnnotations.templateRequestUID]: req.metadata.uid as string,
    },
  };
  return sts;
}

const templateSize = (sts: V1StatefulSet | Record<string, unknown> | undefined, template: string): string | undefined =>
  (sts as V1StatefulSet | undefined)?.spec?.volumeClaimTemplates?.find((t) => t.metadata?.name === template)?.spec?.resources?.requests?.storage;

/** A spec the template step cannot act on (the API server refuses it at admission; pvx says so again). */
export function templateSpecProblem(spec: VolumeExpansionRequest['spec']): string | undefined {
  if (!spec.statefulSetTemplate) return undefined;
  if (!spec.target?.statefulSetName) return 'spec.statefulSetTemplate goes with target.statefulSetName (a StatefulSet request)';
  if (spec.statefulSetTemplate.update && spec.size === undefined && spec.increment === undefined)
    return 'a template update carries a size: set spec.size or spec.increment';
  return undefined;
}

/** The request holds the finalizer that keeps it while its status is a StatefulSet's only record. */
export const holdsRecordFinalizer = (req: VolumeExpansionRequest): boolean => req.metadata.finalizers?.includes(statefulSetRecordFinalizer) ?? false;

/** A StatefulSet is recorded and may be deleted: the request must not end, nor go, before it exists again. */
export const templateInFlight = (s: RequestStatus | undefined): boolean =>
  s?.statefulSetTemplate?.phase === 'Recorded' || s?.statefulSetTemplate?.phase === 'Deleted';

/** The request's finalizers without the record's: what to set once no StatefulSet is left to create again. */
export const withoutRecordFinalizer = (req: VolumeExpansionRequest): string[] =>
  (req.metadata.finalizers ?? []).filter((f) => f !== statefulSetRecordFinalizer);

/** The template step of a StatefulSet request whose claims have all grown. */
export function decideTemplate(t: TemplateInput): RequestDecision {
  const cur = t.request.status?.statefulSetTemplate;
  if (cur?.phase === 'Updated' || cur?.phase === 'Skipped') return done(t, cur);
  if (cur && templateInFlight(t.request.status)) return afterRecord(t, cur);
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
      statefulSetTemplate: { ...tpl, record: null },
      timeline: t.request.status?.timeline?.templateUpdatedAt ? { ...timeline, templateUpdatedAt: t.request.status.timeline.templateUpdatedAt } : timeline,
    },
    result: 'completed',
  };
}

interface Sizes {
  name: string;
  template: string;
  fromSize?: string;
  toSize: string;
}

/** What the step would carry into the template, or why it cannot. */
function sizes(t: TemplateInput, sts: V1StatefulSet): Sizes | { skip: string; reason: string } {
  const spec = t.request.spec;
  const name = spec.target.statefulSetName as string;
  const template = spec.target.volumeClaimTemplate as string;
  const from = templateSize(sts, template);
  if (!sts.spec?.volumeClaimTemplates?.some((v) => v.metadata?.name === template))
    return { reason: 'TemplateNotFound', skip: `StatefulSet ${name} has no volumeClaimTemplate ${template} any more` };
  const fromBytes = from === undefined ? undefined : readBytes(from);
  if (fromBytes === undefined)
    return {
      reason: 'TemplateUnreadable',
      skip: `volumeClaimTemplate ${template} of StatefulSet ${name} asks for ${from ?? 'no size'}, which pvx cannot read`,
    };
  const sized = targetBytes(spec, fromBytes);
  if (!sized.ok) return { reason: 'InvalidSize', skip: sized.message };
  return { name, template, fromSize: formatBytes(fromBytes), toSize: formatBytes(sized.bytes) };
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

/** Before anything is recorded: whether to go on, from the cache's StatefulSet (and, once read, the API server's). */
function beforeRecord(t: TemplateInput): RequestDecision {
  const req = t.request;
  const name = req.spec.target.statefulSetName as string;
  if (req.metadata.deletionTimestamp) return skipped(t, 'RequestDeleted', `the request is being deleted: StatefulSet ${name} was not touched`);
  const checked = eligible(t, t.statefulSet);
  if (checked.kind !== 'go') return checked.decision;
  return {
    kind: 'readStatefulSet',
    name,
    ...(holdsRecordFinalizer(req) ? {} : { addFinalizer: statefulSetRecordFinalizer }),
    onRead: (fresh) => {
      const again = eligible(t, fresh);
      if (again.kind !== 'go') return again.decision;
      return record(t, fresh as V1StatefulSet, again.sizes);
    },
    onRefused: (code, message) => skipped(t, 'Forbidden', forbidden(name, code, message)),
  };
}

/** What to say when the API server refuses pvx the template step (nothing was touched). */
const forbidden = (name: string, code: number, message: string) =>
  `pvx may not read, delete or create StatefulSet ${name} (${code}: ${message}): the cluster's admins grant it with the chart value statefulSetTemplates.enabled (or the kustomize component config/components/statefulset-templates); StatefulSet ${name} was left as it is`;

/** Whether the StatefulSet may be recorded now: it exists, its template grows, nobody else manages it, it is steady, the deadline holds. */
function eligible(t: TemplateInput, sts: V1StatefulSet | undefined): { kind: 'go'; sizes: Sizes } | { kind: 'stop'; decision: RequestDecision } {
  const spec = t.request.spec;
  const name = spec.target.statefulSetName as string;
  const stop = (decision: RequestDecision) => ({ kind: 'stop' as const, decision });
  if (!sts) return stop(skipped(t, 'StatefulSetNotFound', `StatefulSet ${name} does not exist any more: no template to update`));
  const s = sizes(t, sts);
  if ('skip' in s) return stop(skipped(t, s.reason, s.skip));
  const figures = { fromSize: s.fromSize, toSize: s.toSize };
  if ((readBytes(s.fromSize ?? '') ?? 0n) >= (readBytes(s.toSize) ?? 0n)) {
    return stop(
      done(t, {
        statefulSetName: name,
        volumeClaimTemplate: s.template,
        ...figures,
        phase: 'Updated',
        reason: 'AlreadyAtSize',
        message: `volumeClaimTemplate ${s.template} of StatefulSet ${name} already asks for ${s.fromSize}: nothing to change`,
      }),
    );
  }
  const other = otherManager(sts);
  if (other && !spec.statefulSetTemplate?.evenIfManaged) {
    return stop(
      skipped(
        t,
        other.reason,
        `StatefulSet ${name} is ${other.who}: pvx leaves it as it is, since its manager would set the template back or re-create it its own way. Change volumeClaimTemplate ${s.template} to ${s.toSize} in its source (pvx audit shows the drift until then), or set spec.statefulSetTemplate.evenIfManaged on a new request`,
        figures,
      ),
    );
  }
  if (t.deadline && t.now >= t.deadline)
    return stop(
      skipped(
        t,
        'DeadlineExceeded',
        `the deadline ${t.deadline.toISOString()} passed before StatefulSet ${name} was touched: its template still asks for ${s.fromSize}`,
        figures,
      ),
    );
  const busy = notSteady(sts);
  if (busy) {
    const status: RequestStatus = {
      ...t.claimsDone,
      phase: 'UpdatingTemplate',
      reason: 'StatefulSetNotSteady',
      message: `${t.claimsDone.message}; waiting to update volumeClaimTemplate ${s.template} of StatefulSet ${name}: ${busy}`,
    };
    const requeueAfterMs = t.deadline ? Math.max(1, Math.min(15_000, t.deadline.getTime() - t.now.getTime())) : 15_000;
    return stop({ kind: 'status', status, requeueAfterMs });
  }
  return { kind: 'go', sizes: s };
}

/** Record the StatefulSet, then delete it with propagation Orphan on exactly the version recorded. */
function record(t: TemplateInput, sts: V1StatefulSet, s: Sizes): RequestDecision {
  const tpl: TemplateStatus = {
    statefulSetName: s.name,
    volumeClaimTemplate: s.template,
    fromSize: s.fromSize,
    toSize: s.toSize,
    statefulSetUID: sts.metadata?.uid,
    resourceVersion: sts.metadata?.resourceVersion,
    record: recordOf(sts),
    phase: 'Recorded',
    reason: 'Recorded',
    message: `StatefulSet ${s.name} is recorded here; pvx deletes it with propagation Orphan (its pods keep running) and creates it again with volumeClaimTemplate ${s.template} at ${s.toSize}`,
  };
  return {
    kind: 'deleteStatefulSet',
    name: s.name,
    record: updating(t, tpl),
    preconditions: { uid: sts.metadata?.uid as string, resourceVersion: sts.metadata?.resourceVersion as string },
    onDeleted: () => ({ kind: 'status', status: updating(t, deletedPhase(tpl)), requeueAfterMs: 1000 }),
    onRefused: (code, message) => skipped(t, 'Forbidden', forbidden(s.name, code, message), figuresOf(tpl)),
  };
}

const deletedPhase = (tpl: TemplateStatus): TemplateStatus => ({
  ...tpl,
  phase: 'Deleted',
  reason: 'Deleted',
  message: `StatefulSet ${tpl.statefulSetName} is deleted (its pods keep running, orphaned); pvx creates it again from the record here with volumeClaimTemplate ${tpl.volumeClaimTemplate} at ${tpl.toSize}`,
});

/** The request's status while the template step holds a record: not finished, whatever else happens. */
function updating(t: TemplateInput, tpl: TemplateStatus): RequestStatus {
  return {
    ...t.claimsDone,
    phase: 'UpdatingTemplate',
    reason: tpl.reason as string,
    message: `${t.claimsDone.message}; ${tpl.message ?? ''}`,
    statefulSetTemplate: tpl,
  };
}

/**
 * A StatefulSet is recorded: delete it if that has not happened, wait for the garbage collector,
 * create it again. `live`: t.statefulSet was just read from the API server, not the cache.
 */
function afterRecord(t: TemplateInput, cur: TemplateStatus, live = false): RequestDecision {
  const req = t.request;
  const sts = t.statefulSet;
  const name = cur.statefulSetName;
  if (sts && sts.metadata?.uid === cur.statefulSetUID) {
    if (sts.metadata?.deletionTimestamp) {
      // Deleted (by pvx, or its delete's answer was lost): the garbage collector orphans the pods,
      // then it is gone. The cache's word that it is still there may be a watch that lost its
      // DELETED event until the next relist (seed 51084: minutes of looks every 2 s): the API
      // server says, and a StatefulSet it shows still deleting is looked at less often.
      const tpl = cur.phase === 'Deleted' ? cur : deletedPhase(cur);
      if (live) return { kind: 'status', status: updating(t, tpl), requeueAfterMs: 5000 };
      return {
        kind: 'readStatefulSet',
        name,
        onRead: (fresh) => afterRecord({ ...t, statefulSet: fresh }, cur, true),
        onRefused: () => ({ kind: 'status', status: updating(t, tpl), requeueAfterMs: 2000 }),
      };
    }
    const retryDelete: RequestDecision = {
      kind: 'deleteStatefulSet',
      name,
      // Recorded already: the delete is tried again on the record the status holds.
      preconditions: { uid: cur.statefulSetUID as string, resourceVersion: cur.resourceVersion as string },
      onDeleted: () => ({ kind: 'status', status: updating(t, deletedPhase(cur)), requeueAfterMs: 1000 }),
      onRefused: (code, message) => skipped(t, 'Forbidden', forbidden(name, code, message), figuresOf(cur)),
    };
    // Recorded, and untouched as the cache has it: pvx stopped before its delete, or the delete
    // found it changed — tried again on the record's preconditions, which refuse a StatefulSet
    // deleted meanwhile (the cache behind) without touching anything.
    if (!live && cur.phase === 'Recorded' && !req.metadata.deletionTimestamp && sts.metadata?.resourceVersion === cur.resourceVersion && cur.record)
      return retryDelete;
    if (!live) {
      // Anything else the cache says of it (changed since the record, or untouched while the status
      // says it was deleted, or untouched as the request goes) may be a watch behind pvx's own
      // delete: letting go of the record on that word could lose the StatefulSet. The API server
      // says which.
      return {
        kind: 'readStatefulSet',
        name,
        onRead: (fresh) => afterRecord({ ...t, statefulSet: fresh }, cur, true),
        onRefused: (code, message) => ({
          kind: 'status',
          status: updating(t, {
            ...cur,
            message: `pvx may not read StatefulSet ${name} (${code}: ${message}), which this request recorded${cur.phase === 'Deleted' ? ' and deleted' : ''}; it keeps the record and looks again`,
          }),
          requeueAfterMs: 30_000,
        }),
      };
    }
    // Read from the API server: recorded and not deleted (a status that says Deleted cannot be
    // right of a StatefulSet the API server shows untouched under the same UID).
    if (req.metadata.deletionTimestamp)
      return skipped(
        t,
        'RequestDeleted',
        `the request is being deleted: StatefulSet ${name} was recorded but not deleted, and is left as it is`,
        figuresOf(cur),
      );
    if (sts.metadata?.resourceVersion === cur.resourceVersion && cur.record) return retryDelete;
    // Changed since it was recorded (nothing was deleted): record it again as it is now.
    const again = eligible(t, sts);
    return again.kind === 'go' ? record(t, sts, again.sizes) : again.decision;
  }
  if (sts) {
    // Another StatefulSet of the name: pvx's own (its create's answer was lost), or someone else's.
    const ours = sts.metadata?.annotations?.[statefulSetAnnotations.templateRequestUID] === req.metadata.uid;
    const size = templateSize(sts, cur.volumeClaimTemplate);
    const grown = size !== undefined && (readBytes(size) ?? 0n) >= (readBytes(cur.toSize ?? '') ?? 0n);
    if (ours || grown) {
      return done(t, {
        ...cur,
        phase: 'Updated',
        reason: ours ? 'Recreated' : 'RecreatedElsewhere',
        recreatedUID: sts.metadata?.uid,
        message: `StatefulSet ${name} exists again${ours ? '' : ', created by someone else,'} with volumeClaimTemplate ${cur.volumeClaimTemplate} at ${size}; its pods are adopted`,
      });
    }
    return done(t, {
      ...cur,
      phase: 'Skipped',
      reason: 'RecreatedElsewhere',
      recreatedUID: sts.metadata?.uid,
      message: `StatefulSet ${name} was created again by someone else, with volumeClaimTemplate ${cur.volumeClaimTemplate} at ${size ?? 'no size'}: pvx leaves it as it is`,
    });
  }
  // Gone: created again from the record, whatever happened meanwhile — never lost.
  if (!cur.record) {
    return skipped(
      t,
      'RecordMissing',
      `StatefulSet ${name} is gone and this request holds no record of it (status.statefulSetTemplate.record): create it again from its source`,
      figuresOf(cur),
    );
  }
  const tpl = cur.phase === 'Deleted' ? cur : deletedPhase(cur);
  return {
    kind: 'createStatefulSet',
    statefulSet: recreated(cur.record, cur.volumeClaimTemplate, cur.toSize as string, req),
    onCreated: (created) =>
      done(t, {
        ...tpl,
        phase: 'Updated',
        reason: 'Recreated',
        recreatedUID: created.metadata?.uid,
        message: `StatefulSet ${name} was created again with volumeClaimTemplate ${tpl.volumeClaimTemplate} at ${tpl.toSize} (was ${tpl.fromSize}); its pods are adopted, none restarted`,
      }),
    onRefused: (code, message) => ({
      kind: 'status',
      status: updating(t, {
        ...tpl,
        reason: 'CreateRefused',
        message: `StatefulSet ${name} is deleted and the API server refused to create it again (${code}: ${message}); pvx keeps the record here and tries again`,
      }),
      requeueAfterMs: 30_000,
    }),
  };
}

const figuresOf = (tpl: TemplateStatus): Partial<TemplateStatus> => ({
  ...(tpl.fromSize ? { fromSize: tpl.fromSize } : {}),
  ...(tpl.toSize ? { toSize: tpl.toSize } : {}),
});
