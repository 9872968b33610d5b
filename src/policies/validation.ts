// Whether a VolumeExpansionRequest may patch its PVC now: a pure decision over the PVC, its
// StorageClass, the VolumeAttributesClass it is to get, quotas and other requests, with the clock
// passed in. Nothing is written on a guess:
// anything unknown rejects or waits, with a machine reason and a human message.
import type { V1PersistentVolumeClaim, V1ResourceQuota, V1StorageClass, V1VolumeAttributesClass } from '@kubernetes/client-node';
import { formatBytes, humanBytes, parseBytes } from '../k8s/quantity.ts';
import { budgetExhaustedMessage, type Modification } from './budget.ts';
import { nextModificationAt, type DriverProfiles } from './drivers.ts';
import { currentClass, modificationInFlight, modificationState, specClass } from './modify.ts';
import { targetBytes, type SizeSpec } from './sizing.ts';

export interface Guardrail {
  /** The ClusterVolumeExpansionPolicy it comes from. */
  policy: string;
  maxBytes?: bigint;
  maxStepBytes?: bigint;
  allowedStorageClasses?: string[];
}

export type Validation =
  /**
   * What the patch changes: targetBytes when the request grows the claim, targetClass when it
   * changes the claim's VolumeAttributesClass (from fromClass, the one applied; undefined: none).
   * Neither: the claim already is as the request asks.
   */
  | { kind: 'accept'; fromBytes: bigint; targetBytes?: bigint; fromClass?: string; targetClass?: string }
  | { kind: 'reject'; reason: string; message: string }
  | { kind: 'wait'; reason: string; message: string; retryAfterMs: number };

export interface ValidationInput {
  spec: SizeSpec & { volumeAttributesClassName?: string };
  pvcName: string;
  pvc: V1PersistentVolumeClaim | undefined;
  storageClass: V1StorageClass | undefined;
  /** The VolumeAttributesClass spec.volumeAttributesClassName names, as pvx has it; undefined: not found. */
  volumeAttributesClass?: V1VolumeAttributesClass;
  /** False when the cluster does not serve VolumeAttributesClasses to pvx (before Kubernetes 1.34, or no RBAC). Default true. */
  volumeAttributesClassesServed?: boolean;
  /**
   * A class not found is waited for until then, and rejected after (default: at once). A class
   * applied together with the request may reach pvx's cache a moment after it.
   */
  missingClassWaitUntil?: Date;
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
    return reject('PVCNotBound', `PersistentVolumeClaim ${pvcName} is ${pvc.status?.phase ?? 'not yet bound'}; only a Bound claim can be expanded or have its VolumeAttributesClass changed`);
  }
  const className = pvc.spec?.storageClassName;
  if (!className) return reject('NoStorageClass', `PersistentVolumeClaim ${pvcName} has no StorageClass; only dynamically provisioned claims can be expanded`);
  if (!sc) return reject('StorageClassNotFound', `StorageClass ${className} of ${pvcName} does not exist`);
  const resizes = input.spec.size !== undefined || input.spec.increment !== undefined;
  if (resizes && sc.allowVolumeExpansion !== true) {
    return reject('ExpansionNotAllowed', `StorageClass ${className} does not allow volume expansion (allowVolumeExpansion is not true); the API server would refuse the change`);
  }
  const capacity = bytesOf(pvc.status?.capacity?.storage);
  if (capacity === undefined) return reject('CapacityUnknown', `PersistentVolumeClaim ${pvcName} reports no status.capacity.storage`);

  let target: bigint | undefined;
  if (resizes) {
    const sized = targetBytes(input.spec, capacity);
    if (!sized.ok) return reject('InvalidSize', sized.message);
    target = sized.bytes;
    if (target <= capacity) {
      return reject('NotLarger', `target ${formatBytes(target)} is not larger than the current capacity ${formatBytes(capacity)}; volumes cannot shrink`);
    }
  }

  for (const g of input.guardrails ?? []) {
    if (g.allowedStorageClasses && !g.allowedStorageClasses.includes(className)) {
      return reject('GuardrailStorageClass', `ClusterVolumeExpansionPolicy ${g.policy} allows expansion only for StorageClasses ${g.allowedStorageClasses.join(', ')}, not ${className}`);
    }
    if (target === undefined) continue;
    if (g.maxBytes !== undefined && target > g.maxBytes) {
      return reject('GuardrailMaxSize', `ClusterVolumeExpansionPolicy ${g.policy} caps volumes at ${formatBytes(g.maxBytes)}; the target is ${formatBytes(target)}`);
    }
    if (g.maxStepBytes !== undefined && target - capacity > g.maxStepBytes) {
      return reject('GuardrailMaxStep', `ClusterVolumeExpansionPolicy ${g.policy} allows at most ${formatBytes(g.maxStepBytes)} per expansion; ${formatBytes(capacity)} → ${formatBytes(target)} adds ${formatBytes(target - capacity)}`);
    }
  }

  const fromClass = currentClass(pvc);
  const classChange = input.spec.volumeAttributesClassName === undefined ? undefined : validateClass(input, pvc, sc, input.spec.volumeAttributesClassName);
  if (classChange?.kind === 'reject' || classChange?.kind === 'wait') return classChange;
  const targetClass = classChange?.target;
  const accepted: Validation = {
    kind: 'accept',
    fromBytes: capacity,
    ...(target !== undefined ? { targetBytes: target } : {}),
    ...(fromClass !== undefined ? { fromClass } : {}),
    ...(targetClass !== undefined ? { targetClass } : {}),
  };
  // The claim already is as asked: nothing to wait for, nothing to spend.
  if (target === undefined && targetClass === undefined) return accepted;

  const requested = bytesOf(pvc.spec?.resources?.requests?.storage) ?? capacity;
  if (requested > capacity) {
    return wait('ExpansionInFlight', `${pvcName} is already being expanded to ${formatBytes(requested)} (capacity ${formatBytes(capacity)}); waiting for that to finish`, 30_000);
  }
  // One change of the volume at a time: a driver refuses to modify a volume it is still
  // modifying (EBS: "in OPTIMIZING state"), and the attempt costs a modification.
  const modifying = modificationInFlight(pvc);
  if (modifying) {
    return wait('ModificationInFlight', `${pvcName} is already being changed to VolumeAttributesClass ${modifying.target}; waiting for that to finish`, 30_000);
  }
  if (input.earlierActiveRequests.length > 0) {
    return wait('AnotherRequestActive', `request ${input.earlierActiveRequests[0]} is expanding ${pvcName}; this one waits its turn`, 30_000);
  }

  const driver = input.profiles(sc.provisioner);
  // The volume's limits with the class it will have: a class's parameters (the EBS volume type)
  // override the StorageClass's.
  const vac = input.spec.volumeAttributesClassName;
  const max = driver.maxBytes({ ...sc.parameters, ...(vac ? input.volumeAttributesClass?.parameters : {}) });
  if (target !== undefined && max !== undefined && target > max) {
    return reject('ExceedsDriverLimit', `target ${formatBytes(target)} exceeds the largest volume ${sc.provisioner} makes for StorageClass ${className}${vac ? ` with VolumeAttributesClass ${vac}` : ''} (${formatBytes(max)})`);
  }
  const budget = driver.modificationBudget;
  const nextAt = nextModificationAt(budget, input.modifications.map((m) => m.at), input.now);
  if (nextAt && budget) {
    return wait('ModificationBudgetExhausted', budgetExhaustedMessage(driver.name, pvcName, budget, input.modifications, nextAt, input.now), Math.max(1000, nextAt.getTime() - input.now.getTime()));
  }

  if (target === undefined) return accepted;
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
  return accepted;
}

