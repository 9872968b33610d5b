// Whether a policy should grow one PVC now, and to what: a pure decision over the PVC's usage
// measurements and history, with the clock passed in. It avoids the known failure modes of
// auto-resizers: missing or stale data is "unknown", never "0 % used"; samples taken before the
// last capacity change are ignored (capacity updates before usage does, which would otherwise
// trigger a second expansion); a usage source whose capacity does not follow the PVC is a
// finding, not a trigger; nothing fires while an expansion is in flight, within the cooldown,
// outside maintenance windows or beyond the driver's modification budget; at the maximum size it
// says so instead of stalling silently.
//
// When it fires, by default: a threshold breached in each of the last sustainedSamples distinct
// measurements (a measurement read twice counts once), or — always on — a volume filling so fast
// that it would be full before an expansion decided at the next measurement could be ready: each
// of its last two intervals between measurements grew, and at the slower of the two it fills
// within the lead time (policyDefaults.expansionMs plus the longer interval). One jump between two
// measurements is never a fill (src/policies/autoscale/forecast.ts, sustainedFill). A volume about to fill
// is not held back by the cooldown, unless the last request for it was refused.
//
// On a driver with a modification budget (EBS: 4 per volume per 24 h), the last modification the
// window allows is not spent on a small step: see lastingStep.
import type { PolicySpec } from '../../crds/volume-expansion-policy.ts';
import { formatBytes, humanBytes, parseBytes, roundUp, GiB } from '../../k8s/quantity.ts';
import { policyDefaults } from '../../crds/defaults.ts';
import { inWindow, type Modification } from '../budget/budget.ts';
import { nextModificationAt, type ModificationBudget } from '../budget/drivers.ts';
import { humanDuration, parseDuration } from '../shared/duration.ts';
import { sustainedFill, timeToFullMs, type Point } from './forecast.ts';
import { distinctMeasurements, type UsageSample } from './sampling.ts';
import { windowState, windowsProblem, type MaintenanceWindow } from './windows.ts';

export interface AutoscaleSpec {
  /** Fire when used/capacity ≥ this (0–1). */
  usedRatio?: number;
  /** Fire when inodes used/total ≥ this (0–1). */
  inodesRatio?: number;
  /** Fire when free bytes fall below this. */
  minFreeBytes?: bigint;
  /** The threshold triggers need this many consecutive distinct measurements in breach. */
  sustainedSamples?: number;
  /** Fire when the linear forecast says full within horizonMs (fit over windowMs, ≥ minSamples). */
  forecast?: { horizonMs: number; windowMs: number; minSamples?: number };
  /** How long an expansion takes to be usable; the fill-rate trigger's lead time adds the sampling interval. */
  expansionMs?: number;
  /** Growth per expansion: percent of capacity, at least minStepBytes, rounded up to whole GiB. */
  stepPercent?: number;
  minStepBytes?: bigint;
  maxBytes?: bigint;
  /** After an expansion, wait this long before the next (a volume about to fill excepted). */
  cooldownMs?: number;
  /** A newest sample older than this is stale: the decision is "unknown". */
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
    sustainedSamples: t.sustainedSamples ?? policyDefaults.sustainedSamples,
    forecast: t.forecast ? { horizonMs: ms(t.forecast.horizon) ?? 0, windowMs: ms(t.forecast.window) ?? 0 } : undefined,
    expansionMs: policyDefaults.expansionMs,
    ...stepSpec(spec),
    cooldownMs: ms(spec.cooldown) ?? policyDefaults.cooldownMs,
    windows: (spec.windows ?? []).map((w) => ({ schedule: w.schedule, durationMs: ms(w.duration) ?? 0, timeZone: w.timeZone })),
  };
}

/**
 * Each spec's problem as read once: the selection asks for every claim of every policy over it on
 * every pass. A spec object is one generation of its policy (the caches replace it on a change).
 */
const specProblems = new WeakMap<object, string | undefined>();

