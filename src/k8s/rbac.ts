// What RBAC each call pvx makes needs: one row per method of the KubeClient port (and of the
// KubeletClient port: the kubelets authorize through the API server's RBAC too). This table is the
// single source of truth for config/rbac/ and the chart's rbac.yaml: a unit test (rbac.test.ts)
// fails when a role grants something no method needs, or a method needs something no role grants.
// Typed as Record<keyof …>, so a method added to a port does not compile until it has its row.
import type { KubeClient, KubeletClient } from './client.ts';
import {
  clusterVolumeExpansionPolicies,
  leaseType,
  namespaces,
  resources,
  volumeExpansionPolicies,
  volumeExpansionRequests,
  type ResourceType,
} from './resources.ts';

/**
 * The roles pvx's identities hold, by name (config/rbac/): cluster-wide grants in pvx-manager; the
 * Lease (and, opted in, the StatefulSet records) only in pvx's own namespace; with the kubelet
 * usage source only, the kubelet reader's tokens (pvx-kubelet-identity, in pvx's namespace) and
 * that reader's nodes/stats (pvx-kubelet-usage, bound to it, not to pvx: see roleSubject); the
 * reviews behind /metrics only with secure metrics. The opt-in roles (optInRoles) are in no
 * default install.
 */
export type PvxRole = 'pvx-manager' | 'pvx-leader-election' | 'pvx-kubelet-identity' | 'pvx-kubelet-usage' | 'pvx-metrics-auth' | OptInRole;

/**
 * The identity pvx reads kubelets as: a ServiceAccount of pvx's namespace that may get nodes/stats
 * and nothing else. pvx mints its short-lived tokens (TokenRequest) and sends only those to nodes:
 * a node that replays one can read statistics, never write (the token that writes stays with the
 * API server).
 */
export const kubeletReader = 'pvx-usage-reader';

/** The ServiceAccount each role is bound to: pvx's own, but for the kubelets' one role. */
export const roleSubject = (role: PvxRole): string => (role === 'pvx-kubelet-usage' ? kubeletReader : 'pvx');

/** Roles only an administrator's opt-in grants: a chart value, or a kustomize component (one may grant two roles). */
export type OptInRole = 'pvx-statefulset-templates' | 'pvx-statefulset-records' | 'pvx-pod-eviction';

export const optInRoles: Readonly<Record<OptInRole, { chartValue: string; component: string; what: string }>> = {
  'pvx-statefulset-templates': {
    chartValue: 'statefulSetTemplates.enabled',
    component: 'config/components/statefulset-templates',
    what: 'carry a grown size into a StatefulSet’s volumeClaimTemplate (spec.statefulSetTemplate.update)',
  },
  'pvx-statefulset-records': {
    chartValue: 'statefulSetTemplates.enabled',
    component: 'config/components/statefulset-templates',
    what: 'keep the record of each StatefulSet it deletes to create again, in ConfigMaps of pvx’s own namespace (a Role there, nothing cluster-wide)',
  },
  'pvx-pod-eviction': {
    chartValue: 'offlineExpansion.enabled',
    component: 'config/components/offline-expansion',
    what: 'evict the pod of a claim whose driver grows filesystems only offline (spec.offlineNodeExpansion EvictPod)',
  },
};

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
  list: [...watchedTypes.map((t) => on('pvx-manager', t, 'list')), on('pvx-statefulset-records', resources.statefulSetRecords, 'list')],
  watch: [...watchedTypes.map((t) => on('pvx-manager', t, 'watch')), on('pvx-statefulset-records', resources.statefulSetRecords, 'watch')],
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
  // The kubelet reader's tokens (a Role in pvx's namespace, for that one ServiceAccount by name).
  createServiceAccountToken: [{ role: 'pvx-kubelet-identity', apiGroup: '', resource: 'serviceaccounts/token', verb: 'create' }],
  createSubjectAccessReview: [{ role: 'pvx-metrics-auth', apiGroup: 'authorization.k8s.io', resource: 'subjectaccessreviews', verb: 'create' }],
  // The token signing keys (GET /openid/v1/jwks): no role of pvx's; Kubernetes' default
  // ClusterRoleBinding system:service-account-issuer-discovery lets every ServiceAccount read them.
  getServiceAccountKeys: [],
  // StatefulSet templates (opt-in): the StatefulSet read fresh before it is recorded, deleted with
  // propagation Orphan and created again from its last state; its record kept meanwhile in a
  // ConfigMap of pvx's own namespace (a Role there: no ConfigMap anywhere else). The finalizer of
  // a request from an earlier pvx, which held its record in its status, is released.
  getStatefulSet: [on('pvx-statefulset-templates', resources.statefulSets, 'get')],
  deleteStatefulSetOrphan: [on('pvx-statefulset-templates', resources.statefulSets, 'delete')],
  createStatefulSet: [on('pvx-statefulset-templates', resources.statefulSets, 'create')],
  patchRequestFinalizers: [on('pvx-statefulset-templates', volumeExpansionRequests, 'patch')],
  createRecord: [on('pvx-statefulset-records', resources.statefulSetRecords, 'create')],
  updateRecord: [on('pvx-statefulset-records', resources.statefulSetRecords, 'update')],
  deleteRecord: [on('pvx-statefulset-records', resources.statefulSetRecords, 'delete')],
  // Offline node expansion (opt-in): the Eviction API, which PodDisruptionBudgets govern (never pods delete).
  evictPod: [on('pvx-pod-eviction', resources.pods, 'create', 'eviction')],
  getLease: [on('pvx-leader-election', leaseType, 'get')],
  createLease: [on('pvx-leader-election', leaseType, 'create')],
  updateLease: [on('pvx-leader-election', leaseType, 'update')],
};

export const kubeletGrants: Record<keyof KubeletClient, readonly Grant[]> = {
  // The kubelet's webhook authorization maps GET /stats/* to get on nodes/stats: granted to the
  // kubelet reader (roleSubject), whose token is the one pvx sends.
  statsSummary: [{ role: 'pvx-kubelet-usage', apiGroup: '', resource: 'nodes/stats', verb: 'get' }],
};

/** Every grant some call needs, once each; `roles`: of these roles only. */
export function neededGrants(roles?: readonly PvxRole[]): Grant[] {
  const seen = new Map<string, Grant>();
  for (const g of [...Object.values(clientGrants), ...Object.values(kubeletGrants)].flat()) if (!roles || roles.includes(g.role)) seen.set(grantKey(g), g);
  return [...seen.values()];
}

const isOptIn = (role: PvxRole): role is OptInRole => role in optInRoles;

/** The grants of the default install: every role but the opt-in ones. */
export function defaultGrants(): Grant[] {
  return neededGrants().filter((g) => !isOptIn(g.role));
}

/** A grant as one comparable line: "pvx-manager persistentvolumeclaims patch" (group-qualified when not core). */
export const grantKey = (g: Grant): string => `${g.role} ${g.apiGroup ? `${g.resource}.${g.apiGroup}` : g.resource} ${g.verb}`;
