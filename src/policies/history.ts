// What pvx's own requests say about a volume's past, for budgets and cooldowns.

/** One modification of a volume counted against its driver's budget. */
export interface Modification {
  at: Date;
  /** `ver/<request name>` for a pvx request's patch; `observed:<field manager>` for a change pvx saw. */
  by: string;
  /** What changed, in words ("resized 30Gi → 40Gi"), when known. */
  change?: string;
}

/** What the history reads of a request. */
export interface RequestRecord {
  metadata: { name?: string };
  spec?: { dryRun?: boolean };
  status?: { fromCapacity?: string; targetSize?: string; errorSince?: string; timeline?: { patchedAt?: string; controllerExpandedAt?: string } };
}

/**
 * The modifications these requests made (dry runs made none), each dated when the driver made it:
 * seconds after the claim's patch — or, when the driver refused first (status.errorSince: a rate
 * limit, a previous modification still optimizing), when the controller stage was seen done,
 * hours later maybe, so the window holds it as long as the driver's does.
 */
export function pvxModifications(requests: readonly RequestRecord[]): Modification[] {
  return requests.flatMap((r) => {
    const { patchedAt, controllerExpandedAt } = r.status?.timeline ?? {};
    if (!patchedAt || r.spec?.dryRun) return [];
    const refusedFirst = r.status?.errorSince !== undefined && controllerExpandedAt !== undefined && Date.parse(controllerExpandedAt) > Date.parse(patchedAt);
    const at = refusedFirst ? (controllerExpandedAt as string) : patchedAt;
    const { fromCapacity, targetSize } = r.status ?? {};
    return [{ at: new Date(at), by: `ver/${r.metadata.name ?? '?'}`, ...(fromCapacity && targetSize ? { change: `resized ${fromCapacity} → ${targetSize}` } : {}) }];
  });
}
