import { describe, expect, it } from 'vitest';
import { Ebs, Ec2Error, type CreateVolumeRequest, type Timing } from './ebs.ts';

const timing: Timing = {
  creatingSeconds: 1,
  modifyingSeconds: 10,
  optimizingSeconds: 20,
  modificationWindowSeconds: 24 * 3600,
  modificationsPerWindow: 4,
};
const t0 = Date.parse('2026-03-01T00:00:00Z');
const seconds = (n: number) => n * 1000;

function ebsWithVolume(request: Partial<CreateVolumeRequest> = {}): { ebs: Ebs; volumeId: string } {
  const ebs = new Ebs(timing);
  const volume = ebs.createVolume({ volumeType: 'gp3', sizeGiB: 10, availabilityZone: 'us-east-1a', ...request }, t0, 'vol-0123456789abcdef0');
  return { ebs, volumeId: volume.volumeId };
}

function ec2ErrorOf(action: () => unknown): Ec2Error {
  try {
    action();
  } catch (err) {
    if (err instanceof Ec2Error) return err;
    throw err;
  }
  throw new Error('expected an Ec2Error, got success');
}

/** Modifies and lets the modification complete, returning the time it completed. */
function modifyToCompletion(ebs: Ebs, volumeId: string, sizeGiB: number, at: number): number {
  ebs.modifyVolume({ volumeId, sizeGiB }, at);
  return at + seconds(timing.modifyingSeconds + timing.optimizingSeconds);
}

describe('EBS volume sizes per type', () => {
  it.each([
    ['gp3', 20 * 1024],
    ['gp3', 65_536],
    ['gp2', 16_384],
    ['io2', 65_536],
    ['io1', 4],
    ['st1', 125],
    ['sc1', 16_384],
    ['standard', 1_024],
  ])('creates %s of %i GiB', (volumeType, sizeGiB) => {
    const iops = volumeType.startsWith('io') ? 100 : undefined;
    const volume = new Ebs(timing).createVolume({ volumeType, sizeGiB, iops, availabilityZone: 'us-east-1a' }, t0, 'vol-1');
    expect(volume.sizeGiB).toBe(sizeGiB);
  });

  it.each([
    ['gp2', 20 * 1024, 'Volume of 20480GiB is too large for volume type gp2; maximum is 16384GiB'],
    ['gp3', 65_537, 'Volume of 65537GiB is too large for volume type gp3; maximum is 65536GiB'],
    ['st1', 100, 'Volume of 100GiB is too small for volume type st1; minimum is 125GiB'],
    ['sc1', 124, 'Volume of 124GiB is too small for volume type sc1; minimum is 125GiB'],
    ['io1', 3, 'Volume of 3GiB is too small for volume type io1; minimum is 4GiB'],
    ['io1', 16_385, 'Volume of 16385GiB is too large for volume type io1; maximum is 16384GiB'],
    ['standard', 1_025, 'Volume of 1025GiB is too large for volume type standard; maximum is 1024GiB'],
    ['gp3', 1.5, 'Volume of 1.5GiB is too small for volume type gp3; minimum is 1GiB'],
  ])('refuses %s of %d GiB', (volumeType, sizeGiB, message) => {
    const iops = volumeType.startsWith('io') ? 100 : undefined;
    const err = ec2ErrorOf(() => new Ebs(timing).createVolume({ volumeType, sizeGiB, iops, availabilityZone: 'us-east-1a' }, t0, 'vol-1'));
    expect(err.code).toBe('InvalidParameterValue');
    expect(err.message).toBe(message);
  });

  it('grows gp3 past 16 TiB and refuses gp2 past it', () => {
    const gp3 = ebsWithVolume({ sizeGiB: 16_384 });
    expect(gp3.ebs.modifyVolume({ volumeId: gp3.volumeId, sizeGiB: 20_480 }, t0 + seconds(5)).target.sizeGiB).toBe(20_480);

    const gp2 = ebsWithVolume({ volumeType: 'gp2', sizeGiB: 16_384 });
    const err = ec2ErrorOf(() => gp2.ebs.modifyVolume({ volumeId: gp2.volumeId, sizeGiB: 20_480 }, t0 + seconds(5)));
    expect([err.code, err.message]).toEqual(['InvalidParameterValue', 'Volume of 20480GiB is too large for volume type gp2; maximum is 16384GiB']);
  });

  it('refuses to shrink a volume', () => {
    const { ebs, volumeId } = ebsWithVolume({ sizeGiB: 100 });
    const err = ec2ErrorOf(() => ebs.modifyVolume({ volumeId, sizeGiB: 99 }, t0 + seconds(5)));
    expect([err.code, err.message]).toEqual(['InvalidParameterValue', 'New size cannot be smaller than existing size']);
  });

  it('refuses a type change the size does not fit', () => {
    const { ebs, volumeId } = ebsWithVolume({ sizeGiB: 100 });
    const err = ec2ErrorOf(() => ebs.modifyVolume({ volumeId, volumeType: 'st1' }, t0 + seconds(5)));
    expect(err.message).toBe('Volume of 100GiB is too small for volume type st1; minimum is 125GiB');
  });
});

