// Whether a policy should grow one PVC now, and to what: a pure decision over the PVC's usage
// samples and history, with the clock passed in. It avoids the known failure modes of
// auto-resizers: missing or stale data is "unknown", never "0 % used"; samples taken before the
// last capacity change are ignored (capacity updates before usage does, which would otherwise
// trigger a second expansion); a usage source whose capacity does not follow the PVC is a
// finding, not a trigger; nothing fires while an expansion is in flight, within the cooldown,
// outside maintenance windows or beyond the driver's modification budget; at the maximum size it
// says so instead of stalling silently.
import type { PolicySpec } from '../crds/volume-expansion-policy.ts';
import { GiB, formatBytes, humanBytes, parseBytes, roundUp } from '../k8s/quantity.ts';
import { driverProfile, nextModificationAt } from './drivers.ts';
import { parseDuration } from './duration.ts';
import { timeToFullMs } from './forecast.ts';
import { windowState, type MaintenanceWindow } from './windows.ts';

export interface UsageSample {
  at: Date;
  usedBytes: bigint;
  capacityBytes: bigint;
  inodesUsed?: number;
  inodes?: number;
}

export interface AutoscaleSpec {
  /** Fire when used/capacity ≥ this (0–1). */
  usedRatio?: number;
  /** Fire when inodes used/total ≥ this (0–1). */
  inodesRatio?: number;
  /** Fire when free bytes fall below this. */
  minFreeBytes?: bigint;
  /** The threshold triggers need this many consecutive fresh samples in breach. Default 3. */
  sustainedSamples?: number;
  /** Fire when the linear forecast says full within horizonMs (fit over windowMs, ≥ minSamples). */
  forecast?: { horizonMs: number; windowMs: number; minSamples?: number };
  /** Growth per expansion: percent of capacity, at least minStepBytes, rounded up to whole GiB. */
  stepPercent?: number;
  minStepBytes?: bigint;
  maxBytes?: bigint;
  /** After an expansion, wait this long before the next. Default 30 min. */
  cooldownMs?: number;
  /** A newest sample older than this is stale: the decision is "unknown". Default 5 min. */
  staleAfterMs?: number;
  windows?: MaintenanceWindow[];
}

/** The autoscale part of a policy's spec (either kind), with its defaults, as decideAutoscale takes it. */
export function autoscaleSpec(spec: Pick<PolicySpec, 'triggers' | 'step' | 'maxSize' | 'cooldown' | 'windows'>): AutoscaleSpec {
  const t = spec.triggers;
  const ms = (d: string | undefined) => (d ? parseDuration(d) : undefined);
  return {
    usedRatio: t.usedPercent !== undefined ? t.usedPercent / 100 : undefined,
    inodesRatio: t.inodesUsedPercent !== undefined ? t.inodesUsedPercent / 100 : undefined,
    minFreeBytes: t.minFree ? parseBytes(t.minFree) : undefined,
    sustainedSamples: t.sustainedSamples ?? 3,
    forecast: t.forecast ? { horizonMs: ms(t.forecast.horizon) ?? 0, windowMs: ms(t.forecast.window) ?? 0 } : undefined,
    ...stepSpec(spec),
    cooldownMs: ms(spec.cooldown) ?? 30 * 60_000,
    windows: (spec.windows ?? []).map((w) => ({ schedule: w.schedule, durationMs: ms(w.duration) ?? 0, timeZone: w.timeZone })),
  };
}

/** A policy's step and maximum, with their defaults: 20 %, at least 1Gi, no maximum. */
export function stepSpec(spec: Pick<PolicySpec, 'step' | 'maxSize'>): Pick<AutoscaleSpec, 'stepPercent' | 'minStepBytes' | 'maxBytes'> {
  return {
    stepPercent: spec.step?.percent ?? 20,
    minStepBytes: spec.step?.minimum ? parseBytes(spec.step.minimum) : GiB,
    maxBytes: spec.maxSize ? parseBytes(spec.maxSize) : undefined,
  };
}

