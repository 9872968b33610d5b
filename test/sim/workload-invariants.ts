// What must hold of the workloads the opt-ins act on, whatever the interleaving — checked from the
// API server's record (the fake's write log and store, and when it compacted its history), never
// from pvx's memory or its own code:
//   statefulset-recreated-as-written  a StatefulSet pvx created again has exactly the spec (and the
//                                     labels, annotations and owners) its owner last wrote — an
//                                     edit made while it was being deleted included — but for a
//                                     template's storage request, which only grows;
//   never-recreate-owner-deleted      pvx never creates a StatefulSet whose deletion someone else
//                                     started (a background, foreground or orphaning delete of
//                                     theirs, or one turned into a cascade after pvx's), nor one
//                                     whose namespace was deleted since (not in a namespace of
//                                     the name created again: another's);
//   no-statefulset-lost               one pvx deleted is absent only while a record of pvx's holds
//                                     it, and exists again once everything settled — unless its
//                                     owner deleted it, its namespace went, or the API server's
//                                     history of how it went was compacted (pvx then says so);
//   eviction-recorded-first           pvx evicts only a pod it marked on the claim for a request first,
//   one-eviction-per-request          at most one per request,
//   one-pod-of-a-workload-at-a-time   no pod of a controller while another it evicted is not replaced,
//   eviction-finishes-expansion       and only a pod that is the only one holding a claim of the
//                                     request that recorded it, which a controller creates again;
//   namespace-deletion-not-held       a namespace being deleted is gone once everything settled;
//   no-record-outlives-its-request    a record of pvx's is kept only while its request is unfinished
//                                     (or, its StatefulSet not created again, while its request is);
//   template-update-settles           no request is left UpdatingTemplate once everything settled;
//   policy-keeps-growing              liveness: a claim over its policy's threshold, which no request
//                                     is growing, gets one within a bounded time.
import type {
  KubernetesObject,
  V1ConfigMap,
  V1Namespace,
  V1OwnerReference,
  V1PersistentVolumeClaim,
  V1Pod,
  V1StatefulSet,
  V1StorageClass,
} from '@kubernetes/client-node';
import type { VolumeExpansionPolicy } from '../../src/crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import type { FakeKubeClient, WriteRecord } from '../../src/k8s/testing/fake-client.ts';
import type { ListOptions } from '../../src/k8s/client.ts';
import { namespaces, resources, volumeExpansionPolicies, volumeExpansionRequests } from '../../src/k8s/resources.ts';
import { pvcAnnotations } from '../../src/crds/keys.ts';
import type { Violation } from './invariants.ts';
import { quantityBytes } from './oracle.ts';
import type { Trace } from './trace.ts';
import { claimsOf } from './workload-controllers.ts';
import { classModels } from './world.ts';

const recreating = new Set(['StatefulSet', 'ReplicaSet', 'ReplicationController', 'DaemonSet']);
const finished = new Set(['Completed', 'Failed', 'Rejected']);
const holds = (p: V1Pod, claim: string) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed' && claimsOf(p).includes(claim);
const controllerOf = (o: KubernetesObject): V1OwnerReference | undefined => o.metadata?.ownerReferences?.find((r) => r.controller);

/** What its owner writes of a StatefulSet: spec (a template's storage aside), labels, annotations (pvx's aside), owners. */
function ownerPart(sts: V1StatefulSet): { spec: unknown; labels: unknown; annotations: unknown; owners: unknown; storage: Record<string, string> } {
  const spec = structuredClone(sts.spec ?? {}) as NonNullable<V1StatefulSet['spec']>;
  const storage: Record<string, string> = {};
  for (const t of spec.volumeClaimTemplates ?? []) {
    storage[t.metadata?.name ?? ''] = t.spec?.resources?.requests?.storage ?? '0';
    if (t.spec?.resources?.requests) delete t.spec.resources.requests.storage;
  }
  const annotations = Object.fromEntries(Object.entries(sts.metadata?.annotations ?? {}).filter(([k]) => !k.startsWith('pvx.dev/')));
  return { spec, labels: sts.metadata?.labels ?? {}, annotations, owners: sts.metadata?.ownerReferences ?? [], storage };
}

const canonical = (o: unknown): string =>
  JSON.stringify(o, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v,
  );

