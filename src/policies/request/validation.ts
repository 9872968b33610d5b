// Whether a VolumeExpansionRequest may patch its PVC now: a pure decision over the PVC, its
// StorageClass, the VolumeAttributesClass it is to get, quotas and other requests, with the clock
// passed in. Nothing is written on a guess:
// anything unknown rejects or waits, with a machine reason and a human message.
import type { V1PersistentVolumeClaim, V1ResourceQuota, V1StorageClass, V1VolumeAttributesClass } from '@kubernetes/client-node';
import { formatBytes, humanBytes, parseBytes } from '../../k8s/quantity.ts';
import { budgetExhaustedMessage, spendsBudget, type Modification } from '../budget/budget.ts';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import { nextModificationAt, type DriverProfile, type DriverProfiles } from '../budget/drivers.ts';
import { matchesLabels } from '../shared/labels.ts';
import { currentClass, modificationInFlight, modificationState, specClass } from '../claim/modify.ts';
import { targetBytes, type SizeSpec } from './sizing.ts';

export interface Guardrail {
  /** The ClusterVolumeExpansionPolicy it comes from. */
  policy: string;
  maxBytes?: bigint;
  maxStepBytes?: bigint;
  allowedStorageClasses?: string[];
  /** Every expansion in the namespace waits for an approval, whoever asked (plan.ts, approval). */
  requireApproval?: boolean;
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
  /** The volume's modifications pvx knows of (src/policies/budget/budget.ts, claimModifications), for driver budgets. */
  modifications: Modification[];
  /** The driver profiles: the claim's class's provisioner picks its limits and budget. */
  profiles: DriverProfiles;
  /** Guardrails of the ClusterVolumeExpansionPolicies that cover the namespace. */
  guardrails?: Guardrail[];
  /**
   * Set (why, in words) when the guardrails that apply cannot be known yet — a guardrail selects
   * namespaces by label and the claim's namespace has not reached pvx's cache: the request waits
   * (a guardrail fails closed), it is never validated without them.
   */
  guardrailsUnknown?: string;
  now: Date;
}

const bytesOf = (q: string | undefined): bigint | undefined => (q === undefined ? undefined : parseBytes(q));

export function validateRequest(input: ValidationInput): Validation {
  const { pvc, storageClass: sc, pvcName } = input;
  if (!pvc) return reject('PVCNotFound', `PersistentVolumeClaim ${pvcName} does not exist in this namespace`);
  const unbound = bindingCheck(pvc, pvcName);
  if (unbound) return unbound;
  const resizes = input.spec.size !== undefined || input.spec.increment !== undefined;
  const classRefusal = storageClassCheck(pvc, sc, pvcName, resizes);
  if (classRefusal) return classRefusal;
  const className = pvc.spec?.storageClassName as string;
  const storageClass = sc as V1StorageClass;
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

  if (input.guardrailsUnknown)
    return wait('GuardrailsUnknown', `${input.guardrailsUnknown}; waiting to know which cluster guardrails apply before anything is changed`, 5000);
  const guarded = guardrailCheck(input.guardrails ?? [], className, capacity, target);
  if (guarded) return guarded;

  const fromClass = currentClass(pvc);
  const classChange =
    input.spec.volumeAttributesClassName === undefined ? undefined : validateClass(input, pvc, storageClass, input.spec.volumeAttributesClassName);
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
    return wait(
      'ExpansionInFlight',
      `${pvcName} is already being expanded to ${formatBytes(requested)} (capacity ${formatBytes(capacity)}); waiting for that to finish`,
      30_000,
    );
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

  const driver = input.profiles(storageClass.provisioner);
  const vac = input.spec.volumeAttributesClassName;
  const tooLarge =
    target === undefined
      ? undefined
      : driverLimitCheck(driver, storageClass, className, target, vac ? { name: vac, parameters: input.volumeAttributesClass?.parameters } : undefined);
  if (tooLarge) return tooLarge;
  const spent = budgetCheck(driver, pvcName, input.modifications, input.now, { performance: vac !== undefined });
  if (spent) return spent;

  if (target === undefined) return accepted;
  return quotaCheck(pvc, pvcName, target, input.quotas) ?? accepted;
}

/** Only a Bound claim can be expanded (PersistentVolumeClaimResize admission refuses the others). */
export function bindingCheck(pvc: V1PersistentVolumeClaim, pvcName: string): Refusal | undefined {
  if (pvc.status?.phase === 'Bound') return undefined;
  return reject(
    'PVCNotBound',
    `PersistentVolumeClaim ${pvcName} is ${pvc.status?.phase ?? 'not yet bound'}; only a Bound claim can be expanded or have its VolumeAttributesClass changed`,
  );
}

