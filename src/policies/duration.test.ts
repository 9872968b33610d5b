import { describe, expect, it } from 'vitest';
import { parseDuration } from './duration.ts';

describe('parseDuration', () => {
  it.each([
    ['30m', 1_800_000],
    ['1h30m', 5_400_000],
    ['90s', 90_000],
    ['250ms', 250],
    ['soon', undefined],
    ['', undefined],
    ['5m garbage', undefined],
  ])('%s → %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });
});
