// Properties of the quantity parser over generated text: every quantity the grammar allows is read
// to the value an exact computation from its parts gives; near misses are refused; canonical text,
// formatBytes and compareQuantities agree with the values. The expected values are computed here
// from the generated parts (bigint rationals), never by calling the code under test.
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { QuantityError, canonicalQuantity, compareQuantities, formatBytes, maxInt64, parseBytes, parseQuantity, toBytes } from './quantity.ts';

const NANO = 10n ** 9n;
const binarySuffixes = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 } as const;
const decimalSuffixes = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 } as const;
type BinarySuffix = keyof typeof binarySuffixes;
type DecimalSuffix = keyof typeof decimalSuffixes;

type Suffix =
  | { kind: 'binary'; text: BinarySuffix }
  | { kind: 'decimal'; text: DecimalSuffix }
  | { kind: 'exponent'; letter: 'e' | 'E'; sign: '' | '+' | '-'; zeros: number; value: number };

interface Parts {
  sign: '' | '+' | '-';
  whole: string;
  /** undefined: no dot; '': a trailing dot ("5.Ki"). */
  fraction: string | undefined;
  suffix: Suffix;
}

const digits = (maxLength: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength });

const suffix: fc.Arbitrary<Suffix> = fc.oneof(
  fc.constantFrom(...(Object.keys(binarySuffixes) as BinarySuffix[])).map((text) => ({ kind: 'binary' as const, text })),
  fc.constantFrom(...(Object.keys(decimalSuffixes) as DecimalSuffix[])).map((text) => ({ kind: 'decimal' as const, text })),
  fc.record({
    kind: fc.constant('exponent' as const),
    letter: fc.constantFrom('e' as const, 'E' as const),
    sign: fc.constantFrom('' as const, '+' as const, '-' as const),
    zeros: fc.integer({ min: 0, max: 3 }),
    value: fc.oneof(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 400 })),
  }),
);

const parts: fc.Arbitrary<Parts> = fc
  .record({
    sign: fc.constantFrom('' as const, '' as const, '+' as const, '-' as const),
    whole: fc.oneof(digits(4), digits(25)),
    fraction: fc.option(fc.oneof(digits(3), digits(22)), { nil: undefined }),
    suffix,
  })
  .filter((p) => /\d/.test(p.whole + (p.fraction ?? '')));

const suffixText = (s: Suffix): string => (s.kind === 'exponent' ? `${s.letter}${s.sign}${'0'.repeat(s.zeros)}${s.value}` : s.text);
const textOf = (p: Parts): string => `${p.sign}${p.whole}${p.fraction === undefined ? '' : `.${p.fraction}`}${suffixText(p.suffix)}`;

/** The exact value written, as a fraction num/den (den > 0). */
function exactValue(p: Parts): { num: bigint; den: bigint } {
  const fraction = p.fraction ?? '';
  let num = BigInt(`${p.whole}${fraction}` || '0');
  let den = 10n ** BigInt(fraction.length);
  if (p.suffix.kind === 'binary') num *= 2n ** BigInt(binarySuffixes[p.suffix.text]);
  else {
    const e = p.suffix.kind === 'decimal' ? decimalSuffixes[p.suffix.text] : p.suffix.sign === '-' ? -p.suffix.value : p.suffix.value;
    if (e >= 0) num *= 10n ** BigInt(e);
    else den *= 10n ** BigInt(-e);
  }
  return { num: p.sign === '-' ? -num : num, den };
}

/** ceil(|num/den|) with num's sign: Kubernetes rounds away from zero. */
const awayFromZero = (num: bigint, den: bigint): bigint => {
  const magnitude = num < 0n ? -num : num;
  const q = (magnitude + den - 1n) / den;
  return num < 0n ? -q : q;
};

const abs = (n: bigint) => (n < 0n ? -n : n);
const sign = (n: bigint) => (n < 0n ? -1 : n > 0n ? 1 : 0);

