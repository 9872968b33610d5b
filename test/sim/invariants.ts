// What must hold whatever the interleaving, checked from the API server's own record (the fake's
// write log, with who wrote and when), never from pvx's memory. Each check names itself; a
// violation is reported once per subject, with the trace to explain it.
//
// Adding an invariant: a method called from onWrite (per write), checkStep (after every step) or
// checkSettled (after the quiet period), that calls this.violate(rule, subject, message).
import type { V1Lease, V1Namespace, V1PersistentVolumeClaim, V1Pod, V1StorageClass } from '@kubernetes/client-node';
import type { ClusterVolumeExpansionPolicy } from '../../src/crds/cluster-volume-expansion-policy.ts';
import { pvcAnnotations, requestAnnotations, requestLabels } from '../../src/crds/keys.ts';
import type { VolumeExpansionPolicy } from '../../src/crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import type { FakeKubeClient, WriteRecord } from '../../src/k8s/testing/fake-client.ts';
import { formatBytes } from '../../src/k8s/quantity.ts';
import { clusterVolumeExpansionPolicies, namespaces, resources, volumeExpansionPolicies, volumeExpansionRequests } from '../../src/k8s/resources.ts';
import { embeddedDriverProfiles } from '../../src/policies/budget/drivers.testing.ts';
import type { ModificationBudget } from '../../src/policies/budget/drivers.ts';
import { parseDuration } from '../../src/policies/shared/duration.ts';
import { readLedger } from '../../src/policies/budget/ledger.ts';
import type { Trace } from './trace.ts';
import { ClaimInvariants } from './claim-invariants.ts';
import { bytes } from './world.ts';
import { planToken } from '../../src/policies/request/plan.ts';

export interface Violation {
  rule: string;
  subject: string;
  message: string;
  /** Monotonic simulated ms. */
  at: number;
}

/** The leader election's timing (src/operator/runtime/leader.ts defaults, which buildManager keeps). */
export const renewDeadlineMs = 10_000;
/** A request's deadline may be overrun by this much before it is a violation (tracking runs every 30 s; backoffs and restarts). */
const deadlineSlackMs = 2 * 60_000;
/**
 * Reconciles of one request in ten simulated minutes above this are a hot loop: tracking every
 * 30 s is 20, a cache behind pvx's own write is looked at every 5 s (120); seen at most 58 over
 * the CI seeds.
 */
export const maxRequestReconciles = 120;
/**
 * Reconciles of one key of any other controller in ten simulated minutes above this are a hot
 * loop: the policy pass runs at most every 5 s on its own (120), more only on policy changes (seen
 * at most 71); the claim ledger and the audit far less.
 */
export const maxOtherReconciles = 240;
/** The window the bounds above count in: a seed's run lasts 5 to 15 simulated minutes. */
const reconcileWindowMs = 600_000;
/**
 * Reconciles (by every process, of every key) at one simulated instant above this are a loop that
 * never lets time pass: virtual time moves only once every timer due now has run, so such a loop
 * would hold the run at that instant for ever, each turn's writes piling up in the API server's
 * history until the heap is full. A busy instant (every informer's first sync) is tens.
 */
export const maxReconcilesAtOneInstant = 5000;

/** Reasons of the status written before a claim patch, with the request's resourceVersion as precondition. */
const freshnessChecks = new Set(['Accepted', 'Lowering']);
const terminal = new Set(['Completed', 'Failed', 'Rejected']);
/** The claim asks for this size, more than it has: a raise to it is under way. */
const raiseUnderWay = (pvc: V1PersistentVolumeClaim, size: bigint): boolean => sizeOf(pvc) === size && size > bytes(pvc.status?.capacity?.storage ?? '0');
const sizeOf = (pvc: { spec?: { resources?: { requests?: { storage?: string } } } } | undefined): bigint =>
  bytes(pvc?.spec?.resources?.requests?.storage ?? '0');

interface Raise {
  requestUID: string;
  requestName: string;
  claimUID: string;
  claim: string;
  size: bigint;
  at: number;
}

