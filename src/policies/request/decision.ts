// What a decision about a VolumeExpansionRequest can be: the one union the reconciler
// (src/operator/reconcilers/expansion-request.ts) carries out, whichever module of the request's
// decisions made it (the stages decide.ts dispatches to: before-patch.ts, after-patch.ts,
// recovery.ts, statefulset-parent.ts, template.ts, eviction.ts) — and `finish`, the end each names.
import type { V1PersistentVolumeClaim, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import type { PvcAnnotationsPatch } from '../../k8s/client.ts';
import type { Phase, RequestStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { StatefulSetRecord } from './statefulset-record.ts';

/** How a request ended, as pvx_expansion_requests_total's result label says it. */
export const requestResults = ['completed', 'failed', 'rejected', 'dry_run'] as const;
export type RequestResult = (typeof requestResults)[number];

export interface ClaimPatch {
  claimName: string;
  /** Preconditions: the claim validated, as it was read. */
  uid: string;
  resourceVersion: string;
  /** The new storage request; absent: unchanged. */
  storage?: string;
  /** The new spec.volumeAttributesClassName; absent: unchanged. */
  volumeAttributesClassName?: string;
  annotations: Record<string, string | null>;
}

export type RequestDecision =
  /** Show this (the status is written only if a reader would see a change), look again after requeueAfterMs. */
  | { kind: 'status'; status: RequestStatus; requeueAfterMs?: number }
  /** The request ends: Completed, Failed or Rejected. */
  | { kind: 'finish'; status: RequestStatus & { phase: Phase; reason: string; message: string }; result: RequestResult }
  /**
   * Write `record` first — always, with the request's resourceVersion as precondition, so the
   * decision was made from the request as it is and the intent is durable — then patch the claim's
   * size; then carry on with onPatched (given the time the API server answered), or onRefused when
   * admission says no (403/422).
   */
  | {
      kind: 'patch';
      record: RequestStatus;
      patch: ClaimPatch;
      event?: { reason: string; message: string };
      onPatched: (patchedAt: Date) => RequestDecision;
      onRefused: (code: number, message: string) => RequestDecision;
    }
  /**
   * Create these child requests (a StatefulSet request's, one per claim), then carry on with
   * `then`, given the UID of each child created (by claim): recorded at once, so a child deleted
   * before the next look is known to have existed and is never made again.
   */
  | {
      kind: 'createChildren';
      children: VolumeExpansionRequest[];
      then: (created: ReadonlyMap<string, string>) => RequestDecision;
      /** The API server refused a create for good (403: admission or RBAC; 422): what to show, those created before it recorded first. */
      onRefused: (code: number, message: string) => RequestDecision;
    }
  /** The finished request's TTL passed. */
  | { kind: 'delete' }
  | { kind: 'wait'; requeueAfterMs?: number }
  | TemplateDecision
  | EvictionDecision;

/**
 * The request's steps of carrying a new size into a StatefulSet's volumeClaimTemplate
 * (template.ts), each a read or a write followed by a pure continuation, as 'patch' is. The
 * StatefulSet's deletion and creation are the record keeper's (record-keeper.ts).
 */
export type TemplateDecision =
  /**
   * Read the StatefulSet from the API server (not the cache: the record must be what the delete's
   * preconditions name), and go on with what onRead decides from it; onRefused when the API server
   * forbids it (403: the opt-in RBAC is not granted) — nothing was touched.
   */
  | {
      kind: 'readStatefulSet';
      name: string;
      onRead: (sts: V1StatefulSet | undefined) => RequestDecision;
      onRefused: (code: number, message: string) => RequestDecision;
    }
  /**
   * Create the StatefulSet's record in pvx's namespace (one of the name made by this request
   * already — a create whose answer was lost — is taken as made), then go on with onRecorded;
   * onRefused when the API server forbids it (403) or refuses it (422: too large) — nothing was touched.
   */
  | { kind: 'recordStatefulSet'; record: StatefulSetRecord; onRecorded: () => RequestDecision; onRefused: (code: number, message: string) => RequestDecision }
  /** Read the request's record from the API server (the records' cache may be behind its create). */
  | { kind: 'readRecord'; namespace: string; name: string; onRead: (record: StatefulSetRecord | undefined) => RequestDecision }
  /** Set the request's finalizers to `finalizers` (the finalizer an earlier pvx held the record under, removed). */
  | { kind: 'setFinalizers'; finalizers: string[]; then: RequestDecision };

/**
 * Evicting the pod that mounts a claim (eviction.ts): `record` is written first, always, with the
 * request's resourceVersion as precondition (at most one pod per request, durably), then the pod
 * is evicted on its UID. onEvicted once the API server took it; onBlocked when it refused for now
 * (429: a PodDisruptionBudget, with its words; 500: several budgets select the pod; 403: no RBAC).
 * Gone, or another pod of the name (404, 409): the next reconcile decides from the cache, which
 * shows whether the recorded pod went — never taken for an eviction that happened.
 */
export interface EvictionDecision {
  kind: 'evict';
  /** Absent when the status records this eviction already (an eviction tried again). */
  record?: RequestStatus;
  /** The pod marked on the claim before the record (with it, absent with it): the mark, not the status, says which pod a request evicts. */
  mark?: { claim: string; patch: PvcAnnotationsPatch };
  pod: { namespace: string; name: string; uid: string };
  /**
   * Given the namespace's pods and the claim as the API server has them, read just before the
   * eviction, and the StatefulSet the live pod names as its controller read after them (null: not
   * found; undefined: not read, the pod has another kind of controller): undefined to evict, or
   * what to show instead (another pod holds the volume now, this is no longer its pod, the claim
   * marks another pod for the request, or the StatefulSet that would create the pod again is gone
   * or going).
   */
  onLive: (pods: readonly V1Pod[], claim: V1PersistentVolumeClaim | undefined, statefulSet?: V1StatefulSet | null) => RequestDecision | undefined;
  onEvicted: (at: Date) => RequestDecision;
  onBlocked: (code: number, message: string) => RequestDecision;
}

/** The request ends: its phase, reason and message (the metrics count its phase, lowercased). */
export function finish(phase: 'Completed' | 'Failed' | 'Rejected', reason: string, message: string, extra: RequestStatus = {}): RequestDecision {
  return { kind: 'finish', status: { ...extra, phase, reason, message }, result: phase.toLowerCase() as RequestResult };
}

/** A dry run's end: completed, and counted as a dry run. */
export const asDryRun = (d: RequestDecision): RequestDecision => (d.kind === 'finish' ? { ...d, result: 'dry_run' } : d);
