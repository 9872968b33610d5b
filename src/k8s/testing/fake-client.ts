// An in-memory KubeClient for unit tests that behaves like the API server where it matters to
// pvx: every write bumps one cluster-wide resourceVersion; a write with a stale resourceVersion
// fails 409 Conflict; creating an existing object fails 409 AlreadyExists; a missing object 404;
// watches replay history after a resourceVersion and answer 410 Expired once it is compacted.
// Tests can also break things on purpose: fail the next calls, end every watch stream. Every
// stored change is reported to write observers (the API server's audit log, for the simulation's
// invariants), tagged with the caller that `asActor` names. Not shipped: the build bundles only what
// src/cli/main.ts imports, and no module outside tests imports it (src/architecture.test.ts).
import type {
  KubernetesObject,
  V1ConfigMap,
  V1Lease,
  V1Node,
  V1PersistentVolumeClaim,
  V1Pod,
  V1PodDisruptionBudget,
  V1ResourceQuota,
  V1StatefulSet,
  V1StorageClass,
} from '@kubernetes/client-node';
import type { PolicyStatus } from '../../crds/volume-expansion-policy.ts';
import type { RequestStatus } from '../../crds/volume-expansion-request.ts';
import type {
  AccessReviewResult,
  CommandClient,
  DeletePreconditions,
  EventRecord,
  KubeClient,
  MintedToken,
  NonResourceAccessReview,
  TokenReviewResult,
  UserInfo,
  ListOptions,
  ListPage,
  PolicyRef,
  PvcAnnotationsPatch,
  PvcSizePatch,
  RequestAnnotationsPatch,
  WatchEvent,
  WatchHandle,
  WatchOptions,
  KubeletClient,
} from '../client.ts';
import { ApiError } from '../errors.ts';
import { parseBytes } from '../quantity.ts';
import {
  clusterVolumeExpansionPolicies,
  leaseType,
  namespaces,
  objectKey,
  resources,
  volumeExpansionPolicies,
  volumeExpansionRequests,
  type ResourceType,
} from '../resources.ts';

interface Watcher {
  resource: string;
  namespace?: string;
  selectors: Pick<ListOptions, 'labelSelector' | 'fieldSelector'>;
  onEvent: (e: WatchEvent) => void;
  onEnd: (err?: unknown) => void;
}

interface HistoryEntry {
  rv: number;
  resource: string;
  event: WatchEvent;
}

/** One change the store accepted, as an audit log records it. */
export interface WriteRecord {
  verb: 'create' | 'update' | 'delete';
  resource: string;
  /** The object before the write (undefined for create). Observers share these objects: read, never change them. */
  before: KubernetesObject | undefined;
  /** The object as stored (for delete, the last version). */
  after: KubernetesObject;
  /** Who made the write: the name given to asActor, else undefined (the test itself). */
  actor: string | undefined;
}

const clone = <T>(o: T): T => structuredClone(o);

/** JSON text with object keys sorted and undefined left out: equal for equal content, whatever the key order. */
const canonicalJSON = (o: unknown): string =>
  JSON.stringify(o, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );

/** What ResourceQuota admission charges a claim for storage: max(spec, allocated). */
function storageCharge(pvc: V1PersistentVolumeClaim): bigint {
  const spec = parseBytes(pvc.spec?.resources?.requests?.storage ?? '0');
  const allocated = parseBytes(pvc.status?.allocatedResources?.storage ?? '0');
  return spec > allocated ? spec : allocated;
}

/** PodDisruptionBudgets (policy/v1): pvx never reads them, the Eviction API does (evictPod). */
export const podDisruptionBudgets: ResourceType = {
  resource: 'poddisruptionbudgets',
  group: 'policy',
  version: 'v1',
  kind: 'PodDisruptionBudget',
  namespaced: true,
};

/** The finalizer the API server adds to an object deleted with propagationPolicy Orphan; the garbage collector removes it. */
export const orphanFinalizer = 'orphan';
/** The finalizer of a delete with propagationPolicy Foreground: the garbage collector deletes the dependents first. */
export const foregroundFinalizer = 'foregroundDeletion';
/** A delete's propagationPolicy. */
export type Propagation = 'Orphan' | 'Foreground' | 'Background';
/** The kinds whose metadata.generation the fake keeps (it moves with the spec): what a controller's observedGeneration is read against. */
const generational = new Set(['statefulsets']);

/**
 * Whether an object passes a list's or a watch's selectors, of the forms pvx sends: labels
 * "k=v,k2=v2", and the field metadata.name=NAME (other field selectors, such as the pods'
 * status.phase filter, are the API server's own and let everything through here).
 */
function selected(obj: KubernetesObject, opts: Pick<ListOptions, 'labelSelector' | 'fieldSelector'>): boolean {
  const labels = obj.metadata?.labels ?? {};
  const byLabel = (opts.labelSelector ?? '')
    .split(',')
    .filter(Boolean)
    .every((term) => {
      const [k, v] = term.split('=');
      return labels[k as string] === v;
    });
  const name = /(?:^|,)metadata\.name=([^,]+)/.exec(opts.fieldSelector ?? '')?.[1];
  return byLabel && (name === undefined || obj.metadata?.name === name);
}

/** Whether a PodDisruptionBudget's selector (matchLabels; empty: every pod) takes a pod of these labels. */
function selects(pdb: V1PodDisruptionBudget, labels: Record<string, string> | undefined): boolean {
  return Object.entries(pdb.spec?.selector?.matchLabels ?? {}).every(([k, v]) => labels?.[k] === v);
}

