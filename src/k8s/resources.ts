// The kinds pvx reads, with what the API server needs to list and watch each, and what the cache
// keeps of them (dropping fields pvx never reads keeps 10,000 objects small).
import type { KubernetesObject, V1ManagedFieldsEntry, V1Namespace, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { kubernetesAnnotations } from '../crds/keys.ts';

/** One field manager for every write pvx makes, so managedFields name pvx as the writer (the audit relies on it). */
export const fieldManager = 'pvx';

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

/**
 * REST path of a collection: /api/v1/pods, /apis/apps/v1/namespaces/ns/statefulsets, … The
 * namespace is encoded: it comes from flags and objects, and a "/" or "?" in it must not change
 * which path is asked for.
 */
export function collectionPath(t: ResourceType, namespace?: string): string {
  const prefix = t.group ? `/apis/${t.group}/${t.version}` : `/api/${t.version}`;
  return t.namespaced && namespace ? `${prefix}/namespaces/${encodeURIComponent(namespace)}/${t.resource}` : `${prefix}/${t.resource}`;
}

/** managedFields are only needed on PVCs (who changed the size, see compactClaim); elsewhere they are dead weight. */
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

const frozen = <T extends object>(o: T): T => {
  for (const v of Object.values(o)) if (v && typeof v === 'object') frozen(v);
  return Object.freeze(o);
};

/** The managedFields path of a claim's storage request, shared by every compacted entry that owns it. */
export const storageRequestFields = frozen({ 'f:spec': { 'f:resources': { 'f:requests': { 'f:storage': {} } } } });
/** The managedFields path of a claim's VolumeAttributesClass, shared likewise. */
export const attributesClassFields = frozen({ 'f:spec': { 'f:volumeAttributesClassName': {} } });
/** Both paths, for an entry that owns both (one write that changed the size and the class). */
const storageAndClassFields = frozen({ 'f:spec': { 'f:resources': { 'f:requests': { 'f:storage': {} } }, 'f:volumeAttributesClassName': {} } });

function ownsPath(entry: { fieldsV1?: object }, path: readonly string[]): boolean {
  let node: unknown = entry.fieldsV1;
  for (const key of path) {
    if (!node || typeof node !== 'object' || !(key in node)) return false;
    node = (node as Record<string, unknown>)[key];
  }
  return true;
}

/** Whether a managedFields entry owns spec.resources.requests.storage. */
export const ownsStorageRequest = (entry: { fieldsV1?: object }): boolean => ownsPath(entry, ['f:spec', 'f:resources', 'f:requests', 'f:storage']);
/** Whether a managedFields entry owns spec.volumeAttributesClassName. */
export const ownsAttributesClass = (entry: { fieldsV1?: object }): boolean => ownsPath(entry, ['f:spec', 'f:volumeAttributesClassName']);

/**
 * Of a claim's managedFields, what pvx reads: the entries that own the storage request or the
 * VolumeAttributesClass (who set them last, and when: the audit's resized-outside-pvx, the
 * modification ledger) and pvx's own updates of the claim itself (recordedPatchTime, src/policies/claim/writers.ts: when pvx
 * last patched it) — each as manager, operation, time, subresource, and the paths of those two
 * fields it owns (not the rest of its field set).
 */
function specWriters(entries: V1ManagedFieldsEntry[] | undefined): V1ManagedFieldsEntry[] | undefined {
  const kept = (entries ?? []).flatMap((e) => {
    const [size, cls] = [ownsStorageRequest(e), ownsAttributesClass(e)];
    if (!size && !cls && !(e.manager === fieldManager && e.operation === 'Update' && !e.subresource)) return [];
    const fieldsV1 = size && cls ? storageAndClassFields : size ? storageRequestFields : cls ? attributesClassFields : undefined;
    return [defined({ manager: e.manager, operation: e.operation, time: e.time, subresource: e.subresource, fieldsV1 }) as V1ManagedFieldsEntry];
  });
  return kept.length > 0 ? kept : undefined;
}

/** The object without its undefined values, or undefined when none is left: a cached object stores no empty slots. */
function defined<T extends object>(o: T): T | undefined {
  const entries = Object.entries(o).filter(([, v]) => v !== undefined);
  return entries.length > 0 ? (Object.fromEntries(entries) as T) : undefined;
}

/**
 * Of a claim, what pvx reads (a claim as the API server sends it is ~5 KiB, mostly managedFields;
 * this is a tenth of it). Readers, by field:
 *   metadata: name, namespace, uid (requests, policies, audit, the patch's UID precondition),
 *     resourceVersion (the patch's precondition, the informer), labels (policy selectors),
 *     annotations under pvx.dev/ (the intent pvx records with its patch) and the resizer's
 *     node-expansion-not-required (no node step to wait for); others are dropped (kubectl's
 *     last-applied-configuration alone can be kilobytes), managedFields (specWriters);
 *   spec: resources.requests.storage, storageClassName, volumeName (the audit's PV comparison),
 *     volumeAttributesClassName (src/policies/claim/modify.ts; a change of it spends a driver's modification budget);
 *   status: phase, capacity.storage, allocatedResources.storage,
 *     allocatedResourceStatuses.storage, currentVolumeAttributesClassName, modifyVolumeStatus,
 *     conditions' type, status, lastTransitionTime and message (src/policies/claim/resize.ts and
 *     modify.ts, the audit's error findings).
 * The result is still a V1PersistentVolumeClaim, so every reader reads it unchanged.
 */
export function compactClaim(obj: KubernetesObject): KubernetesObject {
  const pvc = obj as V1PersistentVolumeClaim;
  const m = pvc.metadata ?? {};
  const annotations = m.annotations
    ? defined(
        Object.fromEntries(Object.entries(m.annotations).filter(([k]) => k.startsWith('pvx.dev/') || k === kubernetesAnnotations.nodeExpansionNotRequired)),
      )
    : undefined;
  const storage = (o: { storage?: unknown } | undefined) => (o?.storage === undefined ? undefined : { storage: o.storage });
  const status = pvc.status;
  return defined({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: defined({
      name: m.name,
      namespace: m.namespace,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      // The policy pass reads no measurement older than the claim (a claim of the name before it).
      creationTimestamp: m.creationTimestamp,
      labels: m.labels,
      annotations,
      managedFields: specWriters(m.managedFields),
    }),
    spec: defined({
      storageClassName: pvc.spec?.storageClassName,
      volumeName: pvc.spec?.volumeName,
      volumeAttributesClassName: pvc.spec?.volumeAttributesClassName,
      resources: pvc.spec?.resources?.requests ? defined({ requests: storage(pvc.spec.resources.requests) }) : undefined,
    }),
    status: status
      ? defined({
          phase: status.phase,
          capacity: storage(status.capacity),
          allocatedResources: storage(status.allocatedResources),
          allocatedResourceStatuses: storage(status.allocatedResourceStatuses),
          currentVolumeAttributesClassName: status.currentVolumeAttributesClassName,
          modifyVolumeStatus: status.modifyVolumeStatus,
          conditions: status.conditions?.map((c) => defined({ type: c.type, status: c.status, lastTransitionTime: c.lastTransitionTime, message: c.message })),
        })
      : undefined,
  }) as KubernetesObject;
}

export const resources = {
  persistentVolumeClaims: {
    resource: 'persistentvolumeclaims',
    group: '',
    version: 'v1',
    kind: 'PersistentVolumeClaim',
    namespaced: true,
    transform: compactClaim,
  },
  persistentVolumes: { resource: 'persistentvolumes', group: '', version: 'v1', kind: 'PersistentVolume', namespaced: false, transform: withoutManagedFields },
  storageClasses: {
    resource: 'storageclasses',
    group: 'storage.k8s.io',
    version: 'v1',
    kind: 'StorageClass',
    namespaced: false,
    transform: withoutManagedFields,
  },
  /** Served from Kubernetes 1.34 (GA); `pvx run` watches them only where they are served. */
  volumeAttributesClasses: {
    resource: 'volumeattributesclasses',
    group: 'storage.k8s.io',
    version: 'v1',
    kind: 'VolumeAttributesClass',
    namespaced: false,
    transform: withoutManagedFields,
  },
  pods: {
    resource: 'pods',
    group: '',
    version: 'v1',
    kind: 'Pod',
    namespaced: true,
    fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed',
    transform: slimPod,
  },
  /** A claim's Events (`pvx why`): the resizer's and kubelet's own words. */
  events: { resource: 'events', group: '', version: 'v1', kind: 'Event', namespaced: true, transform: withoutManagedFields },
  statefulSets: { resource: 'statefulsets', group: 'apps', version: 'v1', kind: 'StatefulSet', namespaced: true, transform: withoutManagedFields },
  /** The StatefulSet records pvx keeps in its own namespace (src/policies/request/statefulset-record.ts): ConfigMaps there, and only those. */
  statefulSetRecords: { resource: 'configmaps', group: '', version: 'v1', kind: 'ConfigMap', namespaced: true, transform: withoutManagedFields },
  resourceQuotas: { resource: 'resourcequotas', group: '', version: 'v1', kind: 'ResourceQuota', namespaced: true, transform: withoutManagedFields },
  nodes: {
    resource: 'nodes',
    group: '',
    version: 'v1',
    kind: 'Node',
    namespaced: false,
    // Node status carries images and much else; pvx needs names, readiness, and where the kubelet
    // listens (addresses and daemonEndpoints: the kubelet usage source dials it directly).
    transform: (obj) => {
      const node = obj as KubernetesObject & { status?: { conditions?: unknown[]; addresses?: unknown[]; daemonEndpoints?: unknown } };
      const { name, uid, resourceVersion, labels } = node.metadata ?? {};
      const status = { conditions: node.status?.conditions, addresses: node.status?.addresses, daemonEndpoints: node.status?.daemonEndpoints };
      return { apiVersion: node.apiVersion, kind: node.kind, metadata: { name, uid, resourceVersion, labels }, status } as KubernetesObject;
    },
  },
} satisfies Record<string, ResourceType>;

export const volumeExpansionRequests: ResourceType = {
  resource: 'volumeexpansionrequests',
  group: 'pvx.dev',
  version: 'v1alpha1',
  kind: 'VolumeExpansionRequest',
  namespaced: true,
};

export const volumeExpansionPolicies: ResourceType = {
  resource: 'volumeexpansionpolicies',
  group: 'pvx.dev',
  version: 'v1alpha1',
  kind: 'VolumeExpansionPolicy',
  namespaced: true,
};

export const clusterVolumeExpansionPolicies: ResourceType = {
  resource: 'clustervolumeexpansionpolicies',
  group: 'pvx.dev',
  version: 'v1alpha1',
  kind: 'ClusterVolumeExpansionPolicy',
  namespaced: false,
};

/** Namespaces, for the labels cluster policies select by. */
export const namespaces: ResourceType = {
  resource: 'namespaces',
  group: '',
  version: 'v1',
  kind: 'Namespace',
  namespaced: false,
  transform: compactNamespace,
};

/**
 * What pvx reads of a namespace: its labels (guardrails select by them), its UID (a namespace of
 * the name created again is another's) and whether it is being deleted (nothing can be created
 * in it, and pvx holds nothing of it).
 */
export function compactNamespace(obj: KubernetesObject): KubernetesObject {
  const m = obj.metadata;
  const phase = (obj as V1Namespace).status?.phase;
  return {
    apiVersion: obj.apiVersion,
    kind: obj.kind,
    metadata: {
      name: m?.name,
      uid: m?.uid,
      resourceVersion: m?.resourceVersion,
      labels: m?.labels,
      ...(m?.deletionTimestamp ? { deletionTimestamp: m.deletionTimestamp } : {}),
    },
    ...(phase ? { status: { phase } } : {}),
  } as KubernetesObject;
}

export const leaseType: ResourceType = { resource: 'leases', group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', namespaced: true };

export function objectKey(obj: KubernetesObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}
