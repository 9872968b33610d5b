// Finishing a node expansion that needs the pod restarted (spec.offlineNodeExpansion: EvictPod) —
// what gardener/pvc-autoscaler and people do by hand: when the kubelet reports it cannot grow the
// filesystem while the volume is in use, the pod that mounts the claim is evicted, its controller
// creates it again, and the kubelet grows the filesystem as it mounts the claim anew. Pure: the
// request, its claim, the namespace's pods and the other requests' claims in; a decision out.
//
// The rules it keeps:
//   - only after the kubelet said it cannot (the NodeResizeError condition with FailedPrecondition),
//     never on a guess — in Recovering too, once recovery lowered the claim;
//   - only an eviction that finishes the expansion: the pod is the only one that holds the claim's
//     volume (a Job's pod, a bare pod or another workload's pod mounting it too would keep the
//     volume in use, and the filesystem would not grow): pvx then evicts nothing and names the pod;
//   - through the Eviction API, so PodDisruptionBudgets are respected: a refusal (429) is waited
//     out, never worked around, and tried again less and less often (written only when it changes);
//   - only a pod whose controller creates it again (StatefulSet, ReplicaSet, ReplicationController,
//     DaemonSet): a bare pod, or one of a Job or of an operator pvx does not know, is left to a
//     person, and the request says so;
//   - one pod of a workload at a time: not while pvx's eviction of another of its pods is not
//     replaced yet (whatever became of the request that made it), while a pod its StatefulSet runs is missing, or — when the pod to evict is
//     ready — while another pod of the workload is not ready or terminating (an unready pod is
//     out of service already: evicting it takes nothing more down). Of the requests whose claims
//     the kubelet has refused and that would evict a pod of one workload now, those whose pod is
//     not ready go first, then by name; a request whose claim the kubelet has not refused yet is
//     no rival, so the first claim refused is usually the first served;
//   - at most once per request: the pod is marked on the claim (pvx.dev/eviction: the request's and
//     the pod's UIDs) and recorded in the status before it is evicted, the eviction is
//     preconditioned on that UID, and once it is evicted (or went by itself) no other pod is. The
//     status alone is not believed: anyone who may write requests' status could rewrite it (seed
//     4142: a record forged for the pod that replaced the evicted one had a second pod evicted);
//     only a record of the pod marked on the claim counts, and the mark is read again, live, just
//     before the eviction.
import type { V1PersistentVolumeClaim, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import { pvcAnnotations } from '../../crds/keys.ts';
import type { EvictionStatus, Phase, RequestStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { holdsClaim, podClaims, runningPodClaims } from '../claim/pods.ts';
import { kubeletRefusedInUse } from '../claim/resize.ts';
import type { EvictionDecision, RequestDecision } from './decision.ts';
import { isFinished } from './phase.ts';

/** The pod pvx chose to evict for a request, as marked on its claim (pvcAnnotations.eviction). */
export interface EvictionMark {
  request: string;
  podName: string;
  podUID: string;
  owner: string;
}

export const evictionMarkText = (m: EvictionMark): string => JSON.stringify(m);

/** The claim's eviction mark, whichever request it is of (a mark that does not parse is none). */
function markOnClaim(pvc: V1PersistentVolumeClaim | undefined): EvictionMark | undefined {
  const text = pvc?.metadata?.annotations?.[pvcAnnotations.eviction];
  if (!text) return undefined;
  try {
    const m = JSON.parse(text) as Partial<EvictionMark>;
    const fields = [m.request, m.podName, m.podUID, m.owner];
    return fields.every((f) => typeof f === 'string') ? (m as EvictionMark) : undefined;
  } catch {
    return undefined;
  }
}

/** The claim's eviction mark, if it is this request's. */
export function evictionMarkOf(pvc: V1PersistentVolumeClaim | undefined, requestUID: string | undefined): EvictionMark | undefined {
  const mark = markOnClaim(pvc);
  return requestUID && mark?.request === requestUID ? mark : undefined;
}

/**
 * The request's eviction as pvx marked it: its status's record when that names the pod marked on
 * the claim; the marked pod as Requested when the status says otherwise or nothing (rewritten, or
 * pvx's record of it not written); none without a mark, whatever the status says.
 */
export function trustedEviction(req: VolumeExpansionRequest, pvc: V1PersistentVolumeClaim): EvictionStatus | undefined {
  const mark = evictionMarkOf(pvc, req.metadata.uid);
  if (!mark) return undefined;
  const ev = req.status?.eviction;
  if (ev?.podUID === mark.podUID) return ev;
  return {
    phase: 'Requested',
    podName: mark.podName,
    podUID: mark.podUID,
    owner: mark.owner,
    reason: 'Evicting',
    message: `pvx chose pod ${mark.podName} (${mark.owner}) to evict for this request (marked on the claim)`,
  };
}

/** A wait, cut at the request's deadline (then it ends, whatever the eviction's state). */
const untilDeadline = (e: EvictionInput, ms: number): number => (e.deadline ? Math.max(1, Math.min(ms, e.deadline.getTime() - e.now.getTime())) : ms);

/** Controllers that create an evicted pod again. */
const recreatingControllers = new Set(['StatefulSet', 'ReplicaSet', 'ReplicationController', 'DaemonSet']);

/** The first wait after a refused eviction; each next wait is as long as the refusals have lasted, up to evictionRetryMaxMs. */
export const evictionRetryMs = 20_000;
export const evictionRetryMaxMs = 5 * 60_000;

export interface EvictionInput {
  request: VolumeExpansionRequest;
  pvc: V1PersistentVolumeClaim;
  /** The running pods and every other pod of the request's namespace. */
  pods: readonly V1Pod[];
  /** Every request of the namespace (the other requests that may evict pods of the same workload). */
  requests: readonly VolumeExpansionRequest[];
  /** A claim of the namespace by name, as the cache has it. */
  claimNamed: (name: string) => V1PersistentVolumeClaim | undefined;
  /** A StatefulSet of the namespace by name, as the cache has it: which of its pods come back. */
  statefulSetNamed?: (name: string) => V1StatefulSet | undefined;
  /** What the request shows now (after the claim's progress), to add the eviction to. */
  shown: RequestStatus & { phase: Phase };
  now: Date;
  requeueAfterMs: number;
  /** The request's deadline: no wait here outlasts it (seed 450485: a refused eviction's backoff looked again past it). */
  deadline?: Date;
  /** When this process last tried the recorded eviction (kept in memory: a refusal that repeats is not written again). */
  lastAttemptAt?: Date;
  /**
   * Whether this process decided the request's eviction (by UID) and remembers it: the copy in
   * `requests` carries it, believed before the claim's cache shows its mark.
   */
  decidedHere?: (requestUID: string) => boolean;
}

type Owner = { kind: string; name: string; uid: string };
const ownerOf = (pod: V1Pod) => pod.metadata?.ownerReferences?.find((r) => r.controller);
const ownerText = (o: { kind: string; name: string }) => `${o.kind} ${o.name}`;
const isReady = (pod: V1Pod) =>
  pod.status?.phase === 'Running' && !pod.metadata?.deletionTimestamp && (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
const mounting = (pods: readonly V1Pod[], claim: string) => pods.filter((p) => runningPodClaims(p).includes(claim));
const describePod = (p: V1Pod) => `${p.metadata?.name} (${ownerOf(p) ? `of ${ownerText(ownerOf(p) as Owner)}` : 'no controller'})`;

/** The pod whose eviction finishes the claim's expansion, or why there is none to evict (or nothing to do yet). */
type Choice =
  | { kind: 'evict'; pod: V1Pod; owner: Owner }
  | { kind: 'none' }
  | { kind: 'held'; reason: 'EvictionNotPossible' | 'VolumeHeldByOtherPod' | 'EvictionWaits'; note: string };

/**
 * Which pod to evict for a claim the kubelet refused to grow in use: the one running pod that
 * mounts it, when no other pod holds its volume and a controller creates it again.
 */
export function podToEvict(pods: readonly V1Pod[], claim: string): Choice {
  const running = mounting(pods, claim);
  if (running.length === 0) return { kind: 'none' };
  // The pod a controller creates again is the one to evict, if any is: the others are named as what holds the volume.
  const pod = running.find((p) => recreatingControllers.has(ownerOf(p)?.kind ?? '')) ?? (running[0] as V1Pod);
  const others = pods.filter((p) => p.metadata?.uid !== pod.metadata?.uid && holdsClaim(p, claim));
  const live = others.filter((p) => !p.metadata?.deletionTimestamp);
  if (live.length > 0) {
    return {
      kind: 'held',
      reason: 'VolumeHeldByOtherPod',
      note: `pod ${live.map(describePod).join(', ')} also mounts ${claim}: evicting pod ${pod.metadata?.name} would not grow the filesystem while ${live.length > 1 ? 'they hold' : 'it holds'} the volume, so pvx evicts nothing; the kubelet grows it once no other pod holds it`,
    };
  }
  if (others.length > 0) {
    return {
      kind: 'held',
      reason: 'EvictionWaits',
      note: `pod ${others.map((p) => p.metadata?.name).join(', ')} is terminating and still holds ${claim}: waiting for it to go`,
    };
  }
  const owner = ownerOf(pod);
  if (!owner || !recreatingControllers.has(owner.kind)) {
    return {
      kind: 'held',
      reason: 'EvictionNotPossible',
      note: `pvx evicts only a pod a StatefulSet, ReplicaSet, ReplicationController or DaemonSet creates again, and ${describePod(pod)} is not one: restart it yourself`,
    };
  }
  return { kind: 'evict', pod, owner: owner as Owner };
}

/**
 * The eviction step of a patched request at the node stage, or undefined when there is none to
 * take (the claim is not refused in use, or the request already evicted its one pod). Without the
 * opt-in it only says which pod a person should restart.
 */
export function decideEviction(e: EvictionInput): RequestDecision | undefined {
  const { request: req, pvc, shown } = e;
  const claim = pvc.metadata?.name as string;
  const ev = trustedEviction(req, pvc);
  const inStatus = ev !== undefined && req.status?.eviction?.podUID === ev.podUID;
  const status = (eviction: EvictionStatus | undefined, note: string, requeueAfterMs = e.requeueAfterMs, reason = shown.reason): RequestDecision => ({
    kind: 'status',
    status: { ...shown, reason, message: `${shown.message}; ${note}`, ...(eviction ? { eviction } : {}) },
    requeueAfterMs: untilDeadline(e, requeueAfterMs),
  });
  if (ev?.phase === 'Evicted') return evictedAlready(e, ev, status);
  // Recorded, and the pod gone (its eviction's answer lost, or it went by itself) while the claim
  // waits for a pod: the record says so, and other pods of the workload are not held up by it.
  if (ev && !e.pods.some((p) => p.metadata?.uid === ev.podUID && !p.metadata?.deletionTimestamp)) return retry(e, ev, status, inStatus);
  if (!kubeletRefusedInUse(pvc)) return undefined;
  if (req.spec.offlineNodeExpansion !== 'EvictPod') {
    const names = mounting(e.pods, claim)
      .map((p) => p.metadata?.name)
      .join(', ');
    return status(
      undefined,
      `restart ${names ? `pod ${names}` : 'the pod that mounts it'} (kubectl delete pod ${names || 'POD'} -n ${pvc.metadata?.namespace}: its controller creates it again), or let pvx evict it: a request with spec.offlineNodeExpansion: EvictPod`,
    );
  }
  const choice = podToEvict(e.pods, claim);
  // Recorded and not done: the same pod again — once no other pod holds the volume (an eviction
  // now would not finish the expansion) and a controller creates it again.
  if (ev) {
    if (choice.kind === 'held') return status(ev, choice.note, e.requeueAfterMs, choice.reason);
    // A recorded pod that is not the claim's to evict (another pod mounts the claim now, or the
    // record was written by someone else): pvx evicts only the pod it would choose itself.
    const recordedPod = e.pods.find((p) => p.metadata?.uid === ev.podUID && !p.metadata?.deletionTimestamp);
    if (recordedPod && (choice.kind !== 'evict' || choice.pod.metadata?.uid !== ev.podUID))
      return status(
        ev,
        `pod ${ev.podName}, recorded as the pod to evict, is not the one that mounts ${claim}: pvx evicts nothing for this request`,
        e.requeueAfterMs,
        'EvictionNotPossible',
      );
    return retry(e, ev, status, inStatus);
  }
  if (choice.kind === 'none') return undefined;
  if (choice.kind === 'held') return status(undefined, choice.note, e.requeueAfterMs, choice.reason);
  const { pod, owner } = choice;
  const busy = workloadBusy(e, pod, owner);
  if (busy)
    return status(
      undefined,
      `waiting to evict pod ${pod.metadata?.name}: ${busy} (one pod of ${ownerText(owner)} at a time)`,
      e.requeueAfterMs,
      'EvictionWaits',
    );
  return evict(e, { podName: pod.metadata?.name as string, podUID: pod.metadata?.uid as string, owner: `${owner.kind}/${owner.name}`, phase: 'Requested' });
}

type Show = (ev: EvictionStatus | undefined, note: string, requeueAfterMs?: number, reason?: string) => RequestDecision;

/** The request's one eviction is done: what it shows from then on (and no other pod is evicted for it). */
function evictedAlready(e: EvictionInput, ev: EvictionStatus, status: Show): RequestDecision {
  const after = mounting(e.pods, e.pvc.metadata?.name as string).find((p) => p.metadata?.uid !== ev.podUID);
  // A pod mounted the claim anew and the kubelet still cannot grow it: the driver refuses at mount too.
  const still =
    after && kubeletRefusedInUse(e.pvc)
      ? `; pod ${after.metadata?.name} mounts it now and the kubelet still cannot grow it: its driver refuses at mount too (read the kubelet's log for NodeExpandVolume)`
      : '';
  const what = ev.reason === 'PodGone' ? `pod ${ev.podName} is gone` : `pod ${ev.podName} was evicted${ev.evictedAt ? ` at ${ev.evictedAt}` : ''}`;
  return status(ev, `${what}${still || ': the kubelet grows the filesystem as its next pod mounts the claim'} (pvx evicts no other pod for this request)`);
}

/**
 * When a refused eviction is tried again: each wait as long as the refusals have lasted so far
 * (20 s, 20 s, 40 s, 80 s …), at most evictionRetryMaxMs — so a budget that refuses for an hour
 * costs a few attempts, not one every 20 s. Counted from this process's last attempt; a process
 * that has made none (a restart) tries once the first wait after the refusal is over.
 */
export function nextEvictionAttempt(blockedSince: Date, lastAttemptAt: Date | undefined): Date {
  const last = lastAttemptAt && lastAttemptAt >= blockedSince ? lastAttemptAt : blockedSince;
  const waitMs = Math.min(evictionRetryMaxMs, Math.max(evictionRetryMs, last.getTime() - blockedSince.getTime()));
  return new Date(last.getTime() + waitMs);
}

/** An eviction recorded and not done: the same pod again (after a refusal, once the wait is over), or the end of it. */
function retry(e: EvictionInput, ev: EvictionStatus, status: Show, inStatus: boolean): RequestDecision {
  const pod = e.pods.find((p) => p.metadata?.uid === ev.podUID);
  if (!pod || pod.metadata?.deletionTimestamp) {
    // Gone: pvx's eviction went through (its answer lost), or the pod went by itself. Either way
    // the claim is mounted anew by the next pod, and no other pod is evicted for this request. It
    // is shown as a done eviction shows, so that the next look writes nothing more: a record a
    // status writer rewrote costs one write to restore, not two (seed 3050966: each rewrite made
    // pvx write the request twice and its StatefulSet request twice more; the status writer
    // answered each restore with another rewrite, and the parent was looked at 130 times in ten
    // minutes). The time is the one pvx's timeline kept (the mark does not carry it).
    const evictedAt = ev.evictedAt ?? e.shown.timeline?.evictedAt ?? e.now.toISOString();
    return evictedAlready(e, { ...ev, phase: 'Evicted', reason: 'PodGone', message: `pod ${ev.podName} is gone`, evictedAt }, status);
  }
  // Refused, the wait not over: shown as the refusal wrote it (another text would be a second write per attempt).
  if (ev.phase === 'Blocked' && ev.requestedAt) {
    const next = nextEvictionAttempt(new Date(ev.requestedAt), e.lastAttemptAt);
    if (e.now < next) return status(ev, ev.message ?? `evicting pod ${ev.podName} was refused for now`, next.getTime() - e.now.getTime());
  }
  // The workload is looked at again before each attempt: a sibling gone unready, or another
  // request's eviction, since the record was made (or a record someone else wrote) holds it.
  const owner = ownerOf(pod);
  const busy = owner && recreatingControllers.has(owner.kind) ? workloadBusy(e, pod, owner as Owner, true) : `pod ${ev.podName} is not its controller's`;
  // Waiting its turn reads as such, as before a first attempt (seed 206131: shown as PodRestartRequired).
  if (busy) return status(ev, `waiting to evict pod ${ev.podName}: ${busy}`, e.requeueAfterMs, 'EvictionWaits');
  // Requested and not known to have gone through, or refused and its wait over: the same pod
  // again, on the record the status holds (its UID is recorded: writing it again before each
  // attempt would cost a refused eviction two writes every evictionRetryMs, for as long as a
  // budget refuses, and a StatefulSet request a look at each). Marked and not recorded (its
  // record's write failed, or was rewritten): recorded again first, so that the other requests
  // of the workload count it (seed 150653).
  return evict(e, { ...ev, phase: ev.phase === 'Blocked' ? 'Blocked' : 'Requested' }, inStatus);
}

/**
 * Why another pod of the workload is in the way, or undefined: one of its pods is not ready while
 * the pod to evict is (missing pods show as fewer ready ones only to its controller, so
 * terminating, pending and unready pods are what is seen), a pod its StatefulSet runs is missing,
 * pvx's eviction of another of its pods is not replaced yet, or another request goes first
 * (`recorded`: this request's eviction is recorded already, and so goes first).
 */
function workloadBusy(e: EvictionInput, pod: V1Pod, owner: Owner, recorded = false): string | undefined {
  if (isReady(pod)) {
    const unready = e.pods.find((p) => p.metadata?.uid !== pod.metadata?.uid && ownerOf(p)?.uid === owner.uid && !isReady(p));
    if (unready) return `pod ${unready.metadata?.name} of ${ownerText(owner)} is not ready`;
  }
  const missing = missingOrdinal(e, pod, owner);
  if (missing) return `pod ${missing} of ${ownerText(owner)} is missing (its controller has not created it again yet)`;
  const others = e.requests.filter((r) => r.metadata.uid !== e.request.metadata.uid && !isFinished(r) && r.spec.target?.pvcName);
  const ownerKey = `${owner.kind}/${owner.name}`;
  for (const r of others) {
    const ev = evictionOf(e, r);
    if (!ev || ev.owner !== ownerKey) continue;
    // A record whose pod is there and does not hold that request's claim is no eviction of it (a
    // status someone else wrote): it holds nobody up.
    const recordedPod = e.pods.find((p) => p.metadata?.uid === ev.podUID);
    if (recordedPod && !holdsClaim(recordedPod, r.spec.target.pvcName as string)) continue;
    // Nor does one that cannot evict its pod for as long as something else holds the volume (seed
    // 255206: a bare pod mounting that request's claim held its workload's other evictions for
    // ever); it looks at the workload again before it evicts.
    if (recordedPod && ev.phase !== 'Evicted' && cannotEvict(e.pods, r.spec.target.pvcName as string, ev)) continue;
    // An eviction of a pod of this workload that has not ended with its claim: recorded and the pod
    // still there, or the pod gone (whatever the record says) and not back yet.
    const podGone = !e.pods.some((p) => p.metadata?.uid === ev.podUID && !p.metadata?.deletionTimestamp);
    if (ev.phase !== 'Evicted' && !podGone) return `request ${r.metadata.name} is evicting pod ${ev.podName}`;
    if (comesBack(e, ev) && !replaced(e, r.spec.target.pvcName as string, ev)) {
      return `request ${r.metadata.name} evicted pod ${ev.podName}, which is not back yet`;
    }
  }
  const ended = evictedForEndedRequest(e, owner);
  if (ended) return ended;
  // A request that recorded its eviction goes first already: the others wait for its record.
  if (recorded) return undefined;
  const first = rivals(e, others, owner).find(() => true);
  const mine = { name: e.request.metadata.name as string, ready: isReady(pod) };
  if (first && goesBefore(first, mine)) return `request ${first.name} evicts its pod first`;
  return undefined;
}

/**
 * A pod of the workload pvx evicted for a request that has ended since, or was deleted, not back
 * yet: the mark on its claim holds the workload's other evictions until a running pod mounts that
 * claim again, whatever became of the request (seed 2393668: a request failed at its deadline while
 * the pod it evicted was being created again, and a second request of the StatefulSet evicted
 * another pod). Running is enough here, not ready: the workload has its pod back, and a pod that
 * never gets ready again (a crash loop) would otherwise hold the workload for ever on a request
 * that is over. The claims looked at: the requests' targets and those of the workload's pods.
 */
function evictedForEndedRequest(e: EvictionInput, owner: Owner): string | undefined {
  const ownerKey = `${owner.kind}/${owner.name}`;
  const unfinished = new Set([e.request, ...e.requests].filter((r) => !isFinished(r)).map((r) => r.metadata.uid));
  const claims = new Set([
    ...e.requests.flatMap((r) => (r.spec.target?.pvcName ? [r.spec.target.pvcName] : [])),
    ...e.pods.filter((p) => ownerOf(p)?.uid === owner.uid).flatMap(podClaims),
  ]);
  for (const claim of claims) {
    const mark = markOnClaim(e.claimNamed(claim));
    // An unfinished request's eviction is looked at with its request (workloadBusy).
    if (!mark || mark.owner !== ownerKey || unfinished.has(mark.request)) continue;
    if (e.pods.some((p) => p.metadata?.uid === mark.podUID && !p.metadata?.deletionTimestamp) || !comesBack(e, mark)) continue;
    if (e.pods.some((p) => p.metadata?.uid !== mark.podUID && runningPodClaims(p).includes(claim))) continue;
    return `pod ${mark.podName}, evicted by pvx for a request that has ended, is not back yet`;
  }
  return undefined;
}

/** A recorded eviction that is not to be carried out while the pods are as they are: another pod holds the volume, or the claim's pod to evict is another. */
function cannotEvict(pods: readonly V1Pod[], claim: string, ev: EvictionStatus): boolean {
  const choice = podToEvict(pods, claim);
  if (choice.kind === 'held') return choice.reason !== 'EvictionWaits';
  return choice.kind === 'evict' && choice.pod.metadata?.uid !== ev.podUID;
}

/**
 * Another request's eviction as pvx made it: as this process remembers deciding it, or as marked
 * on its claim — never its status alone (seed 255206: a status writer's forged record of one
 * request held every other eviction of its workload for ever).
 */
function evictionOf(e: EvictionInput, r: VolumeExpansionRequest): EvictionStatus | undefined {
  if (e.decidedHere?.(r.metadata.uid as string)) return r.status?.eviction;
  const claim = e.claimNamed(r.spec.target.pvcName as string);
  return claim ? trustedEviction(r, claim) : undefined;
}

type Rival = { name: string; ready: boolean };
/** Of two requests that would evict a pod of one workload: the one whose pod is not ready first (it is out of service already), then by name. */
const goesBefore = (a: Rival, b: Rival): boolean => (a.ready !== b.ready ? !a.ready : a.name < b.name);

/**
 * The other requests that would evict a pod of this workload now, in the order they go: those
 * whose claim the kubelet refused in use after their own patch, with no eviction recorded, whose
 * pod could be evicted (the only holder of the volume, of this very controller). A request that
 * cannot evict (another pod holds its volume, its pod is not its controller's) is no rival: it
 * would hold the others up while it waits on something else.
 */
function rivals(e: EvictionInput, others: readonly VolumeExpansionRequest[], owner: Owner): Rival[] {
  return others
    .flatMap((r): Rival[] => {
      if (r.spec.offlineNodeExpansion !== 'EvictPod' || evictionOf(e, r)) return [];
      const claim = e.claimNamed(r.spec.target.pvcName as string);
      // Only the request whose patch the claim is at the node stage for: one waiting its turn is no rival.
      if (!claim || !kubeletRefusedInUse(claim) || claim.metadata?.annotations?.[pvcAnnotations.requestUID] !== r.metadata.uid) return [];
      const choice = podToEvict(e.pods, r.spec.target.pvcName as string);
      if (choice.kind !== 'evict' || choice.owner.uid !== owner.uid) return [];
      return [{ name: r.metadata.name as string, ready: isReady(choice.pod) }];
    })
    .sort((a, b) => (goesBefore(a, b) ? -1 : goesBefore(b, a) ? 1 : 0));
}

/**
 * The name of a pod its StatefulSet runs (an ordinal from spec.ordinals.start, spec.replicas of
 * them) that is not there at all, or undefined. A pod evicted and not created again yet is seen
 * nowhere else once the request that evicted it is deleted (its record goes with it) and the pod
 * is gone from the cache; its StatefulSet still names it. Only for the StatefulSet the pod's
 * ownerReference names (its UID): of another kind, pvx cannot tell which pods are missing.
 */
function missingOrdinal(e: EvictionInput, pod: V1Pod, owner: Owner): string | undefined {
  if (owner.kind !== 'StatefulSet') return undefined;
  const sts = e.statefulSetNamed?.(owner.name);
  if (!sts || sts.metadata?.uid !== owner.uid) return undefined;
  const start = sts.spec?.ordinals?.start ?? 0;
  for (let i = start; i < start + (sts.spec?.replicas ?? 1); i++) {
    const name = `${owner.name}-${i}`;
    if (name !== pod.metadata?.name && !e.pods.some((p) => p.metadata?.name === name)) return name;
  }
  return undefined;
}

/**
 * The evicted pod is replaced by a ready one — of its name (a StatefulSet's pod comes back under it),
 * or mounting its request's claim: the workload is whole again.
 */
const replaced = (e: EvictionInput, claim: string, ev: EvictionStatus): boolean =>
  e.pods.some((p) => p.metadata?.uid !== ev.podUID && isReady(p) && (p.metadata?.name === ev.podName || runningPodClaims(p).includes(claim)));

/**
 * Whether the controller creates an evicted pod again: a StatefulSet's pod of an ordinal it no
 * longer runs (scaled down meanwhile) does not come back, and is in nobody's way.
 */
function comesBack(e: EvictionInput, ev: Pick<EvictionStatus, 'podName' | 'owner'>): boolean {
  const [kind, name] = (ev.owner ?? '').split('/');
  if (kind !== 'StatefulSet' || !name) return true;
  const sts = e.statefulSetNamed?.(name);
  const ordinal = Number(ev.podName.slice(name.length + 1));
  if (!sts || !ev.podName.startsWith(`${name}-`) || !Number.isInteger(ordinal)) return true;
  const start = sts.spec?.ordinals?.start ?? 0;
  return ordinal >= start && ordinal < start + (sts.spec?.replicas ?? 1);
}

/** The claim's mark of the pod to evict, unless the claim carries it already (the record's write failed after the mark's). */
function markToWrite(e: EvictionInput, ev: EvictionStatus): Pick<EvictionDecision, 'mark'> {
  const text = evictionMarkText({ request: e.request.metadata.uid as string, podName: ev.podName, podUID: ev.podUID, owner: ev.owner ?? '' });
  if (e.pvc.metadata?.annotations?.[pvcAnnotations.eviction] === text) return {};
  const patch = {
    resourceVersion: e.pvc.metadata?.resourceVersion as string,
    uid: e.pvc.metadata?.uid as string,
    annotations: { [pvcAnnotations.eviction]: text },
  };
  return { mark: { claim: e.pvc.metadata?.name as string, patch } };
}

/**
 * The namespace's pods and the claim as the API server has them just before the eviction:
 * undefined to evict, or what to show instead. A pod the cache had not shown yet (a Job's, started
 * a moment ago) that holds the volume stops it, and so does a claim marked for another pod of this
 * request (a cache behind pvx's mark).
 */
/** What the API server showed just before the eviction: the namespace's pods, the claim, and the pod's StatefulSet (null: none; undefined: not read). */
interface LiveView {
  pods: readonly V1Pod[];
  claim: V1PersistentVolumeClaim | undefined;
  statefulSet?: V1StatefulSet | null;
}

/**
 * Why the StatefulSet that would create the pod again will not, or undefined when it will (or was
 * not read). A pods list can answer late: it may show the pod still owned by a StatefulSet that was
 * deleted with propagation Orphan meanwhile (seed 1212322: the answer came 3 s after the garbage
 * collector took the pod's owner away; the pod was evicted and nothing created it again).
 */
function ownerGoing(owner: Owner, statefulSet: V1StatefulSet | null | undefined): string | undefined {
  if (owner.kind !== 'StatefulSet' || statefulSet === undefined) return undefined;
  if (statefulSet === null || statefulSet.metadata?.uid !== owner.uid) return `StatefulSet ${owner.name}, which would create it again, is gone`;
  if (statefulSet.metadata?.deletionTimestamp) return `StatefulSet ${owner.name}, which would create it again, is being deleted`;
  return undefined;
}

function checkLive(e: EvictionInput, ev: EvictionStatus, requested: EvictionStatus, view: LiveView): RequestDecision | undefined {
  const { shown } = e;
  const { pods: live, claim } = view;
  const marked = evictionMarkOf(claim, e.request.metadata.uid);
  if (marked?.podUID !== ev.podUID)
    return {
      kind: 'status',
      status: {
        ...shown,
        reason: 'EvictionWaits',
        message: `${shown.message}; ${marked ? `pvx chose pod ${marked.podName} for this request already: it evicts no other` : `claim ${e.pvc.metadata?.name} does not show pvx's mark of pod ${ev.podName} yet`}`,
      },
      requeueAfterMs: 10_000,
    };
  const again = podToEvict(live, e.pvc.metadata?.name as string);
  const going = again.kind === 'evict' ? ownerGoing(again.owner, view.statefulSet) : undefined;
  if (again.kind === 'evict' && again.pod.metadata?.uid === ev.podUID && !going) return undefined;
  const why =
    again.kind === 'held'
      ? again.note
      : going
        ? `${going}: pvx evicts nothing; restart pod ${ev.podName} yourself once something will create it again`
        : `pod ${ev.podName} is no longer the one that mounts ${e.pvc.metadata?.name}`;
  const reason = again.kind === 'held' ? again.reason : going ? 'EvictionNotPossible' : 'EvictionWaits';
  return {
    kind: 'status',
    status: { ...shown, reason, message: `${shown.message}; ${why}`, eviction: requested },
    // The cache, behind the API server, would decide the same eviction again: looked at once it has caught up.
    requeueAfterMs: 10_000,
  };
}

function evict(e: EvictionInput, ev: EvictionStatus, recorded = false): RequestDecision {
  const requested: EvictionStatus = recorded
    ? ev
    : {
        ...ev,
        phase: 'Requested',
        reason: 'Evicting',
        message: `evicting pod ${ev.podName} (${ev.owner}) so that the kubelet grows the filesystem as it mounts the claim anew`,
        requestedAt: e.now.toISOString(),
      };
  const shown = e.shown;
  const status = (eviction: EvictionStatus, requeueAfterMs: number, extra: RequestStatus = {}): RequestDecision => ({
    kind: 'status',
    status: {
      ...shown,
      ...extra,
      reason: eviction.phase === 'Evicted' ? 'PodEvicted' : shown.reason,
      message: `${shown.message}; ${eviction.message}`,
      eviction,
    },
    requeueAfterMs: untilDeadline(e, requeueAfterMs),
  });
  // A refusal that repeats one before it keeps the time the refusals began: the status then reads
  // the same, nothing is written, and the next wait grows (nextEvictionAttempt).
  const blockedSince = requested.phase === 'Blocked' && requested.requestedAt ? requested.requestedAt : e.now.toISOString();
  return {
    kind: 'evict',
    ...(recorded ? {} : { record: { ...shown, message: `${shown.message}; ${requested.message}`, eviction: requested }, ...markToWrite(e, ev) }),
    pod: { namespace: e.request.metadata.namespace as string, name: ev.podName, uid: ev.podUID },
    onLive: (live, claim, statefulSet) => checkLive(e, ev, requested, { pods: live, claim, statefulSet }),
    onEvicted: (at) =>
      status(
        {
          ...requested,
          phase: 'Evicted',
          reason: 'Evicted',
          message: `evicted pod ${ev.podName}: ${ev.owner} creates it again, and the kubelet grows the filesystem as it mounts the claim`,
          evictedAt: at.toISOString(),
        },
        5000,
        { timeline: { ...shown.timeline, evictedAt: at.toISOString() } },
      ),
    onBlocked: (code, message) => {
      const next = nextEvictionAttempt(new Date(blockedSince), e.now);
      return status(
        {
          ...requested,
          phase: 'Blocked',
          requestedAt: blockedSince,
          reason: code === 429 ? 'DisruptionBudget' : code === 403 ? 'Forbidden' : 'EvictionRefused',
          message:
            code === 403
              ? `pvx may not evict pod ${ev.podName} (${message}): the cluster's admins grant it with the chart value offlineExpansion.enabled (or the kustomize component config/components/offline-expansion); until then, restart the pod yourself`
              : `evicting pod ${ev.podName} was refused for now (${code}: ${message}); pvx tries again, less often as the refusals last`,
        },
        code === 403 ? 60_000 : next.getTime() - e.now.getTime(),
      );
    },
  };
}