export class FakeKubeClient implements CommandClient, KubeletClient {
  private rv = 1;
  private readonly store = new Map<string, Map<string, KubernetesObject>>();
  private history: HistoryEntry[] = [];
  private compactedBefore = 0;
  private readonly watchers = new Set<Watcher>();
  private readonly failures: { method: string; error: unknown }[] = [];
  /** Every call, in order, for assertions on API traffic ("no hot loop"). */
  readonly calls: string[] = [];
  /** Events emitted, in order. */
  readonly events: EventRecord[] = [];
  /**
   * Status writes, and claim annotation writes, by a client that changed nothing
   * (`kind/namespace/name`): a reconcile that changes nothing must write nothing, and tests
   * assert this stays empty. `status` is what the write carried (the annotations, for a claim).
   */
  readonly noOpWrites: { subject: string; status: { reason?: string } }[] = [];
  /** Kubelet stats summaries by node; an Error value makes that node's call fail with it. */
  readonly summaries = new Map<string, unknown>();
  /**
   * What TokenReview answers: the user of each token the test gave out; an Error value makes that
   * token's review fail with it. Any other token is not authenticated, as a real API server says.
   */
  readonly tokens = new Map<string, UserInfo | Error>();
  /** The ServiceAccounts (namespace/name) TokenRequest mints tokens for. */
  readonly serviceAccounts = new Set<string>();
  private mintedCount = 0;
  /**
   * What SubjectAccessReview answers (an Error is thrown as the call's failure). Default: nothing is
   * allowed, as RBAC allows nothing not granted.
   */
  authorize: (review: NonResourceAccessReview) => AccessReviewResult | Error = () => ({ allowed: false });
  private readonly writeObservers = new Set<(w: WriteRecord) => void>();
  private actor: string | undefined;

  // --- test controls ---------------------------------------------------------------------

  /** Makes the next call of `method` fail with `error`. */
  failNext(method: keyof KubeClient, error: unknown): void {
    this.failures.push({ method, error });
  }

  /** Forgets watch history up to now: watches from an older resourceVersion get 410. */
  compact(): void {
    this.compactedBefore = this.rv + 1;
    this.history = [];
  }

  /** Ends every open watch stream, with an error or (err undefined) normally. */
  breakWatches(err?: unknown): void {
    for (const w of [...this.watchers]) {
      this.watchers.delete(w);
      w.onEnd(err);
    }
  }

  /** Calls fn for every write the store accepts, in order, until the returned function is called. */
  observeWrites(fn: (w: WriteRecord) => void): () => void {
    this.writeObservers.add(fn);
    return () => this.writeObservers.delete(fn);
  }

  /**
   * Runs fn with writes attributed to actor. The store's methods do their work synchronously
   * (their promises only carry the result), so the attribution covers exactly fn's own writes.
   */
  asActor<T>(actor: string, fn: () => T): T {
    const previous = this.actor;
    this.actor = actor;
    try {
      return fn();
    } finally {
      this.actor = previous;
    }
  }

