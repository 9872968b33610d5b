// The rules of Amazon EBS volumes and Elastic Volumes modifications, as Amazon documents them,
// for the EC2 emulator the AWS EBS CSI driver's controller talks to in the embedded cluster.
//
// No I/O here: the emulated account is plain data (EbsState, persisted by the server), every
// decision takes the time as an argument, and a refused request throws an Ec2Error carrying
// the code and message EC2 answers. Where Amazon publishes no example of a message, the
// wording is ours and the comment says so; codes are always EC2's.
//
// Sources (each number below names the one it comes from):
//   API_CreateVolume  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVolume.html
//   API_ModifyVolume  https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ModifyVolume.html
//   API_DescribeVolumesModifications
//                     https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeVolumesModifications.html
//   EC2 error codes   https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html
//   gp2/gp3           https://docs.aws.amazon.com/ebs/latest/userguide/general-purpose.html
//   io1/io2           https://docs.aws.amazon.com/ebs/latest/userguide/provisioned-iops.html
// The API pages' numbers are those of the EC2 model in aws-sdk-go-v2/service/ec2 v1.316.1, the
// version aws-ebs-csi-driver v1.63.0 pins (its api_op_CreateVolume.go / api_op_ModifyVolume.go
// carry the same text).

export const GiB = 1024 ** 3;

export const volumeTypes = ['gp2', 'gp3', 'io1', 'io2', 'st1', 'sc1', 'standard'] as const;
export type VolumeType = (typeof volumeTypes)[number];

interface ProvisionedIops {
  min: number;
  max: number;
  /** Highest IOPS per GiB of volume size. */
  maxPerGiB: number;
  /** What a volume gets when Iops is not given (gp3); io1 and io2 require Iops at creation. */
  default?: number;
}

interface ProvisionedThroughput {
  min: number;
  max: number;
  default: number;
  /** Highest MiB/s per provisioned IOPS. */
  maxPerIops: number;
}

interface TypeRules {
  minSizeGiB: number;
  maxSizeGiB: number;
  /** Absent: the type takes no Iops parameter. */
  iops?: ProvisionedIops;
  /** Absent: the type takes no Throughput parameter. */
  throughput?: ProvisionedThroughput;
}

export const typeRules: Record<VolumeType, TypeRules> = {
  // Sizes of every type: API_CreateVolume and API_ModifyVolume, parameter Size (gp3 went from
  // 16 TiB to 64 TiB in 2025; gp2, io1, st1 and sc1 stay at 16 TiB, standard at 1 TiB).
  gp2: { minSizeGiB: 1, maxSizeGiB: 16_384 },
  gp3: {
    minSizeGiB: 1,
    maxSizeGiB: 65_536,
    // 3,000 (default) to 80,000 IOPS: API_CreateVolume, parameter Iops. 500 IOPS per GiB above
    // the 3,000 baseline: gp2/gp3, and EC2's own answer "Iops to volume size ratio of 750.000000
    // is too high; maximum is 500" (quoted in github.com/rocicorp/mono pull 4410, 2025).
    iops: { min: 3_000, max: 80_000, maxPerGiB: 500, default: 3_000 },
    // 125 (default) to 2,000 MiB/s: API_CreateVolume, parameter Throughput. 0.25 MiB/s per IOPS:
    // gp2/gp3, and EC2's answer "Throughput (MiBps) to iops ratio of 0.333333 is too high;
    // maximum is 0.250000 MiBps per iops" (github.com/runs-on/runs-on issue 260, 2025).
    throughput: { min: 125, max: 2_000, default: 125, maxPerIops: 0.25 },
  },
  // 100 to 64,000 IOPS: API_CreateVolume, parameter Iops; 50 IOPS per GiB: io1/io2, and EC2's
  // answer "Iops to volume size ratio of 266.666667 is too high; maximum is 50"
  // (github.com/ministryofjustice/cloud-platform-terraform-monitoring pull 110, 2021).
  io1: { minSizeGiB: 4, maxSizeGiB: 16_384, iops: { min: 100, max: 64_000, maxPerGiB: 50 } },
  // 100 to 256,000 IOPS: API_CreateVolume, parameter Iops; 1,000 IOPS per GiB: io1/io2.
  io2: { minSizeGiB: 4, maxSizeGiB: 65_536, iops: { min: 100, max: 256_000, maxPerGiB: 1_000 } },
  st1: { minSizeGiB: 125, maxSizeGiB: 16_384 },
  sc1: { minSizeGiB: 125, maxSizeGiB: 16_384 },
  standard: { minSizeGiB: 1, maxSizeGiB: 1_024 },
};

