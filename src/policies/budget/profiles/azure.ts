// The Azure Disk CSI driver (disk.csi.azure.com): sizes by SKU, and the texts of its refusals, each
// beside its source. Read at kubernetes-sigs/azuredisk-csi-driver v1.34.5 (fb4981e3). The driver
// passes every Azure refusal of a resize on as gRPC Internal ("failed to resize disk(…) with
// error(…)", pkg/azuredisk/controllerserver.go ControllerExpandVolume), which the resizer retries
// for ever: only the text tells them apart. docs/aks.md says what a user sees of them.
import { GiB } from '../../../k8s/quantity.ts';
import { hours, sizesByParameter, TiB, type DriverError, type DriverProfile, type SizeTable } from '../driver-profile.ts';

/**
 * Largest disk by the class's `skuName` (alias `storageAccountType`). Azure enforces them, not the
 * driver. https://learn.microsoft.com/azure/virtual-machines/disks-types, "Max disk size":
 * "65,536 GiB | 65,536 GiB | 32,767 GiB | 32,767 GiB | 32,767 GiB" (Ultra, Premium SSD v2, Premium
 * SSD, Standard SSD, Standard HDD); ZRS disks "have the same scale targets" as LRS
 * (https://learn.microsoft.com/azure/virtual-machines/disks-redundancy). "Ultra Disk sizes range
 * from 4 GiB up to 64 TiB"; "Premium SSD v2 capacities range from 1 GiB to 64 TiB".
 */
const azureSizes: SizeTable = {
  Standard_LRS: { max: 32_767n * GiB },
  StandardSSD_LRS: { max: 32_767n * GiB },
  StandardSSD_ZRS: { max: 32_767n * GiB },
  Premium_LRS: { max: 32_767n * GiB },
  Premium_ZRS: { max: 32_767n * GiB },
  PremiumV2_LRS: { min: 1n * GiB, max: 64n * TiB },
  UltraSSD_LRS: { min: 4n * GiB, max: 64n * TiB },
};

const driverSource = 'azuredisk-csi-driver v1.34.5';
const resizeTroubleshooting = 'https://learn.microsoft.com/troubleshoot/azure/virtual-machines/windows/troubleshoot-disk-resize';

const azureErrors: readonly DriverError[] = [
  {
    // The driver's own check (only with --enable-disk-online-resize=false, default true) and Azure's
    // refusals of an attached disk's resize: a Standard HDD, Standard SSD or Premium SSD disk of
    // 4 TiB or less grown past 4 TiB, a shared disk, a SKU that cannot grow attached (and the older
    // code of 2020, kubernetes/kubernetes#96706).
    kind: 'offlineOnly',
    reason: 'DriverNeedsDetachedDisk',
    pattern:
      /disk resize is only supported on Unattached disk|InvalidResizeForLargeDisks|LiveResizeSharedDiskNotAllowed|ChangeDiskSizeWhileAttached(?:ForSku)?NotAllowed/,
    meaning:
      'Azure grows this disk only while it is detached (a Standard or Premium SSD disk of 4 TiB or less grown past 4 TiB, a shared disk, or a SKU that cannot grow attached)',
    fix: 'stop every pod that mounts the claim (scale its workload to zero) until the resize is done: the resizer retries and Azure grows the detached disk; then start them again',
    source: `${driverSource} pkg/azuredisk/azure_managedDiskController.go ResizeDisk; ${resizeTroubleshooting}`,
  },
  {
    kind: 'final',
    reason: 'DriverDiskExported',
    pattern: /ChangeDiskSizeWhileActiveSasNotAllowed/,
    meaning: 'Azure does not resize a disk while a SAS export of it is active',
    fix: 'end the export (az disk revoke-access) and the resizer grows it at its next retry',
    source: resizeTroubleshooting,
  },
  {
    kind: 'final',
    reason: 'DriverSizeOutOfRange',
    pattern: /InvalidResizeWithName/,
    meaning: "the size is outside the range of the disk's SKU, or smaller than the disk",
    fix: "ask for a size within the SKU's range (pvx's profile knows the largest: 32,767 GiB; 64 TiB for Premium SSD v2 and Ultra Disk)",
    source: resizeTroubleshooting,
  },
];

/** The Azure Disk CSI driver, `disk.csi.azure.com`. */
export const azureDisk: DriverProfile = {
  name: 'disk.csi.azure.com',
  // pkg/azureutils/azure_disk_utils.go: azurePublicCloudDefaultStorageAccountType = StandardSSD_LRS.
  ...sizesByParameter(azureSizes, ['skuName', 'storageAccountType'], 'StandardSSD_LRS'),
  // pkg/azuredisk/azure_managedDiskController.go ResizeDisk: "Azure resizes in chunks of GiB (not GB)".
  granularity: GiB,
  // https://learn.microsoft.com/azure/virtual-machines/disks-types: Premium SSD v2 and Ultra Disk
  // "performance can be adjusted up to four times within a 24 hour period" — their IOPS and
  // throughput (a VolumeAttributesClass change), not their size. Counted for every volume of the
  // driver: the other SKUs' performance follows their size, and a class change of theirs is rare.
  // Not counted: Premium SSD v2's creation, which Azure counts as one (pvx does not read when a
  // disk was made); --modification-budget disk.csi.azure.com=3/24h:performance allows for it.
  modificationBudget: { count: 4, windowMs: hours(24), counts: 'performance' },
  errors: azureErrors,
  // pkg/azuredisk/azuredisk.go advertises MODIFY_VOLUME (DiskIOPSReadWrite, DiskMBpsReadWrite, skuName).
  modifiesVolumes: true,
};
