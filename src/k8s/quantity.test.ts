import { describe, expect, it } from 'vitest';
import {
  GiB,
  QuantityError,
  canonicalQuantity,
  compareQuantities,
  formatBytes,
  humanBytes,
  maxInt64,
  parseBytes,
  parseQuantity,
  roundUp,
  toBytes,
} from './quantity.ts';

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

  it.each(['', ' ', '1 Gi', '1gi', '1GiB', '1Kb', '1.5.5', '1e', '1ee3', '1e3.5', '1Ki5', '--1', 'abc', '1,5Gi', '0x10'])(
    'rejects %j with an error naming the value',
    (text) => {
      expect(() => parseQuantity(text)).toThrow(QuantityError);
      expect(() => parseQuantity(text)).toThrow(`"${text}"`);
    },
  );

  // A suffix is looked up in maps: "constructor" once found Object.prototype's member and the
  // value computation threw a TypeError instead of a QuantityError.
  it.each(['1constructor', '1__proto__', '1toString', '1hasOwnProperty', '0__defineSetter__'])(
    'refuses the unknown suffix of %j as a QuantityError',
    (text) => {
      expect(() => parseQuantity(text)).toThrow(/unknown suffix/);
    },
  );

  it('names the field when asked', () => {
    expect(() => parseBytes('ten', 'spec.size')).toThrow(/^spec\.size: "ten"/);
  });
});

