// What pvx knows of a CSI driver, by the StorageClass's provisioner: the sizes it makes, how many
// modifications of a volume it allows in a rolling window, and the texts of its errors that mean
// "wait" rather than "failed". Data, each number beside the page that says it; the decisions that
// read a profile take it from a lookup they are given (DriverProfiles), so operator flags
// (--modification-budget, --max-volume-size) change a budget or a limit without any global state.
// Only drivers users run are built in; any other (the embedded cluster's test driver among them)
// gets its limits from --max-volume-size.
import { GiB, parseBytes } from '../../k8s/quantity.ts';
import { humanDuration } from '../shared/duration.ts';

/** Modifications allowed per volume within a rolling window. */
export interface ModificationBudget {
  count: number;
  windowMs: number;
}

/**
 * What a recognised driver error says of a resize under way (the resizer retries every one of
 * them on its own; pvx only words the wait and decides whether it is a failure).
 */
export type DriverErrorKind =
  /** The volume's modification budget is spent: a retry succeeds once the window frees one. */
  | 'rateLimited'
  /** An earlier modification is still being applied: a retry succeeds once it is done. Not a failure. */
  | 'waiting'
  /** The driver refuses the change itself: lasting, it ends the request (DriverKeepsRefusing). */
  | 'refused';

export interface DriverError {
  kind: DriverErrorKind;
  /** The reason a request shows. */
  reason: string;
  /** Matched against the message of the claim's ControllerResizeError/NodeResizeError condition. */
  pattern: RegExp;
  /** What it means, for the request's message. */
  meaning: string;
}

export interface DriverProfile {
  name: string;
  /** Largest volume the driver makes for a class with these parameters, if known. */
  maxBytes(parameters: Record<string, string>): bigint | undefined;
  /** Smallest volume it makes for such a class, if known (a smaller claim is never provisioned). */
  minBytes(parameters: Record<string, string>): bigint | undefined;
  /** Sizes are allocated in multiples of this. */
  granularity: bigint;
  /** Modifications allowed per volume within a rolling window; none known: no budget. */
  modificationBudget?: ModificationBudget;
  /** The driver's error texts pvx recognises, the first that matches deciding. */
  errors: readonly DriverError[];
}

const TiB = 1024n * GiB;
const hours = (h: number) => h * 3_600_000;

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
const ebsSizes: Record<string, { min: bigint; max: bigint }> = {
  gp2: { min: 1n * GiB, max: 16n * TiB }, // API_ModifyVolume: "gp2: 1 - 16,384 GiB"
  gp3: { min: 1n * GiB, max: 64n * TiB }, // API_ModifyVolume: "gp3: 1 - 65,536 GiB"
  io1: { min: 4n * GiB, max: 16n * TiB }, // API_ModifyVolume: "io1: 4 - 16,384 GiB"
  io2: { min: 4n * GiB, max: 64n * TiB }, // API_ModifyVolume: "io2: 4 - 65,536 GiB"
  st1: { min: 125n * GiB, max: 16n * TiB }, // API_ModifyVolume: "st1 and sc1: 125 - 16,384 GiB"
  sc1: { min: 125n * GiB, max: 16n * TiB }, // API_ModifyVolume: "st1 and sc1: 125 - 16,384 GiB"
  standard: { min: 1n * GiB, max: 1n * TiB }, // API_ModifyVolume: "standard: 1 - 1024 GiB"
};

/** The EBS CSI driver creates gp3 volumes when the class names no type. */
const ebsSize = (p: Record<string, string>) => ebsSizes[(p.type ?? p.Type ?? 'gp3').toLowerCase()];

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
  },
  {
    // cloud.go validateModifyVolume: `volume "vol-…" in OPTIMIZING state, cannot currently modify`;
    // EC2's IncorrectModificationState (the last modification is not complete); checkDesiredState:
    // `volume "vol-…" is still being expanded to N size` (or modified to an IOPS, type, throughput).
    kind: 'waiting',
    reason: 'DriverModificationInProgress',
    pattern: /in OPTIMIZING state, cannot currently modify|IncorrectModificationState|is still being (?:expanded|modified) to/,
    meaning: 'the previous modification of the volume is still being optimized by EBS; the resizer retries once it is done',
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
  },
  {
    // cloud.go wraps EC2's invalid-parameter codes in ErrInvalidArgument ("invalid argument: …");
    // ControllerModifyVolume says "Could not modify volume (invalid argument) …".
    kind: 'refused',
    reason: 'DriverInvalidArgument',
    pattern: /\(invalid argument\)|: invalid argument: /,
    meaning: 'EBS refuses the parameters of the change',
  },
];