  get openWatches(): number {
    return this.watchers.size;
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  // --- object store, as an admin would change it -------------------------------------------

  /**
   * Admission, as the API server runs it on a create or an update: each plugin may refuse the write
   * with its error (the simulation adds OwnerReferencesPermissionEnforcement for pvx's identity).
   * NamespaceLifecycle is built in: nothing is created in a namespace being deleted.
   */
  readonly admission: ((w: {
    verb: 'create' | 'update';
    type: ResourceType;
    obj: KubernetesObject;
    /** The object as stored before an update. */
    old?: KubernetesObject;
    actor: string | undefined;
  }) => ApiError | undefined)[] = [];

  private admit(verb: 'create' | 'update', type: ResourceType, obj: KubernetesObject, old?: KubernetesObject): void {
    const ns = obj.metadata?.namespace;
    if (verb === 'create' && type.namespaced && ns && this.get(namespaces, undefined, ns)?.metadata?.deletionTimestamp) {
      throw new ApiError(
        403,
        'Forbidden',
        `${type.resource} "${obj.metadata?.name}" is forbidden: unable to create new content in namespace ${ns} because it is being terminated`,
        undefined,
        [],
        [`namespace ${ns} is being terminated`],
      );
    }
    for (const plugin of this.admission) {
      const refused = plugin({ verb, type, obj, old, actor: this.actor });
      if (refused) throw refused;
    }
  }

  create<T extends KubernetesObject>(type: ResourceType, obj: T): T {
    const bucket = this.bucket(type);
    const key = objectKey(obj);
    if (bucket.has(key)) throw new ApiError(409, 'AlreadyExists', `${type.resource} "${obj.metadata?.name}" already exists`);
    this.admit('create', type, obj);
    const withGeneration = generational.has(type.resource) ? { ...obj, metadata: { ...obj.metadata, generation: 1 } } : obj;
    const stored = this.stamp(clone(withGeneration), true);
    bucket.set(key, stored);
    this.emit(type, 'ADDED', stored);
    this.observe('create', type, undefined, stored);
    return clone(stored) as T;
  }

  /** Replaces an object; with metadata.resourceVersion set, it must match (else 409). */
  update<T extends KubernetesObject>(type: ResourceType, obj: T): T {
    const bucket = this.bucket(type);
    const key = objectKey(obj);
    const current = bucket.get(key);
    if (!current) throw new ApiError(404, 'NotFound', `${type.resource} "${obj.metadata?.name}" not found`);
    const want = obj.metadata?.resourceVersion;
    if (want && want !== current.metadata?.resourceVersion) {
      throw new ApiError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${type.resource} "${obj.metadata?.name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    }
    const copy = clone(obj);
    // uid, creationTimestamp and deletionTimestamp are the server's: a write cannot change them.
    const deletionTimestamp = current.metadata?.deletionTimestamp;
    const next = {
      ...copy,
      metadata: {
        ...copy.metadata,
        uid: current.metadata?.uid,
        creationTimestamp: current.metadata?.creationTimestamp,
        ...(deletionTimestamp ? { deletionTimestamp } : {}),
      },
    };
    if (!deletionTimestamp) delete next.metadata.deletionTimestamp;
    // The API server's: a StatefulSet's generation moves with its spec only.
    if (generational.has(type.resource)) {
      const changed = canonicalJSON((next as { spec?: unknown }).spec) !== canonicalJSON((current as { spec?: unknown }).spec);
      next.metadata.generation = (current.metadata?.generation ?? 1) + (changed ? 1 : 0);
    }
    // A write that changes nothing is no change, as on the API server: no new version, no event.
    if (canonicalJSON({ ...next, metadata: { ...next.metadata, resourceVersion: current.metadata?.resourceVersion } }) === canonicalJSON(current))
      return clone(current) as T;
    // An object being deleted goes once its last finalizer is removed — that write never stored:
    // its DELETED event carries the version before, the finalizer still on, as the API server's
    // (store.go Update: errEmptiedFinalizers; the etcd watcher sends a deleted key's previous value).
    if (deletionTimestamp && !next.metadata.finalizers?.length) {
      this.remove(type, key, current);
      return clone(next) as T;
    }
    if (!(deletionTimestamp && !next.metadata.finalizers?.length)) this.admit('update', type, next, current);
    const stored = this.stamp(next, false);
    bucket.set(key, stored);
    this.emit(type, 'MODIFIED', stored);
    this.observe('update', type, current, stored);
    return clone(stored) as T;
  }

  /**
   * Deletes an object, as the API server does: one without finalizers goes at once; one with
   * finalizers gets a deletionTimestamp (and the garbage collector's finalizer for the
   * propagation: Orphan adds "orphan", Foreground "foregroundDeletion") and goes when its last
   * finalizer is removed. `how` undefined is the kind's default: a background cascade, which keeps
   * the finalizer a first delete set; `{ finalizer }` adds one of the kind's own (a namespace's
   * "kubernetes", which the namespace controller removes once it is empty).
   */
  delete(type: ResourceType, namespace: string | undefined, name: string, how?: Propagation | { finalizer: string }): void {
    const propagation = typeof how === 'string' ? how : undefined;
    const bucket = this.bucket(type);
    const key = namespace ? `${namespace}/${name}` : name;
    const current = bucket.get(key);
    if (!current) throw new ApiError(404, 'NotFound', `${type.resource} "${name}" not found`);
    // The propagation a delete asks for sets the garbage collector's finalizers, a second delete's
    // included: an explicit one replaces orphan and foregroundDeletion (store.go,
    // deletionFinalizersForGarbageCollection).
    const gc = propagation !== undefined;
    const kept = (current.metadata?.finalizers ?? []).filter((f) => !gc || (f !== orphanFinalizer && f !== foregroundFinalizer));
    const added =
      propagation === 'Orphan' ? orphanFinalizer : propagation === 'Foreground' ? foregroundFinalizer : typeof how === 'object' ? how.finalizer : undefined;
    const finalizers = [...kept, ...(added && !kept.includes(added) ? [added] : [])];
    if (current.metadata?.deletionTimestamp) {
      if (canonicalJSON(finalizers) === canonicalJSON(current.metadata.finalizers ?? [])) return;
      // None left (a Background delete of one an orphaning delete left to the garbage collector):
      // it goes at once, the finalizer change never stored — its DELETED event's object is the
      // version before, "orphan" still on (store.go, updateForGracefulDeletionAndFinalizers:
      // errDeleteNow). Its dependents, still its own, go with it.
      if (finalizers.length === 0) this.remove(type, key, current);
      else this.update(type, { ...current, metadata: { ...current.metadata, resourceVersion: undefined, finalizers } });
      return;
    }
    if (finalizers.length > 0) {
      const stored = this.stamp(
        { ...current, metadata: { ...current.metadata, finalizers, deletionTimestamp: new Date(), deletionGracePeriodSeconds: 0 } },
        false,
      );
      bucket.set(key, stored);
      this.emit(type, 'MODIFIED', stored);
      this.observe('update', type, current, stored);
      return;
    }
    this.remove(type, key, current);
  }

  /** Removes a stored object for good: a DELETED event with a new version. */
  private remove(type: ResourceType, key: string, current: KubernetesObject): void {
    const before = this.bucket(type).get(key);
    this.bucket(type).delete(key);
    this.rv += 1;
    const last = { ...current, metadata: { ...current.metadata, resourceVersion: String(this.rv) } };
    this.emit(type, 'DELETED', last);
    this.observe('delete', type, before, last);
  }

  /**
   * One pass of the garbage collector (pkg/controller/garbagecollector), in its order: an owner
   * deleted with propagation Orphan has the ownerReferences that name it taken off its dependents,
   * then its "orphan" finalizer removed; one deleted in the foreground has its dependents deleted,
   * and its "foregroundDeletion" finalizer removed once none is left; a dependent whose owners are
   * all gone (a background delete, or an owner removed meanwhile) is deleted. Returns the keys of
   * the owners it finished and of the dependents it deleted.
   */
  collectGarbage(): string[] {
    const done: string[] = [];
    const all = () => [...this.store].flatMap(([resource, bucket]) => [...bucket.values()].map((o) => ({ type: this.typeOf(resource), o })));
    for (const { type, o: owner } of all()) {
      const finalizers = owner.metadata?.finalizers ?? [];
      if (!owner.metadata?.deletionTimestamp || !(finalizers.includes(orphanFinalizer) || finalizers.includes(foregroundFinalizer))) continue;
      const uid = owner.metadata.uid;
      const dependents = all().filter(({ o }) => o.metadata?.ownerReferences?.some((r) => r.uid === uid));
      if (finalizers.includes(foregroundFinalizer)) {
        for (const { type: t, o } of dependents) {
          if (o.metadata?.deletionTimestamp) continue;
          this.delete(t, o.metadata?.namespace, o.metadata?.name as string);
          done.push(`${t.resource} ${objectKey(o)}`);
        }
        if (dependents.length > 0) continue;
      } else {
        for (const { type: t, o } of dependents) {
          const kept = (o.metadata?.ownerReferences ?? []).filter((r) => r.uid !== uid);
          this.update(t, { ...o, metadata: { ...o.metadata, resourceVersion: undefined, ownerReferences: kept.length > 0 ? kept : undefined } });
        }
      }
      const current = this.get(type, owner.metadata?.namespace, owner.metadata?.name as string);
      if (!current) continue;
      this.update(type, {
        ...current,
        metadata: {
          ...current.metadata,
          resourceVersion: undefined,
          finalizers: (current.metadata?.finalizers ?? []).filter((f) => f !== orphanFinalizer && f !== foregroundFinalizer),
        },
      });
      done.push(objectKey(owner));
    }
    // Dependents whose every owner is gone: a background delete's, once its owner went.
    const uids = new Set(all().map(({ o }) => o.metadata?.uid));
    for (const { type, o } of all()) {
      const refs = o.metadata?.ownerReferences ?? [];
      if (refs.length === 0 || o.metadata?.deletionTimestamp || refs.some((r) => uids.has(r.uid))) continue;
      if (!this.get(type, o.metadata?.namespace, o.metadata?.name as string)) continue;
      this.delete(type, o.metadata?.namespace, o.metadata?.name as string);
      done.push(`${type.resource} ${objectKey(o)}`);
    }
    return done;
  }

  /** The resource type of a bucket, for writes the fake makes on its own (the garbage collector's). */
  private typeOf(resource: string): ResourceType {
    const known = [
      ...Object.values(resources),
      volumeExpansionRequests,
      volumeExpansionPolicies,
      clusterVolumeExpansionPolicies,
      leaseType,
      namespaces,
      podDisruptionBudgets,
    ].find((t) => t.resource === resource);
    return known ?? { resource, group: '', version: 'v1', kind: resource, namespaced: true };
  }

  get<T extends KubernetesObject>(type: ResourceType, namespace: string | undefined, name: string): T | undefined {
    const obj = this.bucket(type).get(namespace ? `${namespace}/${name}` : name);
    return obj ? (clone(obj) as T) : undefined;
  }

  /** Every stored object of a kind, in key order (an admin's view: no call is recorded, no fault applies). */
  snapshot<T extends KubernetesObject>(type: ResourceType): T[] {
    return this.peek<T>(type).map((o) => clone(o));
  }

  /**
   * Like snapshot, without the copies, for readers that only look (the simulation's actors and
   * invariants read every object after every step). The objects must not be changed.
   */
  peek<T extends KubernetesObject>(type: ResourceType): readonly T[] {
    return [...this.bucket(type).values()].sort((a, b) => objectKey(a).localeCompare(objectKey(b))) as T[];
  }

  // --- KubeClient ----------------------------------------------------------------------------

  async read(type: ResourceType, namespace: string | undefined, name: string): Promise<KubernetesObject | undefined> {
    this.record('read', `${type.resource} ${namespace ? `${namespace}/` : ''}${name}`);
    return this.get(type, type.namespaced ? namespace : undefined, name);
  }

  async list(type: ResourceType, opts: ListOptions): Promise<ListPage> {
    this.record('list', type.resource);
    const all = [...this.bucket(type).values()]
      .filter((o) => (!type.namespaced || !opts.namespace || o.metadata?.namespace === opts.namespace) && selected(o, opts))
      .sort((a, b) => objectKey(a).localeCompare(objectKey(b)));
    const start = opts.continue ? Number(opts.continue) : 0;
    const end = opts.limit ? start + opts.limit : all.length;
    return {
      items: all.slice(start, end).map(clone),
      resourceVersion: String(this.rv),
      continue: end < all.length ? String(end) : undefined,
    };
  }

  async watch(type: ResourceType, opts: WatchOptions, onEvent: (e: WatchEvent) => void, onEnd: (err?: unknown) => void): Promise<WatchHandle> {
    this.record('watch', type.resource);
    const from = Number(opts.resourceVersion);
    const watcher: Watcher = { resource: type.resource, namespace: opts.namespace, selectors: opts, onEvent, onEnd };
    if (from < this.compactedBefore - 1) {
      queueMicrotask(() => {
        onEvent({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: `too old resource version: ${from}` } as KubernetesObject });
        onEnd();
      });
      return { stop: () => undefined };
    }
    const backlog = this.history.filter((h) => h.rv > from && h.resource === type.resource && this.matches(watcher, h.event.object));
    this.watchers.add(watcher);
    queueMicrotask(() => {
      for (const h of backlog) if (this.watchers.has(watcher)) onEvent(clone(h.event));
    });
    const stop = () => void this.watchers.delete(watcher);
    // Like the real clients: an aborted signal ends the watch as stop() does.
    if (opts.signal?.aborted) stop();
    else opts.signal?.addEventListener('abort', stop, { once: true });
    return { stop };
  }

  /**
   * Like the API server: 404, 409 on a stale resourceVersion or another UID; 403 from
   * PersistentVolumeClaimResize admission when the size grows (claim not Bound, class not
   * expandable; a lowered or unchanged size passes it); 422 from
   * validation for a request lowered to status.capacity or below (KEP-1790 allows lowering only
   * above it), and for a new spec.volumeAttributesClassName on a claim that is not Bound (its
   * spec is immutable until then); 403 from ResourceQuota admission when the claim's charge,
   * max(spec, allocated), grows past a quota's hard limit. A VolumeAttributesClass that does not
   * exist is not refused: the claim's modification waits Pending for it.
   */
  async patchPvcSize(namespace: string, name: string, patch: PvcSizePatch): Promise<V1PersistentVolumeClaim> {
    this.record('patchPvcSize', `${namespace}/${name}`);
    const pvc = this.claimToPatch(namespace, name, patch.uid);
    const className = pvc.spec?.storageClassName ?? '';
    const oldSize = parseBytes(pvc.spec?.resources?.requests?.storage ?? '0');
    const newSize = patch.storage === undefined ? oldSize : parseBytes(patch.storage);
    if (newSize < oldSize) {
      const capacity = parseBytes(pvc.status?.capacity?.storage ?? '0');
      if (newSize <= capacity) {
        throw new ApiError(
          422,
          'Invalid',
          `PersistentVolumeClaim "${name}" is invalid: spec.resources.requests.storage: Forbidden: field can not be less than status.capacity`,
        );
      }
    }
    const classChanges = patch.volumeAttributesClassName !== undefined && patch.volumeAttributesClassName !== pvc.spec?.volumeAttributesClassName;
    if (classChanges && pvc.status?.phase !== 'Bound') {
      throw new ApiError(
        422,
        'Invalid',
        `PersistentVolumeClaim "${name}" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims`,
      );
    }
    if (newSize <= oldSize) return this.update(resources.persistentVolumeClaims, this.withSizePatch(pvc, patch));
    if (pvc.status?.phase !== 'Bound') {
      throw new ApiError(403, 'Forbidden', `persistentvolumeclaims "${name}" is forbidden: Only bound persistent volume claims can be expanded`);
    }
    const sc = this.get<V1StorageClass>(resources.storageClasses, undefined, className);
    if (!sc?.allowVolumeExpansion) {
      throw new ApiError(
        403,
        'Forbidden',
        `persistentvolumeclaims "${name}" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`,
      );
    }
    const patched = this.withSizePatch(pvc, patch);
    this.admitQuota(namespace, name, className, storageCharge(patched) - storageCharge(pvc));
    return this.update(resources.persistentVolumeClaims, patched);
  }

  /**
   * Like the API server: 404, 409 on a stale resourceVersion or another UID. Only the
   * annotations change; a write that changes none of them is recorded in noOpWrites.
   */
  async patchPvcAnnotations(namespace: string, name: string, patch: PvcAnnotationsPatch): Promise<V1PersistentVolumeClaim> {
    this.record('patchPvcAnnotations', `${namespace}/${name}`);
    const pvc = this.claimToPatch(namespace, name, patch.uid);
    const before = JSON.stringify(pvc.metadata?.annotations ?? {});
    const written = this.update(resources.persistentVolumeClaims, {
      ...pvc,
      metadata: { ...this.pvxWrote(pvc, patch.annotations), resourceVersion: patch.resourceVersion },
    });
    if (JSON.stringify(written.metadata?.annotations ?? {}) === before)
      this.noOpWrites.push({ subject: `PersistentVolumeClaim/${namespace}/${name}`, status: { reason: `annotations ${JSON.stringify(patch.annotations)}` } });
    return written;
  }

  private withSizePatch(pvc: V1PersistentVolumeClaim, patch: PvcSizePatch): V1PersistentVolumeClaim {
    return {
      ...pvc,
      metadata: { ...this.pvxWrote(pvc, patch.annotations), resourceVersion: patch.resourceVersion },
      spec: {
        ...pvc.spec,
        ...(patch.storage !== undefined
          ? { resources: { ...pvc.spec?.resources, requests: { ...pvc.spec?.resources?.requests, storage: patch.storage } } }
          : {}),
        ...(patch.volumeAttributesClassName !== undefined ? { volumeAttributesClassName: patch.volumeAttributesClassName } : {}),
      },
    };
  }

  /** The claim a patch names, as the API server finds it: 404 when gone, 409 for another UID. */
  private claimToPatch(namespace: string, name: string, uid: string): V1PersistentVolumeClaim {
    const pvc = this.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, namespace, name);
    if (!pvc) throw new ApiError(404, 'NotFound', `persistentvolumeclaims "${name}" not found`);
    // An empty UID is no precondition, as a body without one would be (pvx always sends one; the simulation's mutants may not).
    if (uid && uid !== pvc.metadata?.uid)
      throw new ApiError(409, 'Conflict', `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${pvc.metadata?.uid}`);
    return pvc;
  }