/**
 * The size a policy's next expansion asks for: its step percent of capacity, at least its minimum
 * step, rounded up to whole GiB, capped at its maximum. Not above capacity: at the maximum already.
 */
export function nextStepBytes(capacityBytes: bigint, spec: Pick<AutoscaleSpec, 'stepPercent' | 'minStepBytes' | 'maxBytes'>): bigint {
  const step = (capacityBytes * BigInt(Math.round((spec.stepPercent ?? 20) * 100))) / 10_000n;
  const minStep = spec.minStepBytes ?? GiB;
  const target = roundUp(capacityBytes + (step > minStep ? step : minStep), GiB);
  return spec.maxBytes !== undefined && target > spec.maxBytes ? spec.maxBytes : target;
}

export interface AutoscaleInput {
  spec: AutoscaleSpec;
  capacityBytes: bigint;
  /** An active request, spec above capacity, or resize conditions on the PVC. */
  expansionInFlight: boolean;
  lastExpansionAt?: Date;
  /** When status.capacity last changed (samples before it describe the old volume). */
  lastCapacityChangeAt?: Date;
  samples: UsageSample[];
  /** pvx's history of modifications of this volume, for driver budgets. */
  modifications: Date[];
  provisioner?: string;
  now: Date;
}

export type Trigger = 'UsedRatio' | 'InodesRatio' | 'MinFree' | 'Forecast';

export type AutoscaleDecision =
  // Unreadable: the claim's own sizes could not be read (src/policies/policy-pass.ts says which field).
  | { kind: 'unknown'; reason: 'NoSamples' | 'StaleSamples' | 'CapacityMismatch' | 'Unreadable'; message: string }
  | { kind: 'idle'; message: string; usedRatio: number; timeToFullMs?: number }
  | { kind: 'blocked'; reason: 'InFlight' | 'Cooldown' | 'OutsideWindow' | 'Budget'; message: string; until?: Date; trigger: Trigger; timeToFullMs?: number }
  | { kind: 'atMax'; message: string; trigger: Trigger; timeToFullMs?: number }
  | { kind: 'expand'; trigger: Trigger; fromBytes: bigint; targetBytes: bigint; message: string; timeToFullMs?: number };

const ratio = (a: bigint, b: bigint): number => (b > 0n ? Number((a * 1_000_000n) / b) / 1_000_000 : 0);
/** Used bytes / capacity of a sample (0–1, to a millionth; 0 for a zero capacity). */
export const usedRatio = (s: Pick<UsageSample, 'usedBytes' | 'capacityBytes'>): number => ratio(s.usedBytes, s.capacityBytes);
const pct = (r: number) => `${(r * 100).toFixed(1)}%`;

