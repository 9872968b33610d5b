import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { samplingDefaults } from '../../crds/defaults.ts';
import { distinctMeasurements, knownMeasurement, nextReadDelayMs, refreshPeriodMs, type UsageSample } from './sampling.ts';

const t0 = Date.parse('2026-11-29T12:00:00Z');
const at = (s: number, used = 100n): UsageSample => ({ at: new Date(t0 + s * 1000), usedBytes: used, capacityBytes: 1000n });

describe('knownMeasurement', () => {
  const held = [at(0, 100n), at(60, 200n)];
  const withInodes = held.map((s) => ({ ...s, inodesUsed: 1, inodes: 100 }));
  it.each<[string, readonly UsageSample[], UsageSample, 'measurement' | 'scrape', boolean]>([
    ['nothing held', [], at(0), 'measurement', false],
    ['the newest measurement read again (same time)', held, at(60, 200n), 'measurement', true],
    ['an older measurement (another pod’s, read late)', held, at(30, 150n), 'measurement', true],
    ['a newer measurement with the same values (a steady volume measured again)', held, at(120, 200n), 'measurement', false],
    ['a newer measurement', held, at(75, 250n), 'measurement', false],
    ['a scrape of the same values within the refresh period (60 s)', held, at(100, 200n), 'scrape', true],
    ['a scrape of the same values a refresh period later (measured again, unchanged)', held, at(120, 200n), 'scrape', false],
    ['a scrape of new values', held, at(75, 250n), 'scrape', false],
    ['a scrape with the same used bytes and new inodes', withInodes, { ...at(75, 200n), inodesUsed: 5, inodes: 100 }, 'scrape', false],
    // A source reads inodes only while a policy has an inode trigger: their first reading is not a new measurement.
    ['a scrape of the same bytes with inodes read for the first time', held, { ...at(75, 200n), inodesUsed: 5, inodes: 100 }, 'scrape', true],
  ])('%s → %s', (_name, list, sample, times, known) => {
    expect(knownMeasurement(list, sample, times)).toBe(known);
  });
});

describe('refreshPeriodMs', () => {
  it.each<[string, number[], number]>([
    ['no measurement', [], samplingDefaults.refreshMs],
    ['one measurement', [0], samplingDefaults.refreshMs],
    ['the shortest interval (the kubelet waits one to two periods)', [0, 75, 135, 230], 60_000],
    ['at least 1 s (the kubelet’s times are whole seconds)', [0, 0.2, 10], 1000],
    [
      `only the last ${samplingDefaults.refreshIntervals} intervals`,
      [0, 5, ...Array.from({ length: samplingDefaults.refreshIntervals }, (_, i) => 10 + (i + 1) * 20)],
      20_000,
    ],
  ])('%s', (_name, seconds, want) => {
    expect(refreshPeriodMs(seconds.map((s) => at(s)))).toBe(want);
  });
});

describe('distinctMeasurements', () => {
  it('orders by measurement time and keeps one sample per time', () => {
    const got = distinctMeasurements([at(20, 3n), at(0, 1n), at(20, 3n), at(10, 2n), at(0, 1n)]);
    expect(got.map((s) => s.usedBytes)).toEqual([1n, 2n, 3n]);
  });
});

describe('nextReadDelayMs', () => {
  const now = new Date(t0 + 100_000);
  // Measurements of one claim every `period` seconds, the newest `age` seconds before now.
  const measured = (period: number, age: number) => [2, 1, 0].map((k) => at(100 - age - k * period));
  it.each<[string, (readonly UsageSample[])[], number, number]>([
    ['nothing watched: the policy interval', [], 30_000, 30_000],
    ['a claim measured 1 s ago, period 60 s: half a period in (and 2 s settling), to find a too-long estimate', [measured(60, 1)], 120_000, 31_000],
    ['the same 32 s in: a quarter period later', [measured(60, 32)], 30_000, 15_000],
    ['a claim measured 50 s ago, period 60 s: just after its refresh is due (60 s + 2 s)', [measured(60, 50)], 30_000, 12_000],
    ['a claim measured 31 s ago, period 4 min: its next read, 91 s away, capped at the policy interval', [measured(240, 31)], 30_000, 30_000],
    ['a claim whose next read is 4 s away: never below the minimum gap', [measured(60, 58)], 30_000, samplingDefaults.minReadGapMs],
    ['a claim whose refresh is due but not seen (the jitter): every quarter period', [measured(60, 63)], 30_000, 14_000],
    ['the same with a short period: never below the minimum gap', [measured(10, 13)], 30_000, samplingDefaults.minReadGapMs],
    ['a claim two periods late (a pod gone): the policy interval', [measured(10, 25)], 30_000, 30_000],
    ['the soonest of several claims', [measured(60, 1), measured(60, 50), measured(10, 25)], 120_000, 12_000],
    ['a policy interval shorter than the minimum gap wins', [measured(10, 6)], 2000, 2000],
    ['one measurement: the default period (60 s), half of it in', [[at(95)]], 120_000, 27_000],
  ])('%s', (_name, watched, maxMs, want) => {
    expect(nextReadDelayMs({ now, watched, maxMs })).toBe(want);
  });

  test.prop([fc.array(fc.array(fc.integer({ min: -100_000, max: 100_000 }), { maxLength: 6 }), { maxLength: 5 }), fc.integer({ min: 1000, max: 600_000 })])(
    'is always between the minimum gap (or the policy interval, if shorter) and the policy interval',
    (claims, maxMs) => {
      const watched = claims.map((times) => distinctMeasurements(times.map((ms) => ({ at: new Date(t0 + ms), usedBytes: 1n, capacityBytes: 2n }))));
      const delay = nextReadDelayMs({ now: new Date(t0), watched, maxMs });
      expect(delay).toBeGreaterThanOrEqual(Math.min(samplingDefaults.minReadGapMs, maxMs));
      expect(delay).toBeLessThanOrEqual(maxMs);
    },
  );
});