  /** The claim's metadata after a merge patch of these annotations by pvx (a null removes one). */
  private pvxWrote(pvc: V1PersistentVolumeClaim, changes: Record<string, string | null>): V1PersistentVolumeClaim['metadata'] {
    // The API server records who wrote the claim and when (whole seconds), as managedFields.
    const time = new Date(Math.floor(Date.now() / 1000) * 1000);
    const managedFields = [
      ...(pvc.metadata?.managedFields ?? []).filter((f) => f.manager !== 'pvx' || f.subresource),
      { manager: 'pvx', operation: 'Update', apiVersion: 'v1', time, fieldsType: 'FieldsV1' },
    ];
    // A merge patch: a null annotation removes it.
    const annotations = Object.fromEntries(Object.entries({ ...pvc.metadata?.annotations, ...changes }).filter((e): e is [string, string] => e[1] !== null));
    return { ...pvc.metadata, managedFields, annotations };
  }

  /** ResourceQuota admission: a growing charge must fit every quota of the namespace (used from status, as the quota controller last counted). */
  private admitQuota(namespace: string, name: string, className: string, delta: bigint): void {
    if (delta <= 0n) return;
    const quotas = [...this.bucket(resources.resourceQuotas).values()].filter((q) => q.metadata?.namespace === namespace) as V1ResourceQuota[];
    for (const q of quotas) {
      for (const key of ['requests.storage', `${className}.storageclass.storage.k8s.io/requests.storage`]) {
        const hard = q.spec?.hard?.[key];
        if (hard === undefined) continue;
        const used = parseBytes(q.status?.used?.[key] ?? '0');
        if (used + delta > parseBytes(hard)) {
          throw new ApiError(
            403,
            'Forbidden',
            `persistentvolumeclaims "${name}" is forbidden: exceeded quota: ${q.metadata?.name}, requested: ${key}=${delta}, used: ${key}=${q.status?.used?.[key] ?? '0'}, limited: ${key}=${hard}`,
          );
        }
      }
    }
  }

