// Kubernetes resource quantities, parsed exactly (bigint, no floating point):
//
//   <quantity>        ::= <signedNumber><suffix>
//   <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
//   <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
//   <decimalSI>       ::= m | "" | k | M | G | T | P | E
//   <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>
//   <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//
// client-node's own parser is internal and rejects fractional binary values such as "1.5Gi",
// which the API server accepts, so pvx has its own.

export class QuantityError extends Error {
  override name = 'QuantityError';
}

/** value = sign × digits × 10^exp10 × 2^exp2, exactly. */
export interface Quantity {
  readonly negative: boolean;
  readonly digits: bigint;
  readonly exp10: number;
  readonly exp2: number;
  /** The text it was parsed from. */
  readonly text: string;
}

const binarySuffixes: Record<string, number> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const decimalSuffixes: Record<string, number> = { m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };

const grammar = /^([+-]?)(\d+\.?\d*|\.\d+)(.*)$/;
const exponent = /^[eE]([+-]?\d+)$/;

export function parseQuantity(text: string): Quantity {
  if (typeof text !== 'string') throw new QuantityError(`quantity must be a string, got ${typeof text}`);
  const m = grammar.exec(text);
  if (!m) throw new QuantityError(`"${text}" is not a Kubernetes quantity (expected a number with an optional suffix such as 10Gi, 500M, 1e3 or 100m)`);
  const [, sign, number = '', suffix = ''] = m;
  const [whole = '', fraction = ''] = number.split('.');
  const digits = BigInt(`${whole}${fraction}` || '0');
  let exp10 = -fraction.length;
  let exp2 = 0;
  const binary = binarySuffixes[suffix];
  const decimal = decimalSuffixes[suffix];
  const exp = exponent.exec(suffix);
  if (binary !== undefined) exp2 = binary;
  else if (decimal !== undefined) exp10 += decimal;
  else if (exp) {
    const e = Number(exp[1]);
    if (!Number.isSafeInteger(e) || Math.abs(e) > 1000) throw new QuantityError(`"${text}": exponent out of range`);
    exp10 += e;
  } else {
    throw new QuantityError(`"${text}" has an unknown suffix "${suffix}" (known: Ki Mi Gi Ti Pi Ei, m k M G T P E, or e<exponent>)`);
  }
  return { negative: sign === '-' && digits !== 0n, digits, exp10, exp2, text };
}

/** The exact value as a fraction numerator/denominator (denominator > 0). */
function fraction(q: Quantity): { num: bigint; den: bigint } {
  let num = q.digits * 2n ** BigInt(q.exp2);
  let den = 1n;
  if (q.exp10 >= 0) num *= 10n ** BigInt(q.exp10);
  else den = 10n ** BigInt(-q.exp10);
  return { num: q.negative ? -num : num, den };
}

/**
 * The quantity as a whole number of bytes, rounded up as Kubernetes does for storage
 * (Quantity.Value() rounds away from zero; "100m" bytes is 1 byte).
 */
export function toBytes(q: Quantity | string): bigint {
  const { num, den } = fraction(typeof q === 'string' ? parseQuantity(q) : q);
  const whole = num / den;
  if (num % den === 0n) return whole;
  return num > 0n ? whole + 1n : whole - 1n;
}

/** Parses text and returns bytes; the error names the offending value and field. */
export function parseBytes(text: string, field?: string): bigint {
  try {
    return toBytes(parseQuantity(text));
  } catch (err) {
    if (err instanceof QuantityError && field) throw new QuantityError(`${field}: ${err.message}`);
    throw err;
  }
}

export function compareQuantities(a: Quantity | string, b: Quantity | string): -1 | 0 | 1 {
  const fa = fraction(typeof a === 'string' ? parseQuantity(a) : a);
  const fb = fraction(typeof b === 'string' ? parseQuantity(b) : b);
  const left = fa.num * fb.den;
  const right = fb.num * fa.den;
  return left < right ? -1 : left > right ? 1 : 0;
}

export const KiB = 1024n;
export const MiB = 1024n ** 2n;
export const GiB = 1024n ** 3n;

/** Rounds bytes up to a multiple of unit (default: whole GiB, the granularity of EBS and most clouds). */
export function roundUp(bytes: bigint, unit: bigint = GiB): bigint {
  if (unit <= 0n) throw new RangeError(`rounding unit must be positive, got ${unit}`);
  const rem = bytes % unit;
  if (rem === 0n) return bytes;
  return bytes > 0n ? bytes - rem + unit : bytes - rem;
}

/**
 * Canonical quantity text for a byte count: the largest binary suffix that divides it exactly
 * (what pvx writes into PVC specs), e.g. 42949672960 → "40Gi", 1610612736 → "1536Mi", 1000 → "1000".
 */
export function formatBytes(bytes: bigint): string {
  if (bytes === 0n) return '0';
  const entries = Object.entries(binarySuffixes).sort((a, b) => b[1] - a[1]);
  for (const [suffix, power] of entries) {
    const unit = 2n ** BigInt(power);
    if (bytes % unit === 0n) return `${bytes / unit}${suffix}`;
  }
  return bytes.toString();
}

/** Human-readable size with up to two decimals, for messages: "1.5 GiB", "512 MiB", "100 B". */
export function humanBytes(bytes: bigint): string {
  const negative = bytes < 0n;
  const abs = negative ? -bytes : bytes;
  const units: [string, bigint][] = [
    ['EiB', 2n ** 60n],
    ['PiB', 2n ** 50n],
    ['TiB', 2n ** 40n],
    ['GiB', GiB],
    ['MiB', MiB],
    ['KiB', KiB],
  ];
  for (const [name, unit] of units) {
    if (abs >= unit) {
      const hundredths = (abs * 100n + unit / 2n) / unit;
      const text = (Number(hundredths) / 100).toString();
      return `${negative ? '-' : ''}${text} ${name}`;
    }
  }
  return `${bytes} B`;
}
