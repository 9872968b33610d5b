// The driver profiles beyond EBS (profiles/), each entry held to the fact its source states: sizes
// at the boundaries the vendor gives, and each refusal recognised in the words the driver's code
// writes, as the external-resizer puts them in the claim's ControllerResizeError condition.
import { describe, expect, it } from 'vitest';
import { GiB } from '../../k8s/quantity.ts';
import { MiB, TiB } from './driver-profile.ts';
import { defaultDriverProfiles, driverError, profiledDrivers } from './drivers.ts';

/**
 * A ControllerResizeError condition's message, as the resizer writes it (external-resizer v2.3.0
 * resize_status.go: "failed to expand pvc with %v"), of the driver's gRPC status. The driver's name
 * is not in it: kept here only to say whose words a row quotes.
 */
const condition = (_driver: string, code: string, text: string) => `failed to expand pvc with rpc error: code = ${code} desc = ${text}`;

describe('the GCE Persistent Disk profile (pd.csi.storage.gke.io)', () => {
  const gce = defaultDriverProfiles('pd.csi.storage.gke.io');

  it('counts performance changes, one per volume in 4 hours (the Disk resource: "hyperdisk allows for an update of IOPS every 4 hours")', () => {
    expect(gce.modificationBudget).toEqual({ count: 1, windowMs: 4 * 3_600_000, counts: 'performance' });
  });

  it.each([
    // persistent-disks: "Persistent Disk volumes can be up to 64 TiB in size."
    ['pd-standard', undefined, 64n * TiB],
    ['pd-balanced', undefined, 64n * TiB],
    ['pd-ssd', undefined, 64n * TiB],
    ['pd-extreme', undefined, 64n * TiB],
    // hyperdisks: 64 TiB Balanced and Extreme, 32 TiB Throughput; the type pages' minimums.
    ['hyperdisk-balanced', undefined, 64n * TiB],
    ['hyperdisk-extreme', 64n * GiB, 64n * TiB],
    ['hyperdisk-throughput', 2n * TiB, 32n * TiB],
    ['hyperdisk-ml', 4n * GiB, 64n * TiB],
  ])('%s: from %s to %s', (type, min, max) => {
    expect(gce.minBytes({ type })).toBe(min);
    expect(gce.maxBytes({ type })).toBe(max);
  });

  it('makes pd-standard when the class names no type (parameters.go), in whole GiB (BytesToGbRoundUp), and knows no size of a type it does not know', () => {
    expect(gce.maxBytes({})).toBe(64n * TiB);
    expect(gce.granularity).toBe(GiB);
    expect(gce.maxBytes({ type: 'pd-future' })).toBeUndefined();
  });

  it.each([
    [
      condition(
        'pd.csi.storage.gke.io',
        'ResourceExhausted',
        'ControllerExpandVolume failed to resize disk: operation operation-1733-resize failed (RATE_LIMIT_EXCEEDED): Operation rate exceeded for resource projects/p/zones/us-central1-a/disks/pvc-0c5f.',
      ),
      'rateLimited',
      'DriverRateLimited',
    ],
    [
      condition(
        'pd.csi.storage.gke.io',
        'ResourceExhausted',
        "ControllerExpandVolume failed to resize disk: operation operation-1733-resize failed (QUOTA_EXCEEDED): Quota 'SSD_TOTAL_GB' exceeded. Limit: 500.0 in region us-central1.",
      ),
      'refused',
      'DriverQuotaExceeded',
    ],
    [
      condition(
        'pd.csi.storage.gke.io',
        'InvalidArgument',
        'ControllerExpandVolume is not supported with the multi-zone PVC volumeHandle feature. Please re-create the volume projects/p/zones/multi-zone/disks/d from source if you want a larger size',
      ),
      'final',
      'DriverCannotExpandMultiZone',
    ],
    [
      'rpc error: code = InvalidArgument desc = Failed to modify volume: modifications not supported for disk type pd-balanced',
      'final',
      'DriverCannotModifyDiskType',
    ],
    ['rpc error: code = InvalidArgument desc = Cannot specify throughput for disk type hyperdisk-extreme', 'final', 'DriverCannotModifyDiskType'],
  ])('%s → %s (%s)', (message, kind, reason) => {
    expect(driverError(gce, message)).toMatchObject({ kind, reason });
  });
});

