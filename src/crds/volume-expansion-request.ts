// VolumeExpansionRequest (pvx.dev/v1alpha1): the one schema. TypeScript types derive from it, and
// config/crd/ is generated from it (`npm run crds`; a test fails when they differ). CEL rules
// reject malformed specs at admission; the operator validates again (src/policies/request/validation.ts).
import { Type, type Static } from '@sinclair/typebox';
import { limits } from './limits.ts';
import { cel, objectName, positiveDuration, positiveQuantity } from './schema.ts';

export const group = 'pvx.dev';
export const version = 'v1alpha1';

export { pvcAnnotations, requestClaimKey } from './keys.ts';

/** A DNS-1123 subdomain (an object name such as a VolumeAttributesClass's): lower-case alphanumerics, '-' and '.', dot-separated labels. */
const dns1123Subdomain = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

export const RequestTarget = Type.Object(
  {
    pvcName: Type.Optional(Type.String({ description: 'A PersistentVolumeClaim in the request’s namespace.', minLength: 1, maxLength: 253 })),
    statefulSetName: Type.Optional(Type.String({ description: 'Every PVC of this StatefulSet’s volumeClaimTemplate.', minLength: 1, maxLength: 253 })),
    volumeClaimTemplate: Type.Optional(Type.String({ description: 'The template name, with statefulSetName.', minLength: 1, maxLength: 253 })),
  },
  {
    description: 'What to grow: one PVC, or every PVC of a StatefulSet volumeClaimTemplate.',
    'x-kubernetes-validations': [
      cel('has(self.pvcName) != has(self.statefulSetName)', 'set exactly one of pvcName and statefulSetName'),
      cel('has(self.statefulSetName) == has(self.volumeClaimTemplate)', 'volumeClaimTemplate goes with statefulSetName (and only with it)'),
    ],
  },
);

/**
 * The two opt-ins that finish what users otherwise finish by hand, shared by requests and the
 * policies that create them. Both are off unless asked for; each also needs the RBAC its chart
 * and kustomize opt-in grants (without it the API server refuses pvx, and the request says so).
 */
export const StatefulSetTemplateOptions = Type.Object(
  {
    update: Type.Optional(
      Type.Boolean({
        description:
          'Once every replica’s claim has grown, carry the new size into the StatefulSet’s volumeClaimTemplate: pvx records the StatefulSet in its own namespace, deletes it with propagation Orphan (the pods keep running) and creates it again from its last state, identical but for the template’s storage request; the pods are adopted, none restarts. A StatefulSet its owner deletes meanwhile is never created again. Needs the opt-in RBAC (chart: statefulSetTemplates.enabled).',
        default: false,
      }),
    ),
    evenIfManaged: Type.Optional(
      Type.Boolean({
        description:
          'Also re-create a StatefulSet owned by another controller (an ownerReference, e.g. a database operator) or managed by a GitOps tool (Argo CD, Flux, Helm, kapp labels or annotations). Off: such a StatefulSet is left as it is and the request says why; change its size in its source instead.',
        default: false,
      }),
    ),
  },
  { description: 'The StatefulSet’s volumeClaimTemplate after its claims grew (StatefulSet targets only).' },
);

/** Wait (default): report what a person must do; EvictPod: evict the pod that mounts the claim through the Eviction API. */
export const offlineNodeExpansion = Type.Union([Type.Literal('Wait'), Type.Literal('EvictPod')], {
  description:
    'When the claim waits at the node stage because its driver grows the filesystem only when the volume is mounted anew (the kubelet reports it cannot expand it in use): Wait reports what a person must do; EvictPod evicts the pod that mounts it through the Eviction API (PodDisruptionBudgets are respected; a refusal is waited out) — only a pod a StatefulSet, ReplicaSet, ReplicationController or DaemonSet will re-create, one pod of a workload at a time, at most once per request. Needs the opt-in RBAC (chart: offlineExpansion.enabled).',
  default: 'Wait',
});

