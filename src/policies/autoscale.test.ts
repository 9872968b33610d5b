import { describe, expect, it } from 'vitest';
import { GiB } from '../k8s/quantity.ts';
import { decideAutoscale, nextStepBytes, stepSpec, type AutoscaleInput, type UsageSample } from './autoscale.ts';
import { linearFit, timeToFullMs } from './forecast.ts';
import { WindowError, windowState } from './windows.ts';

const now = new Date('2026-11-29T12:00:00Z');
const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000);
const sample = (minutesAgo: number, usedGiB: number, capacityGiB = 10): UsageSample => ({
  at: ago(minutesAgo),
  usedBytes: BigInt(Math.round(usedGiB * 1024)) * (GiB / 1024n),
  capacityBytes: BigInt(capacityGiB) * GiB,
  inodes: 1000,
  inodesUsed: 10,
});

const input = (over: Partial<AutoscaleInput> = {}): AutoscaleInput => ({
  spec: { usedRatio: 0.8, sustainedSamples: 3, stepPercent: 20, minStepBytes: GiB, cooldownMs: 30 * 60_000 },
  capacityBytes: 10n * GiB,
  expansionInFlight: false,
  samples: [sample(3, 8.5), sample(2, 8.6), sample(1, 8.7)],
  modifications: [],
  now,
  ...over,
});

describe('decideAutoscale', () => {
  it('grows by the step, rounded up to whole GiB, when the threshold is breached for N samples', () => {
    expect(decideAutoscale(input())).toMatchObject({ kind: 'expand', trigger: 'UsedRatio', fromBytes: 10n * GiB, targetBytes: 12n * GiB });
  });

  it.each<[string, Partial<AutoscaleInput>, string, string?]>([
    ['no samples', { samples: [] }, 'unknown', 'NoSamples'],
    ['only samples older than the last capacity change (the capacity-lag double expansion)', { lastCapacityChangeAt: ago(0.5) }, 'unknown', 'NoSamples'],
    ['a stale newest sample', { samples: [sample(30, 9), sample(20, 9), sample(10, 9)] }, 'unknown', 'StaleSamples'],
    ['a usage source reporting another filesystem (hostpath)', { samples: [sample(3, 200, 250), sample(2, 200, 250), sample(1, 200, 250)] }, 'unknown', 'CapacityMismatch'],
    ['a breach not yet sustained', { samples: [sample(3, 5), sample(2, 8.5), sample(1, 8.6)] }, 'idle'],
    ['below the threshold', { samples: [sample(3, 5), sample(2, 5), sample(1, 5)] }, 'idle'],
    ['an expansion in flight', { expansionInFlight: true }, 'blocked', 'InFlight'],
    ['the cooldown', { lastExpansionAt: ago(10) }, 'blocked', 'Cooldown'],
    ['a closed maintenance window', { spec: { usedRatio: 0.8, windows: [{ schedule: '0 2 * * *', durationMs: 2 * 3_600_000 }] } }, 'blocked', 'OutsideWindow'],
    ['the EBS budget', { provisioner: 'ebs.csi.aws.com', modifications: [ago(600), ago(300), ago(120), ago(60)] }, 'blocked', 'Budget'],
    ['the maximum size', { spec: { usedRatio: 0.8, maxBytes: 10n * GiB } }, 'atMax'],
  ])('%s → %s', (_name, over, kind, reason) => {
    const d = decideAutoscale(input(over));
    expect(d.kind).toBe(kind);
    if (reason) expect((d as { reason?: string }).reason).toBe(reason);
  });

  it('says until when it is blocked', () => {
    const d = decideAutoscale(input({ lastExpansionAt: ago(10) }));
    expect(d).toMatchObject({ kind: 'blocked', until: new Date(now.getTime() + 20 * 60_000) });
  });

  it('caps the step at the maximum size', () => {
    expect(decideAutoscale(input({ spec: { usedRatio: 0.8, maxBytes: 11n * GiB } }))).toMatchObject({ kind: 'expand', targetBytes: 11n * GiB });
  });

  it('uses the minimum step when the percentage is smaller', () => {
    const d = decideAutoscale(input({ capacityBytes: 2n * GiB, samples: [sample(3, 1.8, 2), sample(2, 1.8, 2), sample(1, 1.9, 2)], spec: { usedRatio: 0.8, stepPercent: 10, minStepBytes: GiB } }));
    expect(d).toMatchObject({ kind: 'expand', targetBytes: 3n * GiB });
  });

  it.each<[string, Partial<AutoscaleInput>, string]>([
    ['inodes', { spec: { inodesRatio: 0.9 }, samples: [3, 2, 1].map((m) => ({ ...sample(m, 1), inodesUsed: 950 })) }, 'InodesRatio'],
    ['free bytes', { spec: { minFreeBytes: 2n * GiB }, samples: [sample(3, 8.5), sample(2, 8.5), sample(1, 8.5)] }, 'MinFree'],
  ])('fires on %s', (_name, over, trigger) => {
    expect(decideAutoscale(input(over))).toMatchObject({ kind: 'expand', trigger });
  });

  it('fires on the forecast before the ratio threshold would', () => {
    // 50 % used, growing 0.1 GiB/min: full in 50 min.
    const samples = [10, 8, 6, 4, 2, 0.5].map((m) => sample(m, 5 - m * 0.1));
    const spec = { usedRatio: 0.8, forecast: { horizonMs: 60 * 60_000, windowMs: 30 * 60_000, minSamples: 5 } };
    const d = decideAutoscale(input({ spec, samples }));
    expect(d).toMatchObject({ kind: 'expand', trigger: 'Forecast' });
    expect(decideAutoscale(input({ spec: { ...spec, forecast: { ...spec.forecast, horizonMs: 30 * 60_000 } }, samples })).kind).toBe('idle');
  });

  it('keeps the forecast in a decision that cannot act on it (the time to full stays current while blocked)', () => {
    const samples = [10, 8, 6, 4, 2, 0.5].map((m) => sample(m, 5 - m * 0.1));
    const spec = { usedRatio: 0.8, forecast: { horizonMs: 60 * 60_000, windowMs: 30 * 60_000, minSamples: 5 } };
    const d = decideAutoscale(input({ spec, samples, expansionInFlight: true }));
    expect(d).toMatchObject({ kind: 'blocked', reason: 'InFlight' });
    expect((d as { timeToFullMs?: number }).timeToFullMs).toBeGreaterThan(49 * 60_000);
    expect((d as { timeToFullMs?: number }).timeToFullMs).toBeLessThan(52 * 60_000);
  });
});

