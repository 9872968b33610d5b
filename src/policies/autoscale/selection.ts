// Which policy grows a PVC — one definition for the operator's policy evaluator, the audit,
// `pvx why`, `pvx df` and `pvx plan` (claimPolicies says how it is chosen). Cluster policies
// without triggers carry guardrails only.
import type { V1Namespace, V1PersistentVolumeClaim, V1StatefulSet } from '@kubernetes/client-node';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import type { PolicySpec, VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import { policySpecProblem } from './decide.ts';
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

export function clusterPolicySelects(p: ClusterVolumeExpansionPolicy, pvc: V1PersistentVolumeClaim, lookups: SelectionLookups): boolean {
  return (
    Boolean(p.spec.triggers) &&
    matchesLabels(p.spec.namespaceSelector?.matchLabels, lookups.namespaceLabels(pvc.metadata?.namespace ?? '')) &&
    selectsClaim(p.spec, pvc)
  );
}

/** Oldest first: creationTimestamp, then name (a policy created in the same second). */
function olderFirst(a: VolumeExpansionPolicy, b: VolumeExpansionPolicy): number {
  const at = (p: VolumeExpansionPolicy) => new Date((p.metadata.creationTimestamp as unknown as string | Date | undefined) ?? 0).getTime() || 0;
  return at(a) - at(b) || (a.metadata.name ?? '').localeCompare(b.metadata.name ?? '');
}

/** The policy that grows a claim, and the other namespaced policies that select it and leave it alone. */
export interface ClaimPolicies {
  governing?: GoverningPolicy;
  /** Namespaced policies that select the claim too: each shows it as governed by another, and the audit reports the overlap. */
  overlapping: GoverningPolicy[];
  /** Policies that select the claim but whose rules pvx cannot read: they decide nothing (their status says why). */
  unreadable: GoverningPolicy[];
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
  const selecting = policies.filter((p) => policySelects(p, pvc, lookups)).sort(olderFirst);
  const unreadable: GoverningPolicy[] = selecting.filter((p) => !readable(p.spec)).map((policy) => ({ kind: 'VolumeExpansionPolicy', policy }));
  const namespaced = selecting.filter((p) => readable(p.spec));
  if (namespaced.length) {
    const governor = namespaced.find((p) => p.spec.mode !== 'DryRun') ?? (namespaced[0] as VolumeExpansionPolicy);
    return {
      governing: { kind: 'VolumeExpansionPolicy', policy: governor },
      overlapping: namespaced.filter((p) => p !== governor).map((policy) => ({ kind: 'VolumeExpansionPolicy', policy })),
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
