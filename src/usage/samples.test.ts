import { describe, expect, it } from 'vitest';
import type { UsageSample } from '../policies/autoscale/sampling.ts';
import { SampleStore } from './samples.ts';

const t0 = Date.parse('2026-11-29T12:00:00Z');
const at = (s: number, used: bigint): UsageSample => ({ at: new Date(t0 + s * 1000), usedBytes: used, capacityBytes: 1000n });

describe('SampleStore', () => {
  it('keeps each measurement once, however often it is read (the kubelet’s time names it)', () => {
    const store = new SampleStore();
    expect(store.add('db/a', at(0, 100n))).toBe(true);
    expect(store.add('db/a', at(0, 100n))).toBe(false);
    expect(store.add('db/a', at(0, 100n))).toBe(false);
    expect(store.add('db/a', at(60, 100n))).toBe(true); // measured again, unchanged: a measurement of its own
    expect(store.get('db/a').map((s) => s.at.getTime() - t0)).toEqual([0, 60_000]);
  });

  it('with scrape times, keeps the first reading of a measurement scraped again with newer times', () => {
    const store = new SampleStore();
    for (const [s, used] of [
      [0, 100n],
      [15, 100n],
      [30, 100n],
      [45, 180n],
      [60, 180n],
      [75, 180n],
      [90, 260n],
    ] as const)
      store.add('db/a', at(s, used), 'scrape');
    expect(store.get('db/a').map((s) => [s.at.getTime() - t0, s.usedBytes])).toEqual([
      [0, 100n],
      [45_000, 180n],
      [90_000, 260n],
    ]);
  });

  it('keeps at most its limit per claim, the newest', () => {
    const store = new SampleStore(3);
    for (let s = 0; s < 5; s++) store.add('db/a', at(s, BigInt(s)));
    expect(store.get('db/a').map((s) => s.usedBytes)).toEqual([2n, 3n, 4n]);
  });

  it('takes a claim created again under its name for another volume: its samples go, and it changed now', () => {
    const store = new SampleStore();
    const seen = (s: number, value: string, uid: string) => store.observeCapacity('db/a', value, new Date(t0 + s * 1000), uid);
    expect(seen(0, '10Gi', 'u1')).toBeUndefined();
    store.add('db/a', at(10, 700n));
    expect(seen(20, '10Gi', 'u1')).toBeUndefined();
    expect(store.get('db/a')).toHaveLength(1);
    expect(seen(30, '10Gi', 'u2')).toEqual(new Date(t0 + 30_000));
    expect(store.get('db/a')).toEqual([]);
    expect(seen(40, '12Gi', 'u2')).toEqual(new Date(t0 + 40_000));
  });
});
