// Invariants of targetBytes and validateRequest over generated claims, classes, quotas,
// guardrails and histories, with quantities in every form Kubernetes stores (n, u, m, exponents,
// fractions of binary suffixes, huge values): whatever validateRequest decides, an accepted target
// respects every cap that applies, and a refusal says why. Expected values are computed here from
// the generated numbers, not by the code under test.
import type { V1PersistentVolumeClaim, V1ResourceQuota, V1StorageClass } from '@kubernetes/client-node';
import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { GiB, maxInt64 } from '../../k8s/quantity.ts';
import { embeddedDriverProfiles } from '../budget/drivers.testing.ts';
import { targetBytes, type SizeSpec } from './sizing.ts';
import { validateRequest, type Guardrail, type ValidationInput } from './validation.ts';

const TEN = 10n;

/** Texts that Kubernetes reads as exactly `bytes` (after its rounding up to whole bytes). */
function textsFor(bytes: bigint): string[] {
  const texts = [`${bytes}`, `${bytes}000m`, `${bytes}000000u`, `${bytes}000000000n`, `${bytes}e0`, `${bytes * TEN}e-1`, `${bytes}E+0`, `+${bytes}`];
  const binary: [string, bigint][] = [
    ['Ei', 2n ** 60n],
    ['Pi', 2n ** 50n],
    ['Ti', 2n ** 40n],
    ['Gi', 2n ** 30n],
    ['Mi', 2n ** 20n],
    ['Ki', 2n ** 10n],
  ];
  for (const [suffix, unit] of binary) {
    if (bytes % unit === 0n && bytes / unit <= maxInt64 / unit) texts.push(`${bytes / unit}${suffix}`, `${bytes / unit}.0${suffix}`);
    // half a unit: "1.5Gi"
    if (bytes % (unit / 2n) === 0n && (bytes / (unit / 2n)) % 2n === 1n && bytes <= maxInt64) texts.push(`${bytes / unit}.5${suffix}`);
  }
  const decimal: [string, number][] = [
    ['E', 18],
    ['P', 15],
    ['T', 12],
    ['G', 9],
    ['M', 6],
    ['k', 3],
  ];
  for (const [suffix, e] of decimal) {
    const unit = TEN ** BigInt(e);
    if (bytes % unit === 0n) texts.push(`${bytes / unit}${suffix}`, `${bytes / unit}e${e}`);
  }
  if (bytes > 0n) {
    // a fraction of a byte more than bytes − 1 rounds up to bytes
    texts.push(`${bytes - 1n}.5`, `${bytes - 1n}.0000000001`, `${(bytes - 1n) * 10n ** 9n + 1n}n`, `${bytes - 1n}000001u`, `${bytes * 10n - 5n}e-1`);
  }
  return texts;
}

/** A byte count from the ranges that matter: mostly claim-sized, sometimes any int64, near or past the ceiling. */
const byteCount = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 4096 }).map((g) => BigInt(g) * GiB) },
  { weight: 3, arbitrary: fc.bigInt({ min: 0n, max: 64n * GiB }) },
  { weight: 1, arbitrary: fc.bigInt({ min: 0n, max: maxInt64 }) },
  { weight: 1, arbitrary: fc.bigInt({ min: maxInt64 - 4n * GiB, max: maxInt64 + 4n * GiB }) },
  { weight: 1, arbitrary: fc.bigInt({ min: 0n, max: 10n ** 24n }) },
);

/** A byte count and one of its texts. */
const sized = (bytes: fc.Arbitrary<bigint> = byteCount) => bytes.chain((b) => fc.constantFrom(...textsFor(b)).map((text) => ({ bytes: b, text })));

const positive = byteCount.filter((b) => b > 0n);

