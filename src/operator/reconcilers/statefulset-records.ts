// The record keeper, a thin executor: for each StatefulSet record pvx keeps in its own namespace
// (src/policies/request/statefulset-record.ts), it reads the caches into the inputs of decideRecord
// (src/policies/request/record-keeper.ts, where every rule lives) and carries out the decision —
// the record's own update, the StatefulSet's delete with propagation Orphan and its creation again
// from its last state, the read of how it went, and the record's deletion once it has served.
// A record is followed whatever becomes of its request: that is what keeps a StatefulSet pvx
// deleted from being lost when a namespace editor deletes the request.
import type { V1ConfigMap, V1Namespace, V1StatefulSet } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { KubeClient } from '../../k8s/client.ts';
import { ApiError, RetryAfterError, isNamespaceGone, isNamespaceTerminating } from '../../k8s/errors.ts';
import { NotLeaderError } from '../../k8s/fenced-client.ts';
import { readDeletion } from '../../k8s/history.ts';
import type { Informer } from '../../k8s/informer.ts';
import { readLive, readLiveListed } from '../../k8s/list.ts';
import { namespaces, objectKey, resources, volumeExpansionRequests } from '../../k8s/resources.ts';
import { isFinished } from '../../policies/request/phase.ts';
import { decideRecord, type RecordDecision, type RecordEvent, type RequestState } from '../../policies/request/record-keeper.ts';
import { readRecord, recordConfigMap, type StatefulSetRecord } from '../../policies/request/statefulset-record.ts';
import type { ReconcileResult, Wake } from '../runtime/controller.ts';
import { ConflictError } from '../runtime/errors.ts';

export interface RecordKeeperDeps {
  client: KubeClient;
  /** The records, in pvx's own namespace. */
  records: Informer<V1ConfigMap>;
  statefulSets: Informer<V1StatefulSet>;
  requests: Informer<VolumeExpansionRequest>;
  /** The namespaces: one being deleted, or gone, holds nothing of pvx's and gets nothing created. */
  namespaces: Informer<V1Namespace>;
  logger: Logger;
  /** The leader-election fence: writes only while this is true. */
  canWrite: () => boolean;
  now?: () => Date;
  /** The decision it carries out (default decideRecord; the simulation's mutants swap it). */
  decide?: typeof decideRecord;
}

/** The record changed since the copy a decision was made from: a conflict, decided again from the API server's copy. */
class StaleRecord extends ConflictError {
  override name = 'StaleRecord';
}

export class StatefulSetRecordKeeper {
  private readonly d: RecordKeeperDeps;
  private readonly now: () => Date;
  /** Records pvx cannot read, logged once each. */
  private readonly unreadable = new Set<string>();
  /** Per record (UID), the StatefulSet version pvx's delete was refused at (409/404): it did not happen. */
  private readonly refusedDeletes = new Map<string, string>();
  /**
   * Per record (UID), the version pvx's own delete left the StatefulSet at, until the record holds
   * it: writing it may fail, and the history read from the older recorded version may be compacted
   * (seed 401169: FinalStateUnknown, the StatefulSet not created again, though its history since
   * pvx's delete was whole).
   */
  private readonly deletedVersions = new Map<string, string>();
  /** Record UID @ StatefulSet version, for each delete pvx has sent (its outcome then unknown until answered). */
  private readonly sentDeletes = new Set<string>();

  constructor(deps: RecordKeeperDeps) {
    this.d = deps;
    this.now = deps.now ?? (() => new Date());
  }

  /** The key of the record of a request (namespace/name/uid), if the records' cache has one: what a request's change wakes. */
  recordsOf(match: (r: StatefulSetRecord) => boolean): string[] {
    return this.d.records.list().flatMap((cm) => {
      const r = readRecord(cm);
      return 'unreadable' in r || !match(r) ? [] : [`${r.namespace}/${r.name}`];
    });
  }

