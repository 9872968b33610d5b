// The AWS EBS CSI driver (ebs.csi.aws.com): sizes by volume type, the modification budget, and
// the texts of its errors, each beside its source. docs/eks.md says what a user sees of them.
import { GiB } from '../../../k8s/quantity.ts';
import { hours, sizesByParameter, TiB, type DriverError, type DriverProfile, type SizeTable } from '../driver-profile.ts';

/**
 * AWS EBS sizes by volume type (the class's `type` parameter), as the EC2 API reference gives them
 * for ModifyVolume's Size (and CreateVolume's):
 *   https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ModifyVolume.html
 *   read in AWS's own rendering of that model:
 *   https://docs.aws.amazon.com/sdk-for-kotlin/api/latest/ec2/aws.sdk.kotlin.services.ec2.model/-modify-volume-request/size.html
 *   ("gp2: 1 - 16,384 GiB; gp3: 1 - 65,536 GiB; io1: 4 - 16,384 GiB; io2: 4 - 65,536 GiB;
 *   st1 and sc1: 125 - 16,384 GiB; standard: 1 - 1024 GiB"), and the same list in the AWS SDK
 *   for Go v2's ec2 v1.316.1 api_op_ModifyVolume.go.
 * gp3 was raised from 16 TiB to 64 TiB in September 2025: older copies of the EBS user guide's
 * volume-types page (https://docs.aws.amazon.com/ebs/latest/userguide/ebs-volume-types.html) say
 * 16 TiB; the API reference is the one kept current.
 */
const ebsSizes: SizeTable = {
  gp2: { min: 1n * GiB, max: 16n * TiB }, // API_ModifyVolume: "gp2: 1 - 16,384 GiB"
  gp3: { min: 1n * GiB, max: 64n * TiB }, // API_ModifyVolume: "gp3: 1 - 65,536 GiB"
  io1: { min: 4n * GiB, max: 16n * TiB }, // API_ModifyVolume: "io1: 4 - 16,384 GiB"
  io2: { min: 4n * GiB, max: 64n * TiB }, // API_ModifyVolume: "io2: 4 - 65,536 GiB"
  st1: { min: 125n * GiB, max: 16n * TiB }, // API_ModifyVolume: "st1 and sc1: 125 - 16,384 GiB"
  sc1: { min: 125n * GiB, max: 16n * TiB }, // API_ModifyVolume: "st1 and sc1: 125 - 16,384 GiB"
  standard: { min: 1n * GiB, max: 1n * TiB }, // API_ModifyVolume: "standard: 1 - 1024 GiB"
};

/**
 * The texts of the EBS CSI driver (v1.63.0: pkg/cloud/cloud.go, pkg/driver/controller.go and
 * controller_modify_volume.go). ControllerExpandVolume wraps every failure as gRPC Internal
 * ("Could not resize volume "vol-…": <cloud error>"), so the external-resizer shows each one as a
 * ControllerResizeError and retries it: only the text tells them apart.
 */
const ebsErrors: readonly DriverError[] = [
  {
    // EC2's answer to a fifth modification within 24 h, passed through unwrapped:
    // "… api error VolumeModificationRateExceeded: You've reached the maximum modification rate per volume limit. …"
    kind: 'rateLimited',
    reason: 'DriverRateLimited',
    pattern: /VolumeModificationRateExceeded/,
    meaning: 'EBS allows no further modification of this volume until its rolling window frees one',
    source: 'aws-ebs-csi-driver v1.63.0 pkg/cloud/cloud.go (EC2 VolumeModificationRateExceeded, passed through)',
  },
  {
    // cloud.go validateModifyVolume: `volume "vol-…" in OPTIMIZING state, cannot currently modify`;
    // EC2's IncorrectModificationState (the last modification is not complete); checkDesiredState:
    // `volume "vol-…" is still being expanded to N size` (or modified to an IOPS, type, throughput).
    kind: 'waiting',
    reason: 'DriverModificationInProgress',
    pattern: /in OPTIMIZING state, cannot currently modify|IncorrectModificationState|is still being (?:expanded|modified) to/,
    meaning: 'the previous modification of the volume is still being optimized by EBS; the resizer retries once it is done',
    source: 'aws-ebs-csi-driver v1.63.0 pkg/cloud/cloud.go validateModifyVolume, checkDesiredState',
  },
  {
    // cloud.go wraps VolumeModificationSizeLimitExceeded and MaxIOPSLimitExceeded in ErrLimitExceeded
    // ("limit exceeded: …"), which ControllerModifyVolume answers as ResourceExhausted
    // ("Could not modify volume (resource exhausted) …"). Not RequestLimitExceeded: that is EC2
    // throttling its API, which passes.
    kind: 'refused',
    reason: 'DriverLimitExceeded',
    pattern: /VolumeModificationSizeLimitExceeded|MaxIOPSLimitExceeded|\(resource exhausted\)/,
    meaning: "EBS refuses the change: an account or volume limit (the Region's modification storage limit, or IOPS) is reached",
    source: 'aws-ebs-csi-driver v1.63.0 pkg/cloud/cloud.go ErrLimitExceeded; pkg/driver/controller_modify_volume.go',
  },
  {
    // cloud.go wraps EC2's invalid-parameter codes in ErrInvalidArgument ("invalid argument: …");
    // ControllerModifyVolume says "Could not modify volume (invalid argument) …".
    kind: 'refused',
    reason: 'DriverInvalidArgument',
    pattern: /\(invalid argument\)|: invalid argument: /,
    meaning: 'EBS refuses the parameters of the change',
    source: 'aws-ebs-csi-driver v1.63.0 pkg/cloud/cloud.go ErrInvalidArgument; pkg/driver/controller_modify_volume.go',
  },
];

/** The AWS EBS CSI driver (controller and node), `ebs.csi.aws.com`. */
export const ebs: DriverProfile = {
  name: 'ebs.csi.aws.com',
  // The driver creates gp3 volumes when the class names no type.
  ...sizesByParameter(ebsSizes, ['type'], 'gp3'),
  granularity: GiB,
  // "You can modify a volume up to four times within a rolling 24-hour period" (EC2 API reference,
  // ModifyVolume: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ModifyVolume.html, as
  // rendered in https://docs.aws.amazon.com/sdk-for-python/v4/reference/clients/ec2/operations/modify_volume/).
  // Since January 2026 (https://aws.amazon.com/about-aws/whats-new/2026/01/amazon-ebs-up-to-four-volume-modifications/);
  // before, a 6-hour cooldown after each modification. Every change of size, type, IOPS or
  // throughput (a VolumeAttributesClass change) is one; --modification-budget replaces it.
  modificationBudget: { count: 4, windowMs: hours(24) },
  errors: ebsErrors,
  // pkg/driver/controller_modify_volume.go: ControllerModifyVolume (type, iops, throughput), which the e2e suite drives.
  modifiesVolumes: true,
};
