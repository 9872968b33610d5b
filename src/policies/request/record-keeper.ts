// What the record keeper does with a StatefulSet record (statefulset-record.ts): delete the
// StatefulSet it holds with propagation Orphan, wait for the garbage collector, create it again
// from its last state with the larger template, and let the record go once its request has taken
// the outcome (or is gone). Pure: the record, the StatefulSet as cached (or as just read), the
// namespace and the request in; one decision out, whose steps the reconciler
// (src/operator/reconcilers/statefulset-records.ts) carries out.
//
// The rules it keeps:
//   - nothing is deleted unless it is, at that moment, the StatefulSet recorded (its UID and
//     resourceVersion are the delete's preconditions), still fit to be recorded (unrecordable: not
//     managed by another, steady) — a StatefulSet changed since is recorded again as it is now;
//   - "Deleting" is written before pvx's delete: a deletion seen while the record says "Recorded" is
//     its owner's, and the StatefulSet is never created again; so is one its owner turned into a
//     cascade (the foregroundDeletion finalizer), or any deletion the history shows did not orphan;
//   - once it is gone after pvx's orphaning delete, it is created again from its last state as the
//     API server's history has it — an edit its owner made while it was being deleted included —
//     with the record's template size; when that history is gone (compacted), pvx does not create it
//     from an older state: it says so loudly and leaves the record's last state to a person;
//   - a namespace being deleted is never held, and nothing is created in it — nor in a namespace of
//     the name created since (the namespace's UID is recorded before the delete);
//   - the record outlives its request only as long as it takes to make the StatefulSet whole.
import type { KubernetesObject, V1Namespace, V1StatefulSet } from '@kubernetes/client-node';
import type { DeletePreconditions } from '../../k8s/client.ts';
import type { DeletionHistory } from '../../k8s/client.ts';
import { recordDone, recreated, unrecordable, recordOf, type RecordContent, type StatefulSetRecord } from './statefulset-record.ts';

/** Where the request that asked stands, as the requests' cache has it (its UID checked). */
export type RequestState = 'open' | 'deleting' | 'finished' | 'gone';

export interface RecordInput {
  record: StatefulSetRecord;
  /** The StatefulSet of the record's name as cached, or (live) as just read from the API server. */
  statefulSet: V1StatefulSet | undefined;
  /** The StatefulSet was just read from the API server, not the cache. */
  live?: boolean;
  /** With live: the version of the list it was read in (RecordDecision readStatefulSet). */
  listedAt?: string;
  /** The record's namespace (the StatefulSet's) as cached: being deleted, no create can succeed. */
  namespace: V1Namespace | undefined;
  request: RequestState;
  now: Date;
  /**
   * pvx's delete of the recorded version was refused on its preconditions, or found nothing, in
   * this process: it did not happen, so a deletion seen since is someone else's — kept in memory
   * until the record says so, in case writing that fails (seed 51433).
   */
  ownDeleteRefused?: boolean;
}

export type RecordDecision =
  | { kind: 'wait'; requeueAfterMs?: number }
  /** Read the StatefulSet from the API server in a list by its name (the cache may be behind), and decide again from it and the list's version. */
  | { kind: 'readStatefulSet'; onRead: (sts: V1StatefulSet | undefined, listedAt: string) => RecordDecision }
  /** Write the record as `content` (on its resourceVersion), Events on the request as said, then go on with `then`. */
  | { kind: 'update'; content: RecordContent; event?: RecordEvent; then?: RecordDecision; requeueAfterMs?: number }
  /** Delete the StatefulSet with propagation Orphan on the preconditions (onDeleted: the version it left it at; onRefused: 403, or 404/409: it did not happen). */
  | {
      kind: 'deleteStatefulSet';
      preconditions: DeletePreconditions;
      onDeleted: (resourceVersion: string | undefined) => RecordDecision;
      onRefused: (code: number, message: string) => RecordDecision;
    }
  /** Read how the StatefulSet went: its versions after the recorded one, to its DELETED event. */
  | { kind: 'readDeletion'; fromResourceVersion: string; onRead: (history: DeletionHistory) => RecordDecision }
  /** Create the StatefulSet again; AlreadyExists: look again. */
  | {
      kind: 'createStatefulSet';
      statefulSet: V1StatefulSet;
      onCreated: (created: V1StatefulSet) => RecordDecision;
      /** namespaceGoing: refused as its namespace is being deleted, or is gone. */
      onRefused: (code: number, message: string, namespaceGoing: boolean) => RecordDecision;
    }
  /** The record has served: delete it. */
  | { kind: 'deleteRecord' };

