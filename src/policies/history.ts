// What pvx's own requests say about a volume's past, for budgets and cooldowns.

/** One modification of a volume counted against its driver's budget. */
export interface Modification {
  at: Date;
  /** `ver/<request name>` for a pvx request's patch; `observed:<field manager>` for a change pvx saw. */
  by: string;
  /** What changed, in words ("resized 30Gi → 40Gi"), when known. */
  change?: string;
}

interface RequestRecord {
  metadata: { name?: string };
  spec?: { dryRun?: boolean };
  status?: { fromCapacity?: string; targetSize?: string; timeline?: { patchedAt?: string } };
}

/** When each of these requests patched its PVC, and to what (dry runs never did). */
export function pvxModifications(requests: readonly RequestRecord[]): Modification[] {
  return requests.flatMap((r) => {
    const at = r.status?.timeline?.patchedAt;
    if (!at || r.spec?.dryRun) return [];
    const { fromCapacity, targetSize } = r.status ?? {};
    return [{ at: new Date(at), by: `ver/${r.metadata.name ?? '?'}`, ...(fromCapacity && targetSize ? { change: `resized ${fromCapacity} → ${targetSize}` } : {}) }];
  });
}