  async patchRequestStatus(namespace: string, name: string, status: RequestStatus, resourceVersion: string): Promise<string> {
    this.record('patchRequestStatus', `${namespace}/${name}`);
    return this.mergeStatus(volumeExpansionRequests, namespace, name, status, resourceVersion);
  }

  /** A JSON merge patch of status: its top-level fields are replaced (arrays whole); a resourceVersion, when given, must match (else 409). */
  private mergeStatus(type: ResourceType, namespace: string | undefined, name: string, status: object, resourceVersion?: string): string {
    const obj = this.get<KubernetesObject & { status?: object }>(type, namespace, name);
    if (!obj) throw new ApiError(404, 'NotFound', `${type.resource}.${type.group} "${name}" not found`);
    const written =
      this.update(type, { ...obj, metadata: { ...obj.metadata, resourceVersion }, status: { ...obj.status, ...status } }).metadata?.resourceVersion ?? '';
    if (written === obj.metadata?.resourceVersion) this.noOpWrites.push({ subject: `${type.kind}/${namespace ?? ''}/${name}`, status });
    return written;
  }

  /** A merge of a request's annotations (a null removes one), with its resourceVersion precondition. */
  async patchRequestAnnotations(namespace: string, name: string, patch: RequestAnnotationsPatch): Promise<void> {
    this.record('patchRequestAnnotations', `${namespace}/${name}`);
    const req = this.get(volumeExpansionRequests, namespace, name);
    if (!req) throw new ApiError(404, 'NotFound', `volumeexpansionrequests.pvx.dev "${name}" not found`);
    const annotations = Object.fromEntries(
      Object.entries({ ...req.metadata?.annotations, ...patch.annotations }).filter((e): e is [string, string] => e[1] !== null),
    );
    this.update(volumeExpansionRequests, { ...req, metadata: { ...req.metadata, resourceVersion: patch.resourceVersion, annotations } });
  }

