// pvx's own container image, built here without a Docker engine by following the Dockerfile
// (dockerfile.ts reads it): the same stages, the same files copied, the same RUN commands, user,
// ports, entrypoint and command. What cannot be the same is the base images, which cannot be
// pulled here; each base the Dockerfile names has a local stand-in below, and a base without one
// is an error. The result is a docker-archive tarball in the image cache, keyed by everything it
// is made from, imported into the cluster's containerd like the other local images.
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, posix } from 'node:path';
import { parseDockerfile, DockerfileError, type Stage } from './dockerfile.ts';
import { buildArchive, importImages, type ImageSpec } from './images.ts';
import { paths, repoRoot } from './layout.ts';
import { ClusterError, run } from './processes.ts';

export const dockerfilePath = join(repoRoot, 'Dockerfile');
/** The reference the image is imported under; the chart and kustomize e2e point at it with pullPolicy Never. */
export const operatorImage = { repository: 'pvx.local/pvx', tag: 'dev' } as const;
export const operatorImageRef = `${operatorImage.repository}:${operatorImage.tag}`;

/** The machine's Node.js 24 binary: what the build stages run and what the runtime image carries. */
const nodeBinary = process.execPath;

/**
 * A stand-in for a base image. `host`: the stage runs on this machine in a scratch directory (it
 * is Debian 12 with Node.js 24, what node:24-bookworm-slim is). `rootfs`: the stage's files are
 * laid over a root filesystem assembled here, and end in the image.
 */
type LocalBase =
  | { kind: 'host'; check(): Promise<void> }
  | { kind: 'rootfs'; populate(rootfs: string): Promise<void>; config: Record<string, unknown>; inputs(): Promise<string> };

export const localBases: Record<string, LocalBase> = {
  'node:24-bookworm-slim': {
    kind: 'host',
    check: async () => {
      const os = readFileSync('/etc/os-release', 'utf8');
      if (!/^VERSION_CODENAME=bookworm$/m.test(os))
        throw new ClusterError('the build stages stand in for node:24-bookworm-slim on this machine, which is not Debian 12 (bookworm)');
      if (process.versions.node.split('.')[0] !== '24')
        throw new ClusterError(`the build stages need Node.js 24 (this is ${process.version}); run through scripts/lib/node24.sh`);
    },
  },
  // What distroless nodejs24-debian12 holds that pvx uses: Node.js at /nodejs/bin/node, the C and
  // C++ runtime libraries it links (copied from this Debian 12), CA certificates, the root, nobody
  // and nonroot (65532) users, a world-writable /tmp. It has no shell, no package manager, no
  // tzdata and no libssl (Node.js links its own OpenSSL): neither does this.
  'gcr.io/distroless/nodejs24-debian12:nonroot': {
    kind: 'rootfs',
    inputs: async () => `${process.version}\n${sha256(readFileSync(nodeBinary))}\n${await run('ldd', [nodeBinary])}`,
    populate: async (rootfs) => {
      const place = (from: string, to = from) => {
        mkdirSync(join(rootfs, dirname(to)), { recursive: true });
        copyFileSync(from, join(rootfs, to)); // follows symlinks: the library under the name the binary asks for
      };
      place(nodeBinary, '/nodejs/bin/node');
      chmodSync(join(rootfs, 'nodejs/bin/node'), 0o755);
      for (const lib of sharedLibraries(await run('ldd', [nodeBinary]))) place(lib);
      place('/etc/ssl/certs/ca-certificates.crt');
      mkdirSync(join(rootfs, 'tmp'), { recursive: true });
      chmodSync(join(rootfs, 'tmp'), 0o1777);
      mkdirSync(join(rootfs, 'home/nonroot'), { recursive: true });
      writeFileSync(
        join(rootfs, 'etc/passwd'),
        'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n',
      );
      writeFileSync(join(rootfs, 'etc/group'), 'root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n');
    },
    config: {
      Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt'],
      User: '65532',
      WorkingDir: '/home/nonroot',
    },
  },
};