/** One incarnation of a StatefulSet (a UID): what its owner last wrote, and who began its deletion. */
interface Incarnation {
  key: string;
  uid: string;
  ownerLast: V1StatefulSet;
  /** Its namespace went (the namespace object was removed) since it was created: a namespace of the name now is another. */
  namespaceWent?: boolean;
  deletedBy?: 'pvx' | 'owner';
  /** When pvx's orphaning delete landed (simulated ms), and the fake's compactions since. */
  pvxDeletedAt?: number;
  /** The pvx process that recorded it as about to be deleted (its record's step Deleting), until a delete of pvx's landed. */
  pvxAboutToDelete?: string;
  /**
   * Its owner deleted it with propagation Orphan after that record and before any delete of pvx's:
   * to any other process, a history byte for byte pvx's own orphaning delete (the limit docs/opt-ins.md states).
   */
  orphanedByOwnerAsPvxWould?: string;
  compactedSince: boolean;
  gone: boolean;
}

export class WorkloadInvariants {
  private readonly incarnations = new Map<string, Incarnation>();
  /** The latest incarnation per StatefulSet key. */
  private readonly latest = new Map<string, Incarnation>();
  /** Per request UID, the pods (UIDs) pvx evicted for it. */
  private readonly evictedFor = new Map<string, Set<string>>();
  /** Pods pvx evicted, with their owner and the claims they mounted, until a running pod mounts those claims again. */
  private readonly awaitingReplacement: { owner: string; pod: string; claims: string[] }[] = [];
  private readonly reported = new Set<string>();
  /** Per pod UID, the requests (namespace/name/uid, their target claim) whose status recorded it as the pod they evict, ever. */
  private readonly recordedEvictions = new Map<string, { request: string; claim: string }[]>();
  /** Requests' names by UID, for the messages. */
  private readonly requestNames = new Map<string, string>();
  /** Per claim key, since when (simulated ms) it has been over its policy's threshold with nothing growing it. */
  private readonly starved = new Map<string, number>();
  /** Per pod UID, the resourceVersion it was created at; per pvx process, the version of its last list of pods. */
  private readonly podCreatedAt = new Map<string, number>();
  private readonly podsListedAt = new Map<string, number>();

  /** Per pvx process and StatefulSet ("identity namespace/name"), the version of its last read of that StatefulSet alone. */
  private readonly statefulSetReadAt = new Map<string, number>();
  /** Per pod UID, the last controller its writes named (the garbage collector takes it away when its owner is orphaned). */
  private readonly lastController = new Map<string, V1OwnerReference>();
  /** Per StatefulSet UID, the version at which its deletion began (a deletionTimestamp, or its delete). */
  private readonly statefulSetGoingAt = new Map<string, number>();

  /** A pvx process listed pods, or read one StatefulSet: what it decides an eviction on from then is what the API server had. */
  onList(identity: string, resource: string, resourceVersion: string, opts: ListOptions = {}): void {
    if (resource === resources.pods.resource) this.podsListedAt.set(identity, Number(resourceVersion));
    const named = /(?:^|,)metadata\.name=([^,]+)/.exec(opts.fieldSelector ?? '')?.[1];
    if (resource === resources.statefulSets.resource && named) this.statefulSetReadAt.set(`${identity} ${opts.namespace}/${named}`, Number(resourceVersion));
  }

  private readonly api: FakeKubeClient;
  private readonly trace: Trace;
  private readonly now: () => number;
  private readonly violations: Violation[];
  private readonly isPvx: (actor: string | undefined) => boolean;
  private readonly recordNamespace: string;
  /** Bytes the applications wrote to a claim (by UID): the usage the policies measure. */
  usedBytes: (uid: string) => number | undefined = () => undefined;
  /** An object-count quota on requests, when the seed has one: a full one holds every policy back (its status says so). */
  requestQuota: number | undefined;
  /** A claim fit for the liveness check has been over its threshold, growing by nothing, this long: a violation. */
  static readonly livenessBoundMs = 5 * 60_000;

  constructor(
    api: FakeKubeClient,
    trace: Trace,
    now: () => number,
    violations: Violation[],
    isPvx: (actor: string | undefined) => boolean,
    recordNamespace: string,
  ) {
    this.api = api;
    this.trace = trace;
    this.now = now;
    this.violations = violations;
    this.isPvx = isPvx;
    this.recordNamespace = recordNamespace;
    // The StatefulSets there are before the checks start: each its owner's as it is.
    for (const sts of api.peek<V1StatefulSet>(resources.statefulSets)) {
      const key = `${sts.metadata?.namespace}/${sts.metadata?.name}`;
      const inc: Incarnation = {
        key,
        uid: sts.metadata?.uid as string,
        ownerLast: sts,
        compactedSince: false,
        gone: false,
      };
      this.incarnations.set(inc.uid, inc);
      this.latest.set(key, inc);
    }
  }

  private violate(rule: string, subject: string, message: string): void {
    const id = `${rule} ${subject}`;
    if (this.reported.has(id)) return;
    this.reported.add(id);
    this.violations.push({ rule, subject, message, at: this.now() });
    this.trace.add('violation', `${rule} ${subject}: ${message}`);
  }