  /** Who SelfSubjectReview says the caller is (undefined: it will not say). */
  selfUser: string | undefined = undefined;

  async whoAmI(): Promise<string | undefined> {
    this.record('whoAmI', '');
    return this.selfUser;
  }

  async createRequest(namespace: string, request: KubernetesObject): Promise<string> {
    this.record('createRequest', `${namespace}/${request.metadata?.name}`);
    return this.create(volumeExpansionRequests, { ...request, metadata: { ...request.metadata, namespace } }).metadata?.uid ?? '';
  }

  async deleteRequest(namespace: string, name: string, uid: string): Promise<void> {
    this.record('deleteRequest', `${namespace}/${name}`);
    const req = this.get(volumeExpansionRequests, namespace, name);
    if (req && req.metadata?.uid !== uid)
      throw new ApiError(409, 'Conflict', `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${req.metadata?.uid}`);
    this.delete(volumeExpansionRequests, namespace, name);
  }

  /** Like the API server: 404; 409 on a stale resourceVersion; a request being deleted goes once its last finalizer does. */
  async patchRequestFinalizers(namespace: string, name: string, finalizers: string[], resourceVersion: string): Promise<string> {
    this.record('patchRequestFinalizers', `${namespace}/${name}`);
    const req = this.get(volumeExpansionRequests, namespace, name);
    if (!req) throw new ApiError(404, 'NotFound', `volumeexpansionrequests.pvx.dev "${name}" not found`);
    const written = this.update(volumeExpansionRequests, {
      ...req,
      metadata: { ...req.metadata, resourceVersion, finalizers: finalizers.length > 0 ? finalizers : undefined },
    });
    return written.metadata?.resourceVersion ?? '';
  }

  async getStatefulSet(namespace: string, name: string): Promise<V1StatefulSet | undefined> {
    this.record('getStatefulSet', `${namespace}/${name}`);
    return this.get<V1StatefulSet>(resources.statefulSets, namespace, name);
  }

