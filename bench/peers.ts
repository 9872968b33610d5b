// pvx side by side with a Go peer (topolvm/pvc-autoresizer, given as a binary) on one cluster, in
// one run, both at their defaults, each as its own ServiceAccount so that the API server's audit
// log (test/cluster/audit.ts records reads of the pvx-bench group too) attributes every request:
//
//   idle        RSS, CPU over --idle-seconds, API requests per minute, with no claims of theirs
//   scale       RSS with --claims Pending claims cached (then deleted)
//   fill        a 1Gi XFS volume per tool filling at ~8 MiB/s: fill start → threshold → patch,
//               writes that failed for lack of space, and the API writes each expansion cost
//   throughput  pvx alone: --requests requests created at once on as many claims; p50/p99 from
//               creation to the claim's patch and to Completed, pvx's request rate, pvx's share
//   shards      two pvx instances (--namespace-selector, a Lease and a ServiceAccount each) over
//               disjoint halves of --claims claims: what each caches, and that no object is
//               written by both
//
//   npm run build && node bench/peers.ts [--peer-binary PATH]
//       [--phases idle,scale,fill,policy,throughput,shards,big] (default: all but big, which runs last)
//       [--claims 10000] [--policy-seconds 120] [--big-claims 100000] [--requests 1000] [--idle-seconds 120]
//
// Without --peer-binary, pvx runs alone and its rows are printed. It installs pvx's CRDs first
// (pvx install-crds: a cluster fresh from cluster:up has none, and pvx run refuses to start
// without them). The embedded cluster (npm run cluster:up) is the cluster: the benchmark reads its
// audit log and its kubelet through Prometheus (Debian's, for the peer, which reads usage only
// from Prometheus).
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  StorageV1Api,
  setHeaderOptions,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { parseAllDocuments, stringify } from 'yaml';
import { identities, pki } from '../test/cluster/pki.ts';
import { paths, ports } from '../test/cluster/layout.ts';
import { auditLogEnd, readAuditEvents, type AuditEvent } from '../test/e2e/support/audit-log.ts';
import { execInPod } from '../test/e2e/support/kube.ts';
import { startPrometheus, stopPrometheus, type PrometheusServer } from '../test/e2e/support/prometheus.ts';

const { values } = parseArgs({
  options: {
    'peer-binary': { type: 'string' },
    phases: { type: 'string', default: 'idle,scale,fill,policy,throughput,shards' },
    claims: { type: 'string', default: '10000' },
    'policy-seconds': { type: 'string', default: '120' },
    'big-claims': { type: 'string', default: '100000' },
    requests: { type: 'string', default: '1000' },
    'idle-seconds': { type: 'string', default: '120' },
  },
});
const phases = new Set(values.phases.split(','));
const repoRoot = resolve(import.meta.dirname, '..');
const pvxMain = join(repoRoot, 'dist', 'cli', 'main.js');
const kc = new KubeConfig();
kc.loadFromFile(process.env.KUBECONFIG ?? paths.kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const storage = kc.makeApiClient(StorageV1Api);
const objects = KubernetesObjectApi.makeApiClient(kc);
const benchNs = 'pvx-bench';
/** On every cluster-scoped object the bench makes, so that cleanUp finds each one. */
const benchLabels = { 'app.kubernetes.io/part-of': 'pvx-bench' };
const users = {
  pvx: `system:serviceaccount:${benchNs}:pvx`,
  pvxB: `system:serviceaccount:${benchNs}:pvx-b`,
  peer: `system:serviceaccount:${benchNs}:pvc-autoresizer`,
};
const workDir = mkdtempSync(join(tmpdir(), 'pvx-bench-'));
const log = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

// --- processes -----------------------------------------------------------------------------

interface Proc {
  name: string;
  child: ChildProcess;
  pid: number;
  health: string;
  /** performance.now() at the spawn, and how long after it /readyz answered 200. */
  startedAt: number;
  readyMs?: number;
}

/** RSS and peak RSS (MiB) of a process, from /proc. */
function memory(pid: number): { rss: number; peak: number } {
  const field = (name: string) => Number(readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${name}:\\s+(\\d+)`, 'm'))?.[1] ?? NaN) / 1024;
  return { rss: field('VmRSS'), peak: field('VmHWM') };
}

/** User + system CPU seconds a process has used, from /proc (clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function waitFor(what: string, timeoutMs: number, check: () => Promise<boolean> | boolean, everyMs = 500): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (
      await Promise.resolve(check()).catch((err: unknown) => {
        if (err instanceof ExitedError) throw err;
        return false;
      })
    )
      return Date.now() - started;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

function spawnLogged(name: string, command: string, args: string[], env: NodeJS.ProcessEnv = {}): ChildProcess {
  const out = join(workDir, `${name}.log`);
  writeFileSync(out, '');
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const append = (chunk: Buffer) => writeFileSync(out, chunk, { flag: 'a' });
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  return child;
}

/** The last lines a process wrote (its log), to say why it stopped. */
function logTail(name: string, lines = 5): string {
  const text = existsSync(join(workDir, `${name}.log`)) ? readFileSync(join(workDir, `${name}.log`), 'utf8') : '';
  return text.trim().split('\n').slice(-lines).join('\n');
}

/** Waits for a process's /readyz; a process that exits meanwhile ends the wait at once, with its last words. */
async function waitReady(proc: Proc, timeoutMs = 120_000): Promise<number> {
  return waitFor(
    `${proc.name} /readyz`,
    timeoutMs,
    async () => {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
        throw new ExitedError(`${proc.name} exited (${proc.child.exitCode ?? proc.child.signalCode}) before it was ready: ${logTail(proc.name)}`);
      }
      return (await fetch(proc.health)).ok;
    },
    200,
  );
}

class ExitedError extends Error {}

async function startPvx(kubeconfig: string, port: number, name = 'pvx-bench', extra: string[] = []): Promise<Proc> {
  if (!existsSync(pvxMain)) throw new Error(`${pvxMain} is missing: run npm run build first (the benchmark runs pvx as it ships)`);
  // Metrics over plain HTTP, as pvc-autoresizer serves its own: the benchmark reads them without a
  // token, and its users need no token review permissions. Health on port + 100.
  const child = spawnLogged(name, process.execPath, [
    '--optimize-for-size',
    pvxMain,
    'run',
    '--kubeconfig',
    kubeconfig,
    '--leader-election-namespace',
    benchNs,
    '--metrics-bind-address',
    `127.0.0.1:${port}`,
    '--metrics-secure=false',
    '--health-probe-bind-address',
    `127.0.0.1:${port + 100}`,
    '--identity',
    name,
    '--log-level',
    'warn',
    ...extra,
  ]);
  const proc: Proc = { name, child, pid: child.pid as number, health: `http://127.0.0.1:${port + 100}/readyz`, startedAt: performance.now() };
  proc.readyMs = await waitReady(proc);
  return proc;
}

/**
 * pvc-autoresizer always elects a leader and reads the Lease's namespace only from the in-cluster
 * service account file: it runs in a private mount namespace where that one file says pvx-bench
 * (a tmpfs over /run, seen by this process alone; the host is untouched).
 */
async function startPeer(binary: string, kubeconfig: string, prometheusUrl: string, port: number): Promise<Proc> {
  const script =
    'mount -t tmpfs -o size=1m tmpfs /run && mkdir -p /run/secrets/kubernetes.io/serviceaccount && printf %s "$0" > /run/secrets/kubernetes.io/serviceaccount/namespace && exec "$@"';
  const child = spawnLogged(
    'pvc-autoresizer',
    'unshare',
    [
      '-m',
      '--propagation',
      'private',
      'sh',
      '-c',
      script,
      benchNs,
      binary,
      `--prometheus-url=${prometheusUrl}`,
      '--interval=10s',
      '--pvc-mutating-webhook-enabled=false',
      `--metrics-addr=127.0.0.1:${port}`,
      `--health-addr=127.0.0.1:${port + 1}`,
    ],
    { KUBECONFIG: kubeconfig },
  );
  const proc: Proc = { name: 'pvc-autoresizer', child, pid: child.pid as number, health: `http://127.0.0.1:${port + 1}/readyz`, startedAt: performance.now() };
  proc.readyMs = await waitReady(proc);
  return proc;
}

async function stop(p: Proc | undefined): Promise<void> {
  if (!p || p.child.exitCode !== null || p.child.signalCode !== null) return;
  const exited = new Promise((r) => p.child.once('exit', r));
  p.child.kill('SIGTERM');
  const timer = setTimeout(() => p.child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

/** Both lead their Lease (each works only as leader). */
async function leading(holderPrefix: string, lease: string): Promise<boolean> {
  const l = (await objects.read({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: lease, namespace: benchNs } })) as KubernetesObject & {
    spec?: { holderIdentity?: string };
  };
  return (l.spec?.holderIdentity ?? '').startsWith(holderPrefix);
}

// --- identities ----------------------------------------------------------------------------

async function apply(obj: KubernetesObject): Promise<void> {
  const existing = await objects.read(obj as KubernetesObject & { metadata: { name: string } }).catch(() => undefined);
  if (existing) await objects.replace({ ...obj, metadata: { ...obj.metadata, resourceVersion: existing.metadata?.resourceVersion } });
  else await objects.create(obj);
}

/** pvx with the ClusterRoles it ships (config/rbac), the peer with the rules of its own chart; a Lease Role for both. */
async function identitiesAndKubeconfigs(): Promise<{ pvx: string; pvxB: string; peer: string }> {
  await core.createNamespace({ body: { metadata: { name: benchNs } } }).catch(() => undefined);
  const pvxRoles: string[] = [];
  let readerRole = '';
  for (const file of ['role.yaml', 'kubelet_usage_role.yaml']) {
    for (const doc of parseAllDocuments(readFileSync(join(repoRoot, 'config', 'rbac', file), 'utf8'))) {
      const obj = doc.toJS() as KubernetesObject;
      if (obj.kind !== 'ClusterRole') continue;
      // The product's rules under the bench's own name: a ClusterRole named like the product's
      // (pvx-manager) would make a later helm install on this cluster fail.
      const name = `pvx-bench-${obj.metadata?.name}`;
      await apply({ ...obj, metadata: { name, labels: benchLabels } });
      // nodes/stats is the kubelet reader's (pvx-usage-reader), whose tokens pvx mints: as shipped.
      if (file === 'kubelet_usage_role.yaml') readerRole = name;
      else pvxRoles.push(name);
    }
  }
  await core.createNamespacedServiceAccount({ namespace: benchNs, body: { metadata: { name: 'pvx-usage-reader' } } }).catch(() => undefined);
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'pvx-bench-pvx-usage-reader', labels: benchLabels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: readerRole },
    subjects: [{ kind: 'ServiceAccount', name: 'pvx-usage-reader', namespace: benchNs }],
  } as KubernetesObject);
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'pvx-bench-kubelet-identity', namespace: benchNs },
    rules: [{ apiGroups: [''], resources: ['serviceaccounts/token'], resourceNames: ['pvx-usage-reader'], verbs: ['create'] }],
  } as KubernetesObject);
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'pvx-bench-pvc-autoresizer', labels: benchLabels },
    rules: [
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'list', 'watch', 'update', 'patch'] },
      { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] },
      { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get', 'list', 'watch'] },
    ],
  } as KubernetesObject);
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata: { name: 'pvx-bench-leader-election', namespace: benchNs },
    rules: [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'] },
      { apiGroups: [''], resources: ['events', 'configmaps'], verbs: ['create', 'patch', 'get', 'list', 'watch', 'update'] },
    ],
  } as KubernetesObject);
  const bindings: [string, string, string][] = [
    ...['pvx', 'pvx-b'].flatMap((sa) => [
      ...pvxRoles.map((r): [string, string, string] => [sa, 'ClusterRole', r]),
      [sa, 'Role', 'pvx-bench-leader-election'] as [string, string, string],
      [sa, 'Role', 'pvx-bench-kubelet-identity'] as [string, string, string],
    ]),
    ['pvc-autoresizer', 'ClusterRole', 'pvx-bench-pvc-autoresizer'],
    ['pvc-autoresizer', 'Role', 'pvx-bench-leader-election'],
  ];
  const kubeconfigs: Record<string, string> = {};
  for (const sa of ['pvx', 'pvx-b', 'pvc-autoresizer']) {
    await core.createNamespacedServiceAccount({ namespace: benchNs, body: { metadata: { name: sa } } }).catch(() => undefined);
    for (const [who, kind, role] of bindings.filter(([w]) => w === sa)) {
      const name = `pvx-bench-${who}-${role}`;
      const meta = kind === 'Role' ? { name, namespace: benchNs } : { name, labels: benchLabels };
      await apply({
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: `${kind}Binding`,
        metadata: meta,
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind, name: role },
        subjects: [{ kind: 'ServiceAccount', name: sa, namespace: benchNs }],
      } as KubernetesObject);
    }
    const token = await core.createNamespacedServiceAccountToken({
      namespace: benchNs,
      name: sa,
      body: { spec: { audiences: [], expirationSeconds: 6 * 3600 } },
    });
    const cluster = kc.getCurrentCluster();
    const file = join(workDir, `${sa}.kubeconfig`);
    writeFileSync(
      file,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'c',
            cluster: {
              server: cluster?.server,
              'certificate-authority-data': cluster?.caData ?? (cluster?.caFile ? readFileSync(cluster.caFile).toString('base64') : undefined),
            },
          },
        ],
        users: [{ name: sa, user: { token: token.status?.token } }],
        contexts: [{ name: sa, context: { cluster: 'c', user: sa } }],
        'current-context': sa,
      }),
      { mode: 0o600 },
    );
    kubeconfigs[sa] = file;
  }
  return { pvx: kubeconfigs.pvx as string, pvxB: kubeconfigs['pvx-b'] as string, peer: kubeconfigs['pvc-autoresizer'] as string };
}

