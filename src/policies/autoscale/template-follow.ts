// A VolumeExpansionPolicy over a StatefulSet that asks for its template to follow its claims
// (spec.statefulSetTemplate.update): once every live replica's claim of a volumeClaimTemplate has
// grown past the template's size, the policy creates a StatefulSet request for the smallest of
// their sizes with the same opt-in — every claim is already at that size or more, so the request
// only carries the size into the template (src/policies/request/template.ts), through the one path
// and audit trail of every change. Pure: the policies, the StatefulSets, claims and requests in;
// the requests to create out, named after what they ask (a create retried meets its own).
import type { V1PersistentVolumeClaim, V1StatefulSet } from '@kubernetes/client-node';
import { requestLabels } from '../../crds/keys.ts';
import type { VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import type { Phase, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { formatBytes, readBytes } from '../../k8s/quantity.ts';
import { resizeUnderway } from '../claim/resize.ts';
import { replicaClaimNames } from '../claim/statefulset.ts';
import { finishedPhases } from '../request/phase.ts';
import { generatedName } from '../shared/generated-name.ts';

export interface TemplateFollowInput {
  policies: readonly VolumeExpansionPolicy[];
  statefulSet: (namespace: string, name: string) => V1StatefulSet | undefined;
  claim: (namespace: string, name: string) => V1PersistentVolumeClaim | undefined;
  requests: readonly VolumeExpansionRequest[];
}

/** The request a policy creates to carry `size` into a template. */
export function templateRequest(policy: VolumeExpansionPolicy, sts: V1StatefulSet, template: string, size: string): VolumeExpansionRequest {
  const namespace = policy.metadata.namespace as string;
  const stsName = sts.metadata?.name as string;
  return {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: {
      name: generatedName(
        [policy.metadata.name as string, stsName, template],
        ['template', namespace, policy.metadata.name, stsName, sts.metadata?.uid ?? '', template, size],
      ),
      namespace,
      labels: { [requestLabels.policy]: policy.metadata.name as string },
      ownerReferences: [
        { apiVersion: policy.apiVersion, kind: policy.kind, name: policy.metadata.name as string, uid: policy.metadata.uid as string, controller: true },
      ],
    },
    spec: {
      target: { statefulSetName: stsName, volumeClaimTemplate: template },
      size,
      statefulSetTemplate: { update: true, evenIfManaged: policy.spec.statefulSetTemplate?.evenIfManaged ?? false },
    },
  };
}

/**
 * The template requests to create now: for each policy that asks, each template of its
 * StatefulSet whose every live replica's claim is bound, grown past the template's size and not
 * being resized, when no unfinished request targets that StatefulSet.
 */
export function templateFollowRequests(input: TemplateFollowInput): VolumeExpansionRequest[] {
  return input.policies.flatMap((policy) => {
    const stsName = policy.spec.statefulSetName;
    if (!stsName || !policy.spec.statefulSetTemplate?.update || (policy.spec.mode ?? 'Auto') !== 'Auto') return [];
    const namespace = policy.metadata.namespace as string;
    const sts = input.statefulSet(namespace, stsName);
    if (!sts || sts.metadata?.deletionTimestamp) return [];
    const busy = input.requests.some(
      (r) => r.metadata.namespace === namespace && r.spec?.target?.statefulSetName === stsName && !finishedPhases.has(r.status?.phase as Phase),
    );
    if (busy) return [];
    return (sts.spec?.volumeClaimTemplates ?? []).flatMap((vct) => {
      const template = vct.metadata?.name as string;
      const templateBytes = readBytes(vct.spec?.resources?.requests?.storage);
      const names = replicaClaimNames(sts, template);
      if (templateBytes === undefined || names.length === 0) return [];
      const claims = names.map((n) => input.claim(namespace, n));
      if (claims.some((c) => !c || c.status?.phase !== 'Bound' || resizeUnderway(c))) return [];
      const capacities = claims.map((c) => readBytes(c?.status?.capacity?.storage));
      if (capacities.some((b) => b === undefined)) return [];
      const smallest = (capacities as bigint[]).reduce((a, b) => (b < a ? b : a));
      if (smallest <= templateBytes) return [];
      const wanted = templateRequest(policy, sts, template, formatBytes(smallest));
      // Made already (and finished: skipped, or the template changed back since): not again.
      if (input.requests.some((r) => r.metadata.namespace === namespace && r.metadata.name === wanted.metadata.name)) return [];
      return [wanted];
    });
  });
}
