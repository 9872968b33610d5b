// The cluster audit: what is wrong, or about to go wrong, with the cluster's volumes and their
// expansion — read from a snapshot of objects, with the clock passed in. Pure: the same snapshot
// and clock give the same findings, so `pvx audit` and the operator's audit controller agree.
//
// One function per rule, each returning the findings of its rule; every finding names the object,
// says what is wrong with the figures, and carries an actionable remedy.
import type {
  V1Namespace,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1ResourceQuota,
  V1StatefulSet,
  V1StorageClass,
  V1VolumeAttributesClass,
} from '@kubernetes/client-node';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import type { PolicySpec, VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import { runDefaults } from '../../crds/defaults.ts';
import { kubernetesAnnotations, pvcAnnotations, requestClaimKey } from '../../crds/keys.ts';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { QuantityError, formatBytes, humanBytes, parseBytes, readBytes } from '../../k8s/quantity.ts';
import { objectKey } from '../../k8s/resources.ts';
import { decideAutoscale, nextStepBytes, stepSpec, usedRatio } from '../autoscale/decide.ts';
import { budgetExhaustedMessage, budgetText, claimModifications } from '../budget/budget.ts';
import { defaultDriverProfiles, nextModificationAt, type DriverProfile, type DriverProfiles } from '../budget/drivers.ts';
import { humanDuration, parseDuration } from '../shared/duration.ts';
import { groupBy } from '../shared/collections.ts';
import { currentClass, modificationState, modifyErrorCondition, specClass } from '../claim/modify.ts';
import { runningPodClaims } from '../claim/pods.ts';
import { errorConditions, preResizeCapacity, resizeState, toDate, trueCondition } from '../claim/resize.ts';
import { claimPolicies, policiesByNamespace, selectionLookups, type GoverningPolicy as SelectedPolicy } from '../autoscale/selection.ts';
import { validateRequest } from '../request/validation.ts';
import { isFinished } from '../request/phase.ts';
import { sizeSetByPvx } from '../budget/ledger.ts';
import { lastWriter } from '../claim/writers.ts';
import type { UsageSample } from '../autoscale/sampling.ts';
import { isStatefulSetClaim } from '../claim/statefulset.ts';
import { otherManager } from '../request/statefulset-record.ts';

export type Severity = 'info' | 'warning' | 'critical';
/** In increasing order. */
export const severities: readonly Severity[] = ['info', 'warning', 'critical'];

export type RuleId =
  | 'class-not-expandable'
  | 'resize-stuck'
  | 'waiting-for-pod'
  | 'resize-infeasible'
  | 'resize-error'
  | 'capacity-mismatch'
  | 'nearly-full-uncovered'
  | 'quota-headroom'
  | 'driver-budget-exhausted'
  | 'statefulset-size-drift'
  | 'resized-outside-pvx'
  | 'claim-unreadable'
  | 'modify-stuck'
  | 'modify-infeasible'
  | 'policy-overlap';

export interface AuditRule {
  id: RuleId;
  severity: Severity;
  title: string;
  /** The general remedy; a finding may carry a more specific one. */
  remedy: string;
  /**
   * What the rule reads of the cluster beyond the claims: without one of these (a kind the reader
   * may not list), its findings would be missing or wrong, so a reader skips it and says so.
   */
  reads: readonly AuditRead[];
  /** What it reads only to say more (a finding's date, a remedy's wording): without it, it still holds. */
  readsForDetail?: readonly AuditRead[];
  check: (ctx: AuditContext) => Finding[];
}

/**
 * A rule of the table: its check is handed the views it names (reads and readsForDetail) and no
 * other, so a rule that reads a kind it does not name is a type error — what a reader skips for
 * lack of a kind cannot drift from what the rule reads.
 */
function defineRule<R extends AuditRead = never>(
  r: Omit<AuditRule, 'reads' | 'readsForDetail' | 'check'> & { reads: readonly R[]; readsForDetail?: readonly R[]; check: (ctx: RuleContext<R>) => Finding[] },
): AuditRule {
  // The whole context has every view: what a check of fewer views is handed.
  return r as unknown as AuditRule;
}

export const auditRules: readonly AuditRule[] = [
  defineRule({
    id: 'class-not-expandable',
    severity: 'warning',
    title: 'Bound claim whose StorageClass does not allow expansion',
    remedy:
      'The API server refuses any size increase of this claim. Move the data to a claim of an expandable StorageClass, or (if the driver supports it) set allowVolumeExpansion: true on the class.',
    reads: ['storageClasses'],
    check: classNotExpandable,
  }),
  defineRule({
    id: 'resize-stuck',
    severity: 'critical',
    title: 'Resize in progress for longer than expected',
    remedy:
      "Read the claim's events (kubectl describe pvc) and the logs of the external-resizer (controller stage) or the kubelet (node stage); fix the cause there.",
    reads: ['pods'],
    check: resizeStuck,
  }),
  defineRule({
    id: 'waiting-for-pod',
    severity: 'info',
    title: 'Filesystem expansion waits for a pod to mount the claim',
    remedy: 'Start a pod that mounts the claim (or scale its workload up): the kubelet grows the filesystem when it mounts the volume.',
    reads: ['pods'],
    check: waitingForPod,
  }),
  defineRule({
    id: 'resize-infeasible',
    severity: 'critical',
    title: 'The driver cannot reach the requested size',
    remedy:
      'Lower spec.resources.requests.storage to a size the driver can provide (still above status.capacity; Kubernetes allows it after an infeasible resize), or let pvx do it with a VolumeExpansionRequest with recovery: Auto.',
    reads: [],
    check: resizeInfeasible,
  }),
  defineRule({
    id: 'resize-error',
    severity: 'warning',
    title: 'Resize failing with an error (retried)',
    remedy: 'Read the error: the resizer and kubelet retry on their own, but a persistent error (quota, driver limit, rate limit) needs fixing at its source.',
    reads: [],
    readsForDetail: ['requests'],
    check: resizeError,
  }),
  defineRule({
    id: 'capacity-mismatch',
    severity: 'warning',
    title: 'Volume and claim disagree on capacity with no resize in progress',
    remedy:
      'A resize ended half-way or the PersistentVolume was edited by hand. Compare kubectl get pv -o yaml with the claim; restarting the pod that mounts it retries node expansion.',
    reads: ['persistentVolumes'],
    check: capacityMismatch,
  }),
  defineRule({
    id: 'nearly-full-uncovered',
    severity: 'warning',
    title: 'Nearly full and no policy grows it',
    remedy: 'Grow it now with a VolumeExpansionRequest, or create a VolumeExpansionPolicy that selects it so it grows before it fills.',
    reads: ['policies'],
    check: nearlyFullUncovered,
  }),
  defineRule({
    id: 'quota-headroom',
    severity: 'warning',
    title: 'The next policy expansion would exceed a ResourceQuota',
    remedy:
      "Raise the ResourceQuota, free storage in the namespace, or lower the policy's step: otherwise the next expansion is rejected when the volume needs it.",
    reads: ['resourceQuotas', 'policies', 'storageClasses'],
    check: quotaHeadroom,
  }),
  defineRule({
    id: 'driver-budget-exhausted',
    severity: 'warning',
    title: 'The driver allows no further modification of the volume for now',
    remedy: 'Wait until the budget allows the next modification; if the volume may fill before then, free space in it or move load off it.',
    reads: ['storageClasses', 'requests'],
    check: driverBudgetExhausted,
  }),
  defineRule({
    id: 'statefulset-size-drift',
    severity: 'info',
    title: 'StatefulSet claims differ in size from each other or from the template',
    remedy:
      'New replicas start at the volumeClaimTemplate size. pvx can carry the size into the template (a StatefulSet request with spec.statefulSetTemplate.update, once its opt-in RBAC is granted); by hand: delete the StatefulSet with --cascade=orphan and create it again with the new size (pods and claims stay). Where a GitOps tool manages it, change the size in its source. Grow smaller claims with a VolumeExpansionRequest (target.statefulSetName).',
    reads: ['statefulSets'],
    check: statefulSetSizeDrift,
  }),
  defineRule({
    id: 'resized-outside-pvx',
    severity: 'info',
    title: 'Claim resized by something other than pvx',
    remedy: 'Resize through a VolumeExpansionRequest, so guardrails, quotas and driver budgets are checked first and the change is recorded.',
    reads: [],
    check: resizedOutsidePvx,
  }),
  defineRule({
    id: 'modify-stuck',
    severity: 'warning',
    title: 'VolumeAttributesClass change not applied for longer than expected',
    remedy:
      "Read the claim's modifyVolumeStatus and conditions (kubectl describe pvc) and the external-resizer's log for ControllerModifyVolume errors of this volume; a class that does not exist keeps the change Pending until it is created.",
    reads: ['volumeAttributesClasses', 'requests'],
    readsForDetail: ['storageClasses'],
    check: modifyStuck,
  }),
  defineRule({
    id: 'modify-infeasible',
    severity: 'critical',
    title: "The driver refused the claim's VolumeAttributesClass as infeasible",
    remedy:
      "Set the claim's spec.volumeAttributesClassName back to the class it has (status.currentVolumeAttributesClassName; removed, when it had none) to cancel the change, or to a class the driver accepts.",
    reads: [],
    check: modifyInfeasible,
  }),
  defineRule({
    id: 'claim-unreadable',
    severity: 'warning',
    title: 'Claim with a size pvx cannot read',
    remedy:
      "pvx leaves the claim out of every decision that needs the size it cannot read (its policies report it as Unreadable). Check the value with kubectl get pvc -o yaml; if the API server wrote it, report the value to pvx's maintainers.",
    reads: [],
    check: claimUnreadable,
  }),
  defineRule({
    id: 'policy-overlap',
    severity: 'warning',
    title: 'Several expansion policies select one claim',
    remedy:
      'Only the oldest policy that acts grows the claim; the others leave it alone. Narrow the selectors (spec.selector, storageClassNames, statefulSetName) so that each claim is selected by the one policy meant for it.',
    reads: ['policies'],
    check: policyOverlap,
  }),
];

const ruleById = new Map(auditRules.map((r) => [r.id, r]));

export interface Finding {
  rule: RuleId;
  severity: Severity;
  namespace: string;
  kind: string;
  name: string;
  message: string;
  remedy: string;
  /** ISO time the condition began, when known. */
  since?: string;
}

export interface AuditSnapshot {
  pvcs: V1PersistentVolumeClaim[];
  pvs: V1PersistentVolume[];
  storageClasses: V1StorageClass[];
  statefulSets: V1StatefulSet[];
  resourceQuotas: V1ResourceQuota[];
  pods: V1Pod[];
  /** Undefined when they could not be read (then a missing class is not reported as such). */
  volumeAttributesClasses?: V1VolumeAttributesClass[];
  requests: VolumeExpansionRequest[];
  policies: VolumeExpansionPolicy[];
  clusterPolicies: ClusterVolumeExpansionPolicy[];
  /** For cluster policies' namespaceSelector. */
  namespaces?: V1Namespace[];
  /** Latest fresh sample per "namespace/pvc", when a usage source is available. */
  usage?: Map<string, UsageSample>;
}

export interface AuditOptions {
  now: Date;
  /** A resize stage lasting longer than this is stuck. Default defaultStuckAfterMs. */
  stuckAfterMs?: number;
  /** Used bytes / capacity at or above this is nearly full. Default 0.85. */
  nearlyFullRatio?: number;
  /** The driver profiles (--modification-budget); default defaultDriverProfiles. */
  profiles?: DriverProfiles;
}

/** pvx run's --audit-stuck-after and pvx audit's --stuck-after, when not given. */
export const defaultStuckAfterMs = parseDuration(runDefaults['audit-stuck-after']) as number;
export const defaultNearlyFullRatio = 0.85;

/** What every rule is handed: the claims, the usage samples and the options resolved. */
interface ClaimsView {
  claims: readonly V1PersistentVolumeClaim[];
  claimsIn(namespace: string): V1PersistentVolumeClaim[];
  /** Latest fresh sample per "namespace/pvc", when a usage source is available. */
  usage?: Map<string, UsageSample>;
  now: Date;
  stuckAfterMs: number;
  nearlyFullRatio: number;
  profiles: DriverProfiles;
}

/** What a rule may read beyond the claims, each a view of the snapshot a rule names to be handed. */
export interface ReadViews {
  persistentVolumes: { persistentVolume(name: string | undefined): V1PersistentVolume | undefined };
  storageClasses: {
    storageClass(name: string | undefined): V1StorageClass | undefined;
    /** The profile of the driver of the claim's class. */
    driverOf(pvc: V1PersistentVolumeClaim): DriverProfile;
  };
  /** Undefined when they could not be read (then a missing class is not reported as such). */
  volumeAttributesClasses: { volumeAttributesClasses: readonly V1VolumeAttributesClass[] | undefined };
  statefulSets: { statefulSets: readonly V1StatefulSet[] };
  resourceQuotas: { quotasIn(namespace: string): V1ResourceQuota[] };
  pods: {
    /** Names of the running pods that mount the claim. */
    runningPodsMounting(pvc: V1PersistentVolumeClaim): string[];
    /** Since when a running pod has mounted the claim (the earliest such pod's scheduling), if one does. */
    mountedSince(pvc: V1PersistentVolumeClaim): Date | undefined;
  };
  /** pvx's requests that target the claim. */
  requests: { requestsFor(pvc: V1PersistentVolumeClaim): VolumeExpansionRequest[] };
  /** The policies that select a claim (namespaced and cluster-wide, with the StatefulSets and namespaces they select by). */
  policies: {
    /** The policy that grows the claim, as a list of none or one (see claimPolicies). */
    policiesFor(pvc: V1PersistentVolumeClaim): GoverningPolicy[];
    /** The other policies that select the claim: those that leave it to the governing one, and those pvx cannot read. */
    otherPoliciesFor(pvc: V1PersistentVolumeClaim): { overlapping: GoverningPolicy[]; unreadable: GoverningPolicy[] };
  };
}
export type AuditRead = keyof ReadViews;
export const auditReads = [
  'persistentVolumes',
  'storageClasses',
  'volumeAttributesClasses',
  'statefulSets',
  'resourceQuotas',
  'pods',
  'requests',
  'policies',
] as const satisfies readonly AuditRead[];

/** The views R names, as one type (an intersection of ReadViews' members). */
type ViewsOf<R extends AuditRead> = (R extends AuditRead ? (view: ReadViews[R]) => void : never) extends (view: infer V) => void ? V : never;

/** What a rule that reads R is handed. */
export type RuleContext<R extends AuditRead = never> = ClaimsView & ViewsOf<R>;

/** The snapshot indexed once for all rules, with the options resolved: every view. */
export type AuditContext = RuleContext<AuditRead> & { snapshot: AuditSnapshot };

export function auditContext(snapshot: AuditSnapshot, opts: AuditOptions): AuditContext {
  const classes = new Map(snapshot.storageClasses.map((c) => [c.metadata?.name ?? '', c]));
  const pvs = new Map(snapshot.pvs.map((pv) => [pv.metadata?.name ?? '', pv]));
  // A pod's scheduling is when the kubelet could first mount (and so expand) its volumes.
  const scheduledAt = (pod: V1Pod) =>
    toDate(pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'True')?.lastTransitionTime ?? pod.metadata?.creationTimestamp);
  const mounts = snapshot.pods.flatMap((pod) =>
    runningPodClaims(pod).map((claim) => ({ claim: `${pod.metadata?.namespace}/${claim}`, pod: pod.metadata?.name ?? '', since: scheduledAt(pod) })),
  );
  const podsByClaim = groupBy(mounts, (m) => m.claim);
  const requestsByClaim = groupBy(snapshot.requests, requestClaimKey);
  const claimsByNamespace = groupBy(snapshot.pvcs, (pvc) => pvc.metadata?.namespace ?? '');
  const quotasByNamespace = groupBy(snapshot.resourceQuotas, (q) => q.metadata?.namespace ?? '');
  const lookups = selectionLookups(snapshot.namespaces ?? [], snapshot.statefulSets);
  const policiesIn = policiesByNamespace(snapshot.policies);
  const selected = new Map<string, { governing: GoverningPolicy[]; overlapping: GoverningPolicy[]; unreadable: GoverningPolicy[] }>();
  const named = (g: SelectedPolicy): GoverningPolicy => ({ kind: g.kind, name: g.policy.metadata.name ?? '', spec: g.policy.spec });
  // Several rules ask for each claim: selected once.
  const selection = (pvc: V1PersistentVolumeClaim) => {
    const key = objectKey(pvc);
    let found = selected.get(key);
    if (!found) {
      const c = claimPolicies(pvc, policiesIn(pvc.metadata?.namespace), snapshot.clusterPolicies, lookups);
      found = { governing: c.governing ? [named(c.governing)] : [], overlapping: c.overlapping.map(named), unreadable: c.unreadable.map(named) };
      selected.set(key, found);
    }
    return found;
  };
  const profiles = opts.profiles ?? defaultDriverProfiles;
  return {
    snapshot,
    claims: snapshot.pvcs,
    usage: snapshot.usage,
    statefulSets: snapshot.statefulSets,
    volumeAttributesClasses: snapshot.volumeAttributesClasses,
    now: opts.now,
    stuckAfterMs: opts.stuckAfterMs ?? defaultStuckAfterMs,
    nearlyFullRatio: opts.nearlyFullRatio ?? defaultNearlyFullRatio,
    storageClass: (name) => (name ? classes.get(name) : undefined),
    driverOf: (pvc) => profiles(classes.get(pvc.spec?.storageClassName ?? '')?.provisioner),
    profiles,
    persistentVolume: (name) => (name ? pvs.get(name) : undefined),
    runningPodsMounting: (pvc) => (podsByClaim.get(objectKey(pvc)) ?? []).map((m) => m.pod),
    mountedSince: (pvc) =>
      (podsByClaim.get(objectKey(pvc)) ?? [])
        .map((m) => m.since)
        .filter((d): d is Date => d !== undefined)
        .sort((a, b) => a.getTime() - b.getTime())[0],
    requestsFor: (pvc) => requestsByClaim.get(objectKey(pvc)) ?? [],
    claimsIn: (ns) => claimsByNamespace.get(ns) ?? [],
    quotasIn: (ns) => quotasByNamespace.get(ns) ?? [],
    policiesFor: (pvc) => selection(pvc).governing,
    otherPoliciesFor: (pvc) => selection(pvc),
  };
}

