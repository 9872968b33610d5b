// ClusterVolumeExpansionPolicy (pvx.dev/v1alpha1, cluster-scoped): an administrator's guardrails
// over every VolumeExpansionRequest in the namespaces it selects — manual requests and those of
// namespaced policies alike. A request that breaks one is Rejected before anything is written.
import { Type, type Static } from '@sinclair/typebox';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { positiveQuantity } from './schema.ts';
import { group } from './volume-expansion-request.ts';

const quantity = positiveQuantity;

export const ClusterPolicySpec = Type.Object({
  namespaceSelector: Type.Optional(
    Type.Object({ matchLabels: Type.Optional(Type.Record(Type.String(), Type.String())) }, { description: 'Namespaces with these labels (all when empty).' }),
  ),
  guardrails: Type.Object(
    {
      maxSize: Type.Optional(quantity('No PVC grows beyond this size.')),
      maxStep: Type.Optional(quantity('No single expansion adds more than this.')),
      allowedStorageClasses: Type.Optional(Type.Array(Type.String(), { description: 'Only PVCs of these StorageClasses may grow.', maxItems: 64 })),
    },
    {
      'x-kubernetes-validations': [
        { rule: 'has(self.maxSize) || has(self.maxStep) || has(self.allowedStorageClasses)', message: 'set at least one guardrail: maxSize, maxStep or allowedStorageClasses' },
      ],
    },
  ),
});

export type ClusterPolicySpec = Static<typeof ClusterPolicySpec>;

export interface ClusterVolumeExpansionPolicy {
  apiVersion: `${typeof group}/v1alpha1`;
  kind: 'ClusterVolumeExpansionPolicy';
  metadata: V1ObjectMeta;
  spec: ClusterPolicySpec;
}

export const clusterVolumeExpansionPolicyCRD = {
  group,
  kind: 'ClusterVolumeExpansionPolicy',
  plural: 'clustervolumeexpansionpolicies',
  singular: 'clustervolumeexpansionpolicy',
  shortNames: ['cvep'],
  scope: 'Cluster' as const,
  spec: ClusterPolicySpec,
  status: Type.Object({}),
  printerColumns: [
    { name: 'Max size', type: 'string', jsonPath: '.spec.guardrails.maxSize' },
    { name: 'Max step', type: 'string', jsonPath: '.spec.guardrails.maxStep' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
};