export interface RecordEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

const content = (r: StatefulSetRecord): RecordContent => {
  const { name: _n, namespace: _ns, resourceVersion: _rv, uid: _uid, ...rest } = r;
  return rest;
};

/**
 * The record's namespace, as the namespaces' cache has it: there; being deleted; gone — absent, or
 * another of the name, since pvx went to delete the StatefulSet (the namespace's UID recorded
 * then); or not seen yet (pvx then deletes nothing).
 */
function namespaceState(ns: V1Namespace | undefined, r: StatefulSetRecord): 'there' | 'terminating' | 'gone' | 'unseen' {
  if (ns && (ns.metadata?.deletionTimestamp || ns.status?.phase === 'Terminating')) return 'terminating';
  if (r.namespaceUID && ns?.metadata?.uid !== r.namespaceUID) return 'gone';
  return ns ? 'there' : 'unseen';
}

/** The record ends as `phase` with `reason`: written once, with an Event on the request when there is news. */
function end(
  r: StatefulSetRecord,
  phase: 'Recreated' | 'Abandoned',
  reason: string,
  message: string,
  extra: Partial<RecordContent> = {},
  warn = false,
): RecordDecision {
  return {
    kind: 'update',
    content: { ...content(r), ...extra, phase, reason, message },
    event: { type: warn ? 'Warning' : 'Normal', reason: phase === 'Recreated' ? 'StatefulSetRecreated' : `StatefulSet${reason}`, message },
  };
}

/**
 * A finished record has served once its request has taken the outcome (finished) or is gone —
 * but one whose StatefulSet pvx could not create again is kept while its request is: it holds the
 * last state a person may create it from.
 */
const served = (r: StatefulSetRecord, request: RequestState): boolean => request === 'gone' || (request === 'finished' && r.reason !== 'FinalStateUnknown');

/** Decide again from the StatefulSet as the API server has it now. */
const readAgain = (input: RecordInput): RecordDecision => ({
  kind: 'readStatefulSet',
  onRead: (fresh, listedAt) => decideRecord({ ...input, statefulSet: fresh, live: true, listedAt }),
});

export function decideRecord(input: RecordInput): RecordDecision {
  const r = input.record;
  if (recordDone(r.phase)) return served(r, input.request) ? { kind: 'deleteRecord' } : { kind: 'wait' };
  const sts = input.statefulSet;
  const name = `${r.request.namespace}/${r.statefulSet.name}`;
  const ours = sts?.metadata?.uid === r.statefulSet.uid;
  const place = namespaceState(input.namespace, r);
  if (place !== 'there' && place !== 'unseen') {
    const touched = r.phase === 'Deleting' && !(ours && !sts?.metadata?.deletionTimestamp);
    const what =
      place === 'terminating'
        ? `namespace ${r.request.namespace} is being deleted`
        : `namespace ${r.request.namespace} was deleted${input.namespace ? ' (one of the name exists again: another namespace)' : ''}`;
    return end(
      r,
      'Abandoned',
      'NamespaceDeleted',
      `${what}: StatefulSet ${name} ${touched ? 'is not created again (it went with its namespace)' : 'is left as it is'}`,
    );
  }
  if (r.phase === 'Recorded') return beforeDelete(input, ours);
  return afterDelete(input, ours);
}

/**
 * The request deleted, or ended otherwise (a new leader found a claim failed), before pvx deleted
 * the StatefulSet: nothing is touched, and the record goes (seed 1865967: a record waiting for a
 * steady StatefulSet outlived its Failed request for good).
 */
function endedBeforeDelete(r: StatefulSetRecord, request: RequestState, name: string): RecordDecision | undefined {
  if (request === 'gone' || request === 'deleting')
    return end(r, 'Abandoned', 'RequestDeleted', `the request was deleted before pvx deleted StatefulSet ${name}: it is left as it is`);
  if (request === 'finished') return end(r, 'Abandoned', 'RequestFinished', `the request ended before pvx deleted StatefulSet ${name}: it is left as it is`);
  return undefined;
}