describe('IOPS limits as the CSI driver discovers them (DryRun CreateVolume, 4 GiB, 2147483647 IOPS)', () => {
  // The CSI driver's regular expressions (pkg/cloud/cloud.go, nonIo2ErrRegex and io2ErrRegex).
  const nonIo2 = /volume iops.*is too high.*maximum is (\d+)/i;
  const io2 = /(\d+)K IOPS/i;
  const dryRun = (volumeType: string) =>
    ec2ErrorOf(() => new Ebs(timing).createVolume({ volumeType, sizeGiB: 4, iops: 2_147_483_647, availabilityZone: 'us-east-1a', dryRun: true }, t0, 'vol-1'));

  it.each([
    ['gp3', '80000'],
    ['io1', '64000'],
  ])('%s answers its maximum in the "too high" message', (volumeType, maximum) => {
    const err = dryRun(volumeType);
    expect(err.code).toBe('InvalidParameterValue');
    expect(err.message).toBe(`Volume iops of 2147483647 is too high; maximum is ${maximum}.`);
    expect(nonIo2.exec(err.message)?.[1]).toBe(maximum);
  });

  it('io2 answers the combination message the driver reads as 256K', () => {
    const err = dryRun('io2');
    expect(err.code).toBe('InvalidParameterCombination');
    expect(err.message).toBe('io2 volumes configured with greater than 64 TiB or 256K IOPS or 1000:1 IOPS:GB ratio are not supported.');
    expect(io2.exec(err.message)?.[1]).toBe('256');
  });

  it.each(['gp2', 'standard'])('%s takes no IOPS at all', (volumeType) => {
    const err = dryRun(volumeType);
    expect(err.code).toBe('InvalidParameterCombination');
    expect(err.message).toBe(`The parameter iops is not supported for ${volumeType} volumes.`);
  });

  it('st1 answers that 4 GiB is too small, its size being checked first (the driver then caps nothing)', () => {
    expect(dryRun('st1').message).toBe('Volume of 4GiB is too small for volume type st1; minimum is 125GiB');
  });

  it('a valid DryRun answers DryRunOperation and creates nothing', () => {
    const ebs = new Ebs(timing);
    const err = ec2ErrorOf(() => ebs.createVolume({ volumeType: 'gp3', sizeGiB: 4, availabilityZone: 'us-east-1a', dryRun: true }, t0, 'vol-1'));
    expect([err.code, err.message]).toEqual(['DryRunOperation', 'Request would have succeeded, but DryRun flag is set.']);
    expect(ebs.state.volumes).toEqual([]);
  });

  it('refuses IOPS beyond 500 per GiB on gp3 above its 3,000 baseline, and throughput beyond 0.25 MiB/s per IOPS', () => {
    const ratio = ec2ErrorOf(() => new Ebs(timing).createVolume({ volumeType: 'gp3', sizeGiB: 20, iops: 15_000, availabilityZone: 'us-east-1a' }, t0, 'vol-1'));
    expect(ratio.message).toBe('Iops to volume size ratio of 750.000000 is too high; maximum is 500');
    expect(new Ebs(timing).createVolume({ volumeType: 'gp3', sizeGiB: 1, availabilityZone: 'us-east-1a' }, t0, 'vol-1').iops).toBe(3_000);
    const throughput = ec2ErrorOf(() =>
      new Ebs(timing).createVolume({ volumeType: 'gp3', sizeGiB: 100, throughput: 1_000, availabilityZone: 'us-east-1a' }, t0, 'vol-1'),
    );
    expect(throughput.message).toBe('Throughput (MiBps) to iops ratio of 0.333333 is too high; maximum is 0.250000 MiBps per iops');
  });
});