  /**
   * The fake forgot its watch history: a StatefulSet pvx deleted, gone or going, may not have had its
   * history read by pvx yet, which then cannot know how it went (and says so: FinalStateUnknown).
   */
  onCompaction(): void {
    for (const inc of this.incarnations.values()) if (inc.pvxDeletedAt !== undefined) inc.compactedSince = true;
  }

  onWrite(w: WriteRecord): void {
    if (w.resource === resources.statefulSets.resource) this.onStatefulSetWrite(w);
    if (w.resource === namespaces.resource && w.verb === 'delete')
      for (const inc of this.incarnations.values()) if (inc.key.startsWith(`${w.after.metadata?.name}/`)) inc.namespaceWent = true;
    if (w.resource === resources.pods.resource && w.verb === 'create')
      this.podCreatedAt.set(w.after.metadata?.uid as string, Number(w.after.metadata?.resourceVersion));
    const controller = w.resource === resources.pods.resource ? controllerOf(w.after) : undefined;
    if (controller) this.lastController.set(w.after.metadata?.uid as string, controller);
    const stsGoes = w.resource === resources.statefulSets.resource && (w.verb === 'delete' || w.after.metadata?.deletionTimestamp);
    if (stsGoes && !this.statefulSetGoingAt.has(w.after.metadata?.uid as string))
      this.statefulSetGoingAt.set(w.after.metadata?.uid as string, Number(w.after.metadata?.resourceVersion));
    if (w.resource === resources.statefulSetRecords.resource && w.after.metadata?.namespace === this.recordNamespace) {
      const step = this.recordStep(w.after as V1ConfigMap);
      this.trace.add('write', `${w.actor} ${w.verb}s record ${w.after.metadata?.name} (${step.phase}/${step.reason})`);
      const inc = this.incarnations.get(step.statefulSet?.uid ?? '');
      if (inc && step.phase === 'Deleting' && this.isPvx(w.actor) && !inc.deletedBy) inc.pvxAboutToDelete = w.actor as string;
    }
    if (w.resource === volumeExpansionRequests.resource) {
      const r = w.after as VolumeExpansionRequest;
      this.requestNames.set(r.metadata.uid as string, `${r.metadata.namespace}/${r.metadata.name}`);
    }
    // An eviction pvx marked on a claim before making it (the request's and the pod's UIDs): pvx
    // evicts only marked pods, and checks each against the rest of these rules at every attempt.
    // A request's status.eviction is anyone's who may write the status, no record of pvx's (seed
    // 4142: one forged for another pod counted that pod as the request's).
    if (w.resource === resources.persistentVolumeClaims.resource && this.isPvx(w.actor)) this.onEvictionMark(w);
    if (!this.isPvx(w.actor)) return;
    const podGoes =
      w.resource === resources.pods.resource && (w.verb === 'delete' || (w.after.metadata?.deletionTimestamp && !w.before?.metadata?.deletionTimestamp));
    if (podGoes && !(w.verb === 'delete' && w.before?.metadata?.deletionTimestamp)) this.onEviction(w.before as V1Pod, w.actor as string);
  }

  /** Every write of a StatefulSet: the owner's last version, who began a deletion, and what pvx creates. */
  private onStatefulSetWrite(w: WriteRecord): void {
    const sts = w.after as V1StatefulSet;
    const key = `${sts.metadata?.namespace}/${sts.metadata?.name}`;
    const uid = sts.metadata?.uid as string;
    const pvx = this.isPvx(w.actor);
    if (w.verb === 'create') {
      if (pvx) this.onPvxCreate(key, sts, w.actor as string);
      const inc: Incarnation = { key, uid, ownerLast: sts, compactedSince: false, gone: false };
      this.incarnations.set(uid, inc);
      this.latest.set(key, inc);
      return;
    }
    const inc = this.incarnations.get(uid);
    if (!inc) return;
    const before = w.before as V1StatefulSet | undefined;
    if (w.verb === 'delete') {
      // Gone at once, never marked deleting: a background delete of one without finalizers (its owner's).
      // One pvx was orphaning, taken at once by a second, Background delete, stays pvx's: the API
      // server's history of it is the garbage collector's finishing to the byte (a DELETED event
      // with "orphan" still on), so nobody reading it can tell — the limit docs/opt-ins.md states.
      if (!before?.metadata?.deletionTimestamp && !inc.deletedBy) inc.deletedBy = pvx ? 'pvx' : 'owner';
      inc.gone = true;
      if (!pvx) inc.ownerLast = w.after as V1StatefulSet;
      this.trace.add('write', `StatefulSet ${key} (uid ${uid}) is gone`);
      return;
    }
    const startsDeleting = sts.metadata?.deletionTimestamp && !before?.metadata?.deletionTimestamp;
    const cascade = sts.metadata?.finalizers?.includes('foregroundDeletion') && !before?.metadata?.finalizers?.includes('foregroundDeletion');
    if (startsDeleting) {
      inc.deletedBy = pvx ? 'pvx' : 'owner';
      if (!pvx && inc.pvxAboutToDelete && sts.metadata?.finalizers?.includes('orphan')) inc.orphanedByOwnerAsPvxWould = inc.pvxAboutToDelete;
      if (pvx) inc.pvxDeletedAt = this.now();
      this.trace.add('write', `${w.actor} deletes StatefulSet ${key} (finalizers ${JSON.stringify(sts.metadata?.finalizers ?? [])})`);
    } else if (cascade && !pvx) {
      inc.deletedBy = 'owner';
      this.trace.add('write', `${w.actor} turns the deletion of StatefulSet ${key} into a foreground cascade`);
    }
    if (!pvx) inc.ownerLast = sts;
  }

