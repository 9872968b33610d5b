// What pvx knows of a CSI driver's limits, by the StorageClass's provisioner.
import { GiB, parseBytes } from '../k8s/quantity.ts';

export interface DriverProfile {
  name: string;
  /** Largest volume the driver can make for this class, if known. */
  maxBytes(parameters: Record<string, string>): bigint | undefined;
  /** Sizes are allocated in multiples of this. */
  granularity: bigint;
  /** Modifications allowed per volume within a rolling window (AWS EBS: 4 per 24 h). */
  modificationBudget?: { count: number; windowMs: number };
  /** Recognises the driver's rate-limit error text in a ControllerResizeError condition. */
  rateLimited?: RegExp;
}

const TiB = 1024n * GiB;

/** AWS EBS maximum volume size by volume type (io2 Block Express: 64 TiB; standard: 1 TiB). */
const ebsMax: Record<string, bigint> = {
  gp2: 16n * TiB,
  gp3: 16n * TiB,
  io1: 16n * TiB,
  io2: 64n * TiB,
  st1: 16n * TiB,
  sc1: 16n * TiB,
  standard: 1n * TiB,
};

const profiles: DriverProfile[] = [
  {
    name: 'ebs.csi.aws.com',
    maxBytes: (p) => ebsMax[(p.type ?? p.Type ?? 'gp3').toLowerCase()],
    granularity: GiB,
    modificationBudget: { count: 4, windowMs: 24 * 60 * 60 * 1000 },
    rateLimited: /VolumeModificationRateExceeded/,
  },
  {
    // The embedded cluster's driver (test/cluster/csi-driver): its limit is a class parameter.
    name: 'hostpath.pvx.dev',
    maxBytes: (p) => (p.maxVolumeSize ? parseBytes(p.maxVolumeSize, 'StorageClass parameter maxVolumeSize') : undefined),
    granularity: 1n,
  },
];

/**
 * When the driver's modification budget next allows a change to a volume modified at these
 * times, or undefined when it allows one now (or has no budget).
 */
export function nextModificationAt(profile: DriverProfile, modifications: Date[], now: Date): Date | undefined {
  if (!profile.modificationBudget) return undefined;
  const { count, windowMs } = profile.modificationBudget;
  const recent = modifications.map((d) => d.getTime()).filter((t) => t > now.getTime() - windowMs).sort((a, b) => a - b);
  if (recent.length < count) return undefined;
  return new Date((recent[recent.length - count] as number) + windowMs);
}

const unknownDriver: DriverProfile = { name: '*', maxBytes: () => undefined, granularity: 1n };

export function driverProfile(provisioner: string | undefined): DriverProfile {
  return profiles.find((p) => p.name === provisioner) ?? unknownDriver;
}
