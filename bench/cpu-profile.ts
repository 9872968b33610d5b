// Where an idle `pvx run` spends its CPU: runs it for --seconds under V8's sampling profiler
// (node --cpu-prof, as the image runs it: --optimize-for-size, from dist/), then sums the samples'
// self time by function and by where the code lives (pvx, a package, Node itself, GC, idle).
//
//   npm run build && node bench/cpu-profile.ts [--seconds 120] [--kubeconfig PATH]
//
// Against the embedded cluster (npm run cluster:up) or the given kubeconfig; leader election on, in
// its own Lease (pvx-cpu-profile), so it leads only itself. --profile FILE summarises a profile
// written elsewhere instead (bench/idle.ts with --cpu-prof in a case's node flags, e.g.).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { paths } from '../test/cluster/layout.ts';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '120' }, kubeconfig: { type: 'string' }, profile: { type: 'string' } } });
const seconds = Number(values.seconds);
const repoRoot = resolve(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'pvx-cpu-'));

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

async function profileRun(): Promise<string> {
  const port = 18_770;
  const child = spawn(
    process.execPath,
    [
      '--optimize-for-size',
      '--cpu-prof',
      `--cpu-prof-dir=${dir}`,
      join(repoRoot, 'dist', 'cli', 'main.js'),
      'run',
      '--kubeconfig',
      values.kubeconfig ?? process.env.KUBECONFIG ?? paths.kubeconfig,
      '--leader-election-id',
      'pvx-cpu-profile',
      '--metrics-bind-address',
      `127.0.0.1:${port}`,
      '--health-probe-bind-address',
      `127.0.0.1:${port + 100}`,
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pvx exited with ${child.exitCode}`);
    if (
      await fetch(`http://127.0.0.1:${port + 100}/readyz`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await sleep(200);
  }
  await sleep(seconds * 1000);
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile written in ${dir}`);
  return join(dir, file);
}

const file = values.profile ? resolve(values.profile) : await profileRun();
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<number, number>();
profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));

const where = (n: Node): string => {
  const { functionName, url } = n.callFrame;
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (functionName === '(program)') return 'V8/Node native (program)';
  if (url.includes('/node_modules/'))
    return `package ${url
      .split('/node_modules/')
      .pop()
      ?.split('/')
      .slice(0, url.includes('/@') ? 2 : 1)
      .join('/')}`;
  if (url.includes(`${repoRoot}/dist/`)) return `pvx ${url.split('/dist/').pop()}`;
  if (url.startsWith('node:') || url === '') return 'Node internals';
  return url;
};
const sum = (key: (n: Node) => string) => {
  const totals = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const k = key(byId.get(id) as Node);
    totals.set(k, (totals.get(k) ?? 0) + us);
  }
  return [...totals].sort((a, b) => b[1] - a[1]);
};
const totalUs = profile.endTime - profile.startTime || 1;
const busyUs = [...selfUs].filter(([id]) => byId.get(id)?.callFrame.functionName !== '(idle)').reduce((a, [, us]) => a + us, 0);
const line = ([k, us]: [string, number]) => `| ${k} | ${(us / 1000).toFixed(0)} ms | ${((us / busyUs) * 100).toFixed(1)} % |`;
process.stdout.write(
  [
    `pvx run idle for ${seconds} s (profile ${file}): busy ${(busyUs / 1000).toFixed(0)} ms of ${(totalUs / 1000).toFixed(0)} ms sampled`,
    '',
    '| where | self time | of busy |',
    '|---|---|---|',
    ...sum(where)
      .filter(([k]) => k !== 'idle')
      .slice(0, 12)
      .map(line),
    '',
    '| function | self time | of busy |',
    '|---|---|---|',
    ...sum((n) => `${n.callFrame.functionName || '(anonymous)'} ${where(n)}:${n.callFrame.lineNumber + 1}`)
      .filter(([k]) => !k.startsWith('(idle)'))
      .slice(0, 15)
      .map(line),
  ].join('\n') + '\n',
);
