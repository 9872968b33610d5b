// One pass of the expansion policies, decided: for every VolumeExpansionPolicy and every
// ClusterVolumeExpansionPolicy with triggers, for each claim it takes (src/policies/autoscale/selection.ts),
// the autoscale decision (src/policies/autoscale/decide.ts) and what to do about it — create this
// request, record this Event, report this in the policy's status. Pure: the usage samples and
// when each claim's capacity last changed are passed in, as is the clock, so the operator's
// evaluator and `pvx plan` run the very same decisions, and a table test needs no client.
//
// One claim pvx cannot read (a size it cannot parse) is one "unknown/Unreadable" decision naming
// the field and the value; the other claims and policies are decided as usual.
import type { V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import { requestAnnotations, requestLabels } from '../../crds/keys.ts';
import type { PolicySpec, PolicyStatus, VolumeExpansionPolicy, VolumeStatus } from '../../crds/volume-expansion-policy.ts';
import { requestClaimKey } from '../../crds/keys.ts';
import type { Condition, Phase, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { EventRecord, PolicyRef } from '../../k8s/client.ts';
import { QuantityError, formatBytes, humanBytes, parseBytes } from '../../k8s/quantity.ts';
import { objectKey } from '../../k8s/resources.ts';
import { autoscaleSpec, decideAutoscale, type AutoscaleDecision, type AutoscaleInput, type AutoscaleSpec } from './decide.ts';
import { groupBy } from '../shared/collections.ts';
import { policyDefaults } from '../../crds/defaults.ts';
import { generatedName } from '../shared/generated-name.ts';
import { budgetSpentBy, claimModifications } from '../budget/budget.ts';
import { defaultDriverProfiles, type DriverProfile, type DriverProfiles } from '../budget/drivers.ts';
import { isFinished, isFinishedPhase } from '../request/phase.ts';
import { replicaClaimNames } from '../claim/statefulset.ts';
import { resizeUnderway } from '../claim/resize.ts';
import { recordedPatchTime } from '../claim/writers.ts';
import { claimPolicies, policiesByNamespace, type GoverningPolicy, type SelectionLookups } from './selection.ts';
import type { UsageSample } from './sampling.ts';
import { windowsProblem } from './windows.ts';
import { clip, limits } from '../../crds/limits.ts';

/** A request that ended without growing its claim: the next waits out the cooldown, whatever the forecast. */
const refusedPhases: ReadonlySet<Phase> = new Set<Phase>(['Rejected', 'Failed']);

/**
 * A policy of either kind as a pass sees it: its identity (for status, Events, owner references
 * and labels) and the autoscale part of its spec.
 */
export interface EvaluatedPolicy {
  ref: PolicyRef;
  apiVersion: string;
  uid: string;
  spec: Pick<PolicySpec, 'triggers' | 'step' | 'maxSize' | 'cooldown' | 'windows' | 'mode' | 'offlineNodeExpansion'>;
  /** The conditions its status shows now: a condition's time moves only when its status does. */
  conditions?: readonly Condition[];
}

export type PolicyMode = NonNullable<PolicySpec['mode']>;

export interface PassInput {
  policies: readonly VolumeExpansionPolicy[];
  clusterPolicies: readonly ClusterVolumeExpansionPolicy[];
  claims: readonly V1PersistentVolumeClaim[];
  storageClasses: readonly V1StorageClass[];
  requests: readonly VolumeExpansionRequest[];
  /** Namespaces (cluster policies' namespaceSelector) and StatefulSets (statefulSetName). */
  lookups: SelectionLookups;
  /** Usage samples of a claim ("namespace/name"), oldest first. */
  samples(key: string): readonly UsageSample[];
  /** When the claim's status.capacity was last seen to change (samples before describe the old volume). */
  lastCapacityChangeAt(key: string): Date | undefined;
  now: Date;
  /** Caps every policy's sustainedSamples: a plan judges on the fewer samples it took. */
  sustainedSamples?: number;
  /** The driver profiles (--modification-budget); default defaultDriverProfiles. */
  profiles?: DriverProfiles;
}

export type VolumeAction =
  | { kind: 'none' }
  /** Record an Event (when it differs from the last one for this policy and claim). */
  | { kind: 'event'; event: EventRecord }
  /**
   * Create this request in the claim's namespace; on success, record the Event, if any (Approval:
   * someone must act on it). An Auto expansion records none here: its request is the record, and
   * its one Event goes on the claim when it completes (the request reconciler's).
   */
  | { kind: 'create'; namespace: string; request: VolumeExpansionRequest; event?: EventRecord };

export interface VolumePlan {
  pvc: V1PersistentVolumeClaim;
  /** "namespace/name". */
  key: string;
  decision: AutoscaleDecision;
  /** The newest usage sample the decision saw, if any. */
  newest?: UsageSample;
  /** What the policy's status says of the claim, should the action succeed. */
  status: VolumeStatus;
  action: VolumeAction;
  /** The claim's next measurement may change the decision: read it as soon as it exists. */
  watch: boolean;
}

export interface PolicyPlan {
  policy: EvaluatedPolicy;
  mode: PolicyMode;
  volumes: VolumePlan[];
  /** The policy's Ready condition: whether it is evaluated, or why it cannot be. */
  ready: Condition;
  /** The policy's status, should every action succeed (see policyStatus). */
  status: PolicyStatus;
  /** Set when the policy's own spec cannot be read: it decides nothing, and its status says why. */
  error?: string;
}

const refOf = (g: GoverningPolicy): PolicyRef =>
  g.kind === 'VolumeExpansionPolicy'
    ? { kind: g.kind, namespace: g.policy.metadata.namespace as string, name: g.policy.metadata.name as string }
    : { kind: g.kind, name: g.policy.metadata.name as string };

/** "namespace/name" of a namespaced policy, "name" of a cluster policy. */
export const policyId = (ref: PolicyRef): string => (ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name);

/** Both kinds as a pass sees them: namespaced first, then cluster policies (with triggers) by name. */
export function evaluatedPolicies(policies: readonly VolumeExpansionPolicy[], clusterPolicies: readonly ClusterVolumeExpansionPolicy[]): EvaluatedPolicy[] {
  const namespaced = policies.map((policy): EvaluatedPolicy => ({
    ref: refOf({ kind: 'VolumeExpansionPolicy', policy }),
    apiVersion: policy.apiVersion,
    uid: policy.metadata.uid as string,
    spec: policy.spec,
    conditions: policy.status?.conditions,
  }));
  const cluster = clusterPolicies
    .filter((p) => p.spec.triggers)
    .sort((a, b) => (a.metadata.name as string).localeCompare(b.metadata.name as string))
    .map((policy): EvaluatedPolicy => ({
      ref: refOf({ kind: 'ClusterVolumeExpansionPolicy', policy }),
      apiVersion: policy.apiVersion,
      uid: policy.metadata.uid as string,
      spec: { ...policy.spec, triggers: policy.spec.triggers as PolicySpec['triggers'] },
      conditions: policy.status?.conditions,
    }));
  return [...namespaced, ...cluster];
}

/**
 * When a request last did something to its claim. Any request starts the cooldown, a rejected one
 * too (its creation): otherwise a refused expansion (a guardrail, a quota) would be requested again
 * at every pass.
 */
function activityTimes(r: VolumeExpansionRequest): Date[] {
  return [r.metadata.creationTimestamp as unknown as string | undefined, r.status?.timeline?.completedAt, r.status?.timeline?.patchedAt]
    .filter((t): t is string => Boolean(t))
    .map((t) => new Date(t));
}

/** The claim's sizes, or why they cannot be read (the field and its value). */
export function claimSizes(pvc: V1PersistentVolumeClaim): { capacityBytes: bigint; requestedBytes: bigint } | { unreadable: string } {
  const capacityText = pvc.status?.capacity?.storage;
  const requestedText = pvc.spec?.resources?.requests?.storage;
  try {
    const capacityBytes = capacityText === undefined ? 0n : parseBytes(capacityText, 'status.capacity.storage');
    const requestedBytes = requestedText === undefined ? capacityBytes : parseBytes(requestedText, 'spec.resources.requests.storage');
    return { capacityBytes, requestedBytes };
  } catch (err) {
    if (err instanceof QuantityError) return { unreadable: err.message };
    throw err;
  }
}

/** What the autoscale decision of one claim reads beyond the claim and the policy's spec. */
export interface ClaimReadings {
  /** The requests that target the claim. */
  requests: readonly VolumeExpansionRequest[];
  storageClass: V1StorageClass | undefined;
  samples: readonly UsageSample[];
  lastCapacityChangeAt: Date | undefined;
  now: Date;
  profiles?: DriverProfiles;
}

/**
 * The autoscale input of one claim under a policy's spec: its sizes, what is in flight, its last
 * expansion, its driver's budget and limits — or why its sizes cannot be read.
 */
export function claimAutoscaleInput(spec: AutoscaleSpec, pvc: V1PersistentVolumeClaim, r: ClaimReadings): AutoscaleInput | { unreadable: string } {
  const sizes = claimSizes(pvc);
  if ('unreadable' in sizes) return sizes;
  const { requests, now } = r;
  const active = requests.filter((q) => !isFinished(q));
  const real = requests.filter((q) => !q.spec.dryRun);
  // pvx's own last write of the claim counts too: the request that made an expansion may be gone
  // (deleted, or its TTL), and the cooldown must not go with it.
  const patchedAt = recordedPatchTime(pvc);
  const lastExpansionAt = [...real.flatMap(activityTimes), ...(patchedAt ? [patchedAt] : [])].sort((a, b) => b.getTime() - a.getTime())[0];
  const newestRequest = real.map((q) => ({ q, at: new Date(q.metadata.creationTimestamp as unknown as string).getTime() })).sort((a, b) => b.at - a.at)[0]?.q;
  const sc = r.storageClass;
  const driver = (r.profiles ?? defaultDriverProfiles)(sc?.provisioner);
  // A policy grows size alone: a budget of performance changes does not hold it.
  const budget = budgetSpentBy(driver.modificationBudget, { performance: false });
  // A request refused for now by the driver's rate limit, or waiting on its previous modification.
  const waitReasons = driverWaitReasons(driver);
  const waiting = active.find((q) => waitReasons.has(q.status?.reason ?? ''));
  return {
    spec,
    capacityBytes: sizes.capacityBytes,
    expansionInFlight: active.length > 0 || sizes.requestedBytes > sizes.capacityBytes || resizeUnderway(pvc),
    ...(waiting ? { waitingOnDriver: { request: waiting.metadata.name as string, reason: waiting.status?.reason as string } } : {}),
    lastExpansionAt,
    // A request superseded by a change of the claim was not refused: the claim changed under it.
    lastRequestRefused: newestRequest !== undefined && refusedPhases.has(newestRequest.status?.phase as Phase) && newestRequest.status?.reason !== 'Superseded',
    lastCapacityChangeAt: r.lastCapacityChangeAt,
    samples: [...r.samples],
    modifications: claimModifications(pvc, budget, requests, now),
    budget,
    driverMaxBytes: sc ? classMaxBytes(driver, sc) : undefined,
    now,
  };
}

// What a pass reads of a driver and of a class once, not once per claim: profiles are constants,
// and a class the informer shows changed is another object.
const waitReasons = new WeakMap<DriverProfile, ReadonlySet<string>>();
const maxBytesOfClass = new WeakMap<V1StorageClass, { driver: DriverProfile; bytes: bigint | undefined }>();

/** The reasons of a request the driver's rate limit refused for now, or that waits on its previous modification. */
function driverWaitReasons(driver: DriverProfile): ReadonlySet<string> {
  let reasons = waitReasons.get(driver);
  if (!reasons) {
    reasons = new Set(driver.errors.filter((e) => e.kind === 'rateLimited' || e.kind === 'waiting').map((e) => e.reason));
    waitReasons.set(driver, reasons);
  }
  return reasons;
}

/** driverMaxBytes, read once per class object and driver. */
function classMaxBytes(driver: DriverProfile, sc: V1StorageClass): bigint | undefined {
  const known = maxBytesOfClass.get(sc);
  if (known?.driver === driver) return known.bytes;
  const bytes = driverMaxBytes(driver, sc);
  maxBytesOfClass.set(sc, { driver, bytes });
  return bytes;
}

function decideClaim(
  spec: AutoscaleSpec,
  pvc: V1PersistentVolumeClaim,
  requests: readonly VolumeExpansionRequest[],
  classes: ReadonlyMap<string, V1StorageClass>,
  input: PassInput,
): AutoscaleDecision {
  const key = objectKey(pvc);
  const autoscale = claimAutoscaleInput(spec, pvc, {
    requests,
    storageClass: classes.get(pvc.spec?.storageClassName ?? ''),
    samples: input.samples(key),
    lastCapacityChangeAt: input.lastCapacityChangeAt(key),
    now: input.now,
    profiles: input.profiles,
  });
  if ('unreadable' in autoscale) return { kind: 'unknown', reason: 'Unreadable', message: `cannot read the claim's size: ${autoscale.unreadable}` };
  return decideAutoscale(autoscale);
}

/** The largest volume the driver makes for the class, or undefined when unknown (or its parameter unreadable: validation says so). */
export function driverMaxBytes(driver: DriverProfile, sc: V1StorageClass): bigint | undefined {
  try {
    return driver.maxBytes(sc.parameters ?? {});
  } catch (err) {
    if (err instanceof QuantityError) return undefined;
    throw err;
  }
}

/**
 * The name of the request a policy creates for one decision: the policy and claim, readable, and
 * a hash of who asks for what, when (src/policies/shared/generated-name.ts) — unique for any name length.
 */
export function policyRequestName(policy: PolicyRef, claim: { namespace: string; name: string; uid?: string }, targetBytes: bigint, at: Date): string {
  return generatedName(
    [policy.name, claim.name],
    [policy.kind, policy.namespace ?? '', policy.name, claim.namespace, claim.name, claim.uid ?? '', targetBytes.toString(), at.toISOString()],
  );
}

/** The request a policy creates for an expansion (Approval: one that waits for approval). */
export function policyRequest(
  p: EvaluatedPolicy,
  mode: PolicyMode,
  pvc: V1PersistentVolumeClaim,
  d: Extract<AutoscaleDecision, { kind: 'expand' }>,
  now: Date,
): VolumeExpansionRequest {
  const namespace = pvc.metadata?.namespace as string;
  const pvcName = pvc.metadata?.name as string;
  return {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: {
      name: policyRequestName(p.ref, { namespace, name: pvcName, uid: pvc.metadata?.uid }, d.targetBytes, now),
      namespace,
      labels: { [p.ref.kind === 'ClusterVolumeExpansionPolicy' ? requestLabels.clusterPolicy : requestLabels.policy]: p.ref.name },
      annotations: {
        [requestAnnotations.trigger]: d.trigger,
        [requestAnnotations.decision]: `${d.message} (${d.detail})`,
        // What the decision was about: the request is carried out only on that claim at that size.
        [requestAnnotations.measuredCapacity]: formatBytes(d.fromBytes),
        ...(pvc.metadata?.uid ? { [requestAnnotations.claimUID]: pvc.metadata.uid } : {}),
        ...(mode === 'Approval' ? { [requestAnnotations.approval]: 'required' } : {}),
      },
      // A cluster-scoped owner of a namespaced request is allowed: deleting the policy deletes its requests.
      ownerReferences: [{ apiVersion: p.apiVersion, kind: p.ref.kind, name: p.ref.name, uid: p.uid, controller: true }],
    },
    // The policy's opt-in carries over: its requests evict the pod of a claim only if it says so.
    spec: {
      target: { pvcName },
      size: formatBytes(d.targetBytes),
      ...(p.spec.offlineNodeExpansion === 'EvictPod' ? { offlineNodeExpansion: 'EvictPod' as const } : {}),
    },
  };
}

/**
 * An Event of a policy about a claim. A namespaced policy's Events are on the policy; a cluster
 * policy's are on the claim, where the namespace's owners look (a cluster-scoped object has no
 * namespace).
 */
export function policyEvent(p: EvaluatedPolicy, pvc: V1PersistentVolumeClaim, type: EventRecord['type'], reason: string, message: string): EventRecord {
  const pvcName = pvc.metadata?.name as string;
  return p.ref.kind === 'VolumeExpansionPolicy'
    ? {
        regarding: { apiVersion: p.apiVersion, kind: p.ref.kind, namespace: p.ref.namespace, name: p.ref.name, uid: p.uid },
        type,
        reason,
        message: `${pvcName}: ${message}`,
      }
    : {
        regarding: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: pvc.metadata?.namespace as string, name: pvcName, uid: pvc.metadata?.uid },
        type,
        reason,
        message: `ClusterVolumeExpansionPolicy ${p.ref.name}: ${message}`,
      };
}

/**
 * What the policy's status says of one claim, before any action: the decision, in words that stay
 * the same while it does, and the capacity — nothing that changes with each measurement (used
 * bytes and percentages, the time to full, the sample's time: the metrics pvx_volume_used_ratio
 * and pvx_volume_time_to_full_seconds carry those), so a claim whose decision holds writes nothing.
 */
function volumeStatus(p: EvaluatedPolicy, pvc: V1PersistentVolumeClaim, d: AutoscaleDecision, newest: UsageSample | undefined): VolumeStatus {
  const status: VolumeStatus = {
    ...(p.ref.kind === 'ClusterVolumeExpansionPolicy' ? { namespace: pvc.metadata?.namespace as string } : {}),
    pvcName: pvc.metadata?.name as string,
    decision: d.kind,
    message: d.message,
    // A claim another policy governs is that one's to report: its capacity here would rewrite
    // this policy's status after each of the other's expansions.
    ...(newest && d.kind !== 'overlap' ? { capacity: humanBytes(newest.capacityBytes) } : {}),
  };
  if (d.kind === 'unknown' || d.kind === 'blocked' || d.kind === 'overlap') status.reason = d.reason;
  if (d.kind === 'blocked' && d.until) status.nextEligibleAt = d.until.toISOString();
  return status;
}

/** The decision turned into what to do, in the policy's mode. */
function planVolume(
  p: EvaluatedPolicy,
  mode: PolicyMode,
  pvc: V1PersistentVolumeClaim,
  decision: AutoscaleDecision,
  newest: UsageSample | undefined,
  now: Date,
): VolumePlan {
  const key = objectKey(pvc);
  const status = volumeStatus(p, pvc, decision, newest);
  const watch = 'watch' in decision && decision.watch === true;
  const plan = (s: VolumeStatus, action: VolumeAction): VolumePlan => ({ pvc, key, decision, ...(newest ? { newest } : {}), status: s, action, watch });
  if (decision.kind === 'atMax') return plan(status, { kind: 'event', event: policyEvent(p, pvc, 'Warning', 'AtMaxSize', decision.message) });
  if (decision.kind !== 'expand') return plan(status, { kind: 'none' });
  if (mode === 'DryRun') return plan({ ...status, decision: 'dryRun', message: `dry run: would ${decision.message}` }, { kind: 'none' });
  const request = policyRequest(p, mode, pvc, decision, now);
  const name = request.metadata.name as string;
  const event =
    mode === 'Approval'
      ? policyEvent(p, pvc, 'Normal', 'RequestCreated', `${decision.message} (${decision.detail}): created VolumeExpansionRequest ${name} (awaiting approval)`)
      : undefined;
  return plan({ ...status, request: name }, { kind: 'create', namespace: request.metadata.namespace as string, request, ...(event ? { event } : {}) });
}

/**
 * A status has to stay small (an object is at most 1.5 MB in etcd, and a cluster policy may cover
 * thousands of PVCs): beyond this many, the volumes that need attention are kept and idle ones
 * left out (and counted).
 */
export const maxStatusVolumes = limits.volumes;
const attention: Record<string, number> = { expand: 0, dryRun: 0, error: 0, atMax: 1, blocked: 2, unknown: 3, overlap: 3, idle: 4 };

/**
 * A policy's Ready condition: True while its rules are read and applied at every pass; False, with
 * reason InvalidSpec and what cannot be read, when they cannot be (it then decides nothing, and
 * no other policy is held back by it).
 */
export function readyCondition(error: string | undefined, previous: readonly Condition[] | undefined, now: Date): Condition {
  const wanted: Omit<Condition, 'lastTransitionTime'> = error
    ? { type: 'Ready', status: 'False', reason: 'InvalidSpec', message: `not evaluated: ${error}` }
    : { type: 'Ready', status: 'True', reason: 'Evaluated', message: 'its rules are read and applied at every pass' };
  const old = previous?.find((c) => c.type === 'Ready');
  return { ...wanted, lastTransitionTime: old && old.status === wanted.status ? old.lastTransitionTime : now.toISOString() };
}

/** A policy's status from what it says of each claim it takes, and its Ready condition. */
export function policyStatus(volumes: readonly VolumeStatus[], ready: Condition): PolicyStatus {
  // In one order whatever the order the claims were listed in, so an unchanged status reads as unchanged.
  const byName = (a: VolumeStatus, b: VolumeStatus) => (a.namespace ?? '').localeCompare(b.namespace ?? '') || a.pvcName.localeCompare(b.pvcName);
  const listed = volumes.filter((v) => !isRoutine(v));
  // A volume's message is cut to the bound the CRD sets on a list item (crds/limits.ts).
  const sorted = listed.map((v) => (v.message.length > limits.itemMessage ? { ...v, message: clip(v.message, limits.itemMessage) } : v)).sort(byName);
  const shown =
    listed.length <= maxStatusVolumes ? sorted : sorted.sort((a, b) => (attention[a.decision] ?? 5) - (attention[b.decision] ?? 5)).slice(0, maxStatusVolumes);
  return { matchedPVCs: volumes.length, volumes: shown, volumesOmitted: listed.length - shown.length, conditions: [ready] };
}

/**
 * A claim the policy handles as it should — below its thresholds (idle), or growing: a request
 * created for it (expand), one in flight, or just grown and waiting for a measurement of the new
 * size — is not listed in the policy's status. Listing it
 * wrote the status three times per expansion (expand, in flight, idle at the new capacity); the
 * request is the record of an expansion, the claim's Event says how it ended, and `pvx plan`,
 * `pvx df` and the metrics show every claim. What is listed needs a person, or holds the policy
 * back: unknown, blocked (cooldown, window, budget), atMax, dryRun, overlap, error.
 */
export function isRoutine(v: VolumeStatus): boolean {
  return (
    v.decision === 'idle' ||
    (v.decision === 'expand' && v.request !== undefined) ||
    (v.decision === 'blocked' && v.reason === 'InFlight') ||
    // Just grown, waiting for a measurement of the new size: the end of an expansion.
    (v.decision === 'unknown' && v.reason === 'JustGrown')
  );
}

/**
 * The status content a write is for, with keys in one order and absent fields dropped, since the
 * API server returns objects its own way. A status written by an earlier version (with the time of
 * its evaluation, or usage figures) differs, and is rewritten once.
 */
function statusContent(status: PolicyStatus | undefined): string {
  return JSON.stringify(status ?? {}, (_key, value: unknown) =>
    value && typeof value === 'object' && !Array.isArray(value) ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => a.localeCompare(b))) : value,
  );
}

