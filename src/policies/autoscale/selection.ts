// Which policy grows a PVC — one definition for the operator's policy evaluator, the audit,
// `pvx why`, `pvx df` and `pvx plan` (claimPolicies says how it is chosen). Cluster policies
// without triggers carry guardrails only.
import type { V1Namespace, V1PersistentVolumeClaim, V1StatefulSet } from '@kubernetes/client-node';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import type { PolicySpec, VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import { policySpecProblem } from './decide.ts';
import { groupBy } from '../shared/collections.ts';
import { matchesLabels } from '../shared/labels.ts';
import { isStatefulSetClaim } from '../claim/statefulset.ts';

export interface SelectionLookups {
  namespaceLabels(namespace: string): Record<string, string> | undefined;
  statefulSet(namespace: string, name: string): V1StatefulSet | undefined;
}

/** Lookups over lists read once (a snapshot): namespaces by name, StatefulSets by namespace/name. */
export function selectionLookups(namespaces: readonly V1Namespace[], statefulSets: readonly V1StatefulSet[]): SelectionLookups {
  const labels = new Map(namespaces.map((n) => [n.metadata?.name ?? '', n.metadata?.labels ?? {}]));
  const sets = new Map(statefulSets.map((s) => [`${s.metadata?.namespace}/${s.metadata?.name}`, s]));
  return { namespaceLabels: (ns) => labels.get(ns), statefulSet: (ns, name) => sets.get(`${ns}/${name}`) };
}

export type GoverningPolicy =
  { kind: 'VolumeExpansionPolicy'; policy: VolumeExpansionPolicy } | { kind: 'ClusterVolumeExpansionPolicy'; policy: ClusterVolumeExpansionPolicy };

/** What both kinds select on: a bound claim, its labels, its StorageClass. */
function selectsClaim(spec: Pick<PolicySpec, 'selector' | 'storageClassNames'>, pvc: V1PersistentVolumeClaim): boolean {
  if (pvc.status?.phase !== 'Bound') return false;
  if (!matchesLabels(spec.selector?.matchLabels, pvc.metadata?.labels ?? {})) return false;
  const classes = spec.storageClassNames;
  return !classes?.length || classes.includes(pvc.spec?.storageClassName ?? '');
}

export function policySelects(p: VolumeExpansionPolicy, pvc: V1PersistentVolumeClaim, lookups: SelectionLookups): boolean {
  const ns = pvc.metadata?.namespace ?? '';
  if (p.metadata.namespace !== ns) return false;
  const sts = p.spec.statefulSetName;
  if (sts) {
    const templates = (lookups.statefulSet(ns, sts)?.spec?.volumeClaimTemplates ?? []).map((t) => t.metadata?.name ?? '');
    if (!templates.some((t) => isStatefulSetClaim(pvc.metadata?.name ?? '', sts, t))) return false;
  }
  return selectsClaim(p.spec, pvc);
}

/**
 * Namespaced policies by namespace: a claim is selected by its own namespace's policies only
 * (policySelects), so a pass over every claim asks each about those alone. One namespace's
 * thousands of policies then cost its own claims, not every namespace's (4,000 policies beside
 * 4,000 claims of other namespaces were 16 million selections a pass).
 */
export function policiesByNamespace(policies: readonly VolumeExpansionPolicy[]): (namespace: string | undefined) => readonly VolumeExpansionPolicy[] {
  const index = groupBy(policies, (p) => p.metadata.namespace ?? '');
  // Oldest first, once, and indexed by what each selects: claimPolicies walks a claim's candidates in order and stops early.
  for (const list of index.values()) {
    list.sort(olderFirst);
    candidateIndexes.set(list, candidateIndex(list));
  }
  return (namespace) => index.get(namespace ?? '') ?? [];
}

export function clusterPolicySelects(p: ClusterVolumeExpansionPolicy, pvc: V1PersistentVolumeClaim, lookups: SelectionLookups): boolean {
  return (
    Boolean(p.spec.triggers) &&
    matchesLabels(p.spec.namespaceSelector?.matchLabels, lookups.namespaceLabels(pvc.metadata?.namespace ?? '')) &&
    selectsClaim(p.spec, pvc)
  );
}

/** A policy's creationTimestamp in ms, read once per object: a pass compares each policy many times. */
const createdAtMs = new WeakMap<VolumeExpansionPolicy, number>();
function createdAt(p: VolumeExpansionPolicy): number {
  let ms = createdAtMs.get(p);
  if (ms === undefined) {
    ms = new Date((p.metadata.creationTimestamp as unknown as string | Date | undefined) ?? 0).getTime() || 0;
    createdAtMs.set(p, ms);
  }
  return ms;
}

/** Oldest first: creationTimestamp, then name (a policy created in the same second). */
function olderFirst(a: VolumeExpansionPolicy, b: VolumeExpansionPolicy): number {
  return createdAt(a) - createdAt(b) || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');
}

/**
 * Of the other policies over one claim, this many show it as governed by the one that grows it
 * (the oldest first); any more leave it out of their status. Every policy of a namespace may
 * select every claim of it: listed in each, 2,000 policies over 2,000 claims were four million
 * volumes a pass (36 s and 2 GiB, every namespace waiting).
 */
export const maxOverlappingPolicies = 8;

/** The policy that grows a claim, and the other namespaced policies that select it and leave it alone. */
export interface ClaimPolicies {
  governing?: GoverningPolicy;
  /** Namespaced policies that select the claim too: each shows it as governed by another, and the audit reports the overlap. */
  overlapping: GoverningPolicy[];
  /** Policies that select the claim but whose rules pvx cannot read: they decide nothing (their status says why). */
  unreadable: GoverningPolicy[];
}

/**
 * Which of a namespace's policies (positions in its list, oldest first) may select a claim: each
 * policy filed under one thing a claim must have for it to select it — its selector's first label,
 * else its StatefulSet, else each of its storage classes — or, with none of these, under every
 * claim. A claim's candidates are then those filed under its labels, its name's possible
 * StatefulSets and its class: a namespace's thousands of policies that each select a few claims
 * (or none) cost a claim the few that might, not all of them.
 */
interface CandidateIndex {
  everyClaim: number[];
  byKey: Map<string, number[]>;
}

const candidateIndexes = new WeakMap<readonly VolumeExpansionPolicy[], CandidateIndex>();

function candidateIndex(sorted: readonly VolumeExpansionPolicy[]): CandidateIndex {
  const index: CandidateIndex = { everyClaim: [], byKey: new Map() };
  const file = (key: string, at: number) => {
    const filed = index.byKey.get(key);
    if (filed) filed.push(at);
    else index.byKey.set(key, [at]);
  };
  sorted.forEach((p, at) => {
    const label = Object.entries(p.spec.selector?.matchLabels ?? {}).sort(([a], [b]) => a.localeCompare(b))[0];
    if (label) file(`label ${label[0]}=${label[1]}`, at);
    else if (p.spec.statefulSetName) file(`statefulset ${p.spec.statefulSetName}`, at);
    else if (p.spec.storageClassNames?.length) for (const c of new Set(p.spec.storageClassNames)) file(`class ${c}`, at);
    else index.everyClaim.push(at);
  });
  return index;
}

/** The keys a claim is filed under: its labels, each StatefulSet its name may belong to (TEMPLATE-STATEFULSET-ORDINAL), its class. */
function claimKeys(pvc: V1PersistentVolumeClaim): string[] {
  const labels = Object.entries(pvc.metadata?.labels ?? {}).map(([k, v]) => `label ${k}=${v}`);
  const parts = (pvc.metadata?.name ?? '').split('-');
  const statefulSets =
    parts.length >= 3 && /^\d+$/.test(parts.at(-1) ?? '') ? parts.slice(1, -1).map((_, i, rest) => `statefulset ${rest.slice(i).join('-')}`) : [];
  return [...labels, ...statefulSets, `class ${pvc.spec?.storageClassName ?? ''}`];
}

/** The policies that may select the claim, oldest first (a superset of those that do). */
function candidates(sorted: readonly VolumeExpansionPolicy[], index: CandidateIndex, pvc: V1PersistentVolumeClaim): VolumeExpansionPolicy[] {
  const at = new Set(index.everyClaim);
  for (const key of claimKeys(pvc)) for (const i of index.byKey.get(key) ?? []) at.add(i);
  return [...at].sort((a, b) => a - b).map((i) => sorted[i] as VolumeExpansionPolicy);
}

/**
 * The namespaced policies that select the claim, oldest first: those pvx can read, and those it
 * cannot (maxOverlappingPolicies of them). Walked in age order, it stops once it holds one that
 * acts and maxOverlappingPolicies more — all claimPolicies uses — so a namespace's every policy
 * over its every claim costs each claim a few policies, not all of them.
 */
function namespacedSelection(
  pvc: V1PersistentVolumeClaim,
  policies: readonly VolumeExpansionPolicy[],
  lookups: SelectionLookups,
): { namespaced: VolumeExpansionPolicy[]; unreadable: GoverningPolicy[] } {
  // An unbound claim is selected by no policy (selectsClaim): nothing to walk.
  if (pvc.status?.phase !== 'Bound') return { namespaced: [], unreadable: [] };
  const index = candidateIndexes.get(policies);
  const ordered = index ? candidates(policies, index, pvc) : policies.filter((p) => policySelects(p, pvc, lookups)).sort(olderFirst);
  const namespaced: VolumeExpansionPolicy[] = [];
  const unreadable: GoverningPolicy[] = [];
  let acting = false;
  for (const policy of ordered) {
    if (acting && namespaced.length > maxOverlappingPolicies) break;
    if (!policySelects(policy, pvc, lookups)) continue;
    if (policySpecProblem(policy.spec) !== undefined) {
      if (unreadable.length < maxOverlappingPolicies) unreadable.push({ kind: 'VolumeExpansionPolicy', policy });
      continue;
    }
    const acts = policy.spec.mode !== 'DryRun';
    // Past the few shown, only the first that acts is wanted (it governs); DryRun ones are not kept.
    if (namespaced.length <= maxOverlappingPolicies || (acts && !acting)) namespaced.push(policy);
    acting ||= acts;
  }
  return { namespaced, unreadable };
}

/**
 * Which policy grows a claim — one policy per claim, since two would each act on the same
 * measurement (two raises for one breach, two of a budgeted driver's modifications). Of the
 * namespaced VolumeExpansionPolicies that select it, the oldest (creationTimestamp, then name)
 * that acts (mode Auto or Approval), else the oldest in DryRun; a policy whose rules pvx cannot
 * read decides nothing and governs nothing. Only when no namespaced policy takes the claim, the
 * first by name ClusterVolumeExpansionPolicy with triggers: the namespace's owners know their
 * volumes better than a cluster-wide default. A new policy never takes over a claim an older one
 * grows, so adding one cannot change what happens to volumes already governed.
 */
export function claimPolicies(
  pvc: V1PersistentVolumeClaim,
  policies: readonly VolumeExpansionPolicy[],
  clusterPolicies: readonly ClusterVolumeExpansionPolicy[],
  lookups: SelectionLookups,
): ClaimPolicies {
  const readable = (spec: Parameters<typeof policySpecProblem>[0]) => policySpecProblem(spec) === undefined;
  const { namespaced, unreadable } = namespacedSelection(pvc, policies, lookups);
  if (namespaced.length) {
    const governor = namespaced.find((p) => p.spec.mode !== 'DryRun') ?? (namespaced[0] as VolumeExpansionPolicy);
    return {
      governing: { kind: 'VolumeExpansionPolicy', policy: governor },
      overlapping: namespaced
        .filter((p) => p !== governor)
        .slice(0, maxOverlappingPolicies)
        .map((policy) => ({ kind: 'VolumeExpansionPolicy', policy })),
      unreadable,
    };
  }
  const clusterSelecting = clusterPolicies
    .filter((p) => clusterPolicySelects(p, pvc, lookups))
    .sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
  const clusterReadable = (p: ClusterVolumeExpansionPolicy) => readable({ ...p.spec, triggers: p.spec.triggers ?? {} });
  const first = clusterSelecting.find(clusterReadable);
  return {
    ...(first ? { governing: { kind: 'ClusterVolumeExpansionPolicy', policy: first } } : {}),
    overlapping: [],
    unreadable: [
      ...unreadable,
      ...clusterSelecting.filter((p) => !clusterReadable(p)).map((policy): GoverningPolicy => ({ kind: 'ClusterVolumeExpansionPolicy', policy })),
    ],
  };
}

/** The policy that grows the claim, as a list (empty or one): see claimPolicies. */
export function governingPolicies(
  pvc: V1PersistentVolumeClaim,
  policies: readonly VolumeExpansionPolicy[],
  clusterPolicies: readonly ClusterVolumeExpansionPolicy[],
  lookups: SelectionLookups,
): GoverningPolicy[] {
  const { governing } = claimPolicies(pvc, policies, clusterPolicies, lookups);
  return governing ? [governing] : [];
}
