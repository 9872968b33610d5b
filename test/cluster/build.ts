// Builds the cluster's binaries from the pinned Go modules under test/cluster, into the user's
// cache keyed by version and by a hash of the module files, so a warm machine builds nothing and
// a change to a pin rebuilds exactly what it affects.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { clusterSourceDir, kubernetesReleases, paths, versions } from './layout.ts';
import { ClusterError, run } from './processes.ts';
import { formatDuration, type StepContext } from './progress.ts';

interface BuildUnit {
  name: string;
  version: string;
  /** Directory of the go.mod to build from. */
  moduleDir: string;
  /** Output binary name → package path. */
  outputs: Record<string, string>;
  ldflags: string[];
}

/** What Kubernetes' own release build stamps, so nodes and `kubectl version` report the real version. */
function k8sVersionFlags(v: string): string[] {
  const [major, minor] = v.slice(1).split('.');
  const fields: Record<string, string> = {
    gitVersion: v,
    gitMajor: major ?? '',
    gitMinor: minor ?? '',
    gitTreeState: 'clean',
    buildDate: '1970-01-01T00:00:00Z',
  };
  return ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap((pkg) => Object.entries(fields).map(([k, val]) => `-X ${pkg}.${k}=${val}`));
}

/** One unit per Kubernetes release the cluster can run; each builds from its own pinned module. */
const kubernetesUnits: BuildUnit[] = kubernetesReleases.map((r) => ({
  name: 'kubernetes',
  version: r.version,
  moduleDir: join(clusterSourceDir, 'modules', r.module),
  outputs: {
    'kube-apiserver': 'k8s.io/kubernetes/cmd/kube-apiserver',
    'kube-controller-manager': 'k8s.io/kubernetes/cmd/kube-controller-manager',
    'kube-scheduler': 'k8s.io/kubernetes/cmd/kube-scheduler',
    kubelet: 'k8s.io/kubernetes/cmd/kubelet',
    kubectl: 'k8s.io/kubernetes/cmd/kubectl',
    'kube-proxy': 'k8s.io/kubernetes/cmd/kube-proxy',
  },
  ldflags: k8sVersionFlags(r.version),
}));

/**
 * The cluster's clients of the Kubernetes API (the CSI sidecars, the EBS driver, helm) share one
 * module, so their common libraries compile once for all of them (its go.mod says what that saves).
 */
const clientsModule = join(clusterSourceDir, 'modules', 'kubernetes-clients');