// --- shared readings of a claim --------------------------------------------------------------

/** The claim's size fields pvx cannot read, each with its value and why. */
function unreadableSizes(pvc: V1PersistentVolumeClaim): { field: string; value: string; why: string }[] {
  const fields: [string, string | undefined][] = [
    ['spec.resources.requests.storage', pvc.spec?.resources?.requests?.storage],
    ['status.capacity.storage', pvc.status?.capacity?.storage],
    ['status.allocatedResources.storage', pvc.status?.allocatedResources?.storage],
  ];
  return fields.flatMap(([field, value]) => {
    if (value === undefined) return [];
    try {
      parseBytes(value);
      return [];
    } catch (err) {
      if (err instanceof QuantityError) return [{ field, value, why: err.message }];
      throw err;
    }
  });
}

const sizeText = (text: string | undefined): string => {
  const b = readBytes(text);
  return b === undefined ? (text ?? '?') : formatBytes(b);
};

/** "requests 20Gi, capacity 10Gi" — the figures every resize message needs. */
function sizes(pvc: V1PersistentVolumeClaim): string {
  return `requests ${sizeText(pvc.spec?.resources?.requests?.storage)}, capacity ${sizeText(pvc.status?.capacity?.storage)}`;
}

const iso = (d: Date | undefined) => d?.toISOString();

