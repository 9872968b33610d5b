// Which policies grow a PVC — one definition for the operator's policy evaluator, the audit and
// `pvx plan`. Every namespaced VolumeExpansionPolicy that selects the PVC grows it; only when none
// does, the first (by name) ClusterVolumeExpansionPolicy with triggers that selects it: the
// namespace's owners know their volumes better than a cluster-wide default, and two cluster
// policies never race for one volume. Cluster policies without triggers carry guardrails only.
import type { V1Namespace, V1PersistentVolumeClaim, V1StatefulSet } from '@kubernetes/client-node';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import type { PolicySpec, VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
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

export type GoverningPolicy = { kind: 'VolumeExpansionPolicy'; policy: VolumeExpansionPolicy } | { kind: 'ClusterVolumeExpansionPolicy'; policy: ClusterVolumeExpansionPolicy };

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
  return Boolean(p.spec.triggers) && matchesLabels(p.spec.namespaceSelector?.matchLabels, lookups.namespaceLabels(pvc.metadata?.namespace ?? '')) && selectsClaim(p.spec, pvc);
}

export function governingPolicies(
  pvc: V1PersistentVolumeClaim,
  policies: readonly VolumeExpansionPolicy[],
  clusterPolicies: readonly ClusterVolumeExpansionPolicy[],
  lookups: SelectionLookups,
): GoverningPolicy[] {
  const namespaced = policies.filter((p) => policySelects(p, pvc, lookups));
  if (namespaced.length) return namespaced.map((policy) => ({ kind: 'VolumeExpansionPolicy', policy }));
  const [first] = clusterPolicies
    .filter((p) => clusterPolicySelects(p, pvc, lookups))
    .sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
  return first ? [{ kind: 'ClusterVolumeExpansionPolicy', policy: first }] : [];
}