describe('creating volumes', () => {
  it('defaults to gp2, whose IOPS follow its size', () => {
    const volume = new Ebs(timing).createVolume({ sizeGiB: 200, availabilityZone: 'us-east-1b' }, t0, 'vol-1');
    expect([volume.volumeType, volume.iops, volume.throughput, volume.availabilityZoneId]).toEqual(['gp2', 600, undefined, 'use1-az2']);
  });

  it('is creating, then available', () => {
    const { ebs } = ebsWithVolume();
    const stateAt = (t: number) => ebs.describeVolumes({}, t).items[0]?.state;
    expect(stateAt(t0)).toBe('creating');
    expect(stateAt(t0 + seconds(1))).toBe('available');
  });

  it('answers a repeated ClientToken with the same volume, and a changed request with IdempotentParameterMismatch', () => {
    const ebs = new Ebs(timing);
    const request = {
      volumeType: 'gp3',
      sizeGiB: 10,
      availabilityZone: 'us-east-1a',
      clientToken: 'token-1',
      tags: [{ key: 'CSIVolumeName', value: 'pvc-1' }],
    };
    const first = ebs.createVolume(request, t0, 'vol-1');
    const again = ebs.createVolume(request, t0 + 500, 'vol-2');
    expect(again.volumeId).toBe(first.volumeId);
    expect(ebs.state.volumes).toHaveLength(1);
    expect(ec2ErrorOf(() => ebs.createVolume({ ...request, sizeGiB: 11 }, t0, 'vol-3')).code).toBe('IdempotentParameterMismatch');
  });

  it('requires a known zone', () => {
    const err = ec2ErrorOf(() => new Ebs(timing).createVolume({ sizeGiB: 1, availabilityZone: 'us-east-1z' }, t0, 'vol-1'));
    expect([err.code, err.message]).toEqual(['InvalidParameterValue', 'Invalid availability zone: [us-east-1z]']);
  });
});

describe('describing volumes', () => {
  it('finds volumes by the CSIVolumeName tag and pages through them', () => {
    const ebs = new Ebs(timing);
    for (const n of [1, 2, 3]) {
      ebs.createVolume({ sizeGiB: n, availabilityZone: 'us-east-1a', tags: [{ key: 'CSIVolumeName', value: `pvc-${n}` }] }, t0, `vol-${n}`);
    }
    const byName = ebs.describeVolumes({ filters: [{ name: 'tag:CSIVolumeName', values: ['pvc-1', 'pvc-3'] }] }, t0);
    expect(byName.items.map((v) => v.volumeId)).toEqual(['vol-1', 'vol-3']);

    const first = ebs.describeVolumes({ maxResults: 2 }, t0);
    const second = ebs.describeVolumes({ maxResults: 2, nextToken: first.nextToken }, t0);
    expect([...first.items, ...second.items].map((v) => v.volumeId)).toEqual(['vol-1', 'vol-2', 'vol-3']);
    expect(second.nextToken).toBeUndefined();
  });

  it('names every volume it does not know', () => {
    const { ebs, volumeId } = ebsWithVolume();
    const err = ec2ErrorOf(() => ebs.describeVolumes({ ids: [volumeId, 'vol-00000000000000001', 'vol-00000000000000002'] }, t0));
    expect([err.code, err.message]).toEqual(['InvalidVolume.NotFound', "The volumes 'vol-00000000000000001, vol-00000000000000002' do not exist."]);
    expect(ec2ErrorOf(() => ebs.deleteVolume('vol-00000000000000001')).message).toBe("The volume 'vol-00000000000000001' does not exist.");
  });

  it('refuses a filter it does not know', () => {
    const { ebs } = ebsWithVolume();
    expect(ec2ErrorOf(() => ebs.describeVolumes({ filters: [{ name: 'colour', values: ['red'] }] }, t0)).code).toBe('InvalidParameterValue');
  });
});