export const buildUnits: BuildUnit[] = [
  ...kubernetesUnits,
  {
    // One etcd for every Kubernetes release: 1.34 and 1.37 both accept an external etcd from 3.5.24
    // on (kubeadm's MinExternalEtcdVersion); their own tests use 3.6.5 and 3.7.0. It is pinned in
    // the default release's module, so a change there also rebuilds it.
    name: 'etcd',
    version: versions.etcd,
    moduleDir: join(clusterSourceDir, 'modules', 'kubernetes'),
    outputs: { etcd: 'go.etcd.io/etcd/server/v3' },
    ldflags: [],
  },
  {
    name: 'csi-provisioner',
    version: versions.externalProvisioner,
    moduleDir: clientsModule,
    outputs: { 'csi-provisioner': 'github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner' },
    ldflags: [`-X main.version=${versions.externalProvisioner}`],
  },
  {
    name: 'csi-resizer',
    version: versions.externalResizer,
    moduleDir: clientsModule,
    outputs: { 'csi-resizer': 'github.com/kubernetes-csi/external-resizer/v2/cmd/csi-resizer' },
    ldflags: [`-X main.version=${versions.externalResizer}`],
  },
  {
    // Not part of the cluster: the shipping tests render charts/pvx with it. Built here so a fresh
    // machine gets it with the other binaries, from the same pinned-module cache.
    name: 'helm',
    version: versions.helm,
    moduleDir: clientsModule,
    outputs: { helm: 'helm.sh/helm/v3/cmd/helm' },
    // What helm's own release build stamps: its version, and the Kubernetes version its client
    // libraries speak (the default .Capabilities.KubeVersion of `helm template`, and what lint's
    // deprecation check measures against).
    ldflags: [
      `-X helm.sh/helm/v3/internal/version.version=${versions.helm}`,
      '-X helm.sh/helm/v3/internal/version.gitTreeState=clean',
      ...['pkg/chartutil', 'pkg/lint/rules'].flatMap((pkg) => [`-X helm.sh/helm/v3/${pkg}.k8sVersionMajor=1`, `-X helm.sh/helm/v3/${pkg}.k8sVersionMinor=37`]),
    ],
  },
  {
    // Amazon's driver, built as its Makefile builds it; only its controller service runs here.
    name: 'aws-ebs-csi-driver',
    version: versions.awsEbsCsiDriver,
    moduleDir: clientsModule,
    outputs: { 'aws-ebs-csi-driver': 'github.com/kubernetes-sigs/aws-ebs-csi-driver/cmd' },
    ldflags: ['driver', 'cloud'].map((pkg) => `-X github.com/kubernetes-sigs/aws-ebs-csi-driver/pkg/${pkg}.driverVersion=${versions.awsEbsCsiDriver}`),
  },
  {
    // Google's driver, built as its Makefile builds it (main.version); only its controller service runs here.
    name: 'gce-pd-csi-driver',
    version: versions.gcePdCsiDriver,
    moduleDir: clientsModule,
    outputs: { 'gce-pd-csi-driver': 'sigs.k8s.io/gcp-compute-persistent-disk-csi-driver/cmd/gce-pd-csi-driver' },
    ldflags: [`-X main.version=${versions.gcePdCsiDriver}`],
  },
  {
    name: 'pvx-csi',
    version: 'src',
    moduleDir: join(clusterSourceDir, 'csi-driver'),
    outputs: { 'pvx-csi': '.' },
    ldflags: [],
  },
];

/** Hash of everything that decides the build's output: module files, sources of our own code, flags. */
function unitHash(unit: BuildUnit, goVersion: string): string {
  const h = createHash('sha256');
  h.update(`${goVersion}\n${JSON.stringify(unit.outputs)}\n${unit.ldflags.join(' ')}\n`);
  for (const file of readdirSync(unit.moduleDir).sort()) {
    if (file === 'go.mod' || file === 'go.sum' || file.endsWith('.go')) {
      h.update(file);
      h.update(readFileSync(join(unit.moduleDir, file)));
    }
  }
  return h.digest('hex').slice(0, 12);
}

function unitDir(unit: BuildUnit, goVersion: string): string {
  return join(paths.binCache, `${unit.name}-${unit.version}-${unitHash(unit, goVersion)}`);
}

/** `go` from PATH, else the Go install's usual place (a CI shell may not have it on PATH). */
function goBinary(): string {
  const onPath = (process.env.PATH ?? '').split(':').some((dir) => dir && existsSync(join(dir, 'go')));
  return onPath || !existsSync('/usr/local/go/bin/go') ? 'go' : '/usr/local/go/bin/go';
}

let goVersionMemo: string | undefined;
async function goVersion(): Promise<string> {
  goVersionMemo ??= (await run(goBinary(), ['env', 'GOVERSION'])).trim();
  return goVersionMemo;
}