const percent = fc
  .tuple(fc.integer({ min: 0, max: 2000 }), fc.option(fc.string({ unit: fc.constantFrom(...'0123456789'), maxLength: 4 }), { nil: undefined }))
  .map(([whole, fraction]) => ({
    text: `${whole}${fraction === undefined ? '' : `.${fraction}`}%`,
    numerator: BigInt(`${whole}${fraction ?? ''}`),
    denominator: 100n * TEN ** BigInt(fraction?.length ?? 0),
  }));

const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b;
const roundUpTo = (bytes: bigint, unit: bigint) => ceilDiv(bytes, unit) * unit;

const specCase = fc.record({
  capacity: byteCount,
  roundUpTo: fc.option(sized(positive), { nil: undefined }),
  ask: fc.oneof(
    sized().map((s) => ({ kind: 'size' as const, ...s })),
    sized().map((s) => ({ kind: 'increment' as const, ...s })),
    percent.map((p) => ({ kind: 'percent' as const, ...p })),
  ),
});

describe('targetBytes', () => {
  test.prop([specCase])(
    'is the spec asked for, rounded up to roundUpTo, or refused with a message; never past 2^63−1',
    ({ capacity, roundUpTo: unitText, ask }) => {
      const spec: SizeSpec = ask.kind === 'size' ? { size: ask.text } : { increment: ask.text };
      if (unitText) spec.roundUpTo = unitText.text;
      const unit = unitText?.bytes ?? GiB;
      const asked =
        ask.kind === 'size' ? ask.bytes : ask.kind === 'increment' ? capacity + ask.bytes : capacity + ceilDiv(capacity * ask.numerator, ask.denominator);
      const growth = ask.kind === 'size' ? ask.bytes : ask.kind === 'increment' ? ask.bytes : ask.numerator;
      const want = roundUpTo(asked, unit);

      const result = targetBytes(spec, capacity);
      if (growth === 0n || want > maxInt64) {
        expect(result.ok).toBe(false);
        if (!result.ok) expect(result.message).not.toBe('');
        if (growth !== 0n) expect(result.ok ? '' : result.message).toMatch(/2\^63−1/);
        return;
      }
      expect(result).toEqual({ ok: true, bytes: want });
      expect(want % unit).toBe(0n);
    },
  );
});

const now = new Date('2026-11-29T12:00:00Z');
const HOUR = 3_600_000;
const classKey = (name: string) => `${name}.storageclass.storage.k8s.io/requests.storage`;

/** Sizes near a claim's own (the decisions happen there: whole GiB steps above it, a byte either side), and anything else. */
const near = (capacity: bigint) =>
  fc.oneof(
    fc
      .tuple(fc.integer({ min: -1, max: 6 }), fc.constantFrom(-1n, 0n, 0n, 1n))
      .map(([k, d]) => roundUpTo(capacity, GiB) + BigInt(k) * GiB + d)
      .filter((b) => b >= 0n),
    fc
      .bigInt({ min: -2n * GiB, max: 64n * GiB })
      .map((d) => capacity + d)
      .filter((b) => b >= 0n),
    fc.bigInt({ min: 0n, max: capacity + 1n }),
    byteCount,
  );

/** Mostly `usual` (19 in 20), so that most scenarios get past the early refusals. */
const mostly = <T>(usual: T, ...others: T[]) => fc.oneof({ weight: 19, arbitrary: fc.constant(usual) }, { weight: 1, arbitrary: fc.constantFrom(...others) });