function finding(
  rule: RuleId,
  object: { namespace: string; kind: string; name: string },
  message: string,
  extra: { remedy?: string; since?: Date } = {},
): Finding {
  const r = ruleById.get(rule) as AuditRule;
  return { rule, severity: r.severity, ...object, message, remedy: extra.remedy ?? r.remedy, ...(extra.since ? { since: iso(extra.since) } : {}) };
}

const claimRef = (pvc: V1PersistentVolumeClaim) => ({
  namespace: pvc.metadata?.namespace ?? '',
  kind: 'PersistentVolumeClaim',
  name: pvc.metadata?.name ?? '',
});

// --- policies that grow a claim --------------------------------------------------------------

/** A policy that grows a claim (src/policies/autoscale/selection.ts decides which), as the rules need it. */
export interface GoverningPolicy {
  kind: 'VolumeExpansionPolicy' | 'ClusterVolumeExpansionPolicy';
  name: string;
  /** Triggers are set on every policy that grows a claim (a cluster policy without them only carries guardrails). */
  spec: Pick<PolicySpec, 'step' | 'maxSize' | 'mode' | 'cooldown' | 'windows'> & { triggers?: PolicySpec['triggers'] };
}

/** A policy in DryRun selects a claim but never grows it. */
const grows = (p: GoverningPolicy) => p.spec.mode !== 'DryRun';

