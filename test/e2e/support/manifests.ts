// pvx's install manifests as the two ways it ships them render them — `helm template charts/pvx`
// and `kubectl kustomize config/default` — with the pinned helm and kubectl the cluster build
// caches, and the means to compare them object by object.
import type { V1Deployment } from '@kubernetes/client-node';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { binaries } from '../../cluster/build.ts';
import { repoRoot } from '../../cluster/layout.ts';

export const chartDir = join(repoRoot, 'charts', 'pvx');
export const kustomizeDir = join(repoRoot, 'config', 'default');
export const releaseName = 'pvx';
export const installNamespace = 'pvx-system';

export interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** Path of a binary the cluster build caches; a clear error (not a skip) when it is not built yet. */
export async function cachedBinary(name: 'helm' | 'kubectl'): Promise<string> {
  const path = (await binaries())[name];
  if (!path || !existsSync(path)) {
    throw new Error(
      `${name} is not built at ${path ?? '(no build unit)'}: run \`npm run cluster:build\` (builds the pinned ${name} into ~/.cache/pvx/bin with the cluster's binaries)`,
    );
  }
  return path;
}

export interface Result {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; stdout and stderr apart, since a warning on stderr is not YAML. */
export function exec(command: string, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {}): Result {
  const res = spawnSync(command, args, {
    input: opts.input,
    env: opts.env ?? process.env,
    cwd: opts.cwd ?? repoRoot,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    timeout: 120_000,
  });
  if (res.error) throw new Error(`cannot run ${command}: ${res.error.message}`);
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

/** Like exec, but a non-zero exit is an error that shows what the command said. */
export function execOK(command: string, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {}): string {
  const res = exec(command, args, opts);
  if (res.status !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${res.status}:\n${res.stderr}${res.stdout}`);
  return res.stdout;
}

export function parseManifests(text: string): Manifest[] {
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`rendered YAML does not parse: ${doc.errors.map((e) => e.message).join('; ')}`);
      return doc.toJS() as Manifest | null;
    })
    .filter((m): m is Manifest => m !== null && typeof m === 'object');
}

/**
 * The image the kustomize base names (a placeholder: none is published). The chart has no default
 * and refuses to render without one, so every render here names the same one.
 */
export const placeholderImage = 'image.repository=registry.example/pvx';

export async function helmTemplate(setValues: string[] = [], namespace = installNamespace): Promise<Manifest[]> {
  const helm = await cachedBinary('helm');
  return parseManifests(
    execOK(helm, ['template', releaseName, chartDir, '--namespace', namespace, ...[placeholderImage, ...setValues].flatMap((v) => ['--set', v])]),
  );
}

export async function kustomizeDefault(): Promise<Manifest[]> {
  const kubectl = await cachedBinary('kubectl');
  return parseManifests(execOK(kubectl, ['kustomize', kustomizeDir]));
}

/** The kustomization at `dir` (from the repository's root), rendered. */
export async function kustomizeAt(dir: string): Promise<Manifest[]> {
  const kubectl = await cachedBinary('kubectl');
  return parseManifests(execOK(kubectl, ['kustomize', join(repoRoot, dir)]));
}

/** config/default with kustomize components (config/components/<name>), through an overlay made for the purpose. */
export async function kustomizeWith(components: string[]): Promise<Manifest[]> {
  const kubectl = await cachedBinary('kubectl');
  const overlay = mkdtempSync(join(tmpdir(), 'pvx-overlay-'));
  try {
    writeFileSync(
      join(overlay, 'kustomization.yaml'),
      stringify({
        resources: [relative(overlay, kustomizeDir)],
        components: components.map((c) => relative(overlay, join(repoRoot, 'config', 'components', c))),
      }),
    );
    return parseManifests(execOK(kubectl, ['kustomize', overlay]));
  } finally {
    rmSync(overlay, { recursive: true, force: true });
  }
}

export function objectKey(m: Manifest): string {
  return `${m.apiVersion} ${m.kind} ${m.metadata.namespace ? `${m.metadata.namespace}/` : ''}${m.metadata.name}`;
}

export function byKey(manifests: Manifest[]): Map<string, Manifest> {
  const map = new Map<string, Manifest>();
  for (const m of manifests) {
    const key = objectKey(m);
    if (map.has(key)) throw new Error(`${key} is rendered twice`);
    map.set(key, m);
  }
  return map;
}

const chart = parse(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as { name: string; version: string; appVersion: string };

/**
 * The labels Helm's bookkeeping puts on every object, with the values they must have. They
 * describe the release, not pvx, so kustomize's objects do not carry them.
 */
export const helmLabels: Record<string, string> = {
  'helm.sh/chart': `${chart.name}-${chart.version}`,
  'app.kubernetes.io/managed-by': 'Helm',
  'app.kubernetes.io/instance': releaseName,
  'app.kubernetes.io/version': chart.appVersion,
};
/** Tells Helm never to delete the object (the CRDs): meaningless outside Helm. */
export const helmKeepAnnotation = { 'helm.sh/resource-policy': 'keep' };

/**
 * The object without Helm's bookkeeping: each label or annotation goes only when it has exactly
 * the expected value, so a wrong value still shows as a difference.
 */
export function withoutHelmBookkeeping(m: Manifest): Manifest {
  const strip = (map: Record<string, string> | undefined, expected: Record<string, string>) => {
    if (!map) return undefined;
    const rest = Object.fromEntries(Object.entries(map).filter(([k, v]) => expected[k] !== v));
    return Object.keys(rest).length > 0 ? rest : undefined;
  };
  const { labels, annotations, ...metadata } = m.metadata;
  const keptLabels = strip(labels, helmLabels);
  const keptAnnotations = m.kind === 'CustomResourceDefinition' ? strip(annotations, helmKeepAnnotation) : annotations;
  return { ...m, metadata: { ...metadata, ...(keptLabels ? { labels: keptLabels } : {}), ...(keptAnnotations ? { annotations: keptAnnotations } : {}) } };
}

/** Every path at which two values differ, as "path: left ≠ right" lines (at most `limit`). */
export function differences(left: unknown, right: unknown, path = '', limit = 20): string[] {
  const out: string[] = [];
  const walk = (a: unknown, b: unknown, at: string) => {
    if (out.length >= limit || isDeepStrictEqual(a, b)) return;
    const bothArrays = Array.isArray(a) && Array.isArray(b);
    const bothObjects = !bothArrays && a !== null && b !== null && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b);
    if (bothArrays) {
      for (let i = 0; i < Math.max(a.length, b.length); i++) walk(a[i], b[i], `${at}[${i}]`);
    } else if (bothObjects) {
      const ao = a as Record<string, unknown>;
      const bo = b as Record<string, unknown>;
      for (const k of [...new Set([...Object.keys(ao), ...Object.keys(bo)])].sort()) walk(ao[k], bo[k], at ? `${at}.${k}` : k);
    } else {
      const show = (v: unknown) => (v === undefined ? '(absent)' : JSON.stringify(v));
      out.push(`${at || '(root)'}: ${show(a)} ≠ ${show(b)}`);
    }
  };
  walk(left, right, path);
  return out;
}

/** A Pod with the Deployment's pod template, to put before Pod Security Admission. */
export function podFromDeployment(deployment: V1Deployment, name: string, namespace: string): Manifest {
  const template = deployment.spec?.template;
  if (!template?.spec) throw new Error(`Deployment ${deployment.metadata?.name} has no pod template`);
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, labels: template.metadata?.labels ?? {} }, spec: structuredClone(template.spec) };
}

/** The rendered object of this kind and name, typed as the caller reads it. */
export function find<T = Manifest>(manifests: Manifest[], kind: string, name: string): T {
  const found = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} among ${manifests.map(objectKey).join(', ')}`);
  return found as unknown as T;
}
