// npm run cluster:{up,down,status,logs}: the embedded single-node Kubernetes cluster.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { build, down, installPackages, kubernetesLine, status, up } from './cluster.ts';
import { components } from './components.ts';
import { defaultKubernetesVersion, kubernetesReleases, paths } from './layout.ts';
import { installPvx } from './install-pvx.ts';
import { importOperatorImage } from './operator-image.ts';
import { ClusterError, logPath, tail } from './processes.ts';

const usage = `usage: node test/cluster/cli.ts <command>
  up                   start the cluster (idempotent; builds and caches binaries on first use)
  build [--all]        only build (or find in the cache) the cluster's binaries and images;
                       --all: those of every Kubernetes release, not only the selected one
  image                build pvx's image from the Dockerfile (cached) and import it into the running cluster
  install-pvx          the image, then helm upgrade --install of charts/pvx into pvx-system (pvx runs as two pods)
  packages             only install the Debian packages the cluster and the test suites need
  down                 stop everything it started, unmount volumes, remove its state
  status               show each component and whether the Node and the CSI driver are ready
  logs [component] [-f] [-n N]
                       without a component: the last lines of every log; with one: its log
Environment: PVX_CLUSTER_DIR (state, default /var/lib/pvx-cluster), PVX_CACHE_DIR (binaries, default ~/.cache/pvx),
  PVX_KUBERNETES_VERSION (${kubernetesReleases.map((r) => r.version).join(' or ')}; default ${defaultKubernetesVersion})`;

async function printStatus(): Promise<number> {
  const s = await status();
  const width = Math.max(...s.components.map((c) => c.name.length));
  for (const c of s.components) {
    const state = c.pid === undefined ? 'stopped' : c.ready ? 'ready' : 'running, not ready';
    process.stdout.write(`${c.name.padEnd(width)}  ${state}${c.pid ? ` (pid ${c.pid})` : ''}\n`);
  }
  process.stdout.write(`node Ready: ${s.nodeReady ? 'yes' : 'no'}; CSI driver registered: ${s.csiRegistered ? 'yes' : 'no'}\n`);
  process.stdout.write(`${kubernetesLine(s.kubernetes)}\n`);
  if (existsSync(paths.kubeconfig)) process.stdout.write(`KUBECONFIG=${paths.kubeconfig}\n`);
  const allUp = s.components.every((c) => c.ready) && s.nodeReady && s.csiRegistered;
  return allUp ? 0 : 1;
}

function printLogs(args: string[]): number {
  const follow = args.includes('-f');
  const nIndex = args.indexOf('-n');
  const lines = nIndex >= 0 ? Number(args[nIndex + 1]) : follow ? 20 : 100;
  const name = args.find((a, i) => !a.startsWith('-') && (nIndex < 0 || i !== nIndex + 1));
  if (!name) {
    if (!existsSync(paths.logs)) throw new ClusterError(`no logs in ${paths.logs}: the cluster has not run`);
    for (const file of readdirSync(paths.logs).sort()) {
      process.stdout.write(`==> ${paths.logs}/${file} <==\n${tail(readFileSync(`${paths.logs}/${file}`, 'utf8'), 10)}\n`);
    }
    return 0;
  }
  if (!components.some((c) => c.name === name)) {
    throw new ClusterError(`no component ${name}; known: ${components.map((c) => c.name).join(', ')}`);
  }
  const file = logPath(name);
  if (!existsSync(file)) throw new ClusterError(`no log for ${name} at ${file}`);
  if (follow) {
    spawn('tail', ['-n', String(lines), '-f', file], { stdio: 'inherit' });
    return -1;
  }
  process.stdout.write(`${tail(readFileSync(file, 'utf8'), lines)}\n`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'up':
      await up();
      return 0;
    case 'build':
      await build({ all: rest.includes('--all') });
      return 0;
    case 'image': {
      const ref = await importOperatorImage((line) => process.stdout.write(`${line}\n`));
      process.stdout.write(`imported ${ref} into the cluster's containerd (use it with imagePullPolicy: Never)\n`);
      return 0;
    }
    case 'install-pvx':
      await installPvx((line) => process.stdout.write(`${line}\n`));
      return 0;
    case 'packages':
      await installPackages();
      return 0;
    case 'down':
      await down();
      return 0;
    case 'status':
      return printStatus();
    case 'logs':
      return printLogs(rest);
    default:
      process.stderr.write(`${usage}\n`);
      return command === undefined || command === '-h' || command === '--help' ? 0 : 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(
      `\n${err instanceof ClusterError ? 'error' : 'unexpected error'}: ${err instanceof Error ? (err instanceof ClusterError ? err.message : err.stack) : String(err)}\n`,
    );
    process.exitCode = 1;
  },
);
