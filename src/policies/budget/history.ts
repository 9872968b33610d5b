// What pvx's own requests say about a volume's past, for budgets and cooldowns.

/** One modification of a volume counted against its driver's budget. */
export interface Modification {
  at: Date;
  /** `ver/<request name>` for a pvx request's patch; `observed:<field manager>` for a change pvx saw. */
  by: string;
  /** What changed, in words ("resized 30Gi → 40Gi"), when known. */
  change?: string;
  /** It changed the volume's performance (a VolumeAttributesClass change): what a performance budget counts. */
  performance?: boolean;
}

/** What the history reads of a request. */
export interface RequestRecord {
  metadata: { name?: string };
  spec?: { dryRun?: boolean; volumeAttributesClassName?: string };
  status?: { fromCapacity?: string; targetSize?: string; errorSince?: string; timeline?: { patchedAt?: string; controllerExpandedAt?: string } };
}

/**
 * The modifications these requests made (dry runs made none), each dated no earlier than the
 * driver made it, so the window holds it at least as long as the driver's does: when the
 * controller stage was seen done (the driver's ModifyVolume had started by then — seconds after
 * the claim's patch, or hours after when the driver refused first, a rate limit or a previous
 * modification still optimizing), else the patch. EC2 counts from its own start time, which a
 * patch time precedes by the resizer's and the driver's latency: dated at the patch, the next
 * modification went to EC2 a second too early (the EBS e2e suite saw it refused).
 */
export function pvxModifications(requests: readonly RequestRecord[]): Modification[] {
  return requests.flatMap((r) => {
    const { patchedAt, controllerExpandedAt } = r.status?.timeline ?? {};
    if (!patchedAt || r.spec?.dryRun) return [];
    const at = controllerExpandedAt !== undefined && Date.parse(controllerExpandedAt) > Date.parse(patchedAt) ? controllerExpandedAt : patchedAt;
    const { fromCapacity, targetSize } = r.status ?? {};
    return [
      {
        at: new Date(at),
        by: `ver/${r.metadata.name ?? '?'}`,
        ...(fromCapacity && targetSize ? { change: `resized ${fromCapacity} → ${targetSize}` } : {}),
        ...(r.spec?.volumeAttributesClassName ? { performance: true } : {}),
      },
    ];
  });
}
