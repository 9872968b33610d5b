import { describe, expect, it } from 'vitest';
import { GiB } from '../../k8s/quantity.ts';
import { decideAutoscale, nextStepBytes, stepSpec, type AutoscaleInput } from './decide.ts';
import { linearFit, timeToFullMs } from './forecast.ts';
import { WindowError, windowState } from './windows.ts';
import type { UsageSample } from './sampling.ts';

const now = new Date('2026-11-29T12:00:00Z');
const ebsBudget = { count: 4, windowMs: 24 * 3_600_000 };
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
    ['only samples older than the last capacity change (the capacity-lag double expansion)', { lastCapacityChangeAt: ago(0.5) }, 'unknown', 'JustGrown'],
    ['a stale newest sample', { samples: [sample(30, 9), sample(20, 9), sample(10, 9)] }, 'unknown', 'StaleSamples'],
    [
      'a usage source reporting another filesystem (hostpath)',
      { samples: [sample(3, 200, 250), sample(2, 200, 250), sample(1, 200, 250)] },
      'unknown',
      'CapacityMismatch',
    ],
    ['a breach not yet sustained', { samples: [sample(3, 5), sample(2, 8.5), sample(1, 8.6)] }, 'idle'],
    ['below the threshold', { samples: [sample(3, 5), sample(2, 5), sample(1, 5)] }, 'idle'],
    ['an expansion in flight', { expansionInFlight: true }, 'blocked', 'InFlight'],
    ['the cooldown', { lastExpansionAt: ago(10) }, 'blocked', 'Cooldown'],
    ['a closed maintenance window', { spec: { usedRatio: 0.8, windows: [{ schedule: '0 2 * * *', durationMs: 2 * 3_600_000 }] } }, 'blocked', 'OutsideWindow'],
    [
      'the EBS budget',
      { budget: ebsBudget, modifications: [ago(600), ago(300), ago(120), ago(60)].map((at) => ({ at, by: 'ver/earlier' })) },
      'blocked',
      'Budget',
    ],
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
    const d = decideAutoscale(
      input({
        capacityBytes: 2n * GiB,
        samples: [sample(3, 1.8, 2), sample(2, 1.8, 2), sample(1, 1.9, 2)],
        spec: { usedRatio: 0.8, stepPercent: 10, minStepBytes: GiB },
      }),
    );
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

