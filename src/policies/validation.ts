// Whether a VolumeExpansionRequest may patch its PVC now: a pure decision over the PVC, its
// StorageClass, quotas and other requests, with the clock passed in. Nothing is written on a guess:
// anything unknown rejects or waits, with a machine reason and a human message.
import type { V1PersistentVolumeClaim, V1ResourceQuota, V1StorageClass } from '@kubernetes/client-node';
import { formatBytes, humanBytes, parseBytes } from '../k8s/quantity.ts';
import { budgetExhaustedMessage, type Modification } from './budget.ts';
import { nextModificationAt, type DriverProfiles } from './drivers.ts';
import { targetBytes, type SizeSpec } from './sizing.ts';

export interface Guardrail {
  /** The ClusterVolumeExpansionPolicy it comes from. */
  policy: string;
  maxBytes?: bigint;
  maxStepBytes?: bigint;
  allowedStorageClasses?: string[];
}

export type Validation =
  | { kind: 'accept'; fromBytes: bigint; targetBytes: bigint }
  | { kind: 'reject'; reason: string; message: string }
  | { kind: 'wait'; reason: string; message: string; retryAfterMs: number };

export interface ValidationInput {
  spec: SizeSpec;
  pvcName: string;
  pvc: V1PersistentVolumeClaim | undefined;
  storageClass: V1StorageClass | undefined;
  quotas: V1ResourceQuota[];
  /** Names of other unfinished requests for the same PVC created before this one. */
  earlierActiveRequests: string[];
  /** The volume's modifications pvx knows of (src/policies/budget.ts, claimModifications), for driver budgets. */
  modifications: Modification[];
  /** The driver profiles: the claim's class's provisioner picks its limits and budget. */
  profiles: DriverProfiles;
  /** Guardrails of the ClusterVolumeExpansionPolicies that cover the namespace. */
  guardrails?: Guardrail[];
  now: Date;
}

const bytesOf = (q: string | undefined): bigint | undefined => (q === undefined ? undefined : parseBytes(q));

export function validateRequest(input: ValidationInput): Validation {
  const { pvc, storageClass: sc, pvcName } = input;
  if (!pvc) return reject('PVCNotFound', `PersistentVolumeClaim ${pvcName} does not exist in this namespace`);
  if (pvc.status?.phase !== 'Bound') {
    return reject('PVCNotBound', `PersistentVolumeClaim ${pvcName} is ${pvc.status?.phase ?? 'not yet bound'}; only a Bound claim can be expanded`);
  }
  const className = pvc.spec?.storageClassName;
  if (!className) return reject('NoStorageClass', `PersistentVolumeClaim ${pvcName} has no StorageClass; only dynamically provisioned claims can be expanded`);
  if (!sc) return reject('StorageClassNotFound', `StorageClass ${className} of ${pvcName} does not exist`);
  if (sc.allowVolumeExpansion !== true) {
    return reject('ExpansionNotAllowed', `StorageClass ${className} does not allow volume expansion (allowVolumeExpansion is not true); the API server would refuse the change`);
  }
  const capacity = bytesOf(pvc.status?.capacity?.storage);
  if (capacity === undefined) return reject('CapacityUnknown', `PersistentVolumeClaim ${pvcName} reports no status.capacity.storage`);

  const sized = targetBytes(input.spec, capacity);
  if (!sized.ok) return reject('InvalidSize', sized.message);
  const target = sized.bytes;
  if (target <= capacity) {
    return reject('NotLarger', `target ${formatBytes(target)} is not larger than the current capacity ${formatBytes(capacity)}; volumes cannot shrink`);
  }

  for (const g of input.guardrails ?? []) {
    if (g.allowedStorageClasses && !g.allowedStorageClasses.includes(className)) {
      return reject('GuardrailStorageClass', `ClusterVolumeExpansionPolicy ${g.policy} allows expansion only for StorageClasses ${g.allowedStorageClasses.join(', ')}, not ${className}`);
    }
    if (g.maxBytes !== undefined && target > g.maxBytes) {
      return reject('GuardrailMaxSize', `ClusterVolumeExpansionPolicy ${g.policy} caps volumes at ${formatBytes(g.maxBytes)}; the target is ${formatBytes(target)}`);
    }
    if (g.maxStepBytes !== undefined && target - capacity > g.maxStepBytes) {
      return reject('GuardrailMaxStep', `ClusterVolumeExpansionPolicy ${g.policy} allows at most ${formatBytes(g.maxStepBytes)} per expansion; ${formatBytes(capacity)} → ${formatBytes(target)} adds ${formatBytes(target - capacity)}`);
    }
  }

  const requested = bytesOf(pvc.spec?.resources?.requests?.storage) ?? capacity;
  if (requested > capacity) {
    return wait('ExpansionInFlight', `${pvcName} is already being expanded to ${formatBytes(requested)} (capacity ${formatBytes(capacity)}); waiting for that to finish`, 30_000);
  }
  if (input.earlierActiveRequests.length > 0) {
    return wait('AnotherRequestActive', `request ${input.earlierActiveRequests[0]} is expanding ${pvcName}; this one waits its turn`, 30_000);
  }

  const driver = input.profiles(sc.provisioner);
  const max = driver.maxBytes(sc.parameters ?? {});
  if (max !== undefined && target > max) {
    return reject('ExceedsDriverLimit', `target ${formatBytes(target)} exceeds the largest volume ${sc.provisioner} makes for StorageClass ${className} (${formatBytes(max)})`);
  }
  const budget = driver.modificationBudget;
  const nextAt = nextModificationAt(budget, input.modifications.map((m) => m.at), input.now);
  if (nextAt && budget) {
    return wait('ModificationBudgetExhausted', budgetExhaustedMessage(driver.name, pvcName, budget, input.modifications, nextAt, input.now), Math.max(1000, nextAt.getTime() - input.now.getTime()));
  }

  // ResourceQuota admission charges a claim max(spec, allocated); the growth is charged on top.
  const allocated = bytesOf(pvc.status?.allocatedResources?.storage) ?? 0n;
  const charged = requested > allocated ? requested : allocated;
  const delta = target - charged;
  for (const q of input.quotas) {
    for (const key of ['requests.storage', `${className}.storageclass.storage.k8s.io/requests.storage`]) {
      const hard = bytesOf(q.status?.hard?.[key] ?? q.spec?.hard?.[key]);
      if (hard === undefined) continue;
      const used = bytesOf(q.status?.used?.[key]) ?? 0n;
      if (used + delta > hard) {
        return reject(
          'QuotaExceeded',
          `ResourceQuota ${q.metadata?.name} limits ${key} to ${formatBytes(hard)}; ${formatBytes(used)} is used and growing ${pvcName} to ${formatBytes(target)} needs ${humanBytes(delta)} more`,
        );
      }
    }
  }
  return { kind: 'accept', fromBytes: capacity, targetBytes: target };
}

function reject(reason: string, message: string): Validation {
  return { kind: 'reject', reason, message };
}

function wait(reason: string, message: string, retryAfterMs: number): Validation {
  return { kind: 'wait', reason, message, retryAfterMs };
}