export const scenario = byteCount.chain((capacity) =>
  fc.record({
    capacity: sized(fc.constant(capacity)),
    phase: mostly('Bound', 'Pending', 'Lost'),
    className: mostly('fast', 'slow', ''),
    request: fc.option(sized(fc.oneof({ weight: 3, arbitrary: fc.constant(capacity) }, { weight: 1, arbitrary: near(capacity) })), { nil: undefined }),
    allocated: fc.option(sized(near(capacity)), { nil: undefined }),
    storageClass: fc.option(
      fc.record({
        allowVolumeExpansion: fc.oneof({ weight: 8, arbitrary: fc.constant(true) }, { weight: 2, arbitrary: fc.constantFrom(false, undefined) }),
        provisioner: fc.constantFrom('ebs.csi.aws.com', 'hostpath.pvx.dev', 'other.csi.example.com'),
        type: fc.constantFrom('gp2', 'gp3', 'io2', 'standard', 'GP3', 'unknown'),
        maxVolumeSize: fc.option(sized(near(capacity)), { nil: undefined }),
      }),
      { nil: undefined, freq: 20 },
    ),
    spec: fc.oneof(
      sized(near(capacity)).map((s) => ({ size: s.text })),
      sized(fc.bigInt({ min: 0n, max: 128n * GiB })).map((s) => ({ increment: s.text })),
      sized(byteCount).map((s) => ({ increment: s.text })),
      fc.integer({ min: 0, max: 1500 }).map((p) => ({ increment: `${p}%` })),
    ),
    roundUpTo: fc.option(sized(mostly(GiB, 1n, 512n, 1000n, 2n ** 20n, 10n * GiB, 10n ** 9n, 2n ** 62n)), { nil: undefined, freq: 2 }),
    quotas: fc.array(
      fc.record({
        name: fc.constantFrom('team', 'storage'),
        keys: fc.subarray(['requests.storage', 'class'] as const, { minLength: 1 }),
        hard: sized(near(capacity)),
        used: sized(near(capacity)),
        inStatus: fc.boolean(),
      }),
      { maxLength: 2 },
    ),
    guardrails: fc.array(
      fc.record({
        policy: fc.constantFrom('platform', 'limits'),
        maxBytes: fc.option(near(capacity), { nil: undefined, freq: 2 }),
        maxStepBytes: fc.option(
          fc.oneof(
            fc.bigInt({ min: 0n, max: 256n * GiB }),
            fc.tuple(fc.integer({ min: 0, max: 8 }), fc.constantFrom(-1n, 0n, 1n)).map(([k, d]) => BigInt(k) * GiB + d),
          ),
          { nil: undefined, freq: 2 },
        ),
        allowedStorageClasses: fc.oneof(
          { weight: 4, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: fc.constantFrom<string[]>(['fast'], ['fast', 'slow'], ['slow'], []) },
        ),
      }),
      { maxLength: 2 },
    ),
    earlierActiveRequests: mostly<string[]>([], ['grow-first']),
    modificationsHoursAgo: fc.array(fc.double({ min: 0, max: 48, noNaN: true }), { maxLength: 6 }),
  }),
);

type Scenario = typeof scenario extends fc.Arbitrary<infer S> ? S : never;

export function inputOf(s: Scenario): ValidationInput {
  const className = s.className || undefined;
  const pvc: V1PersistentVolumeClaim = {
    metadata: { name: 'data', namespace: 'db', uid: 'u1' },
    spec: { storageClassName: className, resources: s.request ? { requests: { storage: s.request.text } } : {} },
    status: { phase: s.phase, capacity: { storage: s.capacity.text }, ...(s.allocated ? { allocatedResources: { storage: s.allocated.text } } : {}) },
  };
  const sc: V1StorageClass | undefined = s.storageClass && {
    metadata: { name: className ?? 'fast' },
    provisioner: s.storageClass.provisioner,
    ...(s.storageClass.allowVolumeExpansion === undefined ? {} : { allowVolumeExpansion: s.storageClass.allowVolumeExpansion }),
    parameters: { type: s.storageClass.type, ...(s.storageClass.maxVolumeSize ? { maxVolumeSize: s.storageClass.maxVolumeSize.text } : {}) },
  };
  const quotas: V1ResourceQuota[] = s.quotas.map((q) => {
    const hard = Object.fromEntries(q.keys.map((k) => [k === 'class' ? classKey(className ?? 'fast') : k, q.hard.text]));
    const used = Object.fromEntries(q.keys.map((k) => [k === 'class' ? classKey(className ?? 'fast') : k, q.used.text]));
    return { metadata: { name: q.name }, spec: { hard }, ...(q.inStatus ? { status: { hard, used } } : { status: { used } }) };
  });
  const guardrails: Guardrail[] = s.guardrails.map((g) => ({
    policy: g.policy,
    ...(g.maxBytes === undefined ? {} : { maxBytes: g.maxBytes }),
    ...(g.maxStepBytes === undefined ? {} : { maxStepBytes: g.maxStepBytes }),
    ...(g.allowedStorageClasses === undefined ? {} : { allowedStorageClasses: g.allowedStorageClasses }),
  }));
  return {
    spec: { ...s.spec, ...(s.roundUpTo ? { roundUpTo: s.roundUpTo.text } : {}) },
    pvcName: 'data',
    pvc,
    storageClass: sc,
    quotas,
    earlierActiveRequests: s.earlierActiveRequests,
    modifications: s.modificationsHoursAgo.map((h) => ({ at: new Date(now.getTime() - h * HOUR), by: 'ver/earlier' })),
    profiles: embeddedDriverProfiles,
    guardrails,
    now,
  };
}