describe('a modification over time', () => {
  it('is modifying, then optimizing with the new size in use, then completed', () => {
    const { ebs, volumeId } = ebsWithVolume({ sizeGiB: 10 });
    const start = t0 + seconds(5);
    const answered = ebs.modifyVolume({ volumeId, sizeGiB: 20 }, start);
    expect(answered).toMatchObject({ modificationState: 'modifying', progress: 0, original: { sizeGiB: 10 }, target: { sizeGiB: 20 } });

    const at = (t: number) => ({
      modification: ebs.describeVolumesModifications({ ids: [volumeId] }, t).items[0],
      sizeGiB: ebs.describeVolumes({ ids: [volumeId] }, t).items[0]?.sizeGiB,
    });
    const modifying = at(start + seconds(9));
    expect([modifying.modification?.modificationState, modifying.sizeGiB]).toEqual(['modifying', 10]);

    const optimizing = at(start + seconds(10));
    expect([optimizing.modification?.modificationState, optimizing.sizeGiB]).toEqual(['optimizing', 20]);
    expect(optimizing.modification?.progress).toBe(33);
    expect(optimizing.modification?.endTime).toBeUndefined();
    expect(ebs.usableSizes(start + seconds(10)).get(volumeId)).toBe(20);

    const completed = at(start + seconds(30));
    expect(completed.modification).toMatchObject({ modificationState: 'completed', progress: 100, endTime: start + seconds(30) });
  });

  it('takes the documented defaults when the type changes: 3,000 IOPS and 125 MiB/s for gp3', () => {
    const { ebs, volumeId } = ebsWithVolume({ volumeType: 'gp2', sizeGiB: 100 });
    const modification = ebs.modifyVolume({ volumeId, volumeType: 'gp3' }, t0 + seconds(5));
    expect(modification.original).toEqual({ volumeType: 'gp2', sizeGiB: 100, iops: 300, throughput: undefined });
    expect(modification.target).toEqual({ volumeType: 'gp3', sizeGiB: 100, iops: 3_000, throughput: 125 });
  });

  it('starts a modification even when nothing changes', () => {
    const { ebs, volumeId } = ebsWithVolume({ sizeGiB: 10 });
    ebs.modifyVolume({ volumeId, sizeGiB: 10 }, t0 + seconds(5));
    expect(ebs.state.modifications).toHaveLength(1);
  });

  it.each([
    ['modifying', 0, 'MODIFYING'],
    ['optimizing', 15, 'OPTIMIZING'],
  ])('refuses another while the latest is %s', (_state, after, shown) => {
    const { ebs, volumeId } = ebsWithVolume();
    const start = t0 + seconds(5);
    ebs.modifyVolume({ volumeId, sizeGiB: 20 }, start);
    const err = ec2ErrorOf(() => ebs.modifyVolume({ volumeId, sizeGiB: 30 }, start + seconds(after)));
    expect([err.code, err.message]).toEqual(['IncorrectModificationState', `Volume ${volumeId} cannot be modified in modification state ${shown}`]);
    expect(ebs.modifyVolume({ volumeId, sizeGiB: 30 }, start + seconds(30)).modificationState).toBe('modifying');
  });

  it('refuses a volume that is still being created', () => {
    const { ebs, volumeId } = ebsWithVolume();
    expect(ec2ErrorOf(() => ebs.modifyVolume({ volumeId, sizeGiB: 20 }, t0)).code).toBe('IncorrectState');
  });

  it('answers InvalidVolumeModification.NotFound for a volume never modified', () => {
    const { ebs, volumeId } = ebsWithVolume();
    const err = ec2ErrorOf(() => ebs.describeVolumesModifications({ ids: [volumeId] }, t0));
    expect([err.code, err.message]).toEqual(['InvalidVolumeModification.NotFound', `Modification for volume '${volumeId}' does not exist.`]);
    expect(ebs.describeVolumesModifications({}, t0).items).toEqual([]);
  });
});

