// The vSphere CSI driver (csi.vsphere.vmware.com), as a vanilla cluster runs it: the texts of its
// refusals, each beside its source. Read at kubernetes-sigs/vsphere-csi-driver v3.7.3 (27ec91d0).
import { MiB, type DriverError, type DriverProfile } from '../driver-profile.ts';

const source = 'vsphere-csi-driver v3.7.3';

const vsphereErrors: readonly DriverError[] = [
  {
    // vCenter 6.7U3, 7.0 and 7.0U1 grow no attached volume (FailedPrecondition, which the resizer
    // also takes as "grows only offline").
    kind: 'offlineOnly',
    reason: 'DriverNeedsDetachedDisk',
    pattern: /Volume is attached to node\. Online volume expansion is not supported/,
    meaning: 'this vCenter grows a volume only while it is detached (online expansion needs vCenter 7.0U2 or later)',
    fix: 'stop every pod that mounts the claim (scale its workload to zero) until the resize is done, or upgrade vCenter',
    source: `${source} pkg/csi/service/common/common_controller_helper.go IsOnlineExpansion`,
  },
  {
    kind: 'final',
    reason: 'DriverVolumeHasSnapshots',
    pattern: /with existing snapshots .* cannot be expanded/,
    meaning: 'vSphere does not grow a volume that has snapshots',
    fix: "delete the volume's snapshots (its VolumeSnapshots), then ask again",
    source: `${source} pkg/csi/service/vanilla/controller.go ControllerExpandVolume`,
  },
];

/** The vSphere CSI driver, `csi.vsphere.vmware.com`. */
export const vsphere: DriverProfile = {
  name: 'csi.vsphere.vmware.com',
  // The driver checks no largest size.
  maxBytes: () => undefined,
  minBytes: () => undefined,
  // vanilla/controller.go: `volSizeMB := int64(common.RoundUpSize(volSizeBytes, common.MbInBytes))`.
  granularity: MiB,
  errors: vsphereErrors,
  // ControllerModifyVolume answers Unimplemented, and the capability is not advertised.
  modifiesVolumes: false,
};
