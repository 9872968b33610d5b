// The Compute Engine emulator's HTTP server: the REST calls the GCE PD CSI driver's controller
// makes under /compute/v1/ and /compute/beta/ (both versions answer alike), the OAuth token
// endpoint its service-account credentials name, and the admin endpoints tests use. The rules
// are in disks.ts; main.ts documents the process as a whole.
import { randomBytes } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody, serve, type RunningServer } from '../emulator-http.ts';
import { dirname, join } from 'node:path';
import { ComputeError, defaultRules, newDisk, resized, updated, parseGb, type Disk, type Rules } from './disks.ts';

const GiB = 1024 ** 3;

/** A failure the next matching calls get, set by a test through /_emulator/config. */
export interface Fault {
  /** disks.insert, disks.resize, disks.update or disks.delete. */
  call: string;
  /** Only calls for this disk; absent: any. */
  disk?: string;
  /** How many calls it fails (then it is gone) … */
  times?: number;
  /** … or for how long from when it is set, every matching call (a limit that lasts, as Compute Engine's do). */
  seconds?: number;
  /** Set by the emulator from `seconds`: epoch ms the fault ends. */
  until?: number;
  /** The operation ends DONE with this error (Compute Engine's operation error codes, e.g. RESOURCE_OPERATION_RATE_EXCEEDED) … */
  operationError?: { code: string; message: string };
  /** … or the call itself is answered with this HTTP error. */
  httpError?: { status: number; reason: string; message: string };
}

export interface EmulatorConfig extends Rules {
  faults: Fault[];
}

export interface CallRecord {
  time: string;
  method: string;
  /** disks.get, disks.insert, disks.resize, disks.update, disks.delete, zoneOperations.wait, … */
  call: string;
  disk?: string;
  /** The request body, for calls that change something. */
  body?: unknown;
  /** disks.update's field mask. */
  paths?: string[];
  httpStatus: number;
  /** `ok`, the error reason answered, or `operation:<code>` for a failed operation. */
  result: string;
  message?: string;
}

export interface EmulatorOptions {
  host: string;
  port: number;
  stateDir: string;
  project: string;
  now?: () => number;
}

/** The running emulator: its url is what the driver's --compute-endpoint points at. */
export type RunningEmulator = RunningServer;

export async function startComputeEmulator(options: EmulatorOptions): Promise<RunningEmulator> {
  const emulator = new ComputeEmulator(options);
  return serve('compute emulator', options, (req, res) => emulator.handle(req, res));
}

interface Operation {
  name: string;
  zone: string;
  operationType: string;
  targetLink: string;
  error?: { code: string; message: string };
  time: string;
}

interface Answer {
  status: number;
  body: unknown;
  call: string;
  disk?: string;
  result?: string;
  message?: string;
  mutated?: boolean;
}

const routePattern = /^\/compute\/(v1|beta)\/projects\/([^/]+)\/zones(?:\/([^/]+)(?:\/(disks|operations)(?:\/([^/]+)(?:\/(resize|wait))?)?)?)?$/;

export class ComputeEmulator {
  private readonly now: () => number;
  private readonly statePath: string;
  private readonly callsPath: string;
  /** Each disk's backing image: DIR/images/projects/P/zones/Z/disks/NAME.img, its volume handle's path. */
  readonly imagesDir: string;
  private disks = new Map<string, Disk>();
  private readonly operations = new Map<string, Operation>();
  private config: EmulatorConfig = { ...defaultRules, faults: [] };

  private readonly options: EmulatorOptions;

