import type { V1Node } from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, writeEndlessly, type Endless } from '../k8s/testing/peers.ts';
import { explainKubeletFailure, HttpsKubeletClient, type KubeletCredentials, type KubeletTrust } from './kubelet-client.ts';
import { defaultKubeletPort, kubeletEndpoint, parseAddressTypes } from './kubelet-endpoint.ts';

// A throwaway PKI made with the openssl CLI: a cluster CA signing the kubelet's serving certificate
// (SAN IP 127.0.0.1) and a client certificate, and another CA that signs nothing here.
const dir = mkdtempSync(join(tmpdir(), 'pvx-kubelet-'));
const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe', timeout: 30_000 });
const pem = (file: string) => readFileSync(join(dir, file));

function makeCa(name: string): void {
  openssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.crt`,
    '-days',
    '1',
    '-subj',
    `/CN=${name}`,
  );
}

function makeLeaf(name: string, ca: string, ext: string): void {
  writeFileSync(join(dir, `${name}.ext`), `${ext}\nbasicConstraints=CA:FALSE\n`);
  openssl(
    'req',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    `${name}.key`,
    '-out',
    `${name}.csr`,
    '-subj',
    `/CN=${name}`,
  );
  openssl(
    'x509',
    '-req',
    '-in',
    `${name}.csr`,
    '-CA',
    `${ca}.crt`,
    '-CAkey',
    `${ca}.key`,
    '-set_serial',
    String(Date.now()),
    '-out',
    `${name}.crt`,
    '-days',
    '1',
    '-extfile',
    `${name}.ext`,
  );
}

interface Seen {
  path?: string;
  authorization?: string;
  clientCertificate?: string;
}

let server: https.Server;
let port: number;
let answer: { status: number; body: string } = { status: 200, body: '{}' };
let seen: Seen = {};
/** A hostile kubelet: a body that never ends, as fast as it is taken ('flood') or a byte at a time ('trickle'). */
let endless: 'flood' | 'trickle' | undefined;
/** What the hostile kubelet wrote, and whether pvx closed the connection. */
let hostile: Endless = { written: 0, closed: false };

beforeAll(async () => {
  makeCa('cluster-ca');
  makeCa('other-ca');
  makeLeaf('kubelet', 'cluster-ca', 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth');
  makeLeaf('pvx', 'cluster-ca', 'extendedKeyUsage=clientAuth');
  // Like a kubelet: asks for a client certificate (its --client-ca-file) but also takes bearer tokens.
  server = https.createServer(
    { cert: pem('kubelet.crt'), key: pem('kubelet.key'), ca: pem('cluster-ca.crt'), requestCert: true, rejectUnauthorized: false },
    (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      seen = {
        path: req.url,
        authorization: req.headers.authorization,
        clientCertificate: (req.socket as TLSSocket).authorized ? String(peer.subject?.CN) : undefined,
      };
      if (endless) return void (hostile = writeEndlessly(res, '{"pods":[', endless));
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const node = (p = port): V1Node => ({
  metadata: { name: 'node-a' },
  status: {
    addresses: [
      { type: 'Hostname', address: 'node-a' },
      { type: 'InternalIP', address: '127.0.0.1' },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: p } },
  },
});

const trustCluster: KubeletTrust = { ca: undefined, source: 'the cluster CA (/var/run/secrets/kubernetes.io/serviceaccount/ca.crt)' };

const reader = (trust: KubeletTrust, credentials: () => KubeletCredentials = () => ({ token: 'sa-token' })) =>
  new HttpsKubeletClient({ credentials, trust, connectTimeoutMs: 2000, requestTimeoutMs: 2000 });

describe('HttpsKubeletClient', () => {
  it('reads /stats/summary from the address and port of the Node, with the bearer token, the certificate checked against the CA', async () => {
    answer = { status: 200, body: JSON.stringify({ node: { nodeName: 'node-a' }, pods: [] }) };
    const client = reader({ ...trustCluster, ca: pem('cluster-ca.crt') });
    expect(await client.statsSummary(node())).toEqual({ node: { nodeName: 'node-a' }, pods: [] });
    expect(seen).toMatchObject({ path: '/stats/summary', authorization: 'Bearer sa-token' });
    client.close();
  });

  it('presents a client certificate (a kubeconfig’s) when it has one', async () => {
    answer = { status: 200, body: '{}' };
    const client = reader({ ...trustCluster, ca: pem('cluster-ca.crt') }, () => ({ cert: pem('pvx.crt'), key: pem('pvx.key') }));
    await client.statsSummary(node());
    expect(seen).toEqual({ path: '/stats/summary', authorization: undefined, clientCertificate: 'pvx' });
    client.close();
  });

  it('refuses a kubelet whose certificate the CA does not sign, naming the node, its address and the CA', async () => {
    const client = reader({ ca: pem('other-ca.crt'), source: 'the CA file /etc/pvx/kubelet-ca.crt' });
    const failure = client.statsSummary(node());
    await expect(failure).rejects.toThrow(`node node-a: kubelet 127.0.0.1:${port} (InternalIP): its serving certificate is not trusted`);
    await expect(failure).rejects.toThrow(
      /checked against the CA file \/etc\/pvx\/kubelet-ca\.crt; give the CA that signs kubelet serving certificates with --kubelet-ca-file/,
    );
    client.close();
  });

  it('with the insecure opt-out, reads whatever certificate the kubelet shows', async () => {
    answer = { status: 200, body: '{"pods":[]}' };
    const client = reader({ insecure: true });
    expect(await client.statsSummary(node())).toEqual({ pods: [] });
    client.close();
  });

  it('names the missing grant on 403 and the kubelet’s authentication on 401', async () => {
    const client = reader({ ...trustCluster, ca: pem('cluster-ca.crt') });
    answer = { status: 403, body: 'Forbidden (user=system:serviceaccount:pvx-system:pvx, verb=get, resource=nodes, subresource(s)=[stats])' };
    await expect(client.statsSummary(node())).rejects.toThrow(
      `node node-a: kubelet 127.0.0.1:${port} (InternalIP) forbids reading /stats/summary (403 Forbidden): pvx's identity needs RBAC get on nodes/stats (ClusterRole pvx-kubelet-usage): Forbidden (user=system:serviceaccount:pvx-system:pvx`,
    );
    answer = { status: 401, body: 'Unauthorized' };
    await expect(client.statsSummary(node())).rejects.toThrow(/refused pvx's credentials \(401 Unauthorized\): the kubelet must authenticate API clients/);
    client.close();
  });

  it('says the connection was refused, and that a Node without a usable address has none to dial', async () => {
    const closed = https.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const freePort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const client = reader({ ...trustCluster, ca: pem('cluster-ca.crt') });
    await expect(client.statsSummary(node(freePort))).rejects.toThrow(`node node-a: kubelet 127.0.0.1:${freePort} (InternalIP): connection refused`);
    const internalOnly = new HttpsKubeletClient({ credentials: () => ({}), trust: { insecure: true }, preferredAddressTypes: ['InternalIP'] });
    await expect(
      internalOnly.statsSummary({ metadata: { name: 'bare' }, status: { addresses: [{ type: 'ExternalIP', address: '203.0.113.9' }] } }),
    ).rejects.toThrow('node bare has no address of the preferred types InternalIP (it has: ExternalIP)');
    client.close();
  });
});