  /**
   * pvx created a StatefulSet: only one it deleted itself, in the namespace it deleted it from, as
   * its owner last wrote it — or one its owner orphaned in the moment between a pvx process's
   * record of its coming delete and that delete, when another process creates it: a delete names
   * nobody, and that history is pvx's own (the limit docs/opt-ins.md states; the process that wrote
   * the record, alive, is refused its delete and knows).
   */
  private onPvxCreate(key: string, created: V1StatefulSet, creator: string): void {
    this.trace.add('write', `pvx creates StatefulSet ${key} again`);
    const prev = this.latest.get(key);
    if (prev?.namespaceWent) {
      // Its namespace was deleted since (the StatefulSet with it): whoever deleted it, not pvx, decided.
      this.violate(
        'never-recreate-owner-deleted',
        key,
        `pvx created StatefulSet ${key} (uid ${prev.uid} before) again after its namespace was deleted: in ${this.api.get(namespaces, undefined, created.metadata?.namespace as string) ? 'another namespace of the name' : 'a namespace that is gone'}`,
      );
      return;
    }
    const indistinguishable = prev?.orphanedByOwnerAsPvxWould !== undefined && prev.orphanedByOwnerAsPvxWould !== creator;
    if (indistinguishable)
      this.trace.add('write', `(its owner's orphaning delete, after ${prev?.orphanedByOwnerAsPvxWould}'s record of its own: pvx's to ${creator})`);
    if (!prev || (prev.deletedBy !== 'pvx' && !indistinguishable)) {
      this.violate(
        'never-recreate-owner-deleted',
        key,
        prev
          ? `pvx created StatefulSet ${key} again, though its deletion (uid ${prev.uid}) was ${prev.deletedBy === 'owner' ? 'its owner’s' : 'not begun by pvx'}`
          : `pvx created StatefulSet ${key}, which it never deleted`,
      );
      return;
    }
    const was = ownerPart(prev.ownerLast);
    const now = ownerPart(created);
    const differs = (['spec', 'labels', 'annotations', 'owners'] as const).filter((k) => canonical(was[k]) !== canonical(now[k]));
    const shrunk = Object.entries(was.storage).filter(([t, size]) => quantityBytes(now.storage[t] ?? '0') < quantityBytes(size));
    if (differs.length > 0 || shrunk.length > 0)
      this.violate(
        'statefulset-recreated-as-written',
        key,
        `created again with ${[...differs, ...shrunk.map(([t]) => `a smaller template ${t}`)].join(', ')} other than its owner last wrote (uid ${prev.uid})`,
      );
  }

  /** A claim pvx marked with the pod it evicts for a request (pvcAnnotations.eviction). */
  private onEvictionMark(w: WriteRecord): void {
    const text = (w.after.metadata as { annotations?: Record<string, string> } | undefined)?.annotations?.[pvcAnnotations.eviction];
    if (!text || text === (w.before?.metadata as { annotations?: Record<string, string> } | undefined)?.annotations?.[pvcAnnotations.eviction]) return;
    const mark = JSON.parse(text) as { request: string; podUID: string };
    const request = `${this.requestNames.get(mark.request) ?? `${w.after.metadata?.namespace}/?`}/${mark.request}`;
    if (!(this.recordedEvictions.get(mark.podUID) ?? []).some((e) => e.request === request))
      this.recordedEvictions.set(mark.podUID, [...(this.recordedEvictions.get(mark.podUID) ?? []), { request, claim: w.after.metadata?.name as string }]);
  }