/**
 * A gp2 volume's IOPS are not provisioned but follow its size: 3 per GiB, at least 100, at
 * most 16,000 (gp2/gp3, "gp2 volumes" section). DescribeVolumes reports them as its Iops.
 */
export function gp2BaselineIops(sizeGiB: number): number {
  return Math.min(16_000, Math.max(100, 3 * sizeGiB));
}

/** The emulated account's Region and zones (zone IDs map to names per account on AWS). */
export const region = 'us-east-1';
export const availabilityZones = [
  { zoneName: 'us-east-1a', zoneId: 'use1-az1' },
  { zoneName: 'us-east-1b', zoneId: 'use1-az2' },
  { zoneName: 'us-east-1c', zoneId: 'use1-az3' },
] as const;

export class Ec2Error extends Error {
  override name = 'Ec2Error';
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** DryRun answers "would have succeeded" with an error, after every check has passed. */
function dryRunOperation(): Ec2Error {
  // Code and meaning: EC2 error codes ("DryRunOperation"); the text is EC2's.
  return new Ec2Error('DryRunOperation', 'Request would have succeeded, but DryRun flag is set.');
}

function volumeNotFound(volumeIds: string[]): Ec2Error {
  // EC2's text for one volume: "The volume 'vol-09baa38550508beeb' does not exist."
  // (github.com/aws-quickstart/quickstart-sap-hana issue 29); the plural is ours. The CSI driver
  // picks the IDs out of this message to set them aside from its batched DescribeVolumes calls.
  const list = volumeIds.join(', ');
  return new Ec2Error('InvalidVolume.NotFound', volumeIds.length === 1 ? `The volume '${list}' does not exist.` : `The volumes '${list}' do not exist.`);
}

/** What a volume performs like: what it was created as, or a modification's original/target. */
export interface Performance {
  volumeType: VolumeType;
  sizeGiB: number;
  /** Provisioned IOPS (gp3, io1, io2); a gp2 volume's follow from its size. */
  iops?: number;
  /** Provisioned throughput in MiB/s (gp3). */
  throughput?: number;
}

export interface Tag {
  key: string;
  value: string;
}

export interface Volume {
  volumeId: string;
  availabilityZone: string;
  /** Epoch milliseconds, as every time here. */
  createTime: number;
  /** The volume is `creating` before this, `available` from it on. */
  availableAt: number;
  encrypted: boolean;
  kmsKeyId?: string;
  multiAttachEnabled: boolean;
  tags: Tag[];
  created: Performance;
  /** CreateVolume's ClientToken and the request it came with, for idempotent retries. */
  clientToken?: string;
  requestFingerprint?: string;
}

export interface Modification {
  volumeId: string;
  startTime: number;
  /** `modifying` before this; from it on the target size and performance are the volume's. */
  optimizingAt: number;
  completedAt: number;
  original: Performance;
  target: Performance;
}

/** Everything the emulated account holds; modifications in the order they were started. */
export interface EbsState {
  volumes: Volume[];
  modifications: Modification[];
}

/** Durations, and the Elastic Volumes rate limit; the server may change them while running. */
export interface Timing {
  creatingSeconds: number;
  modifyingSeconds: number;
  optimizingSeconds: number;
  modificationWindowSeconds: number;
  modificationsPerWindow: number;
}

export const defaultTiming: Timing = {
  creatingSeconds: 1,
  modifyingSeconds: 3,
  optimizingSeconds: 10,
  // "You can modify a volume up to four times within a rolling 24-hour period": API_ModifyVolume
  // (this replaced the six-hour cooldown on 15 January 2026, as github.com/supabase/supabase
  // pull 44071 records).
  modificationWindowSeconds: 24 * 60 * 60,
  modificationsPerWindow: 4,
};

export type VolumeState = 'creating' | 'available';
export type ModificationState = 'modifying' | 'optimizing' | 'completed';

/** A volume as DescribeVolumes reports it at one moment. */
export interface VolumeView {
  volumeId: string;
  state: VolumeState;
  volumeType: VolumeType;
  sizeGiB: number;
  iops?: number;
  throughput?: number;
  availabilityZone: string;
  availabilityZoneId: string;
  createTime: number;
  encrypted: boolean;
  kmsKeyId?: string;
  multiAttachEnabled: boolean;
  tags: Tag[];
}

/** A modification as DescribeVolumesModifications and ModifyVolume report it at one moment. */
export interface ModificationView {
  volumeId: string;
  modificationState: ModificationState;
  /** 0 to 100, over the whole modification (modifying and optimizing). */
  progress: number;
  startTime: number;
  endTime?: number;
  /** As reported: a gp2 volume's IOPS are its baseline. */
  original: Performance;
  target: Performance;
}

export interface Filter {
  name: string;
  values: string[];
}

export interface CreateVolumeRequest {
  volumeType?: string;
  sizeGiB?: number;
  iops?: number;
  throughput?: number;
  availabilityZone?: string;
  availabilityZoneId?: string;
  encrypted?: boolean;
  kmsKeyId?: string;
  multiAttachEnabled?: boolean;
  tags?: Tag[];
  clientToken?: string;
  dryRun?: boolean;
}

export interface ModifyVolumeRequest {
  volumeId: string;
  volumeType?: string;
  sizeGiB?: number;
  iops?: number;
  throughput?: number;
  dryRun?: boolean;
}

export interface DescribeRequest {
  ids?: string[];
  filters?: Filter[];
  maxResults?: number;
  nextToken?: string;
  dryRun?: boolean;
}

export interface Page<T> {
  items: T[];
  nextToken?: string;
}

export function emptyState(): EbsState {
  return { volumes: [], modifications: [] };
}

export class Ebs {
  readonly state: EbsState;
  timing: Timing;

