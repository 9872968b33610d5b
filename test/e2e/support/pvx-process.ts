// Runs `pvx run` as a child process for e2e tests and reads its endpoints: /metrics on `port`
// (HTTPS behind the token review, as pvx ships, scraped with a token allowed get /metrics; or
// plain HTTP when a test asks), health and debug on `healthPort` (plain HTTP).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, closeSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { mainScript } from './cli.ts';
import { e2eEnv } from './env.ts';
import { waitFor } from './kube.ts';
import { scrapeToken } from './scraper.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..', '..');
export const e2eLogDir = join(repoRoot, '.e2e-logs');

// Two ports per process: metrics on an even one, health on the odd one after it.
let nextPort = 18_100 + 2 * Math.floor(Math.random() * 250);

// Not `import … from 'node:https'` at the top: see src/k8s/http-client.ts on node:http's namespace.
const https = process.getBuiltinModule('node:https');

export interface PvxOptions {
  /**
   * secure (the default, as pvx ships): /metrics over HTTPS, each scrape's token reviewed; plain:
   * --metrics-secure=false, for a test that must read metrics while the API server is away.
   */
  metrics?: 'secure' | 'plain';
  /** The pvx to run: another checkout's src/cli/main.ts (a benchmark's "before"). Default: this one's. */
  main?: string;
}

export interface PvxProcess {
  name: string;
  /** /metrics. */
  port: number;
  /** /healthz, /readyz, /debug/informers. */
  healthPort: number;
  /** Whether /metrics is HTTPS behind the token review. */
  secureMetrics: boolean;
  child: ChildProcess;
  logFile: string;
  exited: Promise<number | null>;
  /** GET /metrics from the metrics port (with the scraper's token when secure), anything else from the health port. */
  get(path: string): Promise<{ status: number; body: string }>;
  metric(name: string, labels?: Record<string, string>): Promise<number | undefined>;
  /** The sum of every series of a metric that carries these labels (a counter over all its results, say); 0 when none does. */
  metricSum(name: string, labels?: Record<string, string>): Promise<number>;
  kill(signal: NodeJS.Signals): void;
  logTail(lines?: number): string;
}

/** The kubelet reader every suite's pvx reads the kubelets as (identity.ts's ensureKubeletReader makes it). */
export const kubeletReaderIdentity = 'pvx-system/pvx-usage-reader';

export function startPvx(name: string, args: string[], kubeconfig = e2eEnv.kubeconfig, opts: PvxOptions = {}): PvxProcess {
  mkdirSync(e2eLogDir, { recursive: true });
  const port = nextPort;
  const healthPort = nextPort + 1;
  nextPort += 2;
  const secureMetrics = (opts.metrics ?? 'secure') === 'secure';
  const logFile = join(e2eLogDir, `${name}-${Date.now()}.log`);
  const fd = openSync(logFile, 'a');
  const child = spawn(
    process.execPath,
    [
      opts.main ?? mainScript,
      'run',
      '--kubeconfig',
      kubeconfig,
      '--metrics-bind-address',
      `127.0.0.1:${port}`,
      ...(secureMetrics ? [] : ['--metrics-secure=false']),
      '--health-probe-bind-address',
      `127.0.0.1:${healthPort}`,
      '--identity',
      name,
      '--enable-debug-endpoints',
      ...args,
    ],
    // The kubelet reader global-setup.ts made (identity.ts): pvx's default, its own namespace's,
    // is no namespace outside a pod. A suite's --kubelet-identity wins.
    { stdio: ['ignore', fd, fd], env: { ...process.env, PVX_KUBELET_IDENTITY: kubeletReaderIdentity } },
  );
  closeSync(fd);
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const get = async (path: string) => {
    if (!path.startsWith('/metrics')) {
      const res = await fetch(`http://127.0.0.1:${healthPort}${path}`, { signal: AbortSignal.timeout(5000) });
      return { status: res.status, body: await res.text() };
    }
    if (!secureMetrics) {
      const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5000) });
      return { status: res.status, body: await res.text() };
    }
    return httpsGet(port, path, await scrapeToken());
  };
  /** The values of the series of `metric` that carry `labels`, in /metrics' order. */
  async function series(metric: string, labels: Record<string, string>): Promise<number[]> {
    const { status, body } = await get('/metrics');
    // A refused scrape is an error, not a missing series: the test would otherwise wait it out.
    if (status !== 200) throw new Error(`pvx ${name} /metrics answered ${status}: ${body.trim()}`);
    const values: number[] = [];
    for (const line of body.split('\n')) {
      if (!line.startsWith(`${metric}{`) && !line.startsWith(`${metric} `)) continue;
      if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) values.push(Number(line.slice(line.lastIndexOf(' ') + 1)));
    }
    return values;
  }
  return {
    name,
    port,
    healthPort,
    secureMetrics,
    child,
    logFile,
    exited,
    get,
    async metric(metric, labels = {}) {
      return (await series(metric, labels))[0];
    },
    async metricSum(metric, labels = {}) {
      return (await series(metric, labels)).reduce((sum, v) => sum + v, 0);
    },
    kill(signal) {
      child.kill(signal);
    },
    logTail(lines = 30) {
      return readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    },
  };
}

/**
 * GET over HTTPS with a bearer token. pvx's certificate is self-signed, made at its start: not
 * verified here (the unit tests check the certificate; these tests are about what pvx serves).
 */
export function httpsGet(port: number, path: string, token?: string, host = '127.0.0.1'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get({ host, port, path, rejectUnauthorized: false, headers: token ? { authorization: `Bearer ${token}` } : {}, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer from https://${host}:${port}${path} within 5 s`)));
    req.on('error', reject);
  });
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

/**
 * A pvx that holds its own lease (`leaseId` in `leaseNamespace`), ready and leading: what a suite
 * that runs one operator of its own starts in its setup.
 */
export async function startLeadingPvx(name: string, lease: { namespace: string; id: string }, args: string[], kubeconfig?: string): Promise<PvxProcess> {
  const pvx = startPvx(name, ['--leader-election-namespace', lease.namespace, '--leader-election-id', lease.id, ...args], kubeconfig);
  await waitReady(pvx);
  await waitFor('pvx to lead', 30_000, async () => (await pvx.metric('leader_election_master_status', { name: lease.id })) === 1);
  return pvx;
}
