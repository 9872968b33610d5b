// The Compute Engine Persistent Disk CSI driver (pd.csi.storage.gke.io): sizes by disk type, and
// the texts of its refusals, each beside its source. Read at
// kubernetes-sigs/gcp-compute-persistent-disk-csi-driver v1.26.4 (6e7ea1c1) and again at v1.28.1
// (the module the embedded cluster builds and runs against its Compute Engine emulator): every text
// below is in both. docs/gke.md says what a user sees of them.
import { GiB } from '../../../k8s/quantity.ts';
import { hours, sizesByParameter, TiB, type DriverError, type DriverProfile, type SizeTable } from '../driver-profile.ts';

/**
 * Disk sizes by the class's `type` (the driver checks none: Compute Engine refuses a size out of
 * range). Where a minimum is not stated by Google for the type, none is given.
 */
const gceSizes: SizeTable = {
  // https://cloud.google.com/compute/docs/disks/persistent-disks: "Persistent Disk volumes can be up to 64 TiB in size."
  'pd-standard': { max: 64n * TiB },
  'pd-balanced': { max: 64n * TiB },
  'pd-ssd': { max: 64n * TiB },
  'pd-extreme': { max: 64n * TiB },
  // https://cloud.google.com/compute/docs/disks/hyperdisks: "The maximum Hyperdisk volume size is:
  // 64 TiB for Hyperdisk Balanced … 64 TiB for Hyperdisk Extreme 32 TiB for Hyperdisk Throughput".
  'hyperdisk-balanced': { max: 64n * TiB },
  // https://cloud.google.com/compute/docs/disks/hd-types/hyperdisk-extreme: "Size: between 64 GiB and 64 TiB."
  'hyperdisk-extreme': { min: 64n * GiB, max: 64n * TiB },
  // https://cloud.google.com/compute/docs/disks/hd-types/hyperdisk-throughput: "Size: 2 TiB-32 TiB."
  'hyperdisk-throughput': { min: 2n * TiB, max: 32n * TiB },
  // https://cloud.google.com/compute/docs/disks/hd-types/hyperdisk-ml: "Size: between 4 GiB and 64 TiB."
  'hyperdisk-ml': { min: 4n * GiB, max: 64n * TiB },
};

const source = 'gcp-compute-persistent-disk-csi-driver v1.28.1';

/**
 * ControllerExpandVolume wraps Compute Engine's failures in the code its CodeForError gives them
 * (pkg/common/utils.go): a failed operation by its error code (gce-compute.go codeForGCEOpError:
 * QUOTA_EXCEEDED, RATE_LIMIT_EXCEEDED, RESOURCE_OPERATION_RATE_EXCEEDED → ResourceExhausted), an
 * HTTP 429 as ResourceExhausted. The resizer retries ResourceExhausted without a condition
 * (external-resizer: not a final error), so pvx reads it where a condition shows it.
 */
const gceErrors: readonly DriverError[] = [
  {
    kind: 'refused',
    reason: 'DriverQuotaExceeded',
    pattern: /\b(?:REGION_)?QUOTA_EXCEEDED\b/,
    meaning: "the project's Compute Engine quota (disk size in the region) is reached",
    fix: 'raise the quota (gcloud compute regions describe REGION lists them) or free disk space in the project',
    source: `${source} pkg/gce-cloud-provider/compute/gce-compute.go codeForGCEOpError`,
  },
  {
    kind: 'rateLimited',
    reason: 'DriverRateLimited',
    pattern: /code = ResourceExhausted|RATE_LIMIT_EXCEEDED|RESOURCE_OPERATION_RATE_EXCEEDED/,
    meaning: 'Compute Engine limits how often the disk (or the project) may be changed: a retry succeeds once the limit frees it',
    source: `${source} pkg/common/utils.go CodeForError (429 → ResourceExhausted); gce-compute.go codeForGCEOpError`,
  },
  {
    kind: 'final',
    reason: 'DriverCannotExpandMultiZone',
    pattern: /ControllerExpandVolume is not supported with the multi-zone PVC volumeHandle feature/,
    meaning: 'the driver does not grow a multi-zone volume',
    fix: 'create a volume of the size needed from a snapshot of this one',
    source: `${source} pkg/gce-pd-csi-driver/controller.go ControllerExpandVolume`,
  },
  {
    kind: 'final',
    reason: 'DriverCannotModifyDiskType',
    pattern: /modifications not supported for disk type|Cannot specify (?:IOPS|throughput) for disk type|Cannot update regional disk/,
    meaning:
      "the driver changes IOPS and throughput only of the zonal Hyperdisk types its flags name (--supports-dynamic-iops-provisioning, --supports-dynamic-throughput-provisioning); this disk's type is not one, or the class asks what the type has not",
    fix: 'use a VolumeAttributesClass only for a zonal Hyperdisk of a type the driver was started to modify, with just the keys it reads (iops, throughput)',
    source: `${source} pkg/gce-pd-csi-driver/controller.go ControllerModifyVolume; gce-compute.go UpdateDisk`,
  },
];

/** The Compute Engine Persistent Disk CSI driver, `pd.csi.storage.gke.io`. */
export const gcePersistentDisk: DriverProfile = {
  name: 'pd.csi.storage.gke.io',
  // pkg/parameters/parameters.go: `DiskType: "pd-standard", // Default`.
  ...sizesByParameter(gceSizes, ['type'], 'pd-standard'),
  // pkg/common/utils.go BytesToGbRoundUp: sizes go to Compute Engine in whole GiB, rounded up.
  granularity: GiB,
  // The Compute Engine API's Disk resource (https://cloud.google.com/compute/docs/reference/rest/v1/disks,
  // provisionedIops and provisionedThroughput): "hyperdisk allows for an update of IOPS every 4
  // hours" (and of throughput). A VolumeAttributesClass change is such an update; a resize is not
  // — unless the new size needs more IOPS or throughput than the disk has, which the driver then
  // raises in the same update (pkg/gce-cloud-provider/compute/gce-compute.go resizeZonalDisk,
  // pkg/common/utils.go GetMinIopsThroughput), and which Compute Engine refuses within the window
  // (ResourceExhausted, read as a rate limit). Only Hyperdisk has VolumeAttributesClass changes.
  modificationBudget: { count: 1, windowMs: hours(4), counts: 'performance' },
  errors: gceErrors,
  // pkg/gce-pd-csi-driver/gce-pd-driver.go advertises MODIFY_VOLUME; parameters.go
  // ExtractModifyVolumeParameters reads `iops` and `throughput` only.
  modifiesVolumes: true,
};
