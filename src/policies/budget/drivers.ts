// What pvx knows of a CSI driver, by the StorageClass's provisioner: the sizes it makes, how many
// modifications of a volume it allows in a rolling window, and what its refusals mean (wait, a
// rate limit, only offline, or never as asked). The data is in profiles/, one file per cloud or
// family, each fact beside the file at a version or the page that says it (driver-profile.ts says
// what a profile holds); the decisions that read a profile take it from a lookup they are given
// (DriverProfiles), so operator flags (--modification-budget, --max-volume-size) change a budget
// or a limit without any global state. Any other driver (the embedded cluster's test driver among
// them) is known by the resizer's own texts alone, and gets its limits from --max-volume-size.
import { parseBytes } from '../../k8s/quantity.ts';
import { humanDuration } from '../shared/duration.ts';
import type { DriverError, DriverProfile, ModificationBudget } from './driver-profile.ts';
import { azureDisk } from './profiles/azure.ts';
import { ebs } from './profiles/ebs.ts';
import { gcePersistentDisk } from './profiles/gce.ts';
import { onPremisesProfiles } from './profiles/on-premises.ts';
import { resizerErrors } from './profiles/resizer.ts';
import { vsphere } from './profiles/vsphere.ts';

export type { DriverError, DriverErrorKind, DriverProfile, ModificationBudget } from './driver-profile.ts';

/** Every driver pvx has a profile of; each profile's own errors first, then the resizer's. */
const profiles: readonly DriverProfile[] = [ebs, gcePersistentDisk, azureDisk, vsphere, ...onPremisesProfiles].map((p) => ({
  ...p,
  errors: [...p.errors, ...resizerErrors],
}));

/**
 * The budgets of pvx's profiles as --modification-budget writes them ("ebs.csi.aws.com=4/24h"):
 * what the flags' help quotes, so that it says what the profiles hold.
 */
export const profiledBudgets: string = profiles
  .flatMap((p) => {
    const b = p.modificationBudget;
    return b ? [`${p.name}=${b.count}/${humanDuration(b.windowMs)}${b.counts === 'performance' ? ':performance' : ''}`] : [];
  })
  .join(', ');

/** The drivers whose largest volume pvx's profiles know (by a class's volume type, say). */
export const profiledDrivers: readonly string[] = profiles.filter((p) => p.maxBytes({}) !== undefined).map((p) => p.name);

/** A driver pvx knows nothing of. */
const unknownDriver = (name: string): DriverProfile => ({ name, maxBytes: () => undefined, minBytes: () => undefined, granularity: 1n, errors: resizerErrors });

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
  // One profile per unknown driver too, as for the known: a pass asks once per claim, and reads
  // each profile's facts once (policy-pass.ts). Bounded: provisioners come from StorageClasses.
  const unknown = new Map<string, DriverProfile>();
  return (provisioner) => {
    const known = byName.get(provisioner ?? '') ?? unknown.get(provisioner ?? '*');
    if (known) return known;
    if (unknown.size >= 1024) unknown.clear();
    const profile = unknownDriver(provisioner ?? '*');
    unknown.set(provisioner ?? '*', profile);
    return profile;
  };
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
