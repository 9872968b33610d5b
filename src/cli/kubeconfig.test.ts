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

// Review, 2026-12-04: pvx's own client honoured HTTPS_PROXY and NO_PROXY, client-node's — which
// serves every exec-plugin kubeconfig (EKS, GKE) — went direct.
describe('the environment’s proxy, for the connections client-node serves', () => {
  const remote = (name: string, extra: Record<string, unknown> = {}) => kubeconfig(name, { server: 'https://api.example.com:443', ...extra }, true);

  it('goes through HTTPS_PROXY by client-go’s rules: not for a NO_PROXY domain or CIDR, nor loopback', () => {
    const path = remote('p1.yaml');
    expect(loadKubeConfig(path, { HTTPS_PROXY: 'proxy.corp:3128' }).getCurrentCluster()?.proxyUrl).toBe('http://proxy.corp:3128/');
    expect(loadKubeConfig(path, { HTTPS_PROXY: 'http://proxy.corp:3128', NO_PROXY: '.example.com' }).getCurrentCluster()?.proxyUrl).toBeUndefined();
    expect(loadKubeConfig(path, {}).getCurrentCluster()?.proxyUrl).toBeUndefined();
    const internal = kubeconfig('p2.yaml', { server: 'https://10.96.0.1:443' }, true);
    expect(loadKubeConfig(internal, { HTTPS_PROXY: 'http://proxy.corp:3128', NO_PROXY: '10.96.0.0/12' }).getCurrentCluster()?.proxyUrl).toBeUndefined();
    const local = kubeconfig('p3.yaml', {}, true);
    expect(loadKubeConfig(local, { HTTPS_PROXY: 'http://proxy.corp:3128' }).getCurrentCluster()?.proxyUrl).toBeUndefined();
  });

  it('leaves a kubeconfig’s own proxy-url as it is, and refuses a proxy it cannot speak to', () => {
    expect(
      loadKubeConfig(remote('p4.yaml', { 'proxy-url': 'socks5://jump:1080' }), { HTTPS_PROXY: 'http://proxy.corp:3128' }).getCurrentCluster()?.proxyUrl,
    ).toBe('socks5://jump:1080');
    expect(() => loadKubeConfig(remote('p5.yaml'), { HTTPS_PROXY: 'ftp://proxy.corp' })).toThrow(/^cluster c-p5.yaml: /);
  });
});