/**
 * Whether the claim may be set to VolumeAttributesClass `name`: the class exists and belongs to
 * the claim's driver. `target` is the class to set, or undefined when the claim already has it.
 */
function validateClass(input: ValidationInput, pvc: V1PersistentVolumeClaim, sc: V1StorageClass, name: string): Extract<Validation, { kind: 'reject' | 'wait' }> | { kind: 'class'; target?: string } {
  const { pvcName, now } = input;
  if (input.volumeAttributesClassesServed === false) {
    return reject('VolumeAttributesClassUnsupported', `this cluster does not serve VolumeAttributesClasses to pvx (storage.k8s.io/v1, Kubernetes 1.34 or later, and pvx's RBAC to list them): ${pvcName}'s class cannot be changed through pvx`);
  }
  const state = modificationState(pvc, name);
  // Nothing to change: the class object is not needed (it may even be gone since it was applied).
  if (state.stage === 'applied' && specClass(pvc) === name) return { kind: 'class' };
  const vac = input.volumeAttributesClass;
  if (!vac) {
    const until = input.missingClassWaitUntil;
    if (until && now < until) {
      return wait('VolumeAttributesClassNotFound', `VolumeAttributesClass ${name} does not exist (or pvx has not seen it yet); waiting for it until ${until.toISOString()}, then the request is rejected`, Math.min(10_000, until.getTime() - now.getTime()));
    }
    return reject('VolumeAttributesClassNotFound', `VolumeAttributesClass ${name} does not exist: create it (kubectl get volumeattributesclasses lists those that do), then a new request`);
  }
  if (vac.driverName !== sc.provisioner) {
    return reject('VolumeAttributesClassDriverMismatch', `VolumeAttributesClass ${name} is for driver ${vac.driverName}, but ${pvcName}'s volume is provisioned by ${sc.provisioner} (StorageClass ${sc.metadata?.name}): its driver would not apply it`);
  }
  if (state.stage === 'infeasible') {
    return reject('VolumeAttributesClassInfeasible', `${pvcName} already asks for VolumeAttributesClass ${name}, and its driver refused that change as infeasible: ${state.error ?? 'no message given'}`);
  }
  return { kind: 'class', target: name };
}

function reject(reason: string, message: string): Extract<Validation, { kind: 'reject' }> {
  return { kind: 'reject', reason, message };
}

function wait(reason: string, message: string, retryAfterMs: number): Extract<Validation, { kind: 'wait' }> {
  return { kind: 'wait', reason, message, retryAfterMs };
}
