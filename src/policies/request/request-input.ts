// What a request's decision reads: the request, the context of each claim it may touch, the
// StatefulSet and its children, the namespace's pods and requests, and the clock — filled in by the
// reconciler (src/operator/reconcilers/expansion-request.ts) from its caches.
import type { V1PersistentVolumeClaim, V1Pod, V1ResourceQuota, V1StatefulSet, V1StorageClass, V1VolumeAttributesClass } from '@kubernetes/client-node';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { type DriverProfiles } from '../budget/drivers.ts';
import { type Guardrail } from './validation.ts';
import type { StatefulSetRecord } from './statefulset-record.ts';

/** Everything about one claim a request for it reads. */
export interface ClaimContext {
  claim: V1PersistentVolumeClaim | undefined;
  storageClass: V1StorageClass | undefined;
  quotas: V1ResourceQuota[];
  /** Every other request that targets the same claim. */
  otherRequests: VolumeExpansionRequest[];
  guardrails: Guardrail[];
  /** Why the guardrails that apply cannot be known yet (see guardrailsUnknown): the request waits. */
  guardrailsUnknown?: string;
  /** A running pod mounts the claim (the node stage can happen). */
  mountedByRunningPod: boolean;
  /**
   * When the reconciler first saw the claim as it is (its resourceVersion): a change the claim's
   * ledger does not record yet, that no writer dates, is taken as seen then — not at each look,
   * which would write a status that moves with the clock (src/policies/budget/ledger.ts). Now when absent.
   */
  claimSeenAt?: Date;
}

export interface RequestInput {
  request: VolumeExpansionRequest;
  /** The context of a claim of the request's namespace, by name (its own claim, or each replica's). */
  claim: (name: string) => ClaimContext;
  /** For a StatefulSet target: the StatefulSet, its child requests, and any request by name (name clashes). */
  statefulSet?: V1StatefulSet;
  children?: VolumeExpansionRequest[];
  requestNamed?: (name: string) => VolumeExpansionRequest | undefined;
  now: Date;
  /** Default defaultDriverErrorTimeoutMs. */
  driverErrorTimeoutMs?: number;
  /** The VolumeAttributesClass spec.volumeAttributesClassName names, as pvx has it (undefined: not found). */
  volumeAttributesClass?: V1VolumeAttributesClass;
  /** False when the cluster does not serve VolumeAttributesClasses to pvx. Default true. */
  volumeAttributesClassesServed?: boolean;
  /** The driver profiles (--modification-budget); default defaultDriverProfiles. */
  profiles?: DriverProfiles;
  /** The pods of the request's namespace (the pod to evict, and its workload's other pods: spec.offlineNodeExpansion); read only when needed. */
  namespacePods?: () => readonly V1Pod[];
  /** Every request of the request's namespace (others evicting a pod of the same workload); read only when needed. */
  namespaceRequests?: () => readonly VolumeExpansionRequest[];
  /** A StatefulSet of the request's namespace by name (which pods its controller creates again). */
  statefulSetNamed?: (name: string) => V1StatefulSet | undefined;
  /** When this process last tried the request's eviction, if it did (a refused one is tried again less and less often). */
  lastEvictionAttemptAt?: Date;
  /** Whether this process decided a request's eviction (by UID) and remembers it (see EvictionInput.decidedHere). */
  evictionDecidedHere?: (requestUID: string) => boolean;
  /** The request's StatefulSet record as cached (spec.statefulSetTemplate.update), if any. */
  statefulSetRecord?: StatefulSetRecord;
  /** Where pvx keeps StatefulSet records (its own namespace); undefined where it may not. */
  recordNamespace?: string;
  /**
   * For a request a policy made (its policy label), that policy as pvx has it now: present (the
   * one its owner reference names, by UID) with its maximum, or not — deleted, or another created
   * under its name. Absent: not a policy's request, or pvx does not read the policies.
   */
  askingPolicy?: { present: true; maxSize?: string } | { present: false };
}

/** The claim a request for one claim targets, by name. */
export const claimRequest = (req: VolumeExpansionRequest) => req.spec.target.pvcName as string;
