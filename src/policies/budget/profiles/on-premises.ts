// Drivers of clusters on their own hardware: the refusals of theirs that no retry gets past, each
// beside the driver's file at the version read. None of them changes volumes by
// VolumeAttributesClass at that version. Longhorn refuses a size its disks cannot hold in its
// admission webhook (from v1.8.0), so pvx's patch is refused there and the request says so; OpenEBS
// ZFS refuses on the node alone, in `zfs set`'s words; Portworx's refusals come from its closed
// backend: none of theirs is here.
import type { DriverError, DriverProfile } from '../driver-profile.ts';

const noSizes = { maxBytes: () => undefined, minBytes: () => undefined } as const;

const topolvmErrors: readonly DriverError[] = [
  {
    // The controller's check of the node's free capacity ("not enough space", Internal), and lvmd's
    // on the node ("no enough space left on VG: free=…, requested=…", ResourceExhausted, which the
    // resizer retries for ever without a condition).
    kind: 'final',
    reason: 'DriverNodeFull',
    pattern: /not enough space|no enough space left on VG/,
    meaning: "the volume's node has not the free space in its LVM volume group: TopoLVM volumes never leave their node",
    fix: "free space in the node's volume group (delete volumes on it, or add a disk to the group), then the resizer's next retry grows it",
    source: 'topolvm v0.41.0 internal/driver/controller.go ControllerExpandVolume; internal/lvmd/lvservice.go ResizeLV',
  },
];

const topolvm = (name: string): DriverProfile => ({ name, ...noSizes, granularity: 1n, errors: topolvmErrors, modifiesVolumes: false });

/** TopoLVM (`topolvm.io`, and its former name `topolvm.cybozu.com`, constants.go). */
export const topolvmProfiles: readonly DriverProfile[] = [topolvm('topolvm.io'), topolvm('topolvm.cybozu.com')];

/** OpenEBS LVM LocalPV, `local.csi.openebs.io`. */
export const openebsLvm: DriverProfile = {
  name: 'local.csi.openebs.io',
  ...noSizes,
  granularity: 1n,
  errors: [
    {
      kind: 'final',
      reason: 'DriverVolumeHasSnapshots',
      pattern: /unable to resize volume \S+ with \d+ active snapshots/,
      meaning: 'OpenEBS LVM does not grow a volume that has snapshots',
      fix: "delete the volume's snapshots (its VolumeSnapshots), then the resizer's next retry grows it",
      source: 'lvm-localpv v1.5.0 pkg/driver/controller.go ControllerExpandVolume',
    },
  ],
  modifiesVolumes: false,
};

/** Ceph CSI's CephFS driver, `cephfs.csi.ceph.com` (the resizer takes its InvalidArgument as infeasible; this says why). */
export const cephfs: DriverProfile = {
  name: 'cephfs.csi.ceph.com',
  ...noSizes,
  granularity: 1n,
  errors: [
    {
      kind: 'final',
      reason: 'DriverSnapshotBackedVolume',
      pattern: /cannot expand snapshot-backed volume/,
      meaning: 'the volume is a read-only view of a snapshot (backingSnapshot), which never grows',
      fix: 'make a full volume from the snapshot (a class without backingSnapshot: "true") and grow that',
      source: 'ceph-csi v3.12.2 internal/cephfs/controllerserver.go ControllerExpandVolume',
    },
  ],
  modifiesVolumes: false,
};

/** NetApp Trident, `csi.trident.netapp.io`. */
export const trident: DriverProfile = {
  name: 'csi.trident.netapp.io',
  ...noSizes,
  granularity: 1n,
  errors: [
    {
      // UnsupportedCapacityRangeError, meant as OutOfRange, reaches the resizer as Unknown (the
      // orchestrator rebuilds the error from its text), so the resizer retries it for ever.
      kind: 'final',
      reason: 'DriverSizeLimit',
      pattern: /> the (?:pool )?size limit|would exceed the pool size limit/,
      meaning: "the size is above the limit of the volume's Trident backend (limitVolumeSize, or limitVolumePoolSize)",
      fix: "ask for a size within the backend's limit, or raise the limit in the backend's configuration",
      source: 'trident v26.06.0 storage_drivers/common.go CheckVolumeSizeLimits; core/orchestrator_core.go ResizeVolume',
    },
  ],
  modifiesVolumes: false,
};

/** Ceph CSI's RBD driver, `rbd.csi.ceph.com`: no refusal of its own text is known; listed for what it cannot do. */
export const cephRbd: DriverProfile = { name: 'rbd.csi.ceph.com', ...noSizes, granularity: 1n, errors: [], modifiesVolumes: false };

/** Longhorn, `driver.longhorn.io`: its webhook refuses what its disks cannot hold, before any resize. Sizes in whole bytes. */
export const longhorn: DriverProfile = { name: 'driver.longhorn.io', ...noSizes, granularity: 1n, errors: [], modifiesVolumes: false };

export const onPremisesProfiles: readonly DriverProfile[] = [...topolvmProfiles, openebsLvm, cephfs, cephRbd, trident, longhorn];
