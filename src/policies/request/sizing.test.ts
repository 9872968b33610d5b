import { describe, expect, it } from 'vitest';
import { GiB, maxInt64 } from '../../k8s/quantity.ts';
import { targetBytes, type SizeSpec } from './sizing.ts';

const EiB = 2n ** 60n;

// Kubernetes holds a claim's size in an int64 of bytes (a binary quantity is capped at 2^63−1 when
// parsed): a target past it is refused with the reason, never rounded or capped into a patch.
describe('targetBytes at the int64 ceiling', () => {
  it.each<[string, SizeSpec, bigint]>([
    ['size 9Ei, which Kubernetes would cap', { size: '9Ei' }, GiB],
    ['size 10E, a decimal quantity past the ceiling', { size: '10E' }, GiB],
    ['an increment that overflows', { increment: '2Ei' }, 7n * EiB],
    ['an increment of 1 byte on a claim already at the ceiling', { increment: '1', roundUpTo: '1' }, maxInt64],
    ['1000% of a huge capacity', { increment: '1000%' }, EiB],
    ['a roundUpTo that pushes past the ceiling', { size: '6Ei', roundUpTo: '5Ei' }, GiB],
    ['2^63−1 rounded up to whole GiB', { size: '9223372036854775807' }, GiB],
    // what the targetBytes property shrank to on the code before the ceiling (seed 1176572522)
    ['an increment of 1 rounded up to 8 GiB past the ceiling', { increment: '1', roundUpTo: '8589934592' }, 9223372032559808511n],
  ])('%s is refused', (_, spec, capacity) => {
    const r = targetBytes(spec, capacity);
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.message).toMatch(/2\^63−1/);
  });

  it.each<[string, SizeSpec, bigint, bigint]>([
    ['2^63−1 itself, to the byte', { size: '9223372036854775807', roundUpTo: '1' }, GiB, maxInt64],
    ['the largest whole GiB', { size: '8589934591Gi' }, GiB, maxInt64 + 1n - GiB],
    ['an increment up to the ceiling', { increment: '1', roundUpTo: '1' }, maxInt64 - 1n, maxInt64],
  ])('%s is accepted', (_, spec, capacity, want) => {
    expect(targetBytes(spec, capacity)).toEqual({ ok: true, bytes: want });
  });
});

describe('targetBytes', () => {
  it.each([
    [{ size: '40Gi' }, 30n * GiB, 40n * GiB],
    [{ size: '40G' }, 30n * GiB, 38n * GiB], // 40e9 bytes rounds up to 38 GiB
    [{ size: '1.5Gi' }, GiB, 2n * GiB],
    [{ size: '1.5Gi', roundUpTo: '1Mi' }, GiB, 1536n * 1024n ** 2n],
    [{ increment: '10Gi' }, 30n * GiB, 40n * GiB],
    [{ increment: '25%' }, 40n * GiB, 50n * GiB],
    [{ increment: '10%' }, 10n * GiB, 11n * GiB],
    [{ increment: '12.5%' }, 8n * GiB, 9n * GiB],
    [{ increment: '1%' }, 10n * GiB, 11n * GiB], // 10.1 GiB rounds up
    [{ increment: '100%' }, 3n * GiB, 6n * GiB],
  ])('%o of %s → %s', (spec, capacity, want) => {
    expect(targetBytes(spec, capacity)).toEqual({ ok: true, bytes: want });
  });

  it.each([
    [{}, /exactly one/],
    [{ size: '1Gi', increment: '1Gi' }, /exactly one/],
    [{ size: 'ten' }, /spec\.size: "ten"/],
    [{ size: '-1Gi' }, /must be positive/],
    [{ increment: '0%' }, /must be positive/],
    [{ increment: '0' }, /must be positive/],
    [{ increment: '5 %' }, /spec\.increment/],
    [{ size: '1Gi', roundUpTo: '0' }, /roundUpTo must be positive/],
  ])('rejects %o', (spec, message) => {
    const r = targetBytes(spec, GiB);
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.message).toMatch(message);
  });
});