/** Whether writing `next` over `current` would change what the status says. */
export function sameStatus(current: PolicyStatus | undefined, next: PolicyStatus): boolean {
  return statusContent(current) === statusContent(next);
}

/**
 * An unfinished StatefulSet request as a request for each claim whose own step is unfinished —
 * each claim it pinned and has not completed (its child's phase, or the claim already at size),
 * or, not pinned yet, each claim of its StatefulSet's replicas as cached — with only what the pass
 * reads of it. A claim the request is done with is not in flight however long the request still
 * waits on something else (its template step, a partitioned canary, another replica's pod): a
 * policy keeps growing it as it fills.
 */
function pinnedAsks(r: VolumeExpansionRequest, lookups: SelectionLookups): VolumeExpansionRequest[] {
  const { statefulSetName, volumeClaimTemplate } = r.spec.target;
  if (!statefulSetName || isFinished(r)) return [];
  const targets = r.status?.targets ?? [];
  if (targets.length === 0) {
    const sts = volumeClaimTemplate ? lookups.statefulSet(r.metadata.namespace as string, statefulSetName) : undefined;
    const status = r.status?.phase ? { phase: r.status.phase, ...(r.status.reason ? { reason: r.status.reason } : {}) } : {};
    // More replicas than a request grows: it is refused (TooManyClaims) before it touches a claim.
    return ((sts && replicaClaimNames(sts, volumeClaimTemplate as string)) ?? []).map((pvcName) => ({ ...r, spec: { target: { pvcName } }, status }));
  }
  return targets
    .filter((t) => t.pvcName && !isFinishedPhase(t.phase))
    .map((t) => ({
      ...r,
      spec: { target: { pvcName: t.pvcName } },
      status: { phase: (t.phase as Phase | undefined) ?? 'Pending', ...(t.reason ? { reason: t.reason } : {}) },
    }));
}

