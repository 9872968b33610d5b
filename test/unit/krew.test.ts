// The krew manifest (krew/pvx.yaml) against what it installs: the npm-packed package.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = resolve(import.meta.dirname, '..', '..');
const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { version: string; files: string[]; bin: Record<string, string> };
const manifest = parse(readFileSync(resolve(root, 'krew', 'pvx.yaml'), 'utf8')) as {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: {
    version: string;
    shortDescription: string;
    description?: string;
    caveats?: string;
    platforms: {
      selector: { matchExpressions?: { key: string; operator: string; values: string[] }[]; matchLabels?: Record<string, string> };
      uri: string;
      sha256: string;
      bin: string;
      files?: { from: string; to: string }[];
    }[];
  };
};

/** Whether npm pack ships a path of the package: under one of package.json's `files` (package.json and README always). */
const shipped = (path: string) => ['package.json', ...pkg.files].some((f) => path === f || path.startsWith(`${f}/`));

describe('krew/pvx.yaml', () => {
  it('is a krew Plugin with the fields krew requires', () => {
    expect(manifest.apiVersion).toBe('krew.googlecontainertools.github.com/v1alpha2');
    expect(manifest.kind).toBe('Plugin');
    expect(manifest.metadata.name).toBe('pvx');
    expect(manifest.spec.shortDescription.length).toBeGreaterThan(0);
    expect(manifest.spec.platforms.length).toBeGreaterThan(0);
    for (const p of manifest.spec.platforms) {
      expect(p.uri).toMatch(/^https:\/\//);
      expect(p.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(p.bin.length).toBeGreaterThan(0);
      expect(p.selector.matchExpressions ?? p.selector.matchLabels).toBeDefined();
    }
  });

  it('has the version of package.json', () => {
    expect(manifest.spec.version).toBe(`v${pkg.version}`);
    for (const p of manifest.spec.platforms) expect(p.uri).toContain(pkg.version);
  });

  it('runs a launcher npm pack ships, unpacked whole from the archive’s package/', () => {
    for (const p of manifest.spec.platforms) {
      expect(p.files).toEqual([{ from: 'package/*', to: '.' }]);
      expect(shipped(p.bin), `${p.bin} is under package.json's files`).toBe(true);
      accessSync(resolve(root, p.bin), constants.X_OK);
      expect(spawnSync('sh', ['-n', resolve(root, p.bin)], { timeout: 30_000 }).status).toBe(0);
    }
  });

  it('launches the CLI the package builds, and says Node.js 24 is needed', () => {
    const launcher = readFileSync(resolve(root, manifest.spec.platforms[0]?.bin ?? ''), 'utf8');
    expect(launcher).toContain('"$root/dist/cli/main.js"');
    expect(pkg.bin['kubectl-pvx']).toBe('dist/cli/main.js');
    expect(shipped('dist/cli/main.js')).toBe(true);
    expect(manifest.spec.caveats).toMatch(/Node\.js 24 on PATH/);
    expect(manifest.spec.caveats).toMatch(/npm install --omit=dev/);
  });
});