  constructor(timing: Timing, state: EbsState = emptyState()) {
    this.timing = timing;
    this.state = state;
  }

  createVolume(request: CreateVolumeRequest, now: number, newVolumeId: string): VolumeView {
    const volumeType = parseVolumeType(request.volumeType ?? 'gp2'); // "Default: gp2": API_CreateVolume
    if (request.sizeGiB === undefined) {
      // Wording ours: snapshots are not emulated, so Size is the only way to say how big.
      throw new Ec2Error('MissingParameter', 'The request must contain the parameter size');
    }
    const zone = zoneOf(request);
    const performance: Performance = {
      volumeType,
      sizeGiB: request.sizeGiB,
      iops: request.iops ?? typeRules[volumeType].iops?.default,
      throughput: request.throughput ?? typeRules[volumeType].throughput?.default,
    };
    if (volumeType === 'io1' || volumeType === 'io2') {
      // "Required for io1 and io2 volumes": API_CreateVolume, parameter Iops. Wording ours.
      if (request.iops === undefined) throw new Ec2Error('MissingParameter', `The request must contain the parameter iops for ${volumeType} volumes`);
    }
    checkPerformance(performance, { iops: request.iops !== undefined, throughput: request.throughput !== undefined });
    if (request.dryRun) throw dryRunOperation();

    const tags = request.tags ?? [];
    const fingerprint = JSON.stringify([
      performance,
      zone.zoneName,
      Boolean(request.encrypted),
      request.kmsKeyId ?? null,
      Boolean(request.multiAttachEnabled),
      tags,
    ]);
    const earlier = request.clientToken === undefined ? undefined : this.state.volumes.find((v) => v.clientToken === request.clientToken);
    if (earlier) {
      // The same token with the same request is the same volume ("Ensure Idempotency",
      // https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-idempotency.html); the message
      // is the code's description in EC2 error codes.
      if (earlier.requestFingerprint !== fingerprint) {
        throw new Ec2Error('IdempotentParameterMismatch', 'The request uses the same client token as a previous, but non-identical request.');
      }
      return this.viewVolume(earlier, now);
    }
    const volume: Volume = {
      volumeId: newVolumeId,
      availabilityZone: zone.zoneName,
      createTime: now,
      availableAt: now + this.timing.creatingSeconds * 1000,
      encrypted: Boolean(request.encrypted),
      kmsKeyId: request.kmsKeyId,
      multiAttachEnabled: Boolean(request.multiAttachEnabled),
      tags: dedupeTags(tags),
      created: performance,
      clientToken: request.clientToken,
      requestFingerprint: request.clientToken === undefined ? undefined : fingerprint,
    };
    this.state.volumes.push(volume);
    return this.viewVolume(volume, now);
  }

