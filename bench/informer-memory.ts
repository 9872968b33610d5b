// Memory of `pvx run` with N PersistentVolumeClaims in its cache, next to the same process with
// none, in one run: RSS and peak RSS from /proc, V8 heap from pvx's own metrics, and the time
// from start to /readyz (every cache listed).
//
//   node bench/informer-memory.ts [--pvcs 10000] [--keep]
//
// Against the embedded cluster (npm run cluster:up) or $KUBECONFIG. The claims use a
// StorageClass no provisioner serves, so they stay Pending and cost the cluster nothing else.
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { paths } from '../test/cluster/layout.ts';

const { values } = parseArgs({ options: { pvcs: { type: 'string', default: '10000' }, keep: { type: 'boolean', default: false } } });
const count = Number(values.pvcs);
const kubeconfig = process.env.KUBECONFIG ?? paths.kubeconfig;
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const namespace = 'pvx-bench';
const repoRoot = resolve(import.meta.dirname, '..');

interface Sample {
  label: string;
  pvcsCached: number;
  readyMs: number;
  rssMiB: number;
  peakRssMiB: number;
  heapUsedMiB: number;
}

function procStatus(pid: number, field: string): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith(`${field}:`));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024; // kB → MiB
}

async function measure(label: string, port: number): Promise<Sample> {
  const started = Date.now();
  const child = spawn(process.execPath, [join(repoRoot, 'src', 'cli', 'main.ts'), 'run', '--kubeconfig', kubeconfig, '--leader-elect=false', '--metrics-bind-address', `127.0.0.1:${port}`, '--log-level', 'warn'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const metric = async (name: string, match = '') => {
    const body = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const line = body.split('\n').find((l) => l.startsWith(name) && l.includes(match));
    return Number(line?.slice(line.lastIndexOf(' ') + 1) ?? NaN);
  };
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`pvx exited with ${child.exitCode}`);
      const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false);
      if (ok) break;
      await sleep(100);
    }
    const readyMs = Date.now() - started;
    await sleep(10_000); // let the first burst of garbage be collected
    const pid = child.pid as number;
    return {
      label,
      pvcsCached: await metric('pvx_informer_objects', 'persistentvolumeclaims'),
      readyMs,
      rssMiB: procStatus(pid, 'VmRSS'),
      peakRssMiB: procStatus(pid, 'VmHWM'),
      heapUsedMiB: (await metric('nodejs_heap_size_used_bytes')) / 1024 ** 2,
    };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
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
  const todo = Array.from({ length: n }, (_, i) => `claim-${String(i).padStart(5, '0')}`).filter((name) => !existing.has(name));
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
  `| ${s.label} | ${s.pvcsCached} | ${(s.readyMs / 1000).toFixed(2)} s | ${s.rssMiB.toFixed(0)} MiB | ${s.peakRssMiB.toFixed(0)} MiB | ${s.heapUsedMiB.toFixed(0)} MiB |`;

await core.deleteNamespace({ name: namespace }).catch(() => undefined);
while (await core.readNamespace({ name: namespace }).then(() => true, () => false)) await sleep(1000);
const empty = await measure('no PVCs', 18991);
const total = await ensureClaims(count);
const full = await measure(`${total} PVCs`, 18992);
process.stdout.write(
  [
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 1024 ** 3).toFixed(0)} GiB; node ${process.version}; cluster ${kc.getCurrentCluster()?.server}`,
    '| pvx run with | PVCs cached | start → /readyz | RSS | peak RSS | V8 heap used |',
    '|---|---|---|---|---|---|',
    fmt(empty),
    fmt(full),
    `per PVC: ${(((full.rssMiB - empty.rssMiB) * 1024) / Math.max(1, full.pvcsCached - empty.pvcsCached)).toFixed(2)} KiB RSS`,
  ].join('\n') + '\n',
);
if (!values.keep) await core.deleteNamespace({ name: namespace });
