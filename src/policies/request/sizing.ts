// The size a request asks for, from its spec and the PVC's current capacity. Pure and exact
// (bigint bytes): absolute sizes, increments by quantity or percentage, rounded up.
import { GiB, QuantityError, formatBytes, humanBytes, maxInt64, parseBytes, roundUp } from '../../k8s/quantity.ts';

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
    const target = roundUp(bytes, unit);
    // Kubernetes keeps a claim's size in an int64 of bytes: a patch past it would be capped or
    // refused by the API server, so it is never made.
    if (target > maxInt64) {
      return {
        ok: false,
        message: `the target ${formatBytes(target)} bytes (${humanBytes(target)}) is above 2^63−1 bytes (${maxInt64}), the largest size Kubernetes stores for a claim`,
      };
    }
    return { ok: true, bytes: target };
  } catch (err) {
    if (err instanceof QuantityError) return { ok: false, message: err.message };
    throw err;
  }
}