// --- the audit log -------------------------------------------------------------------------

const by = (events: AuditEvent[], user: string) => events.filter((e) => e.user.username === user);
/** `user`'s successful write of a claim's spec (a resize: neither tool writes a claim otherwise). */
const claimPatchedBy = (user: string, claim: string) => (e: AuditEvent) =>
  e.user.username === user &&
  e.objectRef?.resource === 'persistentvolumeclaims' &&
  !e.objectRef.subresource &&
  e.objectRef.name === claim &&
  ['patch', 'update'].includes(e.verb) &&
  (e.responseStatus?.code ?? 0) < 300;
const isWrite = (e: AuditEvent) => ['create', 'update', 'patch', 'delete'].includes(e.verb);
const what = (e: AuditEvent) => `${e.verb} ${e.objectRef?.resource ?? '?'}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;

function tally(events: AuditEvent[]): string {
  const counts = new Map<string, number>();
  for (const e of events) counts.set(what(e), (counts.get(what(e)) ?? 0) + 1);
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');
}

/** Reads are recorded for the bench's users only when the cluster runs the current audit policy. */
async function checkAuditReads(pvxKubeconfig: string): Promise<void> {
  const from = auditLogEnd();
  const probe = new KubeConfig();
  probe.loadFromFile(pvxKubeconfig);
  await probe
    .makeApiClient(CoreV1Api)
    .listNamespacedPersistentVolumeClaim({ namespace: benchNs, limit: 1 })
    .catch(() => undefined);
  await sleep(500);
  if (!by(readAuditEvents(from), users.pvx).some((e) => e.verb === 'list')) {
    throw new Error(
      "the API server does not record the bench users' reads: its audit policy predates test/cluster/audit.ts's read rule; restart the cluster (npm run cluster:down && npm run cluster:up)",
    );
  }
}

// --- rows ----------------------------------------------------------------------------------

type Row = [string, string, string];
/** Rows as measured (each also logged at once, so a run cut short keeps what it measured). */
const rows = new (class extends Array<Row> {
  override push(...items: Row[]): number {
    for (const [k, a, b] of items) log(`row: ${k} | ${a} | ${b}`);
    return super.push(...items);
  }
})();
const notes: string[] = [];
const mib = (n: number) => `${n.toFixed(0)} MiB`;
const ratio = (a: number, b: number) => (b > 0 && Number.isFinite(a / b) ? `${(a / b).toFixed(2)}×` : '');

function table(peer: boolean): string {
  const head = peer ? ['| | pvx | pvc-autoresizer | pvx / peer |', '|---|---|---|---|'] : ['| | pvx |', '|---|---|'];
  return [...head, ...rows.map(([k, a, b]) => (peer ? `| ${k} | ${a} | ${b} | ${ratio(parseFloat(a), parseFloat(b))} |` : `| ${k} | ${a} |`))].join('\n');
}

// --- phases --------------------------------------------------------------------------------

async function idle(pvx: Proc, peer: Proc | undefined, seconds: number): Promise<void> {
  log(`idle: settling 30 s, then ${seconds} s measured`);
  await sleep(30_000);
  const procs = [pvx, peer].filter((p): p is Proc => p !== undefined);
  const cpu0 = procs.map((p) => cpuSeconds(p.pid));
  const from = auditLogEnd();
  await sleep(seconds * 1000);
  const cpu1 = procs.map((p) => cpuSeconds(p.pid));
  const events = readAuditEvents(from);
  const mem = procs.map((p) => memory(p.pid));
  const perMin = (u: string) => (by(events, u).length / seconds) * 60;
  rows.push(['RSS, idle (no claims of theirs)', mib(mem[0]?.rss ?? NaN), peer ? mib(mem[1]?.rss ?? NaN) : '']);
  rows.push([
    `CPU over ${seconds} idle seconds`,
    `${((cpu1[0] ?? 0) - (cpu0[0] ?? 0)).toFixed(2)} s`,
    peer ? `${((cpu1[1] ?? 0) - (cpu0[1] ?? 0)).toFixed(2)} s` : '',
  ]);
  rows.push(['API requests per idle minute', perMin(users.pvx).toFixed(1), peer ? perMin(users.peer).toFixed(1) : '']);
  notes.push(`idle requests, pvx: ${tally(by(events, users.pvx))}`);
  if (peer) notes.push(`idle requests, pvc-autoresizer: ${tally(by(events, users.peer))}`);
}

async function scale(pvx: Proc, peer: Proc | undefined, count: number): Promise<void> {
  const ns = 'pvx-bench-scale';
  await core.createNamespace({ body: { metadata: { name: ns } } }).catch(() => undefined);
  log(`scale: creating ${count} Pending claims`);
  const started = Date.now();
  await createClaims(ns, count, 'pvx-bench-unprovisioned', '10Gi');
  log(`scale: created in ${((Date.now() - started) / 1000).toFixed(1)} s; settling 60 s`);
  await sleep(60_000);
  const procs = [pvx, peer].filter((p): p is Proc => p !== undefined);
  const mem = procs.map((p) => memory(p.pid));
  rows.push([`RSS, ${count} claims cached`, mib(mem[0]?.rss ?? NaN), peer ? mib(mem[1]?.rss ?? NaN) : '']);
  rows.push([`peak RSS, ${count} claims cached`, mib(mem[0]?.peak ?? NaN), peer ? mib(mem[1]?.peak ?? NaN) : '']);
  notes.push(`scale: ${count} claims created in ${((Date.now() - started) / 1000 - 60).toFixed(1)} s`);
  log('scale: deleting the claims');
  await deleteNamespace(ns);
}

/**
 * A pod that appends 8 MiB then sleeps 1 s, N times, logging each write with the time and the
 * filesystem's used and total KiB; a write that fails (no space) is logged FAIL and removed.
 */
function fillScript(writes: number): string {
  return `until [ -e /data/go ]; do sleep 1; done; i=0; while [ $i -lt ${writes} ]; do if dd if=/dev/zero of=/data/f$i bs=1M count=8 2>/dev/null; then r=ok; else r=FAIL; rm -f /data/f$i; fi; echo "$(date +%s) $r $i $(df -k /data | awk 'NR==2{print $3, $2}')"; i=$((i+1)); sleep 1; done; sleep 3600`;
}

interface FillLine {
  at: number;
  ok: boolean;
  usedKiB: number;
  totalKiB: number;
}

async function fillLog(ns: string, pod: string): Promise<FillLine[]> {
  const text = await core.readNamespacedPodLog({ namespace: ns, name: pod });
  return text.split('\n').flatMap((line) => {
    const m = /^(\d+) (ok|FAIL) \d+ (\d+) (\d+)$/.exec(line.trim());
    return m ? [{ at: Number(m[1]) * 1000, ok: m[2] === 'ok', usedKiB: Number(m[3]), totalKiB: Number(m[4]) }] : [];
  });
}

async function fill(peerRunning: boolean): Promise<void> {
  const ns = 'pvx-bench-fill';
  const cls = 'pvx-xfs';
  await core.createNamespace({ body: { metadata: { name: ns } } }).catch(() => undefined);
  // The peer acts only on classes that opt in, and on claims with a storage limit.
  await storage.patchStorageClass(
    { name: cls, body: { metadata: { annotations: { 'resize.topolvm.io/enabled': 'true' } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  const tools: { tool: string; user: string; claim: string; labels: Record<string, string>; annotations: Record<string, string>; thresholdPercent: number }[] =
    [
      { tool: 'pvx', user: users.pvx, claim: 'fill-pvx', labels: { 'pvx-bench/fill': 'pvx' }, annotations: {}, thresholdPercent: 90 },
      ...(peerRunning
        ? [
            {
              tool: 'pvc-autoresizer',
              user: users.peer,
              claim: 'fill-peer',
              labels: {},
              annotations: { 'resize.topolvm.io/storage_limit': '10Gi' },
              thresholdPercent: 90,
            },
          ]
        : []),
    ];
  // pvx's policy with the same threshold as the peer's default (10 % free), all else default.
  await custom.createNamespacedCustomObject({
    group: 'pvx.dev',
    version: 'v1alpha1',
    namespace: ns,
    plural: 'volumeexpansionpolicies',
    body: {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionPolicy',
      metadata: { name: 'fill' },
      spec: { selector: { matchLabels: { 'pvx-bench/fill': 'pvx' } }, triggers: { usedPercent: 90 }, maxSize: '10Gi' },
    },
  });
  for (const t of tools) {
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: t.claim, labels: t.labels, annotations: t.annotations },
        spec: { accessModes: ['ReadWriteOnce'], storageClassName: cls, resources: { requests: { storage: '1Gi' } } },
      },
    });
  }
  await waitFor('the fill claims to bind', 120_000, async () =>
    (await core.listNamespacedPersistentVolumeClaim({ namespace: ns })).items.every((c) => c.status?.phase === 'Bound'),
  );
  // The writes counted are the expansions'. Before them pvx's policy takes its claim: a status
  // write when the claim binds (matchedPVCs 0 → 1, the claim listed as usage unknown while no pod
  // mounts it) and one when its first measurement shows it idle (no longer listed), once per claim.
  // So the pods start idle, and write once pvx has measured its claim, as the policy e2e test
  // waits before it counts; the writes of taking the claim are reported on their own.
  const taking = auditLogEnd();
  const image = 'pvx.local/busybox:1.35';
  const writes = 224; // 1.75 GiB in 8 MiB writes
  for (const t of tools) {
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: t.claim },
        spec: {
          restartPolicy: 'Never',
          containers: [
            { name: 'main', image, imagePullPolicy: 'Never', command: ['sh', '-c', fillScript(writes)], volumeMounts: [{ name: 'data', mountPath: '/data' }] },
          ],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: t.claim } }],
        },
      },
    });
  }
  await waitFor('the fill pods to run', 120_000, async () => {
    for (const t of tools) if ((await core.readNamespacedPod({ namespace: ns, name: t.claim })).status?.phase !== 'Running') return false;
    return true;
  });
  await waitFor('pvx’s policy to take its claim and measure it idle', 180_000, async () => {
    const policy = (await custom.getNamespacedCustomObject({
      group: 'pvx.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'volumeexpansionpolicies',
      name: 'fill',
    })) as { status?: { matchedPVCs?: number; volumes?: unknown[] } };
    return policy.status?.matchedPVCs === 1 && (policy.status.volumes ?? []).length === 0;
  });
  const takingWrites = by(readAuditEvents(taking), users.pvx).filter((e) => isWrite(e) && e.objectRef?.namespace === ns && (e.responseStatus?.code ?? 0) < 300);
  notes.push(
    `fill, pvx: its policy took the claim with ${takingWrites.length} writes (${tally(takingWrites) || 'none'}), before the fill and not counted in it`,
  );
  const from = auditLogEnd();
  for (const t of tools) await execInPod(ns, t.claim, ['touch', '/data/go']);
  log(`fill: ${tools.length} pods writing 8 MiB/s until ${writes} writes`);
  await waitFor(
    'the fill pods to finish writing',
    900_000,
    async () => {
      for (const t of tools) if ((await fillLog(ns, t.claim)).length < writes) return false;
      return true;
    },
    5000,
  );
  await sleep(5000);
  const events = readAuditEvents(from).filter((e) => e.objectRef?.namespace === ns || e.objectRef?.resource === 'events');
  const results: Record<
    string,
    { toThreshold: number; toPatch: number; afterThreshold: number; usedAtPatch: number; failed: number; writes: string; writeCount: number }
  > = {};
  for (const t of tools) {
    const lines = await fillLog(ns, t.claim);
    const start = lines[0]?.at ?? NaN;
    const crossed = lines.find((l) => l.usedKiB / l.totalKiB >= t.thresholdPercent / 100)?.at ?? NaN;
    const patch = by(events, t.user).find(
      (e) =>
        isWrite(e) &&
        e.objectRef?.resource === 'persistentvolumeclaims' &&
        !e.objectRef.subresource &&
        e.objectRef.name === t.claim &&
        (e.responseStatus?.code ?? 0) < 300,
    );
    const patchedAt = patch ? Date.parse(patch.stageTimestamp) : NaN;
    // Writes the API server accepted; a refused one (a 409 on a stale version) is counted apart.
    const attempted = by(events, t.user).filter((e) => isWrite(e) && e.objectRef?.namespace === ns);
    const mine = attempted.filter((e) => (e.responseStatus?.code ?? 0) < 300);
    if (attempted.length > mine.length)
      notes.push(`fill, ${t.tool}: ${attempted.length - mine.length} writes refused (${tally(attempted.filter((e) => (e.responseStatus?.code ?? 0) >= 300))})`);
    const expansions = mine.filter(
      (e) => e.objectRef?.resource === 'persistentvolumeclaims' && !e.objectRef.subresource && (e.responseStatus?.code ?? 0) < 300,
    ).length;
    results[t.tool] = {
      toThreshold: (crossed - start) / 1000,
      toPatch: (patchedAt - start) / 1000,
      afterThreshold: (patchedAt - crossed) / 1000,
      // The volume's use as the pod last saw it before the patch.
      usedAtPatch: (() => {
        const before = lines.filter((l) => l.at <= patchedAt).at(-1);
        return before ? (100 * before.usedKiB) / before.totalKiB : NaN;
      })(),
      failed: lines.filter((l) => !l.ok).length,
      writes: `${tally(mine)} (${expansions} expansions)`,
      writeCount: mine.length / Math.max(1, expansions),
    };
  }
  const cell = (tool: string, f: (r: (typeof results)[string]) => string) => (results[tool] ? f(results[tool]) : '');
  rows.push([
    '1Gi XFS filling at 8 MiB/s: fill start → claim patched',
    cell('pvx', (r) => `${r.toPatch.toFixed(0)} s`),
    cell('pvc-autoresizer', (r) => `${r.toPatch.toFixed(0)} s`),
  ]);
  // A tool that grew the claim before it reached 90 % (pvx's forecast of the fill) has no time after the threshold: say when it acted instead.
  const afterThreshold = (r: (typeof results)[string]) =>
    Number.isFinite(r.afterThreshold) && r.afterThreshold >= 0
      ? `${r.afterThreshold.toFixed(0)} s`
      : `before it: patched at ${r.usedAtPatch.toFixed(0)} % used`;
  rows.push(['… 90 % used (both thresholds) → claim patched', cell('pvx', afterThreshold), cell('pvc-autoresizer', afterThreshold)]);
  rows.push(['writes that failed because the volume was full', cell('pvx', (r) => String(r.failed)), cell('pvc-autoresizer', (r) => String(r.failed))]);
  rows.push(['API writes per auto-expansion', cell('pvx', (r) => r.writeCount.toFixed(1)), cell('pvc-autoresizer', (r) => r.writeCount.toFixed(1))]);
  // What pvx's Events said (the audit log has no bodies): which of its writes were Events of what.
  const pvxEvents = (await core.listNamespacedEvent({ namespace: ns })).items.filter((e) => e.source?.component === 'pvx');
  if (pvxEvents.length > 0) {
    const reasons = new Map<string, number>();
    for (const e of pvxEvents) {
      const what = `${e.reason ?? '?'} on ${e.involvedObject.kind ?? '?'} ${e.involvedObject.name ?? '?'}`;
      reasons.set(what, (reasons.get(what) ?? 0) + 1);
    }
    notes.push(`fill, pvx's Events: ${[...reasons].map(([what, n]) => `${n} ${what}`).join('; ')}`);
  }
  for (const [tool, r] of Object.entries(results))
    notes.push(
      `fill, ${tool}: ${Number.isFinite(r.toThreshold) ? `threshold crossed ${r.toThreshold.toFixed(0)} s after the fill began` : 'the volume never reached 90 % (grown before)'}; claim patched at ${r.usedAtPatch.toFixed(0)} % used; writes: ${r.writes}`,
    );
  await storage.patchStorageClass(
    { name: cls, body: { metadata: { annotations: { 'resize.topolvm.io/enabled': null } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  await deleteNamespace(ns);
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN;
};

async function throughput(count: number): Promise<void> {
  const ns = 'pvx-bench-throughput';
  await core.createNamespace({ body: { metadata: { name: ns } } }).catch(() => undefined);
  log(`throughput: ${count} claims on pvx-hostpath-online`);
  const names = Array.from({ length: count }, (_, i) => `c-${String(i).padStart(5, '0')}`);
  const inParallel = async (n: number, fn: (name: string) => Promise<unknown>) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: n }, async () => {
        while (next < names.length) await fn(names[next++] as string);
      }),
    );
  };
  await inParallel(32, (name) =>
    core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name },
        spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'pvx-hostpath-online', resources: { requests: { storage: '1Gi' } } },
      },
    }),
  );
  const bindMs = await waitFor(
    'the claims to bind',
    1_800_000,
    async () => (await core.listNamespacedPersistentVolumeClaim({ namespace: ns })).items.filter((c) => c.status?.phase === 'Bound').length === count,
    5000,
  );
  log(`throughput: bound in ${(bindMs / 1000).toFixed(0)} s; creating ${count} requests at once`);
  // Where pvx's part goes: waiting in its request queue for one of its workers, or in a worker
  // (mostly on the API server), from the request controller's work-queue metrics over the phase.
  const metricsUrl = 'http://127.0.0.1:18781/metrics';
  const queueMetrics = async () => {
    // A series not observed yet is not exposed at all: 0.
    const read = async (m: string) => (await metricAt(metricsUrl, m, 'name="expansion-request"')) || 0;
    return {
      waitSum: await read('workqueue_queue_duration_seconds_sum'),
      waitCount: await read('workqueue_queue_duration_seconds_count'),
      workSum: await read('workqueue_work_duration_seconds_sum'),
      workCount: await read('workqueue_work_duration_seconds_count'),
    };
  };
  const queueBefore = await queueMetrics();
  // pvx's own part by its own clock: its first sight of each new request (the watch event) to its patch sent.
  const ownBefore = await histogramAt(metricsUrl, 'pvx_request_seen_to_patch_seconds');
  const ownSumBefore = (await metricAt(metricsUrl, 'pvx_request_seen_to_patch_seconds_sum')) || 0;
  const from = auditLogEnd();
  // The deepest the request queue got (sampled twice a second until every request completed):
  // keys waiting for a worker, new requests and requests woken again alike.
  let deepest = 0;
  const depthSampler = setInterval(() => {
    metricAt(metricsUrl, 'workqueue_depth', 'name="expansion-request"').then(
      (depth) => (deepest = Math.max(deepest, depth || 0)),
      () => undefined,
    );
  }, 500);
  const created = Date.now();
  await inParallel(32, (name) =>
    custom.createNamespacedCustomObject({
      group: 'pvx.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'volumeexpansionrequests',
      body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionRequest', metadata: { name }, spec: { target: { pvcName: name }, size: '2Gi' } },
    }),
  );
  const createMs = Date.now() - created;
  const doneMs = await waitFor(
    'every request to complete',
    3_600_000,
    async () => {
      const list = (await custom.listNamespacedCustomObject({ group: 'pvx.dev', version: 'v1alpha1', namespace: ns, plural: 'volumeexpansionrequests' })) as {
        items: { status?: { phase?: string } }[];
      };
      return list.items.filter((r) => r.status?.phase === 'Completed').length === count;
    },
    5000,
  );
  clearInterval(depthSampler);
  const queueAfter = await queueMetrics();
  const ownAfter = await histogramAt(metricsUrl, 'pvx_request_seen_to_patch_seconds');
  const ownSum = ((await metricAt(metricsUrl, 'pvx_request_seen_to_patch_seconds_sum')) || 0) - ownSumBefore;
  const events = readAuditEvents(from).filter((e) => e.objectRef?.namespace === ns);
  const at = (e: AuditEvent | undefined) => (e ? Date.parse(e.stageTimestamp) : NaN);
  const first = <T>(xs: T[], f: (x: T) => boolean) => xs.find(f);
  const byName = new Map<string, AuditEvent[]>();
  for (const e of events) {
    const key = `${e.objectRef?.resource}/${e.objectRef?.name}`;
    byName.set(key, [...(byName.get(key) ?? []), e]);
  }
  const toPatch: number[] = [];
  const toDone: number[] = [];
  const pvxShare: number[] = [];
  const toFirstWrite: number[] = [];
  for (const name of names) {
    const req = byName.get(`volumeexpansionrequests/${name}`) ?? [];
    const claim = byName.get(`persistentvolumeclaims/${name}`) ?? [];
    const create = at(first(req, (e) => e.verb === 'create' && !e.objectRef?.subresource));
    const patch = at(first(claim, (e) => e.user.username === users.pvx && e.verb === 'patch' && !e.objectRef?.subresource));
    // The resizer's last status write of the claim: the capacity the request waited for.
    const resized = at([...claim].reverse().find((e) => e.user.username !== users.pvx && e.objectRef?.subresource === 'status' && isWrite(e)));
    const done = at(
      [...req]
        .reverse()
        .find((e) => e.user.username === users.pvx && e.objectRef?.subresource === 'status' && JSON.stringify(e.requestObject ?? {}).includes('"Completed"')),
    );
    // pvx's first write for the request (its status: the intent before the patch).
    const firstWrite = at(first(req, (e) => e.user.username === users.pvx && isWrite(e)));
    toFirstWrite.push((firstWrite - create) / 1000);
    toPatch.push((patch - create) / 1000);
    toDone.push((done - create) / 1000);
    pvxShare.push((patch - create + (done - resized)) / 1000);
  }
  const mine = by(events, users.pvx);
  const seconds = (at(mine[mine.length - 1]) - at(mine[0])) / 1000;
  const ok = (e: AuditEvent) => (e.responseStatus?.code ?? 0) < 300;
  const statusWrites = mine.filter((e) => e.objectRef?.resource === 'volumeexpansionrequests' && e.objectRef.subresource === 'status' && isWrite(e));
  const perRequest = new Map<string, number>();
  for (const e of statusWrites.filter(ok)) perRequest.set(e.objectRef?.name ?? '', (perRequest.get(e.objectRef?.name ?? '') ?? 0) + 1);
  const writesEach = names.map((n) => perRequest.get(n) ?? 0);
  const perSecond = new Map<number, number>();
  for (const e of mine) perSecond.set(Math.floor(at(e) / 1000), (perSecond.get(Math.floor(at(e) / 1000)) ?? 0) + 1);
  const fmt = (xs: number[]) => `p50 ${percentile(xs, 50).toFixed(2)} s, p99 ${percentile(xs, 99).toFixed(2)} s`;
  rows.push([`${count} requests at once: creation → claim patched`, fmt(toPatch), '']);
  rows.push([`${count} requests at once: creation → Completed`, fmt(toDone), '']);
  rows.push([`${count} requests at once: pvx's own part (to the patch, and from the resize to Completed)`, fmt(pvxShare), '']);
  const ownCount = (ownAfter[ownAfter.length - 1]?.count ?? 0) - (ownBefore[ownBefore.length - 1]?.count ?? 0);
  rows.push([
    `${count} requests at once: pvx's own part by its clock: first sight of the request (its watch event) → claim patch sent (pvx_request_seen_to_patch_seconds, ${ownCount} observed)`,
    `mean ${(ownSum / Math.max(1, ownCount)).toFixed(3)} s; p50 ≤ ${bucketQuantile(ownBefore, ownAfter, 0.5)} s, p99 ≤ ${bucketQuantile(ownBefore, ownAfter, 0.99)} s (bucket bounds)`,
    '',
  ]);
  // The API server's own time for each of pvx's writes: received → response sent.
  const serverTime = mine.filter(isWrite).map((e) => (Date.parse(e.stageTimestamp) - Date.parse(e.requestReceivedTimestamp)) / 1000);
  const mean = (sum: number, n: number) => (n > 0 ? `${(sum / n).toFixed(2)} s` : 'none');
  rows.push([
    `${count} requests at once: … creation → pvx's first write of it; pvx's writes in the API server`,
    `${fmt(toFirstWrite)}; ${fmt(serverTime)}`,
    '',
  ]);
  rows.push([
    `${count} requests at once: … a request's key waiting for one of pvx's request workers; a worker's reconcile (means, over every reconcile of the phase); the queue's depth`,
    `${mean(queueAfter.waitSum - queueBefore.waitSum, queueAfter.waitCount - queueBefore.waitCount)}; ${mean(queueAfter.workSum - queueBefore.workSum, queueAfter.workCount - queueBefore.workCount)}; the queue ${deepest} keys deep at most`,
    '',
  ]);
  rows.push([
    `${count} requests at once: status writes per request (accepted by the API server)`,
    `mean ${(statusWrites.filter(ok).length / count).toFixed(2)}, max ${Math.max(...writesEach)} (${statusWrites.length - statusWrites.filter(ok).length} refused)`,
    '',
  ]);
  rows.push([
    `${count} requests at once: pvx's API requests`,
    `${mine.length} (${(mine.length / count).toFixed(2)} per request; mean ${(mine.length / Math.max(1, seconds)).toFixed(1)}/s, peak ${Math.max(...perSecond.values())}/s)`,
    '',
  ]);
  notes.push(
    `throughput: ${count} requests created in ${(createMs / 1000).toFixed(1)} s, all Completed ${(doneMs / 1000).toFixed(0)} s after; pvx's requests: ${tally(mine)}`,
  );
  await deleteNamespace(ns);
}