/**
 * Why pvx cannot read a policy's rules (its sizes, durations or maintenance windows), or
 * undefined: such a policy decides nothing, so it governs no claim either.
 */
export function policySpecProblem(spec: Pick<PolicySpec, 'triggers' | 'step' | 'maxSize' | 'cooldown' | 'windows'>): string | undefined {
  if (specProblems.has(spec)) return specProblems.get(spec);
  const problem = readSpecProblem(spec);
  specProblems.set(spec, problem);
  return problem;
}

function readSpecProblem(spec: Pick<PolicySpec, 'triggers' | 'step' | 'maxSize' | 'cooldown' | 'windows'>): string | undefined {
  let parsed: AutoscaleSpec;
  try {
    parsed = autoscaleSpec(spec);
  } catch (err) {
    return `cannot read the policy's spec: ${(err as Error).message}`;
  }
  const windows = windowsProblem(parsed.windows ?? []);
  return windows ? `cannot read spec.windows: ${windows}` : undefined;
}

/** A policy's step and maximum, with their defaults: 20 %, at least 1Gi, no maximum. */
export function stepSpec(spec: Pick<PolicySpec, 'step' | 'maxSize'>): Pick<AutoscaleSpec, 'stepPercent' | 'minStepBytes' | 'maxBytes'> {
  return {
    stepPercent: spec.step?.percent ?? policyDefaults.stepPercent,
    minStepBytes: spec.step?.minimum ? parseBytes(spec.step.minimum) : policyDefaults.minStepBytes,
    maxBytes: spec.maxSize ? parseBytes(spec.maxSize) : undefined,
  };
}

/**
 * The size a policy's next expansion asks for: its step percent of capacity, at least its minimum
 * step, rounded up to whole GiB, capped at its maximum. Not above capacity: at the maximum already.
 */
export function nextStepBytes(capacityBytes: bigint, spec: Pick<AutoscaleSpec, 'stepPercent' | 'minStepBytes' | 'maxBytes'>): bigint {
  const step = (capacityBytes * BigInt(Math.round((spec.stepPercent ?? policyDefaults.stepPercent) * 100))) / 10_000n;
  const minStep = spec.minStepBytes ?? policyDefaults.minStepBytes;
  const target = roundUp(capacityBytes + (step > minStep ? step : minStep), GiB);
  return spec.maxBytes !== undefined && target > spec.maxBytes ? spec.maxBytes : target;
}

export interface AutoscaleInput {
  spec: AutoscaleSpec;
  capacityBytes: bigint;
  /** An active request, spec above capacity, or resize conditions on the PVC. */
  expansionInFlight: boolean;
  /**
   * The request in flight waits on the driver (its rate limit, or its previous modification still
   * being applied): named in the message. Nothing is asked while it waits — neither a new request
   * nor a larger target — since the resizer completes the one in flight once the driver allows.
   */
  waitingOnDriver?: { request: string; reason: string };
  lastExpansionAt?: Date;
  /** The last request for the claim ended without growing it (Rejected, Failed): the cooldown holds whatever the forecast. */
  lastRequestRefused?: boolean;
  /** When status.capacity last changed (samples before it describe the old volume). */
  lastCapacityChangeAt?: Date;
  samples: UsageSample[];
  /** The volume's modifications pvx knows of (src/policies/budget/budget.ts, claimModifications). */
  modifications: Modification[];
  /** The driver's modification budget for the volume, if it has one. */
  budget?: ModificationBudget;
  /** The largest volume the driver makes for the claim's class, if known: no step goes beyond it. */
  driverMaxBytes?: bigint;
  now: Date;
}

export type Trigger = 'UsedRatio' | 'InodesRatio' | 'MinFree' | 'Forecast';

/**
 * What a policy decides for one claim. `message` says why in words that stay the same while the
 * decision does (it is what the policy's status shows, written only when it changes); `detail`
 * gives the measured numbers (used, free, time to full, rate, lead time) for Events, logs and
 * `pvx plan`. `watch` marks a claim whose next measurement may change the decision, so the next
 * read is timed to it (src/policies/autoscale/sampling.ts).
 */
