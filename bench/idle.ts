// What an idle `pvx run` costs at rest, for several builds or settings side by side in one run,
// against a stand-in API server on loopback — so that each lever (a V8 flag, an allocator setting,
// a build) is measured alone, many processes at once, without the shared cluster:
//
//   npm run build && node bench/idle.ts [--seconds 120] [--settle 30] \
//     --case 'image|--optimize-for-size' --case 'arenas|--optimize-for-size|MALLOC_ARENA_MAX=2'
//
// A case is LABEL|NODE FLAGS|ENV (space-separated, both optional) and runs dist/cli/main.js (or
// ENTRY= in ENV, a path). Each runs `pvx run` as it runs in the image, leader election on in a Lease
// of its own. The stand-in serves empty lists, holds every watch open with a bookmark a minute (as
// the API server does with allowWatchBookmarks), keeps the Leases it is given, and accepts any
// other write; it counts each case's requests by its token. Reported per case: CPU (user + system,
// from /proc) over --seconds after --settle, RSS and the V8 heap at the end, and requests a minute;
// and the TLS connections all cases opened over the interval.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { loopbackCertificate, writeTokenKubeconfig } from './loopback-api.ts';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '120' },
    settle: { type: 'string', default: '30' },
    case: { type: 'string', multiple: true },
  },
});
const seconds = Number(values.seconds);
const settle = Number(values.settle);
const repoRoot = resolve(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'pvx-idle-'));

interface Case {
  label: string;
  nodeFlags: string[];
  env: Record<string, string>;
  entry: string;
}
const cases: Case[] = (values.case ?? ['image|--optimize-for-size']).map((spec) => {
  const [label = 'pvx', flags = '', envText = ''] = spec.split('|');
  const env = Object.fromEntries(
    envText
      .split(' ')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const entry = resolve(repoRoot, env.ENTRY ?? 'dist/cli/main.js');
  delete env.ENTRY;
  return { label, nodeFlags: flags.split(' ').filter(Boolean), env, entry };
});

// --- the stand-in API server ---------------------------------------------------------------

const { cert, key } = loopbackCertificate(dir);
const requests = new Map<string, number>();
const leases = new Map<string, Record<string, unknown>>();
let version = 1;
const server = createServer({ cert, key }, (req, res) => {
  const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
  requests.set(token, (requests.get(token) ?? 0) + 1);
  const url = new URL(req.url ?? '/', 'https://x');
  const segments = url.pathname
    .split('/')
    .filter(Boolean)
    .slice(url.pathname.startsWith('/api/') ? 2 : 3);
  const named = segments.length % 2 === 0 && segments.length > 0;
  res.setHeader('content-type', 'application/json');
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = chunks.length > 0 ? (JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>) : undefined;
    if (url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1') {
      res.writeHead(200);
      res.flushHeaders(); // the API server answers a watch at once, events follow
      const bookmark = () => res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: String(version) } } })}\n`);
      const timer = setInterval(bookmark, 60_000);
      res.on('close', () => clearInterval(timer));
      return;
    }
    const lease = url.pathname.includes('/leases');
    if (lease && (req.method === 'POST' || req.method === 'PUT') && body) {
      const meta = (body.metadata ?? {}) as Record<string, unknown>;
      const stored = { ...body, metadata: { ...meta, resourceVersion: String(++version) } };
      leases.set(`${token}/${String(meta.name)}`, stored);
      res.statusCode = req.method === 'POST' ? 201 : 200;
      return res.end(JSON.stringify(stored));
    }
    if (lease && req.method === 'GET' && named) {
      const stored = leases.get(`${token}/${segments[segments.length - 1]}`);
      if (stored) return res.end(JSON.stringify(stored));
    }
    if (req.method === 'POST') {
      res.statusCode = 201;
      return res.end(JSON.stringify({ ...body, status: { authenticated: true, user: { username: token } } }));
    }
    if (req.method === 'GET' && !named)
      return res.end(JSON.stringify({ kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: String(version) }, items: [] }));
    res.statusCode = 404;
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 404, reason: 'NotFound', message: 'not found' }));
  });
});
// Node's own default (5 s) would close a kept-alive connection between two renewals; the API server
// keeps an idle one far longer, and pvx's client closes its own after 30 s.
server.keepAliveTimeout = 90_000;
let connections = 0;
server.on('secureConnection', () => connections++);
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = (server.address() as AddressInfo).port;

// --- the cases ------------------------------------------------------------------------------

const ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8', timeout: 30_000 }).trim());
/** User + system CPU seconds of a process so far. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

/** The V8 heap's used and total size and Node's external memory, from the process's own metrics. */
async function heap(metricsPort: number): Promise<string> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const value = (name: string) =>
    Number(
      text
        .split('\n')
        .find((l) => l.startsWith(`${name} `))
        ?.split(' ')[1],
    ) /
    2 ** 20;
  return `${value('nodejs_heap_size_used_bytes').toFixed(0)} / ${value('nodejs_heap_size_total_bytes').toFixed(0)} MiB; ${value('nodejs_external_memory_bytes').toFixed(0)} MiB`;
}

const children: { c: Case; child: ChildProcess; health: string }[] = cases.map((c, i) => {
  const kubeconfig = join(dir, `kubeconfig-${i}`);
  writeTokenKubeconfig(kubeconfig, port, cert, c.label);
  const metricsPort = 19300 + i;
  const child = spawn(
    process.execPath,
    [
      ...c.nodeFlags,
      c.entry,
      'run',
      '--kubeconfig',
      kubeconfig,
      '--leader-election-namespace',
      'bench',
      '--identity',
      c.label,
      '--metrics-bind-address',
      `127.0.0.1:${metricsPort}`,
      '--metrics-secure=false',
      '--health-probe-bind-address',
      `127.0.0.1:${metricsPort + 100}`,
      '--log-level',
      'warn',
    ],
    { env: { ...process.env, ...c.env }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  child.stderr?.on('data', (d: Buffer) => process.stderr.write(`[${c.label}] ${d.toString()}`));
  return { c, child, health: `http://127.0.0.1:${metricsPort + 100}/readyz` };
});

