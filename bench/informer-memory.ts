// Memory of `pvx run` with N PersistentVolumeClaims in its cache, next to the same process with
// none, for several cases side by side in one run (each KubeClient adapter, node flags, another
// checkout): RSS and peak RSS from /proc, V8 heap from pvx's own metrics, the time from start to
// /readyz (every cache listed), and RSS per cached claim.
//
//   node bench/informer-memory.ts [--pvcs 10000] [--runs 1] [--entry src|dist] [--settle 0]
//                                 [--case CASE]… [--node-arg ARG]… [--keep]
//
//   --case CASE     [DIR@]ADAPTER[+NODEFLAG]…: which --kube-client to pass (http, client-node, or
//                   default for none: a checkout from before the flag), node flags for this case,
//                   and the checkout to run (default this one; e.g. an older commit extracted with
//                   git archive, to measure before and after side by side). Default: client-node, http
//   --entry src     runs src/cli/main.ts (Node strips the types: ~17 MiB more, for the TypeScript
//                   stripper); dist (the default) runs dist/cli/main.js, as the image does — build
//                   it first (npm run build)
//   --node-arg      passed to node before the script in every case
//   --settle S      also reads RSS S seconds later: V8 keeps the young generation's pages after
//                   the initial list for a few minutes, until its memory reducer returns them
//   --runs N        measures each case N times and reports the median RSS
//
// Against the embedded cluster (npm run cluster:up) or $KUBECONFIG; installs pvx's CRDs when they
// are missing. The claims use a StorageClass no provisioner serves, so they stay Pending and cost
// the cluster nothing else.
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { paths } from '../test/cluster/layout.ts';

const { values } = parseArgs({
  options: {
    pvcs: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '1' },
    entry: { type: 'string', default: 'dist' },
    case: { type: 'string', multiple: true, default: ['client-node', 'http'] },
    'node-arg': { type: 'string', multiple: true, default: [] },
    settle: { type: 'string', default: '0' },
    keep: { type: 'boolean', default: false },
  },
});
const count = Number(values.pvcs);
const runs = Number(values.runs);
const settleMs = Number(values.settle) * 1000;
const kubeconfig = process.env.KUBECONFIG ?? paths.kubeconfig;
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const namespace = 'pvx-bench';
const repoRoot = resolve(import.meta.dirname, '..');

interface Case {
  label: string;
  entry: string;
  adapter: string;
  nodeArgs: string[];
}

const cases: Case[] = (values.case ?? []).map((label) => {
  const at = label.indexOf('@');
  const root = at > 0 ? resolve(label.slice(0, at)) : repoRoot;
  const [adapter = 'default', ...nodeArgs] = label.slice(at + 1).split('+');
  const entry = values.entry === 'src' ? join(root, 'src', 'cli', 'main.ts') : join(root, 'dist', 'cli', 'main.js');
  if (!existsSync(entry)) throw new Error(`${entry} does not exist${values.entry === 'dist' ? ' (npm run build first)' : ''}`);
  return { label, entry, adapter, nodeArgs };
});

interface Sample {
  label: string;
  pvcsCached: number;
  readyMs: number;
  rssMiB: number;
  peakRssMiB: number;
  heapUsedMiB: number;
  /** After --settle. */
  settledRssMiB?: number;
}

function procStatus(pid: number, field: string): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024; // kB → MiB
}

let nextPort = 18991;