describe('the Azure Disk profile (disk.csi.azure.com)', () => {
  const azure = defaultDriverProfiles('disk.csi.azure.com');

  it.each([
    // disks-types, "Max disk size": 32,767 GiB but for Premium SSD v2 and Ultra Disk, 65,536 GiB.
    ['Standard_LRS', undefined, 32_767n * GiB],
    ['StandardSSD_LRS', undefined, 32_767n * GiB],
    ['Premium_LRS', undefined, 32_767n * GiB],
    // disks-redundancy: ZRS disks "have the same scale targets" as LRS.
    ['Premium_ZRS', undefined, 32_767n * GiB],
    ['StandardSSD_ZRS', undefined, 32_767n * GiB],
    ['PremiumV2_LRS', 1n * GiB, 64n * TiB],
    ['UltraSSD_LRS', 4n * GiB, 64n * TiB],
  ])('%s: from %s to %s', (skuName, min, max) => {
    expect(azure.minBytes({ skuName })).toBe(min);
    expect(azure.maxBytes({ skuName })).toBe(max);
  });

  it('makes StandardSSD_LRS when the class names no SKU, reads the storageAccountType alias and any case, in whole GiB', () => {
    expect(azure.maxBytes({})).toBe(32_767n * GiB);
    expect(azure.maxBytes({ storageAccountType: 'ultrassd_lrs' })).toBe(64n * TiB);
    expect(azure.maxBytes({ skuname: 'PremiumV2_LRS' })).toBe(64n * TiB);
    expect(azure.granularity).toBe(GiB);
  });

  it('counts performance changes, four per volume in 24 hours (disks-types: Premium SSD v2 and Ultra Disk)', () => {
    expect(azure.modificationBudget).toEqual({ count: 4, windowMs: 24 * 3_600_000, counts: 'performance' });
  });

  const resize = (inner: string) =>
    condition(
      'disk.csi.azure.com',
      'Internal',
      `failed to resize disk(/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/disks/pvc-0c5f) with error(${inner})`,
    );

  it.each([
    [
      resize(
        'azureDisk - disk resize is only supported on Unattached disk, current disk state: Attached, already attached to /subscriptions/s/virtualMachines/node-0',
      ),
      'offlineOnly',
      'DriverNeedsDetachedDisk',
    ],
    [
      resize(
        'Retriable: false, RetryAfter: 0s, HTTPStatusCode: 409, RawError: {"error":{"code":"InvalidResizeForLargeDisks","message":"A disk of 4 TiB or less cannot grow past 4 TiB while attached."}}',
      ),
      'offlineOnly',
      'DriverNeedsDetachedDisk',
    ],
    [resize('{"error":{"code":"LiveResizeSharedDiskNotAllowed"}}'), 'offlineOnly', 'DriverNeedsDetachedDisk'],
    [resize('{"error":{"code":"OperationNotAllowed","internalErrorCode":"ChangeDiskSizeWhileAttachedNotAllowed"}}'), 'offlineOnly', 'DriverNeedsDetachedDisk'],
    [resize('{"error":{"code":"ChangeDiskSizeWhileActiveSasNotAllowed"}}'), 'final', 'DriverDiskExported'],
    [resize('{"error":{"code":"InvalidResizeWithName"}}'), 'final', 'DriverSizeOutOfRange'],
  ])('%s → %s (%s)', (message, kind, reason) => {
    expect(driverError(azure, message)).toMatchObject({ kind, reason });
  });
});

describe('the vSphere profile (csi.vsphere.vmware.com)', () => {
  const vsphere = defaultDriverProfiles('csi.vsphere.vmware.com');

  it('sizes in MiB (RoundUpSize … MbInBytes), with no largest volume known, and changes no volume by class', () => {
    expect(vsphere.granularity).toBe(MiB);
    expect(vsphere.maxBytes({})).toBeUndefined();
    expect(vsphere.modifiesVolumes).toBe(false);
  });

  it.each([
    [
      condition(
        'csi.vsphere.vmware.com',
        'FailedPrecondition',
        'failed to expand volume: "3f1d". Volume is attached to node. Online volume expansion is not supported',
      ),
      'offlineOnly',
      'DriverNeedsDetachedDisk',
    ],
    [
      condition(
        'csi.vsphere.vmware.com',
        'FailedPrecondition',
        'volume: 3f1d with existing snapshots [snap-1 snap-2] cannot be expanded. Please delete snapshots before expanding the volume',
      ),
      'final',
      'DriverVolumeHasSnapshots',
    ],
  ])('%s → %s (%s)', (message, kind, reason) => {
    expect(driverError(vsphere, message)).toMatchObject({ kind, reason });
  });
});