  /** What wakes a record: its own changes, and its StatefulSet's, its request's and its namespace's. */
  watch(wake: Wake): void {
    const wakeAll = (keys: string[]) => keys.forEach((k) => wake(k));
    this.d.records.on({ onAdd: (cm) => wake(objectKey(cm)), onUpdate: (_o, cm) => wake(objectKey(cm)), onDelete: (cm) => wake(objectKey(cm)) });
    const stsChanged = (sts: V1StatefulSet) =>
      wakeAll(this.recordsOf((r) => r.request.namespace === sts.metadata?.namespace && r.statefulSet.name === sts.metadata?.name));
    this.d.statefulSets.on({ onAdd: stsChanged, onUpdate: (_o, n) => stsChanged(n), onDelete: stsChanged });
    const requestChanged = (req: VolumeExpansionRequest) => wakeAll(this.recordsOf((r) => r.request.uid === req.metadata.uid));
    this.d.requests.on({ onAdd: requestChanged, onUpdate: (_o, n) => requestChanged(n), onDelete: requestChanged });
    const namespaceChanged = (ns: V1Namespace) => wakeAll(this.recordsOf((r) => r.request.namespace === ns.metadata?.name));
    this.d.namespaces.on({ onAdd: namespaceChanged, onUpdate: (_o, n) => namespaceChanged(n), onDelete: namespaceChanged });
  }

  reconcile = async (key: string): Promise<ReconcileResult> => {
    const cm = this.d.records.get(key);
    if (!cm) return {};
    try {
      return await this.reconcileRecord(key, cm);
    } catch (err) {
      if (!(err instanceof StaleRecord)) throw err;
      // The cache is behind the record (pvx's own last write of it, unseen yet): decided again,
      // once, from the record as the API server has it — not left to conflict until the cache
      // catches up (seed 1655911: a watch that lost the record's update kept it a minute behind,
      // every look a conflict, and the backoff they added up held the record's deletion a quarter
      // of an hour after its request was gone). A second conflict is retried as any other.
      const live = await readLive<V1ConfigMap>(this.d.client, resources.statefulSetRecords, cm.metadata?.namespace as string, cm.metadata?.name as string);
      return live ? this.reconcileRecord(key, live) : {};
    }
  };

  private async reconcileRecord(key: string, cm: V1ConfigMap): Promise<ReconcileResult> {
    const record = readRecord(cm);
    if ('unreadable' in record) {
      if (!this.unreadable.has(key)) this.d.logger.error({ record: key, err: record.unreadable }, 'a StatefulSet record pvx cannot read: left as it is');
      this.unreadable.add(key);
      return {};
    }
    const log = this.d.logger.child({ controller: 'statefulset-records', record: key, statefulSet: `${record.request.namespace}/${record.statefulSet.name}` });
    const left = this.deletedVersions.get(record.uid as string);
    if (left && !record.deletedResourceVersion && record.phase === 'Deleting') record.deletedResourceVersion = left;
    const decision = (this.d.decide ?? decideRecord)({
      record,
      statefulSet: this.d.statefulSets.get(`${record.request.namespace}/${record.statefulSet.name}`),
      namespace: this.d.namespaces.get(record.request.namespace),
      request: await this.requestState(record),
      now: this.now(),
      ownDeleteRefused: this.refusedDeletes.get(record.uid as string) === record.statefulSet.resourceVersion,
    });
    return this.execute(record, decision, log);
  }

  /**
   * Where the request that asked stands. A request the cache does not show is read from the API
   * server before it counts as gone: a record is let go, or its step abandoned, on a reading only.
   */
  private async requestState(r: StatefulSetRecord): Promise<RequestState> {
    const { namespace, name, uid } = r.request;
    const cached = this.d.requests.get(`${namespace}/${name}`);
    const req = cached?.metadata.uid === uid ? cached : await readLive<VolumeExpansionRequest>(this.d.client, volumeExpansionRequests, namespace, name);
    if (!req || req.metadata.uid !== uid) return 'gone';
    if (isFinished(req)) return 'finished';
    return req.metadata.deletionTimestamp ? 'deleting' : 'open';
  }

