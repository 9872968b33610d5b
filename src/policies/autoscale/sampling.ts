// When a usage reading is a new measurement, and when to read the usage source next. Pure: the
// samples and the clock are passed in; the evaluator (src/operator/reconcilers/expansion-policy.ts)
// keeps the samples and arms the timer.
//
// The kubelet does not measure a volume when asked: each pod's volume stats are recomputed in the
// background (pkg/kubelet/server/stats/volume_stat_calculator.go: wait.JitterUntil with the
// kubelet's volumeStatsAggPeriod, 1 min by default, and a jitter factor of 1.0, so each new
// measurement comes 1–2 periods after the last), and /stats/summary returns the latest, with the
// time it was taken. Reading more often returns the same measurement; reading just after a refresh
// gets the freshest one. So a sample's time is the time of its measurement, a reading of a
// measurement already held is not a new sample, and the next read is timed to just after the next
// refresh of the volumes whose decision it may change.
import { samplingDefaults } from '../../crds/defaults.ts';

/** One reading of a volume's usage, as a usage source gives it. */
export interface UsageSample {
  /** When the usage source measured it (never when pvx read it). */
  at: Date;
  usedBytes: bigint;
  capacityBytes: bigint;
  inodesUsed?: number;
  inodes?: number;
}

/** How a usage source dates its samples. */
export type SampleTimes =
  /** The time the measurement was taken (the kubelet's `time`): a reading with the same time is the same measurement. */
  | 'measurement'
  /**
   * The time a scraper read it (Prometheus's timestamp()): the kubelet's one measurement is scraped
   * again and again with new times, so equal values read within one refresh period of the first
   * reading of them are that one measurement.
   */
  | 'scrape';

const hasInodes = (s: UsageSample) => s.inodes !== undefined || s.inodesUsed !== undefined;
/** Equal readings; inode counts compared only when both have them (a source reads them only when a policy needs them). */
const sameValues = (a: UsageSample, b: UsageSample) =>
  a.usedBytes === b.usedBytes &&
  a.capacityBytes === b.capacityBytes &&
  (!hasInodes(a) || !hasInodes(b) || (a.inodesUsed === b.inodesUsed && a.inodes === b.inodes));

/**
 * Whether `sample` is a measurement `held` (a claim's measurements, oldest first) already has: not
 * newer than the newest, or — for scraped times — the newest's values again within one refresh
 * period of it.
 */
export function knownMeasurement(held: readonly UsageSample[], sample: UsageSample, times: SampleTimes = 'measurement'): boolean {
  const newest = held[held.length - 1];
  if (!newest) return false;
  if (sample.at.getTime() <= newest.at.getTime()) return true;
  return times === 'scrape' && sameValues(newest, sample) && sample.at.getTime() - newest.at.getTime() < refreshPeriodMs(held);
}

/**
 * The usage source's refresh period as a claim's measurements show it: the shortest of their last
 * few intervals (the kubelet waits between one and two periods, so the shortest is closest to the
 * period), at least 1 s (the kubelet's times are whole seconds); the default until there is one.
 */
export function refreshPeriodMs(measurements: readonly UsageSample[], fallbackMs: number = samplingDefaults.refreshMs): number {
  const recent = measurements.slice(-(samplingDefaults.refreshIntervals + 1));
  let shortest = Infinity;
  for (let i = 1; i < recent.length; i++) shortest = Math.min(shortest, (recent[i] as UsageSample).at.getTime() - (recent[i - 1] as UsageSample).at.getTime());
  return Number.isFinite(shortest) ? Math.max(1000, shortest) : fallbackMs;
}

/**
 * Distinct measurements, oldest first: samples sorted by time, one per time (a measurement read
 * twice counts once, whatever kept it).
 */
export function distinctMeasurements(samples: readonly UsageSample[]): UsageSample[] {
  const sorted = [...samples].sort((a, b) => a.at.getTime() - b.at.getTime());
  return sorted.filter((s, i) => i === 0 || s.at.getTime() !== (sorted[i - 1] as UsageSample).at.getTime());
}

export interface ReadScheduleInput {
  now: Date;
  /** The measurements (oldest first) of each claim whose next measurement may change its decision. */
  watched: readonly (readonly UsageSample[])[];
  /** The longest wait between two reads: --policy-interval. */
  maxMs: number;
  /** The shortest wait between two reads (default samplingDefaults.minReadGapMs, never above maxMs). */
  minMs?: number;
  /** How long after a refresh is due to read (default samplingDefaults.settleMs). */
  settleMs?: number;
}

/**
 * How long to wait before reading the usage source again: just after the next refresh of a
 * watched claim is due (its newest measurement plus the refresh period, plus a settling time),
 * and every quarter period from half a period in to two periods (the kubelet's wait is drawn
 * between one and two periods, and the period is an estimate); --policy-interval at most, and
 * that when nothing is watched or a watched claim's source is later than two periods (a pod gone,
 * a node unreachable: polling would not bring it sooner). Never less than the minimum gap.
 */
export function nextReadDelayMs(input: ReadScheduleInput): number {
  const { now, maxMs } = input;
  const floor = Math.min(input.minMs ?? samplingDefaults.minReadGapMs, maxMs);
  const settle = input.settleMs ?? samplingDefaults.settleMs;
  let delay = maxMs;
  for (const measurements of input.watched) {
    const newest = measurements[measurements.length - 1];
    if (!newest) continue;
    const period = refreshPeriodMs(measurements);
    // Every quarter period from half a period after the newest measurement to two periods (the
    // kubelet's longest wait), each a settling time after: so just after the refresh is due, and
    // before it too, since the period is an estimate (learned from the measurements pvx saw: read
    // rarely, it saw only every second or third, and a too-long estimate shows there).
    const first = newest.at.getTime() + settle + period / 2;
    const k = Math.max(0, Math.floor((now.getTime() - first) / (period / 4)) + 1);
    const next = first + (k * period) / 4;
    if (next <= newest.at.getTime() + settle + 2 * period) delay = Math.min(delay, Math.max(0, next - now.getTime()));
  }
  return Math.min(maxMs, Math.max(floor, Math.round(delay)));
}
