// What a request's spec asks of a claim, worked out for the checker from the API's own words — the
// CRD's field descriptions and Kubernetes' quantity format — and not from pvx's sizing or quantity
// code, so that a bug shared by both cannot hide: "size: absolute new size"; "increment: growth
// over the current capacity, a quantity or a percentage"; "roundUpTo: the target is rounded up to a
// multiple of this (default 1Gi)". Only the quantity forms the simulation writes are read.

const suffixes: Record<string, bigint> = {
  '': 1n,
  k: 10n ** 3n,
  M: 10n ** 6n,
  G: 10n ** 9n,
  T: 10n ** 12n,
  Ki: 2n ** 10n,
  Mi: 2n ** 20n,
  Gi: 2n ** 30n,
  Ti: 2n ** 40n,
};

/** A decimal as numerator / denominator: "12.5" → 125 / 10. */
function decimal(text: string): { num: bigint; den: bigint } {
  const [whole = '0', fraction = ''] = text.split('.');
  return { num: BigInt(`${whole}${fraction}` || '0'), den: 10n ** BigInt(fraction.length) };
}

const ceilDiv = (a: bigint, b: bigint): bigint => (a + b - 1n) / b;

/** Bytes of a quantity such as 10Gi, 1500Mi or 12.5Gi (a fraction of a byte counts as a byte). */
export function quantityBytes(q: string): bigint {
  const m = /^([0-9]+(?:\.[0-9]+)?)([kMGT]i?|)$/.exec(q.trim());
  if (!m) throw new Error(`the checker cannot read the quantity "${q}"`);
  const { num, den } = decimal(m[1] as string);
  return ceilDiv(num * (suffixes[m[2] as string] as bigint), den);
}

export interface AskedSpec {
  size?: string;
  increment?: string;
  roundUpTo?: string;
}

/** The size the spec asks for a claim of this capacity, or undefined when it asks for no size. */
export function askedBytes(spec: AskedSpec, capacity: bigint): bigint | undefined {
  let raw: bigint;
  if (spec.size !== undefined) raw = quantityBytes(spec.size);
  else if (spec.increment?.endsWith('%')) {
    const { num, den } = decimal(spec.increment.slice(0, -1));
    raw = capacity + ceilDiv(capacity * num, 100n * den);
  } else if (spec.increment !== undefined) raw = capacity + quantityBytes(spec.increment);
  else return undefined;
  const unit = spec.roundUpTo === undefined ? 2n ** 30n : quantityBytes(spec.roundUpTo);
  return ceilDiv(raw, unit) * unit;
}

/** Milliseconds of a duration the simulation writes (30s, 5m, 1h). */
export function durationMs(text: string): number {
  const m = /^([0-9]+)(s|m|h)$/.exec(text);
  if (!m) throw new Error(`the checker cannot read the duration "${text}"`);
  return Number(m[1]) * { s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 's' | 'm' | 'h'];
}

/**
 * Whether pvx can read a policy's maintenance windows: a cron schedule of five or six fields (or a
 * nickname) and a time zone the runtime knows. The simulation's unreadable windows are "every
 * night" and the zone Mars/Olympus_Mons.
 */
export function windowsReadable(windows: readonly { schedule: string; timeZone?: string }[] | undefined): boolean {
  return (windows ?? []).every((w) => {
    const fields = w.schedule.trim().split(/\s+/);
    const cron =
      /^@[a-z]+$/.test(w.schedule) ||
      ((fields.length === 5 || fields.length === 6) && fields.every((f) => /^[0-9A-Za-z*?/,#-]+$/.test(f) && /[0-9*?]/.test(f)));
    if (!cron) return false;
    if (w.timeZone === undefined) return true;
    try {
      new Intl.DateTimeFormat('en', { timeZone: w.timeZone });
      return true;
    } catch {
      return false;
    }
  });
}

/** The claims of a StatefulSet's live replicas: <template>-<statefulset>-<ordinal> for ordinals start … start + replicas − 1. */
export function liveClaimNames(template: string, statefulSet: string, replicas: number, start: number): string[] {
  return Array.from({ length: replicas }, (_, i) => `${template}-${statefulSet}-${start + i}`);
}