describe('the Elastic Volumes rate limit', () => {
  it('allows four modifications in 24 hours and refuses the fifth until the oldest leaves the window', () => {
    const { ebs, volumeId } = ebsWithVolume({ sizeGiB: 10 });
    const firstStart = t0 + seconds(5);
    let at = firstStart;
    for (const sizeGiB of [11, 12, 13, 14]) at = modifyToCompletion(ebs, volumeId, sizeGiB, at);

    const refused = ec2ErrorOf(() => ebs.modifyVolume({ volumeId, sizeGiB: 15 }, at));
    expect(refused.code).toBe('VolumeModificationRateExceeded');
    expect(refused.message).toBe(
      "You've reached the maximum modification rate per volume limit. You can modify a volume up to 4 times within a rolling 24-hour period. " +
        `You can modify volume ${volumeId} again after ${new Date(firstStart + seconds(24 * 3600)).toISOString()}.`,
    );
    expect(ec2ErrorOf(() => ebs.modifyVolume({ volumeId, sizeGiB: 15 }, firstStart + seconds(24 * 3600) - 1)).code).toBe('VolumeModificationRateExceeded');
    expect(ebs.modifyVolume({ volumeId, sizeGiB: 15 }, firstStart + seconds(24 * 3600)).target.sizeGiB).toBe(15);
  });

  it('counts refused requests not at all, and follows a changed limit', () => {
    const { ebs, volumeId } = ebsWithVolume({ sizeGiB: 10 });
    ebs.timing = { ...timing, modificationsPerWindow: 1, modificationWindowSeconds: 600 };
    const done = modifyToCompletion(ebs, volumeId, 11, t0 + seconds(5));
    expect(ec2ErrorOf(() => ebs.modifyVolume({ volumeId, sizeGiB: 9 }, t0 + seconds(6))).code).toBe('IncorrectModificationState');
    const refused = ec2ErrorOf(() => ebs.modifyVolume({ volumeId, sizeGiB: 12 }, done));
    expect(refused.message).toContain('up to 1 times within a rolling 600-second period');
    expect(ebs.modifyVolume({ volumeId, sizeGiB: 12 }, t0 + seconds(605)).modificationState).toBe('modifying');
  });
});

describe('tags', () => {
  it('adds, overwrites and deletes tags, a value given only deleting a matching one', () => {
    const { ebs, volumeId } = ebsWithVolume({ tags: [{ key: 'a', value: '1' }] });
    ebs.createTags(
      [volumeId],
      [
        { key: 'a', value: '2' },
        { key: 'b', value: '3' },
        { key: 'c', value: '4' },
      ],
    );
    ebs.deleteTags([volumeId], [{ key: 'b', value: 'not-3' }, { key: 'c' }]);
    expect(ebs.describeVolumes({ ids: [volumeId] }, t0).items[0]?.tags).toEqual([
      { key: 'a', value: '2' },
      { key: 'b', value: '3' },
    ]);
  });
});