  deleteVolume(volumeId: string, dryRun = false): void {
    this.volume(volumeId);
    if (dryRun) throw dryRunOperation();
    // EC2 passes through `deleting`; here the volume, its history and its client token go at once.
    this.state.volumes = this.state.volumes.filter((v) => v.volumeId !== volumeId);
    this.state.modifications = this.state.modifications.filter((m) => m.volumeId !== volumeId);
  }

  describeVolumes(request: DescribeRequest, now: number): Page<VolumeView> {
    const missing = (request.ids ?? []).filter((id) => !this.state.volumes.some((v) => v.volumeId === id));
    if (missing.length > 0) throw volumeNotFound(missing);
    const matches = (request.filters ?? []).map(volumeFilter);
    if (request.dryRun) throw dryRunOperation();
    const views = this.state.volumes
      .filter((v) => !request.ids?.length || request.ids.includes(v.volumeId))
      .map((v) => this.viewVolume(v, now))
      .filter((view) => matches.every((match) => match(view)));
    return paginate(views, request);
  }

  createTags(volumeIds: string[], tags: Tag[], dryRun = false): void {
    const volumes = this.volumes(volumeIds);
    if (dryRun) throw dryRunOperation();
    for (const volume of volumes) volume.tags = dedupeTags([...volume.tags, ...tags]);
  }

  /** A tag given without a value goes whatever its value; with one, only if the value matches. */
  deleteTags(volumeIds: string[], tags: { key: string; value?: string }[], dryRun = false): void {
    const volumes = this.volumes(volumeIds);
    if (dryRun) throw dryRunOperation();
    for (const volume of volumes) {
      volume.tags = volume.tags.filter((t) => !tags.some((d) => d.key === t.key && (d.value === undefined || d.value === t.value)));
    }
  }

  modifyVolume(request: ModifyVolumeRequest, now: number): ModificationView {
    const volume = this.volume(request.volumeId);
    if (now < volume.availableAt) {
      // "as long as the volume is in the in-use or available state": API_ModifyVolume. Wording ours.
      throw new Ec2Error('IncorrectState', `Volume ${volume.volumeId} is in state creating and cannot be modified`);
    }
    const latest = this.latestModification(volume.volumeId);
    const latestState = latest && modificationStateAt(latest, now);
    if (latest && latestState !== 'completed') {
      // "you must wait for that modification to reach the completed state before you can initiate
      // another modification": API_ModifyVolume. EC2's text: "Volume vol-08986585387cd1eff cannot be
      // modified in modification state MODIFYING" (github.com/sodafoundation/strato issue 1120).
      throw new Ec2Error('IncorrectModificationState', `Volume ${volume.volumeId} cannot be modified in modification state ${latestState?.toUpperCase()}`);
    }
    this.checkModificationRate(volume.volumeId, now);

    const current = this.performanceAt(volume, now);
    const volumeType = request.volumeType === undefined ? current.volumeType : parseVolumeType(request.volumeType);
    const sizeGiB = request.sizeGiB ?? current.sizeGiB;
    if (sizeGiB < current.sizeGiB) {
      // EC2's code and text (github.com/aws/aws-cli issue 4216).
      throw new Ec2Error('InvalidParameterValue', 'New size cannot be smaller than existing size');
    }
    const sameType = volumeType === current.volumeType;
    const target: Performance = {
      volumeType,
      sizeGiB,
      // "The existing value is retained if you keep the same volume type. If you change the
      // volume type to io1, io2, or gp3, the default is 3,000": API_ModifyVolume, parameter Iops.
      iops: typeRules[volumeType].iops ? (request.iops ?? (sameType ? current.iops : 3_000)) : request.iops,
      // "The existing value is retained if the source and target volume type is gp3. Otherwise,
      // the default value is 125": API_ModifyVolume, parameter Throughput.
      throughput: typeRules[volumeType].throughput ? (request.throughput ?? (sameType ? current.throughput : 125)) : request.throughput,
    };
    checkPerformance(target, { iops: request.iops !== undefined, throughput: request.throughput !== undefined });
    if (request.dryRun) throw dryRunOperation();

    // A request that changes nothing still starts a modification: the CSI driver skips such
    // calls because "as of March 2024, EC2 ModifyVolume calls that don't change any parameters
    // still modify the volume" (aws-ebs-csi-driver v1.63.0, pkg/cloud/cloud.go).
    const optimizingAt = now + this.timing.modifyingSeconds * 1000;
    const modification: Modification = {
      volumeId: volume.volumeId,
      startTime: now,
      optimizingAt,
      completedAt: optimizingAt + this.timing.optimizingSeconds * 1000,
      original: current,
      target,
    };
    this.state.modifications.push(modification);
    return viewModification(modification, now);
  }