// --- the rules -------------------------------------------------------------------------------

function classNotExpandable(ctx: RuleContext<'storageClasses'>): Finding[] {
  return ctx.claims.flatMap((pvc) => {
    if (pvc.status?.phase !== 'Bound') return [];
    const className = pvc.spec?.storageClassName;
    const name = pvc.metadata?.name;
    if (!className) {
      return [finding('class-not-expandable', claimRef(pvc), `${name} has no StorageClass (statically provisioned): Kubernetes cannot expand it`)];
    }
    const sc = ctx.storageClass(className);
    if (!sc)
      return [finding('class-not-expandable', claimRef(pvc), `StorageClass ${className} of ${name} does not exist: Kubernetes refuses to expand the claim`)];
    if (sc.allowVolumeExpansion === true) return [];
    return [
      finding(
        'class-not-expandable',
        claimRef(pvc),
        `StorageClass ${className} of ${name} (${sizeText(pvc.status?.capacity?.storage)}) has allowVolumeExpansion ${sc.allowVolumeExpansion ?? 'unset'}: the claim cannot grow`,
      ),
    ];
  });
}

function resizeStuck(ctx: RuleContext<'pods'>): Finding[] {
  return ctx.claims.flatMap((pvc) => {
    const state = resizeState(pvc);
    if (!state?.since || (state.stage !== 'controller' && state.stage !== 'node')) return [];
    const pods = ctx.runningPodsMounting(pvc);
    // A node stage without a running pod is not stuck: it waits for one (waiting-for-pod).
    if (state.stage === 'node' && pods.length === 0) return [];
    // The node stage can only progress once a pod mounts the claim: a claim that waited for a pod
    // for hours is not "stuck for hours" the moment one starts.
    const mounted = state.stage === 'node' ? ctx.mountedSince(pvc) : undefined;
    const since = mounted && mounted > state.since ? mounted : state.since;
    const forMs = ctx.now.getTime() - since.getTime();
    if (forMs <= ctx.stuckAfterMs) return [];
    const name = pvc.metadata?.name;
    const what =
      state.stage === 'controller'
        ? `in the controller stage (${state.reason}): the storage backend has not finished expanding the volume`
        : `in the node stage (${state.reason}): the filesystem has not grown although pod ${pods.join(', ')} runs with it`;
    const remedy =
      state.stage === 'controller'
        ? `Run kubectl describe pvc ${name} -n ${pvc.metadata?.namespace} and read the external-resizer's log for ControllerExpandVolume errors of this volume.`
        : `Read the kubelet's log on the node of pod ${pods[0]} for NodeExpandVolume errors; deleting and re-creating the pod retries the filesystem expansion.`;
    return [finding('resize-stuck', claimRef(pvc), `${name}: stuck for ${humanDuration(forMs)} ${what} (${sizes(pvc)})`, { remedy, since })];
  });
}

