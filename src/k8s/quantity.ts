// Kubernetes resource quantities, read exactly as the API server reads them (Kubernetes'
// resource.ParseQuantity), in bigint with no floating point:
//
//   <quantity>        ::= <signedNumber><suffix>
//   <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
//   <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
//   <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
//   <decimalExponent> ::= "e" <signedInteger> | "E" <signedInteger>
//   <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//
// What Kubernetes keeps of a quantity, pvx keeps too: nothing finer than 10^-9 (a finer non-zero
// value rounds away from zero to the next nano: "0.1n" is 1n), and the suffix's family, which decides
// the canonical text the API server writes back ("1.0001Gi" comes back as "1073849198182400u").
// Where ParseQuantity silently reads another value than the one written, pvx refuses instead, with a
// QuantityError that says why: a binary quantity above 2^63−1 (Kubernetes caps it there), a suffix or
// sign with no digits ("Gi", "+", "." read as 0) — the API server writes neither back, it writes the
// value it read — and an exponent outside 32 bits (Kubernetes wraps it: it keeps "1e4294967296" as
// written and reads it as 1). pvx also refuses magnitudes of 10^1000 and more, which Kubernetes reads
// but no storage comes near, so that no computation on a quantity is costly.
//
// client-node's own parser is internal and rejects fractional binary values such as "1.5Gi",
// which the API server accepts, so pvx has its own.

export class QuantityError extends Error {
  override name = 'QuantityError';
}

/** Which suffix family a quantity was written in; it decides its canonical text, as in Kubernetes. */
export type QuantityFormat = 'BinarySI' | 'DecimalSI' | 'DecimalExponent';

export interface Quantity {
  /** The value in units of 10^-9, exactly: Kubernetes keeps no finer precision. */
  readonly nanos: bigint;
  readonly format: QuantityFormat;
  /** The text it was parsed from. */
  readonly text: string;
}

/** 2^63−1: Kubernetes stores no binary-suffixed quantity, and no claim size, above it. */
export const maxInt64 = 2n ** 63n - 1n;

const NANOS_PER_UNIT = 10n ** 9n;
/** pvx reads magnitudes below 10^this. */
const MAX_DECIMAL_EXPONENT = 1000;
/** The nanos of the smallest magnitude pvx refuses (computed once: 10^1009 is a 3,353-bit number, and every claim's sizes are read on each policy pass). */
const NANOS_LIMIT = 10n ** BigInt(MAX_DECIMAL_EXPONENT + 9);
/** 10^0 … 10^40 as bigints: the shifts of the quantities pvx reads day to day, without raising 10 each time. */
const powersOfTen = Array.from({ length: 41 }, (_, i) => 10n ** BigInt(i));
const tenTo = (n: number): bigint => powersOfTen[n] ?? 10n ** BigInt(n);

// Maps, not object literals: a suffix such as "constructor" must not find Object.prototype's members.
const binarySuffixes = new Map(Object.entries({ Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 }));
const decimalSuffixes = new Map(Object.entries({ n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 }));
const knownSuffixes = [...binarySuffixes.keys(), ...[...decimalSuffixes.keys()].filter(Boolean)];

// A number with at least one digit, then the suffix as written (checked below, for a clearer error).
const grammar = /^([+-]?)(?:(\d+)(?:\.(\d*))?|\.(\d+))(.*)$/s;
const exponent = /^[eE]([+-]?\d+)$/;

/**
 * Quantities read before, by text: a policy pass reads every claim's sizes, and a cluster's claims
 * carry a few dozen distinct texts ("10Gi", "500Gi"). Bounded (emptied when full), and frozen: a
 * cached quantity is shared by every caller.
 */
const parsed = new Map<string, Quantity>();
const parsedLimit = 4096;

export function parseQuantity(text: string): Quantity {
  const known = parsed.get(text);
  if (known) return known;
  const q = Object.freeze(readQuantity(text));
  if (parsed.size >= parsedLimit) parsed.clear();
  parsed.set(text, q);
  return q;
}