const max = (a: bigint, b: bigint) => (a > b ? a : b);

describe('validateRequest', () => {
  // 300 runs: about one scenario in ten gets past every gate to an accept.
  test.prop([scenario], { numRuns: 300 })('accepts only a target within every cap, and refuses or waits with a reason', (s) => {
    const input = inputOf(s);
    const v = validateRequest(input);
    if (v.kind !== 'accept') {
      expect(v.reason).toMatch(/^[A-Z][A-Za-z]+$/);
      expect(v.message.length).toBeGreaterThan(0);
      if (v.kind === 'wait') expect(v.retryAfterMs).toBeGreaterThan(0);
      return;
    }
    const capacity = s.capacity.bytes;
    const target = v.targetBytes;
    if (target === undefined) throw new Error('a request for a size was accepted without a target size');
    expect(v.fromBytes).toBe(capacity);
    expect(s.phase).toBe('Bound');
    expect(s.storageClass?.allowVolumeExpansion).toBe(true);
    expect(target).toBeGreaterThan(capacity);
    expect(target).toBeLessThanOrEqual(maxInt64);
    expect(target % (s.roundUpTo?.bytes ?? GiB)).toBe(0n);
    for (const g of input.guardrails ?? []) {
      if (g.maxBytes !== undefined) expect(target).toBeLessThanOrEqual(g.maxBytes);
      if (g.maxStepBytes !== undefined) expect(target - capacity).toBeLessThanOrEqual(g.maxStepBytes);
      if (g.allowedStorageClasses) expect(g.allowedStorageClasses).toContain(s.className);
    }
    const driver = embeddedDriverProfiles(input.storageClass?.provisioner);
    const driverMax = driver.maxBytes(input.storageClass?.parameters ?? {});
    if (driverMax !== undefined) expect(target).toBeLessThanOrEqual(driverMax);
    if (driver.modificationBudget) {
      const recent = s.modificationsHoursAgo.filter((h) => h * HOUR < driver.modificationBudget!.windowMs);
      expect(recent.length).toBeLessThan(driver.modificationBudget.count);
    }
    // Not while an expansion is in flight, nor while another request is active.
    const requested = s.request?.bytes ?? capacity;
    expect(requested).toBeLessThanOrEqual(capacity);
    expect(s.earlierActiveRequests).toEqual([]);
    // ResourceQuota admission charges max(spec, allocated): the growth of that charge fits every quota.
    const allocated = s.allocated?.bytes ?? 0n;
    const growth = max(target, allocated) - max(requested, allocated);
    for (const q of s.quotas) {
      if (growth > 0n) expect(q.used.bytes + growth).toBeLessThanOrEqual(q.hard.bytes);
    }
  });

  // Each cap binds exactly at the accepted target: the same request with that cap set to the target
  // is still accepted, and with it one byte lower is not. (Where only the first check would catch a
  // cap off by one, this one does.)
  const accepted = scenario.filter((s) => validateRequest(inputOf(s)).kind === 'accept');
  test.prop([accepted])('every cap binds at the accepted target, to the byte', (s) => {
    const input = inputOf(s);
    const v = validateRequest(input);
    if (v.kind !== 'accept' || v.targetBytes === undefined) throw new Error('the filter let a refusal through');
    const { targetBytes: target, fromBytes: capacity } = v;
    const className = input.pvc?.spec?.storageClassName as string;
    const decide = (over: Partial<ValidationInput>) => validateRequest({ ...input, ...over });
    const guarded = (g: Omit<Guardrail, 'policy'>) => decide({ guardrails: [...(input.guardrails ?? []), { policy: 'edge', ...g }] });

    expect(guarded({ maxBytes: target })).toEqual(v);
    expect(guarded({ maxBytes: target - 1n })).toMatchObject({ kind: 'reject', reason: 'GuardrailMaxSize' });
    expect(guarded({ maxStepBytes: target - capacity })).toEqual(v);
    expect(guarded({ maxStepBytes: target - capacity - 1n })).toMatchObject({ kind: 'reject', reason: 'GuardrailMaxStep' });
    expect(guarded({ allowedStorageClasses: [className] })).toEqual(v);
    expect(guarded({ allowedStorageClasses: [`${className}-other`] })).toMatchObject({ kind: 'reject', reason: 'GuardrailStorageClass' });

    const withRequest = (storage: bigint) =>
      decide({ pvc: { ...input.pvc, spec: { ...input.pvc?.spec, resources: { requests: { storage: `${storage}` } } } } });
    expect(withRequest(capacity)).toEqual(v);
    expect(withRequest(capacity + 1n)).toMatchObject({ kind: 'wait', reason: 'ExpansionInFlight' });
    expect(decide({ earlierActiveRequests: ['grow-first'] })).toMatchObject({ kind: 'wait', reason: 'AnotherRequestActive' });
    expect(
      decide({ storageClass: { ...input.storageClass, provisioner: input.storageClass?.provisioner as string, allowVolumeExpansion: undefined } }),
    ).toMatchObject({ kind: 'reject', reason: 'ExpansionNotAllowed' });
    const driverMax = (maxVolumeSize: bigint) =>
      decide({ storageClass: { ...input.storageClass, provisioner: 'hostpath.pvx.dev', parameters: { maxVolumeSize: `${maxVolumeSize}` } } });
    expect(driverMax(target)).toEqual(v);
    expect(driverMax(target - 1n)).toMatchObject({ kind: 'reject', reason: 'ExceedsDriverLimit' });
    // Nothing is accepted that does not grow the claim, by even one byte.
    expect(decide({ spec: { size: `${capacity}`, roundUpTo: '1' } })).toMatchObject({ kind: 'reject', reason: capacity === 0n ? 'InvalidSize' : 'NotLarger' });
    expect(decide({ spec: { size: `${capacity + 1n}`, roundUpTo: '1' } })).not.toMatchObject({ reason: 'NotLarger' });

    // A quota with exactly the room the growth of max(spec, allocated) needs.
    const requested = s.request?.bytes ?? capacity;
    const allocated = s.allocated?.bytes ?? 0n;
    const growth = max(target, allocated) - max(requested, allocated);
    if (growth > 0n) {
      const used = 5n * GiB;
      const quota = (hard: bigint): V1ResourceQuota => ({
        metadata: { name: 'edge' },
        status: { hard: { [classKey(className)]: `${hard}` }, used: { [classKey(className)]: `${used}` } },
      });
      expect(decide({ quotas: [...input.quotas, quota(used + growth)] })).toEqual(v);
      expect(decide({ quotas: [...input.quotas, quota(used + growth - 1n)] })).toMatchObject({ kind: 'reject', reason: 'QuotaExceeded' });
    }
  });
});
