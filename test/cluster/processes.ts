// Running commands and the cluster's long-lived daemons. Daemons are started detached with their
// output in logs/<name>.log and their PID (plus the kernel's start time, so a reused PID is never
// mistaken for ours) in run/<name>.pid; they are stopped by that PID, never by name.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { formatDuration } from './progress.ts';
import { paths } from './layout.ts';

export class ClusterError extends Error {
  override name = 'ClusterError';
}

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  input?: string;
  /** Called with each line of output as it arrives (for progress details). */
  onLine?: (line: string) => void;
  /** Fail after this long (default: never). */
  timeoutMs?: number;
}

/** Runs a command to completion; on failure throws with the command and the tail of its output. */
export async function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let out = '';
    let partial = '';
    const onData = (chunk: Buffer) => {
      const text = chunk.toString();
      out += text;
      if (opts.onLine) {
        const lines = (partial + text).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) if (line.trim()) opts.onLine(line);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          child.kill('SIGKILL');
        }, opts.timeoutMs)
      : undefined;
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new ClusterError(`cannot run ${cmd}: ${err.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolvePromise(out);
      const why = signal ? `killed by ${signal}${opts.timeoutMs ? ` (timeout ${formatDuration(opts.timeoutMs)})` : ''}` : `exit code ${code}`;
      reject(new ClusterError(`${cmd} ${args.join(' ')} failed (${why}):\n${tail(out, 25)}`));
    });
    if (child.stdin) {
      // A command that exits without reading its input must not crash us with EPIPE.
      child.stdin.on('error', () => undefined);
      child.stdin.end(opts.input);
    }
  });
}

export function tail(text: string, lines: number): string {
  return text
    .trimEnd()
    .split('\n')
    .slice(-lines)
    .map((l) => `    ${l}`)
    .join('\n');
}

export function logPath(name: string): string {
  return join(paths.logs, `${name}.log`);
}

export function logTail(name: string, lines = 20): string {
  const file = logPath(name);
  if (!existsSync(file)) return '    (no log)';
  return tail(readFileSync(file, 'utf8'), lines);
}

function pidFile(name: string): string {
  return join(paths.run, `${name}.pid`);
}

/** The kernel's start time of a process (field 22 of /proc/PID/stat), or undefined if gone. */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses; fields after it are plain.
    const afterName = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const state = afterName[0];
    if (state === 'Z' || state === 'X') return undefined;
    return afterName[19];
  } catch {
    return undefined;
  }
}

export interface DaemonSpec {
  name: string;
  binary: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
}

/** Starts a daemon detached from this process, so it outlives the `up` command. */
export function startDaemon(spec: DaemonSpec): number {
  mkdirSync(paths.logs, { recursive: true });
  mkdirSync(paths.run, { recursive: true });
  const fd = openSync(logPath(spec.name), 'a');
  writeFileSync(fd, `\n===== ${new Date().toISOString()} starting ${spec.binary} ${spec.args.join(' ')}\n`);
  const child = spawn(spec.binary, spec.args, {
    detached: true,
    stdio: ['ignore', fd, fd],
    env: { ...process.env, ...spec.env },
  });
  closeSync(fd);
  if (child.pid === undefined) throw new ClusterError(`${spec.name}: could not start ${spec.binary}`);
  child.unref();
  writeFileSync(pidFile(spec.name), `${child.pid} ${startTime(child.pid) ?? ''}\n`);
  return child.pid;
}

/** The PID of a daemon we started, if it is still that same process and alive. */
export function daemonPid(name: string): number | undefined {
  let raw: string;
  try {
    raw = readFileSync(pidFile(name), 'utf8');
  } catch {
    return undefined;
  }
  const [pidText, started] = raw.trim().split(' ');
  const pid = Number(pidText);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  const now = startTime(pid);
  if (now === undefined || (started && now !== started)) return undefined;
  return pid;
}

/** Stops a daemon by its recorded PID: SIGTERM, then SIGKILL after the grace period. */
export async function stopDaemon(name: string, graceMs = 10_000): Promise<boolean> {
  const pid = daemonPid(name);
  rmSync(pidFile(name), { force: true });
  if (pid === undefined) return false;
  return stopPid(pid, graceMs);
}

export async function stopPid(pid: number, graceMs = 10_000): Promise<boolean> {
  const started = startTime(pid);
  if (started === undefined) return false;
  const sameProcess = () => startTime(pid) === started;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return false;
  }
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!sameProcess()) return true;
    await sleep(100);
  }
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
  while (sameProcess()) await sleep(50);
  return true;
}

/** Kills a daemon at once with SIGKILL (crash simulation for tests); returns the PID it killed. */
export async function killDaemon(name: string): Promise<number | undefined> {
  const pid = daemonPid(name);
  if (pid === undefined) return undefined;
  const started = startTime(pid);
  process.kill(pid, 'SIGKILL');
  while (startTime(pid) === started) await sleep(50);
  rmSync(pidFile(name), { force: true });
  return pid;
}

export interface WaitOptions {
  what: string;
  timeoutMs: number;
  /** The daemon whose death ends the wait early, with its log. */
  daemon?: string;
  intervalMs?: number;
}

/** Polls until check() is true; fails fast with the log tail if the daemon dies meanwhile. */
export async function waitFor(check: () => Promise<boolean> | boolean, opts: WaitOptions): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastError = '';
  for (;;) {
    try {
      if (await check()) return;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    if (opts.daemon && daemonPid(opts.daemon) === undefined) {
      throw new ClusterError(`${opts.daemon} exited while waiting for ${opts.what}. Last lines of ${logPath(opts.daemon)}:\n${logTail(opts.daemon)}`);
    }
    if (Date.now() > deadline) {
      const log = opts.daemon ? `\nLast lines of ${logPath(opts.daemon)}:\n${logTail(opts.daemon)}` : '';
      throw new ClusterError(
        `timed out after ${formatDuration(opts.timeoutMs)} waiting for ${opts.what}${lastError ? ` (last error: ${lastError})` : ''}${log}`,
      );
    }
    await sleep(opts.intervalMs ?? 250);
  }
}