export type AutoscaleDecision =
  // Unreadable: the claim's own sizes could not be read (src/policies/autoscale/policy-pass.ts says which field).
  | { kind: 'unknown'; reason: 'NoSamples' | 'JustGrown' | 'StaleSamples' | 'CapacityMismatch' | 'Unreadable'; message: string; watch?: boolean }
  | { kind: 'idle'; message: string; detail: string; usedRatio: number; timeToFullMs?: number; watch?: boolean }
  | {
      kind: 'blocked';
      reason: 'InFlight' | 'Cooldown' | 'OutsideWindow' | 'Budget';
      message: string;
      detail: string;
      until?: Date;
      trigger: Trigger;
      timeToFullMs?: number;
      watch?: boolean;
    }
  | { kind: 'atMax'; message: string; detail: string; trigger: Trigger; timeToFullMs?: number }
  | { kind: 'expand'; trigger: Trigger; fromBytes: bigint; targetBytes: bigint; message: string; detail: string; timeToFullMs?: number }
  // Another policy selects the claim too and governs it (src/policies/selection.ts, claimPolicies): this one leaves it alone.
  | { kind: 'overlap'; reason: 'OverlappingPolicy'; governor: string; message: string };

const ratio = (a: bigint, b: bigint): number => (b > 0n ? Number((a * 1_000_000n) / b) / 1_000_000 : 0);
/** Used bytes / capacity of a sample (0–1, to a millionth; 0 for a zero capacity). */
export const usedRatio = (s: Pick<UsageSample, 'usedBytes' | 'capacityBytes'>): number => ratio(s.usedBytes, s.capacityBytes);
const pct = (r: number) => `${(r * 100).toFixed(1)}%`;
const wholePct = (r: number) => `${Math.round(r * 100)}%`;
const points = (samples: readonly UsageSample[]): Point[] => samples.map((s) => ({ atMs: s.at.getTime(), usedBytes: Number(s.usedBytes) }));

/** What the measurements say of the fill: the rate, the time to full from now and the lead time it is held against. */
export interface FillForecast {
  ratePerMs: number;
  timeToFullMs: number;
  leadMs: number;
}

function fillForecast(measurements: readonly UsageSample[], intervals: number, expansionMs: number, nowMs: number): FillForecast | undefined {
  const fill = sustainedFill(points(measurements), intervals);
  const newest = measurements[measurements.length - 1];
  if (!fill || !newest) return undefined;
  const free = Number(newest.capacityBytes - newest.usedBytes);
  const untilFullMs = Math.max(0, newest.at.getTime() + Math.max(0, free) / fill.rate - nowMs);
  return { ratePerMs: fill.rate, timeToFullMs: untilFullMs, leadMs: expansionMs + fill.longestIntervalMs };
}

/**
 * Whether a usage source's capacity is not the volume's (hostpath, local-path report another
 * file system's size): more than a tenth apart. Such usage cannot drive growth, nor be shown as
 * the volume's.
 */
export function measuresAnotherFileSystem(sourceCapacityBytes: bigint, claimCapacityBytes: bigint): boolean {
  const drift = sourceCapacityBytes > claimCapacityBytes ? sourceCapacityBytes - claimCapacityBytes : claimCapacityBytes - sourceCapacityBytes;
  return drift * 10n > claimCapacityBytes;
}

/** What a volume's measurements forecast, as a policy with this spec judges them. */
export interface UsageForecast {
  /** The sustained fill over the last measurements (always judged). */
  fill?: FillForecast;
  /** The policy's own least-squares forecast (spec.forecast), when it has enough measurements in its window. */
  fittedTtfMs?: number;
  /** Time to full: the fitted line's when there is one, else the sustained fill's. */
  timeToFullMs?: number;
}

/**
 * The forecast over distinct measurements (oldest first): the fill-rate forecast over at least
 * three measurements, as many as a threshold needs, and the policy's own line over its window.
 */
