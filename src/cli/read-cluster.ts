// Reads what the audit needs from the cluster: every kind, page by page, read-only. It works on any
// cluster — without pvx's operator or CRDs, and with a user who may read only some kinds: a kind
// that is not served is empty (nothing of it exists), a kind the caller may not list is empty too
// but makes the rules that depend on it unreliable, so those are named for the caller to skip.
import type {
  KubernetesObject,
  V1Namespace,
  V1Node,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1ResourceQuota,
  V1StatefulSet,
  V1StorageClass,
  V1VolumeAttributesClass,
} from '@kubernetes/client-node';
import type { ClusterVolumeExpansionPolicy } from '../crds/cluster-volume-expansion-policy.ts';
import type { VolumeExpansionPolicy } from '../crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import type { KubeClient, KubeletClient } from '../k8s/client.ts';
import { isForbidden, isNotServed } from '../k8s/errors.ts';
import { listAll } from '../k8s/list.ts';
import {
  clusterVolumeExpansionPolicies,
  namespaces,
  resources,
  volumeExpansionPolicies,
  volumeExpansionRequests,
  type ResourceType,
} from '../k8s/resources.ts';
import { auditRules, type AuditRead, type AuditSnapshot, type RuleId } from '../policies/audit/rules.ts';
import { KubeletSummarySource, readyNodes } from '../usage/kubelet.ts';
import type { UsageSource } from '../usage/source.ts';

export interface CollectOptions {
  /** Only this namespace's namespaced objects (cluster-scoped kinds are read whole). */
  namespace?: string;
  /** Only the claims with these labels (`pvx df -l`): the other kinds are read whole. */
  claimSelector?: string;
  usage?: UsageSource;
  /** The clock for usage samples. Default: now. */
  now?: Date;
}

export interface Collected {
  snapshot: AuditSnapshot;
  /** What could not be read, for a human. */
  warnings: string[];
  /** Rules whose findings would be wrong for lack of a kind the caller may not list. */
  unreliableRules: RuleId[];
  /** The kinds (plural resource names) the caller may not list: read as none, though some may exist. */
  unreadable: string[];
}

/**
 * The kinds behind each of what the rules read: the policies' selection reads the StatefulSets it
 * selects by too, and the namespaces when a cluster policy selects them by label (collectSnapshot).
 */
const kindsOf: Readonly<Record<AuditRead, readonly ResourceType[]>> = {
  persistentVolumes: [resources.persistentVolumes],
  storageClasses: [resources.storageClasses],
  volumeAttributesClasses: [resources.volumeAttributesClasses],
  statefulSets: [resources.statefulSets],
  resourceQuotas: [resources.resourceQuotas],
  pods: [resources.pods],
  requests: [volumeExpansionRequests],
  policies: [volumeExpansionPolicies, clusterVolumeExpansionPolicies, resources.statefulSets],
};

/** The rules a kind the caller may not list makes unreliable: those the rule table says read it. */
const rulesReading = (type: ResourceType): RuleId[] => auditRules.filter((r) => r.reads.some((read) => kindsOf[read].includes(type))).map((r) => r.id);

/** "persistentvolumeclaims in namespace db", "volumeexpansionpolicies.pvx.dev" — what a list read. */
const describeList = (t: ResourceType, namespace: string | undefined) =>
  `${t.group ? `${t.resource}.${t.group}` : t.resource}${t.namespaced && namespace ? ` in namespace ${namespace}` : ''}`;

/** Every object of a kind (in a namespace), transformed as the kind says. */
const readAll = async <T extends KubernetesObject>(client: KubeClient, type: ResourceType, namespace?: string, labelSelector?: string): Promise<T[]> =>
  (await listAll<T>(client, type, { namespace, labelSelector })).items;

export interface KindRead<T> {
  items: T[];
  /** The caller may not list the kind: its absence says nothing. */
  forbidden: boolean;
  /** Why nothing was read, for a human. */
  warning?: string;
}

/**
 * A kind's objects, or none with a warning when it is not served or not allowed (what every
 * read-only command needs: `pvx audit`, `pvx plan`); any other failure throws, naming the list.
 */
export async function readKind<T extends KubernetesObject>(
  client: KubeClient,
  type: ResourceType,
  namespace: string | undefined,
  labelSelector?: string,
): Promise<KindRead<T>> {
  try {
    return { items: await readAll<T>(client, type, namespace, labelSelector), forbidden: false };
  } catch (err) {
    if (isForbidden(err)) return { items: [], forbidden: true, warning: `not allowed to list ${describeList(type, namespace)}` };
    if (isNotServed(err)) {
      const why = type.group === volumeExpansionRequests.group ? "pvx's CRDs are not installed" : 'a later Kubernetes version serves it';
      return { items: [], forbidden: false, warning: `${describeList(type, undefined)} is not served by this cluster (${why}): read as none` };
    }
    throw readFailure(type, namespace, err);
  }
}

/** The audit's read of a kind: a refusal's warning names the rules it makes unreliable. */
async function readForAudit<T extends KubernetesObject>(
  client: KubeClient,
  type: ResourceType,
  namespace: string | undefined,
  warnings: string[],
): Promise<KindRead<T>> {
  const read = await readKind<T>(client, type, namespace);
  const skipped = read.forbidden ? rulesReading(type) : [];
  if (read.warning) warnings.push(`${read.warning}${skipped.length ? `: skipping ${skipped.join(', ')}` : ''}`);
  return read;
}