/**
 * Deletes a namespace and waits until it is gone, taking the pvc-protection finalizer off its
 * claims (no pod uses them): the controller that would do it works through 10,000 claims at its
 * own client rate limit, about 20 a second.
 */
async function deleteNamespace(ns: string): Promise<void> {
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
  await waitFor(
    `namespace ${ns} to go`,
    1_800_000,
    async () => {
      if (
        !(await core.readNamespace({ name: ns }).then(
          () => true,
          () => false,
        ))
      )
        return true;
      const names: string[] = [];
      let cont: string | undefined;
      do {
        const page = await core.listNamespacedPersistentVolumeClaim({ namespace: ns, limit: 1000, _continue: cont });
        names.push(...page.items.filter((c) => c.metadata?.deletionTimestamp && c.metadata.finalizers?.length).map((c) => c.metadata?.name as string));
        cont = page.metadata?._continue;
      } while (cont);
      let next = 0;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (next < names.length) {
            const name = names[next++] as string;
            await core
              .patchNamespacedPersistentVolumeClaim(
                { namespace: ns, name, body: { metadata: { finalizers: null } } },
                setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
              )
              .catch(() => undefined);
          }
        }),
      );
      return false;
    },
    5000,
  );
}

/** Creates claims named prefix-000000… in a namespace, 32 at a time; an existing one is kept. */
async function createClaims(ns: string, count: number, storageClassName: string, size: string): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const name = `claim-${String(next++).padStart(6, '0')}`;
      await core
        .createNamespacedPersistentVolumeClaim({
          namespace: ns,
          body: {
            metadata: { name, labels: { app: 'bench' } },
            spec: { accessModes: ['ReadWriteOnce'], storageClassName, resources: { requests: { storage: size } } },
          },
        })
        .catch((err: { code?: number }) => {
          if (err.code !== 409) throw err;
        });
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
}

