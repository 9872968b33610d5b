import { describe, expect, it } from 'vitest';
import { GiB } from '../../k8s/quantity.ts';
import { defaultDriverProfiles, driverError, driverProfiles, nextModificationAt } from './drivers.ts';

const TiB = 1024n * GiB;
const ebs = defaultDriverProfiles('ebs.csi.aws.com');

describe('the EBS profile', () => {
  it.each([
    ['gp2', 1n * GiB, 16n * TiB],
    ['gp3', 1n * GiB, 64n * TiB],
    ['io1', 4n * GiB, 16n * TiB],
    ['io2', 4n * GiB, 64n * TiB],
    ['st1', 125n * GiB, 16n * TiB],
    ['sc1', 125n * GiB, 16n * TiB],
    ['standard', 1n * GiB, 1n * TiB],
  ])('%s: %s to %s', (type, min, max) => {
    expect(ebs.minBytes({ type })).toBe(min);
    expect(ebs.maxBytes({ type })).toBe(max);
  });

  it('makes gp3 when the class names no type, reads the type in any case, and knows no size of a type it does not know', () => {
    expect(ebs.maxBytes({})).toBe(64n * TiB);
    expect(ebs.maxBytes({ Type: 'GP2' })).toBe(16n * TiB);
    expect(ebs.maxBytes({ type: 'io3' })).toBeUndefined();
  });

  it('allows 4 modifications per volume in a rolling 24 h', () => {
    expect(ebs.modificationBudget).toEqual({ count: 4, windowMs: 24 * 3_600_000 });
  });
});

/** Messages as the external-resizer puts them in ControllerResizeError, from the driver's own formats. */
const resizeError = (cause: string) =>
  `resize volume "pvc-0c5f" by resizer "ebs.csi.aws.com" failed: rpc error: code = Internal desc = Could not resize volume "vol-0abc": ${cause}`;

describe('the EBS driver errors pvx recognises', () => {
  it.each([
    [
      resizeError(
        "operation error EC2: ModifyVolume, https response error StatusCode: 400, RequestID: 5e3c, api error VolumeModificationRateExceeded: You've reached the maximum modification rate per volume limit. Wait at least 6 hours between modifications per EBS volume.",
      ),
      'rateLimited',
      'DriverRateLimited',
    ],
    [resizeError('volume "vol-0abc" in OPTIMIZING state, cannot currently modify'), 'waiting', 'DriverModificationInProgress'],
    [
      resizeError(
        'operation error EC2: ModifyVolume, https response error StatusCode: 400, RequestID: 9f1d, api error IncorrectModificationState: The volume vol-0abc is not in a state that allows modification.',
      ),
      'waiting',
      'DriverModificationInProgress',
    ],
    [resizeError('volume "vol-0abc" is still being expanded to 40 size'), 'waiting', 'DriverModificationInProgress'],
    [resizeError('volume "vol-0abc" is still being modified to iops 6000'), 'waiting', 'DriverModificationInProgress'],
    [
      resizeError(
        'invalid argument: operation error EC2: ModifyVolume, https response error StatusCode: 400, RequestID: 1a2b, api error InvalidParameterValue: Volume of 70000GiB is too large; maximum is 65536GiB.',
      ),
      'refused',
      'DriverInvalidArgument',
    ],
    [
      'rpc error: code = InvalidArgument desc = Could not modify volume (invalid argument) "vol-0abc": invalid argument: api error InvalidParameterCombination: …',
      'refused',
      'DriverInvalidArgument',
    ],
    [
      resizeError(
        'limit exceeded: operation error EC2: ModifyVolume, https response error StatusCode: 400, RequestID: 3c4d, api error VolumeModificationSizeLimitExceeded: Maximum modification size limit exceeded.',
      ),
      'refused',
      'DriverLimitExceeded',
    ],
    [
      'rpc error: code = ResourceExhausted desc = Could not modify volume (resource exhausted) "vol-0abc": limit exceeded: api error MaxIOPSLimitExceeded: …',
      'refused',
      'DriverLimitExceeded',
    ],
  ])('%s → %s (%s)', (message, kind, reason) => {
    expect(driverError(ebs, message)).toMatchObject({ kind, reason });
  });

  it.each([
    // EC2 throttling its API: transient, the SDK and the resizer retry; not a refusal of the change.
    resizeError(
      'operation error EC2: ModifyVolume, exceeded maximum number of attempts, 3, https response error StatusCode: 503, api error RequestLimitExceeded: Request limit exceeded.',
    ),
    resizeError('context deadline exceeded'),
    'rpc error: code = Internal desc = hostpath: resize of the backing file failed: no space left on device',
  ])('leaves other errors unrecognised: %s', (message) => {
    expect(driverError(ebs, message)).toBeUndefined();
  });

  it('recognises nothing for a driver it has no texts of', () => {
    expect(driverError(defaultDriverProfiles('hostpath.pvx.dev'), resizeError('VolumeModificationRateExceeded'))).toBeUndefined();
  });
});

