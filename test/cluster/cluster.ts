// Bringing the embedded cluster up, down, and reporting on it. Also the API the e2e suites use to
// stop, kill and restart single components.
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { binaries, buildAll } from './build.ts';
import { components, type Component } from './components.ts';
import { ctrArgs, ensureImageArchives, importImages } from './images.ts';
import { apiserverURL, clusterSourceDir, csiDriverName, defaultKubernetesVersion, ebs, gce, nodeName, paths, stateDir, versions } from './layout.ts';
import { deleteNodeNetwork, ensureNodeNetwork, netnsPath } from './network.ts';
import { ensurePKI, identities, pki } from './pki.ts';
import { probe } from './http.ts';
import { ClusterError, daemonPid, logPath, run, startDaemon, stopDaemon, stopPid, killDaemon, waitFor } from './processes.ts';
import { Progress, type StepContext } from './progress.ts';

/** Debian packages the cluster needs: binary to look for → package that provides it. */
const debianPackages: Record<string, string> = {
  '/usr/bin/containerd': 'containerd',
  '/usr/sbin/runc': 'runc',
  '/usr/lib/cni/bridge': 'containernetworking-plugins',
  '/usr/sbin/mkfs.xfs': 'xfsprogs',
  '/usr/sbin/xfs_growfs': 'xfsprogs',
  '/bin/busybox': 'busybox-static',
  '/usr/bin/openssl': 'openssl',
  '/usr/bin/gcc': 'gcc',
  // gcc only recommends the C library headers, and the pause image is linked statically against it.
  '/usr/lib/x86_64-linux-gnu/libc.a': 'libc6-dev',
  '/usr/sbin/losetup': 'mount',
  '/usr/sbin/ip': 'iproute2',
  '/usr/bin/socat': 'socat',
  '/usr/bin/nsenter': 'util-linux',
  // kube-proxy writes Service rules with iptables-restore and clears stale UDP flows with conntrack.
  '/usr/sbin/iptables-restore': 'iptables',
  '/usr/sbin/conntrack': 'conntrack',
  // Not the cluster's own: promtool checks pvx's alert rules and dashboard queries (unit tests),
  // and Prometheus scrapes pvx and the kubelet (e2e).
  '/usr/bin/promtool': 'prometheus',
  // Not the cluster's own either: the shells whose completion scripts `pvx completion` writes are
  // checked by the unit tests (bash is always there).
  '/usr/bin/zsh': 'zsh',
  '/usr/bin/fish': 'fish',
  '/usr/bin/prometheus': 'prometheus',
};

export async function kubectl(args: string[], opts: { input?: string; timeoutMs?: number } = {}): Promise<string> {
  const bin = (await binaries()).kubectl;
  if (!bin || !existsSync(bin)) throw new ClusterError('kubectl is not built yet: run `npm run cluster:up` first');
  return run(bin, ['--kubeconfig', paths.kubeconfig, ...args], { input: opts.input, timeoutMs: opts.timeoutMs ?? 60_000 });
}

/**
 * The Kubernetes version the state directory was brought up with: the one recorded there, or, for
 * state left by a harness that ran one version only (etcd data but no record), the default.
 */
export function stateKubernetesVersion(): string | undefined {
  if (existsSync(paths.kubernetesVersion)) return readFileSync(paths.kubernetesVersion, 'utf8').trim();
  return existsSync(paths.etcdData) ? defaultKubernetesVersion : undefined;
}

/**
 * Refuses to start one version's binaries on another's state: etcd holds objects in the storage
 * versions the older API server wrote, and a downgrade cannot read what a newer one wrote.
 * Switching versions is `down`, then `up`.
 */
export function checkStateVersion(stateVersion: string | undefined, wanted: string): void {
  if (stateVersion !== undefined && stateVersion !== wanted) {
    throw new ClusterError(
      `the cluster in ${stateDir} runs Kubernetes ${stateVersion}, not ${wanted} (PVX_KUBERNETES_VERSION): run \`npm run cluster:down\` first, then \`up\` again to switch`,
    );
  }
}