/** Recorded, not touched: delete it if it is still as recorded and fit for it; its owner's deletion ends the step. */
function beforeDelete(input: RecordInput, ours: boolean): RecordDecision {
  const r = input.record;
  const sts = input.statefulSet;
  const name = `${r.request.namespace}/${r.statefulSet.name}`;
  const requestEnded = endedBeforeDelete(r, input.request, name);
  if (requestEnded) return requestEnded;
  // Read from the API server before a delete, whatever the cache shows: it says whether the
  // StatefulSet is gone, deleting or changed, and the list's version is where the deletion's
  // history can be read from later.
  if (!input.live) return readAgain(input);
  if (!ours || !sts)
    return end(r, 'Abandoned', 'DeletedByOwner', `StatefulSet ${name} was deleted by someone else before pvx touched it: pvx does not create it again`);
  if (sts.metadata?.deletionTimestamp)
    return end(r, 'Abandoned', 'DeletedByOwner', `StatefulSet ${name} is being deleted by someone else (pvx had not deleted it): pvx does not create it again`);
  // Its namespace's UID goes into the record before the delete: without it, a namespace deleted
  // and created again meanwhile could not be told from this one.
  const namespaceUID = input.namespace?.metadata?.uid;
  if (!namespaceUID) return { kind: 'wait', requeueAfterMs: 5000 };
  const ask = { name: r.statefulSet.name, template: r.template, toSize: r.toSize, evenIfManaged: r.evenIfManaged };
  const unfit = unrecordable(sts, ask);
  // The request's deadline holds for the delete too: a StatefulSet that never became steady in time
  // is left as it is (seed 203722: a request waited UpdatingTemplate past its deadline for good).
  const deadline = r.deadline ? new Date(r.deadline) : undefined;
  if (unfit?.wait && deadline && input.now >= deadline)
    return end(
      r,
      'Abandoned',
      'DeadlineExceeded',
      `the deadline ${r.deadline} passed before StatefulSet ${name} was touched (${unfit.message}): it is left as it is`,
    );
  if (unfit?.wait) {
    const requeueAfterMs = deadline ? Math.max(1, Math.min(15_000, deadline.getTime() - input.now.getTime())) : 15_000;
    return { kind: 'update', content: { ...content(r), reason: unfit.reason, message: unfit.message }, requeueAfterMs };
  }
  if (unfit) return end(r, 'Abandoned', unfit.reason, unfit.message);
  const again: RecordContent = {
    ...content(r),
    namespaceUID,
    statefulSet: { name: r.statefulSet.name, uid: sts.metadata?.uid as string, resourceVersion: sts.metadata?.resourceVersion as string },
    object: recordOf(sts),
    ...(input.listedAt ? { historyFrom: input.listedAt } : {}),
  };
  const deleting: RecordContent = {
    ...again,
    phase: 'Deleting',
    reason: 'Deleting',
    message: `pvx deletes StatefulSet ${name} with propagation Orphan (its pods keep running) and creates it again with volumeClaimTemplate ${r.template} at ${r.toSize}`,
  };
  // "Deleting" is written first, with the version to delete: a deletion seen before it is someone else's.
  return {
    kind: 'update',
    content: deleting,
    then: {
      kind: 'deleteStatefulSet',
      preconditions: { uid: deleting.statefulSet.uid, resourceVersion: deleting.statefulSet.resourceVersion },
      // The version its delete left it at: how it goes is read from there (a history compacted
      // before it is of no matter), and that the deletion was pvx's is known.
      onDeleted: (rv) =>
        rv ? { kind: 'update', content: { ...deleting, deletedResourceVersion: rv }, requeueAfterMs: 1000 } : { kind: 'wait', requeueAfterMs: 1000 },
      onRefused: (code, message) =>
        code === 403
          ? end(
              { ...r, ...deleting },
              'Abandoned',
              'Forbidden',
              `pvx may not delete StatefulSet ${name} (${code}: ${message}): the cluster's admins grant it with the chart value statefulSetTemplates.enabled (or the kustomize component config/components/statefulset-templates); it was left as it is`,
            )
          : { kind: 'readStatefulSet', onRead: (fresh, listedAt) => notDeletedByPvx({ ...input, record: { ...r, ...deleting }, listedAt }, fresh) },
    },
  };
}