  private fence(what: string): void {
    if (!this.d.canWrite()) throw new RetryAfterError(`not the leader (or the lease is not renewed): not ${what}`, 2000);
  }

  private async execute(r: StatefulSetRecord, decision: RecordDecision, log: Logger): Promise<ReconcileResult> {
    const { namespace } = r.request;
    const name = r.statefulSet.name;
    switch (decision.kind) {
      case 'wait':
        return decision.requeueAfterMs !== undefined ? { requeueAfterMs: decision.requeueAfterMs } : {};
      case 'readStatefulSet': {
        const { object, resourceVersion } = await readLiveListed<V1StatefulSet>(this.d.client, resources.statefulSets, namespace, name);
        return this.execute(r, decision.onRead(object, resourceVersion), log);
      }
      case 'update':
        return this.update(r, decision, log);
      case 'deleteStatefulSet':
        return this.deleteStatefulSet(r, decision, log);
      case 'readDeletion':
        return this.execute(r, decision.onRead(await readDeletion(this.d.client, resources.statefulSets, namespace, name, decision.fromResourceVersion)), log);
      case 'createStatefulSet':
        return this.create(r, decision, log);
      case 'deleteRecord':
        this.fence('deleting a StatefulSet record');
        try {
          await this.d.client.deleteRecord(r.namespace, r.name, r.uid as string);
        } catch (err) {
          // Gone already: served. A conflict is looked at again from the cache, never taken for
          // done (seed 4573: a 409 read as "gone" left the record for good).
          if (err instanceof ApiError && err.code === 409) throw new StaleRecord(`StatefulSet record ${r.namespace}/${r.name} changed meanwhile`);
          if (!(err instanceof ApiError && err.code === 404)) throw err;
        }
        this.refusedDeletes.delete(r.uid as string);
        this.deletedVersions.delete(r.uid as string);
        for (const a of this.sentDeletes) if (a.startsWith(`${r.uid as string}@`)) this.sentDeletes.delete(a);
        log.info({ outcome: r.reason }, 'the StatefulSet record has served; deleted it');
        return {};
    }
  }

  /** Writes the record as decided (only when it changes), with its Event, then goes on. */
  private async update(r: StatefulSetRecord, decision: Extract<RecordDecision, { kind: 'update' }>, log: Logger): Promise<ReconcileResult> {
    const next: StatefulSetRecord = { ...r, ...decision.content };
    let written = r;
    if (JSON.stringify(recordConfigMap(next).data) !== JSON.stringify(recordConfigMap(r).data)) {
      this.fence('updating a StatefulSet record');
      let stored: V1ConfigMap;
      try {
        stored = await this.d.client.updateRecord(r.namespace, recordConfigMap(next));
      } catch (err) {
        if (err instanceof ApiError && err.code === 409) throw new StaleRecord(`StatefulSet record ${r.namespace}/${r.name} changed meanwhile`);
        throw err;
      }
      written = { ...next, resourceVersion: stored.metadata?.resourceVersion };
      log.info({ phase: next.phase, reason: next.reason }, next.message);
      if (decision.event) await this.event(r, decision.event);
    }
    if (decision.then) return this.execute(written, decision.then, log);
    return decision.requeueAfterMs !== undefined ? { requeueAfterMs: decision.requeueAfterMs } : {};
  }

