// How long a command takes to start: from the process's start to its first request to the API
// server, and the whole process (wall time and peak RSS, as /usr/bin/time reports them), for each
// --case side by side, runs interleaved (A B A B …) so that a machine's drift moves every case
// alike. The API server is a stand-in on loopback (HTTPS with a certificate made for the run,
// token credentials, as a kubeconfig with static credentials has): it answers lists with nothing
// and reads with 404, so a command ends soon after its first request.
//
//   npm run build && node bench/cli-startup.ts [--runs 7] [--case LABEL=ENTRY[+cache]]… [--command 'why pvc/data']… [--kubectl]
//
// A case is a label, the entry (a path: dist/cli/main.js, or another build) and, with +cache,
// Node's module compile cache in a directory of the run's own (warmed by one run first). Default
// cases: dist/cli/main.js as it ships. --kubectl adds `kubectl get pvc` against the same server:
// the yardstick a kubectl user feels.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loopbackCertificate, writeTokenKubeconfig } from './loopback-api.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '7' },
    case: { type: 'string', multiple: true },
    command: { type: 'string', multiple: true },
    kubectl: { type: 'boolean', default: false },
  },
});
const runs = Number(values.runs);
const repoRoot = resolve(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'pvx-cli-startup-'));
const commands = (values.command ?? ['why --help', 'why pvc/data', 'status', 'df --usage none']).map((c) => c.split(' '));

interface Case {
  label: string;
  argv: (command: string[]) => string[];
  env: NodeJS.ProcessEnv;
}

const cases: Case[] = (values.case ?? ['dist=dist/cli/main.js']).map((spec) => {
  const [label, rest] = spec.includes('=') ? (spec.split('=', 2) as [string, string]) : [spec, spec];
  const [entry, ...flags] = rest.split('+');
  const env: NodeJS.ProcessEnv = {};
  if (flags.includes('cache')) env.NODE_COMPILE_CACHE = mkdtempSync(join(dir, 'cache-'));
  else env.NODE_DISABLE_COMPILE_CACHE = '1';
  return { label, argv: (command) => [process.execPath, resolve(repoRoot, entry as string), ...command], env };
});

// --- the stand-in API server ---------------------------------------------------------------

const { cert, key } = loopbackCertificate(dir);
let firstRequestAt: number | undefined;
const server = createServer({ cert, key }, (req, res) => {
  firstRequestAt ??= performance.now();
  const url = new URL(req.url ?? '/', 'https://x');
  // After /api/v1 or /apis/GROUP/VERSION: [namespaces, NS,] PLURAL [, NAME]: an even count names one object.
  const segments = url.pathname
    .split('/')
    .filter(Boolean)
    .slice(url.pathname.startsWith('/api/') ? 2 : 3);
  const named = segments.length % 2 === 0;
  res.setHeader('content-type', 'application/json');
  if (url.searchParams.get('watch') === 'true' || !named) {
    res.end(JSON.stringify({ kind: 'List', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] }));
  } else {
    res.statusCode = 404;
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 404, reason: 'NotFound', message: 'not found' }));
  }
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const kubeconfig = join(dir, 'kubeconfig');
writeTokenKubeconfig(kubeconfig, (server.address() as AddressInfo).port, cert, 'bench');

// --- runs ------------------------------------------------------------------------------------

interface Run {
  firstRequestMs: number | undefined;
  wallS: number;
  /** User + system CPU seconds: less moved by other work on the machine than wall time. */
  cpuS: number;
  peakMiB: number;
}

/** One run under /usr/bin/time: the first request's arrival after the spawn, the process's wall and CPU time and peak RSS. */
async function once(argv: string[], env: NodeJS.ProcessEnv): Promise<Run> {
  firstRequestAt = undefined;
  const started = performance.now();
  const child = spawn('/usr/bin/time', ['-f', 'TIME %e %M %U %S', ...argv], {
    env: { ...process.env, KUBECONFIG: kubeconfig, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  await new Promise((r) => child.on('close', r));
  const m = /TIME ([\d.]+) (\d+) ([\d.]+) ([\d.]+)/.exec(stderr);
  if (!m) throw new Error(`${argv.join(' ')}: no timing (${stderr.trim()})`);
  return {
    firstRequestMs: firstRequestAt === undefined ? undefined : firstRequestAt - started,
    wallS: Number(m[1]),
    cpuS: Number(m[3]) + Number(m[4]),
    peakMiB: Number(m[2]) / 1024,
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? (s[(s.length - 1) / 2] as number) : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2;
};

const rows: string[] = [];
const load = () => loadavg()[0]?.toFixed(1);
const loadBefore = load();
for (const command of commands) {
  const variants = [
    ...cases.map((c) => ({ label: c.label, argv: c.argv(command), env: c.env })),
    ...(values.kubectl && command.join(' ') === commands[0]?.join(' ') ? [{ label: 'kubectl get pvc', argv: ['kubectl', 'get', 'pvc'], env: {} }] : []),
  ];
  // One warm-up each (it fills a compile cache), then interleaved runs.
  for (const v of variants) await once(v.argv, v.env);
  const results = variants.map(() => [] as Run[]);
  for (let i = 0; i < runs; i++) for (const [j, v] of variants.entries()) results[j]?.push(await once(v.argv, v.env));
  for (const [j, v] of variants.entries()) {
    const rs = results[j] ?? [];
    const first = rs.flatMap((r) => (r.firstRequestMs === undefined ? [] : [r.firstRequestMs]));
    const firstCell = first.length === 0 ? 'none' : `${(median(first) / 1000).toFixed(2)} s`;
    rows.push(
      `| ${v.label === 'kubectl get pvc' ? 'kubectl get pvc' : `pvx ${command.join(' ')}`} | ${v.label} | ${firstCell} | ${median(rs.map((r) => r.wallS)).toFixed(2)} s | ${median(rs.map((r) => r.cpuS)).toFixed(2)} s | ${median(rs.map((r) => r.peakMiB)).toFixed(0)} MiB |`,
    );
  }
}
server.close();
rmSync(dir, { recursive: true, force: true });
process.stdout.write(
  [
    `${new Date().toISOString().slice(0, 10)}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}; Node ${process.version}; load average ${loadBefore} before, ${load()} after; median of ${runs} runs each, interleaved`,
    '',
    '| command | case | start → first request | whole process | its CPU (user + system) | peak RSS |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n') + '\n',
);
