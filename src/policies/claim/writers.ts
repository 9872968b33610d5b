// Who last set a field of a claim, from its managedFields: of the entries that own the field, the
// most recent. An entry's time is the last time its manager wrote the claim (any field of it), so
// it is never earlier than that manager's change of this field — and since a write of a field by
// one manager takes it from the others, the most recent owner is the last writer, or came after it.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { fieldManager, ownsAttributesClass, ownsStorageRequest } from '../../k8s/resources.ts';
import { toDate } from './resize.ts';

export interface FieldWriter {
  /** The field manager (kubectl-patch, kubectl-client-side-apply, pvx, …). */
  manager: string;
  operation?: string;
  /** When the manager last wrote the claim (whole seconds), if recorded. */
  at?: Date;
}

/** The spec fields whose change spends a driver's modification budget. */
export type ModifiedField = 'size' | 'class';

const owns: Record<ModifiedField, (e: { fieldsV1?: object }) => boolean> = { size: ownsStorageRequest, class: ownsAttributesClass };

interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  time?: Date | string;
  fieldsV1?: object;
}

/** Who last set the field, or undefined when no entry owns it (managedFields stripped or absent). */
export function lastWriter(pvc: V1PersistentVolumeClaim, field: ModifiedField): FieldWriter | undefined {
  const owners = ((pvc.metadata?.managedFields ?? []) as ManagedFieldsEntry[]).filter(owns[field]);
  // The later of two entries with one time: the API server appends, so it wrote last.
  const latest = owners.reduce<ManagedFieldsEntry | undefined>(
    (a, b) => ((toDate(b.time)?.getTime() ?? 0) >= (toDate(a?.time)?.getTime() ?? 0) ? b : a),
    undefined,
  );
  if (!latest?.manager) return undefined;
  const at = toDate(latest.time);
  return { manager: latest.manager, ...(latest.operation ? { operation: latest.operation } : {}), ...(at ? { at } : {}) };
}

export const isPvx = (w: FieldWriter | undefined): boolean => w?.manager === fieldManager;

/**
 * When the API server recorded pvx's last write of the claim (managedFields, whole seconds): the
 * patch time after a crash lost the status write that would have said it, and the last expansion
 * a policy's cooldown counts from once the request that made it is gone (deleted, or its TTL).
 */
export function recordedPatchTime(claim: V1PersistentVolumeClaim | undefined): Date | undefined {
  const times = ((claim?.metadata?.managedFields ?? []) as ManagedFieldsEntry[])
    .filter((f) => f.manager === fieldManager && f.operation === 'Update' && !(f as { subresource?: string }).subresource)
    .map((f) => toDate(f.time))
    .filter((t): t is Date => t !== undefined);
  return times.sort((a, b) => b.getTime() - a.getTime())[0];
}