describe('decideAutoscale: the fill-rate trigger (always on) and spikes', () => {
  const MiB = 1024n * 1024n;
  /** A 1Gi claim measured at these seconds before now, with this many MiB used. */
  const measured = (points: [secondsAgo: number, usedMiB: number][], capacityMiB = 1024): UsageSample[] =>
    points.map(([s, used]) => ({
      at: new Date(now.getTime() - s * 1000),
      usedBytes: BigInt(Math.round(used * 1024)) * (MiB / 1024n),
      capacityBytes: BigInt(capacityMiB) * MiB,
    }));
  const gib = (spec: Partial<AutoscaleInput['spec']> = {}, samples: UsageSample[] = [], over: Partial<AutoscaleInput> = {}) =>
    decideAutoscale(
      input({ capacityBytes: GiB, samples, spec: { usedRatio: 0.9, sustainedSamples: 3, cooldownMs: 30 * 60_000, expansionMs: 3 * 60_000, ...spec }, ...over }),
    );

  it.each<[string, [number, number][], string, string?]>([
    // 8 MiB/s into 1Gi (full in 128 s), the kubelet measuring every 10–20 s: at 23 % used it fills in 98 s.
    [
      'a steady fill that fills within the lead time, long before the 90 % threshold',
      [
        [31, 0],
        [17, 112],
        [1, 240],
      ],
      'expand',
      'Forecast',
    ],
    [
      'the same fill read one measurement earlier (two measurements: one interval is no fill yet)',
      [
        [17, 112],
        [1, 240],
      ],
      'idle',
    ],
    // 2 MiB/s, measured every 60 s, 400 MiB free: full in 3m19s.
    [
      'a fill within the lead time (3 min + the 60 s to the next measurement) but not the expansion’s 3 min alone',
      [
        [121, 384],
        [61, 504],
        [1, 624],
      ],
      'expand',
      'Forecast',
    ],
    [
      'the same fill with 520 MiB free: full in 4m19s, beyond the lead time',
      [
        [121, 264],
        [61, 384],
        [1, 504],
      ],
      'idle',
    ],
    [
      'a slow fill (1 MiB/min): waits for the threshold',
      [
        [121, 500],
        [61, 501],
        [1, 502],
      ],
      'idle',
    ],
    [
      'one high reading between normal ones',
      [
        [31, 100],
        [17, 900],
        [1, 110],
      ],
      'idle',
    ],
    [
      'a jump with no growth after',
      [
        [31, 100],
        [17, 900],
        [1, 900],
      ],
      'idle',
    ],
    [
      'a jump just now',
      [
        [31, 100],
        [17, 100],
        [1, 900],
      ],
      'idle',
    ],
    [
      'a jump then slow growth (judged at its slowest interval)',
      [
        [31, 100],
        [17, 900],
        [1, 901],
      ],
      'idle',
    ],
    [
      'shrinking usage',
      [
        [31, 900],
        [17, 500],
        [1, 100],
      ],
      'idle',
    ],
    [
      'the same measurement read three times (one measurement: no interval)',
      [
        [1, 240],
        [1, 240],
        [1, 240],
      ],
      'idle',
    ],
  ])('%s → %s', (_name, points, kind, trigger) => {
    const d = gib({}, measured(points));
    expect(d.kind).toBe(kind);
    if (trigger) expect(d).toMatchObject({ trigger });
  });

  it('a measurement read again adds no interval: a fill seen in two measurements read three times is no fill yet', () => {
    const once = measured([
      [17, 112],
      [1, 240],
    ]);
    expect(gib({}, [once[0]!, once[1]!, { ...once[1]! }, { ...once[1]! }]).kind).toBe('idle');
  });

  it('repeated readings of one breaching measurement are not a sustained breach', () => {
    const high = measured([[1, 1000]]);
    expect(gib({}, [high[0]!, { ...high[0]! }, { ...high[0]! }])).toMatchObject({ kind: 'idle', watch: true });
    expect(
      gib(
        {},
        measured([
          [41, 1000],
          [21, 1000],
          [1, 1000],
        ]),
      ),
    ).toMatchObject({ kind: 'expand', trigger: 'UsedRatio' });
  });

  it('by default, a level that holds is acted on at its second measurement; a spike that falls back, never', () => {
    const byDefault = (samples: UsageSample[]) => decideAutoscale(input({ capacityBytes: GiB, samples, spec: { usedRatio: 0.9, cooldownMs: 30 * 60_000 } }));
    // The level jumps to 95 % and holds: one measurement in breach waits, the next (a refresh period on) acts.
    expect(
      byDefault(
        measured([
          [61, 500],
          [1, 973],
        ]),
      ),
    ).toMatchObject({ kind: 'idle', watch: true });
    expect(
      byDefault(
        measured([
          [121, 500],
          [61, 973],
          [1, 973],
        ]),
      ),
    ).toMatchObject({ kind: 'expand', trigger: 'UsedRatio' });
    // A spike: in breach at one measurement, back under at the next.
    expect(
      byDefault(
        measured([
          [121, 500],
          [61, 973],
          [1, 500],
        ]),
      ).kind,
    ).toBe('idle');
  });

  it('reads as many measurements as a threshold needs, at least three', () => {
    const fill = measured([
      [61, 0],
      [46, 120],
      [31, 240],
      [16, 360],
      [1, 480],
    ]);
    expect(gib({ sustainedSamples: 5 }, fill.slice(-3)).kind).toBe('idle');
    expect(gib({ sustainedSamples: 5 }, fill)).toMatchObject({ kind: 'expand', trigger: 'Forecast' });
    expect(gib({ sustainedSamples: 1 }, fill.slice(-2)).kind).toBe('idle');
    expect(gib({ sustainedSamples: 1 }, fill.slice(-3))).toMatchObject({ kind: 'expand', trigger: 'Forecast' });
  });

  it('says why in words that stay while the decision does, and the measured figures apart', () => {
    const a = gib(
      {},
      measured([
        [31, 0],
        [17, 112],
        [1, 240],
      ]),
    );
    const b = gib(
      {},
      measured([
        [29, 10],
        [16, 120],
        [2, 250],
      ]),
    );
    expect(a.message).toBe(b.message);
    expect(a.message).toBe('filling steadily: forecast full within the lead time an expansion needs: grow 1Gi → 2Gi');
    expect((a as { detail: string }).detail).toBe('23.4% used, 784 MiB free, full in 97s, filling at 8 MiB/s, lead time 3m16s');
    const idle = [
      gib(
        {},
        measured([
          [121, 500],
          [61, 501],
          [1, 502],
        ]),
      ),
      gib(
        {},
        measured([
          [121, 600],
          [61, 602],
          [1, 603],
        ]),
      ),
    ];
    expect(idle[0]?.message).toBe(idle[1]?.message);
  });

  it.each<[string, Partial<AutoscaleInput>, object]>([
    [
      'completed an expansion 5 min ago (cooldown 30m)',
      { lastExpansionAt: ago(5) },
      { kind: 'expand', trigger: 'Forecast', message: expect.stringContaining('does not hold back a volume about to fill') },
    ],
    ['had its last request refused 5 min ago', { lastExpansionAt: ago(5), lastRequestRefused: true }, { kind: 'blocked', reason: 'Cooldown' }],
    ['has an expansion in flight', { expansionInFlight: true }, { kind: 'blocked', reason: 'InFlight' }],
    [
      'is outside its maintenance window',
      { spec: { usedRatio: 0.9, expansionMs: 3 * 60_000, windows: [{ schedule: '0 2 * * *', durationMs: 3_600_000 }] } },
      { kind: 'blocked', reason: 'OutsideWindow' },
    ],
  ])('a volume about to fill that %s: %o', (_name, over, want) => {
    expect(
      gib(
        {},
        measured([
          [31, 0],
          [17, 112],
          [1, 240],
        ]),
        over,
      ),
    ).toMatchObject(want);
  });

  it('reads no sooner for a claim the cooldown holds after a refused request: only time changes that', () => {
    const d = gib(
      {},
      measured([
        [31, 0],
        [17, 112],
        [1, 240],
      ]),
      { lastExpansionAt: ago(5), lastRequestRefused: true },
    );
    expect(d).toMatchObject({ kind: 'blocked', reason: 'Cooldown' });
    expect('watch' in d).toBe(false);
  });

  it('the cooldown still holds a threshold breach of a volume not about to fill (watched: it may yet be)', () => {
    expect(
      gib(
        {},
        measured([
          [41, 950],
          [21, 951],
          [1, 952],
        ]),
        { lastExpansionAt: ago(5) },
      ),
    ).toMatchObject({ kind: 'blocked', reason: 'Cooldown', trigger: 'UsedRatio', watch: true });
  });

  it.each<[string, [number, number][], boolean]>([
    ['a breach being counted', [[1, 1000]], true],
    [
      'a first interval fast enough to fill within twice the lead time',
      [
        [16, 0],
        [1, 120],
      ],
      true,
    ],
    [
      'a slow fill under every threshold',
      [
        [121, 500],
        [61, 501],
        [1, 502],
      ],
      false,
    ],
    [
      'a level volume',
      [
        [31, 100],
        [16, 100],
        [1, 100],
      ],
      false,
    ],
  ])('watches the next measurement closely for %s: %s', (_name, points, watch) => {
    const d = gib({}, measured(points));
    expect(d.kind).toBe('idle');
    expect('watch' in d && d.watch === true).toBe(watch);
  });

  it('a policy’s own longer forecast fires on a sustained fill, never on a jump that did not go on', () => {
    const spec = { usedRatio: 0.9, expansionMs: 3 * 60_000, forecast: { horizonMs: 6 * 3_600_000, windowMs: 3_600_000 } };
    // 10Gi, 60 MiB a minute from 5Gi: full in about 85 min.
    const steady = [50, 40, 30, 20, 10, 1].map((m) => sample(m, 5 + ((50 - m) * 60) / 1024));
    expect(decideAutoscale(input({ spec, samples: steady }))).toMatchObject({
      kind: 'expand',
      trigger: 'Forecast',
      message: 'forecast full within 6h: grow 10Gi → 12Gi',
    });
    const jumped = [50, 40, 30, 20, 10, 1].map((m) => sample(m, m > 15 ? 5 : 8));
    expect(decideAutoscale(input({ spec, samples: jumped })).kind).toBe('idle');
  });
});