// Each row is what Kubernetes' resource.ParseQuantity (k8s.io/apimachinery v0.37.2,
// pkg/api/resource/quantity.go) returns for the text: the value of AsDec() in nanos, the Format it
// remembers, and Quantity.String() — run through ParseQuantity itself, not recalled. Rules shown:
// suffixes n u m "" k M G T P E and Ki…Ei, exponents e/E with a sign (<decimalExponent>), the
// 10^-9 floor (a finer non-zero value rounds away from zero: "0.1n" → 1n, "3.001n" → 4n), a
// binary value below 1 becoming DecimalSI, and the canonical text (the largest suffix of the
// quantity's own family that loses nothing; decimal exponents in multiples of 3).
describe('parseQuantity agrees with Kubernetes', () => {
  it.each([
    ['1n', 1n, 'DecimalSI', '1n'],
    ['1.5u', 1500n, 'DecimalSI', '1500n'],
    ['0.1n', 1n, 'DecimalSI', '1n'],
    ['-0.1n', -1n, 'DecimalSI', '-1n'],
    ['3.001n', 4n, 'DecimalSI', '4n'],
    ['0.00000012345', 124n, 'DecimalSI', '124n'],
    ['1e-10', 1n, 'DecimalExponent', '1e-9'],
    ['1e-1000', 1n, 'DecimalExponent', '1e-9'],
    ['1.0001Gi', 1073849198182400000n, 'BinarySI', '1073849198182400u'],
    ['1073849198182400u', 1073849198182400000n, 'DecimalSI', '1073849198182400u'],
    ['100.035Ki', 102435840000000n, 'BinarySI', '102435840m'],
    ['0.05Gi', 53687091200000000n, 'BinarySI', '53687091200m'],
    ['0.000000000001Ki', 2n, 'DecimalSI', '2n'],
    ['0.5Ki', 512_000_000_000n, 'BinarySI', '512'],
    ['1.5Ki', 1536_000_000_000n, 'BinarySI', '1536'],
    ['1023.5Ki', 1048064_000_000_000n, 'BinarySI', '1048064'],
    ['1024Ki', 1048576_000_000_000n, 'BinarySI', '1Mi'],
    ['1023Ki', 1047552_000_000_000n, 'BinarySI', '1023Ki'],
    ['-1.5Gi', -1610612736_000_000_000n, 'BinarySI', '-1536Mi'],
    ['7.99Ei', 9211842821808707338_240_000_000n, 'BinarySI', '9211842821808707338240m'],
    ['1.5', 1_500_000_000n, 'DecimalSI', '1500m'],
    ['1e-3', 1_000_000n, 'DecimalExponent', '1e-3'],
    ['15e-1', 1_500_000_000n, 'DecimalExponent', '1500e-3'],
    ['1.5e3', 1500_000_000_000n, 'DecimalExponent', '1500'],
    ['1E+5', 100000_000_000_000n, 'DecimalExponent', '100e3'],
    ['1.3E+6', 1300000_000_000_000n, 'DecimalExponent', '1300e3'],
    ['1000P', 10n ** 27n, 'DecimalSI', '1E'],
    ['0.001E', 10n ** 24n, 'DecimalSI', '1P'],
    ['10E', 10n ** 28n, 'DecimalSI', '10E'],
    ['1200000000000000000000', 12n * 10n ** 29n, 'DecimalSI', '1200E'],
    ['9223372036854775807', maxInt64 * 10n ** 9n, 'DecimalSI', '9223372036854775807'],
    ['1e999', 10n ** 1008n, 'DecimalExponent', '1e999'],
  ] as const)('%s = %s nanos, %s, written back as %s', (text, nanos, format, canonical) => {
    const q = parseQuantity(text);
    expect(q.nanos).toBe(nanos);
    expect(q.format).toBe(format);
    expect(canonicalQuantity(q)).toBe(canonical);
  });

  // Where Quantity.String() is not the canonical text: Kubernetes keeps a text as written when its
  // digits are already canonical ("+1k", "5.Ki", "1E-3" come back unchanged) — pvx gives the
  // canonical form, which reads the same; and past the last decimal suffix Kubernetes v0.37.2
  // writes "1000E" back as "1" (it drops the exponent that has no suffix), pvx as "1e21".
  it.each([
    ['+1k', '1k'],
    ['0010Ki', '10Ki'],
    ['5.Ki', '5Ki'],
    ['1.G', '1G'],
    ['1E-3', '1e-3'],
    ['1e+3', '1e3'],
    ['1000E', '1e21'],
  ])('%s is written canonically as %s, which reads the same', (text, canonical) => {
    expect(canonicalQuantity(text)).toBe(canonical);
    expect(parseQuantity(canonical).nanos).toBe(parseQuantity(text).nanos);
  });

  // ParseQuantity refuses these too (ErrFormatWrong or ErrSuffix): whitespace anywhere, a suffix in
  // the wrong case, doubled signs, an exponent without digits or after a suffix, a second dot.
  it.each([
    ['1 Gi', /whitespace/],
    [' 1Gi', /whitespace/],
    ['1Gi ', /whitespace/],
    ['1gi', /unknown suffix "gi".*did you mean "Gi"/],
    ['1KI', /unknown suffix "KI".*did you mean "Ki"/],
    ['1i', /unknown suffix "i"/],
    ['0.1mi', /unknown suffix "mi".*"Mi"/],
    ['+-1', /not a Kubernetes quantity/],
    ['1e', /exponent "e" without digits/],
    ['1e-', /exponent "e-" without digits/],
    ['1Ki3', /unknown suffix "Ki3"/],
    ['1.5.5', /unknown suffix ".5"/],
    ['1e1e1', /unknown suffix/],
    ['1e9223372036854775808', /exponent 9223372036854775808 is outside/],
  ])('refuses %j as Kubernetes does: %s', (text, message) => {
    expect(() => parseQuantity(text)).toThrow(QuantityError);
    expect(() => parseQuantity(text)).toThrow(message);
  });

  // ParseQuantity accepts these but reads another value than the one written. The API server writes
  // back the value it read ("0", "9223372036854775807"), so refusing these loses nothing it stores and
  // turns a typo in a pvx spec into a clear error; a wrapped exponent it may keep as written, and
  // pvx would rather refuse it than read it as Kubernetes does.
  it.each([
    ['Gi', /no digits.*reads a quantity without digits as 0/], // ParseQuantity: 0
    ['+', /no digits/], // 0
    ['.', /no digits/], // 0
    ['e3', /no digits/], // 0
    ['9Ei', /beyond 2\^63−1 .*9223372036854775807/], // capped: 9223372036854775807
    ['8Ei', /beyond 2\^63−1/], // 2^63, capped
    ['-9Ei', /beyond 2\^63−1/], // -9223372036854775807
    ['8192Pi', /beyond 2\^63−1/],
    ['1e4294967296', /exponent 4294967296 is outside -2147483648…2147483647/], // wraps to 1e0: 1
    ['1e2147483648', /exponent 2147483648 is outside/], // wraps to 1e-2147483648
    ['1e1000', /10\^1000 or more/], // Kubernetes reads it; no storage is that large
  ])('refuses %j, which Kubernetes reads as another value', (text, message) => {
    expect(() => parseQuantity(text)).toThrow(QuantityError);
    expect(() => parseQuantity(text)).toThrow(message);
  });

  // The cap is on the value after the 10^-9 rounding: ParseQuantity keeps the first as written
  // (…806.847078496) and stores the second, 2^63 − 0.115…, as 2^63−1.
  it('reads binary quantities up to 2^63−1 and refuses the first one past it', () => {
    expect(parseQuantity('7.999999999999999999Ei').nanos).toBe(9223372036854775806_847078496n);
    expect(canonicalQuantity('-7.999999999999999999Ei')).toBe('-9223372036854775806847078496n');
    expect(() => parseQuantity('7.9999999999999999999Ei')).toThrow(/beyond 2\^63−1/);
  });
});

describe('parseQuantity reads a text once', () => {
  it('a text read again is the same quantity, frozen (callers share it); a refused text is refused every time', () => {
    const first = parseQuantity('37Gi');
    expect(parseQuantity('37Gi')).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(toBytes(first)).toBe(37n * GiB);
    for (let i = 0; i < 2; i++) expect(() => parseQuantity('37 Gi')).toThrow(QuantityError);
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
    [8191n * 2n ** 50n, '8191Pi'],
    // Past 2^63−1 Kubernetes caps a binary quantity ("8Ei" would read as 2^63−1): digits instead.
    [2n ** 63n, '9223372036854775808'],
    [10n ** 19n, '10000000000000000000'],
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