export const RequestSpec = Type.Object(
  {
    target: RequestTarget,
    size: Type.Optional(positiveQuantity('Absolute new size, e.g. 40Gi. At most one of size and increment.')),
    increment: Type.Optional(
      Type.String({
        description: 'Growth over the current capacity: a quantity (10Gi) or a percentage (25%).',
        maxLength: 64,
        'x-kubernetes-validations': [
          cel(
            "self.endsWith('%') ? self.matches('^([0-9]+(\\\\.[0-9]*)?|\\\\.[0-9]+)%$') && double(self.substring(0, self.size() - 1)) > 0.0 : isQuantity(self) && quantity(self).isGreaterThan(quantity('0'))",
            'must be a positive quantity (10Gi) or a positive percentage (25%)',
          ),
        ],
      }),
    ),
    volumeAttributesClassName: Type.Optional(
      Type.String({
        description:
          'The VolumeAttributesClass (storage.k8s.io/v1, Kubernetes 1.34) to set as the claim’s spec.volumeAttributesClassName: a change of the volume’s performance (type, IOPS, throughput). Alone, or with a size, in the same patch of the claim (one modification of the volume).',
        minLength: 1,
        maxLength: 253,
        // A DNS-1123 subdomain, as an OpenAPI pattern: CEL's format library (format.dns1123Subdomain)
        // needs Kubernetes 1.31, and pvx's CRDs install from 1.29.
        pattern: dns1123Subdomain,
      }),
    ),
    roundUpTo: Type.Optional(
      positiveQuantity('The target size is rounded up to a multiple of this (default 1Gi, the granularity of most cloud disks).', { default: '1Gi' }),
    ),
    deadline: Type.Optional(positiveDuration('Fail the request if it has not completed this long after it was accepted (e.g. 30m, 2h).')),
    dryRun: Type.Optional(Type.Boolean({ description: 'Validate and report the plan without changing the PVC.', default: false })),
    recovery: Type.Optional(
      Type.Union([Type.Literal('None'), Type.Literal('Auto')], {
        description: 'On an infeasible target: None reports it; Auto lowers the PVC request back to what the driver allows (KEP-1790).',
        default: 'None',
      }),
    ),
    ttlSecondsAfterFinished: Type.Optional(
      Type.Integer({ description: 'Delete the request this long after it finished (default: keep it as the audit record).', minimum: 0 }),
    ),
    statefulSetTemplate: Type.Optional(StatefulSetTemplateOptions),
    offlineNodeExpansion: Type.Optional(offlineNodeExpansion),
  },
  {
    'x-kubernetes-validations': [
      cel('!has(self.statefulSetTemplate) || has(self.target.statefulSetName)', 'statefulSetTemplate goes with target.statefulSetName (a StatefulSet request)'),
      cel(
        '!has(self.statefulSetTemplate) || !has(self.statefulSetTemplate.update) || !self.statefulSetTemplate.update || has(self.size) || has(self.increment)',
        'a template update carries a size: set size or increment',
      ),
      cel('!(has(self.size) && has(self.increment))', 'set at most one of size and increment'),
      cel(
        'has(self.size) || has(self.increment) || has(self.volumeAttributesClassName)',
        'set a size (size or increment), a volumeAttributesClassName, or both',
      ),
      cel('self == oldSelf', 'the spec of a request is immutable: create a new request instead', { reason: 'FieldValueForbidden' }),
    ],
  },
);

export const phases = [
  'Pending',
  'Rejected',
  'Expanding',
  'ControllerExpanding',
  'NodeExpansionPending',
  'WaitingForPod',
  'Modifying',
  'Completed',
  'Failed',
  'Recovering',
  'UpdatingTemplate',
] as const;
export type Phase = (typeof phases)[number];

const Timestamp = Type.String({ format: 'date-time' });

const quantityText = () => Type.String({ maxLength: limits.quantity });

export const TargetStatus = Type.Object({
  pvcName: objectName(),
  pvcUID: Type.Optional(
    Type.String({ description: 'The claim as validated: a claim of that name with another UID is not this target.', maxLength: limits.uid }),
  ),
  requestUID: Type.Optional(
    Type.String({
      description: 'The child request made for this claim, once seen: a child that is gone is an outcome, never a request to make again.',
      maxLength: limits.uid,
    }),
  ),
  phase: Type.Optional(Type.String({ maxLength: limits.word })),
  reason: Type.Optional(Type.String({ maxLength: limits.reason })),
  message: Type.Optional(Type.String({ maxLength: limits.itemMessage })),
  fromCapacity: Type.Optional(quantityText()),
  targetSize: Type.Optional(quantityText()),
  allocatedSize: Type.Optional(quantityText()),
  capacity: Type.Optional(quantityText()),
  targetVolumeAttributesClassName: Type.Optional(objectName()),
  timeline: Type.Optional(
    Type.Object({
      patchedAt: Type.Optional(Timestamp),
      controllerExpandedAt: Type.Optional(Timestamp),
      modifiedAt: Type.Optional(Timestamp),
      completedAt: Type.Optional(Timestamp),
    }),
  ),
});