function goEnv(): NodeJS.ProcessEnv {
  // GOTOOLCHAIN=local: build with the machine's Go, never download another toolchain.
  // GOGC=400 (unless the caller set one): the compiler collects garbage a quarter as often; on a 2-core
  // machine the API's clients built 15 % faster (559 s → 475 s from an empty cache) at a peak of 5.1 GB.
  return { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local', GOFLAGS: '-mod=readonly', GOGC: process.env.GOGC ?? '400' };
}

/**
 * The units this cluster needs: every unit but the Kubernetes releases not selected
 * (PVX_KUBERNETES_VERSION); `all` takes every release, to fill a cache for both.
 */
export function selectedUnits(all = false, kubernetesVersion: string = versions.kubernetes): BuildUnit[] {
  return buildUnits.filter((u) => all || u.name !== 'kubernetes' || u.version === kubernetesVersion);
}

/** Paths of the selected release's binaries (and the rest), by name. */
export async function binaries(): Promise<Record<string, string>> {
  const gv = await goVersion();
  const result: Record<string, string> = {};
  for (const unit of selectedUnits()) {
    const dir = unitDir(unit, gv);
    for (const out of Object.keys(unit.outputs)) result[out] = join(dir, out);
  }
  return result;
}

function isBuilt(unit: BuildUnit, goVersion: string): boolean {
  return Object.keys(unit.outputs).every((o) => existsSync(join(unitDir(unit, goVersion), o)));
}

export async function missingUnits(all = false): Promise<BuildUnit[]> {
  const gv = await goVersion();
  return selectedUnits(all).filter((u) => !isBuilt(u, gv));
}

/**
 * The `go build` invocations of a unit's outputs: those named as `go build -o DIR/` names them (the
 * package path's last element) in one, so the go command schedules all their packages together and
 * one core compiles while the other links or finishes a long package (a Kubernetes release's six
 * binaries: one invocation instead of six in a row); any other output alone, under its own name.
 */
export function buildGroups(outputs: Record<string, string>): [string, string][][] {
  const entries = Object.entries(outputs);
  const named = entries.filter(([out, pkg]) => pkg.split('/').at(-1) === out);
  if (named.length < 2) return entries.map((e) => [e]);
  return [named, ...entries.filter((e) => !named.includes(e)).map((e) => [e])];
}

/**
 * Builds every selected unit (`all`: every unit) whose cached binaries are missing.
 *
 * Two builds may run at once on one cache (CI builds the other Kubernetes release in the background
 * while the default one builds): a unit another build finished meanwhile is skipped, and a unit
 * both happened to build keeps the first copy, so binaries a running cluster uses are never
 * replaced under it.
 */
export async function buildAll(ctx: StepContext, opts: { all?: boolean } = {}): Promise<void> {
  const gv = await goVersion().catch(() => {
    throw new ClusterError('Go is required to build the cluster (https://go.dev/dl); `go` was not found on PATH');
  });
  const todo = await missingUnits(opts.all);
  if (todo.length === 0) {
    ctx.log(`all binaries cached in ${paths.binCache}`);
    return;
  }
  for (const unit of todo) {
    const dir = unitDir(unit, gv);
    if (isBuilt(unit, gv)) {
      ctx.log(`${unit.name} ${unit.version}: built meanwhile by another build, in ${dir}`);
      continue;
    }
    const tmp = `${dir}.partial-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(tmp, { recursive: true });
    ctx.log(`building ${unit.name} ${unit.version} (${Object.keys(unit.outputs).join(', ')}) with ${gv}`);
    let compiled = 0;
    ctx.detail(`${unit.name}: downloading modules`);
    const onLine = (line: string) => {
      compiled += 1;
      ctx.detail(`${unit.name}: ${compiled} packages compiled, last ${line.trim()}`);
    };
    try {
      await run(goBinary(), ['mod', 'download'], { cwd: unit.moduleDir, env: goEnv(), onLine: (l) => ctx.detail(`${unit.name}: ${l.trim()}`) });
      for (const group of buildGroups(unit.outputs)) {
        const begun = Date.now();
        const target = group.length > 1 ? `${tmp}/` : join(tmp, group[0]?.[0] ?? '');
        await run(goBinary(), ['build', '-v', '-trimpath', `-ldflags=-s -w ${unit.ldflags.join(' ')}`, '-o', target, ...group.map(([, pkg]) => pkg)], {
          cwd: unit.moduleDir,
          env: goEnv(),
          onLine,
        });
        // Per invocation: what a release or an added output costs shows in every build log.
        ctx.log(`${unit.name} ${unit.version}: ${group.map(([out]) => out).join(', ')} built in ${formatDuration(Date.now() - begun)}`);
      }
    } catch (err) {
      rmSync(tmp, { recursive: true, force: true });
      throw new ClusterError(`build of ${unit.name} ${unit.version} failed in ${unit.moduleDir}:\n${(err as Error).message}`);
    }
    if (isBuilt(unit, gv)) {
      rmSync(tmp, { recursive: true, force: true });
      ctx.log(`${unit.name} ${unit.version}: another build finished it first; its copy stays`);
      continue;
    }
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
  }
}