function waitingForPod(ctx: RuleContext<'pods'>): Finding[] {
  return ctx.claims.flatMap((pvc) => {
    const state = resizeState(pvc);
    if (state?.stage !== 'node' || ctx.runningPodsMounting(pvc).length > 0) return [];
    const name = pvc.metadata?.name;
    const allocated = pvc.status?.allocatedResources?.storage ?? pvc.spec?.resources?.requests?.storage;
    return [
      finding(
        'waiting-for-pod',
        claimRef(pvc),
        `${name}: the volume grew to ${sizeText(allocated)} but its filesystem (capacity ${sizeText(pvc.status?.capacity?.storage)}) grows only when a pod mounts the claim, and no running pod does (${state.reason}${state.since ? ` for ${humanDuration(ctx.now.getTime() - state.since.getTime())}` : ''})`,
        {
          remedy: `Start a pod that mounts ${name} (or scale its workload up): the kubelet then grows the filesystem and the expansion completes.`,
          since: state.since,
        },
      ),
    ];
  });
}

function resizeInfeasible(ctx: RuleContext): Finding[] {
  return ctx.claims.flatMap((pvc) => {
    const state = resizeState(pvc);
    if (state?.stage !== 'infeasible') return [];
    const error = trueCondition(pvc, ...errorConditions);
    const name = pvc.metadata?.name;
    const capacity = sizeText(pvc.status?.capacity?.storage);
    return [
      finding('resize-infeasible', claimRef(pvc), `${name}: the resize is ${state.reason} (${sizes(pvc)})${error?.message ? `: ${error.message}` : ''}`, {
        remedy: `Lower ${name}'s spec.resources.requests.storage to a size the driver can provide, above ${capacity} (allowed after an infeasible resize), or let pvx do it: a VolumeExpansionRequest with recovery: Auto.`,
        since: state.since,
      }),
    ];
  });
}

/**
 * A resize the driver keeps failing, and for how long. The error condition's time moves with every
 * retry (the resizer writes it again), so it dates only the latest attempt: the failure is dated
 * by when pvx first saw it (its request's status.errorSince), else bounded by when the size was
 * asked for (the claim's managedFields) — never by the latest retry alone.
 */
function resizeError(ctx: RuleContext<'requests'>): Finding[] {
  return ctx.claims.flatMap((pvc) => {
    const error = trueCondition(pvc, ...errorConditions);
    // An infeasible resize carries its error condition; resize-infeasible reports it with the message.
    if (!error || resizeState(pvc)?.stage === 'infeasible') return [];
    const latest = toDate(error.lastTransitionTime);
    const firstSeen = ctx
      .requestsFor(pvc)
      .filter((r) => !isFinished(r) && r.status?.errorSince)
      .map((r) => toDate(r.status?.errorSince))
      .filter((d): d is Date => d !== undefined)
      .sort((a, b) => a.getTime() - b.getTime())[0];
    const asked = lastWriter(pvc, 'size')?.at;
    const ago = (d: Date) => humanDuration(ctx.now.getTime() - d.getTime());
    const age = firstSeen
      ? ` for ${ago(firstSeen)}`
      : asked && (!latest || asked < latest)
        ? ` since the resize was asked for ${ago(asked)} ago${latest ? ` (latest attempt ${ago(latest)} ago)` : ''}`
        : latest
          ? ` for ${ago(latest)}`
          : '';
    return [
      finding('resize-error', claimRef(pvc), `${pvc.metadata?.name}: ${error.type} (${sizes(pvc)})${age}: ${error.message ?? 'no message'}`, {
        since: firstSeen ?? (asked && (!latest || asked < latest) ? asked : latest),
      }),
    ];
  });
}

