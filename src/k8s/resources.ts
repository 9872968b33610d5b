// The kinds pvx reads, with what the API server needs to list and watch each, and what the cache
// keeps of them (dropping fields pvx never reads keeps 10,000 objects small).
import type { KubernetesObject } from '@kubernetes/client-node';

export interface ResourceType {
  /** Plural resource name, also the cache's and metrics' name. */
  resource: string;
  group: string;
  version: string;
  kind: string;
  namespaced: boolean;
  /** Server-side filter that cuts traffic (e.g. finished pods are of no interest). */
  fieldSelector?: string;
  /** Reduces each object to what pvx reads before it is cached. */
  transform?: (obj: KubernetesObject) => KubernetesObject;
}

export const apiVersionOf = (t: ResourceType): string => (t.group ? `${t.group}/${t.version}` : t.version);

/** REST path of a collection: /api/v1/pods, /apis/apps/v1/namespaces/ns/statefulsets, … */
export function collectionPath(t: ResourceType, namespace?: string): string {
  const prefix = t.group ? `/apis/${t.group}/${t.version}` : `/api/${t.version}`;
  return t.namespaced && namespace ? `${prefix}/namespaces/${namespace}/${t.resource}` : `${prefix}/${t.resource}`;
}

/** managedFields are only needed on PVCs (who changed the size); elsewhere they are dead weight. */
function withoutManagedFields(obj: KubernetesObject): KubernetesObject {
  if (!obj.metadata?.managedFields) return obj;
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

interface PodLike extends KubernetesObject {
  spec?: { nodeName?: string; volumes?: { name: string; persistentVolumeClaim?: { claimName: string } }[] };
  status?: { phase?: string; conditions?: unknown[] };
}

/** Of a pod pvx needs: identity, owner, node, the claims it mounts, and whether it runs. */
function slimPod(obj: KubernetesObject): KubernetesObject {
  const pod = obj as PodLike;
  const { name, namespace, uid, resourceVersion, labels, ownerReferences, deletionTimestamp, creationTimestamp } = pod.metadata ?? {};
  return {
    apiVersion: pod.apiVersion,
    kind: pod.kind,
    metadata: { name, namespace, uid, resourceVersion, labels, ownerReferences, deletionTimestamp, creationTimestamp },
    spec: {
      nodeName: pod.spec?.nodeName,
      volumes: (pod.spec?.volumes ?? []).filter((v) => v.persistentVolumeClaim).map((v) => ({ name: v.name, persistentVolumeClaim: v.persistentVolumeClaim })),
    },
    status: { phase: pod.status?.phase, conditions: pod.status?.conditions },
  } as KubernetesObject;
}

export const resources = {
  persistentVolumeClaims: { resource: 'persistentvolumeclaims', group: '', version: 'v1', kind: 'PersistentVolumeClaim', namespaced: true },
  persistentVolumes: { resource: 'persistentvolumes', group: '', version: 'v1', kind: 'PersistentVolume', namespaced: false, transform: withoutManagedFields },
  storageClasses: { resource: 'storageclasses', group: 'storage.k8s.io', version: 'v1', kind: 'StorageClass', namespaced: false, transform: withoutManagedFields },
  pods: {
    resource: 'pods',
    group: '',
    version: 'v1',
    kind: 'Pod',
    namespaced: true,
    fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed',
    transform: slimPod,
  },
  statefulSets: { resource: 'statefulsets', group: 'apps', version: 'v1', kind: 'StatefulSet', namespaced: true, transform: withoutManagedFields },
  resourceQuotas: { resource: 'resourcequotas', group: '', version: 'v1', kind: 'ResourceQuota', namespaced: true, transform: withoutManagedFields },
  nodes: {
    resource: 'nodes',
    group: '',
    version: 'v1',
    kind: 'Node',
    namespaced: false,
    // Node status carries images and much else; pvx needs names, readiness and addresses.
    transform: (obj) => {
      const node = obj as KubernetesObject & { status?: { conditions?: unknown[]; addresses?: unknown[] } };
      const { name, uid, resourceVersion, labels } = node.metadata ?? {};
      return { apiVersion: node.apiVersion, kind: node.kind, metadata: { name, uid, resourceVersion, labels }, status: { conditions: node.status?.conditions, addresses: node.status?.addresses } } as KubernetesObject;
    },
  },
} satisfies Record<string, ResourceType>;

export const volumeExpansionRequests: ResourceType = { resource: 'volumeexpansionrequests', group: 'pvx.dev', version: 'v1alpha1', kind: 'VolumeExpansionRequest', namespaced: true };

export const volumeExpansionPolicies: ResourceType = { resource: 'volumeexpansionpolicies', group: 'pvx.dev', version: 'v1alpha1', kind: 'VolumeExpansionPolicy', namespaced: true };

export const clusterVolumeExpansionPolicies: ResourceType = { resource: 'clustervolumeexpansionpolicies', group: 'pvx.dev', version: 'v1alpha1', kind: 'ClusterVolumeExpansionPolicy', namespaced: false };

/** Namespaces, for the labels cluster policies select by. */
export const namespaces: ResourceType = {
  resource: 'namespaces',
  group: '',
  version: 'v1',
  kind: 'Namespace',
  namespaced: false,
  transform: (obj) => ({ apiVersion: obj.apiVersion, kind: obj.kind, metadata: { name: obj.metadata?.name, uid: obj.metadata?.uid, resourceVersion: obj.metadata?.resourceVersion, labels: obj.metadata?.labels } }),
};

export const leaseType: ResourceType = { resource: 'leases', group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', namespaced: true };

export function objectKey(obj: KubernetesObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}