function preflight(ctx: StepContext): void {
  if (process.platform !== 'linux') throw new ClusterError('the embedded cluster runs on Linux only');
  if (process.getuid?.() !== 0) {
    throw new ClusterError('the embedded cluster must run as root (it mounts volumes and runs containerd and the kubelet); try `sudo -E npm run cluster:up`');
  }
  if (!existsSync('/sys/fs/cgroup')) throw new ClusterError('no /sys/fs/cgroup: the kubelet needs cgroups');
  checkStateVersion(stateKubernetesVersion(), versions.kubernetes);
  ctx.log(`Kubernetes ${versions.kubernetes}; state in ${stateDir}, logs in ${paths.logs}`);
}

async function ensurePackages(ctx: StepContext): Promise<void> {
  const missing = [
    ...new Set(
      Object.entries(debianPackages)
        .filter(([bin]) => !existsSync(bin))
        .map(([, pkg]) => pkg),
    ),
  ];
  if (missing.length === 0) {
    ctx.log('all present');
    return;
  }
  if (!existsSync('/usr/bin/apt-get')) {
    throw new ClusterError(`missing packages ${missing.join(', ')} and no apt-get to install them: install them by hand`);
  }
  ctx.log(`installing ${missing.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update'], { env, onLine: (l) => ctx.detail(l) });
  await run('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { env, onLine: (l) => ctx.detail(l) });
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

async function whoListens(port: number): Promise<string> {
  try {
    const out = await run('ss', ['-ltnpH', `sport = :${port}`]);
    return out.trim() ? ` (${out.trim().replace(/\s+/g, ' ')})` : '';
  } catch {
    return '';
  }
}

/** The executable a process runs (after nsenter exec'd it), or undefined. */
function executableOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return undefined;
  }
}

/** Starts a component unless the same build already runs and is ready; true when it (re)started it. */
async function startComponent(c: Component, bins: Record<string, string>, ctx: StepContext): Promise<boolean> {
  const binary = c.binary.startsWith('/') ? c.binary : bins[c.binary];
  const running = daemonPid(c.name);
  if (running !== undefined && (await c.ready().catch(() => false))) {
    const exe = executableOf(running);
    if (!binary || !exe || exe === binary) {
      ctx.log(`${c.name} already running (pid ${running})`);
      return false;
    }
    ctx.log(`${c.name} runs ${exe}, an older build than ${binary}: restarting it`);
  }
  await stopDaemon(c.name); // a recorded but unhealthy instance of ours
  for (const port of c.inNodeNetwork ? [] : c.ports) {
    if (!(await portFree(port))) {
      throw new ClusterError(
        `port ${port} on 127.0.0.1, needed by ${c.name}, is in use by another process${await whoListens(port)}. Stop it, or stop the other cluster using it.`,
      );
    }
  }
  if (!binary || !existsSync(binary)) throw new ClusterError(`${c.name}: binary ${binary ?? c.binary} not found`);
  c.prepare?.();
  const pid = c.inNodeNetwork
    ? startDaemon({ name: c.name, binary: 'nsenter', args: [`--net=${netnsPath}`, '--', binary, ...c.args()], env: c.env?.() })
    : startDaemon({ name: c.name, binary, args: c.args(), env: c.env?.() });
  ctx.detail(`waiting for ${c.name} (pid ${pid}) to be ready`);
  await waitFor(() => c.ready(), { what: `${c.name} to be ready`, timeoutMs: c.readyTimeoutMs, daemon: c.name });
  ctx.log(`${c.name} ready (pid ${pid}, log ${logPath(c.name)})`);
  return true;
}

function component(name: string): Component {
  const c = components.find((x) => x.name === name);
  if (!c) throw new ClusterError(`no component ${name}; known: ${components.map((x) => x.name).join(', ')}`);
  return c;
}

async function nodeReady(): Promise<boolean> {
  const out = await kubectl(['get', 'node', nodeName, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}']);
  return out.trim() === 'True';
}

async function csiNodeHasDriver(driver = csiDriverName): Promise<boolean> {
  const out = await kubectl(['get', 'csinode', nodeName, '-o', 'jsonpath={.spec.drivers[*].name}']);
  return out.split(' ').includes(driver);
}

/** Starts a CSI controller and its sidecars; the sidecars exit when the socket goes away, so a restarted driver restarts them. */
async function startDriverWithSidecars(driver: string, sidecars: string[], bins: Record<string, string>, ctx: StepContext): Promise<void> {
  if (await startComponent(component(driver), bins, ctx)) {
    for (const sidecar of sidecars) await stopDaemon(sidecar);
  }
  for (const sidecar of sidecars) await startComponent(component(sidecar), bins, ctx);
}

/** A cloud's driver: its API's emulator, the real controller and its sidecars, and the node half, registered with the kubelet. */
async function startCloudDriver(
  parts: { emulator: string; controller: string; sidecars: string[]; node: string; driverName: string },
  bins: Record<string, string>,
  ctx: StepContext,
): Promise<void> {
  await startComponent(component(parts.emulator), bins, ctx);
  await startDriverWithSidecars(parts.controller, parts.sidecars, bins, ctx);
  await startComponent(component(parts.node), bins, ctx);
  ctx.detail(`waiting for the kubelet to register ${parts.node} (CSINode)`);
  await waitFor(() => csiNodeHasDriver(parts.driverName), {
    what: `CSINode ${nodeName} to list ${parts.driverName}`,
    timeoutMs: 60_000,
    daemon: parts.node,
    intervalMs: 500,
  });
}

/** Only the Debian packages of the list above: the unit tests need promtool before any cluster is up. */
export async function installPackages(): Promise<void> {
  await new Progress(1).step('Installing missing Debian packages', ensurePackages);
}

/** `all`: every Kubernetes release's binaries, not only the selected one's (to warm a cache for both). */
export async function build(opts: { all?: boolean } = {}): Promise<void> {
  const progress = new Progress(2);
  await progress.step(`Building cluster binaries (cached by version; Kubernetes ${opts.all ? 'every release' : versions.kubernetes})`, (ctx) =>
    buildAll(ctx, opts),
  );
  await progress.step('Building local images (pause, busybox)', async () => ensureImageArchives());
  process.stderr.write(`Built in ${progress.elapsed()}; binaries in ${paths.binCache}\n`);
}

export async function up(): Promise<void> {
  const progress = new Progress(14);
  await progress.step('Checking the machine', async (ctx) => preflight(ctx));
  await progress.step('Installing missing Debian packages', ensurePackages);
  await progress.step('Building cluster binaries (cached by version)', buildAll);
  const bins = await binaries();
  const archives = await progress.step('Building local images (pause, busybox)', async () => ensureImageArchives());
  await progress.step('Creating certificates and kubeconfigs', async () => {
    for (const dir of [paths.state, paths.logs, paths.run]) mkdirSync(dir, { recursive: true });
    writeFileSync(paths.kubernetesVersion, `${versions.kubernetes}\n`);
    await ensurePKI();
  });
  await progress.step('Starting etcd', (ctx) => startComponent(component('etcd'), bins, ctx));
  await progress.step('Starting kube-apiserver', (ctx) => startComponent(component('kube-apiserver'), bins, ctx));
  await progress.step('Starting kube-controller-manager and kube-scheduler', async (ctx) => {
    await startComponent(component('kube-controller-manager'), bins, ctx);
    await startComponent(component('kube-scheduler'), bins, ctx);
  });
  await progress.step('Creating the node network and starting containerd', async (ctx) => {
    await ensureNodeNetwork();
    for (const name of ['apiserver-relay', 'apiserver-relay-node', 'containerd']) await startComponent(component(name), bins, ctx);
    await importImages(archives);
  });
  await progress.step('Starting the kubelet and kube-proxy and waiting for the Node to be Ready', async (ctx) => {
    await startComponent(component('kubelet'), bins, ctx);
    await startComponent(component('kube-proxy'), bins, ctx);
    ctx.detail(`waiting for Node ${nodeName} to be Ready`);
    await waitFor(nodeReady, { what: `Node ${nodeName} to be Ready`, timeoutMs: 120_000, daemon: 'kubelet', intervalMs: 1000 });
  });
  await progress.step('Starting the CSI driver, provisioner and resizer', async (ctx) => {
    await startDriverWithSidecars('pvx-csi', ['csi-provisioner', 'csi-resizer'], bins, ctx);
    ctx.detail('waiting for the kubelet to register the driver (CSINode)');
    await waitFor(() => csiNodeHasDriver(), { what: `CSINode ${nodeName} to list ${csiDriverName}`, timeoutMs: 60_000, daemon: 'pvx-csi', intervalMs: 500 });
  });
  await progress.step('Starting the EC2 emulator and the AWS EBS driver', (ctx) =>
    startCloudDriver(
      { emulator: 'ec2-emulator', controller: 'ebs-controller', sidecars: ['ebs-provisioner', 'ebs-resizer'], node: 'ebs-node', driverName: ebs.driverName },
      bins,
      ctx,
    ),
  );
  await progress.step('Starting the Compute Engine emulator and the GCE PD driver', (ctx) =>
    startCloudDriver(
      {
        emulator: 'compute-emulator',
        controller: 'gce-controller',
        sidecars: ['gce-provisioner', 'gce-resizer'],
        node: 'gce-node',
        driverName: gce.driverName,
      },
      bins,
      ctx,
    ),
  );
  await progress.step('Applying the CSIDriver and StorageClasses', async (ctx) => {
    await waitFor(async () => (await kubectl(['get', 'serviceaccount', 'default', '-o', 'name'])).trim() !== '', {
      what: 'the default ServiceAccount',
      timeoutMs: 60_000,
      daemon: 'kube-controller-manager',
    });
    for (const manifest of ['storage.yaml', 'ebs.yaml', 'gce.yaml']) {
      const out = await kubectl(['apply', '-f', join(clusterSourceDir, 'manifests', manifest)]);
      for (const line of out.trim().split('\n')) ctx.log(line);
    }
  });
  process.stderr.write(
    `\nCluster (Kubernetes ${versions.kubernetes}) is up in ${progress.elapsed()}. Use it with:\n  export KUBECONFIG=${paths.kubeconfig}\n  ${bins.kubectl} get nodes\nLogs: ${paths.logs}  (npm run cluster:logs -- <component>)\n`,
  );
}

/** Mount points at or under a directory, deepest first, from the text of /proc/self/mountinfo. */
export function mountPointsUnder(mountinfo: string, dir: string): string[] {
  const prefix = dir.endsWith('/') ? dir : `${dir}/`;
  return mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((m): m is string => m !== undefined)
    .map((m) => m.replace(/\\(\d{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))))
    .filter((m) => m === dir || m.startsWith(prefix))
    .sort((a, b) => b.length - a.length);
}

function mountsUnder(dir: string): string[] {
  return mountPointsUnder(readFileSync('/proc/self/mountinfo', 'utf8'), dir);
}

/** containerd shims started by our containerd, found by the socket address on their command line. */
function ourShims(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (argv[0]?.includes('containerd-shim') && argv.includes(paths.containerdSocket)) pids.push(Number(entry));
    } catch {
      // process ended meanwhile
    }
  }
  return pids;
}

async function stopPods(log: (s: string) => void): Promise<void> {
  if (daemonPid('kube-apiserver') === undefined || daemonPid('kubelet') === undefined) return;
  try {
    // Let the kubelet tear pods down properly (unmount volumes, remove sandboxes) while it can.
    await kubectl(['delete', 'pods', '--all', '--all-namespaces', '--grace-period=1', '--wait=false'], { timeoutMs: 20_000 });
    await waitFor(async () => (await run('ctr', [...ctrArgs, 'tasks', 'list', '-q'], { timeoutMs: 5000 })).trim() === '', {
      what: 'the kubelet to stop every container',
      timeoutMs: 45_000,
      intervalMs: 500,
    });
  } catch (err) {
    log(`pods were not all stopped by the kubelet (${(err as Error).message.split('\n')[0]}); killing what remains`);
  }
}

async function killContainers(): Promise<void> {
  if (daemonPid('containerd') === undefined) return;
  const ids = (await run('ctr', [...ctrArgs, 'tasks', 'list', '-q']).catch(() => '')).split('\n').filter(Boolean);
  for (const id of ids) {
    await run('ctr', [...ctrArgs, 'tasks', 'kill', '-s', 'SIGKILL', id]).catch(() => '');
    await run('ctr', [...ctrArgs, 'tasks', 'delete', '-f', id]).catch(() => '');
  }
}

async function detachLoopDevices(): Promise<void> {
  const out = await run('losetup', ['--list', '--noheadings', '--output', 'NAME,BACK-FILE']).catch(() => '');
  for (const line of out.split('\n')) {
    const [dev, file] = line.trim().split(/\s+/);
    if (dev && (file?.startsWith(paths.csiState) || file?.startsWith(paths.ec2State))) await run('losetup', ['-d', dev]).catch(() => '');
  }
}

export async function down(): Promise<void> {
  const progress = new Progress(4);
  await progress.step('Stopping pods', async (ctx) => {
    await stopPods(ctx.log);
    await killContainers();
  });
  await progress.step('Stopping components', async (ctx) => {
    for (const c of [...components].reverse()) {
      if (await stopDaemon(c.name, c.name === 'kube-apiserver' ? 15_000 : 10_000)) ctx.log(`stopped ${c.name}`);
    }
    for (const pid of ourShims()) await stopPid(pid, 5000);
  });
  await progress.step('Unmounting volumes, detaching loop devices, removing the node network', async (ctx) => {
    for (const m of mountsUnder(stateDir)) {
      await run('umount', [m]).catch(() => run('umount', ['-l', m]));
      ctx.detail(`unmounted ${m}`);
    }
    await detachLoopDevices();
    await deleteNodeNetwork();
  });
  await progress.step(`Removing ${stateDir}`, async () => {
    const left = existsSync(stateDir) ? mountsUnder(stateDir) : [];
    if (left.length > 0) throw new ClusterError(`still mounted, not removing ${stateDir}:\n  ${left.join('\n  ')}`);
    // --one-file-system: never follow a mount we failed to see into another filesystem.
    if (existsSync(stateDir)) await run('rm', ['-rf', '--one-file-system', stateDir]);
  });
  process.stderr.write(`Cluster is down (${progress.elapsed()}); binaries stay cached in ${paths.binCache}.\n`);
}

export interface ComponentStatus {
  name: string;
  pid?: number;
  ready: boolean;
}

export interface KubernetesVersions {
  /** What the state directory was brought up with (see stateKubernetesVersion). */
  state?: string;
  /** What PVX_KUBERNETES_VERSION selects now. */
  selected: string;
  /** What the running API server and the Node's kubelet report. */
  apiserver?: string;
  kubelet?: string;
}

/** Which Kubernetes runs, as its components report it, and whether `up` now would select another. */
export function kubernetesLine(k: KubernetesVersions): string {
  const running = k.apiserver ?? k.state;
  const parts = [`Kubernetes: ${running ?? 'none (no cluster state)'}`];
  if (k.apiserver) parts.push(`API server ${k.apiserver}${k.kubelet ? `, kubelet ${k.kubelet}` : ''}`);
  else if (k.state) parts.push('recorded in the state directory; the API server is not answering');
  if (running !== undefined && k.selected !== running) {
    parts.push(`PVX_KUBERNETES_VERSION selects ${k.selected}: \`cluster:down\` before \`cluster:up\` to switch`);
  }
  return parts.join('; ');
}