  constructor(options: EmulatorOptions) {
    this.options = options;
    this.now = options.now ?? Date.now;
    this.statePath = join(options.stateDir, 'state.json');
    this.callsPath = join(options.stateDir, 'calls.jsonl');
    this.imagesDir = join(options.stateDir, 'images');
    mkdirSync(this.imagesDir, { recursive: true });
    if (existsSync(this.statePath)) {
      const saved = JSON.parse(readFileSync(this.statePath, 'utf8')) as { disks: Disk[] };
      this.disks = new Map(saved.disks.map((d) => [`${d.zone}/${d.name}`, d]));
    }
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const text = await readBody(req);
    if (url.pathname.startsWith('/_emulator/')) return this.admin(req.method ?? 'GET', url, text, res);
    if (url.pathname === '/token' && req.method === 'POST') {
      // The credentials' token_uri: any assertion gets a token (the API calls check only that one is sent).
      return send(res, 200, { access_token: `pvx-emulated-${randomBytes(8).toString('hex')}`, token_type: 'Bearer', expires_in: 3600 });
    }
    const base = `http://${req.headers.host ?? 'emulator'}`;
    let answer: Answer;
    try {
      if (!/^Bearer \S+/.test(req.headers.authorization ?? ''))
        throw new ComputeError(401, 'required', 'Request is missing required authentication credential.');
      answer = this.route(req.method ?? 'GET', url, text ? (JSON.parse(text) as Record<string, unknown>) : {}, base);
    } catch (err) {
      const e = err instanceof ComputeError ? err : new ComputeError(400, 'parseError', err instanceof Error ? err.message : String(err));
      const disk = routePattern.exec(url.pathname)?.[5];
      answer = {
        status: e.httpStatus,
        call: callName(req.method ?? 'GET', url.pathname),
        ...(disk ? { disk } : {}),
        result: e.reason,
        message: e.message,
        body: errorBody(e),
      };
    }
    if (answer.mutated) this.save();
    this.record({ req, url, text, answer });
    send(res, answer.status, answer.body);
  }

  private route(method: string, url: URL, body: Record<string, unknown>, base: string): Answer {
    const m = routePattern.exec(url.pathname);
    if (!m) throw new ComputeError(404, 'notFound', `The emulator does not serve ${method} ${url.pathname}`);
    const [, , project, zone, collection, name, verb] = m as unknown as [string, string, string, string?, string?, string?, string?];
    if (project !== this.options.project) throw new ComputeError(404, 'notFound', `The resource 'projects/${project}' was not found`);
    const self = (path: string) => `${base}/compute/v1/projects/${project}/${path}`;
    if (!zone) return { status: 200, call: 'zones.list', body: { kind: 'compute#zoneList', items: [] } };
    if (!collection) return { status: 200, call: 'zones.get', body: { kind: 'compute#zone', name: zone, status: 'UP', selfLink: self(`zones/${zone}`) } };
    if (collection === 'operations') return this.operation(zone, name, self);
    if (!name) {
      if (method === 'POST') return this.insert(zone, body, self);
      return { status: 200, call: 'disks.list', body: { kind: 'compute#diskList', items: this.zoneDisks(zone).map((d) => diskJson(d, self)) } };
    }
    const key = `${zone}/${name}`;
    const disk = this.disks.get(key);
    if (!disk) throw new ComputeError(404, 'notFound', `The resource 'projects/${project}/zones/${zone}/disks/${name}' was not found`);
    if (verb === 'resize' && method === 'POST') return this.change('disks.resize', disk, self, () => resized(disk, parseGb(body.sizeGb, 'sizeGb')));
    if (!verb && method === 'PATCH')
      return this.change('disks.update', disk, self, () => updated(disk, url.searchParams.getAll('paths'), body, this.config, this.now()));
    if (!verb && method === 'DELETE') return this.remove(disk, self);
    if (!verb && method === 'GET') return { status: 200, call: 'disks.get', disk: name, body: diskJson(disk, self) };
    throw new ComputeError(405, 'badRequest', `${method} ${url.pathname} is not a disks method`);
  }

  private zoneDisks(zone: string): Disk[] {
    return [...this.disks.values()].filter((d) => d.zone === zone);
  }

  private insert(zone: string, body: Record<string, unknown>, self: (p: string) => string): Answer {
    const name = typeof body.name === 'string' ? body.name : undefined;
    const fault = this.takeFault('disks.insert', name);
    const byName = new Map(this.zoneDisks(zone).map((d) => [d.name, d]));
    const disk = newDisk(zone, body, byName, this.now());
    if (!fault?.operationError) {
      this.disks.set(`${zone}/${disk.name}`, disk);
      this.backImage(disk);
    }
    return { status: 200, call: 'disks.insert', disk: disk.name, mutated: true, ...this.startOperation('insert', disk, self, fault) };
  }

  /** A resize or update: applied unless a fault fails its operation; the answer is the operation. */
  private change(call: string, disk: Disk, self: (p: string) => string, apply: () => Disk): Answer {
    const fault = this.takeFault(call, disk.name);
    const next = apply();
    if (!fault?.operationError) {
      this.disks.set(`${disk.zone}/${disk.name}`, next);
      this.backImage(next);
    }
    return { status: 200, call, disk: disk.name, mutated: true, ...this.startOperation(call.split('.')[1] as string, disk, self, fault) };
  }

