import { KubeConfig } from '@kubernetes/client-node';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { inClusterConnection, kubeconfigConnection, resolveConnection, type Connection, type ConnectionResult } from './connection.ts';

const scratch = mkdtempSync(join(tmpdir(), 'pvx-connection-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let files = 0;
/** Writes a kubeconfig with one context, `cluster` and `user`, in a directory of its own; returns its path. */
function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown> | undefined, extra: Record<string, string> = {}): string {
  const dir = join(scratch, `k${files++}`);
  mkdirSync(dir);
  for (const [name, content] of Object.entries(extra)) writeFileSync(join(dir, name), content);
  const path = join(dir, 'config');
  writeFileSync(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'here',
      contexts: [
        { name: 'other', context: { cluster: 'nowhere', user: 'nobody' } },
        { name: 'here', context: { cluster: 'c', ...(user ? { user: 'u' } : {}), namespace: 'db' } },
      ],
      clusters: [
        { name: 'nowhere', cluster: { server: 'https://nowhere:1' } },
        { name: 'c', cluster },
      ],
      users: user
        ? [
            { name: 'nobody', user: { token: 'wrong' } },
            { name: 'u', user },
          ]
        : [],
    }),
  );
  return path;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const connected = (r: ConnectionResult): Connection => {
  if ('unsupported' in r) throw new Error(`unsupported: ${r.unsupported}`);
  return r.connection;
};

