// The names of a StatefulSet's claims: one reading for a StatefulSet request's children, the
// policies' statefulSetName selector and the audit.
import type { V1StatefulSet } from '@kubernetes/client-node';
import { limits } from '../../crds/limits.ts';

/** A StatefulSet's claims are named <template>-<statefulset>-<ordinal>. */
export const statefulSetClaimName = (template: string, statefulSet: string, ordinal: number | string): string => `${template}-${statefulSet}-${ordinal}`;

/** How many replicas a StatefulSet runs (spec.replicas, default 1), as its spec says. */
export const replicaCount = (sts: V1StatefulSet): number => Math.max(0, sts.spec?.replicas ?? 1);

/**
 * The claims of a StatefulSet's live replicas for one template: ordinals spec.ordinals.start (default
 * 0) to start + replicas − 1 (replicas default 1). Claims of other ordinals (retained from an
 * earlier scale or ordinal range) are not live targets. Undefined when it runs more replicas than
 * one request grows (`limits.targets`): the count is checked before a name is built, so a
 * namespace editor's `replicas: 20000000` costs nothing (one name per replica ran pvx out of memory).
 */
export function replicaClaimNames(sts: V1StatefulSet, template: string): string[] | undefined {
  const name = sts.metadata?.name as string;
  const start = sts.spec?.ordinals?.start ?? 0;
  const replicas = replicaCount(sts);
  if (!Number.isSafeInteger(replicas) || replicas > limits.targets) return undefined;
  return Array.from({ length: replicas }, (_, i) => statefulSetClaimName(template, name, start + i));
}

export function isStatefulSetClaim(claimName: string, statefulSet: string, template: string): boolean {
  const prefix = statefulSetClaimName(template, statefulSet, '');
  return claimName.startsWith(prefix) && /^\d+$/.test(claimName.slice(prefix.length));
}