describe('the on-premises drivers', () => {
  it.each([
    ['topolvm.io', condition('topolvm.io', 'Internal', 'not enough space'), 'final', 'DriverNodeFull'],
    [
      'topolvm.cybozu.com',
      condition('topolvm.cybozu.com', 'ResourceExhausted', 'no enough space left on VG: free=1073741824, requested=4294967296'),
      'final',
      'DriverNodeFull',
    ],
    [
      'local.csi.openebs.io',
      condition('local.csi.openebs.io', 'Internal', 'ControllerExpandVolume: unable to resize volume pvc-0c5f with 2 active snapshots'),
      'final',
      'DriverVolumeHasSnapshots',
    ],
    ['cephfs.csi.ceph.com', condition('cephfs.csi.ceph.com', 'InvalidArgument', 'cannot expand snapshot-backed volume'), 'final', 'DriverSnapshotBackedVolume'],
    [
      'csi.trident.netapp.io',
      condition(
        'csi.trident.netapp.io',
        'Unknown',
        'unable to resize the volume: unsupported capacity range; requested size: 2199023255552 > the size limit: 1099511627776',
      ),
      'final',
      'DriverSizeLimit',
    ],
  ])('%s: %s → %s (%s)', (driver, message, kind, reason) => {
    expect(driverError(defaultDriverProfiles(driver), message)).toMatchObject({ kind, reason });
  });

  it('knows none of them to change volumes by VolumeAttributesClass', () => {
    for (const d of ['topolvm.io', 'local.csi.openebs.io', 'cephfs.csi.ceph.com', 'rbd.csi.ceph.com', 'csi.trident.netapp.io', 'driver.longhorn.io'])
      expect(defaultDriverProfiles(d).modifiesVolumes).toBe(false);
  });
});

describe('every profile', () => {
  const resizerInUse = 'Unable to expand db/data-0 because CSI driver hostpath.pvx.dev only supports offline expansion and volume is currently in-use';

  it("recognises the resizer's own word that the driver grows volumes only offline, for a driver pvx has no profile of too", () => {
    for (const d of ['hostpath.pvx.dev', 'ebs.csi.aws.com', 'disk.csi.azure.com'])
      expect(driverError(defaultDriverProfiles(d), resizerInUse)).toMatchObject({ kind: 'offlineOnly', reason: 'DriverNeedsOfflineVolume' });
  });

  it('takes any FailedPrecondition of ControllerExpandVolume as the resizer does (grows only offline), after the words a profile knows better', () => {
    const inUse = condition('hostpath.pvx.dev', 'FailedPrecondition', 'volume pvx-1 is in use: this class grows volumes only while unpublished');
    expect(driverError(defaultDriverProfiles('hostpath.pvx.dev'), inUse)).toMatchObject({ kind: 'offlineOnly', reason: 'DriverNeedsOfflineVolume' });
    // The kubelet's refusal on the node is not the controller's: the request's node stage reads it.
    const onNode = 'failed to expand pvc with Expander.NodeExpand failed to expand the volume : rpc error: code = FailedPrecondition desc = volume in use';
    expect(driverError(defaultDriverProfiles('hostpath.pvx.dev'), onNode)).toBeUndefined();
    // vSphere's FailedPrecondition for a volume with snapshots is its own, and final.
    const snapshots = condition(
      'csi.vsphere.vmware.com',
      'FailedPrecondition',
      'volume: 3f1d with existing snapshots [s] cannot be expanded. Please delete snapshots before expanding the volume',
    );
    expect(driverError(defaultDriverProfiles('csi.vsphere.vmware.com'), snapshots)).toMatchObject({ kind: 'final' });
  });

  const all = [
    'ebs.csi.aws.com',
    'pd.csi.storage.gke.io',
    'disk.csi.azure.com',
    'csi.vsphere.vmware.com',
    'topolvm.io',
    'local.csi.openebs.io',
    'cephfs.csi.ceph.com',
    'csi.trident.netapp.io',
  ];

  it.each(all)('%s: cites a source for each error, says the fix of each it waits on people for, and gives each reason one kind', (d) => {
    const { errors } = defaultDriverProfiles(d);
    for (const e of errors) {
      expect(e.source, e.reason).toMatch(/\S/);
      if (e.kind === 'final' || e.kind === 'offlineOnly') expect(e.fix, e.reason).toMatch(/\S/);
    }
    const kinds = new Map<string, Set<string>>();
    for (const e of errors) kinds.set(e.reason, (kinds.get(e.reason) ?? new Set()).add(e.kind));
    expect([...kinds].filter(([, k]) => k.size > 1)).toEqual([]);
  });

  it('lists in the help the drivers whose largest volume it knows', () => {
    expect(profiledDrivers).toEqual(['ebs.csi.aws.com', 'pd.csi.storage.gke.io', 'disk.csi.azure.com']);
  });
});
