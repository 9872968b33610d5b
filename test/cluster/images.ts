// Local container images, built without a registry: a statically linked pause binary (the pod
// sandbox) and busybox from Debian's busybox-static, each packed as a docker-archive tarball and
// imported into containerd's k8s.io namespace. Test pods use them with imagePullPolicy: Never.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync, copyFileSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { busyboxImage, clusterSourceDir, paths, pauseImage } from './layout.ts';
import { run } from './processes.ts';

// Reproducible tarballs: same input, same bytes, same image ID.
const tarFlags = ['--sort=name', '--mtime=@0', '--owner=0', '--group=0', '--numeric-owner', '--format=posix', '--pax-option=delete=atime,delete=ctime'];

export interface ImageSpec {
  ref: string;
  /** Fills the root filesystem directory. */
  populate(rootfs: string): Promise<void>;
  config: Record<string, unknown>;
  /** What the image is made from, for the cache key. */
  inputs(): Promise<string>;
}

const pauseSource = join(clusterSourceDir, 'images', 'pause.c');
const busyboxBinary = '/bin/busybox';

const images: ImageSpec[] = [
  {
    ref: pauseImage,
    inputs: async () => readFileSync(pauseSource, 'utf8') + (await run('gcc', ['--version'])),
    populate: async (rootfs) => {
      await run('gcc', ['-static', '-O2', '-Wall', '-Werror', '-o', join(rootfs, 'pause'), pauseSource]);
    },
    config: { Entrypoint: ['/pause'], User: '65535:65535' },
  },
  {
    ref: busyboxImage,
    inputs: async () => createHash('sha256').update(readFileSync(busyboxBinary)).digest('hex'),
    populate: async (rootfs) => {
      for (const dir of ['bin', 'tmp', 'etc', 'data']) mkdirSync(join(rootfs, dir), { recursive: true });
      chmodSync(join(rootfs, 'tmp'), 0o1777);
      copyFileSync(busyboxBinary, join(rootfs, 'bin', 'busybox'));
      chmodSync(join(rootfs, 'bin', 'busybox'), 0o755);
      const applets = (await run(busyboxBinary, ['--list'])).split('\n').filter((a) => a && a !== 'busybox');
      for (const applet of applets) symlinkSync('busybox', join(rootfs, 'bin', applet));
      writeFileSync(join(rootfs, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n');
      writeFileSync(join(rootfs, 'etc', 'group'), 'root:x:0:\nnobody:x:65534:\n');
    },
    config: { Cmd: ['/bin/sh'], Env: ['PATH=/bin'] },
  },
];

const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

/** Builds (or finds in the cache) the docker-archive tarball of an image. */
export async function buildArchive(spec: ImageSpec): Promise<string> {
  const key = sha256(`${spec.ref}\n${JSON.stringify(spec.config)}\n${await spec.inputs()}`).slice(0, 12);
  const safeName = spec.ref.replace(/[^a-zA-Z0-9.-]+/g, '_');
  const archive = join(paths.imageCache, `${safeName}-${key}.tar`);
  if (existsSync(archive)) return archive;

  const work = join(paths.imageCache, `${safeName}-${key}.work-${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  const rootfs = join(work, 'rootfs');
  const out = join(work, 'archive');
  mkdirSync(rootfs, { recursive: true });
  mkdirSync(out, { recursive: true });
  try {
    await spec.populate(rootfs);
    const layerTar = join(out, 'layer.tar');
    await run('tar', [...tarFlags, '-C', rootfs, '-cf', layerTar, '.']);
    const diffId = sha256(readFileSync(layerTar));
    const config = JSON.stringify({
      architecture: 'amd64',
      os: 'linux',
      created: '1970-01-01T00:00:00Z',
      config: spec.config,
      rootfs: { type: 'layers', diff_ids: [`sha256:${diffId}`] },
      history: [{ created: '1970-01-01T00:00:00Z', created_by: 'pvx test/cluster/images.ts' }],
    });
    const configName = `${sha256(config)}.json`;
    writeFileSync(join(out, configName), config);
    writeFileSync(join(out, 'manifest.json'), JSON.stringify([{ Config: configName, RepoTags: [spec.ref], Layers: ['layer.tar'] }]));
    const tmpArchive = `${archive}.tmp`;
    await run('tar', [...tarFlags, '-C', out, '-cf', tmpArchive, '.']);
    renameSync(tmpArchive, archive);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return archive;
}

export async function ensureImageArchives(): Promise<string[]> {
  mkdirSync(paths.imageCache, { recursive: true });
  const archives: string[] = [];
  for (const spec of images) archives.push(await buildArchive(spec));
  return archives;
}

export const ctrArgs = ['--address', paths.containerdSocket, '--namespace', 'k8s.io'];

/** Imports the image tarballs into containerd (idempotent: the same image imports to the same ID). */
export async function importImages(archives: string[]): Promise<void> {
  for (const archive of archives) {
    await run('ctr', [...ctrArgs, 'images', 'import', archive]);
  }
}

export const imageRefs = images.map((i) => i.ref);
