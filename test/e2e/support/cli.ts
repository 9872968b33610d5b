// The pvx command run as a process, as a user or a script runs it (spawned, no TTY, so the event
// loop stays free for the test's own calls): its exit code, how long it ran, and both outputs.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

export const mainScript = resolve(import.meta.dirname, '..', '..', '..', 'src', 'cli', 'main.ts');

export interface CliResult {
  code: number | null;
  /** From the start to the exit, in milliseconds. */
  ms: number;
  stdout: string;
  stderr: string;
}

export interface CliRun {
  /** Output so far; complete once `exited` resolved. */
  stdout: string;
  stderr: string;
  exited: Promise<{ code: number | null; ms: number }>;
}

/** Starts `pvx ARGS`, its output read while it runs; killed after timeoutMs (a hung command fails the test instead of outliving it). */
export function startCli(args: string[], timeoutMs = 60_000): CliRun {
  const started = Date.now();
  const child = spawn(process.execPath, [mainScript, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const run: CliRun = {
    stdout: '',
    stderr: '',
    exited: new Promise((resolvePromise, reject) => {
      child.once('error', reject);
      // 'close', not 'exit': the output is complete only once the pipes have drained.
      child.once('close', (code) => {
        clearTimeout(timer);
        resolvePromise({ code, ms: Date.now() - started });
      });
    }),
  };
  child.stdout.on('data', (c: Buffer) => (run.stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (run.stderr += c.toString()));
  return run;
}

/** `pvx ARGS` to its end. */
export async function runPvx(args: string[], timeoutMs = 60_000): Promise<CliResult> {
  const run = startCli(args, timeoutMs);
  const { code, ms } = await run.exited;
  return { code, ms, stdout: run.stdout, stderr: run.stderr };
}