describe('parseQuantity over the grammar', () => {
  test.prop([parts])('reads every quantity to its exact value, rounded to the nano as Kubernetes rounds', (p) => {
    const text = textOf(p);
    const { num, den } = exactValue(p);
    const nanos = awayFromZero(num * NANO, den);
    if (p.suffix.kind === 'binary' && abs(nanos) > maxInt64 * NANO) {
      expect(() => parseQuantity(text)).toThrow(QuantityError);
      expect(() => parseQuantity(text)).toThrow(/2\^63−1/);
      return;
    }
    const q = parseQuantity(text);
    expect(q.nanos).toBe(nanos);
    expect(q.text).toBe(text);
    // Bytes round away from zero from the exact value; rounding to the nano first changes nothing.
    expect(toBytes(q)).toBe(awayFromZero(num, den));
    const format =
      p.suffix.kind === 'binary'
        ? nanos !== 0n && abs(nanos) < NANO
          ? 'DecimalSI'
          : 'BinarySI'
        : p.suffix.kind === 'decimal'
          ? 'DecimalSI'
          : 'DecimalExponent';
    expect(q.format).toBe(format);
  });

  // Canonical text keeps the format it was read in, as Kubernetes' does: a binary quantity that is
  // no whole number of KiB ("312.5Ki") is written in plain units ("320000"), which read back is a
  // decimal quantity, written "320k" — so the text settles after at most one more round.
  test.prop([parts])('reads the canonical text back to the same value, and it settles after one more round', (p) => {
    fc.pre(p.suffix.kind !== 'binary' || abs(awayFromZero(exactValue(p).num * NANO, exactValue(p).den)) <= maxInt64 * NANO);
    const q = parseQuantity(textOf(p));
    const canonical = canonicalQuantity(q);
    expect(canonical).toMatch(/^-?(0|[1-9]\d*)([KMGTPE]i|[numkMGTPE]|e-?\d+)?$/);
    expect(parseQuantity(canonical).nanos).toBe(q.nanos);
    const settled = canonicalQuantity(canonical);
    expect(parseQuantity(settled).nanos).toBe(q.nanos);
    expect(canonicalQuantity(settled)).toBe(settled);
    if (q.format !== 'BinarySI') expect(settled).toBe(canonical);
  });

  test('a binary quantity of no whole KiB is written in plain units, as Kubernetes writes it, and that reads back as decimal', () => {
    expect(canonicalQuantity('312.5Ki')).toBe('320000');
    expect(canonicalQuantity('320000')).toBe('320k');
  });

  // Near misses: one edit away from a valid quantity, each a form ParseQuantity refuses too.
  const nearMiss = fc.oneof(
    // a suffix in the wrong case that is no other suffix ("KI", "gi", "kI"); "m"/"M" and "e"/"E" swap into valid ones
    fc.tuple(parts, fc.constantFrom<BinarySuffix>('Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'), fc.constantFrom('upper', 'lower', 'swap')).map(([p, s, how]) => {
      const wrong =
        how === 'upper' ? s.toUpperCase() : how === 'lower' ? s.toLowerCase() : `${(s[0] as string).toLowerCase()}${(s[1] as string).toUpperCase()}`;
      return `${textOf({ ...p, suffix: { kind: 'decimal', text: '' } })}${wrong}`;
    }),
    // whitespace anywhere
    fc.tuple(parts, fc.nat(), fc.constantFrom(' ', '\t', '\n')).map(([p, at, space]) => {
      const t = textOf(p);
      const i = at % (t.length + 1);
      return `${t.slice(0, i)}${space}${t.slice(i)}`;
    }),
    // a doubled sign
    fc.tuple(parts, fc.constantFrom('+', '-'), fc.constantFrom('+', '-')).map(([p, a, b]) => `${a}${b}${textOf({ ...p, sign: '' })}`),
    // an unknown suffix, or a known one with something after it
    // (Object.prototype's names too: a suffix must never be looked up on a plain object)
    fc
      .tuple(
        parts,
        fc.constantFrom(
          'i',
          'B',
          'KB',
          'Kb',
          'KiB',
          'GB',
          'kib',
          'mi',
          'K',
          'Ki3',
          'Gi5',
          'e',
          'E+',
          'e-',
          'ee3',
          'e1.5',
          'x',
          '%',
          'iB',
          'k3',
          ...Object.getOwnPropertyNames(Object.prototype),
        ),
      )
      .map(([p, s]) => `${textOf({ ...p, suffix: { kind: 'decimal', text: '' } })}${s}`),
    // a second dot
    fc.tuple(parts, digits(3)).map(([p, more]) => `${textOf({ ...p, fraction: p.fraction ?? '' })}.${more}`),
    // the suffix alone, or a sign alone: no digits
    fc.tuple(fc.constantFrom('', '+', '-', '.', '+.', '-.'), suffix).map(([s, suf]) => `${s}${suffixText(suf)}`),
  );

  test.prop([nearMiss])('refuses near misses with a QuantityError naming the text', (text) => {
    expect(() => parseQuantity(text)).toThrow(QuantityError);
    expect(() => parseQuantity(text)).toThrow(`"${text}"`);
  });

  test.prop([fc.oneof(fc.string(), fc.string({ unit: fc.constantFrom(...'0123456789.+-eEiKMGTPnumk _') }))])(
    'reads any text or refuses it with a QuantityError, nothing else',
    (text) => {
      try {
        parseQuantity(text);
      } catch (err) {
        expect(err).toBeInstanceOf(QuantityError);
      }
    },
  );
});

