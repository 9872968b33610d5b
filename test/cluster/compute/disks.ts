// Compute Engine's rules for zonal disks, as the emulator applies them: sizes per disk type, what
// may change, and how often a Hyperdisk's performance may change. Pure: the HTTP server
// (server.ts) turns each ComputeError into Compute Engine's JSON error, each operation failure into
// a DONE operation carrying it. Each rule names the page it follows; where Google's text is not
// known, the emulator's own words say so.

export interface DiskTypeRule {
  /** Smallest and largest size in GB (Compute Engine's GB are GiB: the driver sends whole GiB). */
  minGb: number;
  maxGb: number;
  /** Performance fields the type provisions, and their defaults when the insert names none. */
  defaultIops?: number;
  defaultThroughput?: number;
}

/**
 * Sizes per type. PD: https://cloud.google.com/compute/docs/disks ("Minimum capacity per disk 10 GB
 * … Maximum capacity per disk 64 TB"); Hyperdisk: the hd-types pages (Balanced 4 GiB–64 TiB,
 * Extreme 64 GiB–64 TiB, Throughput 2–32 TiB, ML 4 GiB–64 TiB). pd-extreme's 500 GB minimum is
 * the driver's own e2e size (defaultExtremeSizeGb). Default performance: Hyperdisk Balanced 3,000
 * IOPS and 140 MiB/s ("baseline"), Throughput 10 MiB/s per TiB.
 */
export const diskTypes: Readonly<Record<string, DiskTypeRule>> = {
  'pd-standard': { minGb: 10, maxGb: 65_536 },
  'pd-balanced': { minGb: 10, maxGb: 65_536 },
  'pd-ssd': { minGb: 10, maxGb: 65_536 },
  'pd-extreme': { minGb: 500, maxGb: 65_536, defaultIops: 2_500 },
  'hyperdisk-balanced': { minGb: 4, maxGb: 65_536, defaultIops: 3_000, defaultThroughput: 140 },
  'hyperdisk-extreme': { minGb: 64, maxGb: 65_536, defaultIops: 2_500 },
  'hyperdisk-throughput': { minGb: 2_048, maxGb: 32_768, defaultThroughput: 20 },
  'hyperdisk-ml': { minGb: 4, maxGb: 65_536, defaultThroughput: 400 },
};

export const isHyperdisk = (type: string): boolean => type.startsWith('hyperdisk-');

export interface Disk {
  name: string;
  zone: string;
  type: string;
  sizeGb: number;
  provisionedIops?: number;
  provisionedThroughput?: number;
  labels: Record<string, string>;
  description?: string;
  accessMode?: string;
  /** Epoch ms. */
  createdAt: number;
  /** When its provisioned IOPS or throughput changed after creation (epoch ms), oldest first. */
  performanceChanges: number[];
}

export interface Rules {
  /** How many IOPS/throughput changes a Hyperdisk allows per window (Google: one per 4 hours). */
  performanceChangesPerWindow: number;
  performanceWindowSeconds: number;
}

/**
 * https://cloud.google.com/compute/docs/disks/hyperdisks: "You can adjust provisioned IOPS,
 * throughput, and the size of a volume … once every 4 hours."
 */
export const defaultRules: Rules = { performanceChangesPerWindow: 1, performanceWindowSeconds: 4 * 3600 };

/** An answer Compute Engine gives on the call itself: HTTP status, the `reason` of errors[0], the message. */
export class ComputeError extends Error {
  readonly httpStatus: number;
  readonly reason: string;
  constructor(httpStatus: number, reason: string, message: string) {
    super(message);
    this.httpStatus = httpStatus;
    this.reason = reason;
  }
}

const invalid = (message: string) => new ComputeError(400, 'invalid', message);

/** The type's rule, from a type name or a diskTypes URL (…/zones/Z/diskTypes/NAME). */
export function typeRule(typeOrUrl: string): [string, DiskTypeRule] {
  const type = typeOrUrl.split('/').at(-1) ?? '';
  const rule = diskTypes[type];
  if (!rule) throw new ComputeError(404, 'notFound', `The resource 'diskTypes/${type}' was not found`);
  return [type, rule];
}

/** A whole number of GB from the JSON's int64 string (or number). */
export function parseGb(value: unknown, field: string): number {
  const n = typeof value === 'string' ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n <= 0)
    throw invalid(`Invalid value for field '${field}': '${String(value)}'. Must be greater than 0.`);
  return n;
}

function checkSize(type: string, rule: DiskTypeRule, sizeGb: number): void {
  if (sizeGb < rule.minGb || sizeGb > rule.maxGb) {
    // Emulator's wording: Compute Engine's exact text for an out-of-range size is not known here.
    throw invalid(`Invalid value for field 'resource.sizeGb': '${sizeGb}'. Disk size of type ${type} must be between ${rule.minGb} GB and ${rule.maxGb} GB.`);
  }
}