/**
 * pvx's delete was refused on its preconditions (409) or found nothing (404): it did not happen.
 * Whatever deletion shows now is someone else's, even one that orphans as pvx's would (seed 51433:
 * an owner's orphaning delete landed between "Deleting" and pvx's delete, and was read as pvx's
 * own whose answer was lost). A StatefulSet changed since it was recorded is recorded again.
 */
function notDeletedByPvx(input: RecordInput, fresh: V1StatefulSet | undefined): RecordDecision {
  const r = input.record;
  const name = `${r.request.namespace}/${r.statefulSet.name}`;
  if (!fresh || fresh.metadata?.uid !== r.statefulSet.uid || fresh.metadata?.deletionTimestamp)
    return end(r, 'Abandoned', 'DeletedByOwner', `StatefulSet ${name} was deleted by someone else as pvx went to delete it: pvx does not create it again`);
  return beforeDelete({ ...input, record: { ...r, phase: 'Recorded' }, statefulSet: fresh, live: true }, true);
}

/** pvx has (or may have) deleted it: wait for the garbage collector, then create it again from its last state — unless its owner deleted it. */
function afterDelete(input: RecordInput, ours: boolean): RecordDecision {
  const r = input.record;
  const sts = input.statefulSet;
  const name = `${r.request.namespace}/${r.statefulSet.name}`;
  if (input.ownDeleteRefused && !(ours && sts && !sts.metadata?.deletionTimestamp))
    return end(r, 'Abandoned', 'DeletedByOwner', `StatefulSet ${name} was deleted by someone else as pvx went to delete it: pvx does not create it again`);
  if (ours && sts) {
    if (sts.metadata?.finalizers?.includes('foregroundDeletion'))
      return end(
        r,
        'Abandoned',
        'DeletedByOwner',
        `StatefulSet ${name} is being deleted with its pods (a foreground cascade someone started): pvx does not create it again`,
      );
    if (sts.metadata?.deletionTimestamp) {
      // Its delete's answer lost (or not written yet): the first version seen being deleted, orphaning, is where its history is read from.
      if (!r.deletedResourceVersion && sts.metadata.finalizers?.includes('orphan'))
        return { kind: 'update', content: { ...content(r), deletedResourceVersion: sts.metadata.resourceVersion }, requeueAfterMs: 2000 };
      return { kind: 'wait', requeueAfterMs: 2000 };
    }
    // Not deleted: pvx stopped between its "Deleting" and the delete, or the delete found it changed.
    if (!input.live) return readAgain(input);
    return beforeDelete({ ...input, record: { ...r, phase: 'Recorded' } }, ours);
  }
  if (sts) {
    // Another StatefulSet of the name, as the cache has it: one older than pvx's delete (a cache
    // behind), pvx's own (its create's answer lost), or someone else's. The API server says which.
    if (!input.live) return readAgain(input);
    const mine = sts.metadata?.annotations?.['pvx.dev/template-request-uid'] === r.request.uid;
    return mine
      ? end(r, 'Recreated', 'Recreated', `StatefulSet ${name} exists again with volumeClaimTemplate ${r.template} at ${r.toSize}; its pods are adopted`, {
          recreatedUID: sts.metadata?.uid,
        })
      : end(r, 'Abandoned', 'RecreatedElsewhere', `StatefulSet ${name} was created again by someone else: pvx leaves it as it is`, {
          recreatedUID: sts.metadata?.uid,
        });
  }
  return {
    kind: 'readDeletion',
    fromResourceVersion: r.deletedResourceVersion ?? r.historyFrom ?? r.statefulSet.resourceVersion,
    onRead: (h) => afterHistory(input, h),
  };
}

/**
 * Who deleted the StatefulSet, from its versions: pvx's orphaning delete, or its owner (no orphan,
 * or a cascade turned on since). `orphaned`: the versions start after pvx's own orphaning delete.
 */
export function deletedByOwner(versions: readonly KubernetesObject[], last: KubernetesObject, uid: string, orphaned = false): boolean {
  const mine = [...versions, last].filter((v) => v.metadata?.uid === uid);
  const firstDeleting = mine.find((v) => v.metadata?.deletionTimestamp);
  if (!orphaned && !firstDeleting?.metadata?.finalizers?.includes('orphan')) return true;
  return mine.some((v) => v.metadata?.finalizers?.includes('foregroundDeletion'));
}