  describeVolumesModifications(request: DescribeRequest, now: number): Page<ModificationView> {
    const ids = request.ids ?? [];
    this.volumes(ids);
    const unmodified = ids.filter((id) => !this.latestModification(id));
    if (unmodified.length > 0) {
      // EC2 refuses the whole request when any volume named has never been modified, with
      // "Modification for volume 'vol-asdafdf3e38341592' does not exist." (the CSI driver's
      // isAWSErrorModificationNotFound; github.com/awslabs/aws-sdk-rust issue 1346, 2025).
      throw new Ec2Error('InvalidVolumeModification.NotFound', `Modification for volume '${unmodified[0]}' does not exist.`);
    }
    const matches = (request.filters ?? []).map(modificationFilter);
    if (request.dryRun) throw dryRunOperation();
    // "If a volume has been modified more than once, the output includes only the most recent
    // modification request": API_DescribeVolumesModifications.
    const views = this.state.volumes
      .filter((v) => ids.length === 0 || ids.includes(v.volumeId))
      .flatMap((v) => {
        const latest = this.latestModification(v.volumeId);
        return latest ? [viewModification(latest, now)] : [];
      })
      .filter((view) => matches.every((match) => match(view)));
    return paginate(views, request);
  }

  describeAvailabilityZones(request: { zoneNames?: string[]; zoneIds?: string[]; dryRun?: boolean }): (typeof availabilityZones)[number][] {
    const names = request.zoneNames ?? [];
    const ids = request.zoneIds ?? [];
    const unknown = [
      ...names.filter((n) => !availabilityZones.some((z) => z.zoneName === n)),
      ...ids.filter((i) => !availabilityZones.some((z) => z.zoneId === i)),
    ];
    if (unknown.length > 0) throw new Ec2Error('InvalidParameterValue', `Invalid availability zone: [${unknown.join(', ')}]`);
    if (request.dryRun) throw dryRunOperation();
    return availabilityZones.filter((z) => (names.length === 0 && ids.length === 0) || names.includes(z.zoneName) || ids.includes(z.zoneId));
  }

  /** Sizes in GiB usable now, per volume: what the backing files must hold. */
  usableSizes(now: number): Map<string, number> {
    return new Map(this.state.volumes.map((v) => [v.volumeId, this.performanceAt(v, now).sizeGiB]));
  }

  viewVolume(volume: Volume, now: number): VolumeView {
    const performance = this.performanceAt(volume, now);
    return {
      volumeId: volume.volumeId,
      state: now < volume.availableAt ? 'creating' : 'available',
      volumeType: performance.volumeType,
      sizeGiB: performance.sizeGiB,
      iops: reportedIops(performance),
      throughput: performance.throughput,
      availabilityZone: volume.availabilityZone,
      availabilityZoneId: zoneIdOf(volume.availabilityZone),
      createTime: volume.createTime,
      encrypted: volume.encrypted,
      kmsKeyId: volume.kmsKeyId,
      multiAttachEnabled: volume.multiAttachEnabled,
      tags: volume.tags,
    };
  }

  latestModification(volumeId: string): Modification | undefined {
    return this.state.modifications.findLast((m) => m.volumeId === volumeId);
  }