describe('HttpsKubeletClient facing a hostile kubelet', () => {
  afterAll(() => (endless = undefined));

  it('refuses a body that never ends once it passes maxBodyBytes, and closes the connection', async () => {
    endless = 'flood';
    const client = new HttpsKubeletClient({ credentials: () => ({}), trust: { insecure: true }, maxBodyBytes: 1024 * 1024 });
    await expect(client.statsSummary(node())).rejects.toThrow(
      `node node-a: kubelet 127.0.0.1:${port} (InternalIP): the answer is larger than 1 MiB; not read further`,
    );
    await eventually(() => hostile.closed);
    // What the kubelet managed to write before the close: socket buffers, not the whole flood.
    expect(hostile.written).toBeLessThan(32 * 1024 * 1024);
    client.close();
  });

  it('gives up on a body that trickles without end at the deadline, and closes the connection', async () => {
    endless = 'trickle';
    const client = new HttpsKubeletClient({ credentials: () => ({}), trust: { insecure: true }, deadlineMs: 300 });
    await expect(client.statsSummary(node())).rejects.toThrow(`node node-a: kubelet 127.0.0.1:${port} (InternalIP): no whole answer within 300 ms`);
    await eventually(() => hostile.closed);
    client.close();
  });

  it('stops reading when the caller’s signal fires', async () => {
    endless = 'trickle';
    const client = new HttpsKubeletClient({ credentials: () => ({}), trust: { insecure: true } });
    const controller = new AbortController();
    const reading = client.statsSummary(node(), controller.signal);
    await eventually(() => hostile.written > 0);
    controller.abort();
    await expect(reading).rejects.toThrow(/aborted/);
    await eventually(() => hostile.closed);
    client.close();
  });
});