function readQuantity(text: string): Quantity {
  if (typeof text !== 'string') throw new QuantityError(`quantity must be a string, got ${typeof text}`);
  const m = /\s/.test(text) ? null : grammar.exec(text);
  if (!m) throw new QuantityError(notAQuantity(text));
  const [, sign, whole = '', fractionA, fractionB, suffix = ''] = m;
  const fraction = fractionA ?? fractionB ?? '';
  let exp10 = -fraction.length;
  let exp2 = 0;
  let format: QuantityFormat;
  const binary = binarySuffixes.get(suffix);
  const decimal = decimalSuffixes.get(suffix);
  const exp = exponent.exec(suffix);
  if (binary !== undefined) {
    exp2 = binary;
    format = 'BinarySI';
  } else if (decimal !== undefined) {
    exp10 += decimal;
    format = 'DecimalSI';
  } else if (exp) {
    const e = BigInt(exp[1] as string);
    if (e < -(2n ** 31n) || e >= 2n ** 31n) {
      throw new QuantityError(`"${text}": exponent ${e} is outside -2147483648…2147483647, the range Kubernetes reads (it would wrap it to another value)`);
    }
    exp10 += Number(e);
    format = 'DecimalExponent';
  } else {
    throw new QuantityError(unknownSuffix(text, suffix));
  }
  const nanos = toNanos(text, sign === '-', `${whole}${fraction}`.replace(/^0+/, ''), exp10, exp2);
  if (format === 'BinarySI') {
    const magnitude = nanos < 0n ? -nanos : nanos;
    if (magnitude > maxInt64 * NANOS_PER_UNIT) {
      throw new QuantityError(
        `"${text}" is beyond 2^63−1 (${maxInt64}) in magnitude; Kubernetes silently stores a binary-suffixed quantity that large as ±${maxInt64}, so pvx refuses it rather than read another value than the one written`,
      );
    }
    // Kubernetes writes a binary quantity between -1 and 1 in decimal: it has no binary form.
    if (magnitude < NANOS_PER_UNIT && magnitude > 0n) format = 'DecimalSI';
  }
  return { nanos, format, text };
}

/** digits × 10^exp10 × 2^exp2 in nanos, rounded away from zero as Kubernetes rounds to its 10^-9 floor. */
function toNanos(text: string, negative: boolean, digits: string, exp10: number, exp2: number): bigint {
  if (digits === '') return 0n;
  // Refused by the leading digit's decimal place before 10^exp10 is computed; what a binary
  // suffix adds (up to 2^60) is caught on the result below.
  const magnitudeExponent = digits.length - 1 + exp10;
  if (magnitudeExponent >= MAX_DECIMAL_EXPONENT) throw new QuantityError(tooLarge(text));
  const scaled = exp2 === 0 ? BigInt(digits) : BigInt(digits) << BigInt(exp2);
  const shift = exp10 + 9;
  let nanos: bigint;
  if (shift >= 0) {
    nanos = scaled * tenTo(shift);
  } else if (-shift > digits.length + 19) {
    nanos = 1n; // far below a nano without computing 10^-shift: rounds up to one
  } else {
    const divisor = tenTo(-shift);
    nanos = scaled / divisor + (scaled % divisor === 0n ? 0n : 1n);
  }
  if (nanos >= NANOS_LIMIT) throw new QuantityError(tooLarge(text));
  return negative ? -nanos : nanos;
}

function notAQuantity(text: string): string {
  if (/\s/.test(text)) return `"${text}" contains whitespace; a Kubernetes quantity has none (write 10Gi, not "10 Gi")`;
  const suffix = text.replace(/^[+-]?\.?/, '');
  if (text !== '' && (suffix === '' || isSuffix(suffix))) {
    return `"${text}" has no digits (Kubernetes reads a quantity without digits as 0; pvx refuses it as a likely mistake)`;
  }
  return `"${text}" is not a Kubernetes quantity (expected a number with an optional suffix such as 10Gi, 500M, 1e3 or 100m)`;
}

const isSuffix = (suffix: string) => binarySuffixes.has(suffix) || decimalSuffixes.has(suffix) || exponent.test(suffix);

function unknownSuffix(text: string, suffix: string): string {
  const known = `(known: Ki Mi Gi Ti Pi Ei, n u m k M G T P E, or e<exponent>)`;
  if (/^[eE][+-]?$/.test(suffix)) return `"${text}" has an exponent "${suffix}" without digits ${known}`;
  const sameLetters = knownSuffixes.filter((s) => s.toLowerCase() === suffix.toLowerCase());
  const hint = sameLetters.length > 0 ? `; suffixes are case-sensitive: did you mean ${sameLetters.map((s) => `"${s}"`).join(' or ')}?` : '';
  return `"${text}" has an unknown suffix "${suffix}" ${known}${hint}`;
}