  private async deleteStatefulSet(
    r: StatefulSetRecord,
    decision: Extract<RecordDecision, { kind: 'deleteStatefulSet' }>,
    log: Logger,
  ): Promise<ReconcileResult> {
    const { namespace } = r.request;
    const name = r.statefulSet.name;
    // Deleted only on the record as the API server has it ("Deleting" is written first, and a write
    // found unchanged against a cache behind it proves nothing: seed 252273 deleted a StatefulSet
    // whose record had just ended Abandoned, and let the record go).
    // Until pvx has sent a delete for this version, a deletion seen is someone else's — also when the
    // look just before the delete fails (seed 706586: the record read failed, the owner's orphaning
    // delete came, and was taken for pvx's own whose answer was lost).
    const attempt = `${r.uid as string}@${decision.preconditions.resourceVersion}`;
    const notSent = () => {
      if (!this.sentDeletes.has(attempt)) this.refusedDeletes.set(r.uid as string, decision.preconditions.resourceVersion);
    };
    const sentBefore = this.sentDeletes.has(attempt);
    let live: V1StatefulSet | undefined;
    try {
      // The fence too: held back here, nothing was sent (seed 2470271: the lease lapsed once
      // "Deleting" was written, its owner's orphaning delete came meanwhile, and was taken for
      // pvx's own whose answer was lost).
      this.fence('deleting a StatefulSet');
      await this.ensureCurrent(r);
      // And the StatefulSet as the API server has it, before any delete of this version is sent:
      // one changed, going or gone since it was recorded is so by someone else's hand — what the
      // delete's preconditions would answer, known before sending, so that a delete whose answer is
      // lost never has to be told from its owner's (seed 2082956: the owner's orphaning delete
      // landed just before pvx's, whose answer was a 503, and the StatefulSet was created again).
      if (!sentBefore) live = await readLive<V1StatefulSet>(this.d.client, resources.statefulSets, namespace, name);
    } catch (err) {
      notSent();
      throw err;
    }
    const { uid, resourceVersion } = decision.preconditions;
    if (!sentBefore && (live?.metadata?.uid !== uid || live.metadata.resourceVersion !== resourceVersion)) {
      const code = live?.metadata?.uid === uid ? 409 : 404;
      log.info({ code }, 'the StatefulSet was not deleted: changed or gone since it was recorded, before pvx sent its delete');
      this.refusedDeletes.set(r.uid as string, resourceVersion);
      return this.execute(r, decision.onRefused(code, `StatefulSet ${namespace}/${name} ${code === 409 ? 'changed' : 'is gone'} since it was recorded`), log);
    }
    let left: string | undefined;
    try {
      this.sentDeletes.add(attempt);
      // Sent: a deletion seen from now on may be this one, whatever an earlier attempt that never
      // sent its delete noted (seed 1215755: a failed look before marked the version refused; the
      // delete then landed, its answer was lost, and pvx took its own deletion for its owner's).
      this.refusedDeletes.delete(r.uid as string);
      left = await this.d.client.deleteStatefulSetOrphan(namespace, name, decision.preconditions);
    } catch (err) {
      // Held back by the leader fence at the last moment: never sent (seed 1306497: the lease
      // lapsed after the look above, its owner's orphaning delete came meanwhile, and was taken
      // for pvx's own whose answer was lost).
      if (err instanceof NotLeaderError) {
        if (!sentBefore) this.sentDeletes.delete(attempt);
        notSent();
        throw err;
      }
      // Forbidden; or gone, or changed since it was recorded (pvx's delete did not happen).
      if (err instanceof ApiError && [403, 404, 409].includes(err.code)) {
        log.info({ code: err.code }, 'the StatefulSet was not deleted: refused, gone or changed since it was recorded');
        if (err.code !== 403) this.refusedDeletes.set(r.uid as string, decision.preconditions.resourceVersion);
        return this.execute(r, decision.onRefused(err.code, err.message), log);
      }
      throw err;
    }
    if (left) this.deletedVersions.set(r.uid as string, left);
    log.info('deleted the StatefulSet with propagation Orphan, to create it again');
    await this.event(r, {
      type: 'Normal',
      reason: 'StatefulSetDeleted',
      message: `deleted StatefulSet ${name} with propagation Orphan (its pods keep running) to create it again with volumeClaimTemplate ${r.template} at ${r.toSize}; its record is ConfigMap ${r.namespace}/${r.name}`,
    });
    return this.execute(r, decision.onDeleted(left), log);
  }