/** The claim has a StorageClass that exists and, for a resize, allows expansion. */
export function storageClassCheck(pvc: V1PersistentVolumeClaim, sc: V1StorageClass | undefined, pvcName: string, resizes = true): Refusal | undefined {
  const className = pvc.spec?.storageClassName;
  if (!className) return reject('NoStorageClass', `PersistentVolumeClaim ${pvcName} has no StorageClass; only dynamically provisioned claims can be expanded`);
  if (!sc) return reject('StorageClassNotFound', `StorageClass ${className} of ${pvcName} does not exist`);
  if (resizes && sc.allowVolumeExpansion !== true) {
    return reject(
      'ExpansionNotAllowed',
      `StorageClass ${className} does not allow volume expansion (allowVolumeExpansion is not true); the API server would refuse the change`,
    );
  }
  return undefined;
}

/** The cluster guardrails' verdict on growing a claim of `className` from `capacity` to `target` (no target: only the class is judged). */
export function guardrailCheck(guardrails: readonly Guardrail[], className: string, capacity: bigint, target: bigint | undefined): Refusal | undefined {
  for (const g of guardrails) {
    if (g.allowedStorageClasses && !g.allowedStorageClasses.includes(className)) {
      return reject(
        'GuardrailStorageClass',
        `ClusterVolumeExpansionPolicy ${g.policy} allows expansion only for StorageClasses ${g.allowedStorageClasses.join(', ')}, not ${className}`,
      );
    }
    if (target === undefined) continue;
    if (g.maxBytes !== undefined && target > g.maxBytes) {
      return reject(
        'GuardrailMaxSize',
        `ClusterVolumeExpansionPolicy ${g.policy} caps volumes at ${formatBytes(g.maxBytes)}; the target is ${formatBytes(target)}`,
      );
    }
    if (g.maxStepBytes !== undefined && target - capacity > g.maxStepBytes) {
      return reject(
        'GuardrailMaxStep',
        `ClusterVolumeExpansionPolicy ${g.policy} allows at most ${formatBytes(g.maxStepBytes)} per expansion; ${formatBytes(capacity)} → ${formatBytes(target)} adds ${formatBytes(target - capacity)}`,
      );
    }
  }
  return undefined;
}

/**
 * The driver makes no volume of `target` for the class. The volume's limits are those of the class
 * it will have: a VolumeAttributesClass's parameters (the EBS volume type) override the StorageClass's.
 */
export function driverLimitCheck(
  driver: DriverProfile,
  sc: V1StorageClass,
  className: string,
  target: bigint,
  vac?: { name: string; parameters?: Record<string, string> },
): Refusal | undefined {
  const max = driver.maxBytes({ ...sc.parameters, ...(vac ? vac.parameters : {}) });
  if (max === undefined || target <= max) return undefined;
  return reject(
    'ExceedsDriverLimit',
    `target ${formatBytes(target)} exceeds the largest volume ${sc.provisioner} makes for StorageClass ${className}${vac ? ` with VolumeAttributesClass ${vac.name}` : ''} (${formatBytes(max)})`,
  );
}

/**
 * The driver's modification budget for the volume is spent: wait until its window frees one — when
 * the change spends it (`performance`: it changes the VolumeAttributesClass).
 */
export function budgetCheck(
  driver: DriverProfile,
  pvcName: string,
  modifications: Modification[],
  now: Date,
  change: { performance: boolean },
): Extract<Validation, { kind: 'wait' }> | undefined {
  const budget = driver.modificationBudget;
  if (!spendsBudget(budget, change)) return undefined;
  const nextAt = nextModificationAt(
    budget,
    modifications.map((m) => m.at),
    now,
  );
  if (!nextAt || !budget) return undefined;
  return wait(
    'ModificationBudgetExhausted',
    budgetExhaustedMessage(driver.name, pvcName, budget, modifications, nextAt, now),
    Math.max(1000, nextAt.getTime() - now.getTime()),
  );
}

