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
import { requestClaimKey, requestLabels } from '../../crds/keys.ts';
import type { VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import type { RequestStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { KubeClient } from '../../k8s/client.ts';
import type { RequestMetrics } from '../../metrics/expansion.ts';
import { RetryAfterError } from '../../k8s/errors.ts';
import { listAll, readLive, readPolicyLive } from '../../k8s/list.ts';
import { objectKey, resources, volumeExpansionRequests } from '../../k8s/resources.ts';
import { groupBy, setBounded } from '../../policies/shared/collections.ts';
import { isFinished } from '../../policies/request/phase.ts';
import { readRecord, recordName, type StatefulSetRecord } from '../../policies/request/statefulset-record.ts';
import { runningPodClaims } from '../../policies/claim/pods.ts';
import { decideRequest, requestChange, type ClaimContext, type RequestDecision, type RequestInput } from '../../policies/request/decide.ts';
import { requestDeadline } from '../../policies/request/timing.ts';
import { claimCompletedEvent, policyOf } from '../../policies/request/claim-event.ts';
import { differs, isInFlightStep, nextStatus, phaseChangeIsNews, showStepAfterMs } from '../../policies/request/status.ts';
import type { DriverProfiles } from '../../policies/budget/drivers.ts';
import { clusterGuardrails, guardrailsUnknown, type Guardrail } from '../../policies/request/validation.ts';
import type { ReconcileResult, Wake } from '../runtime/controller.ts';
import { ConflictError } from '../runtime/errors.ts';
import type { Informer, InformerHandlers } from '../../k8s/informer.ts';
import { staleCacheMs, UnseenCreates, UnseenWrites, type CacheState } from './unseen-writes.ts';
import { coreWriters } from './request-writers/core.ts';
import { evictionWriters } from './request-writers/eviction.ts';
import { templateWriters } from './request-writers/template.ts';
import { tryWrite, type DecisionKind, type Reading, type RequestWriting, type StatusWrite, type Writer, type Writers } from './request-writers/writing.ts';

/**
 * The writer of each kind of decision: the compiler asks for one when a kind is added to
 * RequestDecision. An opt-in's writers are its own module's, beside the core's.
 */
const writers: Writers<DecisionKind> = { ...coreWriters, ...templateWriters, ...evictionWriters };

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

/** A status decided and not written yet (an in-flight step), valid while the request is at resourceVersion. */
interface Unwritten {
  status: RequestStatus;
  resourceVersion: string;
  /** When the first unwritten step began (monotonic ms): written once it is showStepAfterMs old. */
  sinceMs: number;
}

/**
 * What a change of a request wakes (level-triggered: keys only). The request itself — a deleted
 * one too, so what the reconciler holds in memory for it is dropped; its parent, which sums up its
 * per-claim children (and learns that one is gone); and, once it no longer holds its claim
 * (finished or deleted), the requests waiting their turn for that claim.
 */
export function requestEvents(wake: Wake, requestsFor: (namespace: string, pvcName: string) => string[]): InformerHandlers<VolumeExpansionRequest> {
  const enqueue = (obj: VolumeExpansionRequest, gone: boolean) => {
    wake(objectKey(obj));
    const parent = obj.metadata.labels?.[requestLabels.parent];
    if (parent) wake(`${obj.metadata.namespace}/${parent}`);
    const pvcName = obj.spec?.target?.pvcName;
    if (pvcName && (gone || isFinished(obj))) for (const k of requestsFor(obj.metadata.namespace ?? '', pvcName)) wake(k);
  };
  return { onAdd: (r) => enqueue(r, false), onUpdate: (_o, n) => enqueue(n, false), onDelete: (r) => enqueue(r, true) };
}

/** The cache key of the claim a request targets by name, if it does. */
const claimKeyOf = (req: VolumeExpansionRequest): string | undefined =>
  req.spec?.target?.pvcName ? `${req.metadata.namespace}/${req.spec.target.pvcName}` : undefined;

/** New requests whose first sight is remembered until their patch (ExpansionRequestReconciler.firstSights). */
const firstSightsKept = 20_000;

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
  /**
   * When this process first saw each new request (no status yet), by UID, until its patch is sent:
   * pvx's own part of the way to the patch (pvx_request_seen_to_patch_seconds). Bounded: the
   * oldest goes first past firstSightsKept (a request refused before any patch is never asked for).
   */
  private readonly firstSights = new Map<string, number>();
  /**
   * When this process first saw each claim at its current version, by claim key: the time of a
   * change no writer dates that the claim's ledger does not record yet (ClaimContext.claimSeenAt).
   * Bounded as firstSights is.
   */
  private readonly claimSights = new Map<string, { resourceVersion: string; at: Date }>();

  constructor(deps: RequestReconcilerDeps) {
    this.d = deps;
    this.now = deps.now ?? (() => new Date());
    this.monotonicMs = deps.monotonicMs ?? (() => performance.now());
    this.unseenStatus = new UnseenWrites(this.monotonicMs);
    this.unseenClaimPatches = new UnseenWrites(this.monotonicMs);
  }

  /**
   * What wakes a request: its own changes and its children's (requestEvents); its claim's; a pod's
   * that mounts its claim; a VolumeAttributesClass appearing that it waits for; its StatefulSet
   * record's.
   */
  watch(wake: Wake): void {
    const { requests } = this.d;
    requests.on(requestEvents(wake, (ns, pvc) => this.requestsFor(ns, pvc)));
    requests.on({ onAdd: (r) => this.sawNew(r), onDelete: (r) => this.firstSights.delete(r.metadata.uid as string) });
    const claimChanged = (pvc: V1PersistentVolumeClaim) => {
      for (const k of this.requestsFor(pvc.metadata?.namespace ?? '', pvc.metadata?.name ?? '')) wake(k);
    };
    this.d.pvcs.on({ onAdd: claimChanged, onUpdate: (_o, n) => claimChanged(n), onDelete: claimChanged });
    const podChanged = (pod: V1Pod) => {
      for (const v of pod.spec?.volumes ?? []) {
        const claim = v.persistentVolumeClaim?.claimName;
        if (claim) for (const k of this.requestsFor(pod.metadata?.namespace ?? '', claim)) wake(k);
      }
    };
    this.d.pods.on({ onAdd: podChanged, onUpdate: (_o, n) => podChanged(n), onDelete: podChanged });
    // A request waiting for its VolumeAttributesClass to appear goes on as soon as it does.
    const classAdded = (vac: V1VolumeAttributesClass) => {
      for (const r of requests.list()) {
        if (r.spec?.volumeAttributesClassName === vac.metadata?.name && !isFinished(r)) wake(objectKey(r));
      }
    };
    this.d.volumeAttributesClasses?.on({ onAdd: classAdded });
    // A record's change is its request's news: the step moved, or ended.
    const recordChanged = (cm: V1ConfigMap) => {
      const a = cm.metadata?.annotations ?? {};
      if (a['pvx.dev/request-namespace'] && a['pvx.dev/request']) wake(`${a['pvx.dev/request-namespace']}/${a['pvx.dev/request']}`);
    };
    this.d.records?.on({ onAdd: recordChanged, onUpdate: (_o, n) => recordChanged(n), onDelete: recordChanged });
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
    const found = await this.requestToDecide(key);
    if (!('cached' in found)) return found;
    const { cached } = found;
    const claimKey = claimKeyOf(cached);
    const claimState = this.claimState(claimKey);
    if (claimState === 'wait' && claimKey) return { requeueAfterMs: this.unseenClaimPatches.msUntilStale(claimKey) };
    const rv = cached.metadata.resourceVersion ?? '';
    const held = this.unwritten.get(key);
    if (held && held.resourceVersion !== rv) this.unwritten.delete(key);
    const req = held?.resourceVersion === rv ? { ...cached, status: held.status } : cached;
    const decision = (this.d.decide ?? decideRequest)(await this.decisionInput(key, req, claimState));
    const log = this.d.logger.child({ controller: 'expansion-request', namespace: req.metadata.namespace, name: req.metadata.name });
    return this.execute({ key, req, written: cached.status }, decision, log);
  };

  /**
   * The request to decide from: the cache's copy, or the API server's when the cache is behind our
   * last write of it for long — or what to return instead (gone: what is held for it dropped; a
   * cache about to catch up: look again soon).
   */
  private async requestToDecide(key: string): Promise<{ cached: VolumeExpansionRequest } | ReconcileResult> {
    const cached = this.d.requests.get(key) ?? (await this.createdUnseen(key));
    if (!cached) {
      this.unwritten.delete(key);
      this.unseenStatus.forget(key);
      this.evictionAttempts.delete(key);
      return {};
    }
    // The cache has not seen our last write yet: its event brings the request back. Deciding from
    // the copy before it would only meet a 409. Behind for long, the event was lost: read it live.
    const requestState = this.unseenStatus.state(key, cached.metadata.resourceVersion);
    if (requestState === 'wait') return { requeueAfterMs: this.unseenStatus.msUntilStale(key) };
    if (requestState === 'current') return { cached };
    // The stale versions are kept: the cache still holds one of them until its watch delivers
    // (or relists), and the next reconcile must read live again rather than decide from it — a
    // StatefulSet request would make a child again that its stale status does not record.
    const live = await readLive<VolumeExpansionRequest>(
      this.d.client,
      volumeExpansionRequests,
      cached.metadata.namespace as string,
      cached.metadata.name as string,
    );
    if (live) return { cached: live };
    this.unseenStatus.forget(key);
    return {};
  }

  /** What decideRequest decides from: the request, and the caches (or the API server, where they may be behind) around it. */
  private async decisionInput(key: string, req: VolumeExpansionRequest, claimState: CacheState): Promise<RequestInput> {
    const ns = req.metadata.namespace as string;
    const now = this.now();
    // The claims of this namespace's requests, grouped once rather than scanned per claim.
    const byClaim = groupBy(
      this.d.requests.list().filter((r) => r.metadata.namespace === ns),
      requestClaimKey,
    );
    const { fresh, pinned } = await this.liveReads(req, claimState);
    const className = req.spec.volumeAttributesClassName;
    return {
      request: req,
      claim: (name) => this.claimContext({ name, req, requests: byClaim.get(`${ns}/${name}`) ?? [], fresh }),
      ...(req.spec.target?.statefulSetName ? await this.statefulSetInput(req, now, pinned) : {}),
      now,
      namespacePods: () => this.d.pods.list().filter((p) => p.metadata?.namespace === ns),
      namespaceRequests: () => this.withOwnEvictions(ns),
      evictionDecidedHere: this.decidedHere(),
      statefulSetNamed: (name) => this.d.statefulSets.get(`${ns}/${name}`),
      ...(this.evictionAttempts.has(key) ? { lastEvictionAttemptAt: this.evictionAttempts.get(key) } : {}),
      driverErrorTimeoutMs: this.d.driverErrorTimeoutMs,
      volumeAttributesClass: className ? this.d.volumeAttributesClasses?.get(className) : undefined,
      volumeAttributesClassesServed: this.d.volumeAttributesClasses !== undefined,
      ...(this.d.profiles ? { profiles: this.d.profiles } : {}),
      ...(await this.askingPolicy(req)),
    };
  }

  /**
   * What is read from the API server rather than the cache before deciding. The namespace's
   * claims, when the cache is behind our patch of this one — and when a StatefulSet request is
   * about to pin its claims: what it pins (each claim's UID, capacity and the size asked of it) is
   * what its children grow the claims to, and a cache a moment behind a resize would pin the size
   * before it. Its StatefulSet too then: a cache a moment behind a scale-down would pin the claim of
   * a replica that is gone (simulation seed 2844).
   */
  private async liveReads(
    req: VolumeExpansionRequest,
    claimState: CacheState,
  ): Promise<{ fresh?: Map<string, V1PersistentVolumeClaim>; pinned?: { statefulSet: V1StatefulSet | undefined } }> {
    const ns = req.metadata.namespace as string;
    const pinning = Boolean(req.spec.target?.statefulSetName) && !req.status?.targets?.length;
    const fresh = claimState === 'read-live' || pinning ? await this.freshClaims(ns) : undefined;
    const pinned = pinning
      ? { statefulSet: await readLive<V1StatefulSet>(this.d.client, resources.statefulSets, ns, req.spec.target.statefulSetName as string) }
      : undefined;
    if (claimState === 'read-live') this.unseenClaimPatches.forget(`${ns}/${req.spec.target.pvcName}`);
    return { fresh, pinned };
  }

  /** A StatefulSet request's part of its input: its StatefulSet (as pinned, or cached), its children, and its record. */
  private async statefulSetInput(
    req: VolumeExpansionRequest,
    now: Date,
    pinned: { statefulSet: V1StatefulSet | undefined } | undefined,
  ): Promise<Pick<RequestInput, 'statefulSet' | 'children' | 'requestNamed' | 'statefulSetRecord' | 'recordNamespace'>> {
    const ns = req.metadata.namespace as string;
    return {
      statefulSet: pinned ? pinned.statefulSet : this.d.statefulSets.get(`${ns}/${req.spec.target.statefulSetName}`),
      children: await this.children(req, now),
      requestNamed: (name: string) => this.d.requests.get(`${ns}/${name}`),
      ...this.recordOf(req),
    };
  }

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
    // A request the cache shows finished has ended whatever was decided for it: its own copy
    // speaks (seed 2273189: an eviction decided, its record's write answered 500, and the request
    // completed as its pod mounted the claim anew; remembered, the decision held the workload's
    // next eviction for ten minutes).
    const current = (r: VolumeExpansionRequest) => {
      const ours = byUID.get(r.metadata.uid);
      return ours && !isFinished(r) && r.status?.eviction?.podUID !== ours.status?.eviction?.podUID ? ours : r;
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
  private claimState(claimKey: string | undefined): CacheState {
    if (!claimKey) return 'current';
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

  /** What decideRequest knows of one claim: the claim, its class, its namespace's quotas, the other requests on it, the guardrails, and whether a running pod mounts it. */
  private claimContext(c: {
    name: string;
    req: VolumeExpansionRequest;
    requests: VolumeExpansionRequest[];
    fresh: ReadonlyMap<string, V1PersistentVolumeClaim> | undefined;
  }): ClaimContext {
    const { name, req, requests, fresh } = c;
    const ns = req.metadata.namespace as string;
    const claim = fresh ? fresh.get(name) : this.d.pvcs.get(`${ns}/${name}`);
    const claimSeenAt = this.claimSeenAt(`${ns}/${name}`, claim);
    return {
      claim,
      ...(claimSeenAt ? { claimSeenAt } : {}),
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

  /** Carries out a decision: its kind's writer (writers), given this reconciler's part (writing). */
  private execute(r: Reading, decision: RequestDecision, log: Logger): Promise<ReconcileResult> {
    const write = writers[decision.kind] as Writer<DecisionKind>;
    return write(this.writing(log), r, decision);
  }

  /** What the writers work with in one reconcile (RequestWriting). */
  private writing(log: Logger): RequestWriting {
    return {
      client: this.d.client,
      log,
      metrics: this.d.metrics,
      now: this.now,
      monotonicMs: this.monotonicMs,
      fence: (what) => this.fence(what),
      writeStatus: (r, next, opts) => this.writeStatus(r, next, opts),
      event: (req, type, reason, message) => this.event(req, type, reason, message),
      carryOn: (r, next) => this.execute(r, next, log),
      unseenStatus: this.unseenStatus,
      unseenClaimPatches: this.unseenClaimPatches,
      ownClaimPatches: this.d.ownClaimPatches,
      ownCreates: this.d.ownCreates,
      wakeAfter: this.d.wakeAfter,
      decidedEvictions: this.decidedEvictions,
      evictionAttempts: this.evictionAttempts,
      sinceFirstSight: (uid) => this.sinceFirstSight(uid),
    };
  }

  /**
   * When the claim was first seen at its version (see claimSights). Simulation seed 2617610: a
   * change of class by a writer no managedFields entry names, with the claims' cache behind the
   * ledger that recorded it, was dated "now" at every look; each status write of the budget's
   * message woke the request again, and it wrote again, eight times a second.
   */
  private claimSeenAt(key: string, claim: V1PersistentVolumeClaim | undefined): Date | undefined {
    const resourceVersion = claim?.metadata?.resourceVersion;
    if (!resourceVersion) return undefined;
    const seen = this.claimSights.get(key);
    if (seen?.resourceVersion === resourceVersion) return seen.at;
    const at = this.now();
    this.claimSights.delete(key); // a claim seen at a new version is the newest entry, not kept at its first place
    setBounded(this.claimSights, key, { resourceVersion, at }, firstSightsKept);
    return at;
  }

  /** Records when a request with no status yet was first seen (see firstSights). */
  private sawNew(r: VolumeExpansionRequest): void {
    const uid = r.metadata.uid;
    if (!uid || r.status?.phase || this.firstSights.has(uid)) return;
    setBounded(this.firstSights, uid, this.monotonicMs(), firstSightsKept);
  }

  private sinceFirstSight(uid: string): number | undefined {
    const at = this.firstSights.get(uid);
    this.firstSights.delete(uid);
    return at === undefined ? undefined : this.monotonicMs() - at;
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
  private async writeStatus(r: Reading, next: RequestStatus, opts: { always?: boolean } = {}): Promise<StatusWrite> {
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
    // Decided from a stale copy (the cache had not seen a newer version yet): decide again from
    // the new one. Its watch event brings the request back; counted as a version our cache must
    // leave behind, so that if that event was lost the request is read from the API server
    // (staleCacheMs) rather than decided from the same copy, and refused, for ever.
    const written = await tryWrite(
      () => this.d.client.patchRequestStatus(req.metadata.namespace as string, req.metadata.name as string, merged, resourceVersion),
      (err) => {
        this.unseenStatus.wrote(key, resourceVersion);
        return new ConflictError(`request ${req.metadata.name} changed meanwhile: ${err.message}`);
      },
    );
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
