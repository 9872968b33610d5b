// The simulation's one source of chance. Every decision of a run (actions, faults, delays, the
// operator's own jitter) is drawn from streams seeded by the run's seed, so a seed replays exactly.
// mulberry32: 32-bit state, fast, and good enough to explore interleavings; not for cryptography.

export class Random {
  private state: number;

  constructor(seed: number) {
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new TypeError(`seed must be an integer in [0, 2^32), got ${seed}`);
    this.state = seed >>> 0;
  }

  /** A new independent stream: the operator's Math.random draws from its own, so adding a fault does not shift its jitter. */
  fork(salt: number): Random {
    return new Random((Math.imul(this.state ^ salt, 0x9e3779b1) ^ salt) >>> 0);
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** One of the options, each as likely as its weight. */
  weighted<T>(options: readonly (readonly [T, number])[]): T {
    const total = options.reduce((s, [, w]) => s + w, 0);
    let r = this.next() * total;
    for (const [value, w] of options) {
      r -= w;
      if (r < 0) return value;
    }
    return (options[options.length - 1] as readonly [T, number])[0];
  }

  /** A duration skewed towards short ones (log-uniform between min and max ms). */
  duration(minMs: number, maxMs: number): number {
    return Math.round(Math.exp(Math.log(minMs) + this.next() * (Math.log(maxMs) - Math.log(minMs))));
  }
}