function capacityMismatch(ctx: RuleContext<'persistentVolumes'>): Finding[] {
  return ctx.claims.flatMap((pvc) => {
    if (pvc.status?.phase !== 'Bound' || resizeState(pvc)) return [];
    const pv = ctx.persistentVolume(pvc.spec?.volumeName);
    const pvBytes = readBytes(pv?.spec?.capacity?.storage);
    const claimBytes = readBytes(pvc.status?.capacity?.storage);
    if (pvBytes === undefined || claimBytes === undefined || pvBytes === claimBytes) return [];
    const pvName = pv?.metadata?.name;
    // The resizer's record of the capacity before an expansion whose node step is still to come.
    const before = preResizeCapacity(pv);
    const pending =
      before !== undefined && before === claimBytes
        ? `; the volume was grown from ${formatBytes(before)} (its ${kubernetesAnnotations.preResizeCapacity}) and its filesystem not yet`
        : '';
    return [
      finding(
        'capacity-mismatch',
        claimRef(pvc),
        `PersistentVolume ${pvName} has ${formatBytes(pvBytes)} but ${pvc.metadata?.name} reports a capacity of ${formatBytes(claimBytes)}, and no resize is in progress${pending}`,
        {
          remedy: `Compare kubectl get pv ${pvName} -o yaml with the claim: a resize that ended half-way finishes when a pod mounts the claim again (re-create its pod); a PersistentVolume edited by hand needs its capacity set back.`,
        },
      ),
    ];
  });
}

function nearlyFullUncovered(ctx: RuleContext<'policies'>): Finding[] {
  const usage = ctx.usage;
  if (!usage) return [];
  return ctx.claims.flatMap((pvc) => {
    const sample = usage.get(objectKey(pvc));
    const capacity = readBytes(pvc.status?.capacity?.storage);
    if (!sample || capacity === undefined || ctx.policiesFor(pvc).some(grows)) return [];
    // The autoscaler's own reading of a sample: stale samples, and sources that report another
    // filesystem's capacity (hostpath), tell nothing about the volume.
    const reading = decideAutoscale({
      spec: { usedRatio: ctx.nearlyFullRatio, sustainedSamples: 1 },
      capacityBytes: capacity,
      expansionInFlight: false,
      samples: [sample],
      modifications: [],
      now: ctx.now,
    });
    if (reading.kind === 'unknown' || reading.kind === 'idle') return [];
    const percent = (usedRatio(sample) * 100).toFixed(1);
    const name = pvc.metadata?.name;
    return [
      finding(
        'nearly-full-uncovered',
        claimRef(pvc),
        `${name} is ${percent}% full (${humanBytes(sample.usedBytes)} of ${humanBytes(sample.capacityBytes)} used, ${humanBytes(sample.capacityBytes - sample.usedBytes)} free) and no VolumeExpansionPolicy or ClusterVolumeExpansionPolicy with triggers grows it (one in DryRun only reports)`,
        {
          remedy: `Grow ${name} now with a VolumeExpansionRequest, or create a VolumeExpansionPolicy in ${pvc.metadata?.namespace} that selects it so it grows before it fills.`,
        },
      ),
    ];
  });
}

function quotaHeadroom(ctx: RuleContext<'resourceQuotas' | 'policies' | 'storageClasses'>): Finding[] {
  return ctx.claims.flatMap((pvc) => {
    const capacity = readBytes(pvc.status?.capacity?.storage);
    // The validation below reads every size of the claim; an unreadable one is claim-unreadable's finding.
    if (capacity === undefined || unreadableSizes(pvc).length > 0) return [];
    const ns = pvc.metadata?.namespace ?? '';
    const name = pvc.metadata?.name ?? '';
    const quotas = ctx.quotasIn(ns);
    if (quotas.length === 0) return [];
    return ctx
      .policiesFor(pvc)
      .filter(grows)
      .flatMap((policy) => {
        const target = nextStepBytes(capacity, stepSpec(policy.spec));
        if (target <= capacity) return [];
        // The request the policy would create next, through the same validation the operator runs.
        const verdict = validateRequest({
          spec: { size: formatBytes(target) },
          pvcName: name,
          pvc,
          storageClass: ctx.storageClass(pvc.spec?.storageClassName),
          quotas,
          earlierActiveRequests: [],
          modifications: [],
          profiles: ctx.profiles,
          now: ctx.now,
        });
        if (verdict.kind !== 'reject' || verdict.reason !== 'QuotaExceeded') return [];
        return [
          finding(
            'quota-headroom',
            claimRef(pvc),
            `the next expansion by ${policy.kind} ${policy.name} (${formatBytes(capacity)} → ${formatBytes(target)}) would be rejected: ${verdict.message}`,
          ),
        ];
      });
  });
}

function driverBudgetExhausted(ctx: RuleContext<'storageClasses' | 'requests'>): Finding[] {
  return ctx.claims.flatMap((pvc) => {
    const driver = ctx.driverOf(pvc);
    const budget = driver.modificationBudget;
    if (!budget) return [];
    const modifications = claimModifications(pvc, budget, ctx.requestsFor(pvc), ctx.now);
    const nextAt = nextModificationAt(
      budget,
      modifications.map((m) => m.at),
      ctx.now,
    );
    if (!nextAt) return [];
    const last = modifications.reduce((a, b) => (b.at > a.at ? b : a));
    const name = pvc.metadata?.name as string;
    return [
      finding(
        'driver-budget-exhausted',
        claimRef(pvc),
        `${budgetExhaustedMessage(driver.name, name, budget, modifications, nextAt, ctx.now)} (in ${humanDuration(nextAt.getTime() - ctx.now.getTime())})`,
        {
          remedy:
            budget.counts === 'performance'
              ? `No VolumeAttributesClass change of ${name} can succeed before ${nextAt.toISOString()}; a change of its size alone still can.`
              : `No expansion of ${name} can succeed before ${nextAt.toISOString()}; if it may fill sooner, free space in it or move load off it.`,
          since: last.at,
        },
      ),
    ];
  });
}