/** Gone: created again from its last state, unless its owner deleted it — or the history that says which is gone. */
function afterHistory(input: RecordInput, h: DeletionHistory): RecordDecision {
  const r = input.record;
  const name = `${r.request.namespace}/${r.statefulSet.name}`;
  if (h.kind === 'present') return { kind: 'wait', requeueAfterMs: 2000 };
  if (h.kind === 'namespaceGone')
    return end(r, 'Abandoned', 'NamespaceDeleted', `namespace ${r.request.namespace} is gone, and StatefulSet ${name} with it: it is not created again`);
  if (h.kind === 'compacted' && r.lastStateRead) {
    // Read before, and its creation refused since: created from that last state, unless one of the
    // name exists now (the API server says which, and whose).
    return {
      kind: 'readStatefulSet',
      onRead: (fresh, listedAt) => (fresh ? decideRecord({ ...input, statefulSet: fresh, live: true, listedAt }) : createAgain(input, r.object)),
    };
  }
  if (h.kind === 'compacted')
    return end(
      r,
      'Abandoned',
      'FinalStateUnknown',
      `StatefulSet ${name}, which pvx deleted to create again, is gone, and the API server no longer keeps how it went (its history was compacted): pvx does not create it from the older state it recorded, which could undo an edit made meanwhile. Its pods run without a controller: create it again from its source, with volumeClaimTemplate ${r.template} at ${r.toSize} (the state pvx recorded is in ConfigMap ${r.namespace}/${r.name} until the request is deleted)`,
      {},
      true,
    );
  // Another object created under the name since: pvx's own create whose answer was lost (its
  // template-request annotation says so), or someone else's — created again already, whatever became of it.
  const since = h.later?.find((e) => e.type === 'ADDED')?.object;
  if (since) {
    const mine = since.metadata?.annotations?.['pvx.dev/template-request-uid'] === r.request.uid;
    const goneSince = h.later?.some((e) => e.type === 'DELETED' && e.object.metadata?.uid === since.metadata?.uid);
    if (mine && !goneSince) return { kind: 'wait', requeueAfterMs: 2000 };
    return mine
      ? end(
          r,
          'Abandoned',
          'DeletedByOwner',
          `StatefulSet ${name} was created again by pvx (its answer lost) and deleted since by someone else: pvx does not create it again`,
          {
            recreatedUID: since.metadata?.uid,
          },
        )
      : end(r, 'Abandoned', 'RecreatedElsewhere', `StatefulSet ${name} was created again by someone else: pvx leaves it as it is`, {
          recreatedUID: since.metadata?.uid,
        });
  }
  if (deletedByOwner(h.versions, h.last, r.statefulSet.uid, r.deletedResourceVersion !== undefined))
    return end(
      r,
      'Abandoned',
      'DeletedByOwner',
      `StatefulSet ${name} was deleted by someone else (not by pvx's orphaning delete alone): pvx does not create it again`,
    );
  return createAgain(input, h.last);
}

/** Create it again from its last state; refused, that state is kept in the record and the create tried again. */
function createAgain(input: RecordInput, last: KubernetesObject | Record<string, unknown>): RecordDecision {
  const r = input.record;
  const name = `${r.request.namespace}/${r.statefulSet.name}`;
  return {
    kind: 'createStatefulSet',
    statefulSet: recreated(last, r),
    onCreated: (created) =>
      end(
        r,
        'Recreated',
        'Recreated',
        `StatefulSet ${name} was created again with volumeClaimTemplate ${r.template} at ${r.toSize} (was ${r.fromSize ?? 'unknown'}); its pods are adopted, none restarted`,
        { recreatedUID: created.metadata?.uid },
      ),
    onRefused: (code, message, namespaceGoing) =>
      namespaceGoing
        ? end(r, 'Abandoned', 'NamespaceDeleted', `namespace ${r.request.namespace} is being deleted, or is gone: StatefulSet ${name} is not created again`)
        : {
            kind: 'update',
            content: {
              ...content(r),
              object: recordOf(last),
              lastStateRead: true,
              reason: 'CreateRefused',
              message: `StatefulSet ${name} is deleted and the API server refused to create it again (${code}: ${message}); pvx keeps its record and tries again`,
            },
            event: {
              type: 'Warning',
              reason: 'StatefulSetNotCreated',
              message: `StatefulSet ${name} is deleted and could not be created again (${code}: ${message}); pvx keeps its record and tries again`,
            },
            requeueAfterMs: 30_000,
          },
  };
}
