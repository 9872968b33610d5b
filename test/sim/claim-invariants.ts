// What must hold of claims — what users fear — whatever asked for the change: a request, a
// StatefulSet request's child, a policy, several policies at once. Checked from the API server's
// write log, with sizes computed by the checker's own oracle (oracle.ts), never from pvx's record
// of what it meant to do:
//
//   size-as-asked            a raise by pvx equals what its request's spec asks of the claim as
//                            validated (the copy the patch was conditional on), and follows the
//                            plan the request recorded just before it;
//   one-raise-per-ask        one raise per claim per ask: a request, or a StatefulSet request and
//                            all its children together;
//   one-raise-per-breach     a policy asks again for a claim only once the last raise of it settled,
//                            and grows only the claim it asked about, at the size it was then;
//   cooldown-holds           and not within its cooldown of the claim's last expansion, unless the
//                            volume is about to fill (an ask on a measurement from before that
//                            expansion ends Superseded, and never raises);
//   no-raise-over-a-resize   never while the claim is being resized (that change would be lost);
//   raised-claim-is-targeted a StatefulSet request's child raises only a claim of a live replica;
//   pinned-as-asked          a StatefulSet request pins, for each claim, the size its spec asks;
//   child-made-once          a child seen by its parent, or that raised its claim, is never made again;
//   within-guardrails        no raise above a cluster guardrail that applies (an unknown namespace
//                            is under every guardrail that selects by label);
//   policies-evaluated       every policy pvx can read is evaluated and says so (Ready), whatever
//                            the others are; one it cannot read says why.
import type { V1Namespace, V1PersistentVolumeClaim, V1StatefulSet } from '@kubernetes/client-node';
import type { ClusterVolumeExpansionPolicy } from '../../src/crds/cluster-volume-expansion-policy.ts';
import { pvcAnnotations, requestAnnotations, requestLabels } from '../../src/crds/keys.ts';
import type { VolumeExpansionPolicy } from '../../src/crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import type { WriteRecord } from '../../src/k8s/testing/fake-client.ts';
import { clusterVolumeExpansionPolicies, namespaces, resources, volumeExpansionPolicies, volumeExpansionRequests } from '../../src/k8s/resources.ts';
import type { FakeKubeClient } from '../../src/k8s/testing/fake-client.ts';
import { askedBytes, durationMs, liveClaimNames, quantityBytes, windowsReadable } from './oracle.ts';

const terminal = new Set(['Completed', 'Failed', 'Rejected']);
const policyOf = (r: VolumeExpansionRequest): string | undefined =>
  r.metadata.labels?.[requestLabels.policy] ?? r.metadata.labels?.[requestLabels.clusterPolicy];
const isPolicyRequest = (r: VolumeExpansionRequest): boolean => policyOf(r) !== undefined;
const sizeOf = (pvc: V1PersistentVolumeClaim | undefined): bigint => quantityBytes(pvc?.spec?.resources?.requests?.storage ?? '0');
const capacityOf = (pvc: V1PersistentVolumeClaim | undefined): bigint => quantityBytes(pvc?.status?.capacity?.storage ?? '0');
const gib = (b: bigint): string => (b % 2n ** 30n === 0n ? `${b / 2n ** 30n}Gi` : b % 2n ** 20n === 0n ? `${b / 2n ** 20n}Mi` : `${b}B`);
/** A policy's default cooldown (the CRD's description says 30m). */
const defaultCooldownMs = 30 * 60_000;
/** A volume whose actual time to full is below this may be grown within the cooldown (the policy's emergency path). */
const aboutToFillMs = 15 * 60_000;

/**
 * Whether a policy's request was asked on a measurement the claim has outgrown: it was asked
 * larger since (and is not that large yet), or its capacity is another than the one measured.
 */
function measuredBefore(q: VolumeExpansionRequest, pvc: V1PersistentVolumeClaim): boolean {
  const measured = q.metadata.annotations?.[requestAnnotations.measuredCapacity];
  if (measured === undefined) return false;
  const m = quantityBytes(measured);
  return (sizeOf(pvc) > m && sizeOf(pvc) > capacityOf(pvc)) || capacityOf(pvc) !== m;
}

