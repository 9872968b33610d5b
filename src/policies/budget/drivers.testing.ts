// The embedded cluster's test driver (test/cluster/csi-driver, provisioner hostpath.pvx.dev) as
// pvx is told of it — not built in: its limit is the class parameter maxVolumeSize, given as the
// e2e suites and the demo give it (--max-volume-size hostpath.pvx.dev=class-parameter:maxVolumeSize).
import { driverProfiles, type MaxVolumeSize } from './drivers.ts';

export const embeddedMaxVolumeSizes: Readonly<Record<string, MaxVolumeSize>> = { 'hostpath.pvx.dev': { classParameter: 'maxVolumeSize' } };

/** pvx's profiles with the embedded driver's limit. */
export const embeddedDriverProfiles = driverProfiles({}, embeddedMaxVolumeSizes);
