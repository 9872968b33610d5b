import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadKubeConfig } from './kubeconfig.ts';

const dir = mkdtempSync(join(tmpdir(), 'pvx-kubeconfig-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const saved = process.env.KUBECONFIG;
afterEach(() => {
  if (saved === undefined) delete process.env.KUBECONFIG;
  else process.env.KUBECONFIG = saved;
});

/** A kubeconfig file of one cluster, its user's token and a context for them (current when `current`). */
function kubeconfig(name: string, cluster: Record<string, unknown>, current: boolean): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: `c-${name}`, cluster: { server: 'https://127.0.0.1:6443', ...cluster } }],
      users: [{ name: `u-${name}`, user: { token: 't' } }],
      contexts: [{ name: `x-${name}`, context: { cluster: `c-${name}`, user: `u-${name}` } }],
      ...(current ? { 'current-context': `x-${name}` } : {}),
    }),
  );
  return path;
}

// Review, 2026-12-05: a single file with both was refused (connection.ts), a KUBECONFIG of several
// files — left to client-node, which merges them — was taken, verification off and the CA ignored.
describe('a KUBECONFIG of several files', () => {
  it('is refused when its cluster skips TLS verification and names a certificate authority, as one file is', () => {
    const a = kubeconfig('a.yaml', { 'insecure-skip-tls-verify': true, 'certificate-authority-data': Buffer.from('ca').toString('base64') }, true);
    const b = kubeconfig('b.yaml', {}, false);
    process.env.KUBECONFIG = [a, b].join(delimiter);
    expect(() => loadKubeConfig()).toThrow(/insecure-skip-tls-verify and a certificate authority together are not allowed/);
  });

  it('is loaded when it does only one of them', () => {
    const a = kubeconfig('c.yaml', { 'insecure-skip-tls-verify': true }, true);
    const b = kubeconfig('d.yaml', {}, false);
    process.env.KUBECONFIG = [a, b].join(delimiter);
    expect(loadKubeConfig().getCurrentCluster()?.skipTLSVerify).toBe(true);
  });
});
