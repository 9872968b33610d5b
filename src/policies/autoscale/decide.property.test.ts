// Properties of the policies' default triggers over generated usage: a steady fill that would be
// full within the time an expansion needs is grown before any threshold; one jump between two
// measurements never is; a measurement read again changes nothing; a slow fill waits for the
// threshold. The measurements are made as the kubelet makes them: each 1–2 periods after the last.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { GiB } from '../../k8s/quantity.ts';
import { decideAutoscale, nextStepBytes, usedRatio, type AutoscaleInput } from './decide.ts';
import { policyDefaults } from '../../crds/defaults.ts';
import type { UsageSample } from './sampling.ts';

const t0 = Date.parse('2026-11-29T12:00:00Z');
const capacityBytes = 10n * GiB;
const cap = Number(capacityBytes);
/** Defaults, a 90 % threshold (pvc-autoresizer's 10 % free), no cooldown or window in the way. */
const spec: AutoscaleInput['spec'] = {
  usedRatio: 0.9,
  sustainedSamples: policyDefaults.sustainedSamples,
  expansionMs: policyDefaults.expansionMs,
  cooldownMs: policyDefaults.cooldownMs,
};
const decide = (samples: UsageSample[], now: number, over: Partial<AutoscaleInput> = {}) =>
  decideAutoscale({ spec, capacityBytes, expansionInFlight: false, samples, modifications: [], now: new Date(now), ...over });

/** Measurement times: the first at t0, then each 1–2 periods (seconds, whole: the kubelet's resolution) after the last. */
const times = (count: number) =>
  fc
    .record({
      periodS: fc.integer({ min: 5, max: 120 }),
      jitters: fc.array(fc.double({ min: 0, max: 0.999, noNaN: true }), { minLength: count - 1, maxLength: count - 1 }),
    })
    .map(({ periodS, jitters }) => {
      const out = [t0];
      for (const j of jitters) out.push((out[out.length - 1] as number) + Math.round(periodS * (1 + j)) * 1000);
      return { periodMs: periodS * 1000, at: out };
    });

const sampleAt = (atMs: number, used: number): UsageSample => ({ at: new Date(atMs), usedBytes: BigInt(Math.round(used)), capacityBytes });

/** A steady fill: `rate` bytes a second from `start` bytes, measured at the given times. */
const fill = (at: number[], start: number, rate: number) => at.map((t) => sampleAt(t, start + (rate * (t - t0)) / 1000));

describe('the fill-rate trigger', () => {
  test.prop([
    times(3),
    fc.double({ min: 0.01, max: 0.95, noNaN: true }),
    fc.double({ min: 0, max: 1, noNaN: true }),
    fc.double({ min: 0, max: 0.999, noNaN: true }),
  ])('grows a steady fill that would be full within the time an expansion needs, before the threshold', ({ at }, fractionFree, startFraction, lateness) => {
    const newest = at[2] as number;
    // Choose the rate so that, measured at `newest`, the volume is full in fractionFree × expansionMs.
    const spanS = (newest - t0) / 1000;
    const start = startFraction * 0.5 * cap;
    const freeAtNewest = cap - start;
    // used(newest) = start + rate·span, and free(newest) / rate = ttf  ⇒  rate = (cap − start) / (span + ttf).
    const ttfS = (fractionFree * policyDefaults.expansionMs) / 1000;
    const rate = freeAtNewest / (spanS + ttfS);
    const samples = fill(at, start, rate);
    const usedNow = Number((samples[2] as UsageSample).usedBytes) / cap;
    fc.pre(usedNow < 0.9); // under the threshold: only the forecast can fire
    const now = newest + lateness * ttfS * 1000 * 0.5;
    expect(decide(samples, now)).toMatchObject({ kind: 'expand', trigger: 'Forecast' });
  });

  const spike = fc.record({
    count: fc.integer({ min: 3, max: 8 }),
    base: fc.double({ min: 0, max: 0.5, noNaN: true }),
    jump: fc.double({ min: 0.01, max: 0.49, noNaN: true }),
    at: fc.nat(),
    stays: fc.boolean(),
  });

  test.prop([spike, times(8)])(
    'never fires on one jump between two measurements: a high reading between normal ones, or a jump with no growth after',
    (s, { at }) => {
      const k = 1 + (s.at % (s.count - 1)); // the jump comes at measurement k ≥ 1
      const samples = at.slice(0, s.count).map((t, i) => sampleAt(t, (s.base + (i === k || (s.stays && i > k) ? s.jump : 0)) * cap));
      // No threshold: only the forecast could fire.
      const d = decide(samples, at[s.count - 1] as number, { spec: { ...spec, usedRatio: undefined } });
      expect(d.kind).toBe('idle');
    },
  );

  test.prop([
    times(6),
    fc.double({ min: 0, max: 0.8, noNaN: true }),
    fc.double({ min: 0, max: 50_000_000, noNaN: true }),
    fc.array(fc.nat({ max: 5 }), { minLength: 1, maxLength: 6 }),
  ])('counts a measurement read again once: duplicates change no decision', ({ at }, start, rate, repeats) => {
    const samples = fill(at, start * cap, rate).filter((s) => Number(s.usedBytes) < cap);
    const now = at[5] as number;
    const repeated = samples.flatMap((s, i) => Array.from({ length: 1 + (repeats[i % repeats.length] as number) }, () => ({ ...s })));
    expect(decide(repeated, now)).toEqual(decide(samples, now));
  });

  test.prop([times(6), fc.double({ min: 0, max: 0.85, noNaN: true }), fc.double({ min: 1, max: 100, noNaN: true })])(
    'lets a slow fill wait for the threshold',
    ({ at, periodMs }, start, slowness) => {
      const newest = at[5] as number;
      // Full, from the newest measurement, no sooner than `slowness` times twice the longest possible lead time.
      const lead = policyDefaults.expansionMs + 2 * periodMs;
      const ttfS = (2 * lead * slowness) / 1000;
      const startBytes = start * cap;
      const rate = (cap - startBytes) / ((newest - t0) / 1000 + ttfS);
      const samples = fill(at, startBytes, rate);
      fc.pre(Number((samples[5] as UsageSample).usedBytes) / cap < 0.9);
      expect(decide(samples, newest).kind).toBe('idle');
    },
  );
});