  /** pvx deleted a pod: only by an eviction a request recorded first, that finishes its expansion; one per request, one of a workload at a time. */
  private onEviction(pod: V1Pod, identity: string): void {
    const uid = pod.metadata?.uid as string;
    const name = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    this.trace.add('write', `pvx evicts pod ${name}`);
    const recorded = this.recordedEvictions.get(uid) ?? [];
    if (recorded.length === 0)
      this.violate('eviction-recorded-first', name, `pvx deleted pod ${name} (uid ${uid}), which no request recorded as the pod it evicts`);
    this.checkFinishes(pod, recorded, identity);
    for (const { request: r } of recorded) {
      const requestUID = r.slice(r.lastIndexOf('/') + 1);
      const pods = this.evictedFor.get(requestUID) ?? new Set<string>();
      pods.add(uid);
      this.evictedFor.set(requestUID, pods);
      if (pods.size > 1)
        this.violate(
          'one-eviction-per-request',
          r.slice(0, r.lastIndexOf('/')),
          `evicted ${pods.size} pods (${[...pods].join(', ')}); a request evicts at most one`,
        );
    }
    const owner = controllerOf(pod)?.uid ?? '';
    this.replaced();
    const waiting = this.awaitingReplacement.find((e) => e.owner === owner && owner !== '');
    if (waiting)
      this.violate(
        'one-pod-of-a-workload-at-a-time',
        name,
        `evicted while pod ${waiting.pod} of the same controller, evicted before, has not been replaced by a running pod`,
      );
    this.awaitingReplacement.push({ owner, pod: name, claims: claimsOf(pod) });
  }

  /**
   * The pod's StatefulSet began its deletion only after the evicting process last read it, alone,
   * from the API server: no client can know of a deletion later than its last look, and an eviction
   * cannot be made on the condition that the pod still has its owner. Earlier than that look, pvx
   * must have held back (seed 1212322: the pods list answered late, still naming the owner).
   */
  private orphanedSinceRead(pod: V1Pod, identity: string): boolean {
    const former = this.lastController.get(pod.metadata?.uid as string);
    if (former?.kind !== 'StatefulSet') return false;
    const readAt = this.statefulSetReadAt.get(`${identity} ${pod.metadata?.namespace}/${former.name}`);
    const goingAt = this.statefulSetGoingAt.get(former.uid);
    return readAt !== undefined && goingAt !== undefined && goingAt > readAt;
  }

  /**
   * The pod was the only one holding a claim of a request that recorded it, and a controller creates
   * it again. Another holder counts only if it existed when the evicting process last listed pods
   * (one created after that, a moment before the eviction, no one could have seen).
   */
  private checkFinishes(pod: V1Pod, recorded: { claim: string }[], identity: string): void {
    const listedAt = this.podsListedAt.get(identity) ?? 0;
    const name = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    const claims = claimsOf(pod);
    const asked = recorded.map((e) => e.claim).filter((c) => claims.includes(c));
    if (recorded.length > 0 && asked.length === 0)
      this.violate(
        'eviction-finishes-expansion',
        name,
        `pvx evicted pod ${name}, which mounts none of the claims its requests grow (${recorded.map((e) => e.claim).join(', ')})`,
      );
    const owner = controllerOf(pod);
    if ((!owner || !recreating.has(owner.kind)) && !this.orphanedSinceRead(pod, identity))
      this.violate('eviction-finishes-expansion', name, `pvx evicted pod ${name}, which no controller creates again (${owner ? owner.kind : 'none'})`);
    const others = this.api
      .peek<V1Pod>(resources.pods)
      .filter(
        (p) =>
          p.metadata?.uid !== pod.metadata?.uid &&
          p.metadata?.namespace === pod.metadata?.namespace &&
          asked.some((c) => holds(p, c)) &&
          (this.podCreatedAt.get(p.metadata?.uid as string) ?? 0) <= listedAt,
      );
    if (others.length > 0)
      this.violate(
        'eviction-finishes-expansion',
        name,
        `pvx evicted pod ${name} while pod ${others.map((p) => p.metadata?.name).join(', ')} also held ${asked.join(', ')}: the filesystem cannot grow while it does`,
      );
  }

  /** Drops the evictions whose claims a running pod mounts again, and those of pods their StatefulSet no longer runs (scaled down). */
  private replaced(): void {
    const running = this.api.peek<V1Pod>(resources.pods).filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
    const sets = this.api.peek<V1StatefulSet>(resources.statefulSets);
    const gone = (pod: string) => {
      const [ns, name] = pod.split('/') as [string, string];
      const sts = sets.find((s) => s.metadata?.namespace === ns && name.startsWith(`${s.metadata?.name}-`));
      const ordinal = Number(name.slice((sts?.metadata?.name?.length ?? 0) + 1));
      const start = sts?.spec?.ordinals?.start ?? 0;
      return sts === undefined || (Number.isInteger(ordinal) && (ordinal < start || ordinal >= start + (sts.spec?.replicas ?? 1)));
    };
    for (let i = this.awaitingReplacement.length - 1; i >= 0; i--) {
      const e = this.awaitingReplacement[i] as { pod: string; claims: string[] };
      if (gone(e.pod) || e.claims.every((c) => running.some((p) => claimsOf(p).includes(c)))) this.awaitingReplacement.splice(i, 1);
    }
  }

