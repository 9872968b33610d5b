// Recent usage samples per PVC, and when each PVC's capacity last changed, kept in memory: after a
// restart the policies start from no samples, which they treat as "unknown" until enough fresh
// ones arrive — the safe direction.
import type { UsageSample } from '../policies/autoscale.ts';

export class SampleStore {
  private readonly samples = new Map<string, UsageSample[]>();
  private readonly capacity = new Map<string, { value: string; changedAt?: Date }>();
  private readonly keep: number;

  constructor(keep = 120) {
    this.keep = keep;
  }

  add(key: string, sample: UsageSample): void {
    const list = this.samples.get(key) ?? [];
    const last = list[list.length - 1];
    if (last && last.at.getTime() >= sample.at.getTime()) return; // the kubelet had nothing new
    list.push(sample);
    if (list.length > this.keep) list.splice(0, list.length - this.keep);
    this.samples.set(key, list);
  }

  get(key: string): UsageSample[] {
    return this.samples.get(key) ?? [];
  }

  /** Records the PVC's status.capacity as seen now; returns when it last changed (if seen to). */
  observeCapacity(key: string, value: string, now: Date): Date | undefined {
    const seen = this.capacity.get(key);
    if (!seen) {
      this.capacity.set(key, { value });
      return undefined;
    }
    if (seen.value !== value) {
      seen.value = value;
      seen.changedAt = now;
    }
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