async function measureOnce(label: string, c: Case): Promise<Sample> {
  const port = nextPort++;
  const started = Date.now();
  const args = [
    ...(values['node-arg'] ?? []),
    ...c.nodeArgs,
    c.entry,
    'run',
    '--kubeconfig',
    kubeconfig,
    '--leader-elect=false',
    '--metrics-bind-address',
    `127.0.0.1:${port}`,
    '--metrics-secure=false',
    '--health-probe-bind-address',
    `127.0.0.1:${port + 100}`,
    '--log-level',
    'error',
  ];
  if (c.adapter !== 'default') args.push('--kube-client', c.adapter);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  const metric = async (name: string, match = '') => {
    const body = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const line = body.split('\n').find((l) => l.startsWith(name) && l.includes(match));
    return Number(line?.slice(line.lastIndexOf(' ') + 1) ?? NaN);
  };
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`pvx exited with ${child.exitCode}`);
      const ok = await fetch(`http://127.0.0.1:${port + 100}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      await sleep(100);
    }
    const readyMs = Date.now() - started;
    await sleep(10_000); // let the first burst of garbage be collected
    const pid = child.pid as number;
    const sample: Sample = {
      label,
      pvcsCached: await metric('pvx_informer_objects', 'persistentvolumeclaims'),
      readyMs,
      rssMiB: procStatus(pid, 'VmRSS'),
      peakRssMiB: procStatus(pid, 'VmHWM'),
      heapUsedMiB: (await metric('nodejs_heap_size_used_bytes')) / 1024 ** 2,
    };
    if (settleMs > 0) {
      await sleep(settleMs);
      sample.settledRssMiB = procStatus(pid, 'VmRSS');
    }
    return sample;
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

/** The run with the median RSS of `runs` runs. */
async function measure(label: string, c: Case): Promise<Sample> {
  const samples: Sample[] = [];
  for (let i = 0; i < runs; i++) samples.push(await measureOnce(label, c));
  return samples.sort((a, b) => a.rssMiB - b.rssMiB)[Math.floor(samples.length / 2)] as Sample;
}

async function ensureClaims(n: number): Promise<number> {
  await core.createNamespace({ body: { metadata: { name: namespace } } }).catch(() => undefined);
  const existing = new Set<string>();
  let cont: string | undefined;
  do {
    const page = await core.listNamespacedPersistentVolumeClaim({ namespace, limit: 1000, _continue: cont });
    for (const p of page.items) existing.add(p.metadata?.name ?? '');
    cont = page.metadata?._continue;
  } while (cont);
  const todo = Array.from({ length: n }, (_, i) => `claim-${String(i).padStart(Math.max(5, String(n - 1).length), '0')}`).filter((name) => !existing.has(name));
  const started = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < todo.length) {
      const name = todo[next++] as string;
      await core.createNamespacedPersistentVolumeClaim({
        namespace,
        body: {
          metadata: { name, labels: { app: 'bench', shard: String(next % 16) } },
          spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'pvx-bench-unprovisioned', resources: { requests: { storage: '10Gi' } } },
        },
      });
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  if (todo.length) process.stderr.write(`created ${todo.length} PVCs in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return existing.size + todo.length;
}

const fmt = (s: Sample) =>
  `| ${s.label} | ${s.pvcsCached} | ${(s.readyMs / 1000).toFixed(2)} s | ${s.rssMiB.toFixed(0)} MiB | ${s.peakRssMiB.toFixed(0)} MiB | ${s.heapUsedMiB.toFixed(0)} MiB |${settleMs > 0 ? ` ${s.settledRssMiB?.toFixed(0)} MiB |` : ''}`;

const installed = spawnSync(process.execPath, [join(repoRoot, 'src', 'cli', 'main.ts'), 'install-crds', '--kubeconfig', kubeconfig], { encoding: 'utf8' });
if (installed.status !== 0) throw new Error(`pvx install-crds failed: ${installed.stderr}`);
await core.deleteNamespace({ name: namespace }).catch(() => undefined);
while (
  await core.readNamespace({ name: namespace }).then(
    () => true,
    () => false,
  )
)
  await sleep(1000);
const idle: Sample[] = [];
for (const c of cases) idle.push(await measure(`${c.label}, no PVCs`, c));
const total = await ensureClaims(count);
const full: Sample[] = [];
for (const c of cases) full.push(await measure(`${c.label}, ${total} PVCs`, c));
const perClaim = (f: Sample, e: Sample, value: (s: Sample) => number | undefined) =>
  (((value(f) ?? NaN) - (value(e) ?? NaN)) * 1024) / Math.max(1, f.pvcsCached - e.pvcsCached);
process.stdout.write(
  [
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 1024 ** 3).toFixed(0)} GiB; node ${process.version}; cluster ${kc.getCurrentCluster()?.server}`,
    `pvx: ${values.entry}${values['node-arg']?.length ? `, node ${values['node-arg'].join(' ')}` : ''}; median of ${runs} run(s); RSS 10 s after /readyz${settleMs > 0 ? `, settled RSS ${settleMs / 1000} s later` : ''}`,
    `| pvx run (case, claims) | PVCs cached | start → /readyz | RSS | peak RSS | V8 heap used |${settleMs > 0 ? ' settled RSS |' : ''}`,
    `|---|---|---|---|---|---|${settleMs > 0 ? '---|' : ''}`,
    ...idle.map(fmt),
    ...full.map(fmt),
    ...cases.map((c, i) => {
      const [e, f] = [idle[i] as Sample, full[i] as Sample];
      const settled = settleMs > 0 ? `, ${perClaim(f, e, (s) => s.settledRssMiB).toFixed(2)} KiB settled RSS` : '';
      return `per cached claim (${c.label}): ${perClaim(f, e, (s) => s.rssMiB).toFixed(2)} KiB RSS${settled}, ${perClaim(f, e, (s) => s.heapUsedMiB).toFixed(2)} KiB V8 heap`;
    }),
  ].join('\n') + '\n',
);
if (!values.keep) await core.deleteNamespace({ name: namespace });