export const templatePhases = ['Recorded', 'Deleted', 'Updated', 'Skipped'] as const;

export const TemplateStatus = Type.Object(
  {
    phase: Type.Union(
      templatePhases.map((p) => Type.Literal(p)),
      {
        description:
          'Recorded: the StatefulSet is recorded (recordName) and about to be deleted (with propagation Orphan); Deleted: it is being deleted and created again from its last state; Updated: created again with the new size; Skipped: left as it is, or not created again (reason says why: DeletedByOwner, NamespaceDeleted, FinalStateUnknown …).',
      },
    ),
    reason: Type.Optional(Type.String()),
    message: Type.Optional(Type.String()),
    statefulSetName: Type.String(),
    volumeClaimTemplate: Type.String(),
    fromSize: Type.Optional(Type.String({ description: 'The template’s storage request before.' })),
    toSize: Type.Optional(Type.String({ description: 'The template’s storage request pvx carries into it.' })),
    statefulSetUID: Type.Optional(Type.String({ description: 'The StatefulSet recorded and deleted.' })),
    resourceVersion: Type.Optional(Type.String({ description: 'Its resourceVersion as recorded: the delete’s precondition.' })),
    recreatedUID: Type.Optional(Type.String({ description: 'The StatefulSet pvx created again.' })),
    recordName: Type.Optional(
      Type.String({
        description:
          'The record of the StatefulSet (namespace/name of a ConfigMap in pvx’s own namespace, which only pvx writes): what pvx creates it again from, whatever becomes of this request. The ConfigMap is deleted once the request has taken the outcome (one pvx could not create again is kept until the request is deleted).',
      }),
    ),
  },
  { description: 'spec.statefulSetTemplate.update: where carrying the new size into the StatefulSet’s volumeClaimTemplate stands.' },
);

export const evictionPhases = ['Requested', 'Blocked', 'Evicted'] as const;

export const EvictionStatus = Type.Object(
  {
    phase: Type.Union(
      evictionPhases.map((p) => Type.Literal(p)),
      {
        description:
          'Requested: about to evict (recorded first); Blocked: the API server refused for now (a PodDisruptionBudget); Evicted: the pod was evicted — never another one for this request.',
      },
    ),
    podName: Type.String(),
    podUID: Type.String({ description: 'The one pod this request may evict (the eviction’s UID precondition).' }),
    owner: Type.Optional(Type.String({ description: 'The controller that re-creates it (Kind/name).' })),
    reason: Type.Optional(Type.String()),
    message: Type.Optional(Type.String()),
    requestedAt: Type.Optional(Timestamp),
    evictedAt: Type.Optional(Timestamp),
  },
  { description: 'spec.offlineNodeExpansion EvictPod: the pod evicted so that the kubelet grows the filesystem at its next mount.' },
);

export const Condition = Type.Object({
  type: Type.String({ maxLength: limits.conditionType }),
  status: Type.Union([Type.Literal('True'), Type.Literal('False'), Type.Literal('Unknown')]),
  reason: Type.String({ maxLength: limits.reason }),
  message: Type.String({ maxLength: limits.conditionMessage }),
  lastTransitionTime: Timestamp,
  observedGeneration: Type.Optional(Type.Integer()),
});