/** A ResourceQuota of the namespace would refuse growing the claim to `target`. */
export function quotaCheck(pvc: V1PersistentVolumeClaim, pvcName: string, target: bigint, quotas: readonly V1ResourceQuota[]): Refusal | undefined {
  const className = pvc.spec?.storageClassName ?? '';
  const capacity = bytesOf(pvc.status?.capacity?.storage) ?? 0n;
  const requested = bytesOf(pvc.spec?.resources?.requests?.storage) ?? capacity;
  // ResourceQuota admission charges a claim max(spec, allocated); the growth is charged on top.
  const allocated = bytesOf(pvc.status?.allocatedResources?.storage) ?? 0n;
  const charged = requested > allocated ? requested : allocated;
  const delta = target - charged;
  for (const q of quotas) {
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
  return undefined;
}

/**
 * Why the guardrails of a namespace cannot be known yet, or undefined: some guardrail selects
 * namespaces by label and the namespace's labels are not known (a namespace created a moment ago
 * may reach pvx's cache after a request in it).
 */
export function guardrailsUnknown(
  clusterPolicies: readonly ClusterVolumeExpansionPolicy[],
  namespace: string,
  namespaceLabels: Record<string, string> | undefined,
): string | undefined {
  if (namespaceLabels !== undefined) return undefined;
  const selecting = clusterPolicies.filter((p) => p.spec.guardrails && Object.keys(p.spec.namespaceSelector?.matchLabels ?? {}).length > 0);
  if (selecting.length === 0) return undefined;
  return `namespace ${namespace} is not known to pvx yet, and the guardrails of ClusterVolumeExpansionPolicy ${selecting.map((p) => p.metadata.name).join(', ')} select namespaces by label`;
}

/**
 * The guardrails of every ClusterVolumeExpansionPolicy whose namespace selector takes a namespace
 * of these labels: what every request there is validated against.
 */
export function clusterGuardrails(clusterPolicies: readonly ClusterVolumeExpansionPolicy[], namespaceLabels: Record<string, string> | undefined): Guardrail[] {
  return clusterPolicies
    .filter((p) => p.spec.guardrails && matchesLabels(p.spec.namespaceSelector?.matchLabels, namespaceLabels))
    .map((p) => {
      const g = p.spec.guardrails ?? {};
      return {
        policy: p.metadata.name as string,
        maxBytes: g.maxSize ? parseBytes(g.maxSize) : undefined,
        maxStepBytes: g.maxStep ? parseBytes(g.maxStep) : undefined,
        allowedStorageClasses: g.allowedStorageClasses,
        ...(g.requireApproval ? { requireApproval: true } : {}),
      };
    });
}

/**
 * Whether the claim may be set to VolumeAttributesClass `name`: the class exists and belongs to
 * the claim's driver. `target` is the class to set, or undefined when the claim already has it.
 */
function validateClass(
  input: ValidationInput,
  pvc: V1PersistentVolumeClaim,
  sc: V1StorageClass,
  name: string,
): Extract<Validation, { kind: 'reject' | 'wait' }> | { kind: 'class'; target?: string } {
  const { pvcName, now } = input;
  if (input.volumeAttributesClassesServed === false) {
    return reject(
      'VolumeAttributesClassUnsupported',
      `this cluster does not serve VolumeAttributesClasses to pvx (storage.k8s.io/v1, Kubernetes 1.34 or later, and pvx's RBAC to list them): ${pvcName}'s class cannot be changed through pvx`,
    );
  }
  const state = modificationState(pvc, name);
  // Nothing to change: the class object is not needed (it may even be gone since it was applied).
  if (state.stage === 'applied' && specClass(pvc) === name) return { kind: 'class' };
  const vac = input.volumeAttributesClass;
  if (!vac) {
    const until = input.missingClassWaitUntil;
    if (until && now < until) {
      return wait(
        'VolumeAttributesClassNotFound',
        `VolumeAttributesClass ${name} does not exist (or pvx has not seen it yet); waiting for it until ${until.toISOString()}, then the request is rejected`,
        Math.min(10_000, until.getTime() - now.getTime()),
      );
    }
    return reject(
      'VolumeAttributesClassNotFound',
      `VolumeAttributesClass ${name} does not exist: create it (kubectl get volumeattributesclasses lists those that do), then a new request`,
    );
  }
  if (vac.driverName !== sc.provisioner) {
    return reject(
      'VolumeAttributesClassDriverMismatch',
      `VolumeAttributesClass ${name} is for driver ${vac.driverName}, but ${pvcName}'s volume is provisioned by ${sc.provisioner} (StorageClass ${sc.metadata?.name}): its driver would not apply it`,
    );
  }
  if (state.stage === 'infeasible') {
    return reject(
      'VolumeAttributesClassInfeasible',
      `${pvcName} already asks for VolumeAttributesClass ${name}, and its driver refused that change as infeasible: ${state.error ?? 'no message given'}`,
    );
  }
  return { kind: 'class', target: name };
}

type Refusal = Extract<Validation, { kind: 'reject' }>;

function reject(reason: string, message: string): Refusal {
  return { kind: 'reject', reason, message };
}

function wait(reason: string, message: string, retryAfterMs: number): Extract<Validation, { kind: 'wait' }> {
  return { kind: 'wait', reason, message, retryAfterMs };
}