/** The failure of a list, naming what was being listed; the original error is its cause. */
function readFailure(type: ResourceType, namespace: string | undefined, err: unknown): Error {
  return new Error(`listing ${describeList(type, namespace)}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
}

export async function collectSnapshot(client: KubeClient, opts: CollectOptions = {}): Promise<Collected> {
  const warnings: string[] = [];
  const ns = opts.namespace;
  // The claims are what the audit is about: failing to read them fails the audit.
  const pvcs = await readAll<V1PersistentVolumeClaim>(client, resources.persistentVolumeClaims, ns, opts.claimSelector).catch((err: unknown) => {
    throw readFailure(resources.persistentVolumeClaims, ns, err);
  });
  const [pvs, storageClasses, volumeAttributesClasses, statefulSets, resourceQuotas, pods, requests, policies, clusterPolicies, nsList] = await Promise.all([
    readForAudit<V1PersistentVolume>(client, resources.persistentVolumes, ns, warnings),
    readForAudit<V1StorageClass>(client, resources.storageClasses, ns, warnings),
    readForAudit<V1VolumeAttributesClass>(client, resources.volumeAttributesClasses, ns, warnings),
    readForAudit<V1StatefulSet>(client, resources.statefulSets, ns, warnings),
    readForAudit<V1ResourceQuota>(client, resources.resourceQuotas, ns, warnings),
    readForAudit<V1Pod>(client, resources.pods, ns, warnings),
    readForAudit<KubernetesObject>(client, volumeExpansionRequests, ns, warnings),
    readForAudit<KubernetesObject>(client, volumeExpansionPolicies, ns, warnings),
    readForAudit<KubernetesObject>(client, clusterVolumeExpansionPolicies, ns, warnings),
    readForAudit<V1Namespace>(client, namespaces, ns, warnings),
  ]);
  const unreliable = new Set<RuleId>();
  const reads: [ResourceType, KindRead<unknown>][] = [
    [resources.persistentVolumes, pvs],
    [resources.storageClasses, storageClasses],
    [resources.volumeAttributesClasses, volumeAttributesClasses],
    [resources.statefulSets, statefulSets],
    [resources.resourceQuotas, resourceQuotas],
    [resources.pods, pods],
    [volumeExpansionRequests, requests],
    [volumeExpansionPolicies, policies],
    [clusterVolumeExpansionPolicies, clusterPolicies],
  ];
  for (const [type, read] of reads) if (read.forbidden) for (const rule of rulesReading(type)) unreliable.add(rule);
  const unreadable = [...reads, [namespaces, nsList] as [ResourceType, KindRead<unknown>]].filter(([, read]) => read.forbidden).map(([type]) => type.resource);
  const clusterPolicyItems = clusterPolicies.items as unknown as ClusterVolumeExpansionPolicy[];
  // Namespace labels matter only to cluster policies that select namespaces by them.
  if (nsList.forbidden && clusterPolicyItems.some((p) => Object.keys(p.spec?.namespaceSelector?.matchLabels ?? {}).length > 0))
    for (const r of auditRules) if (r.reads.includes('policies')) unreliable.add(r.id);
  const snapshot: AuditSnapshot = {
    pvcs,
    pvs: pvs.items,
    storageClasses: storageClasses.items,
    statefulSets: statefulSets.items,
    resourceQuotas: resourceQuotas.items,
    pods: pods.items,
    // Not allowed to list them: a class pvx cannot see is not a missing one.
    ...(volumeAttributesClasses.forbidden ? {} : { volumeAttributesClasses: volumeAttributesClasses.items }),
    requests: requests.items as unknown as VolumeExpansionRequest[],
    policies: policies.items as unknown as VolumeExpansionPolicy[],
    clusterPolicies: clusterPolicyItems,
    ...(nsList.forbidden ? {} : { namespaces: nsList.items }),
  };
  if (opts.usage) {
    const report = await opts.usage.collect(opts.now ?? new Date());
    snapshot.usage = report.samples;
    for (const e of report.errors) warnings.push(`usage from ${opts.usage.name}: ${e.target}: ${e.message}`);
  }
  return { snapshot, warnings, unreliableRules: [...unreliable], unreadable };
}

/**
 * A kubelet usage source over the cluster's Ready nodes, or none with a warning when the nodes
 * cannot be listed. Reading the kubelets needs nodes/stats get; a refusal is a per-node warning.
 */
export async function kubeletUsage(client: KubeClient, kubelet: KubeletClient): Promise<{ source?: UsageSource; warnings: string[] }> {
  let nodes: V1Node[];
  try {
    nodes = readyNodes(await readAll<V1Node>(client, resources.nodes));
  } catch (err) {
    if (!isForbidden(err)) throw readFailure(resources.nodes, undefined, err);
    return { warnings: ['not allowed to list nodes: no usage from the kubelets, skipping nearly-full-uncovered'] };
  }
  // Each node is believed about its own pods' claims only (kubelet.ts): the pods say which.
  try {
    const pods = await readAll<V1Pod>(client, resources.pods);
    return { source: new KubeletSummarySource({ kubelet, nodes: () => nodes, pods: () => pods }), warnings: [] };
  } catch (err) {
    if (!isForbidden(err)) throw readFailure(resources.pods, undefined, err);
    return {
      source: new KubeletSummarySource({ kubelet, nodes: () => nodes }),
      warnings: ["not allowed to list pods in every namespace: each node's usage report is taken for any claim it names"],
    };
  }
}