async function metricOf(port: number, name: string, match: string): Promise<number> {
  const body = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const line = body.split('\n').find((l) => l.startsWith(name) && l.includes(match));
  return Number(line?.slice(line.lastIndexOf(' ') + 1) ?? NaN);
}

async function shards(count: number, kubeconfigA: string, kubeconfigB: string): Promise<void> {
  const half = Math.floor(count / 2);
  const withRequests = 20;
  const spaces = [
    { ns: 'pvx-bench-shard-a', shard: 'a', kubeconfig: kubeconfigA, user: users.pvx, port: 18791 },
    { ns: 'pvx-bench-shard-b', shard: 'b', kubeconfig: kubeconfigB, user: users.pvxB, port: 18792 },
  ];
  log(`shards: ${half} Pending claims and ${withRequests} growing ones in each of two namespaces`);
  for (const s of spaces) {
    await core.createNamespace({ body: { metadata: { name: s.ns, labels: { 'pvx.dev/shard': s.shard } } } }).catch(() => undefined);
    await createClaims(s.ns, half, 'pvx-bench-unprovisioned', '10Gi');
    await core.createNamespace({ body: { metadata: { name: `${s.ns}-grow`, labels: { 'pvx.dev/shard': s.shard } } } }).catch(() => undefined);
    await createClaims(`${s.ns}-grow`, withRequests, 'pvx-hostpath-online', '1Gi');
  }
  const from = auditLogEnd();
  const procs: Proc[] = [];
  try {
    for (const s of spaces)
      procs.push(
        await startPvx(s.kubeconfig, s.port, `pvx-shard-${s.shard}`, [
          '--namespace-selector',
          `pvx.dev/shard=${s.shard}`,
          '--leader-election-id',
          `pvx-shard-${s.shard}`,
        ]),
      );
    await sleep(20_000);
    const cached = await Promise.all(spaces.map((s) => metricOf(s.port, 'pvx_informer_objects', '"persistentvolumeclaims"')));
    const mem = procs.map((p) => memory(p.pid));
    await waitFor(
      'the grow claims to bind',
      300_000,
      async () => {
        for (const s of spaces)
          if ((await core.listNamespacedPersistentVolumeClaim({ namespace: `${s.ns}-grow` })).items.some((c) => c.status?.phase !== 'Bound')) return false;
        return true;
      },
      2000,
    );
    for (const s of spaces) {
      for (let i = 0; i < withRequests; i++) {
        const name = `claim-${String(i).padStart(6, '0')}`;
        await custom.createNamespacedCustomObject({
          group: 'pvx.dev',
          version: 'v1alpha1',
          namespace: `${s.ns}-grow`,
          plural: 'volumeexpansionrequests',
          body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionRequest', metadata: { name }, spec: { target: { pvcName: name }, size: '2Gi' } },
        });
      }
    }
    await waitFor(
      'every shard request to complete',
      600_000,
      async () => {
        for (const s of spaces) {
          const list = (await custom.listNamespacedCustomObject({
            group: 'pvx.dev',
            version: 'v1alpha1',
            namespace: `${s.ns}-grow`,
            plural: 'volumeexpansionrequests',
          })) as { items: { status?: { phase?: string } }[] };
          if (list.items.filter((r) => r.status?.phase === 'Completed').length < withRequests) return false;
        }
        return true;
      },
      2000,
    );
    await sleep(2000);
    const events = readAuditEvents(from).filter(isWrite);
    const written = spaces.map(
      (s) =>
        new Set(
          by(events, s.user)
            .filter((e) => e.objectRef?.namespace?.startsWith('pvx-bench-shard'))
            .map((e) => `${e.objectRef?.namespace}/${e.objectRef?.resource}/${e.objectRef?.name}`),
        ),
    );
    const both = [...(written[0] ?? [])].filter((k) => written[1]?.has(k));
    const outside = spaces.map((s, i) => [...(written[i] ?? [])].filter((k) => !k.startsWith(s.ns)).length);
    const claimPatches = spaces.map(
      (s) => by(events, s.user).filter((e) => e.verb === 'patch' && e.objectRef?.resource === 'persistentvolumeclaims' && !e.objectRef.subresource).length,
    );
    rows.push([`two instances, ${count} claims split by namespace: claims each caches`, `${cached[0]} and ${cached[1]}`, '']);
    rows.push([`two instances: RSS each`, `${mib(mem[0]?.rss ?? NaN)} and ${mib(mem[1]?.rss ?? NaN)}`, '']);
    rows.push([
      `two instances, ${withRequests} requests each: claims patched by each / objects written by both / outside its half`,
      `${claimPatches[0]} and ${claimPatches[1]} / ${both.length} / ${outside[0]} and ${outside[1]}`,
      '',
    ]);
  } finally {
    for (const p of procs) await stop(p);
  }
  for (const s of spaces) {
    await deleteNamespace(s.ns);
    await deleteNamespace(`${s.ns}-grow`);
  }
}