function tooLarge(text: string): string {
  return `"${text}" is 10^${MAX_DECIMAL_EXPONENT} or more in magnitude, beyond any size pvx reads`;
}

const read = (q: Quantity | string): Quantity => (typeof q === 'string' ? parseQuantity(q) : q);

/**
 * The quantity as a whole number of bytes, rounded up as Kubernetes does for storage
 * (Quantity.Value() rounds away from zero; "100m" bytes is 1 byte).
 */
export function toBytes(q: Quantity | string): bigint {
  const { nanos } = read(q);
  const whole = nanos / NANOS_PER_UNIT;
  if (nanos % NANOS_PER_UNIT === 0n) return whole;
  return nanos > 0n ? whole + 1n : whole - 1n;
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

/** Bytes of a quantity that may be absent or unreadable (undefined then): for readings that must not stop on one bad object. */
export function readBytes(text: string | undefined): bigint | undefined {
  if (text === undefined) return undefined;
  try {
    return parseBytes(text);
  } catch (err) {
    if (err instanceof QuantityError) return undefined;
    throw err;
  }
}

export function compareQuantities(a: Quantity | string, b: Quantity | string): -1 | 0 | 1 {
  const left = read(a).nanos;
  const right = read(b).nanos;
  return left < right ? -1 : left > right ? 1 : 0;
}

const decimalSuffixByExponent = new Map([...decimalSuffixes].map(([suffix, e]) => [e, suffix]));
const binarySuffixByPower = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

/**
 * The canonical text of a quantity, as Kubernetes' Quantity.String() writes it (CanonicalizeBytes):
 * no fractional digits, the largest suffix of the quantity's own family that loses nothing,
 * decimal suffixes only at exponents that are multiples of 3. A binary quantity that is not a
 * whole number, or is below 1024 in magnitude, is written in decimal ("1.5Ki" → "1536",
 * "1.0001Gi" → "1073849198182400u"). Two differences from the API server: Kubernetes keeps the
 * text as written when it already has the canonical digits ("+1k", "0010Ki", "1.G" come back
 * unchanged; they read the same), and where the decimal suffixes end, at E, pvx writes an exponent
 * ("1000E" → "1e21") where Kubernetes drops the excess and changes the value ("1").
 */
export function canonicalQuantity(q: Quantity | string): string {
  const { nanos, format } = read(q);
  if (nanos === 0n) return '0';
  const negative = nanos < 0n;
  const magnitude = negative ? -nanos : nanos;
  const sign = negative ? '-' : '';
  if (format === 'BinarySI' && magnitude >= 1024n * NANOS_PER_UNIT && magnitude % NANOS_PER_UNIT === 0n) {
    let mantissa = magnitude / NANOS_PER_UNIT;
    let power = 0;
    while (mantissa % 1024n === 0n && power < binarySuffixByPower.length - 1) {
      mantissa /= 1024n;
      power++;
    }
    return `${sign}${mantissa}${binarySuffixByPower[power]}`;
  }
  let mantissa = magnitude;
  let e = -9;
  while (mantissa % 10n === 0n) {
    mantissa /= 10n;
    e++;
  }
  while (e % 3 !== 0) {
    mantissa *= 10n;
    e--;
  }
  const suffix = format === 'DecimalExponent' ? (e === 0 ? '' : `e${e}`) : (decimalSuffixByExponent.get(e) ?? `e${e}`);
  return `${sign}${mantissa}${suffix}`;
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
 * Quantity text for a byte count (what pvx writes into PVC specs): the largest binary suffix that
 * divides it exactly, e.g. 42949672960 → "40Gi", 1610612736 → "1536Mi", 1000 → "1000". Above
 * 2^63−1 no binary suffix: Kubernetes would cap such a binary quantity, so the digits are written.
 */
export function formatBytes(bytes: bigint): string {
  if (bytes === 0n || bytes > maxInt64 || bytes < -maxInt64) return bytes.toString();
  const entries = [...binarySuffixes].sort((a, b) => b[1] - a[1]);
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