export function usageForecast(
  measurements: readonly UsageSample[],
  spec: Pick<AutoscaleSpec, 'sustainedSamples' | 'expansionMs' | 'forecast'>,
  now: Date,
): UsageForecast {
  const sustained = Math.max(1, spec.sustainedSamples ?? policyDefaults.sustainedSamples);
  const expansionMs = spec.expansionMs ?? policyDefaults.expansionMs;
  const fillIntervals = Math.max(policyDefaults.fillMeasurements, sustained) - 1;
  const fill = fillForecast(measurements, fillIntervals, expansionMs, now.getTime());
  const newest = measurements[measurements.length - 1];
  let fittedTtfMs: number | undefined;
  if (spec.forecast && newest) {
    const window = measurements.filter((s) => s.at.getTime() >= now.getTime() - spec.forecast!.windowMs);
    if (window.length >= (spec.forecast.minSamples ?? policyDefaults.forecastMinSamples))
      fittedTtfMs = timeToFullMs(points(window), Number(newest.capacityBytes), now.getTime());
  }
  return { fill, fittedTtfMs, timeToFullMs: fittedTtfMs ?? fill?.timeToFullMs };
}

/** The size no step goes beyond: the policy's maximum or the driver's largest volume, whichever is smaller. */
export function growthLimit(policyMaxBytes: bigint | undefined, driverMaxBytes: bigint | undefined): { bytes?: bigint; from?: 'policy' | 'driver' } {
  if (driverMaxBytes !== undefined && (policyMaxBytes === undefined || driverMaxBytes < policyMaxBytes)) return { bytes: driverMaxBytes, from: 'driver' };
  return policyMaxBytes === undefined ? {} : { bytes: policyMaxBytes, from: 'policy' };
}

/**
 * The measurements a decision may read — distinct, newer than the last capacity change — or why
 * usage is unknown: none, stale, or a source whose capacity is not the volume's.
 */
export function usageReading(
  input: Pick<AutoscaleInput, 'spec' | 'capacityBytes' | 'lastCapacityChangeAt' | 'samples' | 'now'>,
): Extract<AutoscaleDecision, { kind: 'unknown' }> | { kind: 'known'; samples: UsageSample[]; newest: UsageSample } {
  const { spec, now, capacityBytes } = input;
  const staleAfter = spec.staleAfterMs ?? policyDefaults.staleAfterMs;
  const since = input.lastCapacityChangeAt?.getTime() ?? -Infinity;
  const samples = distinctMeasurements(input.samples.filter((s) => s.at.getTime() > since));
  const newest = samples[samples.length - 1];
  if (!newest) {
    // Just grown: whether it keeps filling is what the next measurements tell, soonest.
    if (input.samples.length)
      return { kind: 'unknown', reason: 'JustGrown', message: 'every sample predates the last capacity change: usage unknown, not deciding', watch: true };
    return { kind: 'unknown', reason: 'NoSamples', message: 'no usage samples: usage unknown, not deciding' };
  }
  if (now.getTime() - newest.at.getTime() > staleAfter) {
    return {
      kind: 'unknown',
      reason: 'StaleSamples',
      message: `newest usage sample is from ${newest.at.toISOString()}, older than ${staleAfter / 1000} s: usage unknown`,
    };
  }
  // A usage source that reports another filesystem's size (hostpath, local-path) cannot drive growth.
  if (measuresAnotherFileSystem(newest.capacityBytes, capacityBytes)) {
    return {
      kind: 'unknown',
      reason: 'CapacityMismatch',
      message: `the usage source reports a capacity of ${humanBytes(newest.capacityBytes)} for a ${humanBytes(capacityBytes)} volume: its usage is not the volume's own`,
    };
  }
  return { kind: 'known', samples, newest };
}

