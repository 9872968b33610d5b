// The names of a StatefulSet's claims: one reading for a StatefulSet request's children, the
// policies' statefulSetName selector and the audit.
import type { V1StatefulSet } from '@kubernetes/client-node';

/** A StatefulSet's claims are named <template>-<statefulset>-<ordinal>. */
export const statefulSetClaimName = (template: string, statefulSet: string, ordinal: number | string): string => `${template}-${statefulSet}-${ordinal}`;

/**
 * The claims of a StatefulSet's live replicas for one template: ordinals spec.ordinals.start (default
 * 0) to start + replicas − 1 (replicas default 1). Claims of other ordinals (retained from an
 * earlier scale or ordinal range) are not live targets.
 */
export function replicaClaimNames(sts: V1StatefulSet, template: string): string[] {
  const name = sts.metadata?.name as string;
  const start = sts.spec?.ordinals?.start ?? 0;
  const replicas = sts.spec?.replicas ?? 1;
  return Array.from({ length: Math.max(0, replicas) }, (_, i) => statefulSetClaimName(template, name, start + i));
}

export function isStatefulSetClaim(claimName: string, statefulSet: string, template: string): boolean {
  const prefix = statefulSetClaimName(template, statefulSet, '');
  return claimName.startsWith(prefix) && /^\d+$/.test(claimName.slice(prefix.length));
}
