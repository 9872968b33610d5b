// The writer of the offline-expansion opt-in's decision (src/policies/request/eviction.ts): the pod
// marked on the claim and recorded in the request's status, the pods, claim and StatefulSet read
// live, then the eviction.
import type { V1PersistentVolumeClaim, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { VolumeExpansionRequest } from '../../../crds/volume-expansion-request.ts';
import { ApiError } from '../../../k8s/errors.ts';
import { listAll, readLive } from '../../../k8s/list.ts';
import { resources } from '../../../k8s/resources.ts';
import type { ReconcileResult } from '../../runtime/controller.ts';
import { ConflictError } from '../../runtime/errors.ts';
import { attempt, tryWrite, type DecisionOf, type Reading, type RequestWriting, type Writers } from './writing.ts';

export const evictionWriters: Writers<'evict'> = { evict };

/** Marks and records the pod to evict (unless recorded already), checks the live pods and claim, then evicts it. */
async function evict(w: RequestWriting, r: Reading, d: DecisionOf<'evict'>): Promise<ReconcileResult> {
  w.fence('evicting a pod');
  r = await recordEviction(w, r, d);
  w.evictionAttempts.set(r.key, w.now());
  const instead = await liveCheck(w, r, d);
  if (instead) return instead;
  const evicted = await attempt(() => w.client.evictPod(d.pod.namespace, d.pod.name, d.pod.uid), { answered: [429, 500, 403, 404, 409] });
  const refusal = evicted.refused;
  // Gone, or another pod of the name — or a refusal that never reached it: decided again from the cache.
  if (refusal?.code === 404 || refusal?.code === 409) {
    w.log.info({ pod: d.pod.name, code: refusal.code }, 'the pod to evict is gone or another one; looking again');
    return { requeueAfterMs: 1000 };
  }
  if (refusal) return w.carryOn(r, d.onBlocked(refusal.code, [refusal.message, ...refusal.causes].join(' ')));
  w.log.info({ pod: d.pod.name }, 'evicted the pod that mounts the claim, for its filesystem to grow as it mounts it anew');
  await w.event(
    r.req,
    'Normal',
    'PodEvicted',
    `evicted pod ${d.pod.name}: its controller creates it again and the kubelet grows the filesystem as it mounts the claim`,
  );
  return w.carryOn(r, d.onEvicted(w.now()));
}

/**
 * Records the pod to evict, unless the status records it already (an eviction tried again); the
 * reading as written. The pod first, conditional on the request as it was read: at most one pod per request. Known
 * as coming from the moment it is decided, before the record's write returns: another request's
 * reconcile deciding meanwhile must not evict a second pod of the workload (seed 2570).
 */
async function recordEviction(w: RequestWriting, r: Reading, d: DecisionOf<'evict'>): Promise<Reading> {
  if (!d.record) return r;
  const evicting = (q: VolumeExpansionRequest) => ({ ...q, status: { ...q.status, eviction: d.record?.eviction } });
  w.decidedEvictions.created(r.key, evicting(r.req), w.monotonicMs());
  try {
    // Known as coming before the mark's write returns too (seed 150653: a second request
    // of the workload decided while the first's mark was on its way, and evicted as well).
    if (d.mark) await markEviction(w, r.req.metadata.namespace as string, d.mark);
  } catch (err) {
    // The mark refused for certain, its precondition too (the claim changed since the copy it
    // was decided from): nothing marked, nothing recorded, and the eviction is not coming. Seed
    // 2830612: a claims cache behind pvx's first mark made a request decide a second pod, the
    // mark's precondition refused it — and the decision, remembered, held the workload's other
    // evictions ten minutes.
    if (refusedForCertain(err) || err instanceof ConflictError) w.decidedEvictions.forget(r.key);
    throw err;
  }
  try {
    return (await w.writeStatus(r, d.record, { always: true })).reading;
  } catch (err) {
    // Refused for certain (nothing recorded): not coming. Any other failure may have recorded
    // it: kept until the entry ages out. A conflict is kept: the mark, written, is on its way to
    // the other requests' caches.
    if (refusedForCertain(err)) w.decidedEvictions.forget(r.key);
    throw err;
  }
}

/** An answer that says the write was not made. */
const refusedForCertain = (err: unknown): boolean => err instanceof ApiError && [403, 404, 409, 422].includes(err.code);

/** What to carry out instead of the eviction, decided from the pods, the claim and the pod's StatefulSet as the API server has them now; undefined to evict. */
async function liveCheck(w: RequestWriting, r: Reading, d: DecisionOf<'evict'>): Promise<ReconcileResult | undefined> {
  const { items: live } = await listAll<V1Pod>(w.client, resources.pods, { namespace: d.pod.namespace });
  const claim = await readLive<V1PersistentVolumeClaim>(
    w.client,
    resources.persistentVolumeClaims,
    r.req.metadata.namespace as string,
    r.req.spec.target.pvcName as string,
  );
  const instead = d.onLive(
    live,
    claim,
    await liveStatefulSetOf(
      w,
      live.find((p) => p.metadata?.uid === d.pod.uid),
    ),
  );
  return instead ? w.carryOn(r, instead) : undefined;
}

/**
 * The StatefulSet a live pod names as its controller, read after the pods (null: none of the
 * name); undefined when its controller is of another kind, which pvx does not read.
 */
async function liveStatefulSetOf(w: RequestWriting, pod: V1Pod | undefined): Promise<V1StatefulSet | null | undefined> {
  const owner = pod?.metadata?.ownerReferences?.find((o) => o.controller);
  if (!pod || owner?.kind !== 'StatefulSet') return undefined;
  return (await readLive<V1StatefulSet>(w.client, resources.statefulSets, pod.metadata?.namespace as string, owner.name)) ?? null;
}

/** Marks on the claim the pod pvx evicts for the request, conditional on the claim as decided on. */
async function markEviction(w: RequestWriting, ns: string, mark: NonNullable<DecisionOf<'evict'>['mark']>): Promise<void> {
  await tryWrite(
    () => w.client.patchPvcAnnotations(ns, mark.claim, mark.patch),
    (err) => new ConflictError(`claim ${mark.claim} changed meanwhile: ${err.message}`),
  );
  // The cache shows the mark a moment later: until it does, the claim is read from the API server.
  w.unseenClaimPatches.wrote(`${ns}/${mark.claim}`, mark.patch.resourceVersion);
}
