import { describe, expect, it } from 'vitest';
import { GiB, QuantityError, compareQuantities, formatBytes, humanBytes, parseBytes, parseQuantity, roundUp, toBytes } from './quantity.ts';

describe('parseQuantity → bytes', () => {
  it.each([
    ['0', 0n],
    ['1', 1n],
    ['+7', 7n],
    ['-1', -1n],
    ['1Ki', 1024n],
    ['10Gi', 10n * GiB],
    ['1.5Gi', 1610612736n],
    ['0.5Mi', 524288n],
    ['.5Ki', 512n],
    ['5.Ki', 5120n],
    ['1Ei', 2n ** 60n],
    ['500M', 500_000_000n],
    ['1k', 1000n],
    ['1G', 1_000_000_000n],
    ['2T', 2_000_000_000_000n],
    ['1P', 10n ** 15n],
    ['1E', 10n ** 18n],
    ['1e3', 1000n],
    ['1E3', 1000n],
    ['1.5e3', 1500n],
    ['15e-1', 2n], // 1.5 rounds up
    ['100m', 1n], // a tenth of a byte rounds up to 1
    ['1000m', 1n],
    ['1500m', 2n],
    ['-1500m', -2n], // away from zero, like Quantity.Value()
    ['0.000001Gi', 1074n],
    ['123456789012345678901234567890', 123456789012345678901234567890n],
  ])('%s = %s bytes', (text, bytes) => {
    expect(toBytes(parseQuantity(text))).toBe(bytes);
  });

  it.each(['', ' ', 'Gi', '1 Gi', '1gi', '1GiB', '1Kb', '1.5.5', '1e', '1ee3', '1e3.5', '1Ki5', '--1', 'abc', '1,5Gi', '0x10'])(
    'rejects %j with an error naming the value',
    (text) => {
      expect(() => parseQuantity(text)).toThrow(QuantityError);
      expect(() => parseQuantity(text)).toThrow(`"${text}"`);
    },
  );

  it('names the field when asked', () => {
    expect(() => parseBytes('ten', 'spec.size')).toThrow(/^spec\.size: "ten"/);
  });
});

describe('compareQuantities', () => {
  it.each([
    ['1Gi', '1024Mi', 0],
    ['1G', '1Gi', -1],
    ['1.5Gi', '1536Mi', 0],
    ['1e9', '1G', 0],
    ['100m', '1', -1],
    ['-1', '0', -1],
    ['2Ti', '2000Gi', 1],
  ] as const)('%s vs %s → %d', (a, b, want) => {
    expect(compareQuantities(a, b)).toBe(want);
  });
});

describe('roundUp', () => {
  it.each([
    [0n, 0n],
    [1n, GiB],
    [GiB, GiB],
    [GiB + 1n, 2n * GiB],
    [1610612736n, 2n * GiB],
  ])('%s → %s', (bytes, want) => {
    expect(roundUp(bytes)).toBe(want);
  });

  it('takes another unit', () => {
    expect(roundUp(1500n, 1024n)).toBe(2048n);
  });

  it('rejects a non-positive unit', () => {
    expect(() => roundUp(1n, 0n)).toThrow(RangeError);
  });
});

describe('formatBytes', () => {
  it.each([
    [0n, '0'],
    [1000n, '1000'],
    [1024n, '1Ki'],
    [40n * GiB, '40Gi'],
    [1610612736n, '1536Mi'],
    [2n ** 60n, '1Ei'],
    [3n * 2n ** 40n, '3Ti'],
  ])('%s → %s, which parses back to the same bytes', (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
    expect(toBytes(parseQuantity(text))).toBe(bytes);
  });
});

describe('humanBytes', () => {
  it.each([
    [100n, '100 B'],
    [1536n, '1.5 KiB'],
    [1610612736n, '1.5 GiB'],
    [40n * GiB, '40 GiB'],
    [-GiB, '-1 GiB'],
  ])('%s → %s', (bytes, text) => {
    expect(humanBytes(bytes)).toBe(text);
  });
});
