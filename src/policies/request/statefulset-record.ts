// The record of a StatefulSet pvx deletes to create again with a larger volumeClaimTemplate
// (spec.statefulSetTemplate.update), and what pvx reads of a StatefulSet before it touches one.
// Pure: the shapes and checks the request's template step (template.ts) and the record keeper
// (record-keeper.ts) share.
//
// Where the record lives, and why: a ConfigMap in pvx's own namespace (the leader election's),
// named after the request's UID — not the request's status, nor anything else a tenant can write.
// A namespace editor can delete a request, remove its finalizers and (with the role to) rewrite its
// status; none of that may lose a StatefulSet pvx deleted, nor decide what pvx creates. The record
// is written only by pvx (and read by whoever may read ConfigMaps in pvx's namespace: the cluster's
// admins), holds the StatefulSet as the API server served it, and is followed by the record keeper
// until the StatefulSet exists again (or is known not to be pvx's to create), whatever becomes of
// the request; then it goes, once the request has taken its outcome or is gone itself.
import type { V1ConfigMap, V1StatefulSet } from '@kubernetes/client-node';
import { statefulSetAnnotations } from '../../crds/keys.ts';
import { formatBytes, readBytes } from '../../k8s/quantity.ts';

/** The label on every record: the records' cache lists only these. */
export const recordLabel = 'pvx.dev/statefulset-record';

/** The record of a request's template step: one per request, named after its UID. */
export const recordName = (requestUID: string): string => `pvx-sts-${requestUID}`;

/**
 * Where the step stands, as the record keeper carries it out:
 *   Recorded   the StatefulSet is recorded and not touched yet (its owner deleting it now is the owner's doing);
 *   Deleting   pvx deletes it (propagation Orphan) and creates it again from its last state;
 *   Recreated  created again (recreatedUID);
 *   Abandoned  left as it is, or not created again (reason says why: deleted by its owner, the namespace going …).
 */
export type RecordPhase = 'Recorded' | 'Deleting' | 'Recreated' | 'Abandoned';
export const recordDone = (p: RecordPhase): boolean => p === 'Recreated' || p === 'Abandoned';

export interface StatefulSetRecord {
  /** The ConfigMap's name and namespace (pvx's), and its version (an update's precondition). */
  name: string;
  namespace: string;
  resourceVersion?: string;
  uid?: string;
  /** The request that asked, by namespace, name and UID. */
  request: { namespace: string; name: string; uid: string };
  /** The StatefulSet as recorded: its name (in the request's namespace), UID and version — the delete's preconditions. */
  statefulSet: { name: string; uid: string; resourceVersion: string };
  template: string;
  fromSize?: string;
  toSize: string;
  /** The request's spec.statefulSetTemplate.evenIfManaged, for the checks made again before the delete. */
  evenIfManaged: boolean;
  /** The request's deadline (RFC 3339), if it has one: past it, a StatefulSet not deleted yet is left as it is. */
  deadline?: string;
  phase: RecordPhase;
  reason: string;
  message: string;
  /**
   * The version pvx's orphaning delete left it at (its answer, or the first version pvx saw of it
   * being deleted so): how it went is read from there, its own deletion certain.
   */
  deletedResourceVersion?: string;
  /**
   * The version of the API server's list pvx read the StatefulSet in just before its delete (at
   * or after the recorded version): where its history is read from when the delete's answer and
   * every sight of it being deleted were lost. Its own version may be far older than the history
   * the API server keeps (seed 2278727: a compaction after its last edit, pvx's process gone
   * between its delete and the record's next write, and it was never created again).
   */
  historyFrom?: string;
  /**
   * Set once its creation again was refused: `object` is then its last state as the history had
   * it, which a history compacted while the create is refused (an admission webhook down for
   * minutes) cannot take away — the StatefulSet is gone, so that state is final.
   */
  lastStateRead?: boolean;
  /**
   * The UID of the StatefulSet's namespace when pvx went to delete it: a namespace of the name
   * created since is another's, and nothing pvx deleted is created in it.
   */
  namespaceUID?: string;
  recreatedUID?: string;
  /** The StatefulSet as the API server served it (metadata pvx keeps, and spec): recordOf. */
  object: Record<string, unknown>;
}

/** The fields of a record pvx decides on: everything but the ConfigMap's own identity. */
export type RecordContent = Omit<StatefulSetRecord, 'name' | 'namespace' | 'resourceVersion' | 'uid'>;

const stepKey = 'step.json';
const objectKey = 'statefulset.json';

/** The ConfigMap that holds a record (its resourceVersion: an update's precondition). */
export function recordConfigMap(r: StatefulSetRecord): V1ConfigMap {
  const { name, namespace, resourceVersion, uid: _uid, object, ...step } = r;
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      namespace,
      ...(resourceVersion ? { resourceVersion } : {}),
      labels: { [recordLabel]: 'true' },
      annotations: {
        'pvx.dev/request-namespace': r.request.namespace,
        'pvx.dev/request': r.request.name,
        'pvx.dev/request-uid': r.request.uid,
        'pvx.dev/statefulset': `${r.request.namespace}/${r.statefulSet.name}`,
      },
    },
    data: { [stepKey]: JSON.stringify(step), [objectKey]: JSON.stringify(object) },
  };
}