describe('decideAutoscale on a driver with a modification budget', () => {
  // A 100Gi volume filling at 1 GiB a minute, measured each minute: over its 80 % threshold.
  const filling = [sample(3, 85, 100), sample(2, 86, 100), sample(1, 87, 100)];
  const h = (hours: number) => ({ at: new Date(now.getTime() - hours * 3_600_000), by: 'ver/earlier' });
  const onEbs = (over: Partial<AutoscaleInput> = {}) =>
    decideAutoscale(input({ capacityBytes: 100n * GiB, samples: filling, budget: ebsBudget, modifications: [h(20), h(10), h(5)], ...over }));

  it('sizes the last modification of the window to last until the window frees another', () => {
    // The one 20 h ago leaves the window in 4 h. From the newest measurement (1 min ago) to then,
    // plus the 4 min lead time (3 min expansion + the 1 min interval): 245 min at 1 GiB/min → 332 GiB
    // used, which must be at most 80 % of the volume: 415Gi.
    const d = onEbs();
    expect(d).toMatchObject({ kind: 'expand', trigger: 'UsedRatio', targetBytes: 415n * GiB });
    expect(d.message).toBe(
      "used ≥ 80% in each of the last 3 measurements: grow 100Gi → 415Gi; the last modification the driver's budget allows until 2026-11-29T16:00:00.000Z: sized for the 332 GiB the fill reaches by then",
    );
  });

  it("holds the usage under the policy's minFree instead, when it has no usedPercent", () => {
    expect(onEbs({ spec: { minFreeBytes: 20n * GiB, sustainedSamples: 3 } })).toMatchObject({ kind: 'expand', trigger: 'MinFree', targetBytes: 352n * GiB });
  });

  it.each<[string, Partial<AutoscaleInput>, bigint]>([
    ['two modifications left: a normal step leaves room for another', { modifications: [h(10), h(5)] }, 120n * GiB],
    ['no budget', { budget: undefined }, 120n * GiB],
    ['not filling (a level volume over its threshold)', { samples: [sample(3, 87, 100), sample(2, 87, 100), sample(1, 87, 100)] }, 120n * GiB],
    ["the policy's maximum", { spec: { usedRatio: 0.8, maxBytes: 200n * GiB } }, 200n * GiB],
    ["the driver's largest volume", { driverMaxBytes: 300n * GiB }, 300n * GiB],
  ])('takes the normal step, or caps, with %s', (_name, over, target) => {
    expect(onEbs(over)).toMatchObject({ kind: 'expand', targetBytes: target });
  });

  it('says when a cap leaves the last modification too small to last', () => {
    expect(onEbs({ driverMaxBytes: 300n * GiB }).message).toMatch(/sized for the 332 GiB the fill reaches by then, capped at 300Gi \(it fills sooner\)$/);
  });

  it("never grows beyond the driver's largest volume: at it, says so", () => {
    const d = onEbs({ driverMaxBytes: 100n * GiB, budget: undefined });
    expect(d).toMatchObject({
      kind: 'atMax',
      message: 'used ≥ 80% in each of the last 3 measurements, but the volume is at the largest volume the driver makes for its class 100Gi',
    });
  });

  it('is blocked, not sized, when the window holds no modification left', () => {
    expect(onEbs({ modifications: [h(20), h(10), h(5), h(1)] })).toMatchObject({ kind: 'blocked', reason: 'Budget', until: new Date('2026-11-29T16:00:00Z') });
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
    expect(
      timeToFullMs(
        [
          { atMs: 0, usedBytes: 0 },
          { atMs: 1000, usedBytes: 100 },
        ],
        1000,
        1000,
      ),
    ).toBeCloseTo(9000);
  });

  it.each([
    [
      'flat usage',
      [
        { atMs: 0, usedBytes: 5 },
        { atMs: 10, usedBytes: 5 },
      ],
    ],
    [
      'shrinking usage',
      [
        { atMs: 0, usedBytes: 9 },
        { atMs: 10, usedBytes: 5 },
      ],
    ],
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