/** The stand-in for a FROM reference, whose digest (the Dockerfile pins each base by one) it does not need. */
export const localBaseOf = (ref: string): LocalBase | undefined => localBases[ref.replace(/@sha256:[0-9a-f]{64}$/, '')];

/** The absolute paths of the libraries `ldd` resolved (the vDSO has none). */
export function sharedLibraries(lddOutput: string): string[] {
  return lddOutput
    .split('\n')
    .map((l) => /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(l.trim())?.[1])
    .filter((p): p is string => p !== undefined);
}

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** .dockerignore as path prefixes (with `!` exceptions): what the build context leaves out. */
export function contextFilter(dockerignore: string): (path: string) => boolean {
  const rules = dockerignore
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  for (const r of rules) if (/[*?[]/.test(r)) throw new DockerfileError(`.dockerignore: ${r}: wildcards are not understood by the local image builder`);
  const under = (path: string, prefix: string) => path === prefix || path.startsWith(`${prefix}/`);
  return (path) => {
    let included = true;
    for (const r of rules) {
      if (r.startsWith('!')) {
        if (under(path, r.slice(1))) included = true;
      } else if (under(path, r)) included = false;
    }
    return included;
  };
}

/** Every file of the context under `source` (relative to the repository), sorted, ignored ones left out. */
function contextFiles(source: string, included: (path: string) => boolean): string[] {
  const full = join(repoRoot, source);
  if (!existsSync(full)) throw new DockerfileError(`COPY ${source}: not in the build context ${repoRoot}`);
  if (!included(source)) throw new DockerfileError(`COPY ${source}: left out of the build context by .dockerignore`);
  if (!statSync(full).isDirectory()) return [source];
  return readdirSync(full)
    .sort()
    .flatMap((name) => {
      const child = posix.join(source, name);
      return included(child) ? contextFiles(child, included) : [];
    });
}

/** The stage's view of a path: relative ones resolved against its WORKDIR. */
const inStage = (workdir: string, path: string) => posix.resolve(workdir, path);

/** Copies `sources` (context paths, or paths of an earlier stage's root) to `dest` under `root`. */
function copyInto(root: string, workdir: string, sources: string[], dest: string, resolveSource: (s: string) => string): void {
  const target = join(root, inStage(workdir, dest));
  const intoDirectory = dest.endsWith('/') || sources.length > 1;
  for (const source of sources) {
    const from = resolveSource(source);
    const isDir = statSync(from).isDirectory();
    // Docker copies a directory's contents, and a file into a directory when dest ends in "/".
    const to = isDir ? target : intoDirectory ? join(target, posix.basename(source)) : target;
    mkdirSync(isDir ? to : dirname(to), { recursive: true });
    cpSync(from, to, { recursive: true, dereference: false, verbatimSymlinks: true });
  }
}

interface BuiltImage {
  archive: string;
  ref: string;
}

/**
 * Builds the operator image from the Dockerfile (or finds it in the image cache): the build
 * stages run here, the last stage becomes the image.
 */
export async function buildOperatorImage(log: (line: string) => void = () => {}): Promise<BuiltImage> {
  const stages = parseDockerfile(readFileSync(dockerfilePath, 'utf8'));
  const final = stages.at(-1) as Stage;
  const included = contextFilter(existsSync(join(repoRoot, '.dockerignore')) ? readFileSync(join(repoRoot, '.dockerignore'), 'utf8') : '');
  for (const s of stages)
    if (!localBaseOf(s.base))
      throw new DockerfileError(`FROM ${s.base}: the local image builder has no stand-in for this base (test/cluster/operator-image.ts localBases)`);
  const finalBase = localBaseOf(final.base);
  if (finalBase?.kind !== 'rootfs')
    throw new DockerfileError(`FROM ${final.base}: the last stage must start from a base the builder assembles, not from the build machine`);
  for (const s of stages)
    if (s !== final && localBaseOf(s.base)?.kind !== 'host') throw new DockerfileError(`FROM ${s.base}: a build stage must run on the build machine`);

  const copied = stages.flatMap((s) =>
    s.instructions.flatMap((i) => (i.op === 'COPY' && !i.from ? i.sources.flatMap((src) => contextFiles(src, included)) : [])),
  );
  const inputs = async () =>
    [readFileSync(dockerfilePath, 'utf8'), await finalBase.inputs(), ...copied.map((f) => `${f} ${sha256(readFileSync(join(repoRoot, f)))}`)].join('\n');

  const spec: ImageSpec = {
    ref: operatorImageRef,
    inputs,
    config: imageConfig(final, finalBase.config),
    populate: async (rootfs) => {
      const scratch = join(paths.imageCache, `operator-stages-${process.pid}`);
      rmSync(scratch, { recursive: true, force: true });
      const roots = new Map<string, string>();
      try {
        for (const stage of stages) {
          const root = stage === final ? rootfs : join(scratch, stage.name);
          mkdirSync(root, { recursive: true });
          const base = localBaseOf(stage.base);
          if (base?.kind === 'host') await base.check();
          else await base?.populate(root);
          roots.set(stage.name, root);
          await runStage(stage, root, roots, log);
        }
      } finally {
        rmSync(scratch, { recursive: true, force: true });
      }
    },
  };
  const started = Date.now();
  const archive = await buildArchive(spec);
  log(`image ${operatorImageRef}: ${archive} (${Math.round(statSync(archive).size / 2 ** 20)} MiB, ${((Date.now() - started) / 1000).toFixed(1)}s)`);
  return { archive, ref: operatorImageRef };
}

async function runStage(stage: Stage, root: string, roots: Map<string, string>, log: (line: string) => void): Promise<void> {
  let workdir = '/';
  for (const i of stage.instructions) {
    switch (i.op) {
      case 'WORKDIR':
        workdir = i.path;
        mkdirSync(join(root, workdir), { recursive: true });
        break;
      case 'COPY': {
        const fromRoot = i.from ? (roots.get(i.from) as string) : undefined;
        copyInto(root, workdir, i.sources, i.dest, (s) => (fromRoot ? join(fromRoot, s) : join(repoRoot, s)));
        break;
      }
      case 'RUN':
        if (localBaseOf(stage.base)?.kind !== 'host') throw new DockerfileError(`line ${i.line}: RUN in the runtime stage: its base has no shell`);
        log(`[${stage.name}] RUN ${i.command}`);
        await run('/bin/sh', ['-c', i.command], {
          cwd: join(root, workdir),
          env: { ...process.env, PATH: `${dirname(nodeBinary)}:${process.env.PATH ?? ''}` },
        });
        break;
      default:
        break; // USER, EXPOSE, ENTRYPOINT, CMD: the image's configuration (imageConfig)
    }
  }
}

/** The image configuration the last stage's instructions give, over its base's. */
export function imageConfig(stage: Stage, base: Record<string, unknown>): Record<string, unknown> {
  const config: Record<string, unknown> = { ...base };
  for (const i of stage.instructions) {
    if (i.op === 'WORKDIR') config.WorkingDir = i.path;
    if (i.op === 'USER') config.User = i.user;
    if (i.op === 'EXPOSE') config.ExposedPorts = { ...(config.ExposedPorts as object), ...Object.fromEntries(i.ports.map((p) => [p, {}])) };
    if (i.op === 'ENTRYPOINT') {
      config.Entrypoint = i.argv;
      delete config.Cmd; // as Docker: a new ENTRYPOINT resets the base's CMD
    }
    if (i.op === 'CMD') config.Cmd = i.argv;
  }
  return config;
}

/** Builds the operator image (or finds it in the cache) and imports it into the running cluster's containerd. */
export async function importOperatorImage(log: (line: string) => void = () => {}): Promise<string> {
  const { archive, ref } = await buildOperatorImage(log);
  await importImages([archive]);
  return ref;
}
