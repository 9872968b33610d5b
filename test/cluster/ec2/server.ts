// The EC2 emulator's HTTP server: EC2 query-protocol calls on any path but /_emulator/, answered
// from the EBS rules (ebs.ts) with the account kept in a state directory (state-dir.ts), and the
// admin endpoints tests read. main.ts documents the process as a whole.
import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, serve, type RunningServer } from '../emulator-http.ts';
import { Ebs, Ec2Error, GiB, region, viewModification, type DescribeRequest, type ModificationView, type Tag, type Timing, type VolumeView } from './ebs.ts';
import { QueryParams, errorXml, successXml, type XmlValue } from './query.ts';
import { StateDir, type CallRecord } from './state-dir.ts';

export interface EmulatorOptions {
  host: string;
  port: number;
  stateDir: string;
  /** Timing from the command line; config.json in the state dir overrides it. */
  timing: Timing;
  /** Epoch milliseconds; tests may pass their own clock. */
  now?: () => number;
}

/** The running emulator: its url is what AWS_EC2_ENDPOINT points at. */
export type RunningEmulator = RunningServer;

/** How often backing files catch up with modifications reaching `optimizing` between calls. */
const backingFileSyncMs = 250;

/** Actions that change the account: the state is saved after each that succeeds. */
const mutatingActions = new Set(['CreateVolume', 'DeleteVolume', 'ModifyVolume', 'CreateTags', 'DeleteTags']);

/**
 * EC2 actions the CSI driver has but this emulator leaves out: the cluster's CSIDriver says
 * attachRequired: false, and snapshots and instances do not exist here.
 */
const notEmulatedActions = new Set([
  'AttachVolume',
  'DetachVolume',
  'DescribeVolumeStatus',
  'DescribeInstances',
  'DescribeInstanceTypes',
  'CreateSnapshot',
  'DeleteSnapshot',
  'DescribeSnapshots',
  'CopyVolumes',
  'EnableFastSnapshotRestores',
  'LockSnapshot',
]);

export async function startEmulator(options: EmulatorOptions): Promise<RunningEmulator> {
  const emulator = new Emulator(options);
  const timer = setInterval(() => emulator.syncBackingFiles(), backingFileSyncMs);
  timer.unref();
  return serve(
    'ec2 emulator',
    options,
    (req, res) => emulator.handle(req, res),
    () => clearInterval(timer),
  );
}

type Handler = (params: QueryParams, now: number) => Record<string, XmlValue>;

class Emulator {
  private readonly dir: StateDir;
  private readonly ebs: Ebs;
  private readonly baseTiming: Timing;
  private readonly now: () => number;
  private configVersion: number | undefined;
  /** Bytes each backing file was last brought to, so unchanged ones are not touched again. */
  private readonly backingBytes = new Map<string, number>();
  /** Backing files the host cannot hold (ext4 stops at 16 TiB), reported once each. */
  private readonly backingFailures = new Map<string, string>();

  constructor(options: EmulatorOptions) {
    this.dir = new StateDir(options.stateDir);
    this.baseTiming = options.timing;
    this.now = options.now ?? Date.now;
    this.ebs = new Ebs({ ...options.timing, ...this.dir.readTimingOverrides() }, this.dir.loadState());
    this.configVersion = this.dir.configVersion();
    this.syncBackingFiles();
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const body = await readBody(req);
    if (url.pathname.startsWith('/_emulator/')) return this.admin(url, res);

    this.refreshTiming();
    const now = this.now();
    // Answers never show a size the backing file does not have yet.
    this.syncBackingFiles(now);
    const params = QueryParams.parse(req.method === 'POST' ? body : url.search);
    const requestId = randomUUID();
    const action = params.string('Action') ?? '';
    let httpStatus = 200;
    let result = 'ok';
    let message: string | undefined;
    let answer: string;
    let createdVolumeId: string | undefined;
    try {
      const handler = this.handlerFor(action, req);
      const response = handler(params, now);
      if (mutatingActions.has(action)) {
        this.dir.saveState(this.ebs.state);
        this.syncBackingFiles(now);
      }
      if (action === 'CreateVolume' && typeof response.volumeId === 'string') createdVolumeId = response.volumeId;
      answer = successXml(action, requestId, response);
    } catch (err) {
      const error = err instanceof Ec2Error ? err : internalError(err);
      httpStatus = error.code === 'InternalError' ? 500 : 400;
      result = error.code;
      message = error.message;
      answer = errorXml(error.code, error.message, requestId);
    }
    res.writeHead(httpStatus, { 'Content-Type': 'text/xml;charset=UTF-8', 'x-amzn-RequestId': requestId });
    res.end(answer);
    const { Action: _action, Version: _version, ...rest } = params.entries();
    const record: CallRecord = {
      time: new Date(now).toISOString(),
      requestId,
      action,
      volumeIds: [...volumeIdsIn(rest), ...(createdVolumeId ? [createdVolumeId] : [])],
      params: rest,
      httpStatus,
      result,
      message,
    };
    this.dir.appendCall(record);
  }