/** A record read back from its ConfigMap, or why it cannot be read (only pvx writes them: an unreadable one is someone else's doing). */
export function readRecord(cm: V1ConfigMap): StatefulSetRecord | { unreadable: string } {
  const name = cm.metadata?.name ?? '';
  try {
    const step = JSON.parse(cm.data?.[stepKey] ?? '') as RecordContent;
    const object = JSON.parse(cm.data?.[objectKey] ?? '') as Record<string, unknown>;
    const ok =
      typeof step.request?.uid === 'string' &&
      typeof step.statefulSet?.uid === 'string' &&
      typeof step.statefulSet?.name === 'string' &&
      typeof step.template === 'string' &&
      typeof step.toSize === 'string' &&
      ['Recorded', 'Deleting', 'Recreated', 'Abandoned'].includes(step.phase) &&
      object !== null &&
      typeof object === 'object';
    if (!ok) return { unreadable: `ConfigMap ${name} does not hold a StatefulSet record pvx can read` };
    return {
      ...step,
      object,
      name,
      namespace: cm.metadata?.namespace ?? '',
      ...(cm.metadata?.resourceVersion ? { resourceVersion: cm.metadata.resourceVersion } : {}),
      ...(cm.metadata?.uid ? { uid: cm.metadata.uid } : {}),
    };
  } catch (err) {
    return { unreadable: `ConfigMap ${name} does not hold a StatefulSet record pvx can read: ${(err as Error).message}` };
  }
}

/** Labels and annotations by which GitOps tools and release managers mark what they manage (and would set back). */
const managerMarkers: { tool: string; label?: string; annotation?: string }[] = [
  { tool: 'Argo CD', annotation: 'argocd.argoproj.io/tracking-id' },
  { tool: 'Argo CD', label: 'argocd.argoproj.io/instance' },
  // Argo CD's label tracking (its default before 3.0); Helm charts set it too.
  { tool: 'Argo CD (label tracking)', label: 'app.kubernetes.io/instance' },
  { tool: 'Flux', label: 'kustomize.toolkit.fluxcd.io/name' },
  { tool: 'Flux', label: 'helm.toolkit.fluxcd.io/name' },
  { tool: 'Helm', annotation: 'meta.helm.sh/release-name' },
  { tool: 'kapp', label: 'kapp.k14s.io/app' },
];

/**
 * Who else manages the StatefulSet, in words, or undefined: a controller that owns it (an
 * ownerReference with controller: true), or a tool whose well-known label or annotation it carries.
 */
export function otherManager(sts: V1StatefulSet): { reason: 'OwnedByController' | 'ManagedByGitOps'; who: string } | undefined {
  const owner = sts.metadata?.ownerReferences?.find((r) => r.controller);
  if (owner) return { reason: 'OwnedByController', who: `owned by ${owner.kind} ${owner.name} (an ownerReference with controller: true)` };
  const labels = sts.metadata?.labels ?? {};
  const annotations = sts.metadata?.annotations ?? {};
  for (const m of managerMarkers) {
    if (m.label && labels[m.label] !== undefined) return { reason: 'ManagedByGitOps', who: `managed by ${m.tool} (label ${m.label}=${labels[m.label]})` };
    if (m.annotation && annotations[m.annotation] !== undefined) return { reason: 'ManagedByGitOps', who: `managed by ${m.tool} (annotation ${m.annotation})` };
  }
  const managedBy = labels['app.kubernetes.io/managed-by'];
  if (managedBy !== undefined) return { reason: 'ManagedByGitOps', who: `managed by ${managedBy} (label app.kubernetes.io/managed-by)` };
  return undefined;
}

/**
 * Why a StatefulSet cannot be created again right now without rolling pods, or undefined: its
 * controller has not observed its latest spec, or a rolling update is under way (a StatefulSet
 * created again takes its update revision as current, and would roll the pods a partition holds).
 * OnDelete leaves pods alone whatever the revisions say.
 */
export function notSteady(sts: V1StatefulSet): string | undefined {
  const generation = sts.metadata?.generation;
  const observed = sts.status?.observedGeneration;
  if (generation !== undefined && (observed === undefined || observed < generation))
    return `its controller has not observed generation ${generation} yet (observed ${observed ?? 'none'})`;
  const { currentRevision, updateRevision } = sts.status ?? {};
  if (sts.spec?.updateStrategy?.type !== 'OnDelete' && currentRevision && updateRevision && currentRevision !== updateRevision) {
    return `a rolling update is under way (current revision ${currentRevision}, update revision ${updateRevision})`;
  }
  return undefined;
}