/** What to do about a template smaller than its claims (`size`: the largest): pvx's opt-in, or, for a StatefulSet a GitOps tool manages, its source. */
export function driftRemedy(sts: V1StatefulSet, templateName: string, largest: bigint | undefined): string {
  const stsName = sts.metadata?.name ?? '';
  const manager = otherManager(sts);
  const size = largest === undefined ? 'the claims’ size' : formatBytes(largest);
  return manager
    ? `StatefulSet ${stsName} is ${manager.who}: change volumeClaimTemplate ${templateName} to ${size} in its source. The sync then fails on the immutable field: delete the StatefulSet with kubectl delete statefulset ${stsName} -n ${sts.metadata?.namespace} --cascade=orphan (its pods and claims stay) and let the tool create it again from the source. pvx leaves a managed StatefulSet alone unless a request says spec.statefulSetTemplate.evenIfManaged.`
    : `Let pvx carry ${size} into the template: a VolumeExpansionRequest on StatefulSet ${stsName} (template ${templateName}, size ${size}) with spec.statefulSetTemplate.update (its RBAC is an opt-in: chart value statefulSetTemplates.enabled); or by hand, delete it with --cascade=orphan and create it again with the new size.`;
}

function statefulSetSizeDrift(ctx: RuleContext<'statefulSets'>): Finding[] {
  return ctx.statefulSets.flatMap((sts) => {
    const ns = sts.metadata?.namespace ?? '';
    const stsName = sts.metadata?.name ?? '';
    return (sts.spec?.volumeClaimTemplates ?? []).flatMap((template) => {
      const templateName = template.metadata?.name ?? '';
      const templateSize = readBytes(template.spec?.resources?.requests?.storage);
      const claims = ctx
        .claimsIn(ns)
        .filter((pvc) => isStatefulSetClaim(pvc.metadata?.name ?? '', stsName, templateName))
        .map((pvc) => ({ name: pvc.metadata?.name ?? '', bytes: readBytes(pvc.spec?.resources?.requests?.storage) }))
        .sort((a, b) => a.name.localeCompare(b.name, undefined, { numeric: true }));
      const distinct = new Set([templateSize, ...claims.map((c) => c.bytes)].map(String));
      if (claims.length === 0 || distinct.size <= 1) return [];
      const listed = claims.map((c) => `${c.name} ${c.bytes === undefined ? '?' : formatBytes(c.bytes)}`).join(', ');
      const templateText = templateSize === undefined ? 'no size' : formatBytes(templateSize);
      const largest = claims.reduce<bigint | undefined>((a, c) => (c.bytes !== undefined && (a === undefined || c.bytes > a) ? c.bytes : a), undefined);
      const remedy = driftRemedy(sts, templateName, largest);
      return [
        finding(
          'statefulset-size-drift',
          { namespace: ns, kind: 'StatefulSet', name: stsName },
          `volumeClaimTemplate ${templateName} requests ${templateText} but its claims request ${listed}: new replicas start at ${templateText}`,
          { remedy },
        ),
      ];
    });
  });
}

/**
 * Who last set the claim's size, from managedFields: of the entries that own
 * spec.resources.requests.storage, the most recent. Whoever created the claim owns it from the
 * start, so only a claim that has been expanded counts — one with status.allocatedResources
 * (the resizer sets it on the first expansion) or a request above its capacity — and a size
 * equal to what pvx wrote (its target-size or recovered-to annotation) was pvx's doing, even if
 * another manager wrote the same value again since.
 */
function resizedOutsidePvx(ctx: RuleContext): Finding[] {
  return ctx.claims.flatMap((pvc) => {
    const requested = readBytes(pvc.spec?.resources?.requests?.storage);
    const capacity = readBytes(pvc.status?.capacity?.storage);
    if (requested === undefined) return [];
    const expanded = pvc.status?.allocatedResources?.storage !== undefined || (capacity !== undefined && requested > capacity);
    if (!expanded) return [];
    const anns = pvc.metadata?.annotations ?? {};
    if (sizeSetByPvx(pvc, requested)) return [];
    const latest = lastWriter(pvc, 'size');
    if (!latest) return [];
    const at = latest.at;
    const name = pvc.metadata?.name;
    const pvxLast = anns[pvcAnnotations.targetSize] ? ` (pvx last set ${sizeText(anns[pvcAnnotations.targetSize])})` : '';
    return [
      finding(
        'resized-outside-pvx',
        claimRef(pvc),
        `${name}'s size ${formatBytes(requested)} was last set by ${latest.manager} (${latest.operation ?? 'unknown operation'}${at ? ` at ${at.toISOString()}` : ''}), not by pvx${pvxLast}`,
        { since: at },
      ),
    ];
  });
}

/**
 * One finding per claim with sizes pvx cannot read, naming each field and value. The other rules
 * read sizes tolerantly (an unreadable size leaves out only what needs it), so one such claim
 * never stops the audit of the others.
 */
function claimUnreadable(ctx: RuleContext): Finding[] {
  return ctx.claims.flatMap((pvc) => {
    const unreadable = unreadableSizes(pvc);
    if (unreadable.length === 0) return [];
    const what = unreadable.map((u) => `${u.field} "${u.value}" (${u.why})`).join(', ');
    return [
      finding('claim-unreadable', claimRef(pvc), `${pvc.metadata?.name}: pvx cannot read ${what}: the decisions that need these sizes leave the claim out`),
    ];
  });
}

/**
 * When pvx patched the claim to the class it asks for now (its latest request that did), the start
 * of a change the claim's status does not date (Pending, or not taken up).
 */
function classPatchedAt(ctx: RuleContext<'requests'>, pvc: V1PersistentVolumeClaim, target: string): Date | undefined {
  return ctx
    .requestsFor(pvc)
    .filter((r) => r.spec?.volumeAttributesClassName === target && r.metadata?.uid === pvc.metadata?.annotations?.[pvcAnnotations.requestUID])
    .map((r) => toDate(r.status?.timeline?.patchedAt))
    .filter((d): d is Date => d !== undefined)
    .sort((a, b) => b.getTime() - a.getTime())[0];
}