describe('the last modification a driver budget allows', () => {
  const big = 100n * GiB;
  const windowMs = 24 * 3_600_000;
  const scenario = fc.record({
    count: fc.integer({ min: 1, max: 6 }),
    /** Ages of the modifications in the window (fractions of it): count − 1 of them. */
    ages: fc.array(fc.double({ min: 0.001, max: 0.999, noNaN: true }), { minLength: 5, maxLength: 5 }),
    usedRatio: fc.double({ min: 0.5, max: 0.95, noNaN: true }),
    /** Used at the newest measurement, as a fraction of the capacity (over the threshold). */
    usedFraction: fc.double({ min: 0, max: 1, noNaN: true }),
    /** Bytes a second. */
    rate: fc.double({ min: 1, max: 50 * 1024 * 1024, noNaN: true }),
    policyMaxGiB: fc.option(fc.integer({ min: 101, max: 100_000 }), { nil: undefined }),
    driverMaxGiB: fc.option(fc.integer({ min: 101, max: 100_000 }), { nil: undefined }),
  });

  test.prop([scenario])('lasts until the window frees another (or reaches a cap), never below the normal step, never above a cap', (s) => {
    const budget = { count: s.count, windowMs };
    const now = t0 + 3 * 60_000;
    const bigCap = Number(big);
    const used = (s.usedRatio + (1 - s.usedRatio) * s.usedFraction * 0.99) * bigCap;
    const samples = [2, 1, 0].map((i): UsageSample => ({
      at: new Date(now - i * 60_000),
      usedBytes: BigInt(Math.round(used - s.rate * 60 * i)),
      capacityBytes: big,
    }));
    // Every measurement over the threshold, as the autoscaler reads it (to a millionth).
    fc.pre(samples.every((m) => usedRatio(m) >= s.usedRatio));
    const modifications = s.ages.slice(0, s.count - 1).map((a) => ({ at: new Date(now - a * windowMs), by: 'observed:x' }));
    const maxBytes = s.policyMaxGiB === undefined ? undefined : BigInt(s.policyMaxGiB) * GiB;
    const driverMaxBytes = s.driverMaxGiB === undefined ? undefined : BigInt(s.driverMaxGiB) * GiB;
    const d = decideAutoscale({
      spec: { usedRatio: s.usedRatio, sustainedSamples: 3, expansionMs: policyDefaults.expansionMs, maxBytes },
      capacityBytes: big,
      expansionInFlight: false,
      samples,
      modifications,
      budget,
      driverMaxBytes,
      now: new Date(now),
    });
    expect(d.kind).toBe('expand');
    if (d.kind !== 'expand') return;
    const caps = [maxBytes, driverMaxBytes].filter((c): c is bigint => c !== undefined);
    const capAt = caps.length ? caps.reduce((a, b) => (a < b ? a : b)) : undefined;
    if (capAt !== undefined) expect(d.targetBytes).toBeLessThanOrEqual(capAt);
    const normal = nextStepBytes(big, { stepPercent: policyDefaults.stepPercent, minStepBytes: policyDefaults.minStepBytes, maxBytes: capAt });
    expect(d.targetBytes).toBeGreaterThanOrEqual(normal);
    if (d.targetBytes === capAt) return;
    // The window frees a modification when the oldest of those it holds, this one counted, leaves it.
    const times = [...modifications.map((m) => m.at.getTime()), now].sort((a, b) => a - b);
    const freesAt = (times[times.length - s.count] as number) + windowMs;
    const leadMs = policyDefaults.expansionMs + 60_000;
    const usedThen = used + (s.rate * (freesAt - now + leadMs)) / 1000;
    // Tolerance: the measured rate is fitted from rounded byte counts.
    expect(usedThen).toBeLessThanOrEqual(s.usedRatio * Number(d.targetBytes) * 1.0001 + 1024);
  });
});
