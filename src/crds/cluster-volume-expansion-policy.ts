// ClusterVolumeExpansionPolicy (pvx.dev/v1alpha1, cluster-scoped), over the namespaces it selects:
// - guardrails on every VolumeExpansionRequest there — manual requests and those of any policy
//   alike; a request that breaks one is Rejected before anything is written;
// - optionally triggers, which grow the PVCs it selects as a VolumeExpansionPolicy does. A PVC that
//   a namespaced policy selects is left to that policy (the namespace's owners know it better); of
//   several cluster policies, the first by name takes it.
import { Type, type Static } from '@sinclair/typebox';
import type { V1ObjectMeta } from '@kubernetes/client-node';
import { limits } from './limits.ts';
import { cel, matchLabels, objectName, positiveQuantity } from './schema.ts';
import { PolicyStatus, autoscaleFields, optionalTriggers } from './volume-expansion-policy.ts';
import { group } from './volume-expansion-request.ts';

const quantity = positiveQuantity;

export const ClusterPolicySpec = Type.Object(
  {
    namespaceSelector: Type.Optional(matchLabels('Namespaces with these labels (all when empty).')),
    ...autoscaleFields,
    triggers: optionalTriggers,
    guardrails: Type.Optional(
      Type.Object(
        {
          maxSize: Type.Optional(quantity('No PVC grows beyond this size.')),
          maxStep: Type.Optional(quantity('No single expansion adds more than this.')),
          allowedStorageClasses: Type.Optional(
            Type.Array(objectName(), { description: 'Only PVCs of these StorageClasses may grow.', maxItems: limits.allowedStorageClasses }),
          ),
          requireApproval: Type.Optional(
            Type.Boolean({
              description:
                'Every expansion in the selected namespaces waits for an approval (pvx approve, by a holder of approve on volumeexpansionrequests/approval), whoever asked for it: a policy in Auto mode, or a request a namespace editor created. Namespace editors cannot turn it off.',
            }),
          ),
        },
        {
          'x-kubernetes-validations': [
            cel(
              'has(self.maxSize) || has(self.maxStep) || has(self.allowedStorageClasses) || (has(self.requireApproval) && self.requireApproval)',
              'set at least one guardrail: maxSize, maxStep, allowedStorageClasses or requireApproval',
            ),
          ],
        },
      ),
    ),
  },
  { 'x-kubernetes-validations': [cel('has(self.guardrails) || has(self.triggers)', 'set guardrails, triggers or both')] },
);

export type ClusterPolicySpec = Static<typeof ClusterPolicySpec>;

export interface ClusterVolumeExpansionPolicy {
  apiVersion: `${typeof group}/v1alpha1`;
  kind: 'ClusterVolumeExpansionPolicy';
  metadata: V1ObjectMeta;
  spec: ClusterPolicySpec;
  status?: PolicyStatus;
}

export const clusterVolumeExpansionPolicyCRD = {
  group,
  kind: 'ClusterVolumeExpansionPolicy',
  plural: 'clustervolumeexpansionpolicies',
  singular: 'clustervolumeexpansionpolicy',
  shortNames: ['cvep'],
  scope: 'Cluster' as const,
  spec: ClusterPolicySpec,
  status: PolicyStatus,
  printerColumns: [
    { name: 'Mode', type: 'string', jsonPath: '.spec.mode' },
    { name: 'PVCs', type: 'integer', jsonPath: '.status.matchedPVCs' },
    { name: 'Max size', type: 'string', jsonPath: '.spec.guardrails.maxSize' },
    { name: 'Max step', type: 'string', jsonPath: '.spec.guardrails.maxStep' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
};