export async function status(): Promise<{ components: ComponentStatus[]; nodeReady: boolean; csiRegistered: boolean; kubernetes: KubernetesVersions }> {
  const result: ComponentStatus[] = [];
  for (const c of components) {
    const pid = daemonPid(c.name);
    result.push({ name: c.name, pid, ready: pid !== undefined && (await c.ready().catch(() => false)) });
  }
  const apiUp = result.find((r) => r.name === 'kube-apiserver')?.ready ?? false;
  const kubernetes: KubernetesVersions = { state: stateKubernetesVersion(), selected: versions.kubernetes };
  if (apiUp) {
    kubernetes.apiserver = await probe(`${apiserverURL}/version`, { ca: pki.caCert, cert: pki.cert(identities.admin), key: pki.key(identities.admin) })
      .then((r) => (JSON.parse(r.body) as { gitVersion?: string }).gitVersion)
      .catch(() => undefined);
    kubernetes.kubelet = (await kubectl(['get', 'node', nodeName, '-o', 'jsonpath={.status.nodeInfo.kubeletVersion}']).catch(() => '')).trim() || undefined;
  }
  return {
    kubernetes,
    components: result,
    nodeReady: apiUp && (await nodeReady().catch(() => false)),
    csiRegistered: apiUp && (await csiNodeHasDriver().catch(() => false)) && (await csiNodeHasDriver(ebs.driverName).catch(() => false)),
  };
}

// For e2e suites that exercise failures of the cluster itself (issue: operator runtime).

export async function stopComponent(name: string): Promise<void> {
  await stopDaemon(component(name).name);
}

export async function killComponent(name: string): Promise<number | undefined> {
  return killDaemon(component(name).name);
}

export async function startComponentByName(name: string): Promise<void> {
  const noop = { detail: () => {}, log: () => {} };
  await startComponent(component(name), await binaries(), noop);
}

export function isUp(): boolean {
  return existsSync(paths.kubeconfig) && components.every((c) => daemonPid(c.name) !== undefined);
}