export function decideAutoscale(input: AutoscaleInput): AutoscaleDecision {
  const { spec, now, capacityBytes } = input;
  const staleAfter = spec.staleAfterMs ?? 5 * 60_000;
  const since = input.lastCapacityChangeAt?.getTime() ?? -Infinity;
  const samples = input.samples.filter((s) => s.at.getTime() > since).sort((a, b) => a.at.getTime() - b.at.getTime());
  const newest = samples[samples.length - 1];
  if (!newest) {
    const why = input.samples.length ? 'every sample predates the last capacity change' : 'no usage samples';
    return { kind: 'unknown', reason: 'NoSamples', message: `${why}: usage unknown, not deciding` };
  }
  if (now.getTime() - newest.at.getTime() > staleAfter) {
    return { kind: 'unknown', reason: 'StaleSamples', message: `newest usage sample is from ${newest.at.toISOString()}, older than ${staleAfter / 1000} s: usage unknown` };
  }
  // A usage source that reports another filesystem's size (hostpath, local-path) cannot drive growth.
  const drift = newest.capacityBytes > capacityBytes ? newest.capacityBytes - capacityBytes : capacityBytes - newest.capacityBytes;
  if (drift * 10n > capacityBytes) {
    return {
      kind: 'unknown',
      reason: 'CapacityMismatch',
      message: `the usage source reports a capacity of ${humanBytes(newest.capacityBytes)} for a ${humanBytes(capacityBytes)} volume: its usage is not the volume's own`,
    };
  }

  const breaches = (s: UsageSample): Trigger | undefined => {
    if (spec.usedRatio !== undefined && usedRatio(s) >= spec.usedRatio) return 'UsedRatio';
    if (spec.inodesRatio !== undefined && s.inodes && s.inodesUsed !== undefined && s.inodesUsed / s.inodes >= spec.inodesRatio) return 'InodesRatio';
    if (spec.minFreeBytes !== undefined && s.capacityBytes - s.usedBytes < spec.minFreeBytes) return 'MinFree';
    return undefined;
  };
  const sustained = spec.sustainedSamples ?? 3;
  const lastN = samples.slice(-sustained);
  let trigger: Trigger | undefined = lastN.length === sustained && lastN.every((s) => breaches(s)) ? breaches(newest) : undefined;

  let ttf: number | undefined;
  if (spec.forecast) {
    const window = samples.filter((s) => s.at.getTime() >= now.getTime() - spec.forecast!.windowMs);
    if (window.length >= (spec.forecast.minSamples ?? 5)) {
      ttf = timeToFullMs(
        window.map((s) => ({ atMs: s.at.getTime(), usedBytes: Number(s.usedBytes) })),
        Number(newest.capacityBytes),
        now.getTime(),
      );
      if (!trigger && ttf !== undefined && ttf < spec.forecast.horizonMs) trigger = 'Forecast';
    }
  }
  const used = usedRatio(newest);
  if (!trigger) {
    return { kind: 'idle', usedRatio: used, timeToFullMs: ttf, message: `${pct(used)} used${ttf !== undefined ? `, full in ${Math.round(ttf / 60_000)} min at the current rate` : ''}: no trigger` };
  }
  const why = trigger === 'Forecast' ? `forecast full in ${Math.round((ttf ?? 0) / 60_000)} min` : `${trigger} (${pct(used)} used, ${humanBytes(newest.capacityBytes - newest.usedBytes)} free)`;

  if (input.expansionInFlight) return { kind: 'blocked', reason: 'InFlight', trigger, timeToFullMs: ttf, message: `${why}, but an expansion is already in flight` };
  const cooldown = spec.cooldownMs ?? 30 * 60_000;
  if (input.lastExpansionAt && input.lastExpansionAt.getTime() + cooldown > now.getTime()) {
    const until = new Date(input.lastExpansionAt.getTime() + cooldown);
    return { kind: 'blocked', reason: 'Cooldown', trigger, timeToFullMs: ttf, until, message: `${why}; cooling down after the last expansion until ${until.toISOString()}` };
  }
  const w = windowState(spec.windows ?? [], now);
  if (!w.open) return { kind: 'blocked', reason: 'OutsideWindow', trigger, timeToFullMs: ttf, until: w.nextOpen, message: `${why}; deferred to the next maintenance window at ${w.nextOpen?.toISOString() ?? '(none)'}` };
  const budgetAt = nextModificationAt(driverProfile(input.provisioner), input.modifications, now);
  if (budgetAt) return { kind: 'blocked', reason: 'Budget', trigger, timeToFullMs: ttf, until: budgetAt, message: `${why}; the driver's modification budget allows the next change at ${budgetAt.toISOString()}` };

  const target = nextStepBytes(capacityBytes, spec);
  if (target <= capacityBytes) {
    return { kind: 'atMax', trigger, timeToFullMs: ttf, message: `${why}, but the volume is at the policy's maximum size ${formatBytes(spec.maxBytes ?? capacityBytes)}` };
  }
  return { kind: 'expand', trigger, fromBytes: capacityBytes, targetBytes: target, timeToFullMs: ttf, message: `${why}: grow ${formatBytes(capacityBytes)} → ${formatBytes(target)}` };
}
