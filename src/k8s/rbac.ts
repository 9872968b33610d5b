// What RBAC each call pvx makes needs: one row per method of the KubeClient port (and of the
// KubeletClient port: the kubelets authorize through the API server's RBAC too). This table is the
// single source of truth for config/rbac/ and the chart's rbac.yaml: a unit test (rbac.test.ts)
// fails when a role grants something no method needs, or a method needs something no role grants.
// Typed as Record<keyof …>, so a method added to a port does not compile until it has its row.
import type { KubeClient, KubeletClient } from './client.ts';
import { clusterVolumeExpansionPolicies, leaseType, namespaces, resources, volumeExpansionPolicies, volumeExpansionRequests, type ResourceType } from './resources.ts';

/**
 * The roles bound to pvx's ServiceAccount, by name (config/rbac/): cluster-wide grants in
 * pvx-manager; the Lease only in pvx's own namespace; nodes/stats only with the kubelet usage source,
 * so that it can be left out with that source; the reviews behind /metrics only with secure metrics.
 */
export type PvxRole = 'pvx-manager' | 'pvx-leader-election' | 'pvx-kubelet-usage' | 'pvx-metrics-auth';

export type Verb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';

export interface Grant {
  role: PvxRole;
  apiGroup: string;
  /** Plural resource name, with its subresource after a slash (volumeexpansionrequests/status). */
  resource: string;
  verb: Verb;
}

/**
 * The kinds pvx lists and watches: `pvx run`'s caches (namespaces for --namespace-selector and
 * cluster policies' selectors; VolumeAttributesClasses where served). rbac.test.ts checks that
 * buildManager's caches are exactly these.
 */
export const watchedTypes: readonly ResourceType[] = [
  resources.persistentVolumeClaims,
  resources.persistentVolumes,
  resources.storageClasses,
  resources.volumeAttributesClasses,
  resources.pods,
  resources.statefulSets,
  resources.resourceQuotas,
  resources.nodes,
  volumeExpansionRequests,
  volumeExpansionPolicies,
  clusterVolumeExpansionPolicies,
  namespaces,
];

const on = (role: PvxRole, type: ResourceType, verb: Verb, subresource?: string): Grant => ({
  role,
  apiGroup: type.group,
  resource: subresource ? `${type.resource}/${subresource}` : type.resource,
  verb,
});

export const clientGrants: Record<keyof KubeClient, readonly Grant[]> = {
  list: watchedTypes.map((t) => on('pvx-manager', t, 'list')),
  watch: watchedTypes.map((t) => on('pvx-manager', t, 'watch')),
  // JSON merge patches of the claim itself (never its status, never an update).
  patchPvcSize: [on('pvx-manager', resources.persistentVolumeClaims, 'patch')],
  patchPvcAnnotations: [on('pvx-manager', resources.persistentVolumeClaims, 'patch')],
  patchRequestStatus: [on('pvx-manager', volumeExpansionRequests, 'patch', 'status')],
  patchPolicyStatus: [on('pvx-manager', volumeExpansionPolicies, 'patch', 'status'), on('pvx-manager', clusterVolumeExpansionPolicies, 'patch', 'status')],
  // A new core/v1 Event each time (never patched: pvx emits on transitions, not repeats).
  emitEvent: [{ role: 'pvx-manager', apiGroup: '', resource: 'events', verb: 'create' }],
  createRequest: [on('pvx-manager', volumeExpansionRequests, 'create')],
  deleteRequest: [on('pvx-manager', volumeExpansionRequests, 'delete')],
  // Reviews of each scrape's token: they create nothing (the API server answers in the reply).
  createTokenReview: [{ role: 'pvx-metrics-auth', apiGroup: 'authentication.k8s.io', resource: 'tokenreviews', verb: 'create' }],
  createSubjectAccessReview: [{ role: 'pvx-metrics-auth', apiGroup: 'authorization.k8s.io', resource: 'subjectaccessreviews', verb: 'create' }],
  getLease: [on('pvx-leader-election', leaseType, 'get')],
  createLease: [on('pvx-leader-election', leaseType, 'create')],
  updateLease: [on('pvx-leader-election', leaseType, 'update')],
};

export const kubeletGrants: Record<keyof KubeletClient, readonly Grant[]> = {
  // The kubelet's webhook authorization maps GET /stats/* to get on nodes/stats.
  statsSummary: [{ role: 'pvx-kubelet-usage', apiGroup: '', resource: 'nodes/stats', verb: 'get' }],
};

/** Every grant some call needs, once each. */
export function neededGrants(): Grant[] {
  const seen = new Map<string, Grant>();
  for (const g of [...Object.values(clientGrants), ...Object.values(kubeletGrants)].flat()) seen.set(grantKey(g), g);
  return [...seen.values()];
}

/** A grant as one comparable line: "pvx-manager persistentvolumeclaims patch" (group-qualified when not core). */
export const grantKey = (g: Grant): string => `${g.role} ${g.apiGroup ? `${g.resource}.${g.apiGroup}` : g.resource} ${g.verb}`;