  /** Grows each backing file to the size its volume may use now (modifications reaching `optimizing`). */
  syncBackingFiles(now = this.now()): void {
    for (const [volumeId, sizeGiB] of this.ebs.usableSizes(now)) {
      const bytes = sizeGiB * GiB;
      if (this.backingBytes.get(volumeId) === bytes) continue;
      try {
        this.dir.growBackingFile(volumeId, bytes);
        this.backingFailures.delete(volumeId);
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        process.stderr.write(`ec2 emulator: cannot bring ${this.dir.backingFile(volumeId)} to ${bytes} bytes: ${reason}\n`);
        this.backingFailures.set(volumeId, reason);
      }
      this.backingBytes.set(volumeId, bytes);
    }
  }

  /** config.json applies from its next change on; a broken one leaves the previous timing. */
  private refreshTiming(): void {
    const version = this.dir.configVersion();
    if (version === this.configVersion) return;
    this.configVersion = version;
    try {
      this.ebs.timing = { ...this.baseTiming, ...this.dir.readTimingOverrides() };
    } catch (err) {
      process.stderr.write(`ec2 emulator: ignoring ${this.dir.configPath}: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  }

  private handlerFor(action: string, req: IncomingMessage): Handler {
    // Signatures are not checked, only that the request carries one, as every SDK call does.
    // The message is the code's description in EC2 error codes.
    if (!req.headers.authorization) {
      throw new Ec2Error('MissingAuthenticationToken', 'The request must contain either a valid (registered) AWS access key ID or X.509 certificate.');
    }
    // The message is the code's description in EC2 error codes.
    if (!action) throw new Ec2Error('MissingAction', 'The request is missing an action or a required parameter.');
    const handler = this.handlers[action];
    if (handler) return handler;
    // Wording of both ours.
    if (notEmulatedActions.has(action))
      throw new Ec2Error('UnsupportedOperation', `${action} is not emulated: this account has no attachments, instances or snapshots`);
    throw new Ec2Error('InvalidAction', `The action ${action} is not valid for this web service.`);
  }

  private readonly handlers: Record<string, Handler> = {
    DescribeAvailabilityZones: (p) => {
      if (p.structures('Filter').length > 0) throw new Ec2Error('InvalidParameterValue', 'Filters are not emulated for DescribeAvailabilityZones');
      const zones = this.ebs.describeAvailabilityZones({ zoneNames: p.list('ZoneName'), zoneIds: p.list('ZoneId'), dryRun: p.boolean('DryRun') });
      return {
        availabilityZoneInfo: zones.map((z) => ({
          zoneName: z.zoneName,
          zoneState: 'available',
          regionName: region,
          zoneId: z.zoneId,
          zoneType: 'availability-zone',
          optInStatus: 'opt-in-not-required',
          groupName: region,
          networkBorderGroup: region,
          messageSet: [],
        })),
      };
    },

    CreateVolume: (p, now) => {
      if (p.string('SnapshotId') !== undefined) throw new Ec2Error('UnsupportedOperation', 'Volumes from snapshots are not emulated');
      const tags = p
        .structures('TagSpecification')
        .filter((spec) => (spec.string('ResourceType') ?? 'volume') === 'volume')
        .flatMap((spec) => tagsIn(spec));
      const volume = this.ebs.createVolume(
        {
          volumeType: p.string('VolumeType'),
          sizeGiB: p.integer('Size'),
          iops: p.integer('Iops'),
          throughput: p.integer('Throughput'),
          availabilityZone: p.string('AvailabilityZone'),
          availabilityZoneId: p.string('AvailabilityZoneId'),
          encrypted: p.boolean('Encrypted'),
          kmsKeyId: p.string('KmsKeyId'),
          multiAttachEnabled: p.boolean('MultiAttachEnabled'),
          tags,
          clientToken: p.string('ClientToken'),
          dryRun: p.boolean('DryRun'),
        },
        now,
        newVolumeId(),
      );
      return volumeXml(volume);
    },

    DescribeVolumes: (p, now) => {
      const page = this.ebs.describeVolumes(describeRequest(p), now);
      return { volumeSet: page.items.map(volumeXml), nextToken: page.nextToken };
    },

    DeleteVolume: (p) => {
      const volumeId = p.requiredString('VolumeId');
      this.ebs.deleteVolume(volumeId, p.boolean('DryRun'));
      this.dir.removeBackingFile(volumeId);
      this.backingBytes.delete(volumeId);
      return { return: true };
    },

    CreateTags: (p) => {
      this.ebs.createTags(resourceIds(p), tagsIn(p), p.boolean('DryRun'));
      return { return: true };
    },

    DeleteTags: (p) => {
      const tags = p.structures('Tag').map((t) => ({ key: t.requiredString('Key'), value: t.string('Value') }));
      this.ebs.deleteTags(resourceIds(p), tags, p.boolean('DryRun'));
      return { return: true };
    },

    ModifyVolume: (p, now) => {
      const modification = this.ebs.modifyVolume(
        {
          volumeId: p.requiredString('VolumeId'),
          volumeType: p.string('VolumeType'),
          sizeGiB: p.integer('Size'),
          iops: p.integer('Iops'),
          throughput: p.integer('Throughput'),
          dryRun: p.boolean('DryRun'),
        },
        now,
      );
      return { volumeModification: modificationXml(modification) };
    },

    DescribeVolumesModifications: (p, now) => {
      const page = this.ebs.describeVolumesModifications(describeRequest(p), now);
      return { volumeModificationSet: page.items.map(modificationXml), nextToken: page.nextToken };
    },
  };

  private admin(url: URL, res: ServerResponse): void {
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(`${JSON.stringify(value, null, 1)}\n`);
    };
    const now = this.now();
    switch (url.pathname) {
      case '/_emulator/healthz':
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.end('ok\n');
        return;
      case '/_emulator/calls': {
        const action = url.searchParams.get('action');
        return json(
          200,
          this.dir.readCalls().filter((c) => !action || c.action === action),
        );
      }
      case '/_emulator/volumes':
        this.refreshTiming();
        this.syncBackingFiles(now);
        return json(
          200,
          this.ebs.state.volumes.map((volume) => {
            const latest = this.ebs.latestModification(volume.volumeId);
            return {
              ...this.ebs.viewVolume(volume, now),
              latestModification: latest && viewModification(latest, now),
              backingFile: this.dir.backingFile(volume.volumeId),
              backingFileBytes: this.dir.backingFileBytes(volume.volumeId),
              backingFileError: this.backingFailures.get(volume.volumeId),
            };
          }),
        );
      case '/_emulator/config':
        this.refreshTiming();
        return json(200, this.ebs.timing);
      default:
        return json(404, { error: `no admin endpoint ${url.pathname}; see test/cluster/ec2/main.ts` });
    }
  }
}

function describeRequest(p: QueryParams): DescribeRequest {
  return {
    ids: p.list('VolumeId'),
    filters: p.structures('Filter').map((f) => ({ name: f.requiredString('Name'), values: f.list('Value') })),
    maxResults: p.integer('MaxResults'),
    nextToken: p.string('NextToken'),
    dryRun: p.boolean('DryRun'),
  };
}

function resourceIds(p: QueryParams): string[] {
  const ids = p.list('ResourceId');
  // Wording ours.
  if (ids.length === 0) throw new Ec2Error('MissingParameter', 'The request must contain the parameter ResourceId.1');
  return ids;
}

/** Tag.N.Key / Tag.N.Value, a missing value being the empty one (as EC2 stores it). */
function tagsIn(p: QueryParams): Tag[] {
  return p.structures('Tag').map((t) => ({ key: t.requiredString('Key'), value: t.string('Value') ?? '' }));
}

/** vol- and 17 hexadecimal digits, the form of EC2's volume IDs since 2018. */
function newVolumeId(): string {
  return `vol-${randomBytes(9).toString('hex').slice(0, 17)}`;
}

function volumeIdsIn(params: Record<string, string>): string[] {
  return Object.entries(params)
    .filter(([name]) => /^(VolumeId(\.\d+)?|ResourceId\.\d+)$/.test(name))
    .map(([, value]) => value);
}

function internalError(err: unknown): Ec2Error {
  process.stderr.write(`ec2 emulator: ${err instanceof Error ? err.stack : String(err)}\n`);
  // The code and message EC2 answers for a fault of its own.
  return new Ec2Error('InternalError', 'An internal error has occurred');
}

function volumeXml(v: VolumeView): Record<string, XmlValue> {
  return {
    volumeId: v.volumeId,
    size: v.sizeGiB,
    availabilityZone: v.availabilityZone,
    availabilityZoneId: v.availabilityZoneId,
    status: v.state,
    createTime: new Date(v.createTime),
    attachmentSet: [],
    tagSet: v.tags.length > 0 ? v.tags.map((t) => ({ key: t.key, value: t.value })) : undefined,
    volumeType: v.volumeType,
    iops: v.iops,
    throughput: v.throughput,
    encrypted: v.encrypted,
    kmsKeyId: v.kmsKeyId,
    multiAttachEnabled: v.multiAttachEnabled,
  };
}

function modificationXml(m: ModificationView): Record<string, XmlValue> {
  return {
    volumeId: m.volumeId,
    modificationState: m.modificationState,
    targetSize: m.target.sizeGiB,
    targetIops: m.target.iops,
    targetVolumeType: m.target.volumeType,
    targetThroughput: m.target.throughput,
    originalSize: m.original.sizeGiB,
    originalIops: m.original.iops,
    originalVolumeType: m.original.volumeType,
    originalThroughput: m.original.throughput,
    progress: m.progress,
    startTime: new Date(m.startTime),
    endTime: m.endTime === undefined ? undefined : new Date(m.endTime),
  };
}