/**
 * The StatefulSet as it can be created again: the metadata its owner set (labels — the StatefulSet
 * controller's own included —, annotations, ownerReferences, finalizers but the deletion's), and
 * its spec; nothing the server owns (UID, versions, status).
 */
export function recordOf(sts: V1StatefulSet | Record<string, unknown>): Record<string, unknown> {
  const m = (sts as V1StatefulSet).metadata ?? {};
  const finalizers = (m.finalizers ?? []).filter((f) => f !== 'orphan' && f !== 'foregroundDeletion');
  const metadata = {
    name: m.name,
    namespace: m.namespace,
    ...(m.labels ? { labels: m.labels } : {}),
    ...(m.annotations ? { annotations: m.annotations } : {}),
    ...(m.ownerReferences ? { ownerReferences: m.ownerReferences } : {}),
    ...(finalizers.length > 0 ? { finalizers } : {}),
  };
  return JSON.parse(JSON.stringify({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata, spec: (sts as V1StatefulSet).spec })) as Record<string, unknown>;
}

export const templateSize = (sts: V1StatefulSet | Record<string, unknown> | undefined, template: string): string | undefined =>
  (sts as V1StatefulSet | undefined)?.spec?.volumeClaimTemplates?.find((t) => t.metadata?.name === template)?.spec?.resources?.requests?.storage;

/**
 * The StatefulSet to create again: its last state (what its owner last wrote, an edit made while it
 * was being deleted included), with the template asking for the record's size — never less than
 * it asked already — and the request that did it named.
 */
export function recreated(last: V1StatefulSet | Record<string, unknown>, record: Pick<StatefulSetRecord, 'template' | 'toSize' | 'request'>): V1StatefulSet {
  const sts = recordOf(last) as V1StatefulSet;
  const vct = sts.spec?.volumeClaimTemplates?.find((t) => t.metadata?.name === record.template);
  if (vct) {
    const had = readBytes(vct.spec?.resources?.requests?.storage);
    const want = readBytes(record.toSize);
    const storage = had !== undefined && want !== undefined && had > want ? formatBytes(had) : record.toSize;
    vct.spec = { ...vct.spec, resources: { ...vct.spec?.resources, requests: { ...vct.spec?.resources?.requests, storage } } };
  }
  sts.metadata = {
    ...sts.metadata,
    annotations: {
      ...sts.metadata?.annotations,
      [statefulSetAnnotations.templateRequest]: record.request.name,
      [statefulSetAnnotations.templateRequestUID]: record.request.uid,
    },
  };
  return sts;
}

/** What the step asks of a StatefulSet: its name, the template, the size to carry into it, and whether a managed one may be touched. */
export interface TemplateAsk {
  name: string;
  template: string;
  toSize: string;
  evenIfManaged: boolean;
}

/** Why a StatefulSet may not be recorded (and deleted) now — to skip, or to wait for — or undefined when it may. */
export type Unrecordable = { reason: string; message: string; wait?: boolean; alreadyAtSize?: boolean };

/**
 * Whether the StatefulSet may be recorded and deleted now: its template exists and asks for less
 * than the size to carry, nobody else manages it (unless evenIfManaged) and it is steady. Checked
 * by the request before it records, and by the record keeper again before each delete.
 */
export function unrecordable(sts: V1StatefulSet, ask: TemplateAsk): Unrecordable | undefined {
  const { name, template } = ask;
  if (!sts.spec?.volumeClaimTemplates?.some((v) => v.metadata?.name === template))
    return { reason: 'TemplateNotFound', message: `StatefulSet ${name} has no volumeClaimTemplate ${template} any more` };
  const from = templateSize(sts, template);
  const fromBytes = from === undefined ? undefined : readBytes(from);
  if (fromBytes === undefined)
    return {
      reason: 'TemplateUnreadable',
      message: `volumeClaimTemplate ${template} of StatefulSet ${name} asks for ${from ?? 'no size'}, which pvx cannot read`,
    };
  if (fromBytes >= (readBytes(ask.toSize) ?? 0n))
    return {
      reason: 'AlreadyAtSize',
      alreadyAtSize: true,
      message: `volumeClaimTemplate ${template} of StatefulSet ${name} already asks for ${formatBytes(fromBytes)}: nothing to change`,
    };
  const other = otherManager(sts);
  if (other && !ask.evenIfManaged) {
    return {
      reason: other.reason,
      message: `StatefulSet ${name} is ${other.who}: pvx leaves it as it is, since its manager would set the template back or re-create it its own way. Change volumeClaimTemplate ${template} to ${ask.toSize} in its source (pvx audit shows the drift until then), or set spec.statefulSetTemplate.evenIfManaged on a new request`,
    };
  }
  const busy = notSteady(sts);
  if (busy) return { reason: 'StatefulSetNotSteady', wait: true, message: `waiting to update volumeClaimTemplate ${template} of StatefulSet ${name}: ${busy}` };
  return undefined;
}