export interface ClaimChecks {
  api: FakeKubeClient;
  now(): number;
  violate(rule: string, subject: string, message: string): void;
  isPvx(actor: string | undefined): boolean;
  /** The usage model's fill rate (bytes/s) and used bytes of a claim by UID. */
  fillRate(uid: string): number | undefined;
  used(uid: string): number | undefined;
  /** Largest wall-clock step so far (pvx's cooldown is on the wall clock). */
  wallClockDrift(): number;
}

interface RequestRecord {
  /** The latest version the API server held (kept after deletion). */
  obj: VolumeExpansionRequest;
  createdAt: number;
  createdBy: string;
  finishedAt?: number;
  /** For a policy's request: the claim of its name as the API server held it when the policy asked. */
  claimWhenAsked?: { uid: string; size: bigint };
}

interface Raise {
  claimUID: string;
  claim: string;
  size: bigint;
  requestUID: string;
  /** The ask it answers: the request, or the StatefulSet request whose child it is. */
  ask: string;
  at: number;
  /** When the claim reached the size or the request ended (the raise stops being in flight). */
  settledAt?: number;
}

interface StatefulSetVersion {
  at: number;
  name: string;
  replicas: number;
  start: number;
}

export class ClaimInvariants {
  private readonly requests = new Map<string, RequestRecord>();
  /** Requests deleted (by UID). */
  private readonly gone = new Set<string>();
  /** Each claim's capacities over time (by UID), to know the claim as a parent validated it. */
  private readonly capacities = new Map<string, { at: number; capacity: bigint }[]>();
  private readonly raises: Raise[] = [];
  /** Policy requests asked within the cooldown on a measurement the claim had outgrown already (by UID): never to raise it. */
  private readonly staleAsks = new Set<string>();
  /** The size pvx last set on each claim (by UID): its last raise or lowering. */
  private readonly pvxSet = new Map<string, bigint>();
  private readonly statefulSets: StatefulSetVersion[] = [];
  /** When pvx changed a claim's size or class (by UID): the expansions a policy's cooldown counts from. */
  private readonly activity = new Map<string, number[]>();
  /** When each policy (namespaced "ns/name", cluster "name") was created. */
  private readonly policyCreatedAt = new Map<string, number>();
  private readonly c: ClaimChecks;

  constructor(checks: ClaimChecks) {
    this.c = checks;
  }

  /** When the request (by UID) was created, on the simulation's clock. */
  createdAt(uid: string): number | undefined {
    return this.requests.get(uid)?.createdAt;
  }

  onWrite(w: WriteRecord): void {
    if (w.resource === volumeExpansionRequests.resource) this.onRequest(w);
    else if (w.resource === resources.persistentVolumeClaims.resource) this.onClaim(w);
    else if (w.resource === resources.statefulSets.resource && w.verb !== 'delete') {
      const s = w.after as V1StatefulSet;
      this.statefulSets.push({ at: this.c.now(), name: s.metadata?.name ?? '', replicas: s.spec?.replicas ?? 1, start: s.spec?.ordinals?.start ?? 0 });
    } else if ((w.resource === volumeExpansionPolicies.resource || w.resource === clusterVolumeExpansionPolicies.resource) && w.verb === 'create') {
      const m = w.after.metadata;
      this.policyCreatedAt.set(m?.namespace ? `${m.namespace}/${m.name}` : (m?.name ?? ''), this.c.now());
    }
  }

  // --- requests ------------------------------------------------------------------------------