/** What the measurements say against the policy's triggers: which fires (if any) and why, with the figures. */
export interface TriggerReading {
  trigger?: Trigger;
  /** Why the trigger fires, in words that stay the same while it does. */
  why: string;
  /** The measured figures: used, free, time to full, rate, lead time. */
  detail: string;
  usedRatio: number;
  timeToFullMs?: number;
  /** Filling so fast that it would be full before an expansion decided later could be ready. */
  imminent: boolean;
  fill?: FillForecast;
  /** Whether the next measurement may turn an idle decision into an expansion. */
  watch: boolean;
}

export function triggerReading(spec: AutoscaleSpec, samples: readonly UsageSample[], now: Date): TriggerReading {
  const newest = samples[samples.length - 1] as UsageSample;
  const breaches = (s: UsageSample): Trigger | undefined => {
    if (spec.usedRatio !== undefined && usedRatio(s) >= spec.usedRatio) return 'UsedRatio';
    if (spec.inodesRatio !== undefined && s.inodes && s.inodesUsed !== undefined && s.inodesUsed / s.inodes >= spec.inodesRatio) return 'InodesRatio';
    if (spec.minFreeBytes !== undefined && s.capacityBytes - s.usedBytes < spec.minFreeBytes) return 'MinFree';
    return undefined;
  };
  const sustained = Math.max(1, spec.sustainedSamples ?? policyDefaults.sustainedSamples);
  const lastN = samples.slice(-sustained);
  const thresholdTrigger = lastN.length === sustained && lastN.every((s) => breaches(s)) ? breaches(newest) : undefined;

  // The fill-rate forecast, always on; the policy's own forecast (spec.triggers.forecast), a
  // least-squares line over its window, with a sustained fill as well, judged at the slower of the two.
  const expansionMs = spec.expansionMs ?? policyDefaults.expansionMs;
  const { fill, fittedTtfMs: fittedTtf, timeToFullMs: ttf } = usageForecast(samples, spec, now);
  const imminent = fill !== undefined && fill.timeToFullMs < fill.leadMs;
  const withinHorizon =
    spec.forecast !== undefined && fill !== undefined && fittedTtf !== undefined && Math.max(fittedTtf, fill.timeToFullMs) < spec.forecast.horizonMs;
  const trigger: Trigger | undefined = thresholdTrigger ?? (imminent || withinHorizon ? 'Forecast' : undefined);

  const used = usedRatio(newest);
  const free = newest.capacityBytes - newest.usedBytes;
  const detail = [
    `${pct(used)} used`,
    `${humanBytes(free > 0n ? free : 0n)} free`,
    ...(ttf !== undefined ? [`full in ${humanDuration(ttf)}`] : []),
    ...(fill ? [`filling at ${humanBytes(BigInt(Math.round(fill.ratePerMs * 1000)))}/s`, `lead time ${humanDuration(fill.leadMs)}`] : []),
  ].join(', ');
  const inLast = sustained === 1 ? 'in the last measurement' : `in each of the last ${sustained} measurements`;
  const why =
    trigger === 'UsedRatio'
      ? `used ≥ ${wholePct(spec.usedRatio ?? 0)} ${inLast}`
      : trigger === 'InodesRatio'
        ? `inodes used ≥ ${wholePct(spec.inodesRatio ?? 0)} ${inLast}`
        : trigger === 'MinFree'
          ? `less than ${formatBytes(spec.minFreeBytes ?? 0n)} free ${inLast}`
          : trigger === 'Forecast' && imminent
            ? 'filling steadily: forecast full within the lead time an expansion needs'
            : trigger === 'Forecast'
              ? `forecast full within ${humanDuration(spec.forecast?.horizonMs ?? 0)}`
              : 'no trigger: under every threshold, and not filling fast enough to need growing';
  return { trigger, why, detail, usedRatio: used, timeToFullMs: ttf, imminent, fill, watch: watchClosely(samples, breaches, expansionMs) };
}

/**
 * The cooldown after the claim's last expansion, if it runs at `now`: until when, and whether it
 * holds the claim back — it does not hold back a volume about to fill, unless the last request
 * for the claim was refused.
 */