  /**
   * The volume's size and performance now. A modification's target becomes the volume's when
   * it reaches `optimizing`: "Size increases take effect once the volume modification reaches
   * the optimizing state" (https://docs.aws.amazon.com/ebs/latest/userguide/monitoring-volume-modifications.html).
   * Performance is reported as the target's from then on too (on AWS it moves there while optimizing).
   */
  private performanceAt(volume: Volume, now: number): Performance {
    const latest = this.latestModification(volume.volumeId);
    if (!latest) return volume.created;
    return now >= latest.optimizingAt ? latest.target : latest.original;
  }

  private checkModificationRate(volumeId: string, now: number): void {
    const { modificationWindowSeconds, modificationsPerWindow } = this.timing;
    const windowMs = modificationWindowSeconds * 1000;
    const startsInWindow = this.state.modifications
      .filter((m) => m.volumeId === volumeId && m.startTime > now - windowMs)
      .map((m) => m.startTime)
      .sort((a, b) => a - b);
    if (startsInWindow.length < modificationsPerWindow) return;
    // The next modification is possible once enough of those have left the window.
    const nextAllowed = (startsInWindow[startsInWindow.length - modificationsPerWindow] ?? now) + windowMs;
    // "If you exceed this limit, you get an error message that indicates when you can perform
    // your next modification": API_ModifyVolume. The first sentence is EC2's text
    // (github.com/sodafoundation/strato issue 1094); Amazon publishes no example of the rest
    // of the current message, so its wording is ours and follows the documented rule.
    throw new Ec2Error(
      'VolumeModificationRateExceeded',
      `You've reached the maximum modification rate per volume limit. You can modify a volume up to ${modificationsPerWindow} ` +
        `times within a rolling ${describeWindow(modificationWindowSeconds)} period. You can modify volume ${volumeId} again after ` +
        `${new Date(nextAllowed).toISOString()}.`,
    );
  }

  private volume(volumeId: string): Volume {
    const volume = this.state.volumes.find((v) => v.volumeId === volumeId);
    if (!volume) throw volumeNotFound([volumeId]);
    return volume;
  }