// --- scale under a policy ------------------------------------------------------------------

/**
 * kubelet_volume_stats_* for the claims of one namespace, served on loopback for Prometheus to
 * scrape, as a kubelet would for mounted volumes: each claim's capacity, and its use at `usedPercent`
 * unless a crossing raised it. Both tools read these through the one Prometheus.
 */
class VolumeStatsExporter {
  readonly claims: string[] = [];
  namespace = '';
  private readonly crossing = new Set<string>();
  private server: import('node:http').Server | undefined;
  url = '';

  async start(): Promise<void> {
    const { createServer } = process.getBuiltinModule('node:http');
    this.server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/plain; version=0.0.4');
      res.end(this.text());
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    const address = this.server.address() as { port: number };
    this.url = `127.0.0.1:${address.port}`;
  }

  cross(names: string[]): void {
    for (const n of names) this.crossing.add(n);
  }

  fallBack(names: string[]): void {
    for (const n of names) this.crossing.delete(n);
  }

  private text(): string {
    const capacity = 1024 ** 3;
    const out: string[] = [];
    for (const [metric, value] of [
      ['capacity_bytes', () => capacity],
      ['used_bytes', (n: string) => (this.crossing.has(n) ? 0.95 : 0.5) * capacity],
      ['available_bytes', (n: string) => (this.crossing.has(n) ? 0.05 : 0.5) * capacity],
      ['inodes', () => 65536],
      ['inodes_used', () => 100],
      ['inodes_free', () => 65436],
    ] as const) {
      out.push(`# TYPE kubelet_volume_stats_${metric} gauge`);
      for (const n of this.claims) out.push(`kubelet_volume_stats_${metric}{namespace="${this.namespace}",persistentvolumeclaim="${n}"} ${value(n)}`);
    }
    return `${out.join('\n')}\n`;
  }