describe('kubeletEndpoint', () => {
  const addresses = [
    { type: 'Hostname', address: 'ip-10-0-1-7' },
    { type: 'ExternalIP', address: '203.0.113.9' },
    { type: 'InternalIP', address: '10.0.1.7' },
    { type: 'InternalIP', address: 'fd00::7' },
    { type: 'InternalDNS', address: 'ip-10-0-1-7.ec2.internal' },
  ];
  const withAddresses = (a: typeof addresses, port?: number): V1Node => ({
    metadata: { name: 'n' },
    status: { addresses: a, ...(port === undefined ? {} : { daemonEndpoints: { kubeletEndpoint: { Port: port } } }) },
  });

  it.each([
    ['the default order: the first InternalIP', undefined, addresses, 10250, { host: '10.0.1.7', port: 10250, addressType: 'InternalIP' }],
    ['a preference for names', parseAddressTypes('Hostname,InternalIP'), addresses, 10250, { host: 'ip-10-0-1-7', port: 10250, addressType: 'Hostname' }],
    ['a missing type skipped', parseAddressTypes('ExternalDNS,ExternalIP'), addresses, 10250, { host: '203.0.113.9', port: 10250, addressType: 'ExternalIP' }],
    ['the port the kubelet reports', undefined, addresses, 10443, { host: '10.0.1.7', port: 10443, addressType: 'InternalIP' }],
    ['no port reported (0): the kubelet default', undefined, addresses, 0, { host: '10.0.1.7', port: defaultKubeletPort, addressType: 'InternalIP' }],
  ] as const)('%s', (_name, preferred, a, port, expected) => {
    expect(kubeletEndpoint(withAddresses([...a], port), preferred)).toEqual(expected);
  });

  it('without daemonEndpoints, dials the default port', () => {
    expect(kubeletEndpoint(withAddresses(addresses))).toMatchObject({ port: 10250 });
  });

  it('says why there is nothing to dial', () => {
    expect(kubeletEndpoint(withAddresses([{ type: 'ExternalIP', address: '203.0.113.9' }]), ['InternalIP'])).toEqual({
      error: 'node n has no address of the preferred types InternalIP (it has: ExternalIP)',
    });
  });

  it('parses a preference list, refusing unknown and repeated types', () => {
    expect(parseAddressTypes('InternalIP, Hostname')).toEqual(['InternalIP', 'Hostname']);
    expect(() => parseAddressTypes('InternalIP,PodIP')).toThrow(/"PodIP" is not a node address type/);
    expect(() => parseAddressTypes('Hostname,Hostname')).toThrow(/listed twice/);
  });
});

describe('explainKubeletFailure', () => {
  const at = { host: 'fd00::7', port: 10250, addressType: 'InternalIP' as const };
  it.each([
    [
      'a certificate for another name',
      { code: 'ERR_TLS_CERT_ALTNAME_INVALID', message: "IP: fd00::7 is not in the cert's list" },
      /kubelet \[fd00::7\]:10250 \(InternalIP\): its serving certificate does not name fd00::7/,
    ],
    [
      'a timeout',
      { code: 'ETIMEDOUT', message: 'no connection within 5000 ms' },
      /^node n: kubelet \[fd00::7\]:10250 \(InternalIP\): no connection within 5000 ms$/,
    ],
    ['another status', { status: 500, body: 'internal error' }, /answered HTTP 500: internal error$/],
  ] as const)('%s', (_name, failure, expected) => {
    expect(explainKubeletFailure('n', at, { source: 'the cluster CA' }, failure)).toMatch(expected);
  });
});