describe('formatBytes and compareQuantities', () => {
  const bytes = fc.oneof(
    fc.bigInt({ min: 0n, max: maxInt64 }),
    fc
      .tuple(fc.bigInt({ min: 0n, max: 2n ** 34n }), fc.integer({ min: 0, max: 6 }))
      .map(([m, p]) => m * 1024n ** BigInt(p))
      .filter((b) => b <= maxInt64),
    fc.bigInt({ min: maxInt64 - 4096n, max: maxInt64 }),
  );

  test.prop([bytes])('formatBytes → parseBytes gives the same bytes, up to the ceiling', (b) => {
    expect(parseBytes(formatBytes(b))).toBe(b);
  });

  test.prop([fc.bigInt({ min: maxInt64 + 1n, max: 10n ** 40n })])('past the ceiling too, in digits Kubernetes does not cap', (b) => {
    expect(formatBytes(b)).toBe(b.toString());
    expect(parseBytes(formatBytes(b))).toBe(b);
  });

  const quantity = parts.map(textOf).filter((t) => {
    try {
      parseQuantity(t);
      return true;
    } catch {
      return false;
    }
  });

  test.prop([quantity, quantity, quantity])('is a total order that bytes never contradict', (a, b, c) => {
    expect(compareQuantities(a, a)).toBe(0);
    expect(compareQuantities(a, b) + compareQuantities(b, a)).toBe(0);
    const sorted = [a, b, c].sort(compareQuantities);
    expect(compareQuantities(sorted[0] as string, sorted[1] as string)).toBeLessThanOrEqual(0);
    expect(compareQuantities(sorted[1] as string, sorted[2] as string)).toBeLessThanOrEqual(0);
    expect(compareQuantities(sorted[0] as string, sorted[2] as string)).toBeLessThanOrEqual(0);
    // Rounding to whole bytes keeps the order, and where both are whole bytes it is the order.
    const [ba, bb] = [toBytes(a), toBytes(b)];
    if (compareQuantities(a, b) <= 0) expect(ba <= bb).toBe(true);
    const whole = (t: string) => parseQuantity(t).nanos % NANO === 0n;
    if (whole(a) && whole(b)) expect(compareQuantities(a, b)).toBe(sign(ba - bb));
  });

  test.prop([quantity])('a quantity equals its canonical text and its formatBytes when whole and non-negative', (a) => {
    expect(compareQuantities(a, canonicalQuantity(a))).toBe(0);
    const q = parseQuantity(a);
    if (q.nanos >= 0n && q.nanos % NANO === 0n) expect(compareQuantities(a, formatBytes(toBytes(q)))).toBe(0);
  });
});
