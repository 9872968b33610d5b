// VolumeExpansionPolicy (pvx.dev/v1alpha1, namespaced): grow the PVCs it selects when their usage
// crosses a threshold or is forecast to fill. A policy never patches a PVC: it creates
// VolumeExpansionRequests, so every expansion takes the same validated, audited path.
import { Type, type Static } from '@sinclair/typebox';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { policyDefaults } from './defaults.ts';
import { limits } from './limits.ts';
import { cel, matchLabels, objectName, positiveDuration, positiveQuantity } from './schema.ts';
import { Condition, StatefulSetTemplateOptions, group, offlineNodeExpansion } from './volume-expansion-request.ts';

const duration = positiveDuration;

/** A cron schedule's shape: five fields of cron's characters (digits, names, * / , - ? L W #), six with seconds first, or a nickname. */
export const cronPattern = '^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9A-Za-z*?/,#-]+( +[0-9A-Za-z*?/,#-]+){4,5})$';
const quantity = positiveQuantity;
const percent = (description: string) => Type.Integer({ description, minimum: 1, maximum: 100 });

const triggers = Type.Object(
  {
    usedPercent: Type.Optional(percent('Grow when this percentage of the volume’s bytes is used.')),
    inodesUsedPercent: Type.Optional(percent('Grow when this percentage of the volume’s inodes is used.')),
    minFree: Type.Optional(quantity('Grow when less than this is free.')),
    sustainedSamples: Type.Optional(
      Type.Integer({
        description: `Consecutive distinct measurements that must breach a threshold (default ${policyDefaults.sustainedSamples}); the fill-rate forecast, always on, reads as many and at least ${policyDefaults.fillMeasurements}.`,
        minimum: 1,
        maximum: 100,
      }),
    ),
    forecast: Type.Optional(
      Type.Object(
        {
          horizon: duration('Grow when the volume is forecast to fill within this long.'),
          window: duration('Fit the forecast over the samples of this long a window.'),
        },
        {
          description: `A longer forecast than the fill-rate trigger pvx always applies (a volume whose measurements all grow, fast enough to fill within the time an expansion needs, about ${policyDefaults.expansionMs / 60_000} min, plus the interval between measurements).`,
        },
      ),
    ),
  },
  {
    'x-kubernetes-validations': [
      cel(
        'has(self.usedPercent) || has(self.inodesUsedPercent) || has(self.minFree) || has(self.forecast)',
        'set at least one trigger: usedPercent, inodesUsedPercent, minFree or forecast',
      ),
    ],
  },
);

/**
 * How a policy grows the PVCs it selects — shared by the namespaced VolumeExpansionPolicy (where
 * triggers are required) and the ClusterVolumeExpansionPolicy (where they are optional: without
 * them it only carries guardrails).
 */
export const autoscaleFields = {
  selector: Type.Optional(matchLabels('PVCs with these labels (all PVCs when empty).')),
  storageClassNames: Type.Optional(Type.Array(objectName(), { description: 'Only PVCs of these StorageClasses.', maxItems: limits.storageClassNames })),
  step: Type.Optional(
    Type.Object({
      percent: Type.Optional(Type.Integer({ description: 'Growth per expansion in percent of capacity (default 20).', minimum: 1, maximum: 1000 })),
      minimum: Type.Optional(quantity('Smallest growth per expansion (default 1Gi).')),
    }),
  ),
  maxSize: Type.Optional(quantity('Never grow beyond this size.')),
  cooldown: Type.Optional(
    duration(
      `Wait this long after an expansion of a PVC before the next (default ${policyDefaults.cooldownMs / 60_000}m), unless the volume fills so fast that it would be full before an expansion could complete and the last request for it was not refused.`,
    ),
  ),
  windows: Type.Optional(
    Type.Array(
      Type.Object({
        schedule: Type.String({
          description:
            'Five-field cron expression of when the window opens (minute hour day-of-month month day-of-week), e.g. "0 2 * * *", or @daily, @weekly …',
          minLength: 5,
          maxLength: 100,
          // Five fields of cron's characters, or a nickname: "every night" is refused at admission.
          pattern: cronPattern,
        }),
        duration: duration('How long the window stays open.'),
        timeZone: Type.Optional(
          Type.String({
            description:
              'IANA time zone of the schedule, e.g. Europe/Berlin (default UTC). A name the runtime does not know stops the policy with a reason in its status.',
            maxLength: 64,
            pattern: '^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$',
          }),
        ),
      }),
      { description: 'Expansions only start inside one of these windows (always, when empty).', maxItems: 16 },
    ),
  ),
  mode: Type.Optional(
    Type.Union([Type.Literal('Auto'), Type.Literal('DryRun'), Type.Literal('Approval')], {
      description: 'Auto creates requests; DryRun only reports what it would do; Approval creates requests that wait for pvx.dev/approved=true.',
      default: 'Auto',
    }),
  ),
  offlineNodeExpansion: Type.Optional(offlineNodeExpansion),
};

