import { describe, expect, it } from 'vitest';
import { elapsed, humanDuration, parseDuration } from './duration.ts';

describe('parseDuration', () => {
  it.each([
    ['30m', 1_800_000],
    ['1h30m', 5_400_000],
    ['90s', 90_000],
    ['250ms', 250],
    ['soon', undefined],
    ['', undefined],
    ['5m garbage', undefined],
    ['0s', 0],
    ['168h', 604_800_000],
    ['1h1h', 7_200_000],
    ['2562047h', 2_562_047 * 3_600_000], // within Go's 292 years
    ['2562048h', undefined], // past them: CEL's duration() refuses it too
    [`${'9'.repeat(400)}h`, undefined], // would be Infinity
    ['Infinity', undefined],
    ['1e400s', undefined],
    ['NaN', undefined],
    ['0', undefined],
    ['30', undefined],
    ['-5m', undefined],
    ['1.5h', undefined],
    [' 30s', undefined],
    ['30s ', undefined],
    ['30S', undefined],
  ])('%s → %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
});

const s = 1000;
const m = 60 * s;
const h = 60 * m;
const d = 24 * h;

describe('humanDuration', () => {
  it('is precise while short and coarser as it grows, like kubectl’s AGE', () => {
    expect([0, 45 * s, 119 * s, 2 * m, 5 * m + 30 * s, 47 * m, 5 * h + 30 * m, 30 * h, 3 * d + 4 * h, 30 * d, 800 * d].map(humanDuration)).toEqual([
      '0s',
      '45s',
      '119s',
      '2m',
      '5m30s',
      '47m',
      '5h30m',
      '30h',
      '3d4h',
      '30d',
      '2y70d',
    ]);
  });

  it('shows a clock skewed into the future as 0s', () => {
    expect(humanDuration(-5 * s)).toBe('0s');
  });
});

describe('elapsed', () => {
  it('keeps a steady width for live progress', () => {
    expect([3 * s, 65 * s, 59 * m + 59 * s, h + 2 * m].map(elapsed)).toEqual(['3s', '1m05s', '59m59s', '1h02m']);
  });
});
