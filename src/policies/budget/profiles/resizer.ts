// What the external-resizer itself says of a claim, whatever its driver: its texts every profile
// recognises after the driver's own. Read at kubernetes-csi/external-resizer v2.3.0.
import type { DriverError } from '../driver-profile.ts';

/** What finishes a resize the driver makes only while no pod uses the claim. */
const stopThePods =
  'stop every pod that mounts the claim (scale its workload to zero) until the resize is done: the resizer then grows it; then start them again';

export const resizerErrors: readonly DriverError[] = [
  {
    // After a driver's FailedPrecondition (the CSI spec's answer of a driver that grows volumes only
    // offline), the resizer does not call the driver again while any pod that is not terminated
    // uses the claim, and says this each time it looks.
    kind: 'offlineOnly',
    reason: 'DriverNeedsOfflineVolume',
    pattern: /only supports offline expansion and volume is currently in-use/,
    meaning: 'the driver grows the volume only while no pod uses the claim',
    fix: stopThePods,
    source: 'external-resizer v2.3.0 pkg/controller/expand_and_recover.go (the in-use check before calling the driver); pkg/controller/inuse_pvc_store.go',
  },
  {
    // The condition the resizer writes after a driver's FailedPrecondition (resize_status.go:
    // "failed to expand pvc with %v"; controller.go inUseError: "if this is a failed precondition
    // error then that means driver does not support expansion of in-use volumes").
    kind: 'offlineOnly',
    reason: 'DriverNeedsOfflineVolume',
    pattern: /failed to expand pvc with rpc error: code = FailedPrecondition/,
    meaning: 'the driver refuses to grow the volume while it is in use (FailedPrecondition, which the resizer takes as "grows only offline")',
    fix: stopThePods,
    source: 'external-resizer v2.3.0 pkg/controller/controller.go inUseError; pkg/controller/resize_status.go',
  },
];