export function cooldownState(
  input: Pick<AutoscaleInput, 'spec' | 'lastExpansionAt' | 'lastRequestRefused' | 'now'>,
  imminent: boolean,
): { until: Date; holds: boolean } | undefined {
  const cooldown = input.spec.cooldownMs ?? policyDefaults.cooldownMs;
  if (!input.lastExpansionAt || input.lastExpansionAt.getTime() + cooldown <= input.now.getTime()) return undefined;
  return { until: new Date(input.lastExpansionAt.getTime() + cooldown), holds: !imminent || input.lastRequestRefused === true };
}

/**
 * The size of the policy's next step, capped at its maximum or, when smaller, the largest volume
 * the driver makes for the claim's class: not above capacity when the volume is at that cap.
 */
export function stepCap(input: Pick<AutoscaleInput, 'spec' | 'capacityBytes' | 'driverMaxBytes'>): { step: bigint; maxBytes?: bigint; driverCaps: boolean } {
  const { spec } = input;
  const limit = growthLimit(spec.maxBytes, input.driverMaxBytes);
  const maxBytes = limit.bytes;
  return {
    step: nextStepBytes(input.capacityBytes, { ...spec, maxBytes }),
    ...(maxBytes !== undefined ? { maxBytes } : {}),
    driverCaps: limit.from === 'driver',
  };
}

export function decideAutoscale(input: AutoscaleInput): AutoscaleDecision {
  const { spec, now, capacityBytes } = input;
  const usage = usageReading(input);
  if (usage.kind === 'unknown') return usage;
  const { samples, newest } = usage;
  const { trigger, why, detail, imminent, fill, timeToFullMs: ttf, usedRatio: used, watch: closely } = triggerReading(spec, samples, now);
  if (!trigger) {
    return { kind: 'idle', usedRatio: used, timeToFullMs: ttf, detail, message: why, ...(closely ? { watch: true } : {}) };
  }

  if (input.expansionInFlight) {
    const driver = input.waitingOnDriver
      ? ` (request ${input.waitingOnDriver.request} waits on the driver: ${input.waitingOnDriver.reason}; nothing more is asked until it completes)`
      : '';
    return { kind: 'blocked', reason: 'InFlight', trigger, timeToFullMs: ttf, detail, message: `${why}, but an expansion is already in flight${driver}` };
  }
  let overCooldown = '';
  const cooling = cooldownState(input, imminent);
  if (cooling?.holds) {
    // Watched while the fill may yet turn into one about to fill, which the cooldown does not hold;
    // after a refused request only time can change this decision.
    const watch = !input.lastRequestRefused && closely;
    return {
      kind: 'blocked',
      reason: 'Cooldown',
      trigger,
      timeToFullMs: ttf,
      until: cooling.until,
      detail,
      message: `${why}; cooling down after the last expansion until ${cooling.until.toISOString()}`,
      ...(watch ? { watch } : {}),
    };
  }
  if (cooling) overCooldown = ` (the cooldown until ${cooling.until.toISOString()} does not hold back a volume about to fill)`;
  const w = windowState(spec.windows ?? [], now);
  if (!w.open)
    return {
      kind: 'blocked',
      reason: 'OutsideWindow',
      trigger,
      timeToFullMs: ttf,
      until: w.nextOpen,
      detail,
      message: `${why}; deferred to the next maintenance window at ${w.nextOpen?.toISOString() ?? '(none)'}`,
    };
  const budgetAt = nextModificationAt(
    input.budget,
    input.modifications.map((m) => m.at),
    now,
  );
  if (budgetAt)
    return {
      kind: 'blocked',
      reason: 'Budget',
      trigger,
      timeToFullMs: ttf,
      until: budgetAt,
      detail,
      message: `${why}; the driver's modification budget allows the next change at ${budgetAt.toISOString()}`,
    };

  // The driver's largest volume caps every step as the policy's maximum does.
  const { step, maxBytes, driverCaps } = stepCap(input);
  if (step <= capacityBytes) {
    const which = driverCaps ? 'the largest volume the driver makes for its class' : "the policy's maximum size";
    return { kind: 'atMax', trigger, timeToFullMs: ttf, detail, message: `${why}, but the volume is at ${which} ${formatBytes(maxBytes ?? capacityBytes)}` };
  }
  const lasting =
    input.budget && fill
      ? lastingStep({ budget: input.budget, modifications: input.modifications, newest, ratePerMs: fill.ratePerMs, leadMs: fill.leadMs, spec, maxBytes, now })
      : undefined;
  const target = lasting && lasting.bytes > step ? lasting.bytes : step;
  const sizing = lasting && lasting.bytes > step ? `; ${lasting.note}` : '';
  return {
    kind: 'expand',
    trigger,
    fromBytes: capacityBytes,
    targetBytes: target,
    timeToFullMs: ttf,
    detail,
    message: `${why}${overCooldown}: grow ${formatBytes(capacityBytes)} → ${formatBytes(target)}${sizing}`,
  };
}