export const PolicySpec = Type.Object(
  {
    ...autoscaleFields,
    statefulSetName: Type.Optional(Type.String({ description: 'Only the PVCs of this StatefulSet’s volumeClaimTemplates.', minLength: 1, maxLength: 253 })),
    statefulSetTemplate: Type.Optional(
      Type.Object(StatefulSetTemplateOptions.properties, {
        description:
          'With statefulSetName: once every live replica’s claim of a template has grown past the template’s size, carry the smallest of their sizes into the template, through a request (spec.statefulSetTemplate of VolumeExpansionRequest).',
      }),
    ),
    triggers,
  },
  { 'x-kubernetes-validations': [cel('!has(self.statefulSetTemplate) || has(self.statefulSetName)', 'statefulSetTemplate goes with statefulSetName')] },
);

/** The same triggers, optional where a policy may carry guardrails only. */
export const optionalTriggers = Type.Optional(triggers);

/** A status field earlier versions wrote at every pass and this one does not: the status is written when the decision changes. */
const notWritten = (instead: string) =>
  `Deprecated, no longer written (it changed with every measurement, and the status is written only when its content changes): see ${instead}.`;

export const VolumeStatus = Type.Object({
  namespace: Type.Optional(Type.String({ description: 'The PVC’s namespace (cluster policies).', maxLength: limits.namespace })),
  pvcName: objectName(),
  used: Type.Optional(Type.String({ description: notWritten('the metric pvx_volume_used_ratio'), maxLength: limits.quantity })),
  capacity: Type.Optional(Type.String({ description: 'The volume’s capacity as its usage source reports it.', maxLength: limits.quantity })),
  usedPercent: Type.Optional(Type.Integer({ description: notWritten('the metric pvx_volume_used_ratio') })),
  inodesUsedPercent: Type.Optional(Type.Integer({ description: notWritten('`pvx plan`') })),
  timeToFullSeconds: Type.Optional(Type.Integer({ description: notWritten('the metric pvx_volume_time_to_full_seconds') })),
  sampledAt: Type.Optional(Type.String({ format: 'date-time', description: notWritten('`pvx plan`') })),
  decision: Type.String({
    description: 'unknown, idle, blocked, atMax, expand, dryRun, or overlap (another policy selects the claim too and grows it)',
    maxLength: limits.word,
  }),
  reason: Type.Optional(Type.String({ maxLength: limits.reason })),
  message: Type.String({
    description:
      'Why, in words that change only when the decision does (the measured figures are in `pvx plan`, and in the pvx.dev/decision annotation of a request the policy creates).',
    maxLength: limits.itemMessage,
  }),
  nextEligibleAt: Type.Optional(Type.String({ format: 'date-time' })),
  request: Type.Optional(objectName({ description: 'The VolumeExpansionRequest created for it, if any.' })),
});

export const PolicyStatus = Type.Object({
  matchedPVCs: Type.Optional(Type.Integer()),
  lastEvaluatedAt: Type.Optional(
    Type.String({
      format: 'date-time',
      description:
        'Deprecated, no longer written: status is written when its content changes; the time of the last evaluation is the metric pvx_policy_last_evaluation_timestamp_seconds.',
    }),
  ),
  volumes: Type.Optional(
    Type.Array(VolumeStatus, {
      maxItems: limits.volumes,
      description:
        'The matched PVCs that need attention or that the policy holds back (unknown, blocked, atMax, dryRun, overlap, error). One it handles as it should — idle, or growing through a request — is counted in matchedPVCs only: its request is the record, and the Expanded Event on the PVC says how it ended.',
    }),
  ),
  volumesOmitted: Type.Optional(
    Type.Integer({ description: 'PVCs that would be listed in volumes, left out (those needing the least attention first) to keep the status small.' }),
  ),
  conditions: Type.Optional(
    Type.Array(Condition, {
      description:
        'Ready: True while the policy is evaluated at every pass; False (reason InvalidSpec) with what pvx cannot read of its spec — it then decides nothing, and no other policy waits on it.',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['type'],
      maxItems: 8,
    }),
  ),
});

export type PolicySpec = Static<typeof PolicySpec>;
export type PolicyStatus = Static<typeof PolicyStatus>;
export type VolumeStatus = Static<typeof VolumeStatus>;

export interface VolumeExpansionPolicy {
  apiVersion: `${typeof group}/v1alpha1`;
  kind: 'VolumeExpansionPolicy';
  metadata: V1ObjectMeta;
  spec: PolicySpec;
  status?: PolicyStatus;
}

export const volumeExpansionPolicyCRD = {
  group,
  kind: 'VolumeExpansionPolicy',
  plural: 'volumeexpansionpolicies',
  singular: 'volumeexpansionpolicy',
  shortNames: ['vep'],
  scope: 'Namespaced' as const,
  spec: PolicySpec,
  status: PolicyStatus,
  printerColumns: [
    { name: 'Mode', type: 'string', jsonPath: '.spec.mode' },
    { name: 'PVCs', type: 'integer', jsonPath: '.status.matchedPVCs' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
};