export const RequestStatus = Type.Object({
  phase: Type.Optional(Type.Union(phases.map((p) => Type.Literal(p)))),
  reason: Type.Optional(Type.String({ description: 'Machine-readable reason for the phase.' })),
  message: Type.Optional(Type.String({ description: 'What is happening, for a human.' })),
  observedGeneration: Type.Optional(Type.Integer()),
  phaseSince: Type.Optional(Type.String({ format: 'date-time', description: 'When the request entered its current phase.' })),
  pvcName: Type.Optional(Type.String()),
  pvcUID: Type.Optional(Type.String({ description: 'The claim the request patched; a claim re-created under the same name fails the request.' })),
  fromCapacity: Type.Optional(Type.String()),
  targetSize: Type.Optional(Type.String()),
  capacity: Type.Optional(Type.String()),
  fromVolumeAttributesClassName: Type.Optional(
    Type.String({ description: 'The claim’s VolumeAttributesClass before the change (status.currentVolumeAttributesClassName); absent: none.' }),
  ),
  targetVolumeAttributesClassName: Type.Optional(Type.String({ description: 'The VolumeAttributesClass the request sets.' })),
  currentVolumeAttributesClassName: Type.Optional(Type.String({ description: 'The claim’s status.currentVolumeAttributesClassName as last seen.' })),
  acceptedPlan: Type.Optional(
    Type.Object(
      {
        pvcUID: Type.String(),
        fromCapacity: Type.String(),
        targetSize: Type.Optional(Type.String()),
        fromVolumeAttributesClassName: Type.Optional(Type.String()),
        targetVolumeAttributesClassName: Type.Optional(Type.String()),
      },
      {
        description:
          'The plan pvx recorded just before patching the claim (which claim, from what, to what): after any loss it tells which claim the request may have changed.',
      },
    ),
  ),
  errorSince: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'When the driver error the request shows was first seen; a driver that keeps refusing (not a rate limit) ends the request after an hour.',
    }),
  ),
  targets: Type.Optional(Type.Array(TargetStatus, { description: 'One entry per PVC the request grows.', maxItems: limits.targets })),
  statefulSetTemplate: Type.Optional(TemplateStatus),
  eviction: Type.Optional(EvictionStatus),
  recovery: Type.Optional(
    Type.Object(
      {
        attemptedSizes: Type.Array(quantityText(), { description: 'Sizes the claim’s request was lowered to, in order.', maxItems: limits.attemptedSizes }),
        refusedSizes: Type.Optional(
          Type.Array(quantityText(), {
            description: 'Sizes the API server refused to lower the claim’s request to: not tried again.',
            maxItems: limits.attemptedSizes,
          }),
        ),
        reason: Type.Optional(Type.String({ description: 'Why the original target could not be reached.' })),
      },
      { description: 'spec.recovery Auto: how pvx lowered the claim after an infeasible target.' },
    ),
  ),
  timeline: Type.Optional(
    Type.Object({
      acceptedAt: Type.Optional(Timestamp),
      patchedAt: Type.Optional(Timestamp),
      controllerExpandedAt: Type.Optional(Timestamp),
      modifiedAt: Type.Optional(
        Type.String({ format: 'date-time', description: 'When the claim’s status first showed the target VolumeAttributesClass applied.' }),
      ),
      completedAt: Type.Optional(Timestamp),
      evictedAt: Type.Optional(
        Type.String({ format: 'date-time', description: 'When pvx evicted the pod that mounts the claim (spec.offlineNodeExpansion EvictPod).' }),
      ),
      templateUpdatedAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the StatefulSet existed again with the new template size.' })),
    }),
  ),
  conditions: Type.Optional(Type.Array(Condition, { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'], maxItems: limits.conditions })),
});

export type RequestSpec = Static<typeof RequestSpec>;
export type RequestStatus = Static<typeof RequestStatus>;
export type TargetStatus = Static<typeof TargetStatus>;
export type Condition = Static<typeof Condition>;
export type TemplateStatus = Static<typeof TemplateStatus>;
export type EvictionStatus = Static<typeof EvictionStatus>;

export interface VolumeExpansionRequest {
  apiVersion: `${typeof group}/${typeof version}`;
  kind: 'VolumeExpansionRequest';
  metadata: import('@kubernetes/client-node').V1ObjectMeta;
  spec: RequestSpec;
  status?: RequestStatus;
}

export const volumeExpansionRequestCRD = {
  group,
  kind: 'VolumeExpansionRequest',
  plural: 'volumeexpansionrequests',
  singular: 'volumeexpansionrequest',
  shortNames: ['ver'],
  scope: 'Namespaced' as const,
  spec: RequestSpec,
  status: RequestStatus,
  printerColumns: [
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'PVC', type: 'string', jsonPath: '.status.pvcName' },
    { name: 'From', type: 'string', jsonPath: '.status.fromCapacity' },
    { name: 'Target', type: 'string', jsonPath: '.status.targetSize' },
    { name: 'Capacity', type: 'string', jsonPath: '.status.capacity' },
    { name: 'Class', type: 'string', jsonPath: '.status.targetVolumeAttributesClassName' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
};
