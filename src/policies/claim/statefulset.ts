// The names of a StatefulSet's claims: one reading for a StatefulSet request's children, the
// policies' statefulSetName selector and the audit.

/** A StatefulSet's claims are named <template>-<statefulset>-<ordinal>. */
export const statefulSetClaimName = (template: string, statefulSet: string, ordinal: number | string): string => `${template}-${statefulSet}-${ordinal}`;

export function isStatefulSetClaim(claimName: string, statefulSet: string, template: string): boolean {
  const prefix = statefulSetClaimName(template, statefulSet, '');
  return claimName.startsWith(prefix) && /^\d+$/.test(claimName.slice(prefix.length));
}