try {
  for (const { c, child, health } of children) {
    const deadline = Date.now() + 120_000;
    while (
      !(await fetch(health).then(
        (r) => r.ok,
        () => false,
      ))
    ) {
      if (child.exitCode !== null) throw new Error(`${c.label} exited (${child.exitCode}) before it was ready`);
      if (Date.now() > deadline) throw new Error(`${c.label} not ready within 120 s`);
      await sleep(200);
    }
  }
  await sleep(settle * 1000);
  const before = children.map(({ child }) => ({ cpu: cpuSeconds(child.pid as number), requests: 0 }));
  children.forEach(({ c }, i) => ((before[i] as { requests: number }).requests = requests.get(c.label) ?? 0));
  const connectionsBefore = connections;
  await sleep(seconds * 1000);
  console.log(`TLS connections made to the stand-in over the interval: ${connections - connectionsBefore}`);
  console.log(
    `${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${Math.round(totalmem() / 2 ** 20)} MiB; Node ${process.version}; ${seconds} s after ${settle} s`,
  );
  console.log('| case | node flags | env | CPU over the interval | RSS | V8 heap used / total; external | requests a minute |');
  console.log('|---|---|---|---|---|---|---|');
  const heaps = await Promise.all(children.map((_, i) => heap(19300 + i)));
  children.forEach(({ c, child }, i) => {
    const pid = child.pid as number;
    const b = before[i] as { cpu: number; requests: number };
    const perMinute = (((requests.get(c.label) ?? 0) - b.requests) * 60) / seconds;
    const env = Object.entries(c.env)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ');
    console.log(
      `| ${c.label} | ${c.nodeFlags.join(' ')} | ${env} | ${(cpuSeconds(pid) - b.cpu).toFixed(2)} s | ${rssMiB(pid).toFixed(0)} MiB | ${heaps[i]} | ${perMinute.toFixed(1)} |`,
    );
  });
} finally {
  for (const { child } of children) child.kill('SIGTERM');
  await sleep(2000);
  for (const { child } of children) if (child.exitCode === null) child.kill('SIGKILL');
  server.close();
  server.closeAllConnections();
}