  /**
   * Like the API server: 404 when gone; 409 when the UID or resourceVersion is not the
   * StatefulSet's now; else it is marked deleted with the "orphan" finalizer, which the garbage
   * collector (collectGarbage) removes after orphaning its pods.
   */
  async deleteStatefulSetOrphan(namespace: string, name: string, pre: DeletePreconditions): Promise<string | undefined> {
    this.record('deleteStatefulSetOrphan', `${namespace}/${name}`);
    const sts = this.get<V1StatefulSet>(resources.statefulSets, namespace, name);
    if (!sts) throw new ApiError(404, 'NotFound', `statefulsets.apps "${name}" not found`);
    if (sts.metadata?.uid !== pre.uid)
      throw new ApiError(409, 'Conflict', `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${sts.metadata?.uid}`);
    if (sts.metadata?.resourceVersion !== pre.resourceVersion) {
      throw new ApiError(
        409,
        'Conflict',
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${sts.metadata?.resourceVersion}`,
      );
    }
    this.delete(resources.statefulSets, namespace, name, 'Orphan');
    return this.get(resources.statefulSets, namespace, name)?.metadata?.resourceVersion;
  }

  /** Like the API server: 409 AlreadyExists (a StatefulSet of the name, even one being deleted); 400 for a resourceVersion; a fresh UID. */
  async createStatefulSet(namespace: string, statefulSet: V1StatefulSet): Promise<V1StatefulSet> {
    this.record('createStatefulSet', `${namespace}/${statefulSet.metadata?.name}`);
    if (statefulSet.metadata?.resourceVersion) throw new ApiError(400, 'BadRequest', 'resourceVersion should not be set on objects to be created');
    const { uid: _uid, ...metadata } = statefulSet.metadata ?? {};
    return this.create(resources.statefulSets, { ...statefulSet, metadata: { ...metadata, namespace } });
  }

  async createRecord(namespace: string, record: V1ConfigMap): Promise<V1ConfigMap> {
    this.record('createRecord', `${namespace}/${record.metadata?.name}`);
    if (record.metadata?.resourceVersion) throw new ApiError(400, 'BadRequest', 'resourceVersion should not be set on objects to be created');
    return this.create(resources.statefulSetRecords, { ...record, metadata: { ...record.metadata, namespace } });
  }

  /** Like the API server: 404; 409 on a stale resourceVersion (the record's metadata.resourceVersion is its precondition). */
  async updateRecord(namespace: string, record: V1ConfigMap): Promise<V1ConfigMap> {
    this.record('updateRecord', `${namespace}/${record.metadata?.name}`);
    if (!record.metadata?.resourceVersion) throw new ApiError(422, 'Invalid', 'metadata.resourceVersion: Invalid value: 0x0: must be specified for an update');
    return this.update(resources.statefulSetRecords, { ...record, metadata: { ...record.metadata, namespace } });
  }

  async deleteRecord(namespace: string, name: string, uid: string): Promise<void> {
    this.record('deleteRecord', `${namespace}/${name}`);
    const cm = this.get(resources.statefulSetRecords, namespace, name);
    if (!cm) throw new ApiError(404, 'NotFound', `configmaps "${name}" not found`);
    if (cm.metadata?.uid !== uid)
      throw new ApiError(409, 'Conflict', `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${cm.metadata?.uid}`);
    this.delete(resources.statefulSetRecords, namespace, name);
  }

  /**
   * Like the Eviction API (pkg/registry/core/pod/storage/eviction.go), in its order: 404 when the
   * pod is gone; a pod Pending, finished or already deleting is deleted without a budget. Else 500
   * when more than one PodDisruptionBudget selects it; an unready pod goes without spending the
   * budget when its policy is AlwaysAllow or the budget has its healthy pods; otherwise 429 when the
   * budget allows no disruption now (its status.disruptionsAllowed, which a test or the
   * simulation's disruption controller sets), else the allowance is spent. Only then the delete,
   * whose UID precondition answers 409 for another pod of the name (the budget stays spent, as the
   * API server leaves it).
   */
  async evictPod(namespace: string, name: string, uid: string): Promise<void> {
    this.record('evictPod', `${namespace}/${name}`);
    const pod = this.get<V1Pod>(resources.pods, namespace, name);
    if (!pod) throw new ApiError(404, 'NotFound', `pods "${name}" not found`);
    const phase = pod.status?.phase;
    const ignoresBudgets = phase === 'Succeeded' || phase === 'Failed' || phase === 'Pending' || pod.metadata?.deletionTimestamp !== undefined;
    if (!ignoresBudgets) {
      const pdbs = [...this.bucket(podDisruptionBudgets).values()].filter(
        (p) => p.metadata?.namespace === namespace && selects(p as V1PodDisruptionBudget, pod.metadata?.labels),
      ) as V1PodDisruptionBudget[];
      if (pdbs.length > 1)
        throw new ApiError(500, 'InternalError', 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.');
      const [pdb] = pdbs;
      const ready = pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
      const healthy = (pdb?.status?.currentHealthy ?? 0) >= (pdb?.status?.desiredHealthy ?? 0) && (pdb?.status?.desiredHealthy ?? 0) > 0;
      if (pdb && (ready || (pdb.spec?.unhealthyPodEvictionPolicy !== 'AlwaysAllow' && !healthy))) {
        const allowed = pdb.status?.disruptionsAllowed ?? 0;
        if (allowed <= 0) {
          throw new ApiError(
            429,
            'TooManyRequests',
            "Cannot evict pod as it would violate the pod's disruption budget.",
            undefined,
            [],
            [
              `The disruption budget ${pdb.metadata?.name} needs ${pdb.status?.desiredHealthy ?? 0} healthy pods and has ${pdb.status?.currentHealthy ?? 0} currently`,
            ],
          );
        }
        this.update(podDisruptionBudgets, {
          ...pdb,
          metadata: { ...pdb.metadata, resourceVersion: undefined },
          status: { ...(pdb.status as NonNullable<V1PodDisruptionBudget['status']>), disruptionsAllowed: allowed - 1 },
        });
      }
    }
    if (pod.metadata?.uid !== uid)
      throw new ApiError(409, 'Conflict', `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${pod.metadata?.uid}`);
    this.delete(resources.pods, namespace, name);
  }

  async patchPolicyStatus(policy: PolicyRef, status: PolicyStatus): Promise<string> {
    this.record('patchPolicyStatus', `${policy.namespace ?? ''}/${policy.name}`);
    return policy.kind === 'VolumeExpansionPolicy'
      ? this.mergeStatus(volumeExpansionPolicies, policy.namespace, policy.name, status)
      : this.mergeStatus(clusterVolumeExpansionPolicies, undefined, policy.name, status);
  }

  async emitEvent(event: EventRecord): Promise<void> {
    this.record('emitEvent', event.reason);
    this.events.push(event);
  }

  /** The fake is the cluster's kubelets too (KubeletClient): a node's summary, from summaries. */
  async statsSummary(node: V1Node): Promise<unknown> {
    const name = node.metadata?.name ?? '';
    this.record('statsSummary', name);
    const s = this.summaries.get(name);
    if (s instanceof Error) throw s;
    if (s === undefined) throw new ApiError(404, 'NotFound', `nodes "${name}" not found`);
    return structuredClone(s);
  }

  /**
   * Mints a token for a ServiceAccount of `serviceAccounts` (404 for any other), known to
   * TokenReview as that account's from then on; it expires expirationSeconds from now (Date.now).
   */
  /** The API server's node proxy to the kubelets (CommandClient): the same summaries. */
  async nodeStatsSummary(node: string): Promise<unknown> {
    this.record('nodeStatsSummary', node);
    const s = this.summaries.get(node);
    if (s instanceof Error) throw s;
    if (s === undefined) throw new ApiError(404, 'NotFound', `nodes "${node}" not found`);
    return structuredClone(s);
  }

  async createServiceAccountToken(namespace: string, name: string, expirationSeconds: number): Promise<MintedToken> {
    this.record('createServiceAccountToken', `${namespace}/${name} ${expirationSeconds}s`);
    if (!this.serviceAccounts.has(`${namespace}/${name}`)) throw new ApiError(404, 'NotFound', `serviceaccounts "${name}" not found`);
    const token = `minted-${namespace}-${name}-${++this.mintedCount}`;
    this.tokens.set(token, {
      username: `system:serviceaccount:${namespace}:${name}`,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`],
    });
    return { token, expiresAt: new Date(Date.now() + expirationSeconds * 1000) };
  }

  async createTokenReview(token: string): Promise<TokenReviewResult> {
    // The call log names no token: tests assert on it, and a token is a credential.
    this.record('createTokenReview', '');
    const user = this.tokens.get(token);
    if (user instanceof Error) throw user;
    return user ? { authenticated: true, user: structuredClone(user) } : { authenticated: false, error: 'invalid bearer token' };
  }

  /** What getServiceAccountKeys answers (a JSON Web Key Set), or throws. */
  serviceAccountKeys: unknown = { keys: [] };

  async getServiceAccountKeys(): Promise<unknown> {
    this.record('getServiceAccountKeys', '');
    if (this.serviceAccountKeys instanceof Error) throw this.serviceAccountKeys;
    return structuredClone(this.serviceAccountKeys);
  }

  async createSubjectAccessReview(review: NonResourceAccessReview): Promise<AccessReviewResult> {
    this.record('createSubjectAccessReview', `${review.user.username} ${review.verb} ${review.path}`);
    const answer = this.authorize(structuredClone(review));
    if (answer instanceof Error) throw answer;
    return answer;
  }

  async getLease(namespace: string, name: string): Promise<V1Lease | undefined> {
    this.record('getLease', name);
    return this.get<V1Lease>(leaseType, namespace, name);
  }

  async createLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    this.record('createLease', lease.metadata?.name ?? '');
    return this.create(leaseType, { ...lease, metadata: { ...lease.metadata, namespace } });
  }

  async updateLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    this.record('updateLease', lease.metadata?.name ?? '');
    return this.update(leaseType, { ...lease, metadata: { ...lease.metadata, namespace } });
  }

  // --- internals -----------------------------------------------------------------------------

  private record(method: string, what: string): void {
    this.calls.push(`${method} ${what}`);
    const i = this.failures.findIndex((f) => f.method === method);
    if (i >= 0) {
      const [failure] = this.failures.splice(i, 1);
      throw failure?.error;
    }
  }

  private bucket(type: ResourceType): Map<string, KubernetesObject> {
    let b = this.store.get(type.resource);
    if (!b) {
      b = new Map();
      this.store.set(type.resource, b);
    }
    return b;
  }

  private stamp(obj: KubernetesObject, created: boolean): KubernetesObject {
    this.rv += 1;
    const metadata = { ...obj.metadata, resourceVersion: String(this.rv) };
    if (created) {
      // UUID-shaped and distinct in the first 8 characters, as real UIDs are (approval plan tokens use that prefix).
      const hex = this.rv.toString(16);
      metadata.uid = metadata.uid ?? `${hex.padStart(8, '0')}-0000-4000-8000-${hex.padStart(12, '0')}`;
      metadata.creationTimestamp = metadata.creationTimestamp ?? new Date();
    }
    return { ...obj, metadata };
  }

  private observe(verb: WriteRecord['verb'], type: ResourceType, before: KubernetesObject | undefined, after: KubernetesObject): void {
    if (this.writeObservers.size === 0) return;
    // No copies: the store replaces objects on write and never changes one in place.
    const record: WriteRecord = { verb, resource: type.resource, before, after, actor: this.actor };
    for (const fn of this.writeObservers) fn(record);
  }

  private matches(w: Watcher, obj: KubernetesObject): boolean {
    return (!w.namespace || obj.metadata?.namespace === w.namespace) && selected(obj, w.selectors);
  }

  /** History shares the stored object (the store replaces objects, never changes one); each watcher gets its own copy. */
  private emit(type: ResourceType, eventType: WatchEvent['type'], obj: KubernetesObject): void {
    const event: WatchEvent = { type: eventType, object: obj };
    this.history.push({ rv: Number(obj.metadata?.resourceVersion), resource: type.resource, event });
    for (const w of this.watchers) {
      if (w.resource === type.resource && this.matches(w, obj)) w.onEvent(clone(event));
    }
  }
}
