// The VolumeExpansionRequest reconciler, a thin executor: it reads the caches into the inputs of
// decideRequest (src/policies/request/decide.ts and the stages it dispatches to, where every rule lives), and carries out the decision —
// a status write (only when a reader would see a change), the claim's one size patch, the child
// requests of a StatefulSet request, or the deletion of a finished request after its TTL. Phase
// changes become Events, conditions and metrics here.
//
// Writes are few by design: a request that goes well costs one status write before the claim's
// patch (the accepted plan) and one at the end, and two Events: Patched on the request (none for a
// policy's), and one on the claim at the end saying what grew it, from what to what, and how long
// each stage took (src/policies/request/claim-event.ts). The steps in
// between (resizer, kubelet) are kept in memory as the status the request would show and written
// only once one lasts showStepAfterMs (src/policies/request/status.ts); a reconcile whose decision
// changes nothing a reader sees writes nothing.
import type {
  V1ConfigMap,
  V1Namespace,
  V1PersistentVolumeClaim,
  V1Pod,
  V1ResourceQuota,
  V1StatefulSet,
  V1StorageClass,
  V1VolumeAttributesClass,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import { pvcAnnotations, requestClaimKey, requestLabels } from '../../crds/keys.ts';
import type { VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import type { RequestStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { KubeClient } from '../../k8s/client.ts';
import type { RequestMetrics } from '../../metrics/expansion.ts';
import { ApiError, RetryAfterError } from '../../k8s/errors.ts';
import { listAll, readLive, readPolicyLive } from '../../k8s/list.ts';
import { resources, volumeExpansionRequests } from '../../k8s/resources.ts';
import { groupBy } from '../../policies/shared/collections.ts';
import { isFinished } from '../../policies/request/phase.ts';
import { readRecord, recordConfigMap, recordName, type StatefulSetRecord } from '../../policies/request/statefulset-record.ts';
import { runningPodClaims } from '../../policies/claim/pods.ts';
import { decideRequest, requestChange, type ClaimContext, type RequestDecision, type RequestInput } from '../../policies/request/decide.ts';
import { requestDeadline } from '../../policies/request/timing.ts';
import { claimCompletedEvent, madeByPolicy, policyOf } from '../../policies/request/claim-event.ts';
import { differs, isInFlightStep, nextStatus, phaseChangeIsNews, showStepAfterMs } from '../../policies/request/status.ts';
import type { DriverProfiles } from '../../policies/budget/drivers.ts';
import { clusterGuardrails, guardrailsUnknown, type Guardrail } from '../../policies/request/validation.ts';
import type { ReconcileResult } from '../runtime/controller.ts';
import { ConflictError } from '../runtime/errors.ts';
import type { Informer } from '../../k8s/informer.ts';
import { behindRetryMs, staleCacheMs, UnseenCreates, UnseenWrites, type CacheState } from './unseen-writes.ts';

/** How long past a StatefulSet request's deadline its unfinished children are read from the API server rather than the cache. */
const overdueReadMs = 30_000;

export interface RequestReconcilerDeps {
  client: KubeClient;
  /**
   * The requests this process created that the requests' cache has not shown yet, shared with the
   * policy evaluator: a StatefulSet request's children count in flight for its pass at once.
   */
  ownCreates?: UnseenCreates<VolumeExpansionRequest>;
  /** Reconciles a key after a delay, event or not (the controller's queue). */
  wakeAfter?: (key: string, delayMs: number) => void;
  /**
   * The policy evaluator's record of this process's claim patches the claims' cache has not shown
   * yet. Apart from this reconciler's own: it forgets a claim once it has read it live, while the
   * evaluator still decides from the cache.
   */
  ownClaimPatches?: UnseenWrites;
  /** The decision it carries out (default decideRequest; the simulation's mutants swap it). */
  decide?: typeof decideRequest;
  requests: Informer<VolumeExpansionRequest>;
  pvcs: Informer<V1PersistentVolumeClaim>;
  storageClasses: Informer<V1StorageClass>;
  /** Absent where the cluster does not serve VolumeAttributesClasses to pvx: requests that name one are rejected. */
  volumeAttributesClasses?: Informer<V1VolumeAttributesClass>;
  pods: Informer<V1Pod>;
  quotas: Informer<V1ResourceQuota>;
  statefulSets: Informer<V1StatefulSet>;
  /**
   * The StatefulSet records pvx keeps in its own namespace (recordNamespace), where the opt-in's
   * Role lets it: absent, a request asking for its template to follow is skipped, saying why.
   */
  records?: Informer<V1ConfigMap>;
  recordNamespace?: string;
  /** The namespaced policies: a policy's request is carried out only while the policy that made it is there (optional: unchecked without them). */
  policies?: Informer<VolumeExpansionPolicy>;
  /** Cluster guardrails and the namespace labels they select by (optional: no guardrails without them). */
  clusterPolicies?: Informer<ClusterVolumeExpansionPolicy>;
  namespaces?: Informer<V1Namespace>;
  logger: Logger;
  metrics?: RequestMetrics;
  /** The leader-election fence: writes only while this is true. */
  canWrite: () => boolean;
  now?: () => Date;
  /**
   * A monotonic clock in ms (default performance.now): how long an in-flight step has lasted is
   * measured on it, so a step of the wall clock (NTP) neither hides a step nor shows it early.
   */
  monotonicMs?: () => number;
  /** A driver error (not a rate limit) lasting this long ends a request. Default 1 h. */
  driverErrorTimeoutMs?: number;
  /** The driver profiles (--modification-budget); default defaultDriverProfiles. */
  profiles?: DriverProfiles;
}

/** A request as a reconcile sees it: its status overlaid with steps not written yet. */
interface Reading {
  key: string;
  req: VolumeExpansionRequest;
  /** The status as the API server has it. */
  written: RequestStatus | undefined;
}

/** A status decided and not written yet (an in-flight step), valid while the request is at resourceVersion. */
interface Unwritten {
  status: RequestStatus;
  resourceVersion: string;
  /** When the first unwritten step began (monotonic ms): written once it is showStepAfterMs old. */
  sinceMs: number;
}

export class ExpansionRequestReconciler {
  private readonly d: RequestReconcilerDeps;
  private readonly now: () => Date;
  private readonly monotonicMs: () => number;
  private readonly unwritten = new Map<string, Unwritten>();
  /** Our status writes the requests' cache has not shown yet. */
  private readonly unseenStatus: UnseenWrites;
  /** Our claim patches the claims' cache has not shown yet: an old copy would read a class just set as a class changed back. */
  private readonly unseenClaimPatches: UnseenWrites;
  /**
   * Evictions we decided, as the requests that made them, for ten minutes: another request
   * deciding from a cache that does not show them (not yet, or no longer: the request deleted)
   * would evict a second pod of the same workload.
   */
  private readonly decidedEvictions = new UnseenCreates<VolumeExpansionRequest>(10 * 60_000);
  /**
   * When this process last tried each request's eviction: a refusal that repeats is not written
   * again, so the wait before the next attempt is counted from here (kept for the request's life).
   */
  private readonly evictionAttempts = new Map<string, Date>();

  constructor(deps: RequestReconcilerDeps) {
    this.d = deps;
    this.now = deps.now ?? (() => new Date());
    this.monotonicMs = deps.monotonicMs ?? (() => performance.now());
    this.unseenStatus = new UnseenWrites(this.monotonicMs);
    this.unseenClaimPatches = new UnseenWrites(this.monotonicMs);
  }

  /** Every request that targets a claim. */
  private onClaim(namespace: string, pvcName: string): VolumeExpansionRequest[] {
    return this.d.requests.list().filter((r) => r.metadata.namespace === namespace && r.spec?.target?.pvcName === pvcName);
  }

  /** Keys of unfinished requests that target a claim (for claim and pod events). */
  requestsFor(namespace: string, pvcName: string): string[] {
    return this.onClaim(namespace, pvcName)
      .filter((r) => !isFinished(r))
      .map((r) => `${namespace}/${r.metadata.name}`);
  }

  reconcile = async (key: string): Promise<ReconcileResult> => {
    let cached = this.d.requests.get(key) ?? (await this.createdUnseen(key));
    if (!cached) {
      this.unwritten.delete(key);
      this.unseenStatus.forget(key);
      this.evictionAttempts.delete(key);
      return {};
    }
    // The cache has not seen our last write yet: its event brings the request back. Deciding from
    // the copy before it would only meet a 409. Behind for long, the event was lost: read it live.
    const requestState = this.unseenStatus.state(key, cached.metadata.resourceVersion);
    if (requestState === 'wait') return { requeueAfterMs: behindRetryMs };
    if (requestState === 'read-live') {
      // The stale versions are kept: the cache still holds one of them until its watch delivers
      // (or relists), and the next reconcile must read live again rather than decide from it — a
      // StatefulSet request would make a child again that its stale status does not record.
      cached = await readLive<VolumeExpansionRequest>(
        this.d.client,
        volumeExpansionRequests,
        cached.metadata.namespace as string,
        cached.metadata.name as string,
      );
      if (!cached) {
        this.unseenStatus.forget(key);
        return {};
      }
    }
    const rv = cached.metadata.resourceVersion ?? '';
    const claimState = this.claimState(cached);
    if (claimState === 'wait') return { requeueAfterMs: behindRetryMs };
    const held = this.unwritten.get(key);
    if (held && held.resourceVersion !== rv) this.unwritten.delete(key);
    const req = held?.resourceVersion === rv ? { ...cached, status: held.status } : cached;
    const ns = req.metadata.namespace as string;
    const now = this.now();
    const isStatefulSet = Boolean(req.spec.target?.statefulSetName);
    // The claims of this namespace's requests, grouped once rather than scanned per claim.
    const byClaim = groupBy(
      this.d.requests.list().filter((r) => r.metadata.namespace === ns),
      requestClaimKey,
    );
    // A StatefulSet request about to pin its claims reads them from the API server, not the cache:
    // what it pins (each claim's UID, capacity and the size asked of it) is what its children
    // grow the claims to, and a cache a moment behind a resize would pin the size before it.
    const pinning = isStatefulSet && !req.status?.targets?.length;
    const fresh = claimState === 'read-live' || pinning ? await this.freshClaims(ns) : undefined;
    // And its replicas, from the StatefulSet as the API server has it: a cache a moment behind a
    // scale-down would pin the claim of a replica that is gone (simulation seed 2844).
    const liveStatefulSet = pinning
      ? await readLive<V1StatefulSet>(this.d.client, resources.statefulSets, ns, req.spec.target.statefulSetName as string)
      : undefined;
    if (claimState === 'read-live') this.unseenClaimPatches.forget(`${ns}/${req.spec.target.pvcName}`);
    const decision = (this.d.decide ?? decideRequest)({
      request: req,
      claim: (name) => this.claimContext(ns, name, req, byClaim.get(`${ns}/${name}`) ?? [], fresh),
      ...(isStatefulSet
        ? {
            statefulSet: pinning ? liveStatefulSet : this.d.statefulSets.get(`${ns}/${req.spec.target.statefulSetName}`),
            children: await this.children(req, now),
            requestNamed: (name: string) => this.d.requests.get(`${ns}/${name}`),
            ...this.recordOf(req),
          }
        : {}),
      now,
      namespacePods: () => this.d.pods.list().filter((p) => p.metadata?.namespace === ns),
      namespaceRequests: () => this.withOwnEvictions(ns),
      evictionDecidedHere: this.decidedHere(),
      statefulSetNamed: (name) => this.d.statefulSets.get(`${ns}/${name}`),
      ...(this.evictionAttempts.has(key) ? { lastEvictionAttemptAt: this.evictionAttempts.get(key) } : {}),
      driverErrorTimeoutMs: this.d.driverErrorTimeoutMs,
      volumeAttributesClass: req.spec.volumeAttributesClassName ? this.d.volumeAttributesClasses?.get(req.spec.volumeAttributesClassName) : undefined,
      volumeAttributesClassesServed: this.d.volumeAttributesClasses !== undefined,
      ...(this.d.profiles ? { profiles: this.d.profiles } : {}),
      ...(await this.askingPolicy(req)),
    });
    const log = this.d.logger.child({ controller: 'expansion-request', namespace: ns, name: req.metadata.name });
    return this.execute({ key, req, written: cached.status }, decision, log);
  };

  /**
   * The policy that made the request, as pvx has it now (RequestInput.askingPolicy), until the
   * claim is patched. Not the one of its owner reference in the cache (gone, or another of the
   * name): read from the API server before it counts, as the cache may be behind.
   */
  private async askingPolicy(req: VolumeExpansionRequest): Promise<{ askingPolicy?: RequestInput['askingPolicy'] }> {
    const made = policyOf(req);
    if (!made || isFinished(req) || req.status?.timeline?.patchedAt) return {};
    const cluster = made.kind === 'ClusterVolumeExpansionPolicy';
    const cache: Informer<VolumeExpansionPolicy | ClusterVolumeExpansionPolicy> | undefined = cluster ? this.d.clusterPolicies : this.d.policies;
    if (!cache) return {};
    const namespace = cluster ? '' : (req.metadata.namespace as string);
    const owner = req.metadata.ownerReferences?.find((o) => o.controller && o.kind === made.kind && o.name === made.name)?.uid;
    let policy = cache.get(cluster ? made.name : `${namespace}/${made.name}`);
    if (!owner || policy?.metadata.uid !== owner)
      policy = await readPolicyLive(
        this.d.client,
        cluster ? { kind: 'ClusterVolumeExpansionPolicy', name: made.name } : { kind: 'VolumeExpansionPolicy', namespace, name: made.name },
      );
    if (!owner || !policy || policy.metadata.uid !== owner) return { askingPolicy: { present: false } };
    // A cluster policy's maxSize is a guardrail, which the validation holds every request to.
    const maxSize = cluster ? undefined : (policy as VolumeExpansionPolicy).spec.maxSize;
    return { askingPolicy: { present: true, ...(maxSize ? { maxSize } : {}) } };
  }

  /** A StatefulSet request's record as cached, and where records are kept (absent where pvx may not keep them). */
  private recordOf(req: VolumeExpansionRequest): { statefulSetRecord?: StatefulSetRecord; recordNamespace?: string } {
    const ns = this.d.recordNamespace;
    if (!this.d.records || !ns) return {};
    const cm = this.d.records.get(`${ns}/${recordName(req.metadata.uid as string)}`);
    const record = cm ? readRecord(cm) : undefined;
    if (record && 'unreadable' in record) this.d.logger.warn({ record: cm?.metadata?.name, err: record.unreadable }, 'a StatefulSet record pvx cannot read');
    return { recordNamespace: ns, ...(record && !('unreadable' in record) ? { statefulSetRecord: record } : {}) };
  }

  /** The namespace's requests as cached, with the evictions we recorded that the cache does not show yet. */
  private withOwnEvictions(ns: string): VolumeExpansionRequest[] {
    const cached = this.d.requests.list().filter((r) => r.metadata.namespace === ns);
    // Each eviction is remembered until it ages out, not only until the cache shows its record: a
    // request deleted since (its record gone with it) still counts, for the pod it evicted may not
    // be back yet, nor even gone from the pods' cache (seed 59505: a second pod of the workload
    // evicted 0.7 s after the first's request was deleted). The cache's copy wins when it shows one.
    // The cache's copy wins only where it records the very pod we decided on (it may say Evicted
    // since): any other record there is not ours (seed 255206: a status writer's).
    const remembered = this.rememberedEvictions().filter((r) => r.metadata.namespace === ns);
    if (remembered.length === 0) return cached;
    const byUID = new Map(remembered.map((r) => [r.metadata.uid, r]));
    const cachedUIDs = new Set(cached.map((r) => r.metadata.uid));
    const current = (r: VolumeExpansionRequest) => {
      const ours = byUID.get(r.metadata.uid);
      return ours && r.status?.eviction?.podUID !== ours.status?.eviction?.podUID ? ours : r;
    };
    return [...cached.map(current), ...remembered.filter((r) => !cachedUIDs.has(r.metadata.uid))];
  }

  /** Whether this process decided a request's eviction (by UID): the remembered ones read once, when first asked. */
  private decidedHere(): (uid: string) => boolean {
    let uids: Set<string | undefined> | undefined;
    return (uid) => (uids ??= new Set(this.rememberedEvictions().map((r) => r.metadata.uid))).has(uid);
  }

  /** The requests as they were when this process decided their evictions, while remembered. */
  private rememberedEvictions(): VolumeExpansionRequest[] {
    return this.decidedEvictions.unseen(() => false, this.monotonicMs());
  }

  /**
   * A request pvx created (a StatefulSet request's child) that the cache has not shown for
   * staleCacheMs — its ADDED event lost (seed 1366: a child never reconciled, its deadline not
   * held, until the next relist): read from the API server.
   */
  private async createdUnseen(key: string): Promise<VolumeExpansionRequest | undefined> {
    const at = this.d.ownCreates?.createdAt(key, this.monotonicMs());
    if (at === undefined || this.monotonicMs() - at < staleCacheMs) return undefined;
    const [namespace, name] = key.split('/') as [string, string];
    return readLive<VolumeExpansionRequest>(this.d.client, volumeExpansionRequests, namespace, name);
  }

  /** Whether the request's claim is cached as it was before our patch of it (its event on its way, or lost). */
  private claimState(req: VolumeExpansionRequest): CacheState {
    const claimName = req.spec?.target?.pvcName;
    if (!claimName) return 'current';
    const claimKey = `${req.metadata.namespace}/${claimName}`;
    return this.unseenClaimPatches.state(claimKey, this.d.pvcs.get(claimKey)?.metadata?.resourceVersion);
  }

  /**
   * A StatefulSet request's children, as the cache has them — or, once the request is past its
   * deadline by overdueReadMs with a child unfinished as cached, as the API server has them: the
   * child's last events may be lost until a relist (seed 55262: children Failed at their deadline
   * while the parent, reading them from the cache, waited two minutes more).
   */
  private async children(req: VolumeExpansionRequest, now: Date): Promise<VolumeExpansionRequest[]> {
    const ns = req.metadata.namespace as string;
    const ours = (r: VolumeExpansionRequest) =>
      r.metadata.namespace === ns &&
      r.metadata.labels?.[requestLabels.parent] === req.metadata.name &&
      r.metadata.ownerReferences?.some((o) => o.uid === req.metadata.uid) === true;
    const cached = this.d.requests.list().filter(ours);
    const deadline = requestDeadline(req, now);
    const overdue = deadline !== undefined && now.getTime() > deadline.getTime() + overdueReadMs;
    if (!overdue || cached.every((c) => isFinished(c))) return cached;
    const { items } = await listAll<VolumeExpansionRequest>(this.d.client, volumeExpansionRequests, {
      namespace: ns,
      labelSelector: `${requestLabels.parent}=${req.metadata.name}`,
    });
    return items.filter(ours);
  }

  /** The namespace's claims as the API server has them now, by name. */
  private async freshClaims(ns: string): Promise<Map<string, V1PersistentVolumeClaim>> {
    const { items } = await listAll<V1PersistentVolumeClaim>(this.d.client, resources.persistentVolumeClaims, { namespace: ns });
    return new Map(items.map((c) => [c.metadata?.name ?? '', c]));
  }

  private claimContext(
    ns: string,
    name: string,
    req: VolumeExpansionRequest,
    requests: VolumeExpansionRequest[],
    fresh?: ReadonlyMap<string, V1PersistentVolumeClaim>,
  ): ClaimContext {
    const claim = fresh ? fresh.get(name) : this.d.pvcs.get(`${ns}/${name}`);
    return {
      claim,
      storageClass: claim?.spec?.storageClassName ? this.d.storageClasses.get(claim.spec.storageClassName) : undefined,
      quotas: this.d.quotas.list().filter((q) => q.metadata?.namespace === ns),
      otherRequests: requests.filter((r) => r.metadata.uid !== req.metadata.uid),
      guardrails: this.guardrails(ns),
      guardrailsUnknown: guardrailsUnknown(this.d.clusterPolicies?.list() ?? [], ns, this.d.namespaces ? this.d.namespaces.get(ns)?.metadata?.labels : {}),
      mountedByRunningPod: this.d.pods.list().some((p) => p.metadata?.namespace === ns && runningPodClaims(p).includes(name)),
    };
  }

  /** The guardrails of every ClusterVolumeExpansionPolicy whose namespace selector takes this namespace. */
  private guardrails(namespace: string): Guardrail[] {
    return clusterGuardrails(this.d.clusterPolicies?.list() ?? [], this.d.namespaces?.get(namespace)?.metadata?.labels);
  }

  private async execute(r: Reading, decision: RequestDecision, log: Logger): Promise<ReconcileResult> {
    const req = r.req;
    const ns = req.metadata.namespace as string;
    switch (decision.kind) {
      case 'wait':
        return decision.requeueAfterMs !== undefined ? { requeueAfterMs: decision.requeueAfterMs } : {};
      case 'status': {
        const { showInMs } = await this.writeStatus(r, decision.status);
        const requeueAfterMs = Math.min(decision.requeueAfterMs ?? Infinity, showInMs ?? Infinity);
        return Number.isFinite(requeueAfterMs) ? { requeueAfterMs } : {};
      }
      case 'finish': {
        const completedAt = decision.status.phase === 'Completed' ? { completedAt: this.now().toISOString() } : {};
        const { wrote } = await this.writeStatus(r, { ...decision.status, timeline: { ...req.status?.timeline, ...decision.status.timeline, ...completedAt } });
        if (wrote) this.d.metrics?.requests.inc({ result: decision.result, change: requestChange(req.spec) });
        return {};
      }
      case 'patch': {
        this.fence('patching the claim');
        // The intent first, conditional on the request as it was read: a decision made from a stale
        // copy ends here with a 409, before the claim is touched.
        ({ reading: r } = await this.writeStatus(r, decision.record, { always: true }));
        try {
          await this.d.client.patchPvcSize(ns, decision.patch.claimName, decision.patch);
        } catch (err) {
          if (err instanceof ApiError && err.code === 409) throw new ConflictError(`claim ${decision.patch.claimName} changed meanwhile: ${err.message}`);
          if (err instanceof ApiError && (err.code === 403 || err.code === 422)) return this.execute(r, decision.onRefused(err.code, err.message), log);
          throw err;
        }
        this.unseenClaimPatches.wrote(`${ns}/${decision.patch.claimName}`, decision.patch.resourceVersion);
        this.d.ownClaimPatches?.wrote(`${ns}/${decision.patch.claimName}`, decision.patch.resourceVersion);
        const patchedAt = this.now();
        log.info({ pvc: decision.patch.claimName, storage: decision.patch.storage }, 'patched the claim');
        // A policy's expansion records one Event, on the claim when it completes (claim-event.ts).
        if (decision.event && !(decision.event.reason === 'Patched' && madeByPolicy(req)))
          await this.event(req, decision.event.reason === 'Patched' ? 'Normal' : 'Warning', decision.event.reason, decision.event.message);
        return this.execute(r, decision.onPatched(patchedAt), log);
      }
      case 'createChildren':
        return this.createChildren(r, decision, log);
      case 'readStatefulSet': {
        let fresh;
        try {
          fresh = await this.d.client.getStatefulSet(ns, decision.name);
        } catch (err) {
          if (err instanceof ApiError && err.code === 403) return this.execute(r, decision.onRefused(err.code, err.message), log);
          throw err;
        }
        return this.execute(r, decision.onRead(fresh), log);
      }
      case 'recordStatefulSet':
        return this.record(r, decision, log);
      case 'readRecord': {
        const cm = await readLive<V1ConfigMap>(this.d.client, resources.statefulSetRecords, decision.namespace, decision.name);
        const record = cm ? readRecord(cm) : undefined;
        return this.execute(r, decision.onRead(record && !('unreadable' in record) ? record : undefined), log);
      }
      case 'setFinalizers':
        this.fence('changing the request’s finalizers');
        r = await this.setFinalizers(r, decision.finalizers);
        return this.execute(r, decision.then, log);
      case 'evict':
        return this.evict(r, decision, log);
      case 'delete':
        this.fence('deleting the request');
        try {
          await this.d.client.deleteRequest(ns, req.metadata.name as string, req.metadata.uid as string);
        } catch (err) {
          if (!(err instanceof ApiError && (err.code === 404 || err.code === 409))) throw err;
        }
        log.info({ ttlSeconds: req.spec.ttlSecondsAfterFinished }, 'deleted a finished request after its TTL');
        return {};
    }
  }

  /**
   * Throws unless the child's claim, as the API server has it, shows no request of the child's
   * name at work on it: a claims cache behind a first child's patch took that child, deleted
   * since, for one never made (seed 701694: the parent's record of it lost with its leader, the
   * claims' watch silent for minutes, and the child made again). Decided again once the cache shows it.
   */
  private async claimShowsNoChild(ns: string, child: VolumeExpansionRequest): Promise<void> {
    const claim = await readLive<V1PersistentVolumeClaim>(this.d.client, resources.persistentVolumeClaims, ns, child.spec.target.pvcName as string);
    if (claim?.metadata?.annotations?.[pvcAnnotations.request] === child.metadata.name) {
      throw new ConflictError(
        `claim ${child.spec.target.pvcName} shows request ${child.metadata.name} at work on it, which the cache does not yet; looking again`,
      );
    }
  }

  /** Creates a StatefulSet request's children, records their UIDs, and goes on as decided. */
  private async createChildren(r: Reading, decision: Extract<RequestDecision, { kind: 'createChildren' }>, log: Logger): Promise<ReconcileResult> {
    const req = r.req;
    const ns = req.metadata.namespace as string;

    this.fence('creating requests');
    // Made from the parent as the API server has it: a cache behind its deletion (or its
    // finish) made them once more after the garbage collector took the first ones (seed 55622).
    // Decided again from the API server's copy while the cache shows this one (its watch may
    // have lost the event that would bring it up to date: seed 1366).
    const parent = await readLive<VolumeExpansionRequest>(this.d.client, volumeExpansionRequests, ns, req.metadata.name as string);
    if (parent?.metadata.resourceVersion !== r.req.metadata.resourceVersion) {
      this.unseenStatus.knownBehind(r.key, r.req.metadata.resourceVersion as string);
      throw new ConflictError(`request ${req.metadata.name} changed since the cache's version; looking again from the API server's`);
    }
    // Each child's UID, by claim, recorded in the parent's status right after (those created
    // before a failure too): a child is then known to have existed even if deleted at once.
    const created = new Map<string, string>();
    let failure: unknown;
    for (const child of decision.children) {
      try {
        await this.claimShowsNoChild(ns, child);
        created.set(child.spec.target.pvcName as string, await this.d.client.createRequest(ns, child));
        this.d.ownCreates?.created(
          `${ns}/${child.metadata.name}`,
          { ...child, metadata: { ...child.metadata, namespace: ns, creationTimestamp: this.now() } },
          this.monotonicMs(),
        );
        // Its ADDED event wakes it; should that be lost, this does (read from the API server then).
        this.d.wakeAfter?.(`${ns}/${child.metadata.name}`, staleCacheMs + 1000);
      } catch (err) {
        // Ours from a create whose answer was lost, or someone else's: the next reconcile reads
        // it from the cache and decides which — never taken for success here.
        failure =
          err instanceof ApiError && err.reason === 'AlreadyExists' ? new ConflictError(`request ${child.metadata.name} already exists; looking again`) : err;
        break;
      }
    }
    if (failure === undefined) return this.execute(r, decision.then(created), log);
    // Refused for good before any was made (admission, RBAC): said in the status, looked at again later.
    if (created.size === 0 && failure instanceof ApiError && (failure.code === 403 || failure.code === 422))
      return this.execute(r, decision.onRefused(failure.code, failure.message), log);
    if (created.size > 0) await this.execute(r, decision.then(created), log);
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the create's error passed on as caught (or our ConflictError); `unknown` past the undefined check reads as `{} | null`
    throw failure;
  }

  /** Marks and records the pod to evict (unless recorded already), checks the live pods and claim, then evicts it. */
  private async evict(r: Reading, decision: Extract<RequestDecision, { kind: 'evict' }>, log: Logger): Promise<ReconcileResult> {
    const req = r.req;
    const ns = req.metadata.namespace as string;

    this.fence('evicting a pod');
    // The pod first, conditional on the request as it was read: at most one pod per request.
    // Known as coming from the moment it is decided, before the record's write returns: another
    // request's reconcile deciding meanwhile must not evict a second pod of the workload (seed 2570).
    if (decision.record) {
      const evicting = (q: VolumeExpansionRequest) => ({ ...q, status: { ...q.status, eviction: decision.record?.eviction } });
      this.decidedEvictions.created(r.key, evicting(r.req), this.monotonicMs());
      try {
        // Known as coming before the mark's write returns too (seed 150653: a second request
        // of the workload decided while the first's mark was on its way, and evicted as well).
        if (decision.mark) await this.markEviction(ns, decision.mark);
        ({ reading: r } = await this.writeStatus(r, decision.record, { always: true }));
      } catch (err) {
        // Refused for certain (nothing recorded): not coming. Any other failure may have recorded
        // it: kept until the entry ages out.
        if (err instanceof ApiError && [403, 404, 409, 422].includes(err.code)) this.decidedEvictions.forget(r.key);
        throw err;
      }
    }
    this.evictionAttempts.set(r.key, this.now());
    const { items: live } = await listAll<V1Pod>(this.d.client, resources.pods, { namespace: decision.pod.namespace });
    const claim = await readLive<V1PersistentVolumeClaim>(this.d.client, resources.persistentVolumeClaims, ns, req.spec.target.pvcName as string);
    const instead = decision.onLive(live, claim, await this.liveStatefulSetOf(live.find((p) => p.metadata?.uid === decision.pod.uid)));
    if (instead) return this.execute(r, instead, log);
    try {
      await this.d.client.evictPod(decision.pod.namespace, decision.pod.name, decision.pod.uid);
    } catch (err) {
      if (err instanceof ApiError && (err.code === 429 || err.code === 500 || err.code === 403))
        return this.execute(r, decision.onBlocked(err.code, [err.message, ...err.causes].join(' ')), log);
      // Gone, or another pod of the name — or a refusal that never reached it: decided again from the cache.
      if (err instanceof ApiError && (err.code === 404 || err.code === 409)) {
        log.info({ pod: decision.pod.name, code: err.code }, 'the pod to evict is gone or another one; looking again');
        return { requeueAfterMs: 1000 };
      }
      throw err;
    }
    log.info({ pod: decision.pod.name }, 'evicted the pod that mounts the claim, for its filesystem to grow as it mounts it anew');
    await this.event(
      req,
      'Normal',
      'PodEvicted',
      `evicted pod ${decision.pod.name}: its controller creates it again and the kubelet grows the filesystem as it mounts the claim`,
    );
    return this.execute(r, decision.onEvicted(this.now()), log);
  }

  /**
   * The StatefulSet a live pod names as its controller, read after the pods (null: none of the
   * name); undefined when its controller is of another kind, which pvx does not read.
   */
  private async liveStatefulSetOf(pod: V1Pod | undefined): Promise<V1StatefulSet | null | undefined> {
    const owner = pod?.metadata?.ownerReferences?.find((r) => r.controller);
    if (!pod || owner?.kind !== 'StatefulSet') return undefined;
    return (await readLive<V1StatefulSet>(this.d.client, resources.statefulSets, pod.metadata?.namespace as string, owner.name)) ?? null;
  }

  /** Marks on the claim the pod pvx evicts for the request, conditional on the claim as decided on. */
  private async markEviction(ns: string, mark: NonNullable<Extract<RequestDecision, { kind: 'evict' }>['mark']>): Promise<void> {
    try {
      await this.d.client.patchPvcAnnotations(ns, mark.claim, mark.patch);
    } catch (err) {
      if (err instanceof ApiError && err.code === 409) throw new ConflictError(`claim ${mark.claim} changed meanwhile: ${err.message}`);
      throw err;
    }
    // The cache shows the mark a moment later: until it does, the claim is read from the API server.
    this.unseenClaimPatches.wrote(`${ns}/${mark.claim}`, mark.patch.resourceVersion);
  }

  /**
   * Creates the request's StatefulSet record in pvx's namespace (the record keeper takes it from
   * there): one of the name this request made already — a create whose answer was lost — is taken
   * as made; one of another request's is a conflict, looked at again.
   */
  private async record(r: Reading, decision: Extract<RequestDecision, { kind: 'recordStatefulSet' }>, log: Logger): Promise<ReconcileResult> {
    this.fence('recording a StatefulSet');
    const { namespace, name } = decision.record;
    try {
      await this.d.client.createRecord(namespace, recordConfigMap(decision.record));
    } catch (err) {
      if (err instanceof ApiError && (err.code === 403 || err.code === 422)) return this.execute(r, decision.onRefused(err.code, err.message), log);
      if (!(err instanceof ApiError && err.reason === 'AlreadyExists')) throw err;
      const existing = await readLive<V1ConfigMap>(this.d.client, resources.statefulSetRecords, namespace, name);
      const made = existing ? readRecord(existing) : undefined;
      if (!made || 'unreadable' in made || made.request.uid !== decision.record.request.uid)
        throw new ConflictError(`StatefulSet record ${namespace}/${name} exists and is not this request's`);
    }
    log.info({ statefulSet: decision.record.statefulSet.name, record: `${namespace}/${name}` }, 'recorded the StatefulSet, to delete it and create it again');
    return this.execute(r, decision.onRecorded(), log);
  }

  /** Sets the request's finalizers, on the version read; the reading as written, for the writes that follow. */
  private async setFinalizers(r: Reading, finalizers: string[]): Promise<Reading> {
    const { req, key } = r;
    const resourceVersion = req.metadata.resourceVersion ?? '';
    let written: string;
    try {
      written = await this.d.client.patchRequestFinalizers(req.metadata.namespace as string, req.metadata.name as string, finalizers, resourceVersion);
    } catch (err) {
      if (err instanceof ApiError && err.code === 409) {
        // As for a status write: the cache's copy is behind the API server's.
        this.unseenStatus.wrote(key, resourceVersion);
        throw new ConflictError(`request ${req.metadata.name} changed meanwhile: ${err.message}`);
      }
      throw err;
    }
    if (written !== resourceVersion) this.unseenStatus.wrote(key, resourceVersion);
    return { ...r, req: { ...req, metadata: { ...req.metadata, resourceVersion: written, finalizers } } };
  }

  private fence(what: string): void {
    if (!this.d.canWrite()) throw new RetryAfterError(`not the leader (or the lease is not renewed): not ${what}`, 2000);
  }

  /**
   * Writes status when something a reader sees changed — an in-flight step only once it has lasted
   * showStepAfterMs (until then it is held in memory and showInMs says when to look again) — or
   * always, to check that the request was read as it is. A phase change is a duration metric, a
   * condition and, unless it is a quiet step, an Event. Returns whether it wrote, and the reading
   * as written (for a second write in the same reconcile).
   */
  private async writeStatus(
    r: Reading,
    next: RequestStatus,
    opts: { always?: boolean } = {},
  ): Promise<{ wrote: boolean; reading: Reading; showInMs?: number }> {
    const { req, key } = r;
    const cur = req.status ?? {};
    const now = this.now();
    const update = nextStatus(cur, next, now, req.metadata.generation);
    const merged = update.status;
    if (update.phaseChanged && cur.phase && cur.phaseSince) {
      this.d.metrics?.phaseDuration.observe({ phase: cur.phase, change: requestChange(req.spec) }, (now.getTime() - new Date(cur.phaseSince).getTime()) / 1000);
    }
    const resourceVersion = req.metadata.resourceVersion ?? '';
    if (!opts.always) {
      if (!differs(r.written, merged)) {
        this.unwritten.delete(key);
        return { wrote: false, reading: r };
      }
      const nowMs = this.monotonicMs();
      const sinceMs = this.unwritten.get(key)?.sinceMs ?? nowMs;
      const showInMs = sinceMs + showStepAfterMs - nowMs;
      if (isInFlightStep(merged) && showInMs > 0) {
        this.unwritten.set(key, { status: merged, resourceVersion, sinceMs });
        return { wrote: false, reading: { ...r, req: { ...req, status: merged } }, showInMs };
      }
    }
    this.fence('writing status');
    let written: string;
    try {
      written = await this.d.client.patchRequestStatus(req.metadata.namespace as string, req.metadata.name as string, merged, resourceVersion);
    } catch (err) {
      // Decided from a stale copy (the cache had not seen a newer version yet): decide again from
      // the new one. Its watch event brings the request back; counted as a version our cache must
      // leave behind, so that if that event was lost the request is read from the API server
      // (staleCacheMs) rather than decided from the same copy, and refused, for ever.
      if (err instanceof ApiError && err.code === 409) {
        this.unseenStatus.wrote(key, resourceVersion);
        throw new ConflictError(`request ${req.metadata.name} changed meanwhile: ${err.message}`);
      }
      throw err;
    }
    this.unwritten.delete(key);
    if (written !== resourceVersion) this.unseenStatus.wrote(key, resourceVersion);
    const onClaim = update.phaseChanged ? claimCompletedEvent(req, merged) : undefined;
    if (onClaim) {
      await this.d.client
        .emitEvent(onClaim)
        .catch((err: unknown) => this.d.logger.warn({ err: (err as Error).message, reason: onClaim.reason }, 'could not record an Event'));
    } else if (update.phaseChanged && phaseChangeIsNews(merged)) {
      const warning = merged.phase === 'Rejected' || merged.phase === 'Failed' || merged.phase === 'WaitingForPod';
      await this.event(req, warning ? 'Warning' : 'Normal', merged.reason ?? merged.phase ?? 'Unknown', `${merged.phase}: ${merged.message ?? ''}`);
    }
    const asWritten = { ...req, metadata: { ...req.metadata, resourceVersion: written }, status: merged };
    return { wrote: true, reading: { key, req: asWritten, written: merged } };
  }

  private async event(req: VolumeExpansionRequest, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    await this.d.client
      .emitEvent({
        regarding: {
          apiVersion: req.apiVersion,
          kind: req.kind,
          namespace: req.metadata.namespace as string,
          name: req.metadata.name as string,
          uid: req.metadata.uid,
        },
        type,
        reason,
        message,
      })
      .catch((err: unknown) => this.d.logger.warn({ err: (err as Error).message, reason }, 'could not record an Event'));
  }
}