export interface InsertRequest {
  name?: unknown;
  sizeGb?: unknown;
  type?: unknown;
  provisionedIops?: unknown;
  provisionedThroughput?: unknown;
  labels?: unknown;
  description?: unknown;
  accessMode?: unknown;
}

/** disks.insert: the disk it makes, or why not. */
export function newDisk(zone: string, req: InsertRequest, existing: ReadonlyMap<string, Disk>, now: number): Disk {
  if (typeof req.name !== 'string' || !/^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$/.test(req.name))
    throw invalid(`Invalid value for field 'resource.name': '${String(req.name)}'.`);
  if (existing.has(req.name)) throw new ComputeError(409, 'alreadyExists', `The resource 'projects/-/zones/${zone}/disks/${req.name}' already exists`);
  const [type, rule] = typeRule(typeof req.type === 'string' ? req.type : 'pd-standard');
  const sizeGb = parseGb(req.sizeGb ?? 500, 'resource.sizeGb');
  checkSize(type, rule, sizeGb);
  const iops = req.provisionedIops !== undefined ? parseGb(req.provisionedIops, 'resource.provisionedIops') : rule.defaultIops;
  const throughput = req.provisionedThroughput !== undefined ? parseGb(req.provisionedThroughput, 'resource.provisionedThroughput') : rule.defaultThroughput;
  return {
    name: req.name,
    zone,
    type,
    sizeGb,
    ...(iops !== undefined ? { provisionedIops: iops } : {}),
    ...(throughput !== undefined ? { provisionedThroughput: throughput } : {}),
    labels: typeof req.labels === 'object' && req.labels !== null ? (req.labels as Record<string, string>) : {},
    ...(typeof req.description === 'string' ? { description: req.description } : {}),
    ...(typeof req.accessMode === 'string' ? { accessMode: req.accessMode } : {}),
    createdAt: now,
    performanceChanges: [],
  };
}

/** disks.resize: the disk grown, or why not ("Compute Engine lets you only increase the size of a disk"). */
export function resized(disk: Disk, sizeGb: number): Disk {
  if (sizeGb <= disk.sizeGb)
    throw invalid(`Invalid value for field 'sizeGb': '${sizeGb}'. New disk size '${sizeGb}' GB must be larger than existing size '${disk.sizeGb}' GB.`);
  checkSize(disk.type, diskTypes[disk.type] as DiskTypeRule, sizeGb);
  return { ...disk, sizeGb };
}

export interface UpdateRequest {
  sizeGb?: unknown;
  provisionedIops?: unknown;
  provisionedThroughput?: unknown;
  accessMode?: unknown;
}

/** When the window next frees a performance change of this disk (epoch ms), if it is spent at `now`. */
export function nextPerformanceChangeAt(disk: Disk, rules: Rules, now: number): number | undefined {
  const windowMs = rules.performanceWindowSeconds * 1000;
  const inWindow = disk.performanceChanges.filter((t) => t > now - windowMs);
  if (inWindow.length < rules.performanceChangesPerWindow) return undefined;
  return (inWindow[inWindow.length - rules.performanceChangesPerWindow] as number) + windowMs;
}

/** disks.update with its `paths`: the disk changed, or why not. A change of IOPS or throughput spends the Hyperdisk's window. */
export function updated(disk: Disk, paths: readonly string[], req: UpdateRequest, rules: Rules, now: number): Disk {
  let next: Disk = { ...disk };
  for (const path of paths) {
    if (path === 'sizeGb') next = resized(next, parseGb(req.sizeGb, 'resource.sizeGb'));
    else if (path === 'provisionedIops' || path === 'provisionedThroughput') {
      if (!isHyperdisk(disk.type)) throw invalid(`Invalid value for field 'resource.${path}': disk type ${disk.type} does not support changing it.`);
      next = { ...next, [path]: parseGb(req[path], `resource.${path}`) };
    } else if (path === 'accessMode') next = { ...next, ...(typeof req.accessMode === 'string' ? { accessMode: req.accessMode } : {}) };
    else throw invalid(`Invalid value for field 'paths': '${path}'.`);
  }
  const performanceChanged = next.provisionedIops !== disk.provisionedIops || next.provisionedThroughput !== disk.provisionedThroughput;
  if (!performanceChanged) return next;
  const nextAt = nextPerformanceChangeAt(disk, rules, now);
  if (nextAt !== undefined) {
    // Emulator's wording: the page states the rule, not the error Compute Engine answers with.
    throw invalid(
      `Cannot update provisioned IOPS or throughput of disk '${disk.name}': Hyperdisk performance may change ${rules.performanceChangesPerWindow} time(s) every ${rules.performanceWindowSeconds} s; next allowed at ${new Date(nextAt).toISOString()}.`,
    );
  }
  return { ...next, performanceChanges: [...disk.performanceChanges, now] };
}
