// Runs `pvx run` as a child process for e2e tests and reads its endpoints.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, closeSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { e2eEnv } from './env.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..', '..');
export const e2eLogDir = join(repoRoot, '.e2e-logs');

let nextPort = 18_100 + Math.floor(Math.random() * 500);

export interface PvxProcess {
  name: string;
  port: number;
  child: ChildProcess;
  logFile: string;
  exited: Promise<number | null>;
  get(path: string): Promise<{ status: number; body: string }>;
  metric(name: string, labels?: Record<string, string>): Promise<number | undefined>;
  kill(signal: NodeJS.Signals): void;
  logTail(lines?: number): string;
}

export function startPvx(name: string, args: string[], kubeconfig = e2eEnv.kubeconfig): PvxProcess {
  mkdirSync(e2eLogDir, { recursive: true });
  const port = nextPort++;
  const logFile = join(e2eLogDir, `${name}-${Date.now()}.log`);
  const fd = openSync(logFile, 'a');
  const child = spawn(
    process.execPath,
    [join(repoRoot, 'src', 'cli', 'main.ts'), 'run', '--kubeconfig', kubeconfig, '--metrics-bind-address', `127.0.0.1:${port}`, '--identity', name, '--enable-debug-endpoints', ...args],
    { stdio: ['ignore', fd, fd] },
  );
  closeSync(fd);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5000) });
    return { status: res.status, body: await res.text() };
  };
  return {
    name,
    port,
    child,
    logFile,
    exited,
    get,
    async metric(metric, labels = {}) {
      const { body } = await get('/metrics');
      for (const line of body.split('\n')) {
        if (!line.startsWith(`${metric}{`) && !line.startsWith(`${metric} `)) continue;
        if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
      }
      return undefined;
    },
    kill(signal) {
      child.kill(signal);
    },
    logTail(lines = 30) {
      return readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    },
  };
}

export async function waitReady(p: PvxProcess, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (p.child.exitCode !== null) throw new Error(`pvx ${p.name} exited with ${p.child.exitCode}:\n${p.logTail()}`);
    try {
      if ((await p.get('/readyz')).status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  throw new Error(`pvx ${p.name} not ready after ${timeoutMs} ms:\n${p.logTail()}`);
}

export async function stopPvx(p: PvxProcess): Promise<void> {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  p.kill('SIGTERM');
  const timer = setTimeout(() => p.kill('SIGKILL'), 15_000);
  await p.exited;
  clearTimeout(timer);
}
