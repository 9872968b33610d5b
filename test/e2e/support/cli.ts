// The pvx command run as a process, as a user or a script runs it (spawned, so the event loop
// stays free for the test's own calls): its exit code and both outputs, complete.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

export const mainScript = resolve(import.meta.dirname, '..', '..', '..', 'src', 'cli', 'main.ts');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `pvx ARGS`, killed after timeoutMs (a hung command fails the test instead of outliving it). */
export function runPvx(args: string[], timeoutMs = 60_000): Promise<CliResult> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [mainScript, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    // 'close', not 'exit': the output is complete only once the pipes have drained.
    child.once('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}