/**
 * A claim whose VolumeAttributesClass change has not ended for longer than the stuck threshold:
 * InProgress since its ModifyingVolume condition, or Pending / not taken up by the resizer since
 * pvx's patch. A class that does not exist cannot ever be applied: reported at once, whoever asked.
 */
function modifyStuck(ctx: RuleContext<'volumeAttributesClasses' | 'requests' | 'storageClasses'>): Finding[] {
  return ctx.claims.flatMap((pvc) => {
    const target = specClass(pvc);
    if (!target) return [];
    const state = modificationState(pvc, target);
    if (state.stage !== 'inProgress' && state.stage !== 'pending' && state.stage !== 'requested' && state.stage !== 'unknown') return [];
    const name = pvc.metadata?.name;
    const ns = pvc.metadata?.namespace;
    const applied = `applied: ${currentClass(pvc) ?? 'none'}`;
    const missing = ctx.volumeAttributesClasses !== undefined && !ctx.volumeAttributesClasses.some((c) => c.metadata?.name === target);
    if (missing && state.stage !== 'inProgress') {
      const driver = ctx.storageClass(pvc.spec?.storageClassName)?.provisioner;
      return [
        finding(
          'modify-stuck',
          claimRef(pvc),
          `${name} asks for VolumeAttributesClass ${target}, which does not exist: the change cannot start (${state.status ?? 'not taken up'}; ${applied})`,
          {
            remedy: `Create VolumeAttributesClass ${target}${driver ? ` for driver ${driver}` : ''}, or set ${name}'s spec.volumeAttributesClassName back to ${currentClass(pvc) ?? 'none (remove it)'}.`,
          },
        ),
      ];
    }
    const since =
      state.stage === 'inProgress' || state.stage === 'unknown' ? (state.since ?? classPatchedAt(ctx, pvc, target)) : classPatchedAt(ctx, pvc, target);
    if (!since) return [];
    const forMs = ctx.now.getTime() - since.getTime();
    if (forMs <= ctx.stuckAfterMs) return [];
    // Drivers limit how often a volume may be modified: the claim's driver's budget, as its profile has it.
    const driver = ctx.driverOf(pvc);
    const budget = driver.modificationBudget;
    const what =
      state.stage === 'requested'
        ? "the external resizer has not taken it up (no modifyVolumeStatus): does the driver's resizer support VolumeAttributesClasses?"
        : `modifyVolumeStatus ${state.status}${state.stage === 'unknown' ? ' (a value this version of pvx does not know, shown as the API server has it)' : ''}${state.error ? `; the driver last said: ${state.error}` : ''}`;
    return [
      finding(
        'modify-stuck',
        claimRef(pvc),
        `${name}: the change to VolumeAttributesClass ${target} has not been applied for ${humanDuration(forMs)} (${applied}); ${what}`,
        {
          remedy: `Run kubectl describe pvc ${name} -n ${ns} and read the external-resizer's log for ControllerModifyVolume errors of this volume${budget ? ` (its driver ${driver.name} allows ${budgetText(budget)})` : ''}.`,
          since,
        },
      ),
    ];
  });
}

/** A claim whose VolumeAttributesClass the driver refused as infeasible: with what to set it back to. */
function modifyInfeasible(ctx: RuleContext): Finding[] {
  return ctx.claims.flatMap((pvc) => {
    const target = specClass(pvc);
    const state = target ? modificationState(pvc, target) : undefined;
    if (state?.stage !== 'infeasible') return [];
    const name = pvc.metadata?.name;
    const previous = currentClass(pvc);
    const back = previous ? `back to ${previous}` : 'back to none (remove it: the claim had no class)';
    const error = trueCondition(pvc, modifyErrorCondition);
    return [
      finding(
        'modify-infeasible',
        claimRef(pvc),
        `${name}: the driver refused VolumeAttributesClass ${target} as infeasible (applied: ${previous ?? 'none'})${state.error ? `: ${state.error}` : ''}`,
        {
          remedy: `Set ${name}'s spec.volumeAttributesClassName ${back} to cancel the change (kubectl patch pvc ${name} -n ${pvc.metadata?.namespace} --type merge), or to a class the driver accepts; the external resizer retries ${target} only slowly meanwhile.`,
          since: toDate(error?.lastTransitionTime),
        },
      ),
    ];
  });
}

/** A claim several namespaced policies select: which one grows it, and which leave it alone. */
function policyOverlap(ctx: RuleContext<'policies'>): Finding[] {
  return ctx.claims.flatMap((pvc) => {
    const { overlapping } = ctx.otherPoliciesFor(pvc);
    const [governing] = ctx.policiesFor(pvc);
    if (!governing || overlapping.length === 0) return [];
    const others = overlapping.map((p) => `vep/${p.name}`).join(', ');
    return [
      finding(
        'policy-overlap',
        claimRef(pvc),
        `${pvc.metadata?.name} is selected by vep/${governing.name} and by ${others}: vep/${governing.name} (the oldest that acts) grows it; ${others} leave${overlapping.length === 1 ? 's' : ''} it alone`,
      ),
    ];
  });
}

const rank = (s: Severity) => severities.indexOf(s);

/** Most severe first, then by namespace, name and rule, so output is stable. */
export function sortFindings(findings: readonly Finding[]): Finding[] {
  return [...findings].sort(
    (a, b) => rank(b.severity) - rank(a.severity) || a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name) || a.rule.localeCompare(b.rule),
  );
}

export function audit(snapshot: AuditSnapshot, opts: AuditOptions): Finding[] {
  const ctx = auditContext(snapshot, opts);
  return sortFindings(auditRules.flatMap((r) => r.check(ctx)));
}

export function atOrAbove(findings: Finding[], s: Severity): Finding[] {
  return findings.filter((f) => rank(f.severity) >= rank(s));
}