  private volumes(volumeIds: string[]): Volume[] {
    const missing = volumeIds.filter((id) => !this.state.volumes.some((v) => v.volumeId === id));
    if (missing.length > 0) throw volumeNotFound(missing);
    return volumeIds.map((id) => this.volume(id));
  }
}

export function modificationStateAt(modification: Modification, now: number): ModificationState {
  if (now < modification.optimizingAt) return 'modifying';
  if (now < modification.completedAt) return 'optimizing';
  return 'completed';
}

export function viewModification(modification: Modification, now: number): ModificationView {
  const state = modificationStateAt(modification, now);
  const duration = modification.completedAt - modification.startTime;
  const progress = state === 'completed' || duration <= 0 ? 100 : Math.floor((100 * (now - modification.startTime)) / duration);
  const report = (p: Performance): Performance => ({ volumeType: p.volumeType, sizeGiB: p.sizeGiB, iops: reportedIops(p), throughput: p.throughput });
  return {
    volumeId: modification.volumeId,
    modificationState: state,
    progress: Math.max(0, Math.min(100, progress)),
    startTime: modification.startTime,
    endTime: state === 'completed' ? modification.completedAt : undefined,
    original: report(modification.original),
    target: report(modification.target),
  };
}

function reportedIops(performance: Performance): number | undefined {
  return performance.volumeType === 'gp2' ? gp2BaselineIops(performance.sizeGiB) : performance.iops;
}

function parseVolumeType(value: string): VolumeType {
  const type = volumeTypes.find((t) => t === value);
  // Wording ours.
  if (!type) throw new Ec2Error('InvalidParameterValue', `Value (${value}) for parameter volumeType is invalid. Valid values: ${volumeTypes.join(', ')}`);
  return type;
}

function zoneOf(request: CreateVolumeRequest): (typeof availabilityZones)[number] {
  // "Either AvailabilityZone or AvailabilityZoneId must be specified, but not both":
  // API_CreateVolume. Wording of all three messages ours.
  if (request.availabilityZone !== undefined && request.availabilityZoneId !== undefined) {
    throw new Ec2Error('InvalidParameterCombination', 'Specify either AvailabilityZone or AvailabilityZoneId, not both');
  }
  if (request.availabilityZone === undefined && request.availabilityZoneId === undefined) {
    throw new Ec2Error('MissingParameter', 'The request must contain the parameter AvailabilityZone or AvailabilityZoneId');
  }
  const zone = availabilityZones.find((z) => z.zoneName === request.availabilityZone || z.zoneId === request.availabilityZoneId);
  if (!zone) throw new Ec2Error('InvalidParameterValue', `Invalid availability zone: [${request.availabilityZone ?? request.availabilityZoneId}]`);
  return zone;
}

function zoneIdOf(zoneName: string): string {
  return availabilityZones.find((z) => z.zoneName === zoneName)?.zoneId ?? '';
}

/**
 * Size, IOPS and throughput against the type's limits, in the order EC2 reports them: the CSI
 * driver learns IOPS maxima from the "too high" answer to a DryRun CreateVolume of 4 GiB with
 * 2147483647 IOPS, so that check must come before the per-GiB ratio.
 */
function checkPerformance(p: Performance, given: { iops: boolean; throughput: boolean }): void {
  const rules = typeRules[p.volumeType];
  if (!Number.isInteger(p.sizeGiB) || p.sizeGiB < rules.minSizeGiB) {
    // Wording ours, after EC2's "too large" text below.
    throw new Ec2Error('InvalidParameterValue', `Volume of ${p.sizeGiB}GiB is too small for volume type ${p.volumeType}; minimum is ${rules.minSizeGiB}GiB`);
  }
  if (p.sizeGiB > rules.maxSizeGiB) {
    // EC2's text: "Volume of 2000GiB is too large for volume type standard; maximum is 1024GiB"
    // (github.com/fog/fog-aws issue 186).
    throw new Ec2Error('InvalidParameterValue', `Volume of ${p.sizeGiB}GiB is too large for volume type ${p.volumeType}; maximum is ${rules.maxSizeGiB}GiB`);
  }
  if (!rules.iops) {
    // EC2's text, as the CSI driver's tests quote it; extractMaxIOPSFromError reads it as "no limit".
    if (given.iops) throw new Ec2Error('InvalidParameterCombination', `The parameter iops is not supported for ${p.volumeType} volumes.`);
  } else if (p.iops !== undefined) {
    checkIops(p.volumeType, p.sizeGiB, p.iops, rules.iops);
  }
  if (!rules.throughput) {
    // Wording ours, after the iops text above.
    if (given.throughput) throw new Ec2Error('InvalidParameterCombination', `The parameter throughput is not supported for ${p.volumeType} volumes.`);
  } else if (p.throughput !== undefined) {
    // Only gp3 takes throughput, and a gp3 volume always has its IOPS (3,000 by default).
    checkThroughput(p.throughput, p.iops ?? 0, rules.throughput);
  }
}

function checkIops(volumeType: VolumeType, sizeGiB: number, iops: number, rules: ProvisionedIops): void {
  const overRatio = iops > rules.min && iops > rules.maxPerGiB * sizeGiB;
  if (volumeType === 'io2' && (iops > rules.max || overRatio)) {
    // EC2's code and text, as the CSI driver's io2ErrRegex reads it ("256K IOPS").
    const limits = `${typeRules.io2.maxSizeGiB / 1024} TiB or ${rules.max / 1000}K IOPS or ${rules.maxPerGiB}:1 IOPS:GB ratio`;
    throw new Ec2Error('InvalidParameterCombination', `io2 volumes configured with greater than ${limits} are not supported.`);
  }
  if (!Number.isInteger(iops) || iops < rules.min) {
    // Wording ours, after EC2's "too high" text below.
    throw new Ec2Error('InvalidParameterValue', `Volume iops of ${iops} is too low; minimum is ${rules.min}.`);
  }
  if (iops > rules.max) {
    // EC2's code and text ("Volume iops of 200000 is too high; maximum is 80000.", the CSI
    // driver's nonIo2ErrRegex and its tests).
    throw new Ec2Error('InvalidParameterValue', `Volume iops of ${iops} is too high; maximum is ${rules.max}.`);
  }
  if (overRatio) {
    throw new Ec2Error('InvalidParameterValue', `Iops to volume size ratio of ${(iops / sizeGiB).toFixed(6)} is too high; maximum is ${rules.maxPerGiB}`);
  }
}

function checkThroughput(throughput: number, iops: number, rules: ProvisionedThroughput): void {
  // Range messages' wording ours, after the iops ones; the ratio text is EC2's (see typeRules.gp3).
  if (!Number.isInteger(throughput) || throughput < rules.min) {
    throw new Ec2Error('InvalidParameterValue', `Volume throughput of ${throughput} is too low; minimum is ${rules.min}.`);
  }
  if (throughput > rules.max) {
    throw new Ec2Error('InvalidParameterValue', `Volume throughput of ${throughput} is too high; maximum is ${rules.max}.`);
  }
  if (throughput > rules.min && throughput / iops > rules.maxPerIops) {
    throw new Ec2Error(
      'InvalidParameterValue',
      `Throughput (MiBps) to iops ratio of ${(throughput / iops).toFixed(6)} is too high; maximum is ${rules.maxPerIops.toFixed(6)} MiBps per iops`,
    );
  }
}

/** Later tags replace earlier ones of the same key, as CreateTags overwrites a tag's value. */
function dedupeTags(tags: Tag[]): Tag[] {
  const byKey = new Map<string, string>();
  for (const tag of tags) byKey.set(tag.key, tag.value);
  return [...byKey].map(([key, value]) => ({ key, value }));
}

function describeWindow(seconds: number): string {
  return seconds % 3600 === 0 ? `${seconds / 3600}-hour` : `${seconds}-second`;
}

function unknownFilter(name: string): Ec2Error {
  // Wording ours.
  return new Ec2Error('InvalidParameterValue', `The filter '${name}' is invalid`);
}

/** DescribeVolumes filters the CSI driver and tests use; a filter's values are alternatives. */
function volumeFilter(filter: Filter): (v: VolumeView) => boolean {
  const anyOf = (value: string | undefined) => value !== undefined && filter.values.includes(value);
  if (filter.name.startsWith('tag:')) {
    const key = filter.name.slice('tag:'.length);
    return (v) => anyOf(v.tags.find((t) => t.key === key)?.value);
  }
  switch (filter.name) {
    case 'tag-key':
      return (v) => v.tags.some((t) => anyOf(t.key));
    case 'volume-id':
      return (v) => anyOf(v.volumeId);
    case 'status':
      return (v) => anyOf(v.state);
    case 'volume-type':
      return (v) => anyOf(v.volumeType);
    case 'size':
      return (v) => anyOf(String(v.sizeGiB));
    case 'availability-zone':
      return (v) => anyOf(v.availabilityZone);
    case 'encrypted':
      return (v) => anyOf(String(v.encrypted));
    default:
      throw unknownFilter(filter.name);
  }
}

/** DescribeVolumesModifications filters (API_DescribeVolumesModifications, Filter.N), but start-time. */
function modificationFilter(filter: Filter): (m: ModificationView) => boolean {
  const anyOf = (value: string | number | undefined) => value !== undefined && filter.values.includes(String(value));
  switch (filter.name) {
    case 'volume-id':
      return (m) => anyOf(m.volumeId);
    case 'modification-state':
      return (m) => anyOf(m.modificationState);
    case 'original-size':
      return (m) => anyOf(m.original.sizeGiB);
    case 'target-size':
      return (m) => anyOf(m.target.sizeGiB);
    case 'original-volume-type':
      return (m) => anyOf(m.original.volumeType);
    case 'target-volume-type':
      return (m) => anyOf(m.target.volumeType);
    case 'original-iops':
      return (m) => anyOf(m.original.iops);
    case 'target-iops':
      return (m) => anyOf(m.target.iops);
    default:
      throw unknownFilter(filter.name);
  }
}

/** NextToken is the offset of the next item: enough for a store that only appends and removes. */
function paginate<T>(items: T[], request: DescribeRequest): Page<T> {
  const start = request.nextToken === undefined ? 0 : Number(request.nextToken);
  if (!Number.isInteger(start) || start < 0) {
    // The code is EC2's for a token it does not know (EC2 error codes); wording ours.
    throw new Ec2Error('InvalidPaginationToken', `The pagination token ${request.nextToken} is invalid`);
  }
  const end = request.maxResults === undefined ? items.length : start + request.maxResults;
  return { items: items.slice(start, end), nextToken: end < items.length ? String(end) : undefined };
}
