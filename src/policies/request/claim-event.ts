// The one Event an expansion leaves on its claim when it completes, where people look
// (`kubectl describe pvc`, `kubectl get events`): what grew it — the request, and the policy or
// StatefulSet request that made it — from what to what, why (a policy's measured decision), and how
// long each stage took from the request's creation. It replaces the Events a policy's expansion
// used to leave on the policy and the request (created, patched, completed). Pure.
import { requestAnnotations, requestLabels } from '../../crds/keys.ts';
import type { RequestStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { EventRecord } from '../../k8s/client.ts';
import { elapsed } from '../shared/duration.ts';

/** The policy that made a request (its label), if one did. */
export function policyOf(
  req: Pick<VolumeExpansionRequest, 'metadata'>,
): { kind: 'VolumeExpansionPolicy' | 'ClusterVolumeExpansionPolicy'; name: string } | undefined {
  const namespaced = req.metadata.labels?.[requestLabels.policy];
  if (namespaced) return { kind: 'VolumeExpansionPolicy', name: namespaced };
  const cluster = req.metadata.labels?.[requestLabels.clusterPolicy];
  return cluster ? { kind: 'ClusterVolumeExpansionPolicy', name: cluster } : undefined;
}

/** Who asked for the expansion, as a person reads it. */
export function requestedBy(req: Pick<VolumeExpansionRequest, 'metadata'>): string {
  const parent = req.metadata.labels?.[requestLabels.parent];
  const own = `VolumeExpansionRequest ${req.metadata.name}`;
  const policy = policyOf(req);
  if (policy) return `${policy.kind} ${policy.name} (${own})`;
  if (parent) return `VolumeExpansionRequest ${parent} (${own}, for its StatefulSet)`;
  return own;
}

/** Whether a request was made by a policy (its expansion's Events go on the claim alone). */
export const madeByPolicy = (req: Pick<VolumeExpansionRequest, 'metadata'>): boolean => policyOf(req) !== undefined;

/**
 * The claim's Event for a single-claim request that completed with a change; undefined otherwise
 * (a dry run or a class already applied changed nothing, and a StatefulSet request's children
 * each leave their own). Times are offsets from the request's creation.
 */
export function claimCompletedEvent(req: VolumeExpansionRequest, status: RequestStatus): EventRecord | undefined {
  const claim = status.pvcName ?? req.spec?.target?.pvcName;
  if (status.phase !== 'Completed' || status.targets || !claim || !status.timeline?.patchedAt) return undefined;
  const created = new Date((req.metadata.creationTimestamp ?? status.timeline.acceptedAt ?? '') as string).getTime();
  const at = (t: string | undefined) => (t === undefined || Number.isNaN(created) ? undefined : `+${elapsed(Date.parse(t) - created)}`);
  const changes = [
    status.targetSize !== undefined ? `${status.fromCapacity ?? '?'} → ${status.capacity ?? status.targetSize}` : '',
    status.targetVolumeAttributesClassName !== undefined
      ? `VolumeAttributesClass ${status.fromVolumeAttributesClassName ?? '(none)'} → ${status.targetVolumeAttributesClassName}`
      : '',
  ].filter(Boolean);
  const { patchedAt, controllerExpandedAt, modifiedAt, completedAt } = status.timeline;
  const stages = [
    ['claim patched', at(patchedAt)],
    ['controller done', at(controllerExpandedAt)],
    ['class applied', at(modifiedAt)],
    ['completed', at(completedAt)],
  ].flatMap(([what, when]) => (when ? [`${what} ${when}`] : []));
  const why = req.metadata.annotations?.[requestAnnotations.decision];
  const took = completedAt && !Number.isNaN(created) ? ` in ${elapsed(Date.parse(completedAt) - created)}` : '';
  return {
    regarding: {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      namespace: req.metadata.namespace as string,
      name: claim,
      ...(status.pvcUID ? { uid: status.pvcUID } : {}),
    },
    type: 'Normal',
    reason: status.targetSize !== undefined ? 'Expanded' : 'VolumeAttributesClassChanged',
    message: `${changes.join(', ')}${took} by ${requestedBy(req)}${why ? `: ${why}` : ''}${stages.length ? ` [${stages.join(', ')}]` : ''}`,
  };
}
