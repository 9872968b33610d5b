// A VolumeExpansionPolicy over a StatefulSet that asks for its template to follow its claims
// (spec.statefulSetTemplate.update): once every live replica's claim of a volumeClaimTemplate has
// grown past the template's size, the policy creates a StatefulSet request for the smallest of
// their sizes with the same opt-in — every claim is already at that size or more, so the request
// only carries the size into the template (src/policies/request/template.ts), through the one path
// and audit trail of every change. Pure: the policies, the StatefulSets, claims and requests in;
// the requests to create out, named after what they ask (a create retried meets its own).
import type { V1PersistentVolumeClaim, V1StatefulSet } from '@kubernetes/client-node';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import { requestLabels } from '../../crds/keys.ts';
import type { VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { formatBytes, readBytes } from '../../k8s/quantity.ts';
import { resizeUnderway } from '../claim/resize.ts';
import { replicaClaimNames } from '../claim/statefulset.ts';
import { isFinished } from '../request/phase.ts';
import { autoscaleSpec, policySpecProblem } from './decide.ts';
import { claimPolicies, type SelectionLookups } from './selection.ts';
import { windowState } from './windows.ts';
import { generatedName } from '../shared/generated-name.ts';

export interface TemplateFollowInput {
  policies: readonly VolumeExpansionPolicy[];
  /** The cluster policies: a claim a namespaced policy leaves alone may be one's (claimPolicies). */
  clusterPolicies?: readonly ClusterVolumeExpansionPolicy[];
  lookups: SelectionLookups;
  claim: (namespace: string, name: string) => V1PersistentVolumeClaim | undefined;
  /** Every request known, those this process created and the cache does not show yet included. */
  requests: readonly VolumeExpansionRequest[];
  now: Date;
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
 * The template requests to create now, under the rules every policy action obeys: for each policy
 * that asks, is Ready (its rules read; one pvx cannot read acts on nothing), acts (mode Auto) and
 * is inside one of its maintenance windows, each template of its StatefulSet whose every live
 * replica's claim is bound, grown past the template's size, not being resized and governed by
 * this policy (of several policies over a StatefulSet, only the one that grows its claims acts),
 * when no unfinished request targets that StatefulSet — a request made earlier in the same pass
 * included.
 */
export function templateFollowRequests(input: TemplateFollowInput): VolumeExpansionRequest[] {
  const made: VolumeExpansionRequest[] = [];
  for (const policy of input.policies) {
    const sts = followedStatefulSet(policy, input);
    if (!sts) continue;
    const known = [...input.requests, ...made];
    const namespace = policy.metadata.namespace as string;
    const stsName = sts.metadata?.name as string;
    if (known.some((r) => r.metadata.namespace === namespace && r.spec?.target?.statefulSetName === stsName && !isFinished(r))) continue;
    for (const vct of sts.spec?.volumeClaimTemplates ?? []) {
      const wanted = templateToFollow(policy, sts, vct.metadata?.name as string, readBytes(vct.spec?.resources?.requests?.storage), input);
      // Made already (and finished: skipped, or the template changed back since): not again.
      if (wanted && !known.some((r) => r.metadata.namespace === namespace && r.metadata.name === wanted.metadata.name)) made.push(wanted);
    }
  }
  return made;
}

/** The StatefulSet a policy's template step follows now, or undefined when the policy may not act on it. */
function followedStatefulSet(policy: VolumeExpansionPolicy, input: TemplateFollowInput): V1StatefulSet | undefined {
  const stsName = policy.spec.statefulSetName;
  if (!stsName || !policy.spec.statefulSetTemplate?.update || (policy.spec.mode ?? 'Auto') !== 'Auto') return undefined;
  if (policySpecProblem(policy.spec) !== undefined) return undefined;
  const windows = autoscaleSpec(policy.spec).windows ?? [];
  if (!windowState(windows, input.now).open) return undefined;
  const sts = input.lookups.statefulSet(policy.metadata.namespace as string, stsName);
  return sts && !sts.metadata?.deletionTimestamp ? sts : undefined;
}

/** The request carrying a template's claims' smallest size into it, when every live replica's claim has grown past it under this policy. */
function templateToFollow(
  policy: VolumeExpansionPolicy,
  sts: V1StatefulSet,
  template: string,
  templateBytes: bigint | undefined,
  input: TemplateFollowInput,
): VolumeExpansionRequest | undefined {
  const namespace = policy.metadata.namespace as string;
  // More replicas than one request grows: a template request for them would be refused.
  const names = replicaClaimNames(sts, template);
  if (templateBytes === undefined || !names || names.length === 0) return undefined;
  const claims = names.map((n) => input.claim(namespace, n));
  if (claims.some((c) => !c || c.status?.phase !== 'Bound' || resizeUnderway(c))) return undefined;
  const governed = (c: V1PersistentVolumeClaim) => {
    const { governing } = claimPolicies(c, input.policies, input.clusterPolicies ?? [], input.lookups);
    return governing?.kind === 'VolumeExpansionPolicy' && governing.policy.metadata.uid === policy.metadata.uid;
  };
  if (!(claims as V1PersistentVolumeClaim[]).every(governed)) return undefined;
  const capacities = claims.map((c) => readBytes(c?.status?.capacity?.storage));
  if (capacities.some((b) => b === undefined)) return undefined;
  const smallest = (capacities as bigint[]).reduce((a, b) => (b < a ? b : a));
  return smallest > templateBytes ? templateRequest(policy, sts, template, formatBytes(smallest)) : undefined;
}
