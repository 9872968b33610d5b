// What pvx's own requests say about a volume's past, for budgets and cooldowns.

interface RequestRecord {
  spec?: { dryRun?: boolean };
  status?: { timeline?: { patchedAt?: string } };
}

/** When each of these requests patched its PVC (dry runs never did). */
export function modificationTimes(requests: RequestRecord[]): Date[] {
  return requests.flatMap((r) => (r.status?.timeline?.patchedAt && !r.spec?.dryRun ? [new Date(r.status.timeline.patchedAt)] : []));
}
