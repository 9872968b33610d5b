// The writers of the decisions every request makes (src/policies/request/decision.ts): a status, the
// end, the claim's one size patch, a StatefulSet request's children, the deletion after the TTL, or
// nothing. The opt-ins' writers are beside them (template.ts, eviction.ts).
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { pvcAnnotations } from '../../../crds/keys.ts';
import type { VolumeExpansionRequest } from '../../../crds/volume-expansion-request.ts';
import { ApiError } from '../../../k8s/errors.ts';
import { readLive } from '../../../k8s/list.ts';
import { resources, volumeExpansionRequests } from '../../../k8s/resources.ts';
import { madeByPolicy } from '../../../policies/request/claim-event.ts';
import { requestChange } from '../../../policies/request/decide.ts';
import type { ReconcileResult } from '../../runtime/controller.ts';
import { ConflictError } from '../../runtime/errors.ts';
import { staleCacheMs } from '../unseen-writes.ts';
import { attempt, type DecisionOf, type Reading, type RequestWriting, type Writers } from './writing.ts';

export type CoreKind = 'wait' | 'status' | 'finish' | 'patch' | 'createChildren' | 'delete';

export const coreWriters: Writers<CoreKind> = {
  wait: async (_w, _r, d) => (d.requeueAfterMs !== undefined ? { requeueAfterMs: d.requeueAfterMs } : {}),
  status: async (w, r, d) => {
    const { showInMs } = await w.writeStatus(r, d.status);
    const requeueAfterMs = Math.min(d.requeueAfterMs ?? Infinity, showInMs ?? Infinity);
    return Number.isFinite(requeueAfterMs) ? { requeueAfterMs } : {};
  },
  finish: async (w, r, d) => {
    const req = r.req;
    const completedAt = d.status.phase === 'Completed' ? { completedAt: w.now().toISOString() } : {};
    const { wrote } = await w.writeStatus(r, { ...d.status, timeline: { ...req.status?.timeline, ...d.status.timeline, ...completedAt } });
    if (wrote) w.metrics?.requests.inc({ result: d.result, change: requestChange(req.spec) });
    return {};
  },
  patch: patchClaim,
  createChildren,
  delete: async (w, r) => {
    const req = r.req;
    w.fence('deleting the request');
    await attempt(() => w.client.deleteRequest(req.metadata.namespace as string, req.metadata.name as string, req.metadata.uid as string), {
      answered: [404, 409],
    });
    w.log.info({ ttlSeconds: req.spec.ttlSecondsAfterFinished }, 'deleted a finished request after its TTL');
    return {};
  },
};

/** Records the accepted plan (always, conditional on the request as read), patches the claim, and goes on as decided. */
async function patchClaim(w: RequestWriting, r: Reading, d: DecisionOf<'patch'>): Promise<ReconcileResult> {
  const ns = r.req.metadata.namespace as string;
  const { claimName } = d.patch;
  w.fence('patching the claim');
  // The intent first, conditional on the request as it was read: a decision made from a stale
  // copy ends here with a 409, before the claim is touched.
  ({ reading: r } = await w.writeStatus(r, d.record, { always: true }));
  const sinceSeenMs = w.sinceFirstSight(r.req.metadata.uid as string);
  if (sinceSeenMs !== undefined) w.metrics?.seenToPatch.observe(sinceSeenMs / 1000);
  const patched = await attempt(() => w.client.patchPvcSize(ns, claimName, d.patch), {
    answered: [403, 422],
    onConflict: (err) => new ConflictError(`claim ${claimName} changed meanwhile: ${err.message}`),
  });
  if (patched.refused) return w.carryOn(r, d.onRefused(patched.refused.code, patched.refused.message));
  w.unseenClaimPatches.wrote(`${ns}/${claimName}`, d.patch.resourceVersion);
  w.ownClaimPatches?.wrote(`${ns}/${claimName}`, d.patch.resourceVersion);
  const patchedAt = w.now();
  w.log.info({ pvc: claimName, storage: d.patch.storage, ...(sinceSeenMs !== undefined ? { sinceSeenMs: Math.round(sinceSeenMs) } : {}) }, 'patched the claim');
  // A policy's expansion records one Event, on the claim when it completes (claim-event.ts).
  if (d.event && !(d.event.reason === 'Patched' && madeByPolicy(r.req)))
    await w.event(r.req, d.event.reason === 'Patched' ? 'Normal' : 'Warning', d.event.reason, d.event.message);
  return w.carryOn(r, d.onPatched(patchedAt));
}