  private records(): V1ConfigMap[] {
    return this.api.peek<V1ConfigMap>(resources.statefulSetRecords).filter((c) => c.metadata?.namespace === this.recordNamespace);
  }

  private recordStep(cm: V1ConfigMap): {
    phase?: string;
    reason?: string;
    statefulSet?: { name?: string; uid?: string };
    request?: { namespace?: string; uid?: string };
  } {
    try {
      return JSON.parse(cm.data?.['step.json'] ?? '{}') as ReturnType<WorkloadInvariants['recordStep']>;
    } catch {
      return {};
    }
  }

  /** A StatefulSet pvx deleted is absent only while a record of pvx's holds it. */
  checkStep(): void {
    if (this.awaitingReplacement.length > 0) this.replaced();
    const held = new Set(
      this.records()
        .map((cm) => this.recordStep(cm))
        .filter((s) => s.phase === 'Recorded' || s.phase === 'Deleting')
        .map((s) => s.statefulSet?.uid),
    );
    for (const inc of this.latest.values()) {
      if (!inc.gone || inc.deletedBy !== 'pvx' || held.has(inc.uid) || this.excused(inc)) continue;
      this.violate('no-statefulset-lost', inc.key, `StatefulSet ${inc.key}, deleted by pvx, is gone and no record of pvx's holds it`);
    }
  }

  /**
   * A StatefulSet pvx deleted may stay gone when its namespace is going or went (a namespace of the
   * name created since is another), or its history was compacted before pvx read it.
   */
  private excused(inc: Incarnation): boolean {
    const ns = this.api.get<V1Namespace>(namespaces, undefined, inc.key.split('/')[0] as string);
    return !ns || inc.namespaceWent === true || Boolean(ns.metadata?.deletionTimestamp) || inc.compactedSince;
  }

  /** Once everything settled: every StatefulSet pvx deleted exists again, no step is left under way, no namespace held, no record kept past its request. */
  checkSettled(): void {
    this.checkStep();
    for (const r of this.unsettled())
      this.violate(
        'template-update-settles',
        `${r.metadata.namespace}/${r.metadata.name}`,
        `after the quiet period still UpdatingTemplate (${r.status?.reason ?? ''}: ${r.status?.message ?? ''})`,
      );
    for (const inc of this.latest.values()) {
      if (!inc.gone || inc.deletedBy !== 'pvx' || this.excused(inc)) continue;
      this.violate('no-statefulset-lost', inc.key, `StatefulSet ${inc.key}, deleted by pvx, does not exist after the quiet period`);
    }
    for (const ns of this.api.peek<V1Namespace>(namespaces).filter((n) => n.metadata?.deletionTimestamp)) {
      const held = [resources.pods, resources.persistentVolumeClaims, resources.statefulSets, volumeExpansionRequests]
        .flatMap((t) => this.api.peek(t).filter((o) => o.metadata?.namespace === ns.metadata?.name))
        .map((o) => `${o.kind ?? ''} ${o.metadata?.name} (finalizers ${JSON.stringify(o.metadata?.finalizers ?? [])})`);
      this.violate(
        'namespace-deletion-not-held',
        ns.metadata?.name as string,
        `namespace ${ns.metadata?.name} is still being deleted after the quiet period; left in it: ${held.join(', ') || 'nothing'}`,
      );
    }
    const requests = new Map(this.api.peek<VolumeExpansionRequest>(volumeExpansionRequests).map((r) => [r.metadata.uid, r]));
    for (const cm of this.records()) {
      const step = this.recordStep(cm);
      const req = requests.get(step.request?.uid);
      const kept = req && (!finished.has(req.status?.phase ?? '') || step.reason === 'FinalStateUnknown');
      if (!kept)
        this.violate(
          'no-record-outlives-its-request',
          cm.metadata?.name as string,
          `record ${cm.metadata?.name} (${step.phase}/${step.reason}) is kept, its request ${req ? `finished (${req.status?.phase})` : 'gone'}`,
        );
    }
    for (const [claim, since] of this.starved)
      if (this.now() - since >= WorkloadInvariants.livenessBoundMs)
        this.violate(
          'policy-keeps-growing',
          claim,
          `over its policy's threshold for ${Math.round((this.now() - since) / 1000)} s with no request growing it and nothing holding the policy back`,
        );
  }