  stop(): void {
    this.server?.close();
  }
}

const scaleNs = 'pvx-bench-policy';
const staticClass = 'pvx-bench-static';

/**
 * Creates `count` Bound claims of 1Gi on static PVs (no volume behind them: a CSI driver nobody
 * serves), pre-bound both ways with their protection finalizers already on, so that neither the
 * PV binder nor the protection controllers have a write to make (kube-controller-manager writes
 * at 20 a second). `label(i)` and `annotate(i)` say what each claim carries.
 */
async function createBoundClaims(
  ns: string,
  count: number,
  label: (i: number) => Record<string, string>,
  annotate: (i: number) => Record<string, string>,
): Promise<string[]> {
  const names = Array.from({ length: count }, (_, i) => `claim-${String(i).padStart(6, '0')}`);
  let next = 0;
  const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) {
        const i = next++;
        const name = names[i] as string;
        const pv = `${ns}-${name}`;
        const claim = await core
          .createNamespacedPersistentVolumeClaim({
            namespace: ns,
            body: {
              metadata: {
                name,
                labels: label(i),
                annotations: { ...annotate(i), 'pv.kubernetes.io/bind-completed': 'yes' },
                finalizers: ['kubernetes.io/pvc-protection'],
              },
              spec: { accessModes: ['ReadWriteOnce'], storageClassName: staticClass, volumeName: pv, resources: { requests: { storage: '1Gi' } } },
            },
          })
          .catch(async (err: { code?: number }) => {
            if (err.code !== 409) throw err;
            return core.readNamespacedPersistentVolumeClaim({ namespace: ns, name });
          });
        await core
          .createPersistentVolume({
            body: {
              metadata: {
                name: pv,
                labels: benchLabels,
                annotations: { 'pv.kubernetes.io/bound-by-controller': 'yes' },
                finalizers: ['kubernetes.io/pv-protection'],
              },
              spec: {
                capacity: { storage: '1Gi' },
                accessModes: ['ReadWriteOnce'],
                persistentVolumeReclaimPolicy: 'Retain',
                storageClassName: staticClass,
                csi: { driver: 'pvx-bench.invalid', volumeHandle: pv },
                claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: ns, name, uid: claim.metadata?.uid },
              },
            },
          })
          .catch((err: { code?: number }) => {
            if (err.code !== 409) throw err;
          });
        await core.patchPersistentVolumeStatus({ name: pv, body: { status: { phase: 'Bound' } } }, merge);
        await core.patchNamespacedPersistentVolumeClaimStatus(
          { namespace: ns, name, body: { status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: '1Gi' } } } },
          merge,
        );
      }
    }),
  );
  return names;
}

/** Deletes the bench's PVs (their claims gone), taking their protection finalizer off. */
async function deleteStaticVolumes(): Promise<void> {
  const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  for (;;) {
    const { items } = await core.listPersistentVolume({ labelSelector: 'app.kubernetes.io/part-of=pvx-bench', limit: 1000 });
    if (items.length === 0) return;
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < items.length) {
          const name = items[next++]?.metadata?.name as string;
          await core.patchPersistentVolume({ name, body: { metadata: { finalizers: null } } }, merge).catch(() => undefined);
          await core.deletePersistentVolume({ name }).catch(() => undefined);
        }
      }),
    );
  }
}

/** A metric of a process's /metrics (the first series whose line has `match`), or NaN. */
async function metricAt(url: string, name: string, match = ''): Promise<number> {
  const body = await (await fetch(url)).text();
  const line = body.split('\n').find((l) => l.startsWith(name) && l.includes(match));
  return Number(line?.slice(line.lastIndexOf(' ') + 1) ?? NaN);
}

