// The EC2 emulator's state directory: everything it keeps across restarts, and what tests read.
//
//   state.json      the emulated account (volumes, modification history), rewritten after each change
//   config.json     optional timing overrides, re-read whenever it changes (see main.ts)
//   calls.jsonl     one JSON line per EC2 call
//   volumes/<volume-id>.img
//                   each volume's backing data: a sparse file of the volume's usable size
import {
  appendFileSync,
  closeSync,
  existsSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { emptyState, type EbsState, type Timing } from './ebs.ts';

export interface CallRecord {
  time: string;
  requestId: string;
  action: string;
  volumeIds: string[];
  /** Every parameter of the request but Action and Version. */
  params: Record<string, string>;
  httpStatus: number;
  /** `ok`, or the EC2 error code answered. */
  result: string;
  message?: string;
}

export class StateDir {
  readonly root: string;
  readonly volumesDir: string;
  readonly configPath: string;
  private readonly statePath: string;
  private readonly callsPath: string;

  constructor(root: string) {
    this.root = root;
    this.volumesDir = join(root, 'volumes');
    this.configPath = join(root, 'config.json');
    this.statePath = join(root, 'state.json');
    this.callsPath = join(root, 'calls.jsonl');
    mkdirSync(this.volumesDir, { recursive: true });
  }

  loadState(): EbsState {
    if (!existsSync(this.statePath)) return emptyState();
    return JSON.parse(readFileSync(this.statePath, 'utf8')) as EbsState;
  }

  /** Written aside and renamed, so a crash leaves the previous state rather than half of one. */
  saveState(state: EbsState): void {
    const partial = `${this.statePath}.partial`;
    writeFileSync(partial, `${JSON.stringify(state, null, 1)}\n`);
    renameSync(partial, this.statePath);
  }

  /** When config.json last changed (undefined: there is none), to re-read it only then. */
  configVersion(): number | undefined {
    return existsSync(this.configPath) ? statSync(this.configPath).mtimeMs : undefined;
  }

  readTimingOverrides(): Partial<Timing> {
    if (!existsSync(this.configPath)) return {};
    return parseTimingOverrides(JSON.parse(readFileSync(this.configPath, 'utf8')), this.configPath);
  }

  appendCall(record: CallRecord): void {
    appendFileSync(this.callsPath, `${JSON.stringify(record)}\n`);
  }

  readCalls(): CallRecord[] {
    if (!existsSync(this.callsPath)) return [];
    return readFileSync(this.callsPath, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as CallRecord);
  }

  backingFile(volumeId: string): string {
    return join(this.volumesDir, `${volumeId}.img`);
  }

  backingFileBytes(volumeId: string): number | undefined {
    const file = this.backingFile(volumeId);
    return existsSync(file) ? statSync(file).size : undefined;
  }

  /** Creates or grows the file to `bytes` with ftruncate, so it stays sparse; never shrinks it. */
  growBackingFile(volumeId: string, bytes: number): void {
    const fd = openSync(this.backingFile(volumeId), 'a');
    try {
      if (fstatSync(fd).size < bytes) ftruncateSync(fd, bytes);
    } finally {
      closeSync(fd);
    }
  }

  removeBackingFile(volumeId: string): void {
    rmSync(this.backingFile(volumeId), { force: true });
  }
}

const timingLimits: Record<keyof Timing, { integer: boolean; min: number }> = {
  creatingSeconds: { integer: false, min: 0 },
  modifyingSeconds: { integer: false, min: 0 },
  optimizingSeconds: { integer: false, min: 0 },
  modificationWindowSeconds: { integer: false, min: 0 },
  modificationsPerWindow: { integer: true, min: 1 },
};

/** Checks timing settings from a flag or config.json; `source` names where they came from. */
export function parseTimingOverrides(value: unknown, source: string): Partial<Timing> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${source}: expected a JSON object`);
  const overrides: Partial<Timing> = {};
  for (const [key, setting] of Object.entries(value)) {
    const limits = timingLimits[key as keyof Timing] as (typeof timingLimits)[keyof Timing] | undefined;
    if (!limits) throw new Error(`${source}: unknown setting ${key}; known: ${Object.keys(timingLimits).join(', ')}`);
    if (typeof setting !== 'number' || !Number.isFinite(setting) || setting < limits.min || (limits.integer && !Number.isInteger(setting))) {
      throw new Error(`${source}: ${key} must be ${limits.integer ? 'an integer' : 'a number'} of at least ${limits.min}, not ${JSON.stringify(setting)}`);
    }
    overrides[key as keyof Timing] = setting;
  }
  return overrides;
}