  private onRequest(w: WriteRecord): void {
    const r = w.after as VolumeExpansionRequest;
    const uid = r.metadata.uid as string;
    const now = this.c.now();
    if (w.verb === 'create') {
      if (this.c.isPvx(w.actor)) this.onPvxCreate(r);
      const claim = isPolicyRequest(r)
        ? this.c.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, r.metadata.namespace, r.spec.target.pvcName as string)
        : undefined;
      const claimWhenAsked = claim ? { uid: claim.metadata?.uid ?? '', size: sizeOf(claim) } : undefined;
      this.requests.set(uid, { obj: r, createdAt: now, createdBy: w.actor ?? '', ...(claimWhenAsked ? { claimWhenAsked } : {}) });
      return;
    }
    const rec = this.requests.get(uid);
    if (!rec) return;
    const before = rec.obj;
    rec.obj = r;
    if (w.verb === 'delete') {
      this.gone.add(uid);
      return;
    }
    const phase = r.status?.phase ?? '';
    if (terminal.has(phase) && rec.finishedAt === undefined) {
      rec.finishedAt = now;
      for (const raise of this.raises) if (raise.requestUID === uid && raise.settledAt === undefined) raise.settledAt = now;
    }
    if (this.c.isPvx(w.actor) && r.spec.target.statefulSetName && !before.status?.targets?.length && r.status?.targets?.length) this.checkPins(r, rec);
  }

  private touch(claimUID: string, at: number): void {
    this.activity.set(claimUID, [...(this.activity.get(claimUID) ?? []), at]);
  }

  /** The StatefulSet request that made this child (its controller owner), if it is one. */
  private parentOf(r: VolumeExpansionRequest): string | undefined {
    if (!r.metadata.labels?.[requestLabels.parent]) return undefined;
    return r.metadata.ownerReferences?.find((o) => o.controller && o.kind === 'VolumeExpansionRequest')?.uid;
  }

  /**
   * one-raise-per-breach, when it is asked: a policy creates a request for a claim only while no
   * other policy request for it is unfinished (a second one for the same breach would raise the
   * claim again, or be refused and hold back the next).
   */
  private onPolicyCreate(r: VolumeExpansionRequest): void {
    const claim = r.spec.target.pvcName;
    this.checkCooldown(r);
    const other = [...this.requests.values()].find(
      (o) =>
        o.obj.metadata.namespace === r.metadata.namespace &&
        o.obj.spec.target.pvcName === claim &&
        isPolicyRequest(o.obj) &&
        o.finishedAt === undefined &&
        !o.obj.spec.dryRun &&
        !this.gone.has(o.obj.metadata.uid as string),
    );
    if (other) {
      this.c.violate(
        'one-raise-per-breach',
        `${r.metadata.namespace}/${r.metadata.name}`,
        `a policy asked to grow ${claim} while ${other.obj.metadata.name} (${policyOf(other.obj)}, ${other.obj.status?.phase ?? 'no status yet'}) still asks for it`,
      );
    }
  }

  /** child-made-once: a child seen by its parent, or that raised its claim, is never made again. */
  private onPvxCreate(r: VolumeExpansionRequest): void {
    if (isPolicyRequest(r)) this.onPolicyCreate(r);
    const parentUID = this.parentOf(r);
    const claim = r.spec.target.pvcName;
    if (!parentUID || !claim) return;
    const parent = this.requests.get(parentUID)?.obj;
    for (const [uid, earlier] of this.requests) {
      if (this.parentOf(earlier.obj) !== parentUID || earlier.obj.spec.target.pvcName !== claim) continue;
      const seen = parent?.status?.targets?.some((t) => t.pvcName === claim && t.requestUID === uid);
      const raised = this.raises.some((x) => x.requestUID === uid);
      if (seen || raised) {
        this.c.violate(
          'child-made-once',
          `${r.metadata.namespace}/${r.metadata.name}`,
          `a child for ${claim} was made again, though ${earlier.obj.metadata.name} (uid ${uid}) ${seen ? 'was recorded by the parent' : 'had raised the claim'}`,
        );
      }
    }
  }

  /** pinned-as-asked: each pinned claim is the claim of that name, and its size what the spec asks of a capacity it had meanwhile. */
  private checkPins(r: VolumeExpansionRequest, rec: RequestRecord): void {
    for (const t of r.status?.targets ?? []) {
      const subject = `${r.metadata.namespace}/${r.metadata.name}`;
      if (!t.targetSize || !t.pvcUID) continue;
      const history = (this.capacities.get(t.pvcUID) ?? []).filter(
        (h, i, all) => h.at >= rec.createdAt || all[i + 1] === undefined || (all[i + 1]?.at ?? 0) > rec.createdAt,
      );
      const pinned = quantityBytes(t.targetSize);
      if (!history.some((h) => askedBytes(r.spec, h.capacity) === pinned)) {
        this.c.violate(
          'pinned-as-asked',
          subject,
          `pinned ${t.pvcName} at ${t.targetSize}, but its spec ${JSON.stringify({ size: r.spec.size, increment: r.spec.increment, roundUpTo: r.spec.roundUpTo })} asks ${history.map((h) => `${gib(askedBytes(r.spec, h.capacity) ?? 0n)} of ${gib(h.capacity)}`).join(' or ') || 'nothing it can read'}`,
        );
      }
    }
  }

  // --- claims --------------------------------------------------------------------------------

  private onClaim(w: WriteRecord): void {
    const after = w.after as V1PersistentVolumeClaim;
    const uid = after.metadata?.uid ?? '';
    const now = this.c.now();
    if (w.verb === 'delete') return;
    const capacity = capacityOf(after);
    const history = this.capacities.get(uid) ?? [];
    if (history[history.length - 1]?.capacity !== capacity) history.push({ at: now, capacity });
    this.capacities.set(uid, history);
    // A raise settles when the claim has its size — or, lowered since to a size it has (recovery
    // after a target out of reach, KEP-1790, or by hand), when the claim is at rest at that size:
    // the raise was given up, and nothing of it is in flight any more.
    const asked = sizeOf(after);
    for (const raise of this.raises) {
      if (raise.claimUID === uid && raise.settledAt === undefined && (capacity >= raise.size || (asked < raise.size && capacity >= asked)))
        raise.settledAt = now;
    }
    if (w.verb !== 'update' || !this.c.isPvx(w.actor)) return;
    const before = w.before as V1PersistentVolumeClaim;
    const from = sizeOf(before);
    const to = sizeOf(after);
    if (to > from) this.onRaise(before, after, to, now);
    else if (to < from) this.onLowering(before, after, to);
    if (to !== from || before.spec?.volumeAttributesClassName !== after.spec?.volumeAttributesClassName) this.touch(uid, now);
  }

  /**
   * A lowering by pvx is recovery (KEP-1790), never anything else: its request asked for it
   * (recovery: Auto), recorded it just before (Recovering/Lowering), and the size stays above the
   * claim's capacity, below what the request asked.
   */
  private onLowering(before: V1PersistentVolumeClaim, after: V1PersistentVolumeClaim, size: bigint): void {
    const claim = `${after.metadata?.namespace}/${after.metadata?.name}`;
    const q = this.requests.get(after.metadata?.annotations?.[pvcAnnotations.requestUID] ?? '')?.obj;
    const recovering = q?.spec.recovery === 'Auto' && q.status?.reason === 'Lowering';
    if (!recovering || size <= capacityOf(before)) {
      this.c.violate(
        'size-as-asked',
        q ? `${q.metadata.namespace}/${q.metadata.name}` : claim,
        `lowered ${claim} ${gib(sizeOf(before))} → ${gib(size)} (capacity ${gib(capacityOf(before))}) ${recovering ? 'to its capacity or below' : `though its request ${q ? `is ${q.status?.phase}/${q.status?.reason} with recovery ${q.spec.recovery ?? 'None'}` : 'is unknown'}`}`,
      );
    }
    // What is lowered is a size pvx set on the claim (its raise, or an earlier lowering), never one
    // someone else asked for since (seed 10285: a person's 62Gi lowered to 60Gi).
    const uid = after.metadata?.uid ?? '';
    const set = this.pvxSet.get(uid);
    if (set !== undefined && sizeOf(before) !== set) {
      this.c.violate(
        'size-as-asked',
        q ? `${q.metadata.namespace}/${q.metadata.name}` : claim,
        `lowered ${claim} from ${gib(sizeOf(before))}, which someone else asked for: pvx last set it to ${gib(set)}`,
      );
    }
    this.pvxSet.set(uid, size);
  }

  private onRaise(before: V1PersistentVolumeClaim, after: V1PersistentVolumeClaim, size: bigint, now: number): void {
    const claim = `${after.metadata?.namespace}/${after.metadata?.name}`;
    const claimUID = after.metadata?.uid ?? '';
    const requestUID = after.metadata?.annotations?.[pvcAnnotations.requestUID] ?? '';
    const rec = this.requests.get(requestUID);
    if (!rec) {
      this.c.violate('size-as-asked', claim, `raised ${gib(sizeOf(before))} → ${gib(size)} for request uid ${requestUID || '(none)'}, which never existed`);
      return;
    }
    const q = rec.obj;
    const subject = `${q.metadata.namespace}/${q.metadata.name}`;
    // The plan recorded just before the patch (status.acceptedPlan), then the spec's own ask.
    const plan = q.status?.acceptedPlan;
    if (!plan || plan.pvcUID !== claimUID || !plan.targetSize || quantityBytes(plan.targetSize) !== size) {
      this.c.violate(
        'size-as-asked',
        subject,
        `raised ${claim} (uid ${claimUID}) to ${gib(size)} without an accepted plan for it (recorded: ${JSON.stringify(plan ?? null)})`,
      );
    }
    const asked = askedBytes(q.spec, capacityOf(before));
    if (asked !== size) {
      this.c.violate(
        'size-as-asked',
        subject,
        `raised ${claim} from capacity ${gib(capacityOf(before))} to ${gib(size)}, but its spec ${JSON.stringify({ size: q.spec.size, increment: q.spec.increment, roundUpTo: q.spec.roundUpTo })} asks ${asked === undefined ? 'no size' : gib(asked)}`,
      );
    }
    const parentUID = this.parentOf(q);
    // The ask: a single-claim request (whatever claim of its name it finds), or a StatefulSet
    // request's ask for one of its claims (whichever of its children makes it).
    const ask = parentUID ? `${parentUID}/${after.metadata?.name}` : requestUID;
    const earlier = this.raises.filter((r) => r.claimUID === claimUID);
    const again = this.raises.find((r) => r.ask === ask);
    if (again) {
      const who = again.requestUID === requestUID ? 'it' : 'another child of its StatefulSet request';
      this.c.violate(
        'one-raise-per-ask',
        subject,
        `raised ${claim} (uid ${claimUID}) to ${gib(size)}, though ${who} raised ${again.claim} (uid ${again.claimUID}) to ${gib(again.size)} already`,
      );
    }
    const policy = policyOf(q);
    if (policy) this.checkPolicyRaise(q, rec, claim, earlier, policy, before);
    if (this.staleAsks.has(requestUID)) {
      this.c.violate('cooldown-holds', subject, `raised ${claim} on a measurement from before its last expansion, within its policy's cooldown`);
    }
    if (sizeOf(before) > capacityOf(before)) {
      this.c.violate(
        'no-raise-over-a-resize',
        subject,
        `raised ${claim} to ${gib(size)} while it was being resized to ${gib(sizeOf(before))} (capacity ${gib(capacityOf(before))}): that change is overwritten`,
      );
    }
    if (parentUID) this.checkTargeted(parentUID, subject, after, now);
    this.checkGuardrails(subject, claim, before, after, size);
    this.raises.push({ claimUID, claim, size, requestUID, ask, at: now, ...(capacityOf(after) >= size ? { settledAt: now } : {}) });
    this.pvxSet.set(claimUID, size);
  }

  /**
   * one-raise-per-breach, for a raise a policy asked for: the claim's last raise had settled when
   * the policy asked, and the claim raised is the one the policy asked about, as it was then — one
   * grown by anyone since (a person's request, kubectl) was answered already, and one re-created
   * was never measured.
   */
  private checkPolicyRaise(
    q: VolumeExpansionRequest,
    rec: RequestRecord,
    claim: string,
    earlier: Raise[],
    policyName: string,
    before: V1PersistentVolumeClaim,
  ): void {
    const asked = rec.claimWhenAsked;
    const uid = before.metadata?.uid ?? '';
    if (asked && (asked.uid !== uid || asked.size !== sizeOf(before))) {
      this.c.violate(
        'one-raise-per-breach',
        `${q.metadata.namespace}/${q.metadata.name}`,
        `policy ${policyName} raised ${claim} (uid ${uid}) from ${gib(sizeOf(before))}, but asked when it was ${asked.uid === uid ? '' : `another claim (uid ${asked.uid}) `}at ${gib(asked.size)}: a decision on a claim that has changed since`,
      );
    }
    const last = earlier[earlier.length - 1];
    if (last && (last.settledAt === undefined || last.settledAt > rec.createdAt)) {
      this.c.violate(
        'one-raise-per-breach',
        `${q.metadata.namespace}/${q.metadata.name}`,
        `policy ${policyName} asked again for ${claim} while its raise to ${gib(last.size)} (by ${this.requests.get(last.requestUID)?.obj.metadata.name ?? last.requestUID}) was still in flight`,
      );
    }
  }

  /**
   * cooldown-holds, when a policy asks: not within its cooldown of pvx's last change of the
   * claim's size or class, unless the volume is about to fill. (pvx holds it longer: from any
   * request for the claim, a refused one too, while the request exists.)
   */
  private checkCooldown(q: VolumeExpansionRequest): void {
    const policyName = policyOf(q) as string;
    const cluster = Boolean(q.metadata.labels?.[requestLabels.clusterPolicy]);
    const p = cluster
      ? this.c.api.get<ClusterVolumeExpansionPolicy>(clusterVolumeExpansionPolicies, undefined, policyName)
      : this.c.api.get<VolumeExpansionPolicy>(volumeExpansionPolicies, q.metadata.namespace, policyName);
    const pvc = this.c.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, q.metadata.namespace, q.spec.target.pvcName ?? '');
    const claimUID = pvc?.metadata?.uid;
    if (!p || !claimUID) return;
    const now = this.c.now();
    const cooldown = p.spec.cooldown ? durationMs(p.spec.cooldown) : defaultCooldownMs;
    const previous = (this.activity.get(claimUID) ?? []).at(-1);
    if (previous === undefined || now - previous >= cooldown - this.c.wallClockDrift() - 2000) return;
    // Asked on a measurement from before that expansion (the policy's pass and another request's
    // patch crossed, seed 202706): the request it made carries the capacity measured, and pvx
    // ends it Superseded — it must never raise the claim (checked in onRaise).
    if (measuredBefore(q, pvc)) {
      this.staleAsks.add(q.metadata.uid as string);
      return;
    }
    // The policy's emergency path: a volume about to fill is not held back by the cooldown.
    const rate = this.c.fillRate(claimUID) ?? 0;
    const free = Number(capacityOf(pvc)) - (this.c.used(claimUID) ?? 0);
    if (rate > 0 && (free / rate) * 1000 < aboutToFillMs) return;
    this.c.violate(
      'cooldown-holds',
      `${q.metadata.namespace}/${q.metadata.name}`,
      `policy ${policyName} asked for ${q.spec.target.pvcName} ${Math.round((now - previous) / 1000)} s after pvx's last expansion of it, within its cooldown ${p.spec.cooldown ?? '30m'}, and the volume is not about to fill`,
    );
  }

  /** raised-claim-is-targeted: a child raises a claim of a live replica of its parent's StatefulSet (at some moment since the parent was created). */
  private checkTargeted(parentUID: string, subject: string, after: V1PersistentVolumeClaim, now: number): void {
    const parent = this.requests.get(parentUID);
    const target = parent?.obj.spec.target;
    if (!parent || !target?.statefulSetName || !target.volumeClaimTemplate) return;
    const versions = this.statefulSets.filter(
      (v, i, all) =>
        v.name === target.statefulSetName &&
        (v.at >= parent.createdAt || !all.slice(i + 1).some((n) => n.name === v.name && n.at <= parent.createdAt)) &&
        v.at <= now,
    );
    const live = new Set(versions.flatMap((v) => liveClaimNames(target.volumeClaimTemplate as string, v.name, v.replicas, v.start)));
    if (!live.has(after.metadata?.name ?? '')) {
      this.c.violate(
        'raised-claim-is-targeted',
        subject,
        `raised ${after.metadata?.name}, which is not the claim of a live replica of StatefulSet ${target.statefulSetName} (live: ${[...live].join(', ') || 'none'})`,
      );
    }
    // The claim its parent validated and pinned, not another created since under its name.
    const pinned = parent.obj.status?.targets?.find((t) => t.pvcName === after.metadata?.name)?.pvcUID;
    if (pinned && pinned !== after.metadata?.uid) {
      this.c.violate(
        'raised-claim-is-targeted',
        subject,
        `raised ${after.metadata?.name} uid ${after.metadata?.uid}, but its StatefulSet request validated and pinned uid ${pinned}`,
      );
    }
  }

  /** within-guardrails: every cluster guardrail that applies to the claim's namespace (all that select by label, while the namespace is unknown). */
  private checkGuardrails(subject: string, claim: string, before: V1PersistentVolumeClaim, after: V1PersistentVolumeClaim, size: bigint): void {
    const ns = this.c.api.get<V1Namespace>(namespaces, undefined, after.metadata?.namespace ?? '');
    for (const p of this.c.api.peek<ClusterVolumeExpansionPolicy>(clusterVolumeExpansionPolicies)) {
      const g = p.spec.guardrails;
      if (!g) continue;
      const selector = Object.entries(p.spec.namespaceSelector?.matchLabels ?? {});
      const applies = selector.length === 0 || !ns || selector.every(([k, v]) => ns.metadata?.labels?.[k] === v);
      if (!applies) continue;
      const cls = after.spec?.storageClassName ?? '';
      const step = size - capacityOf(before);
      const broken = [
        g.maxSize && size > quantityBytes(g.maxSize) ? `above maxSize ${g.maxSize}` : '',
        g.maxStep && step > quantityBytes(g.maxStep) ? `a step of ${gib(step)}, above maxStep ${g.maxStep}` : '',
        g.allowedStorageClasses && !g.allowedStorageClasses.includes(cls) ? `class ${cls} not among ${g.allowedStorageClasses.join(', ')}` : '',
      ].filter(Boolean);
      if (broken.length > 0)
        this.c.violate(
          'within-guardrails',
          subject,
          `raised ${claim} to ${gib(size)}: ${broken.join('; ')} (ClusterVolumeExpansionPolicy ${p.metadata.name}${ns ? '' : `; namespace ${after.metadata?.namespace} not created yet`})`,
        );
    }
  }

  // --- after the quiet period ----------------------------------------------------------------

  /**
   * policies-evaluated: every policy that lived through the quiet period says whether pvx evaluates
   * it (Ready), True exactly when the checker can read its windows — one policy pvx cannot read
   * stops no other.
   */
  checkPoliciesEvaluated(since: number): void {
    const policies = [
      ...this.c.api
        .peek<VolumeExpansionPolicy>(volumeExpansionPolicies)
        .map((p) => ({ id: `${p.metadata.namespace}/${p.metadata.name}`, p, kind: 'VolumeExpansionPolicy' })),
      ...this.c.api
        .peek<ClusterVolumeExpansionPolicy>(clusterVolumeExpansionPolicies)
        .filter((p) => p.spec.triggers)
        .map((p) => ({ id: p.metadata.name as string, p, kind: 'ClusterVolumeExpansionPolicy' })),
    ];
    for (const { id, p, kind } of policies) {
      if ((this.policyCreatedAt.get(id) ?? 0) > since) continue;
      const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
      const readable = windowsReadable(p.spec.windows);
      if (!ready || (ready.status === 'True') !== readable) {
        this.c.violate(
          'policies-evaluated',
          `${kind} ${id}`,
          `after the quiet period its Ready condition is ${ready ? `${ready.status} (${ready.reason}: ${ready.message})` : 'missing'}, but its windows are ${readable ? 'readable' : 'not readable'}`,
        );
      }
    }
  }
}