export class Invariants {
  readonly violations: Violation[] = [];
  private readonly reported = new Set<string>();
  private readonly raises: Raise[] = [];
  private readonly classChangesByRequest = new Map<string, number>();
  /** Every request as last written, by UID (a deleted one as it was deleted). */
  private readonly lastSeen = new Map<string, VolumeExpansionRequest>();
  /** Every VolumeAttributesClass each claim (by UID) ever had applied (status.currentVolumeAttributesClassName). */
  private readonly appliedClasses = new Map<string, Set<string>>();
  private readonly finishedAt = new Map<string, number>();
  /** The largest capacity each claim (by UID) ever reported: Completed may be written from a cache a little behind. */
  private readonly grownTo = new Map<string, bigint>();
  /** Lease history: who held it from when, and each identity's renewals (monotonic ms). */
  private readonly holders: { at: number; holder: string }[] = [];
  private readonly renewals = new Map<string, number[]>();
  private readonly reconciles = new Map<string, number>();
  /** pvx identities: writes by anyone else (the user, the actors) are not pvx's. */
  readonly pvxIdentities = new Set<string>();
  /** Bytes per second a claim (by UID) fills at in the usage model; 0 for one whose usage only spikes. */
  fillRate?: (claimUID: string) => number | undefined;
  /** Largest backwards-or-forwards wall-clock step so far (deadlines are on the wall clock). */
  wallClockDrift = 0;

  private readonly api: FakeKubeClient;
  private readonly trace: Trace;
  private readonly now: () => number;

  /** The invariants about claims (claim-invariants.ts). */
  private readonly claims: ClaimInvariants;
  /** Bytes the applications wrote to a claim (by UID), in the usage model. */
  usedBytes?: (claimUID: string) => number | undefined;

  constructor(api: FakeKubeClient, trace: Trace, now: () => number) {
    this.api = api;
    this.trace = trace;
    this.now = now;
    this.claims = new ClaimInvariants({
      api,
      now,
      violate: (rule, subject, message) => this.violate(rule, subject, message),
      isPvx: (actor) => actor !== undefined && this.pvxIdentities.has(actor),
      fillRate: (uid) => this.fillRate?.(uid),
      used: (uid) => this.usedBytes?.(uid),
      wallClockDrift: () => this.wallClockDrift,
    });
  }

  private violate(rule: string, subject: string, message: string): void {
    const id = `${rule} ${subject}`;
    if (this.reported.has(id)) return;
    this.reported.add(id);
    this.violations.push({ rule, subject, message, at: this.now() });
    this.trace.add('violation', `${rule} ${subject}: ${message}`);
  }

  // --- per write -----------------------------------------------------------------------------

  onWrite(w: WriteRecord): void {
    this.claims.onWrite(w);
    if (w.resource === volumeExpansionRequests.resource) this.lastSeen.set(w.after.metadata?.uid ?? '', w.after as VolumeExpansionRequest);
    if (w.resource === 'leases') this.onLeaseWrite(w);
    else if (w.resource === resources.persistentVolumeClaims.resource) {
      const pvc = w.after as V1PersistentVolumeClaim;
      const capacity = bytes(pvc.status?.capacity?.storage ?? '0');
      const uid = pvc.metadata?.uid ?? '';
      if (capacity > (this.grownTo.get(uid) ?? -1n)) this.grownTo.set(uid, capacity);
      const applied = pvc.status?.currentVolumeAttributesClassName;
      if (applied) this.appliedClasses.set(uid, (this.appliedClasses.get(uid) ?? new Set()).add(applied));
      if (w.verb === 'update') this.onClaimUpdate(w);
    } else if (w.resource === volumeExpansionRequests.resource && w.verb === 'update') this.onRequestUpdate(w);
    else if (w.resource === volumeExpansionRequests.resource && w.verb === 'create' && w.actor && this.pvxIdentities.has(w.actor)) {
      const r = w.after as VolumeExpansionRequest;
      const trigger = r.metadata.annotations?.[requestAnnotations.trigger];
      this.trace.add(
        'write',
        `${w.actor} creates ${r.metadata.namespace}/${r.metadata.name} ${JSON.stringify(r.spec)}${trigger ? ` (trigger ${trigger})` : ''}`,
      );
      this.onPolicyRequest(r, trigger);
    }
  }

