// Every label and annotation key pvx reads or writes, in one place with the API types: on claims
// (the record of pvx's own patch), on requests (who made them, approval) — so the reconcilers, the
// CLI, the audit and the tests agree on one spelling. Plain values, apart from the schemas: the
// operator reads these without loading TypeBox.

/**
 * What pvx writes on a PVC in the same patch as its new size and class (and after a recovery): the
 * request that did it, the capacity and VolumeAttributesClass before, and the size and class asked
 * for — so a restart, `pvx status` and the audit can tell pvx's changes from anyone else's.
 */
export const pvcAnnotations = {
  request: 'pvx.dev/request',
  requestUID: 'pvx.dev/request-uid',
  previousCapacity: 'pvx.dev/previous-capacity',
  targetSize: 'pvx.dev/target-size',
  /** The claim's status.currentVolumeAttributesClassName before pvx's patch; "" when it had none. */
  previousVolumeAttributesClass: 'pvx.dev/previous-volume-attributes-class',
  targetVolumeAttributesClass: 'pvx.dev/target-volume-attributes-class',
  recoveredTo: 'pvx.dev/recovered-to',
  /**
   * The modification ledger (src/policies/budget/ledger.ts), for a driver with a modification budget:
   * what spent the budget within its window, pvx's requests and others' changes, and the spec
   * pvx last accounted for. pvx's own patch updates it in the same write.
   */
  modifications: 'pvx.dev/modifications',
  /**
   * The pod pvx chose to evict for a request (spec.offlineNodeExpansion: EvictPod), written on
   * the claim before the eviction: the request's status.eviction is writable by anyone who may
   * write requests' status, so only a record of the pod marked here counts (src/policies/request/eviction.ts).
   */
  eviction: 'pvx.dev/eviction',
} as const;

/** Labels on VolumeExpansionRequests: which request or policy made them. */
export const requestLabels = {
  /** A StatefulSet request's per-PVC children carry the parent's name. */
  parent: 'pvx.dev/parent-request',
  /** Requests a VolumeExpansionPolicy created (its name). */
  policy: 'pvx.dev/policy',
  /** Requests a ClusterVolumeExpansionPolicy created (its name). */
  clusterPolicy: 'pvx.dev/cluster-policy',
} as const;

/** Annotations on VolumeExpansionRequests. */
export const requestAnnotations = {
  /** Which trigger made a policy create the request (UsedRatio, Forecast, …). */
  trigger: 'pvx.dev/trigger',
  /** "required": the request waits for approval (a policy in Approval mode). */
  approval: 'pvx.dev/approval',
  /** The plan's token (or "true"): a person approved the request (`pvx approve`). */
  approved: 'pvx.dev/approved',
  /**
   * Who approved: `pvx approve` writes the user's name, and the ValidatingAdmissionPolicy
   * pvx-approval refuses any other name than the requester's (config/admission/).
   */
  approvedBy: 'pvx.dev/approved-by',
  /**
   * The UID of the claim a StatefulSet request validated and pinned, on its child for that claim,
   * and of the claim a policy measured, on its request: a claim deleted and created again under the
   * name is not the one validated or measured, and is not grown.
   */
  claimUID: 'pvx.dev/claim-uid',
  /**
   * The claim's capacity when a policy measured it and decided to grow it, on the request it
   * creates. A claim grown (or shrunk, re-created) since is no longer the claim of that decision:
   * the request is not carried out, and the policy decides again from the claim as it is.
   */
  measuredCapacity: 'pvx.dev/measured-capacity',
  /**
   * Why a policy created the request, with the figures it measured ("used 91% ≥ 90% of 1 GiB …"):
   * written in the create itself, and repeated in the Event the finished expansion leaves on its
   * claim, so the audit trail says why without an Event of its own.
   */
  decision: 'pvx.dev/decision',
} as const;

/**
 * Kubernetes' own annotations pvx reads (never writes), as the external-resizer sets them:
 *   - on a claim, `node-expansion-not-required` (external-resizer v2.0): the resizer finished the
 *     expansion without a node step (ControllerExpandVolume said none is needed, e.g. RWX or
 *     network file systems), so no pod has to mount the claim for it to complete;
 *   - on a PersistentVolume, `pre-resize-capacity` (AnnotateFsResize, beta in v2.2): the claim's
 *     capacity before an expansion whose filesystem step is still to come, removed once it is done.
 */
export const kubernetesAnnotations = {
  nodeExpansionNotRequired: 'volume.kubernetes.io/node-expansion-not-required',
  preResizeCapacity: 'volume.alpha.kubernetes.io/pre-resize-capacity',
} as const;

/**
 * What pvx writes on a StatefulSet it created again with a new volumeClaimTemplate size (spec.statefulSetTemplate.update):
 * the request that did it, by name and UID, so that after a crash between the create and the
 * status write pvx knows the StatefulSet is its own, and a reader knows why it was re-created.
 */
export const statefulSetAnnotations = {
  templateRequest: 'pvx.dev/template-request',
  templateRequestUID: 'pvx.dev/template-request-uid',
} as const;

/** The finalizer a request holds while its status is the only record of a StatefulSet pvx deleted to re-create. */
export const statefulSetRecordFinalizer = 'pvx.dev/statefulset-record';

/** "namespace/claim" of a request for one PVC; undefined for a StatefulSet request (its children name the claims). */
export const requestClaimKey = (r: { metadata: { namespace?: string }; spec?: { target?: { pvcName?: string } } }): string | undefined =>
  r.spec?.target?.pvcName ? `${r.metadata.namespace}/${r.spec.target.pvcName}` : undefined;