  private remove(disk: Disk, self: (p: string) => string): Answer {
    const fault = this.takeFault('disks.delete', disk.name);
    if (!fault?.operationError) {
      this.disks.delete(`${disk.zone}/${disk.name}`);
      rmSync(this.imagePath(disk), { force: true });
    }
    return { status: 200, call: 'disks.delete', disk: disk.name, mutated: true, ...this.startOperation('delete', disk, self, fault) };
  }

  /** Operations finish at once: what the driver waits for is already DONE, with the fault's error if one was set. */
  private startOperation(type: string, disk: Disk, self: (p: string) => string, fault: Fault | undefined): Pick<Answer, 'body' | 'result' | 'message'> {
    const op: Operation = {
      name: `operation-${this.now()}-${randomBytes(6).toString('hex')}`,
      zone: disk.zone,
      operationType: type,
      targetLink: self(`zones/${disk.zone}/disks/${disk.name}`),
      ...(fault?.operationError ? { error: fault.operationError } : {}),
      time: new Date(this.now()).toISOString(),
    };
    this.operations.set(`${disk.zone}/${op.name}`, op);
    return {
      body: operationJson(op, self),
      ...(op.error ? { result: `operation:${op.error.code}`, message: op.error.message } : {}),
    };
  }

  private operation(zone: string, name: string | undefined, self: (p: string) => string): Answer {
    const op = name ? this.operations.get(`${zone}/${name}`) : undefined;
    if (!op) throw new ComputeError(404, 'notFound', `The resource 'operations/${name ?? ''}' was not found`);
    return { status: 200, call: 'zoneOperations.wait', body: operationJson(op, self) };
  }

  /** The fault this call meets, if any: one answering on the call itself is thrown here; one failing its operation is returned. */
  private takeFault(call: string, disk: string | undefined): Fault | undefined {
    const now = this.now();
    const live = (f: Fault) => (f.until !== undefined ? now < f.until : (f.times ?? 0) > 0);
    this.config.faults = this.config.faults.filter(live);
    const fault = this.config.faults.find((f) => f.call === call && (f.disk === undefined || f.disk === disk));
    if (fault?.times !== undefined) fault.times -= 1;
    if (fault?.httpError) throw new ComputeError(fault.httpError.status, fault.httpError.reason, fault.httpError.message);
    return fault;
  }

  imagePath(disk: Disk): string {
    return join(this.imagesDir, 'projects', this.options.project, 'zones', disk.zone, 'disks', `${disk.name}.img`);
  }

  /** The disk's data as a sparse file of its size, which the node half mounts. */
  private backImage(disk: Disk): void {
    const path = this.imagePath(disk);
    mkdirSync(dirname(path), { recursive: true });
    if (!existsSync(path)) writeFileSync(path, '');
    truncateSync(path, disk.sizeGb * GiB);
  }

  private save(): void {
    const tmp = `${this.statePath}.tmp`;
    writeFileSync(tmp, JSON.stringify({ disks: [...this.disks.values()] }, null, 1));
    renameSync(tmp, this.statePath);
  }

  private record({ req, url, text, answer }: { req: IncomingMessage; url: URL; text: string; answer: Answer }): void {
    const paths = url.searchParams.getAll('paths');
    const line: CallRecord = {
      time: new Date(this.now()).toISOString(),
      method: req.method ?? 'GET',
      call: answer.call,
      ...(answer.disk ? { disk: answer.disk } : {}),
      ...(text && req.method !== 'GET' ? { body: safeJson(text) } : {}),
      ...(paths.length ? { paths } : {}),
      httpStatus: answer.status,
      result: answer.result ?? 'ok',
      ...(answer.message ? { message: answer.message } : {}),
    };
    appendFileSync(this.callsPath, `${JSON.stringify(line)}\n`);
  }