/** A histogram's cumulative buckets (upper bound → count), read from a /metrics page. */
async function histogramAt(url: string, name: string): Promise<{ le: number; count: number }[]> {
  const body = await (await fetch(url)).text();
  return body
    .split('\n')
    .filter((l) => l.startsWith(`${name}_bucket{`))
    .map((l) => ({ le: Number(/le="([^"]+)"/.exec(l)?.[1]), count: Number(l.slice(l.lastIndexOf(' ') + 1)) }))
    .sort((a, b) => a.le - b.le);
}

/** The upper bound of the bucket holding the q-th quantile of what a histogram gained between two reads. */
function bucketQuantile(before: { le: number; count: number }[], after: { le: number; count: number }[], q: number): number {
  const gained = after.map((b) => ({ le: b.le, count: b.count - (before.find((x) => x.le === b.le)?.count ?? 0) }));
  const total = gained[gained.length - 1]?.count ?? 0;
  return gained.find((b) => b.count >= q * total)?.le ?? NaN;
}

/**
 * pvx's first pass over the claims after a start: when it ended (ms after the spawn) and how long
 * it took, from its own metrics (the policy controller's first reconcile).
 */
async function firstPass(proc: Proc, metricsPort: number): Promise<{ endedMs: number; tookS: number }> {
  const url = `http://127.0.0.1:${metricsPort}/metrics`;
  const label = 'controller="expansion-policy"';
  await waitFor('pvx’s first policy pass', 600_000, async () => (await metricAt(url, 'controller_runtime_reconcile_time_seconds_count', label)) >= 1, 100);
  const endedMs = performance.now() - proc.startedAt;
  return { endedMs, tookS: await metricAt(url, 'controller_runtime_reconcile_time_seconds_sum', label) };
}

interface ScaleSetup {
  kubeconfigs: { pvx: string; peer: string };
  prometheusUrl: string;
  exporter: VolumeStatsExporter;
  peerBinary: string | undefined;
}

/**
 * `count` Bound claims selected by a policy, usage from one Prometheus for both: both tools are
 * started on them side by side (start → ready, pvx's first pass), measured at rest over `seconds`
 * (CPU, RSS, API requests), then five claims of each tool's cross the threshold at once: the time
 * from the crossing to each tool's patch; then five claims of both spike past it and fall back (spike()). Every other claim is selected by both (pvx's policy
 * label and the peer's storage limit); five carry only pvx's label, five only the peer's limit.
 */
async function policyScale(count: number, seconds: number, setup: ScaleSetup): Promise<void> {
  const { exporter } = setup;
  await core.createNamespace({ body: { metadata: { name: scaleNs } } }).catch(() => undefined);
  await objects
    .create({
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: staticClass, labels: benchLabels, annotations: { 'resize.topolvm.io/enabled': 'true' } },
      provisioner: 'pvx-bench.invalid',
      allowVolumeExpansion: true,
      volumeBindingMode: 'Immediate',
    } as KubernetesObject)
    .catch(() => undefined);
  await custom
    .createNamespacedCustomObject({
      group: 'pvx.dev',
      version: 'v1alpha1',
      namespace: scaleNs,
      plural: 'volumeexpansionpolicies',
      body: {
        apiVersion: 'pvx.dev/v1alpha1',
        kind: 'VolumeExpansionPolicy',
        metadata: { name: 'scale' },
        spec: { selector: { matchLabels: { 'pvx-bench/policy': 'yes' } }, triggers: { usedPercent: 90 }, maxSize: '10Gi' },
      },
    })
    .catch(() => undefined);
  const pvxOnly = (i: number) => i < 5;
  const peerOnly = (i: number) => i >= 5 && i < 10;
  log(`policy scale: creating ${count} Bound claims on static PVs`);
  const started = Date.now();
  const names = await createBoundClaims(
    scaleNs,
    count,
    (i): Record<string, string> => (peerOnly(i) ? {} : { 'pvx-bench/policy': 'yes' }),
    (i): Record<string, string> => (pvxOnly(i) ? {} : { 'resize.topolvm.io/storage_limit': '10Gi' }),
  );
  notes.push(`policy scale: ${count} Bound claims and their PVs created in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  exporter.namespace = scaleNs;
  exporter.claims.splice(0, exporter.claims.length, ...names);
  await sleep(25_000); // two scrapes: every claim has its series

  // Start both side by side on the claims already there: a restart, or a failover.
  const pvxArgs = ['--usage-source', 'prometheus', '--prometheus-url', setup.prometheusUrl];
  const starting = [startPvx(setup.kubeconfigs.pvx, 18783, 'pvx-scale', pvxArgs)];
  if (setup.peerBinary) starting.push(startPeer(setup.peerBinary, setup.kubeconfigs.peer, setup.prometheusUrl, 18784));
  const [pvx, peer] = await Promise.all(starting);
  if (!pvx) throw new Error('pvx did not start');
  try {
    await waitFor('pvx to lead', 60_000, () => leading('pvx-scale', 'pvx-leader'));
    const pass = await firstPass(pvx, 18783);
    rows.push([
      `start → ready (caches synced) with ${count} Bound claims`,
      `${((pvx.readyMs ?? NaN) / 1000).toFixed(1)} s`,
      peer ? `${((peer.readyMs ?? NaN) / 1000).toFixed(1)} s` : '',
    ]);
    rows.push([`… start → pvx's first policy pass done (the pass itself)`, `${(pass.endedMs / 1000).toFixed(1)} s (${pass.tookS.toFixed(2)} s)`, '']);
    log(`policy scale: settling 60 s, then ${seconds} s measured`);
    await sleep(60_000);
    const procs = [pvx, peer].filter((p): p is Proc => p !== undefined);
    const cpu0 = procs.map((p) => cpuSeconds(p.pid));
    const from = auditLogEnd();
    await sleep(seconds * 1000);
    const cpu1 = procs.map((p) => cpuSeconds(p.pid));
    const mem = procs.map((p) => memory(p.pid));
    const events = readAuditEvents(from);
    const perMin = (cpu: number) => `${((cpu / seconds) * 60).toFixed(2)} s`;
    rows.push([
      `${count} Bound claims under a policy: CPU per minute`,
      perMin((cpu1[0] ?? 0) - (cpu0[0] ?? 0)),
      peer ? perMin((cpu1[1] ?? 0) - (cpu0[1] ?? 0)) : '',
    ]);
    rows.push([`${count} Bound claims under a policy: RSS`, mib(mem[0]?.rss ?? NaN), peer ? mib(mem[1]?.rss ?? NaN) : '']);
    rows.push([
      `${count} Bound claims under a policy: API requests per minute`,
      ((by(events, users.pvx).length / seconds) * 60).toFixed(1),
      peer ? ((by(events, users.peer).length / seconds) * 60).toFixed(1) : '',
    ]);
    notes.push(
      `policy scale, requests over ${seconds} s: pvx: ${tally(by(events, users.pvx))}${peer ? `; pvc-autoresizer: ${tally(by(events, users.peer))}` : ''}`,
    );

    // Five claims of each cross the threshold at once.
    const crossedFrom = auditLogEnd();
    const crossed = names.filter((_n, i) => pvxOnly(i) || (peer && peerOnly(i)));
    exporter.cross(crossed);
    const crossedAt = Date.now();
    log(`policy scale: ${crossed.length} claims cross 90 % used`);
    const owner = (i: number) => (pvxOnly(i) ? users.pvx : users.peer);
    await waitFor(
      'every crossed claim to be patched',
      300_000,
      () => {
        const ev = readAuditEvents(crossedFrom);
        return names.every((n, i) => !crossed.includes(n) || ev.some(claimPatchedBy(owner(i), n)));
      },
      2000,
    ).catch((err: unknown) => notes.push(`policy scale: ${(err as Error).message}`));
    const ev = readAuditEvents(crossedFrom);
    const delays = (user: string) =>
      names.flatMap((n, i) => {
        if (!crossed.includes(n) || owner(i) !== user) return [];
        const patch = ev.find(claimPatchedBy(user, n));
        return [patch ? (Date.parse(patch.stageTimestamp) - crossedAt) / 1000 : NaN];
      });
    const fmt = (xs: number[]) => (xs.length === 0 ? '' : `median ${percentile(xs, 50).toFixed(1)} s, max ${Math.max(...xs).toFixed(1)} s`);
    rows.push([
      `${count} Bound claims: 5 cross 90 % used (exporter, scraped every 10 s) → claim patched`,
      fmt(delays(users.pvx)),
      peer ? fmt(delays(users.peer)) : '',
    ]);
    await spike(names.slice(10, 15), exporter, peer !== undefined);
  } finally {
    await stop(pvx);
    await stop(peer);
  }
  exporter.claims.length = 0;
  log('policy scale: deleting the claims and their PVs');
  await deleteNamespace(scaleNs);
  await deleteStaticVolumes();
}

/** How long a spike holds: two scrapes, well within the kubelet's refresh period of volume stats (1 min). */
const spikeSeconds = 25;

/**
 * The other half of a held crossing: `claims` (selected by both tools) read 95 % used for
 * `spikeSeconds`, then 50 % again, and over the next two minutes (two refresh periods of the
 * kubelet's volume stats) each tool's patches of them are counted. A level that falls back before
 * the source measures again is no need for space: pvx's sustained-measurement rule lets it pass;
 * the peer acts on one reading.
 */
async function spike(claims: string[], exporter: VolumeStatsExporter, withPeer: boolean): Promise<void> {
  const from = auditLogEnd();
  log(`policy scale: ${claims.length} claims spike to 95 % used for ${spikeSeconds} s, then fall back`);
  exporter.cross(claims);
  await sleep(spikeSeconds * 1000);
  exporter.fallBack(claims);
  await sleep(120_000);
  const ev = readAuditEvents(from);
  const raised = (user: string) => `${claims.filter((n) => ev.some(claimPatchedBy(user, n))).length} of ${claims.length} raised`;
  rows.push([
    `${claims.length} claims spike to 95 % for ${spikeSeconds} s (2 scrapes), then back to 50 %: raised within 2 min`,
    raised(users.pvx),
    withPeer ? raised(users.peer) : '',
  ]);
}

/**
 * pvx alone over `count` Pending claims (no PVs: the cluster's own work stays small) that one
 * policy selects, no usage source: start → ready, the first pass, RSS and heap per claim against
 * the idle process's, and whether the RSS stays within the chart's memory limit.
 */
async function hundredThousand(count: number, kubeconfig: string, idleRss: number): Promise<void> {
  const ns = 'pvx-bench-big';
  await core.createNamespace({ body: { metadata: { name: ns } } }).catch(() => undefined);
  await custom
    .createNamespacedCustomObject({
      group: 'pvx.dev',
      version: 'v1alpha1',
      namespace: ns,
      plural: 'volumeexpansionpolicies',
      body: {
        apiVersion: 'pvx.dev/v1alpha1',
        kind: 'VolumeExpansionPolicy',
        metadata: { name: 'big' },
        spec: { selector: { matchLabels: { app: 'bench' } }, triggers: { usedPercent: 90 } },
      },
    })
    .catch(() => undefined);
  log(`big: creating ${count} Pending claims`);
  const started = Date.now();
  await createClaims(ns, count, 'pvx-bench-unprovisioned', '10Gi');
  notes.push(`big: ${count} claims created in ${((Date.now() - started) / 1000).toFixed(0)} s`);
  const pvx = await startPvx(kubeconfig, 18785, 'pvx-big', ['--usage-source', 'none']);
  try {
    await waitFor('pvx to lead', 60_000, () => leading('pvx-big', 'pvx-leader'));
    const pass = await firstPass(pvx, 18785);
    await sleep(30_000);
    const mem = memory(pvx.pid);
    const url = 'http://127.0.0.1:18785/metrics';
    const heap = (await metricAt(url, 'nodejs_heap_size_used_bytes')) / 1024 ** 2;
    const cached = await metricAt(url, 'pvx_informer_objects', '"persistentvolumeclaims"');
    const passes = await metricAt(url, 'controller_runtime_reconcile_time_seconds_count', 'controller="expansion-policy"');
    const passTime = (await metricAt(url, 'controller_runtime_reconcile_time_seconds_sum', 'controller="expansion-policy"')) / passes;
    const limitMiB = 512;
    rows.push([
      `${count} claims (pvx alone): start → ready; first pass done (the pass)`,
      `${((pvx.readyMs ?? NaN) / 1000).toFixed(1)} s; ${(pass.endedMs / 1000).toFixed(1)} s (${pass.tookS.toFixed(2)} s)`,
      '',
    ]);
    rows.push([
      `${count} claims: RSS, peak RSS (chart's limit ${limitMiB} MiB)`,
      `${mib(mem.rss)}, ${mib(mem.peak)} — ${mem.peak <= limitMiB ? 'within' : 'OVER'} the limit`,
      '',
    ]);
    rows.push([
      `${count} claims: per claim cached (RSS over idle; V8 heap)`,
      `${(((mem.rss - idleRss) * 1024) / cached).toFixed(2)} KiB; heap ${heap.toFixed(0)} MiB`,
      '',
    ]);
    rows.push([`${count} claims: a policy pass, mean of ${passes}`, `${passTime.toFixed(2)} s (${((passTime * 1e6) / count).toFixed(1)} µs per claim)`, '']);
  } finally {
    await stop(pvx);
  }
  // The namespace controller deletes 100,000 claims at about 30 a second, close to an hour here:
  // the run does not wait for it. Bring the embedded cluster down afterwards (its state goes too)
  // before another run on it.
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
  notes.push(`big: namespace ${ns} left deleting (its claims go at the namespace controller's pace): \`npm run cluster:down\` before another run`);
}

/** Everything the bench made outside its namespaces: its ClusterRoles and bindings, StorageClass and PVs (by label). */
async function cleanUp(): Promise<void> {
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const labelSelector = 'app.kubernetes.io/part-of=pvx-bench';
  await rbac.deleteCollectionClusterRoleBinding({ labelSelector }).catch((err: unknown) => log(`clean-up: ClusterRoleBindings: ${(err as Error).message}`));
  await rbac.deleteCollectionClusterRole({ labelSelector }).catch((err: unknown) => log(`clean-up: ClusterRoles: ${(err as Error).message}`));
  await storage.deleteStorageClass({ name: staticClass }).catch(() => undefined);
  await deleteStaticVolumes().catch((err: unknown) => log(`clean-up: PVs: ${(err as Error).message}`));
}

// --- the run -------------------------------------------------------------------------------

const peerBinary = values['peer-binary'];
if (peerBinary && !existsSync(peerBinary)) throw new Error(`--peer-binary ${peerBinary} does not exist (bench/README.md says how to build it)`);
mkdirSync(workDir, { recursive: true });
if (!existsSync(pvxMain)) throw new Error(`${pvxMain} is missing: run npm run build first (the benchmark runs pvx as it ships)`);
const installed = spawnSync(process.execPath, [pvxMain, 'install-crds', '--kubeconfig', process.env.KUBECONFIG ?? paths.kubeconfig], { encoding: 'utf8' });
if (installed.status !== 0) throw new Error(`pvx install-crds failed: ${installed.stderr}`);
const kubeconfigs = await identitiesAndKubeconfigs();
await checkAuditReads(kubeconfigs.pvx);
let prometheus: PrometheusServer | undefined;
let pvx: Proc | undefined;
let peer: Proc | undefined;
const exporter = new VolumeStatsExporter();
let idleRss: number;
try {
  if (peerBinary || phases.has('policy')) {
    await exporter.start();
    const nodeName = (await core.listNode()).items[0]?.metadata?.name;
    prometheus = await startPrometheus('bench', () => ({
      global: { scrape_interval: '10s', evaluation_interval: '10s' },
      scrape_configs: [
        {
          job_name: 'kubelet',
          scheme: 'https',
          metrics_path: `/api/v1/nodes/${nodeName}/proxy/metrics`,
          tls_config: { ca_file: pki.caCert, cert_file: pki.cert(identities.admin), key_file: pki.key(identities.admin) },
          static_configs: [{ targets: [`127.0.0.1:${ports.apiserver}`] }],
        },
        // The scale phase's synthetic volume stats, one series per claim and metric.
        { job_name: 'volume-stats', honor_labels: true, static_configs: [{ targets: [exporter.url] }] },
      ],
    }));
  }
  pvx = await startPvx(kubeconfigs.pvx, 18781);
  if (peerBinary && prometheus) peer = await startPeer(peerBinary, kubeconfigs.peer, prometheus.url, 18782);
  await waitFor('pvx to lead', 60_000, () => leading('pvx-bench', 'pvx-leader'));
  if (peer) await waitFor('pvc-autoresizer to lead', 60_000, () => leading('', '49e22f61.topolvm.io'));
  if (phases.has('idle')) await idle(pvx, peer, Number(values['idle-seconds']));
  idleRss = memory(pvx.pid).rss;
  if (phases.has('scale')) await scale(pvx, peer, Number(values.claims));
  if (phases.has('fill')) await fill(peer !== undefined);
  if (phases.has('policy') && prometheus) {
    // Both restarted on 10,000 Bound claims, side by side: the start-up rows come from here.
    await stop(pvx);
    await stop(peer);
    pvx = undefined;
    peer = undefined;
    await policyScale(Number(values.claims), Number(values['policy-seconds']), { kubeconfigs, prometheusUrl: prometheus.url, exporter, peerBinary });
  }
  if (phases.has('throughput')) {
    await stop(peer);
    peer = undefined;
    pvx ??= await startPvx(kubeconfigs.pvx, 18781);
    await throughput(Number(values.requests));
  }
  if (phases.has('shards')) {
    await stop(pvx);
    pvx = undefined;
    await shards(Number(values.claims), kubeconfigs.pvx, kubeconfigs.pvxB);
  }
  // Last: its claims are left to the namespace controller (see hundredThousand).
  if (phases.has('big')) {
    await stop(pvx);
    await stop(peer);
    pvx = undefined;
    peer = undefined;
    await hundredThousand(Number(values['big-claims']), kubeconfigs.pvx, idleRss);
  }
} finally {
  await stop(pvx);
  await stop(peer);
  if (prometheus) await stopPrometheus(prometheus);
  exporter.stop();
  await cleanUp();
}
process.stdout.write(
  [
    `${new Date().toISOString().slice(0, 10)}, ${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 1024 ** 3).toFixed(0)} GiB; Node ${process.version}; pvx from dist/; ${peerBinary ? `peer ${peerBinary}` : 'no peer'}; logs in ${workDir}`,
    '',
    table(peerBinary !== undefined),
    '',
    ...notes.map((n) => `- ${n}`),
  ].join('\n') + '\n',
);