/** Every policy's decisions and actions for one pass. */
export function policyPass(input: PassInput): PolicyPlan[] {
  // Requests per claim, once for the pass rather than once per policy and claim. An unfinished
  // StatefulSet request counts for each claim it pinned: it grows them through children it may
  // not have made yet (seed 65026: a policy asked for a claim while the child that grew it was
  // being created).
  const requestsByClaim = groupBy([...input.requests, ...input.requests.flatMap((r) => pinnedAsks(r, input.lookups))], requestClaimKey);
  const classes = new Map(input.storageClasses.map((c) => [c.metadata?.name ?? '', c]));
  const policiesIn = policiesByNamespace(input.policies);
  // Each claim to the one policy that grows it; the other namespaced policies that select it show
  // it as governed by that one, and leave it alone.
  const taken = input.claims.flatMap((pvc): { pvc: V1PersistentVolumeClaim; policy: string; governedBy?: string }[] => {
    const { governing, overlapping } = claimPolicies(pvc, policiesIn(pvc.metadata?.namespace), input.clusterPolicies, input.lookups);
    if (!governing) return [];
    const governor = policyId(refOf(governing));
    return [{ pvc, policy: governor }, ...overlapping.map((g) => ({ pvc, policy: policyId(refOf(g)), governedBy: governor }))];
  });
  const claimsOf = groupBy(taken, (t) => t.policy);
  return evaluatedPolicies(input.policies, input.clusterPolicies).map((policy): PolicyPlan => {
    const mode = policy.spec.mode ?? 'Auto';
    const invalid = (error: string): PolicyPlan => {
      const ready = readyCondition(error, policy.conditions, input.now);
      return { policy, mode, volumes: [], ready, status: policyStatus([], ready), error };
    };
    let spec: AutoscaleSpec;
    try {
      spec = autoscaleSpec(policy.spec);
    } catch (err) {
      return invalid(`cannot read the policy's spec: ${(err as Error).message}`);
    }
    // A window pvx cannot read stops this policy, and says so in its status: never the pass.
    const windows = windowsProblem(spec.windows ?? []);
    if (windows) return invalid(`cannot read spec.windows: ${windows}`);
    const ready = readyCondition(undefined, policy.conditions, input.now);
    if (input.sustainedSamples !== undefined)
      spec.sustainedSamples = Math.min(spec.sustainedSamples ?? policyDefaults.sustainedSamples, input.sustainedSamples);
    const volumes = (claimsOf.get(policyId(policy.ref)) ?? []).map(({ pvc, governedBy }) => {
      const decision: AutoscaleDecision = governedBy
        ? {
            kind: 'overlap',
            reason: 'OverlappingPolicy',
            governor: governedBy,
            message: `${governedBy} selects it too and grows it (of several policies over a claim, the oldest that acts governs it): this policy leaves it alone`,
          }
        : decideClaim(spec, pvc, requestsByClaim.get(objectKey(pvc)) ?? [], classes, input);
      return planVolume(policy, mode, pvc, decision, input.samples(objectKey(pvc)).at(-1), input.now);
    });
    return {
      policy,
      mode,
      volumes,
      ready,
      status: policyStatus(
        volumes.map((v) => v.status),
        ready,
      ),
    };
  });
}

/** Whether `actual` holds everything `wanted` says (objects: key by key; arrays: element by element). */
function holds(actual: unknown, wanted: unknown): boolean {
  if (Array.isArray(wanted)) return Array.isArray(actual) && actual.length === wanted.length && wanted.every((w, i) => holds(actual[i], w));
  if (wanted && typeof wanted === 'object') {
    if (!actual || typeof actual !== 'object') return false;
    return Object.entries(wanted).every(([k, w]) => w === undefined || holds((actual as Record<string, unknown>)[k], w));
  }
  return actual === wanted;
}

/**
 * Whether an existing request is the one a policy meant to create — so a create refused as
 * AlreadyExists was our own earlier create (a response lost, the create retried), not a clash
 * with someone else's object. The API server adds to what was sent (spec defaults, uid, times),
 * so the existing request must hold what was asked for: labels, annotations, owner and spec.
 */
export function isRequestAskedFor(existing: VolumeExpansionRequest, wanted: VolumeExpansionRequest): boolean {
  const { labels, annotations, ownerReferences } = wanted.metadata;
  return holds(existing.metadata, { labels, annotations, ownerReferences }) && holds(existing.spec, wanted.spec);
}