  private admin(method: string, url: URL, text: string, res: ServerResponse): void {
    const what = url.pathname.slice('/_emulator/'.length);
    if (what === 'healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
      return;
    }
    if (what === 'calls') {
      const lines = existsSync(this.callsPath) ? readFileSync(this.callsPath, 'utf8').split('\n').filter(Boolean) : [];
      const calls = lines.map((l) => JSON.parse(l) as CallRecord);
      const only = url.searchParams.get('call');
      return send(res, 200, only ? calls.filter((c) => c.call === only) : calls);
    }
    if (what === 'disks')
      return send(
        res,
        200,
        [...this.disks.values()].map((d) => ({ ...d, image: this.imagePath(d) })),
      );
    if (what === 'config' && method === 'GET') return send(res, 200, this.config);
    if (what === 'config' && method === 'POST') {
      try {
        this.config = { ...this.config, ...parseConfig(JSON.parse(text), this.now()) };
      } catch (err) {
        return send(res, 400, { error: err instanceof Error ? err.message : String(err) });
      }
      return send(res, 200, this.config);
    }
    send(res, 404, { error: `no admin endpoint ${method} /_emulator/${what}` });
  }
}

/** A config change from a test at `now`: rules as numbers, faults as listed (one of times or seconds each); anything else is an error. */
export function parseConfig(value: unknown, now: number): Partial<EmulatorConfig> {
  if (typeof value !== 'object' || value === null) throw new Error('config: expected a JSON object');
  const out: Partial<EmulatorConfig> = {};
  for (const [k, v] of Object.entries(value)) {
    if (k === 'performanceChangesPerWindow' || k === 'performanceWindowSeconds') {
      if (typeof v !== 'number' || !(v >= 0)) throw new Error(`config: ${k} must be a number ≥ 0`);
      out[k] = v;
    } else if (k === 'faults') {
      const valid = (f: Fault) =>
        typeof f?.call === 'string' &&
        Number.isInteger(f.times) !== (typeof f.seconds === 'number' && f.seconds > 0) &&
        Boolean(f.operationError || f.httpError);
      if (!Array.isArray(v) || !v.every(valid)) throw new Error('config: faults must be [{call, times | seconds, operationError | httpError, disk?}]');
      out.faults = (v as Fault[]).map((f) => (f.seconds !== undefined ? { ...f, until: now + f.seconds * 1000 } : f));
    } else throw new Error(`config: unknown setting ${k}`);
  }
  return out;
}

function diskJson(d: Disk, self: (p: string) => string) {
  return {
    kind: 'compute#disk',
    name: d.name,
    zone: self(`zones/${d.zone}`),
    // int64 fields are strings in Compute Engine's JSON.
    sizeGb: String(d.sizeGb),
    type: self(`zones/${d.zone}/diskTypes/${d.type}`),
    status: 'READY',
    selfLink: self(`zones/${d.zone}/disks/${d.name}`),
    creationTimestamp: new Date(d.createdAt).toISOString(),
    labels: d.labels,
    ...(d.description ? { description: d.description } : {}),
    ...(d.accessMode ? { accessMode: d.accessMode } : {}),
    ...(d.provisionedIops !== undefined ? { provisionedIops: String(d.provisionedIops) } : {}),
    ...(d.provisionedThroughput !== undefined ? { provisionedThroughput: String(d.provisionedThroughput) } : {}),
  };
}

function operationJson(op: Operation, self: (p: string) => string) {
  return {
    kind: 'compute#operation',
    name: op.name,
    zone: self(`zones/${op.zone}`),
    operationType: op.operationType,
    targetLink: op.targetLink,
    status: 'DONE',
    progress: 100,
    insertTime: op.time,
    startTime: op.time,
    endTime: op.time,
    selfLink: self(`zones/${op.zone}/operations/${op.name}`),
    ...(op.error ? { error: { errors: [op.error] } } : {}),
  };
}

function errorBody(e: ComputeError) {
  return { error: { code: e.httpStatus, message: e.message, errors: [{ message: e.message, domain: 'global', reason: e.reason }] } };
}

function callName(method: string, path: string): string {
  const m = routePattern.exec(path);
  if (!m) return `${method} ${path}`;
  const [, , , zone, collection, name, verb] = m;
  if (!zone) return 'zones.list';
  if (!collection) return 'zones.get';
  if (collection === 'operations') return 'zoneOperations.wait';
  if (verb) return `disks.${verb}`;
  if (!name) return method === 'POST' ? 'disks.insert' : 'disks.list';
  return { GET: 'disks.get', PATCH: 'disks.update', DELETE: 'disks.delete' }[method] ?? `disks.${method}`;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' });
  res.end(JSON.stringify(body));
}