/** Creates a StatefulSet request's children, records their UIDs, and goes on as decided. */
async function createChildren(w: RequestWriting, r: Reading, d: DecisionOf<'createChildren'>): Promise<ReconcileResult> {
  const req = r.req;
  const ns = req.metadata.namespace as string;
  w.fence('creating requests');
  // Made from the parent as the API server has it: a cache behind its deletion (or its
  // finish) made them once more after the garbage collector took the first ones (seed 55622).
  // Decided again from the API server's copy while the cache shows this one (its watch may
  // have lost the event that would bring it up to date: seed 1366).
  const parent = await readLive<VolumeExpansionRequest>(w.client, volumeExpansionRequests, ns, req.metadata.name as string);
  if (parent?.metadata.resourceVersion !== req.metadata.resourceVersion) {
    w.unseenStatus.knownBehind(r.key, req.metadata.resourceVersion as string);
    throw new ConflictError(`request ${req.metadata.name} changed since the cache's version; looking again from the API server's`);
  }
  // Each child's UID, by claim, recorded in the parent's status right after (those created
  // before a failure too): a child is then known to have existed even if deleted at once.
  const created = new Map<string, string>();
  let failure: unknown;
  for (const child of d.children) {
    try {
      created.set(child.spec.target.pvcName as string, await createChild(w, ns, child));
    } catch (err) {
      // Ours from a create whose answer was lost, or someone else's: the next reconcile reads
      // it from the cache and decides which — never taken for success here.
      failure =
        err instanceof ApiError && err.reason === 'AlreadyExists' ? new ConflictError(`request ${child.metadata.name} already exists; looking again`) : err;
      break;
    }
  }
  if (failure === undefined) return w.carryOn(r, d.then(created));
  // Refused for good before any was made (admission, RBAC): said in the status, looked at again later.
  if (created.size === 0 && failure instanceof ApiError && (failure.code === 403 || failure.code === 422))
    return w.carryOn(r, d.onRefused(failure.code, failure.message));
  if (created.size > 0) await w.carryOn(r, d.then(created));
  // eslint-disable-next-line @typescript-eslint/only-throw-error -- the create's error passed on as caught (or our ConflictError); `unknown` past the undefined check reads as `{} | null`
  throw failure;
}

/** Creates one child (once its claim shows no request of its name at work), remembered as ours until the cache shows it; its UID. */
async function createChild(w: RequestWriting, ns: string, child: VolumeExpansionRequest): Promise<string> {
  await claimShowsNoChild(w, ns, child);
  const uid = await w.client.createRequest(ns, child);
  w.ownCreates?.created(
    `${ns}/${child.metadata.name}`,
    { ...child, metadata: { ...child.metadata, namespace: ns, creationTimestamp: w.now() } },
    w.monotonicMs(),
  );
  // Its ADDED event wakes it; should that be lost, this does (read from the API server then).
  w.wakeAfter?.(`${ns}/${child.metadata.name}`, staleCacheMs + 1000);
  return uid;
}

/**
 * Throws unless the child's claim, as the API server has it, shows no request of the child's
 * name at work on it: a claims cache behind a first child's patch took that child, deleted
 * since, for one never made (seed 701694: the parent's record of it lost with its leader, the
 * claims' watch silent for minutes, and the child made again). Decided again once the cache shows it.
 */
async function claimShowsNoChild(w: RequestWriting, ns: string, child: VolumeExpansionRequest): Promise<void> {
  const claim = await readLive<V1PersistentVolumeClaim>(w.client, resources.persistentVolumeClaims, ns, child.spec.target.pvcName as string);
  if (claim?.metadata?.annotations?.[pvcAnnotations.request] === child.metadata.name) {
    throw new ConflictError(
      `claim ${child.spec.target.pvcName} shows request ${child.metadata.name} at work on it, which the cache does not yet; looking again`,
    );
  }
}