  private async create(r: StatefulSetRecord, decision: Extract<RecordDecision, { kind: 'createStatefulSet' }>, log: Logger): Promise<ReconcileResult> {
    this.fence('creating a StatefulSet again');
    // A create is made from the record as it stands, never from a cache behind pvx's own last
    // write: a record already Recreated, whose StatefulSet its owner has deleted since, read as
    // still Deleting, had it created once more (simulation seeds 4380, 51433, 52905).
    await this.ensureCurrent(r);
    // Into the namespace it was recorded in, as the API server has it: a namespaces' cache behind
    // its deletion and re-creation (seed 914: every pvx process stalled while it was deleted and
    // created again) showed the old one, and pvx created the StatefulSet in another tenant's.
    const gone = await this.namespaceGone(r);
    if (gone) return this.execute(r, decision.onRefused(404, gone, true), log);
    let created: V1StatefulSet;
    try {
      created = await this.d.client.createStatefulSet(r.request.namespace, decision.statefulSet);
    } catch (err) {
      // Ours from a create whose answer was lost, or someone else's: decided from the cache.
      if (err instanceof ApiError && err.reason === 'AlreadyExists') throw new ConflictError(`StatefulSet ${r.statefulSet.name} exists; looking again`);
      if (err instanceof ApiError && [400, 403, 422].includes(err.code))
        return this.execute(r, decision.onRefused(err.code, err.message, isNamespaceTerminating(err) || isNamespaceGone(err)), log);
      throw err;
    }
    log.info({ uid: created.metadata?.uid }, 'created the StatefulSet again from its last state, with the new volumeClaimTemplate size');
    return this.execute(r, decision.onCreated(created), log);
  }

  /** Why the record's namespace, as the API server has it, is not the one recorded (gone, being deleted, another of the name), or undefined. */
  private async namespaceGone(r: StatefulSetRecord): Promise<string | undefined> {
    const ns = await readLive<V1Namespace>(this.d.client, namespaces, '', r.request.namespace);
    if (!ns) return `namespace ${r.request.namespace} was deleted`;
    if (ns.metadata?.deletionTimestamp) return `namespace ${r.request.namespace} is being deleted`;
    if (r.namespaceUID && ns.metadata?.uid !== r.namespaceUID)
      return `namespace ${r.request.namespace} was deleted (one of the name exists again: another namespace)`;
    return undefined;
  }

  /** The record as the API server has it is the one decided from (its resourceVersion); otherwise a conflict, decided again. */
  private async ensureCurrent(r: StatefulSetRecord): Promise<void> {
    const live = await readLive<V1ConfigMap>(this.d.client, resources.statefulSetRecords, r.namespace, r.name);
    if (live?.metadata?.resourceVersion !== r.resourceVersion)
      throw new StaleRecord(`StatefulSet record ${r.namespace}/${r.name} changed since the cache's version; looking again`);
  }

  /** An Event on the request that asked (or, once it is gone, on the StatefulSet): what the record keeper did, or could not. */
  private async event(r: StatefulSetRecord, e: RecordEvent): Promise<void> {
    const request = this.d.requests.get(`${r.request.namespace}/${r.request.name}`);
    const regarding =
      request?.metadata.uid === r.request.uid
        ? { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionRequest', namespace: r.request.namespace, name: r.request.name, uid: r.request.uid }
        : { apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: r.request.namespace, name: r.statefulSet.name, uid: r.statefulSet.uid };
    await this.d.client
      .emitEvent({ regarding, type: e.type, reason: e.reason, message: e.message })
      .catch((err: unknown) => this.d.logger.warn({ err: (err as Error).message, reason: e.reason }, 'could not record an Event'));
  }
}
