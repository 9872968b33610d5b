// Recent usage measurements per PVC, and when each PVC's capacity last changed, kept in memory:
// after a restart the policies start from no samples, which they treat as "unknown" until enough
// fresh ones arrive — the safe direction. A reading of a measurement already held is not kept
// (src/policies/autoscale/sampling.ts, knownMeasurement), so "3 samples" are 3 measurements and rates are
// taken over the times they were measured.
import { knownMeasurement, type SampleTimes, type UsageSample } from '../policies/autoscale/sampling.ts';

export class SampleStore {
  private readonly samples = new Map<string, UsageSample[]>();
  private readonly capacity = new Map<string, { value: string; uid?: string; changedAt?: Date }>();
  private readonly keep: number;

  constructor(keep = 120) {
    this.keep = keep;
  }

  /** Keeps the sample if it is a new measurement; returns whether it was. */
  add(key: string, sample: UsageSample, times: SampleTimes = 'measurement'): boolean {
    const list = this.samples.get(key) ?? [];
    if (knownMeasurement(list, sample, times)) return false; // the source had nothing new
    list.push(sample);
    if (list.length > this.keep) list.splice(0, list.length - this.keep);
    this.samples.set(key, list);
    return true;
  }

  get(key: string): UsageSample[] {
    return this.samples.get(key) ?? [];
  }

  /**
   * Records the PVC's status.capacity (and UID) as seen now; returns when either last changed (if
   * seen to). A claim deleted and created again under its name is another volume: the samples held
   * for the name describe the old one and are dropped, and it counts as changed now (usage sources
   * name claims, not UIDs).
   */
  observeCapacity(key: string, value: string, now: Date, uid?: string): Date | undefined {
    const seen = this.capacity.get(key);
    if (!seen) {
      this.capacity.set(key, { value, uid });
      return undefined;
    }
    if (uid !== undefined && seen.uid !== undefined && seen.uid !== uid) {
      this.samples.delete(key);
      seen.changedAt = now;
    } else if (seen.value !== value) {
      seen.changedAt = now;
    }
    seen.value = value;
    seen.uid = uid ?? seen.uid;
    return seen.changedAt;
  }

  /** Drops PVCs that no longer exist. */
  retain(keys: Set<string>): string[] {
    const gone = [...this.samples.keys(), ...this.capacity.keys()].filter((k) => !keys.has(k));
    for (const k of gone) {
      this.samples.delete(k);
      this.capacity.delete(k);
    }
    return [...new Set(gone)];
  }
}