/**
 * The size for the last modification a driver's budget allows within its window, when the volume
 * is filling: it must last until the window frees another one. From the newest measurement, the
 * volume fills at the measured rate until the window frees a modification (the window's oldest
 * modification, counting this one, leaves it) plus the lead time an expansion decided then needs;
 * the size must hold that usage under the policy's triggers — at most its usedPercent, at least
 * its minFree free (with neither, just the usage) — rounded up to whole GiB, and never more than
 * the policy's maximum or the driver's largest volume. Undefined unless exactly one modification is
 * left in the window: with more, a normal step leaves room to grow again.
 */
export function lastingStep(input: {
  budget: ModificationBudget;
  modifications: readonly Modification[];
  newest: UsageSample;
  ratePerMs: number;
  leadMs: number;
  spec: Pick<AutoscaleSpec, 'usedRatio' | 'minFreeBytes'>;
  /** The policy's maximum or the driver's largest volume, whichever is smaller. */
  maxBytes?: bigint;
  now: Date;
}): { bytes: bigint; note: string } | undefined {
  const { budget, newest, spec, now } = input;
  if (budget.count - inWindow(budget, input.modifications, now).length !== 1) return undefined;
  const freesAt = nextModificationAt(budget, [...input.modifications.map((m) => m.at), now], now);
  if (!freesAt) return undefined;
  const untilMs = freesAt.getTime() - newest.at.getTime() + input.leadMs;
  const usedThen = newest.usedBytes + BigInt(Math.ceil(input.ratePerMs * untilMs));
  const needed = [
    usedThen,
    ...(spec.usedRatio ? [(usedThen * 1_000_000n) / BigInt(Math.max(1, Math.floor(spec.usedRatio * 1_000_000)))] : []),
    ...(spec.minFreeBytes !== undefined ? [usedThen + spec.minFreeBytes] : []),
  ].reduce((a, b) => (b > a ? b : a));
  const wanted = roundUp(needed, GiB);
  const capped = input.maxBytes !== undefined && wanted > input.maxBytes;
  const bytes = capped ? (input.maxBytes as bigint) : wanted;
  const note = `the last modification the driver's budget allows until ${freesAt.toISOString()}: sized for the ${humanBytes(usedThen)} the fill reaches by then${capped ? `, capped at ${formatBytes(bytes)} (it fills sooner)` : ''}`;
  return { bytes, note };
}

/**
 * Whether the next measurement may turn this decision into an expansion, so it is worth reading as
 * soon as it exists: the newest measurement breaches a threshold (a breach being counted), or the
 * last interval grew fast enough to fill the volume within twice the lead time.
 */
function watchClosely(measurements: readonly UsageSample[], breaches: (s: UsageSample) => Trigger | undefined, expansionMs: number): boolean {
  const newest = measurements[measurements.length - 1];
  if (!newest) return false;
  if (breaches(newest)) return true;
  const last = sustainedFill(points(measurements), 1);
  if (!last) return false;
  const free = Number(newest.capacityBytes - newest.usedBytes);
  return free / last.rate < 2 * (expansionMs + last.longestIntervalMs);
}