describe('forecast', () => {
  it('fits a line exactly through collinear points', () => {
    const fit = linearFit([
      { atMs: 1_000_000, usedBytes: 100 },
      { atMs: 1_001_000, usedBytes: 200 },
      { atMs: 1_002_000, usedBytes: 300 },
    ]);
    expect(fit?.slope).toBeCloseTo(0.1);
    expect(timeToFullMs([{ atMs: 0, usedBytes: 0 }, { atMs: 1000, usedBytes: 100 }], 1000, 1000)).toBeCloseTo(9000);
  });

  it.each([
    ['flat usage', [{ atMs: 0, usedBytes: 5 }, { atMs: 10, usedBytes: 5 }]],
    ['shrinking usage', [{ atMs: 0, usedBytes: 9 }, { atMs: 10, usedBytes: 5 }]],
    ['one point', [{ atMs: 0, usedBytes: 9 }]],
  ])('never full with %s', (_name, points) => {
    expect(timeToFullMs(points, 100, 10)).toBeUndefined();
  });
});

describe('maintenance windows', () => {
  const nightly = { schedule: '0 2 * * *', durationMs: 2 * 3_600_000, timeZone: 'Europe/Berlin' };
  it.each([
    ['2026-11-29T01:30:00Z', true], // 02:30 in Berlin (UTC+1)
    ['2026-11-29T00:59:00Z', false],
    ['2026-11-29T03:00:00Z', false], // the window closed at 04:00 Berlin = 03:00 UTC
  ])('at %s open = %s', (at, open) => {
    expect(windowState([nightly], new Date(at)).open).toBe(open);
  });

  it('names the next opening when closed', () => {
    expect(windowState([nightly], new Date('2026-11-29T12:00:00Z')).nextOpen?.toISOString()).toBe('2026-11-30T01:00:00.000Z');
  });

  it('is always open without windows', () => {
    expect(windowState([], now)).toEqual({ open: true });
  });

  it('names a bad expression', () => {
    expect(() => windowState([{ schedule: 'at night', durationMs: 1 }], now)).toThrow(WindowError);
    expect(() => windowState([{ schedule: 'at night', durationMs: 1 }], now)).toThrow(/"at night"/);
  });
});

describe('nextStepBytes', () => {
  it.each([
    [{}, 10n * GiB, 12n * GiB],
    [{}, 2n * GiB, 3n * GiB], // 20 % is less than the 1Gi minimum
    [{ step: { percent: 50 } }, 10n * GiB, 15n * GiB],
    [{ step: { percent: 10, minimum: '5Gi' } }, 10n * GiB, 15n * GiB],
    [{ maxSize: '11Gi' }, 10n * GiB, 11n * GiB],
  ])('%o of %s → %s', (spec, capacity, want) => {
    expect(nextStepBytes(capacity, stepSpec(spec))).toBe(want);
  });

  it('is the capacity itself at the maximum size (no growth left)', () => {
    expect(nextStepBytes(10n * GiB, stepSpec({ maxSize: '10Gi' }))).toBe(10n * GiB);
  });
});
