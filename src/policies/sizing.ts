// The size a request asks for, from its spec and the PVC's current capacity. Pure and exact
// (bigint bytes): absolute sizes, increments by quantity or percentage, rounded up.
import { GiB, QuantityError, parseBytes, roundUp } from '../k8s/quantity.ts';

export type SizeResult = { ok: true; bytes: bigint } | { ok: false; message: string };

const percent = /^(\d+(?:\.\d*)?|\.\d+)%$/;

export interface SizeSpec {
  size?: string;
  increment?: string;
  roundUpTo?: string;
}

export function targetBytes(spec: SizeSpec, capacityBytes: bigint): SizeResult {
  try {
    if ((spec.size === undefined) === (spec.increment === undefined)) {
      return { ok: false, message: 'set exactly one of spec.size and spec.increment' };
    }
    const unit = spec.roundUpTo === undefined ? GiB : parseBytes(spec.roundUpTo, 'spec.roundUpTo');
    if (unit <= 0n) return { ok: false, message: `spec.roundUpTo must be positive, got "${spec.roundUpTo}"` };
    let bytes: bigint;
    if (spec.size !== undefined) {
      bytes = parseBytes(spec.size, 'spec.size');
      if (bytes <= 0n) return { ok: false, message: `spec.size must be positive, got "${spec.size}"` };
    } else {
      const inc = spec.increment as string;
      const pct = percent.exec(inc);
      if (pct) {
        const [whole = '', fraction = ''] = (pct[1] as string).split('.');
        const numerator = BigInt(`${whole}${fraction}` || '0');
        const denominator = 100n * 10n ** BigInt(fraction.length);
        if (numerator === 0n) return { ok: false, message: `spec.increment must be positive, got "${inc}"` };
        const growth = (capacityBytes * numerator + denominator - 1n) / denominator;
        bytes = capacityBytes + growth;
      } else {
        const growth = parseBytes(inc, 'spec.increment');
        if (growth <= 0n) return { ok: false, message: `spec.increment must be positive, got "${inc}"` };
        bytes = capacityBytes + growth;
      }
    }
    return { ok: true, bytes: roundUp(bytes, unit) };
  } catch (err) {
    if (err instanceof QuantityError) return { ok: false, message: err.message };
    throw err;
  }
}
