// spec.recovery Auto (KEP-1790): a claim whose target is out of reach is lowered, each size tried
// once, so it is not left stuck.
import type { V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import { pvcAnnotations } from '../../crds/keys.ts';
import type { RequestStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { MiB, formatBytes, readBytes, roundUp } from '../../k8s/quantity.ts';
import { type DriverProfile } from '../budget/drivers.ts';
import { ledgerAnnotations } from '../budget/ledger.ts';
import { type RequestDecision } from './decision.ts';
import { trackEveryMs } from './timing.ts';

/**
 * spec.recovery Auto after a target the driver cannot reach (KEP-1790): lower the claim's request
 * to the largest size the driver profile allows, else to the smallest Kubernetes permits (just
 * above status.capacity), so the claim is not left stuck. Each size is tried once; the API server
 * has the last word: a size it refuses is recorded as refused and the next one is tried.
 * Undefined when there is nothing left to try. Past the deadline (`ended`), the claim is still
 * lowered once, as recovery promises, and the request then ends.
 */
export interface RecoveryInput {
  request: VolumeExpansionRequest;
  pvc: V1PersistentVolumeClaim;
  storageClass: V1StorageClass | undefined;
  profile: DriverProfile;
  /** The request's status as it stands, which each decision below builds on. */
  base: RequestStatus;
  /** Sizes the claim was lowered to already, and sizes the API server refused: none is tried again. */
  attempted: string[];
  refused: string[];
  /** Why the target is out of reach, in words. */
  why: string;
  now: Date;
  /** Past the deadline: how the request ends once the claim is lowered. */
  ended?: (state: string, extra: RequestStatus) => RequestDecision;
}

export function recover(input: RecoveryInput): RequestDecision | undefined {
  const { request: req, pvc, storageClass: sc, profile, base, attempted, refused, why, now, ended } = input;
  const name = pvc.metadata?.name as string;
  const capacity = readBytes(pvc.status?.capacity?.storage ?? '0') ?? 0n;
  const requested = readBytes(pvc.spec?.resources?.requests?.storage ?? '0') ?? 0n;
  const unit = profile.granularity > MiB ? profile.granularity : MiB;
  let max: bigint | undefined;
  try {
    max = profile.maxBytes(sc?.parameters ?? {});
  } catch {
    max = undefined;
  }
  const candidates = [max, roundUp(capacity + 1n, unit)].filter((b): b is bigint => b !== undefined && b > capacity && b < requested).map(formatBytes);
  const next = candidates.find((c) => !attempted.includes(c) && !refused.includes(c));
  if (!next) return undefined;
  const recovery = (lowered: string[], refusedSizes: string[]) => ({
    attemptedSizes: lowered,
    ...(refusedSizes.length > 0 ? { refusedSizes } : {}),
    reason: why,
  });
  return {
    kind: 'patch',
    // The size joins attemptedSizes once the API server has lowered the claim to it (refusedSizes
    // if it refused); a lowering whose answer was lost is read back from the claim's own pvx.dev/recovered-to.
    record: {
      ...base,
      phase: 'Recovering',
      reason: 'Lowering',
      message: `${base.targetSize} is out of reach (${why}); lowering the claim's request to ${next}`,
    },
    patch: {
      claimName: name,
      uid: pvc.metadata?.uid ?? '',
      resourceVersion: pvc.metadata?.resourceVersion ?? '',
      storage: next,
      annotations: {
        [pvcAnnotations.recoveredTo]: next,
        ...ledgerAnnotations(pvc, profile.modificationBudget, { request: req.metadata.name as string, size: next, spends: false }, now),
      },
    },
    event: { reason: 'Recovering', message: `${base.targetSize} is out of reach; lowered ${name}'s request to ${next}` },
    onPatched: () => {
      const lowered = { recovery: recovery([...attempted, next], refused) };
      if (ended) return ended(`${base.targetSize} was out of reach (${why}); the claim's request was lowered to ${next} so it is not left stuck`, lowered);
      return {
        kind: 'status',
        status: {
          ...base,
          ...lowered,
          phase: 'Recovering',
          reason: 'LoweredRequest',
          message: `${base.targetSize} is out of reach (${why}); lowered the claim's request to ${next}`,
        },
        requeueAfterMs: trackEveryMs,
      };
    },
    // Refused: remember it as refused and let the next reconcile try the next candidate (or end).
    onRefused: (_code, message) => ({
      kind: 'status',
      status: {
        ...base,
        recovery: recovery(attempted, [...refused, next]),
        phase: 'Recovering',
        reason: 'RecoveryRefused',
        message: `the API server refused lowering the claim to ${next}: ${message}`,
      },
      requeueAfterMs: 1000,
    }),
  };
}