  /**
   * Requests whose template step is under way: not settled, whatever their children say — unless
   * it waits for a rollout that only a person ends (a partition, or a pod of the new revision that
   * never becomes Ready), as its StatefulSet shows.
   */
  unsettled(): VolumeExpansionRequest[] {
    return this.api.peek<VolumeExpansionRequest>(volumeExpansionRequests).filter((r) => {
      if (r.status?.phase !== 'UpdatingTemplate') return false;
      if (r.status.reason !== 'StatefulSetNotSteady') return true;
      const sts = this.api.get<V1StatefulSet>(resources.statefulSets, r.metadata.namespace, r.spec.target.statefulSetName as string);
      const stuck =
        sts?.status?.currentRevision !== sts?.status?.updateRevision &&
        ((sts?.spec?.updateStrategy?.rollingUpdate?.partition ?? 0) > 0 ||
          this.api
            .peek<V1Pod>(resources.pods)
            .some(
              (p) =>
                p.metadata?.ownerReferences?.some((o) => o.uid === sts?.metadata?.uid) &&
                !p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
            ));
      return !stuck;
    });
  }

  /** The claims starving now (see liveness): the quiet period does not end early while one is. */
  starving(): number {
    return this.starved.size;
  }

  /**
   * Liveness, in the quiet period (usage frozen, no faults, no person acting): which claims are
   * over their policy's threshold with nothing growing them and nothing holding the policy back, by
   * the checker's own reading of the policy's rules — only where that reading is certain: a
   * namespaced Auto policy with a used-percent trigger alone and no maintenance window, the oldest
   * of those that select the claim; a claim mounted by a running pod, of a class that grows, under
   * every maximum, past its cooldown, not being resized, with no unfinished request for it (a
   * StatefulSet request's only for the claims whose own step is unfinished).
   */
  checkLiveness(quietStart: number): void {
    const now = this.now();
    const starving = new Set(this.starvingClaims(quietStart));
    for (const key of [...this.starved.keys()]) if (!starving.has(key)) this.starved.delete(key);
    for (const key of starving) if (!this.starved.has(key)) this.starved.set(key, now);
  }

  private starvingClaims(quietStart: number): string[] {
    const api = this.api;
    const policies = api
      .peek<VolumeExpansionPolicy>(volumeExpansionPolicies)
      .filter((p) => !p.metadata.deletionTimestamp)
      .sort(
        (a, b) =>
          new Date(a.metadata.creationTimestamp ?? 0).getTime() - new Date(b.metadata.creationTimestamp ?? 0).getTime() ||
          (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''),
      );
    if (policies.length === 0) return [];
    if (api.peek(resources.statefulSets).length === 0 && api.peek(volumeExpansionRequests).length === 0) return [];
    const requests = api.peek<VolumeExpansionRequest>(volumeExpansionRequests);
    if (this.requestQuota !== undefined && requests.length >= this.requestQuota) return [];
    const classes = new Map(api.peek<V1StorageClass>(resources.storageClasses).map((c) => [c.metadata?.name, c]));
    const running = api.peek<V1Pod>(resources.pods).filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
    const out: string[] = [];
    for (const pvc of api.peek<V1PersistentVolumeClaim>(resources.persistentVolumeClaims)) {
      const key = `${pvc.metadata?.namespace}/${pvc.metadata?.name}`;
      const policy = governing(pvc, policies, api);
      if (!policy || !simple(policy)) continue;
      const cls = classes.get(pvc.spec?.storageClassName);
      const model = classModels[pvc.spec?.storageClassName ?? ''];
      if (!cls?.allowVolumeExpansion || cls.provisioner === 'ebs.csi.aws.com' || pvc.status?.phase !== 'Bound' || pvc.metadata?.deletionTimestamp) continue;
      const capacity = quantityBytes(pvc.status?.capacity?.storage ?? '0');
      if (quantityBytes(pvc.spec?.resources?.requests?.storage ?? '0') !== capacity || pvc.status?.allocatedResourceStatuses || pvc.status?.conditions?.length)
        continue;
      const maxes = [policy.spec.maxSize ? quantityBytes(policy.spec.maxSize) : undefined, model?.driverMaxBytes, model?.refusesAboveBytes].filter(
        (b): b is bigint => b !== undefined,
      );
      // Under every maximum; guardrails and quotas may refuse a request, but one is made all the same.
      if (maxes.some((m) => capacity + 2n ** 30n * 2n >= m)) continue;
      if (!running.some((p) => claimsOf(p).includes(pvc.metadata?.name as string))) continue;
      const used = this.usedBytes(pvc.metadata?.uid as string);
      if (used === undefined || used * 100 < Number(capacity) * ((policy.spec.triggers.usedPercent as number) + 2)) continue;
      if (growing(pvc, requests)) continue;
      const cooldownMs = durationMs(policy.spec.cooldown ?? '30m');
      const last = lastActivity(pvc, requests);
      if (last === undefined || last + cooldownMs + 60_000 > this.nowWall() || this.now() < quietStart) continue;
      out.push(key);
    }
    return out;
  }