describe('driverProfiles', () => {
  it('replaces a driver budget, or removes it, keeping the rest of the profile', () => {
    const profiles = driverProfiles({ 'ebs.csi.aws.com': { count: 2, windowMs: 600_000 } });
    expect(profiles('ebs.csi.aws.com')).toMatchObject({ name: 'ebs.csi.aws.com', modificationBudget: { count: 2, windowMs: 600_000 }, granularity: GiB });
    expect(profiles('ebs.csi.aws.com').maxBytes({ type: 'gp3' })).toBe(64n * TiB);
    expect(driverProfiles({ 'ebs.csi.aws.com': null })('ebs.csi.aws.com').modificationBudget).toBeUndefined();
    // The defaults are untouched.
    expect(defaultDriverProfiles('ebs.csi.aws.com').modificationBudget).toEqual({ count: 4, windowMs: 86_400_000 });
  });

  it('knows the largest volume of a driver it is told of: one size, or a class parameter (the test driver has none built in)', () => {
    expect(defaultDriverProfiles('hostpath.pvx.dev').maxBytes({ maxVolumeSize: '3Gi' })).toBeUndefined();
    const told = driverProfiles({}, { 'hostpath.pvx.dev': { classParameter: 'maxVolumeSize' }, 'csi.example.com': { bytes: 16n * TiB } });
    expect(told('hostpath.pvx.dev').maxBytes({ maxVolumeSize: '3Gi' })).toBe(3n * GiB);
    expect(told('hostpath.pvx.dev').maxBytes({})).toBeUndefined();
    expect(() => told('hostpath.pvx.dev').maxBytes({ maxVolumeSize: 'lots' })).toThrow(/StorageClass parameter maxVolumeSize/);
    expect(told('csi.example.com').maxBytes({})).toBe(16n * TiB);
    // Over a built-in profile, the given size replaces its own and keeps the rest.
    expect(driverProfiles({}, { 'ebs.csi.aws.com': { bytes: TiB } })('ebs.csi.aws.com')).toMatchObject({ granularity: GiB, modificationBudget: { count: 4 } });
    expect(driverProfiles({}, { 'ebs.csi.aws.com': { bytes: TiB } })('ebs.csi.aws.com').maxBytes({ type: 'gp3' })).toBe(TiB);
  });

  it('gives a budget to a driver it has no profile of, or one whose profile has none', () => {
    const profiles = driverProfiles({ 'csi.example.com': { count: 1, windowMs: 3_600_000 }, 'pd.csi.storage.gke.io': { count: 1, windowMs: 4 * 3_600_000 } });
    expect(profiles('csi.example.com')).toMatchObject({ name: 'csi.example.com', modificationBudget: { count: 1, windowMs: 3_600_000 } });
    expect(profiles('pd.csi.storage.gke.io')).toMatchObject({ modificationBudget: { count: 1, windowMs: 4 * 3_600_000 }, granularity: GiB });
    expect(profiles('other.csi.example.com').modificationBudget).toBeUndefined();
  });
});

describe('nextModificationAt', () => {
  const now = new Date('2026-11-29T12:00:00Z');
  const h = (hours: number) => new Date(now.getTime() - hours * 3_600_000);
  const budget = { count: 4, windowMs: 24 * 3_600_000 };

  it('is when the count-th newest modification in the window leaves it', () => {
    expect(nextModificationAt(budget, [h(30), h(20), h(10), h(5), h(1)], now)).toEqual(new Date('2026-11-29T16:00:00Z'));
    expect(nextModificationAt(budget, [h(1), h(20), h(5), h(10)], now)).toEqual(new Date('2026-11-29T16:00:00Z'));
  });

  it('is undefined while the window holds fewer, or without a budget', () => {
    expect(nextModificationAt(budget, [h(30), h(20), h(10), h(5)], now)).toBeUndefined();
    expect(nextModificationAt(undefined, [h(3), h(2), h(1), h(0)], now)).toBeUndefined();
  });
});