const profiles: DriverProfile[] = [
  {
    name: 'ebs.csi.aws.com',
    maxBytes: (p) => ebsSize(p)?.max,
    minBytes: (p) => ebsSize(p)?.min,
    granularity: GiB,
    // "You can modify a volume up to four times within a rolling 24-hour period" (EC2 API reference,
    // ModifyVolume: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ModifyVolume.html, as
    // rendered in https://docs.aws.amazon.com/sdk-for-python/v4/reference/clients/ec2/operations/modify_volume/).
    // Since January 2026 (https://aws.amazon.com/about-aws/whats-new/2026/01/amazon-ebs-up-to-four-volume-modifications/);
    // before, a 6-hour cooldown after each modification. Every change of size, type, IOPS or
    // throughput (a VolumeAttributesClass change) is one; --modification-budget replaces it.
    modificationBudget: { count: 4, windowMs: hours(24) },
    errors: ebsErrors,
  },
];

/**
 * The budgets of pvx's profiles as --modification-budget writes them ("ebs.csi.aws.com=4/24h"):
 * what the flags' help quotes, so that it says what the profiles hold.
 */
export const profiledBudgets: string = profiles
  .flatMap((p) => (p.modificationBudget ? [`${p.name}=${p.modificationBudget.count}/${humanDuration(p.modificationBudget.windowMs)}`] : []))
  .join(', ');

/** The drivers whose largest volume pvx's profiles know (by a class's volume type, say). */
export const profiledDrivers: readonly string[] = profiles.map((p) => p.name);

/** A driver pvx knows nothing of. */
const unknownDriver = (name: string): DriverProfile => ({ name, maxBytes: () => undefined, minBytes: () => undefined, granularity: 1n, errors: [] });

/** The profile of a StorageClass's provisioner. */
export type DriverProfiles = (provisioner: string | undefined) => DriverProfile;

/**
 * The largest volume a driver makes (--max-volume-size): one size for every class, or the size a
 * StorageClass parameter of each class names (a class without it: no limit known).
 */
export type MaxVolumeSize = { bytes: bigint } | { classParameter: string };

/** A driver's largest volume as a profile reads it from a class's parameters. */
function maxBytesOf(limit: MaxVolumeSize): DriverProfile['maxBytes'] {
  if ('bytes' in limit) return () => limit.bytes;
  const { classParameter } = limit;
  return (p) => (p[classParameter] === undefined ? undefined : parseBytes(p[classParameter], `StorageClass parameter ${classParameter}`));
}

/**
 * The profiles, with some budgets replaced — a budget for a driver, or null for none (no budget is
 * enforced) — and some largest volumes given. Either for a driver pvx has no profile of makes one
 * for it.
 */
export function driverProfiles(
  budgets: Readonly<Record<string, ModificationBudget | null>> = {},
  maxVolumeSizes: Readonly<Record<string, MaxVolumeSize>> = {},
): DriverProfiles {
  const byName = new Map(profiles.map((p) => [p.name, p]));
  for (const [name, budget] of Object.entries(budgets)) {
    const { modificationBudget: _default, ...profile } = byName.get(name) ?? unknownDriver(name);
    byName.set(name, budget ? { ...profile, modificationBudget: budget } : profile);
  }
  for (const [name, limit] of Object.entries(maxVolumeSizes)) {
    byName.set(name, { ...(byName.get(name) ?? unknownDriver(name)), maxBytes: maxBytesOf(limit) });
  }
  return (provisioner) => byName.get(provisioner ?? '') ?? unknownDriver(provisioner ?? '*');
}

/** The profiles as pvx knows them, no budget replaced. */
export const defaultDriverProfiles: DriverProfiles = driverProfiles();

/** The recognised error of a resize error condition's message, if any. */
export function driverError(profile: DriverProfile, message: string): DriverError | undefined {
  return profile.errors.find((e) => e.pattern.test(message));
}

/**
 * When a budget next allows a change to a volume modified at these times, or undefined when it
 * allows one now (or there is no budget): the count-th newest modification in the window leaves
 * it then.
 */
export function nextModificationAt(budget: ModificationBudget | undefined, modifications: readonly Date[], now: Date): Date | undefined {
  if (!budget) return undefined;
  const { count, windowMs } = budget;
  const recent = modifications
    .map((d) => d.getTime())
    .filter((t) => t > now.getTime() - windowMs)
    .sort((a, b) => a - b);
  if (recent.length < count) return undefined;
  return new Date((recent[recent.length - count] as number) + windowMs);
}
