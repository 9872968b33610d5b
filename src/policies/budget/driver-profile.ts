// What a profile of a CSI driver holds (src/policies/budget/drivers.ts looks them up; each
// driver's data is in profiles/, every fact beside its source): the sizes it makes, how many
// modifications of a volume it allows in a rolling window, and what its refusals mean.
import { GiB } from '../../k8s/quantity.ts';

/** Modifications allowed per volume within a rolling window. */
export interface ModificationBudget {
  count: number;
  windowMs: number;
  /**
   * What the window counts: every modification of the volume (absent: EBS's, where a size change
   * and a VolumeAttributesClass change are each one), or its performance changes alone
   * ('performance': a VolumeAttributesClass change; Hyperdisk's IOPS and throughput updates) — a
   * size change then neither spends the budget nor waits for it.
   */
  counts?: 'performance';
}

/**
 * What a recognised driver error says of a resize under way. The resizer retries every one of
 * them on its own (none is a gRPC code it takes as infeasible); pvx words the wait, says what a
 * person must do, and decides whether the request has failed.
 */
export type DriverErrorKind =
  /** The volume's modification budget is spent: a retry succeeds once the window frees one. */
  | 'rateLimited'
  /** An earlier modification is still being applied: a retry succeeds once it is done. Not a failure. */
  | 'waiting'
  /** The driver refuses the change itself, for reasons that may pass: lasting, it ends the request (DriverKeepsRefusing). */
  | 'refused'
  /**
   * The driver grows the volume only while no pod mounts it (detached): the resizer's retries
   * succeed once every pod that mounts the claim is gone. Not a failure: the request waits, saying
   * so. pvx evicts nothing for it — a controller re-creates an evicted pod at once, mounting the
   * volume again before the resizer's next retry, so an eviction would not finish the expansion.
   */
  | 'offlineOnly'
  /**
   * The driver will never make the change as asked until a person acts (snapshots deleted, space
   * freed, a backend's limit raised), though the resizer retries it for ever: the request fails at
   * once with the fix, and offers the lowering Kubernetes allows after such an error (KEP-1790).
   */
  | 'final';

export interface DriverError {
  kind: DriverErrorKind;
  /** The reason a request shows. */
  reason: string;
  /** Matched against the message of the claim's ControllerResizeError/NodeResizeError condition. */
  pattern: RegExp;
  /** What it means, for the request's message. */
  meaning: string;
  /** What a person does about it (offlineOnly and final: the request says it). */
  fix?: string;
  /** Where the text comes from: the driver's file at a version, or the vendor's page. */
  source: string;
}

export interface DriverProfile {
  name: string;
  /** Largest volume the driver makes for a class with these parameters, if known. */
  maxBytes(parameters: Record<string, string>): bigint | undefined;
  /** Smallest volume it makes for such a class, if known (a smaller claim is never provisioned). */
  minBytes(parameters: Record<string, string>): bigint | undefined;
  /** Sizes are allocated in multiples of this. */
  granularity: bigint;
  /** Modifications allowed per volume within a rolling window; none known: no budget. */
  modificationBudget?: ModificationBudget;
  /** The driver's error texts pvx recognises, the first that matches deciding. */
  errors: readonly DriverError[];
  /** Whether the driver changes volumes by VolumeAttributesClass (ControllerModifyVolume), as its source says; absent: not known. */
  modifiesVolumes?: boolean;
}

export const MiB = 1024n * 1024n;
export const TiB = 1024n * GiB;
export const hours = (h: number): number => h * 3_600_000;

/** Sizes by a class parameter's value (a volume type, a SKU): the smallest and largest, where known. */
export type SizeTable = Readonly<Record<string, { min?: bigint; max: bigint }>>;

/** A profile's maxBytes and minBytes read from a size table by one class parameter, case-insensitively, with the driver's default. */
export function sizesByParameter(table: SizeTable, parameters: readonly string[], fallback: string): Pick<DriverProfile, 'maxBytes' | 'minBytes'> {
  const byLowerCase = new Map(Object.entries(table).map(([k, v]) => [k.toLowerCase(), v]));
  const entry = (p: Record<string, string>) => {
    const named = Object.entries(p).find(([k]) => parameters.some((n) => n.toLowerCase() === k.toLowerCase()))?.[1];
    return byLowerCase.get((named ?? fallback).toLowerCase());
  };
  return { maxBytes: (p) => entry(p)?.max, minBytes: (p) => entry(p)?.min };
}