  /** A policy's forecast never grows a claim that does not fill: its usage only ever spikes. */
  private onPolicyRequest(r: VolumeExpansionRequest, trigger: string | undefined): void {
    if (trigger !== 'Forecast' || !r.spec.target.pvcName) return;
    // The claim the policy measured: the one its request names by UID (seeds 5227, 7072, 56383: a
    // claim created again under the name, never filling, while the decision was about the old one
    // — that request ends PVCReplaced and grows nothing), else the claim of that name now.
    const claim = this.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, r.metadata.namespace, r.spec.target.pvcName);
    const uid = r.metadata.annotations?.[requestAnnotations.claimUID] ?? claim?.metadata?.uid;
    if (uid && this.fillRate?.(uid) === 0) {
      this.violate(
        'no-forecast-on-a-spike',
        `${r.metadata.namespace}/${r.metadata.name}`,
        `created on a forecast for ${r.spec.target.pvcName}, which never fills (its usage only spikes)`,
      );
    }
  }

  /**
   * How much of [from, to] (monotonic ms) no pvx process led: a pvx identity leads from each of
   * its renewals for renewDeadlineMs, unless the lease changed hands before.
   */
  private leaderlessMs(from: number, to: number): number {
    const led: [number, number][] = [];
    for (const [identity, times] of this.renewals) {
      if (!this.pvxIdentities.has(identity)) continue;
      for (const t of times) {
        const taken = this.holders.find((h) => h.at > t && h.holder !== identity)?.at ?? Infinity;
        led.push([t, Math.min(t + renewDeadlineMs, taken)]);
      }
    }
    led.sort((a, b) => a[0] - b[0]);
    let covered = 0;
    let reach = from;
    for (const [start, end] of led) {
      const s = Math.max(start, reach);
      const e = Math.min(end, to);
      if (e > s) covered += e - s;
      reach = Math.max(reach, Math.min(end, to));
    }
    return Math.max(0, to - from - covered);
  }

  private onLeaseWrite(w: WriteRecord): void {
    const holder = (w.after as V1Lease).spec?.holderIdentity ?? '';
    const last = this.holders[this.holders.length - 1];
    if (last?.holder !== holder) {
      this.holders.push({ at: this.now(), holder });
      this.trace.add('process', `lease holder ${last?.holder || '(none)'} → ${holder || '(none)'} (by ${w.actor})`);
    }
    if (w.actor && holder === w.actor) {
      const list = this.renewals.get(w.actor) ?? [];
      list.push(this.now());
      this.renewals.set(w.actor, list);
    }
  }

  /**
   * pvx's patches of a claim of the budgeted driver that spend its budget — every raise or class
   * change, or the class changes alone under a budget of performance changes — never more than
   * the budget allows in its window. (pvx's own alone: a change made elsewhere that pvx could not
   * have seen in time is no fault of its.)
   */
  private onSpend(claimNow: V1PersistentVolumeClaim, change: { performance: boolean; size: boolean }, subject: string, claim: string): void {
    const { driver, budget } = this.budget ?? {};
    if (!budget || (!change.size && !change.performance)) return;
    if (budget.counts === 'performance' && !change.performance) return;
    const sc = this.api.get<V1StorageClass>(resources.storageClasses, undefined, claimNow.spec?.storageClassName ?? '');
    if (sc?.provisioner !== driver) return;
    const uid = claimNow.metadata?.uid ?? '';
    const at = this.now();
    const spent = [...(this.spends.get(uid) ?? []), at].filter((t) => t > at - budget.windowMs);
    this.spends.set(uid, spent);
    if (spent.length > budget.count)
      this.violate(
        'within-budget',
        subject,
        `pvx changed ${claim} ${spent.length} times within ${budget.windowMs / 3_600_000} h${budget.counts === 'performance' ? ' (its VolumeAttributesClass)' : ''}; its driver allows ${budget.count}`,
      );
  }

  private onClaimUpdate(w: WriteRecord): void {
    const before = w.before as V1PersistentVolumeClaim;
    const after = w.after as V1PersistentVolumeClaim;
    const from = sizeOf(before);
    const to = sizeOf(after);
    const ledger = after.metadata?.annotations?.[pvcAnnotations.modifications];
    if (ledger !== before.metadata?.annotations?.[pvcAnnotations.modifications])
      this.trace.add('write', `${w.actor} writes ${after.metadata?.name}'s ledger ${ledger ?? '(none)'}`);
    const outside = this.outsideRaises.get(after.metadata?.uid ?? '');
    if (outside && w.actor && this.pvxIdentities.has(w.actor) && raiseUnderWay(before, outside.size)) outside.shownToPvx = true;
    const classFrom = before.spec?.volumeAttributesClassName;
    const classTo = after.spec?.volumeAttributesClassName;
    if (from === to && classFrom === classTo) return;
    const claim = `${after.metadata?.namespace}/${after.metadata?.name}`;
    if (from !== to) this.trace.add('write', `${w.actor} sets ${claim} (uid ${after.metadata?.uid}) request ${formatBytes(from)} → ${formatBytes(to)}`);
    if (classFrom !== classTo)
      this.trace.add(
        'write',
        `${w.actor} sets ${claim} (uid ${after.metadata?.uid}) volumeAttributesClassName ${classFrom ?? '(none)'} → ${classTo ?? '(none)'}`,
      );
    if (w.actor === 'user' && to > from)
      this.outsideRaises.set(after.metadata?.uid ?? '', { claim, size: to, hadLedger: readLedger(before) !== undefined, shownToPvx: false });
    if (!w.actor || !this.pvxIdentities.has(w.actor)) return;
    const requestUID = after.metadata?.annotations?.[pvcAnnotations.requestUID] ?? '';
    const requestName = after.metadata?.annotations?.[pvcAnnotations.request] ?? '?';
    const subject = `${after.metadata?.namespace}/${requestName}`;
    if (this.finishedAt.has(requestUID)) {
      this.violate('patch-after-finish', subject, `${w.actor} changed ${claim} from ${formatBytes(from)} to ${formatBytes(to)} after the request had finished`);
    }
    if (to < from) return; // recovery lowering (KEP-1790)
    // The request as last written, even if deleted since: a deletion racing the patch does not unmake the ask.
    const req = this.lastSeen.get(requestUID);
    this.onSpend(after, { performance: classFrom !== classTo, size: to > from }, subject, claim);
    if (classFrom !== classTo) this.onClassChange(req, requestUID, subject, claim, before, after);
    if (to > from) this.onRaise(req, requestUID, requestName, subject, claim, before, after);
    if (req && (req.metadata.annotations?.[requestAnnotations.approval] === 'required' || this.approvalRequiredIn(after.metadata?.namespace ?? ''))) {
      // The patch must be exactly the plan a person approved: this claim, from its capacity (and
      // class), to this size (and class).
      const approved = req.metadata.annotations?.[requestAnnotations.approved] ?? '';
      const capacity = before.status?.capacity?.storage ?? '0';
      const plan = planToken({
        pvcUID: after.metadata?.uid ?? '',
        fromCapacity: formatBytes(bytes(capacity)),
        ...(to > from ? { targetSize: formatBytes(to) } : {}),
        ...(before.status?.currentVolumeAttributesClassName ? { fromVolumeAttributesClassName: before.status.currentVolumeAttributesClassName } : {}),
        ...(req.spec.volumeAttributesClassName ? { targetVolumeAttributesClassName: req.spec.volumeAttributesClassName } : {}),
      });
      if (plan !== approved)
        this.violate(
          'only-the-approved-plan',
          subject,
          `${claim} changed ${capacity} → ${formatBytes(to)}, class ${classFrom ?? '(none)'} → ${classTo ?? '(none)'} (uid ${after.metadata?.uid}, plan ${plan}), but the approval says "${approved}"`,
        );
    }
  }

  /**
   * A cluster guardrail requires an approval of every expansion in the namespace (one that selects
   * by label applies while the namespace is unknown: pvx then waits, as for every guardrail).
   */
  private approvalRequiredIn(namespace: string): boolean {
    const ns = this.api.get<V1Namespace>(namespaces, undefined, namespace);
    return this.api.peek<ClusterVolumeExpansionPolicy>(clusterVolumeExpansionPolicies).some((p) => {
      if (!p.spec.guardrails?.requireApproval) return false;
      const selector = Object.entries(p.spec.namespaceSelector?.matchLabels ?? {});
      return selector.length === 0 || !ns || selector.every(([k, v]) => ns.metadata?.labels?.[k] === v);
    });
  }

  /** A size raise by pvx: within every maximum, with the class the request sets in the same write (once per ask: claim-invariants.ts). */
  private onRaise(
    req: VolumeExpansionRequest | undefined,
    requestUID: string,
    requestName: string,
    subject: string,
    claim: string,
    before: V1PersistentVolumeClaim,
    after: V1PersistentVolumeClaim,
  ): void {
    const to = sizeOf(after);
    this.raises.push({ requestUID, requestName, claimUID: after.metadata?.uid ?? '', claim, size: to, at: this.now() });

    const sc = this.api.get<V1StorageClass>(resources.storageClasses, undefined, after.spec?.storageClassName ?? '');
    const max = sc ? embeddedDriverProfiles(sc.provisioner).maxBytes(sc.parameters ?? {}) : undefined;
    // A class's volume type may raise the limit (the sim's classes set no type).
    if (max !== undefined && to > max)
      this.violate(
        'above-class-maximum',
        subject,
        `${claim} raised to ${formatBytes(to)}, above its class ${sc?.metadata?.name}'s maximum ${formatBytes(max)} known to pvx`,
      );

    const policyName = req?.metadata.labels?.[requestLabels.policy];
    const policy = policyName ? this.api.get<VolumeExpansionPolicy>(volumeExpansionPolicies, req?.metadata.namespace, policyName) : undefined;
    if (policy?.spec.maxSize && to > bytes(policy.spec.maxSize)) {
      this.violate('above-policy-maximum', subject, `${claim} raised to ${formatBytes(to)} for policy ${policyName}, whose maxSize is ${policy.spec.maxSize}`);
    }
    const wanted = req?.spec.volumeAttributesClassName;
    if (wanted && before.spec?.volumeAttributesClassName !== wanted && after.spec?.volumeAttributesClassName !== wanted) {
      this.violate(
        'size-and-class-in-one-patch',
        subject,
        `${claim} was raised to ${formatBytes(to)} without the VolumeAttributesClass ${wanted} the request sets in the same write`,
      );
    }
  }

  /** A class change by pvx: only to the class its request names, once per request, with the request's size in the same write. */
  private onClassChange(
    req: VolumeExpansionRequest | undefined,
    requestUID: string,
    subject: string,
    claim: string,
    before: V1PersistentVolumeClaim,
    after: V1PersistentVolumeClaim,
  ): void {
    const to = after.spec?.volumeAttributesClassName;
    if (!req || req.spec.volumeAttributesClassName !== to) {
      this.violate(
        'class-as-requested',
        subject,
        `${claim} set to VolumeAttributesClass ${to ?? '(none)'}, but its request ${req ? `names ${req.spec.volumeAttributesClassName ?? 'none'}` : 'is gone'}`,
      );
    }
    const n = (this.classChangesByRequest.get(requestUID) ?? 0) + 1;
    this.classChangesByRequest.set(requestUID, n);
    if (n > 1) this.violate('one-class-change-per-request', subject, `${claim}'s VolumeAttributesClass was set ${n} times for one request (now to ${to})`);
    const sized = req?.spec.size !== undefined || req?.spec.increment !== undefined;
    if (sized && sizeOf(after) <= sizeOf(before)) {
      this.violate(
        'size-and-class-in-one-patch',
        subject,
        `${claim} was set to VolumeAttributesClass ${to} without the size its request asks for in the same write`,
      );
    }
  }

  private onRequestUpdate(w: WriteRecord): void {
    const before = w.before as VolumeExpansionRequest;
    const after = w.after as VolumeExpansionRequest;
    const s = after.status ?? {};
    const subject = `${after.metadata.namespace}/${after.metadata.name}`;
    if (s.phase !== before.status?.phase || s.reason !== before.status?.reason) {
      this.trace.add('phase', `${subject} ${before.status?.phase ?? '-'} → ${s.phase ?? '-'} (${s.reason ?? ''}) by ${w.actor}`);
    }
    const uid = after.metadata.uid as string;
    if (s.phase && terminal.has(s.phase) && !this.finishedAt.has(uid)) {
      this.finishedAt.set(uid, this.now());
      if (s.phase === 'Completed' && !after.spec.dryRun && s.targetSize && after.spec.target.pvcName) {
        const grown = this.grownTo.get(s.pvcUID ?? '');
        if (grown === undefined || grown < bytes(s.targetSize)) {
          this.violate(
            'completed-means-grown',
            subject,
            `Completed with target ${s.targetSize}, but claim ${after.spec.target.pvcName} uid ${s.pvcUID ?? '(none recorded)'} never had more than ${grown === undefined ? 'no' : formatBytes(grown)} capacity`,
          );
        }
      }
      const wanted = after.spec.volumeAttributesClassName;
      if (s.phase === 'Completed' && !after.spec.dryRun && wanted && after.spec.target.pvcName && !this.appliedClasses.get(s.pvcUID ?? '')?.has(wanted)) {
        this.violate(
          'completed-means-applied',
          subject,
          `Completed with VolumeAttributesClass ${wanted}, but claim ${after.spec.target.pvcName} uid ${s.pvcUID ?? '(none recorded)'} never had it applied`,
        );
      }
    }
    if (before.status?.phase && terminal.has(before.status.phase) && s.phase !== before.status.phase) {
      this.violate('terminal-is-final', subject, `left ${before.status.phase} for ${s.phase} (by ${w.actor})`);
    }
  }

  /** A pvx write reached the server: the writer must have held the lease, renewed within the renew deadline, when it sent it. */
  /** Objects (`namespace/name`) whose last write's answer was lost. */
  /** Per object, how many of pvx's writes of it had their answer lost: each may be made again once (seed 23107: two lost answers of one policy's status, then two writes of the same content). */
  private readonly answersLost = new Map<string, number>();

  onAnswerLost(what: string): void {
    this.answersLost.set(what, (this.answersLost.get(what) ?? 0) + 1);
  }

  onWriteLanded(identity: string, method: string, what: string, issuedAt: number): void {
    const holder = [...this.holders].reverse().find((h) => h.at <= issuedAt)?.holder;
    const renewed = [...(this.renewals.get(identity) ?? [])].reverse().find((t) => t <= issuedAt);
    if (holder === identity && renewed !== undefined && issuedAt - renewed < renewDeadlineMs) return;
    this.violate(
      'only-the-leader-writes',
      `${identity} ${method} ${what}`,
      `sent at ${(issuedAt / 1000).toFixed(3)} s while the lease was held by ${holder || '(none)'}${renewed === undefined ? '' : `, ${identity}'s last renewal ${((issuedAt - renewed) / 1000).toFixed(3)} s before`}`,
    );
  }

  /** True once the run is stuck at one instant (see maxReconcilesAtOneInstant): it must stop there. */
  stuck = false;
  private instant = -1;
  private reconcilesAtInstant = 0;

  /**
   * One reconcile by one process, of any controller: each key is held to an hourly bound, per
   * process (each runs its own queue); all of them count towards a loop at one instant.
   */
  onReconcile(identity: string, controller: string, key: string): void {
    const at = this.now();
    if (at !== this.instant) {
      this.instant = at;
      this.reconcilesAtInstant = 0;
    }
    if (++this.reconcilesAtInstant > maxReconcilesAtOneInstant && !this.stuck) {
      this.stuck = true;
      this.violate(
        'time-passes',
        key,
        `more than ${maxReconcilesAtOneInstant} reconciles at one simulated instant, the last by ${identity} ${controller}: a loop that never lets time pass (the run stops here)`,
      );
    }
    const window = Math.floor(at / reconcileWindowMs);
    const id = `${identity} ${controller} ${key}@${window}`;
    const n = (this.reconciles.get(id) ?? 0) + 1;
    this.reconciles.set(id, n);
    const bound = controller === 'expansion-request' ? maxRequestReconciles : maxOtherReconciles;
    if (n > bound)
      this.violate(
        'no-hot-loop',
        `${controller} ${key}`,
        `${identity} reconciled it more than ${bound} times in simulated minutes ${window * 10}–${window * 10 + 10}`,
      );
  }

  // --- after every step ----------------------------------------------------------------------

  checkStep(): void {
    // A reconcile that changes nothing writes nothing (only pvx writes status here). The one
    // exception is the write of the plan just before a claim patch: it is the check that the
    // request was read as it is, repeated as such when the patch failed and is tried again.
    // A write whose answer was lost may be made again: the writer cannot know it landed.
    for (const { subject, status } of this.api.noOpWrites.splice(0)) {
      const retried = [...this.answersLost.keys()].find((what) => subject.endsWith(`/${what}`));
      if (retried !== undefined) {
        const left = (this.answersLost.get(retried) ?? 1) - 1;
        if (left > 0) this.answersLost.set(retried, left);
        else this.answersLost.delete(retried);
      } else if (!freshnessChecks.has(status.reason ?? ''))
        this.violate(
          'writes-change-something',
          subject,
          `a status write that changed nothing (${status.reason ?? ''}) ${JSON.stringify(status).slice(0, 400)}`,
        );
    }
    const requests = this.api.peek<VolumeExpansionRequest>(volumeExpansionRequests);
    const byUID = new Map(requests.map((r) => [r.metadata.uid as string, r]));
    for (const raise of this.raises) {
      const recorded = byUID.get(raise.requestUID)?.status?.pvcUID;
      if (recorded && recorded !== raise.claimUID) {
        this.violate(
          'patched-the-validated-claim',
          `db/${raise.requestName}`,
          `raised ${raise.claim} uid ${raise.claimUID}, but the request records uid ${recorded}`,
        );
      }
    }
    const wallNow = Date.now();
    for (const r of requests) {
      const accepted = r.status?.timeline?.acceptedAt;
      if (!r.spec.deadline || !accepted || terminal.has(r.status?.phase ?? '')) continue;
      const due = Date.parse(accepted) + (parseDuration(r.spec.deadline) ?? 0);
      // Time past the deadline that no pvx process led (a lease lost, a crash, another holder:
      // seed 1003085, 131 s of it) is time nobody could end the request.
      const leaderless = wallNow > due ? this.leaderlessMs(this.now() - (wallNow - due), this.now()) : 0;
      if (wallNow > due + deadlineSlackMs + this.wallClockDrift + leaderless) {
        this.violate(
          'deadline-holds',
          `${r.metadata.namespace}/${r.metadata.name}`,
          `deadline ${r.spec.deadline} from ${accepted} passed ${Math.round((wallNow - due) / 1000)} s ago; still ${r.status?.phase} (${r.status?.reason ?? ''})`,
        );
      }
    }
  }

  // --- after the quiet period ----------------------------------------------------------------

  /**
   * Per claim (by UID), the last raise someone made outside pvx; whether the claim had a ledger
   * then; whether a write of pvx's landed on the claim while it showed the raise under way.
   */
  /** The budget of the world's EBS driver as pvx was given it, and per claim (UID) the times pvx's patches spent it. */
  budget: { driver: string; budget: ModificationBudget | undefined } | undefined;
  private readonly spends = new Map<string, number[]>();

  private readonly outsideRaises = new Map<string, { claim: string; size: bigint; hadLedger: boolean; shownToPvx: boolean }>();

  /**
   * A claim of a driver with a modification budget carries the last raise made outside pvx in its
   * ledger, whenever Kubernetes showed it to pvx: the claim had a ledger (its spec differs from
   * the ledger's baseline, however late pvx looks); pvx wrote the claim from a copy that showed
   * the raise under way (every write of pvx's is preconditioned on the copy it decided from, and
   * records what that copy shows); or the claim still asks for the raised size, more than it
   * has. Not a claim that asks for more than it has because pvx raised it further after the
   * outside raise completed: that shows pvx's raise, not the other. (A raise of a claim with no
   * ledger that completed before pvx wrote the claim leaves no trace — pvx may have seen it under
   * way and failed to write in time, under faults; an earlier raise of a burst pvx did not see
   * apart is folded into the last.)
   */
  private checkLedgers(): void {
    for (const [uid, raise] of this.outsideRaises) {
      const pvc = this.api.peek<V1PersistentVolumeClaim>(resources.persistentVolumeClaims).find((c) => c.metadata?.uid === uid);
      const sc = pvc && this.api.get<V1StorageClass>(resources.storageClasses, undefined, pvc.spec?.storageClassName ?? '');
      if (!pvc || !sc || !embeddedDriverProfiles(sc.provisioner).modificationBudget) continue;
      const shown = raise.hadLedger || raise.shownToPvx || raiseUnderWay(pvc, raise.size);
      if (!shown) continue;
      const recorded = readLedger(pvc)?.mods.some((m) => m.size && bytes(m.size[1]) === raise.size);
      if (!recorded)
        this.violate(
          'ledger-counts-outside-changes',
          raise.claim,
          `raised to ${formatBytes(raise.size)} outside pvx, but its ledger ${pvc.metadata?.annotations?.[pvcAnnotations.modifications] ?? '(none)'} does not record it`,
        );
    }
  }

  /**
   * Every request that has had `minAgeMs` is finished, or waits for something only a person can
   * give; every policy says whether it is evaluated. (A policy may rightly act late in the quiet
   * period — a volume still over its threshold after one step, grown again after its cooldown —
   * and that request is judged once it has had the time any request gets.)
   */
  checkSettled(quietSince: number, minAgeMs: number): void {
    this.checkLedgers();
    this.claims.checkPoliciesEvaluated(quietSince);
    for (const r of this.unsettled().filter((q) => !this.isYoung(q, minAgeMs))) {
      const s = r.status ?? {};
      this.violate(
        'settles',
        `${r.metadata.namespace}/${r.metadata.name}`,
        `after the quiet period still ${s.phase ?? 'without status'} (${s.reason ?? ''}: ${s.message ?? ''})`,
      );
    }
  }

  /** The StorageClass a claim of the namespace names ('' when there is no such claim). */
  private claimClass(claim: string): string {
    return this.api.peek<V1PersistentVolumeClaim>(resources.persistentVolumeClaims).find((c) => c.metadata?.name === claim)?.spec?.storageClassName ?? '';
  }

  /** Whether the request was created less than `ms` ago. */
  isYoung(r: VolumeExpansionRequest, ms: number): boolean {
    const created = this.claims.createdAt(r.metadata.uid as string);
    return created !== undefined && this.now() - created < ms;
  }

  /** Requests neither finished nor waiting for a person (the quiet period runs until there are none, for a while). */
  unsettled(): VolumeExpansionRequest[] {
    const requests = this.api.peek<VolumeExpansionRequest>(volumeExpansionRequests);
    const pods = this.api.peek<V1Pod>(resources.pods);
    const classes = new Set(this.api.peek<V1StorageClass>(resources.storageClasses).map((c) => c.metadata?.name));
    const mounted = (claim: string) =>
      pods.some((p) => p.status?.phase === 'Running' && p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === claim));
    const userMayAct = (r: VolumeExpansionRequest, depth = 0): boolean => {
      const s = r.status ?? {};
      if (s.phase && terminal.has(s.phase)) return true;
      if (depth > 3) return false;
      // A StatefulSet request speaks for its children: settled when each of them is. Its template
      // step, once every claim is done, is judged by workload mode's template-update-settles.
      if (s.phase === 'UpdatingTemplate') return true;
      // Its children refused (an object-count quota full): a person raises it or deletes requests.
      if (s.reason === 'ChildRequestRefused') return true;
      if (r.spec.target.statefulSetName) {
        const children = requests.filter((c) => c.metadata.ownerReferences?.some((o) => o.uid === r.metadata.uid));
        return children.length > 0 && children.every((c) => userMayAct(c, depth + 1));
      }
      const claim = r.spec.target.pvcName ?? '';
      if (s.reason === 'AwaitingApproval' || s.reason === 'PlanChanged' || s.reason === 'ApprovalWithdrawn') return true;
      if (s.phase === 'WaitingForPod') return !mounted(claim);
      // The opt-ins' waits a person ends (test/sim/workloads.ts): a restart left to a person, an eviction a budget refuses.
      if (s.reason === 'PodRestartRequired' && r.spec.offlineNodeExpansion !== 'EvictPod') return true;
      // Another pod holding the volume (a Job's, a bare pod): a person takes it away.
      if (s.eviction?.phase === 'Blocked' || s.reason === 'EvictionNotPossible' || s.reason === 'VolumeHeldByOtherPod') return true;
      // Its one eviction made, and a driver that refuses at every mount: a person reads the kubelet's log.
      if (s.eviction?.phase === 'Evicted' && s.reason === 'PodRestartRequired') return true;
      // Waiting its turn behind a refused eviction, or a pod of the workload that crash-loops (only a person ends either).
      if (s.reason === 'EvictionWaits')
        return (
          requests.some((o) => o !== r && !terminal.has(o.status?.phase ?? '') && o.status?.eviction?.phase === 'Blocked') ||
          pods.some(
            (p) =>
              p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp && !p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
          )
        );
      if (s.reason === 'ModificationBudgetExhausted' || s.reason === 'ExpansionInFlight') return true;
      // pvx knows a claim's driver by its StorageClass: with the class deleted it cannot read the
      // driver's words (TopoLVM's full node, which no retry gets past), and the refusal ends the
      // request only after the driver-error timeout, an hour on; a person creates the class again.
      if (s.reason === 'ControllerResizeError' && !classes.has(this.claimClass(claim))) return true;
      if (s.reason === 'AnotherRequestActive') {
        return requests.some((o) => o !== r && o.spec.target.pvcName === claim && !terminal.has(o.status?.phase ?? '') && userMayAct(o, depth + 1));
      }
      return false;
    };
    return requests.filter((r) => !userMayAct(r));
  }
}