describe('kubeconfigConnection: static credentials', () => {
  it('reads embedded certificates, key and CA, and the current context only (its namespace too)', async () => {
    const c = connected(
      await kubeconfigConnection(
        kubeconfig(
          { server: 'https://10.0.0.1:6443/', 'certificate-authority-data': b64('CA') },
          { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') },
        ),
      ),
    );
    expect({ ...c, ca: c.ca?.toString(), cert: c.cert?.toString(), key: c.key?.toString(), source: undefined, caSource: undefined }).toEqual({
      server: 'https://10.0.0.1:6443',
      ca: 'CA',
      cert: 'CERT',
      key: 'KEY',
      namespace: 'db',
      source: undefined,
      caSource: undefined,
    });
    expect(c.caSource).toMatch(/^the certificate-authority-data of kubeconfig /);
  });

  it('reads certificate files relative to the kubeconfig’s directory', async () => {
    const c = connected(
      await kubeconfigConnection(
        kubeconfig(
          { server: 'https://k:6443', 'certificate-authority': 'ca.crt' },
          { 'client-certificate': 'c.crt', 'client-key': 'c.key' },
          { 'ca.crt': 'CA', 'c.crt': 'CERT', 'c.key': 'KEY' },
        ),
      ),
    );
    expect([c.ca, c.cert, c.key].map(String)).toEqual(['CA', 'CERT', 'KEY']);
    expect(c.caSource).toMatch(/\/ca\.crt$/);
  });

  it.each([
    ['a token', { token: 'T' }, { token: 'T' }],
    ['a tokenFile, relative to the kubeconfig', { tokenFile: 'tok' }, { tokenFile: 'tok' }],
    ['client-node’s token-file spelling', { 'token-file': 'tok' }, { tokenFile: 'tok' }],
    ['a token over a tokenFile', { token: 'T', tokenFile: 'tok' }, { token: 'T' }],
  ])('%s', async (_name, user, want) => {
    const path = kubeconfig({ server: 'https://k:6443' }, user, { tok: 'FROM-FILE' });
    const c = connected(await kubeconfigConnection(path));
    const expected: { token?: string; tokenFile?: string } = 'tokenFile' in want ? { tokenFile: join(path, '..', want.tokenFile) } : want;
    expect({ token: c.token, tokenFile: c.tokenFile }).toEqual({ token: expected.token, tokenFile: expected.tokenFile });
  });

  it('insecure-skip-tls-verify turns verification off (and allows plain HTTP); tls-server-name is the name checked', async () => {
    expect(
      connected(
        await kubeconfigConnection(kubeconfig({ server: 'https://k:6443', 'insecure-skip-tls-verify': true, 'tls-server-name': 'api' }, { token: 'T' })),
      ),
    ).toMatchObject({ rejectUnauthorized: false, servername: 'api' });
    expect(connected(await kubeconfigConnection(kubeconfig({ server: 'http://k:8080', 'insecure-skip-tls-verify': true }, undefined))).rejectUnauthorized).toBe(
      false,
    );
    expect(connected(await kubeconfigConnection(kubeconfig({ server: 'https://k:6443' }, { token: 'T' }))).rejectUnauthorized).toBeUndefined();
  });
});

describe('kubeconfigConnection: what it leaves to client-node, with the reason', () => {
  it.each([
    ['an exec credential plugin', { server: 'https://k' }, { exec: { command: 'aws', apiVersion: 'client.authentication.k8s.io/v1beta1' } }, /exec/],
    ['an auth-provider (OIDC)', { server: 'https://k' }, { 'auth-provider': { name: 'oidc', config: {} } }, /auth-provider/],
    ['basic auth', { server: 'https://k' }, { username: 'a', password: 'b' }, /username, password/],
    ['impersonation', { server: 'https://k' }, { token: 'T', as: 'admin' }, /as\b/],
    [
      'a SOCKS proxy',
      { server: 'https://k', 'proxy-url': 'socks5://proxy:1080' },
      { token: 'T' },
      /proxy-url is not an HTTP\(S\) proxy \(socks5:\/\/proxy:1080\)/,
    ],
    ['plain HTTP with TLS verification on', { server: 'http://k:8080' }, { token: 'T' }, /plain HTTP/],
  ])('%s', async (_name, cluster, user, reason) => {
    const r = await kubeconfigConnection(kubeconfig(cluster, user));
    expect('unsupported' in r && r.unsupported).toMatch(reason);
  });

  it('an HTTP(S) proxy-url is pvx’s own: every request goes through it', async () => {
    expect(connected(await kubeconfigConnection(kubeconfig({ server: 'https://k', 'proxy-url': 'http://proxy:3128' }, { token: 'T' }))).proxyUrl).toBe(
      'http://proxy:3128',
    );
  });

  it('refuses TLS verification off together with a CA, whichever client would serve the user (client-go refuses it; client-node would not verify)', async () => {
    for (const ca of [{ 'certificate-authority-data': b64('CA') }, { 'certificate-authority': 'ca.crt' }]) {
      const path = kubeconfig({ server: 'https://k:6443', 'insecure-skip-tls-verify': true, ...ca }, { exec: { command: 'aws' } }, { 'ca.crt': 'CA' });
      await expect(kubeconfigConnection(path)).rejects.toThrow(
        `kubeconfig ${path}: insecure-skip-tls-verify and a certificate authority together are not allowed (client-go refuses them too): remove one`,
      );
    }
  });

  it('a kubeconfig without a current context, or a missing file', async () => {
    const path = join(scratch, 'no-context');
    writeFileSync(path, stringify({ clusters: [{ name: 'c', cluster: { server: 'https://k' } }] }));
    expect(await kubeconfigConnection(path)).toEqual({ unsupported: `kubeconfig ${path} has no current context` });
    expect(await resolveConnection(join(scratch, 'missing'))).toEqual({ unsupported: `kubeconfig ${join(scratch, 'missing')} does not exist` });
  });
});

describe('kubeconfigConnection reaches the same server with the same credentials as client-node', () => {
  it.each([
    [
      'certificates',
      { server: 'https://10.0.0.1:6443/', 'certificate-authority-data': b64('CA') },
      { 'client-certificate-data': b64('CERT'), 'client-key-data': b64('KEY') },
    ],
    ['files', { server: 'https://k:6443', 'certificate-authority': 'ca.crt' }, { 'client-certificate': 'c.crt', 'client-key': 'c.key' }],
    ['a token, TLS verification off', { server: 'https://k:6443/prefix', 'insecure-skip-tls-verify': true }, { token: 'T' }],
  ])('%s', async (_name, cluster, user) => {
    const path = kubeconfig(cluster, user, { 'ca.crt': 'CA', 'c.crt': 'CERT', 'c.key': 'KEY' });
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    const opts: { ca?: Buffer; cert?: Buffer; key?: Buffer; rejectUnauthorized?: boolean; headers?: Record<string, string> } = {};
    await kc.applyToHTTPSOptions(opts);
    const c = connected(await kubeconfigConnection(path));
    expect({
      server: c.server,
      ca: c.ca,
      cert: c.cert,
      key: c.key,
      rejectUnauthorized: c.rejectUnauthorized,
      authorization: c.token ? `Bearer ${c.token}` : undefined,
    }).toEqual({
      server: kc.getCurrentCluster()?.server,
      ca: opts.ca,
      cert: opts.cert,
      key: opts.key,
      rejectUnauthorized: opts.rejectUnauthorized,
      authorization: opts.headers?.Authorization,
    });
  });
});

describe('inClusterConnection', () => {
  const sa = join(scratch, 'sa');
  mkdirSync(sa);
  writeFileSync(join(sa, 'token'), 'T');
  writeFileSync(join(sa, 'ca.crt'), 'CA');

  it('the service account’s CA and token file, the service’s address', () => {
    const c = connected(inClusterConnection({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, sa));
    expect({ ...c, ca: String(c.ca) }).toEqual({
      server: 'https://10.96.0.1:443',
      ca: 'CA',
      caSource: join(sa, 'ca.crt'),
      tokenFile: join(sa, 'token'),
      source: 'in-cluster',
    });
    expect(connected(inClusterConnection({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, sa)).server).toBe('https://[fd00::1]:443');
  });

  it('the pod’s own namespace, from the service account’s namespace file, as client-node reads it', () => {
    const withNamespace = join(scratch, 'sa-ns');
    mkdirSync(withNamespace);
    writeFileSync(join(withNamespace, 'token'), 'T');
    writeFileSync(join(withNamespace, 'namespace'), 'pvx-system\n');
    expect(connected(inClusterConnection({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, withNamespace)).namespace).toBe(
      'pvx-system',
    );
    expect(connected(inClusterConnection({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, sa)).namespace).toBeUndefined();
  });

  it('without the service’s address, client-node decides', () => {
    expect(inClusterConnection({}, sa)).toEqual({ unsupported: 'KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT is not set' });
  });

  it('resolveConnection without a path: ~/.kube/config first, then the service account, as client-node’s loadFromDefault', async () => {
    const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' };
    const emptyHome = join(scratch, 'home-empty');
    mkdirSync(emptyHome);
    expect(connected(await resolveConnection(undefined, { ...env, HOME: emptyHome }, sa)).source).toBe('in-cluster');
    const home = join(scratch, 'home');
    mkdirSync(join(home, '.kube'), { recursive: true });
    writeFileSync(
      join(home, '.kube', 'config'),
      stringify({ 'current-context': 'x', contexts: [{ name: 'x', context: { cluster: 'c' } }], clusters: [{ name: 'c', cluster: { server: 'https://k' } }] }),
    );
    expect(connected(await resolveConnection(undefined, { ...env, HOME: home }, sa)).source).toBe(join(home, '.kube', 'config'));
    expect(connected(await resolveConnection(undefined, { ...env, HOME: emptyHome, KUBECONFIG: join(home, '.kube', 'config') }, sa)).source).toBe(
      join(home, '.kube', 'config'),
    );
    expect(await resolveConnection(undefined, { HOME: emptyHome, KUBECONFIG: `a:b` }, sa)).toEqual({ unsupported: 'KUBECONFIG lists several files (a:b)' });
    expect(await resolveConnection(undefined, { HOME: emptyHome }, join(scratch, 'no-sa'))).toEqual({ unsupported: 'no kubeconfig and no service account' });
  });
});