  /** The wall clock the requests' timestamps are in (the simulation's Date), as ms. */
  private nowWall(): number {
    return Date.now();
  }
}

/** A policy whose reading is certain here: Auto, a used-percent trigger alone, no window, rules that read. */
function simple(p: VolumeExpansionPolicy): boolean {
  const t = p.spec.triggers;
  return (
    (p.spec.mode ?? 'Auto') === 'Auto' &&
    !p.spec.windows?.length &&
    t.usedPercent !== undefined &&
    t.minFree === undefined &&
    t.forecast === undefined &&
    t.inodesUsedPercent === undefined &&
    (p.spec.cooldown === undefined || /^\d+(s|m)$/.test(p.spec.cooldown)) &&
    (p.spec.maxSize === undefined || /^\d+Gi$/.test(p.spec.maxSize)) &&
    (p.spec.step?.minimum === undefined || /^\d+(Gi|Mi)$/.test(p.spec.step.minimum))
  );
}

/** The oldest namespaced policy that acts and selects the claim (as the CRD's description says), if any. */
function governing(pvc: V1PersistentVolumeClaim, policies: readonly VolumeExpansionPolicy[], api: FakeKubeClient): VolumeExpansionPolicy | undefined {
  const selecting = policies.filter((p) => {
    if (p.metadata.namespace !== pvc.metadata?.namespace) return false;
    if (!Object.entries(p.spec.selector?.matchLabels ?? {}).every(([k, v]) => pvc.metadata?.labels?.[k] === v)) return false;
    if (p.spec.storageClassNames?.length && !p.spec.storageClassNames.includes(pvc.spec?.storageClassName ?? '')) return false;
    if (p.spec.statefulSetName) {
      const sts = api.get<V1StatefulSet>(resources.statefulSets, pvc.metadata?.namespace, p.spec.statefulSetName);
      const templates = (sts?.spec?.volumeClaimTemplates ?? []).map((t) => t.metadata?.name);
      if (!templates.some((t) => new RegExp(`^${t}-${p.spec.statefulSetName}-\\d+$`).test(pvc.metadata?.name ?? ''))) return false;
    }
    return true;
  });
  const readable = selecting.filter((p) => !p.spec.windows?.some((w) => !/^[\d*/ ,-]+$/.test(w.schedule) || (w.timeZone && w.timeZone.startsWith('Mars'))));
  return readable.find((p) => p.spec.mode !== 'DryRun') ?? readable[0];
}

/** Something is growing the claim: a request for it whose own step is unfinished. */
function growing(pvc: V1PersistentVolumeClaim, requests: readonly VolumeExpansionRequest[]): boolean {
  const name = pvc.metadata?.name;
  return requests.some((r) => {
    if (r.metadata.namespace !== pvc.metadata?.namespace || finished.has(r.status?.phase ?? '')) return false;
    if (r.spec.target.pvcName === name) return true;
    if (!r.spec.target.statefulSetName) return false;
    const targets = r.status?.targets ?? [];
    if (targets.length === 0) return Boolean(name?.startsWith(`${r.spec.target.volumeClaimTemplate}-${r.spec.target.statefulSetName}-`));
    return targets.some((t) => t.pvcName === name && !finished.has(t.phase ?? ''));
  });
}

/** When anything last happened to the claim's size (wall-clock ms): a request for it made, patched or finished. */
function lastActivity(pvc: V1PersistentVolumeClaim, requests: readonly VolumeExpansionRequest[]): number | undefined {
  const name = pvc.metadata?.name;
  const times = requests
    .filter((r) => r.metadata.namespace === pvc.metadata?.namespace && r.spec.target.pvcName === name)
    .flatMap((r) => [r.metadata.creationTimestamp, r.status?.timeline?.patchedAt, r.status?.timeline?.completedAt])
    .filter((t): t is Date | string => t !== undefined)
    .map((t) => new Date(t).getTime());
  const created = new Date(pvc.metadata?.creationTimestamp ?? 0).getTime();
  return Math.max(created, ...times);
}

/** A policy's duration (cooldown): seconds or minutes, as the simulation draws them. */
function durationMs(text: string): number {
  const n = Number(text.slice(0, -1));
  return text.endsWith('m') ? n * 60_000 : n * 1000;
}
