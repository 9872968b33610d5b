// The two endpoints over real sockets on 127.0.0.1: /metrics over HTTPS behind the token review
// (the Manager wired as `pvx run` wires it, the API server's answers from the fake), health over
// plain HTTP, the certificate of a directory served and rotated, and the plain-HTTP opt-out.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FakeKubeClient } from '../../k8s/testing/fake-client.ts';
import { ThrottledKubeClient } from '../../k8s/throttled-client.ts';
import { createRuntimeMetrics } from '../../metrics/runtime.ts';
import type { Endpoint } from './http-endpoint.ts';
import { Manager } from '../runtime/manager.ts';
import { MetricsAuthorizer } from './metrics-auth.ts';
import { percentile, scrapeFlood, type ScrapeFloodResult } from './scrape-flood.testing.ts';
import { certificateDirectory, selfSignedSource } from './metrics-certs.ts';
import { startMetricsServer } from './metrics-server.ts';
import { selfSignedCertificate } from './x509.ts';

const logger = pino({ level: 'silent' });
const scratch = mkdtempSync(join(tmpdir(), 'pvx-metrics-server-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Answer {
  status: number;
  body: string;
  /** The SHA-256 fingerprint of the certificate the server presented. */
  certificate: string;
}

/** One HTTPS GET on a new connection; verifies the server against `ca` when given. */
function httpsGet(port: number, path: string, opts: { token?: string; ca?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      {
        host: '127.0.0.1',
        port,
        path,
        servername: 'localhost',
        agent: false,
        headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {},
        ...(opts.ca ? { ca: opts.ca } : { rejectUnauthorized: false }),
      },
      (res) => {
        const certificate = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body, certificate }));
      },
    );
    req.on('error', reject);
  });
}

const validFor = (days: number) => ({ notBefore: new Date(Date.now() - 60_000), notAfter: new Date(Date.now() + days * 86_400_000) });
const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

describe('pvx serving /metrics over HTTPS behind the token review, and health over HTTP', () => {
  let manager: Manager | undefined;
  afterEach(async () => {
    await manager?.stop();
    manager = undefined;
  });

  it('refuses an anonymous scrape (401) and a user without the binding (403), serves an allowed one, and serves health without a token', async () => {
    const fake = new FakeKubeClient();
    fake.tokens.set('prometheus-token', { username: 'system:serviceaccount:monitoring:prometheus', groups: ['system:serviceaccounts'] });
    fake.tokens.set('alice-token', { username: 'alice' });
    fake.authorize = (r) => ({ allowed: r.user.username === 'system:serviceaccount:monitoring:prometheus' && r.path === '/metrics' && r.verb === 'get' });
    manager = new Manager({
      client: fake,
      logger,
      metrics: createRuntimeMetrics(new Registry(), { processMetrics: false }),
      healthListen: '127.0.0.1:0',
      metricsEndpoint: { listen: '127.0.0.1:0', secure: { certificates: selfSignedSource(), authorizer: new MetricsAuthorizer({ client: fake, logger }) } },
    });
    await manager.start();
    const metricsPort = Number(manager.metricsAddress.split(':').at(-1));
    const healthPort = Number(manager.healthAddress.split(':').at(-1));
    expect(metricsPort).not.toBe(healthPort);

    const anonymous = await httpsGet(metricsPort, '/metrics');
    expect(anonymous).toMatchObject({ status: 401, body: expect.stringContaining('no bearer token') });
    expect(await httpsGet(metricsPort, '/metrics', { token: 'forged' })).toMatchObject({ status: 401, body: expect.stringContaining('not valid') });
    expect(await httpsGet(metricsPort, '/metrics', { token: 'alice-token' })).toMatchObject({
      status: 403,
      body: expect.stringContaining('user "alice" may not get /metrics'),
    });
    const allowed = await httpsGet(metricsPort, '/metrics', { token: 'prometheus-token' });
    expect(allowed.status).toBe(200);
    expect(allowed.body).toContain('leader_election_master_status');
    // Only /metrics is served there, and asking for anything else costs no review.
    const reviewsBefore = fake.calls.filter((c) => c.startsWith('create')).length;
    expect((await httpsGet(metricsPort, '/healthz', { token: 'prometheus-token' })).status).toBe(404);
    expect(fake.calls.filter((c) => c.startsWith('create'))).toHaveLength(reviewsBefore);

    const health = await fetch(`http://127.0.0.1:${healthPort}/healthz`);
    expect([health.status, await health.text()]).toEqual([200, 'ok\n']);
    expect((await fetch(`http://127.0.0.1:${healthPort}/readyz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${healthPort}/metrics`)).status).toBe(404);
  });

  it('a review that fails serves nothing: 503 with the reason', async () => {
    const fake = new FakeKubeClient();
    fake.tokens.set('prometheus-token', new Error('connect ECONNREFUSED 10.96.0.1:443'));
    const endpoint = await startMetricsServer({
      listen: '127.0.0.1:0',
      registry: new Registry(),
      logger,
      secure: { certificates: selfSignedSource(), authorizer: new MetricsAuthorizer({ client: fake, logger }) },
    });
    try {
      expect(await httpsGet(endpoint.address.port, '/metrics', { token: 'prometheus-token' })).toEqual({
        status: 503,
        body: expect.stringContaining('the TokenReview failed: connect ECONNREFUSED'),
        certificate: expect.any(String),
      });
    } finally {
      await endpoint.close();
    }
  });
});

describe('/metrics under a flood of bogus tokens', () => {
  // A hostile peer (127.0.0.2) sends 100 scrapes a second, each with a new random token, for 4 s,
  // while a real scraper (127.0.0.3) scrapes every second with a valid token it has not used
  // before — the worst case: no verdict cached. The API server answers each review after 5 ms,
  // behind pvx's own review rate limit (as `pvx run` wires it: 50/s, burst 100).
  it(
    'the real scrapes are answered within a second; the bogus ones are refused quickly and cost a bounded number of reviews',
    { timeout: 60_000 },
    async () => {
      const fake = new FakeKubeClient();
      const realTokens = ['real-1', 'real-2', 'real-3', 'real-4'];
      for (const t of realTokens) fake.tokens.set(t, { username: 'system:serviceaccount:monitoring:prometheus' });
      fake.authorize = (r) => ({ allowed: r.user.username === 'system:serviceaccount:monitoring:prometheus' });
      const slow = Object.assign(Object.create(fake) as FakeKubeClient, {
        createTokenReview: async (t: string) => (await new Promise((r) => setTimeout(r, 5)), fake.createTokenReview(t)),
      });
      const client = new ThrottledKubeClient(slow, { qps: 50, burst: 100 });
      const endpoint = await startMetricsServer({
        listen: '127.0.0.1:0',
        registry: new Registry(),
        logger,
        secure: { certificates: selfSignedSource(), authorizer: new MetricsAuthorizer({ client, logger }) },
      });
      let result: ScrapeFloodResult;
      try {
        result = await scrapeFlood({ port: endpoint.address.port, bogusPerSecond: 100, seconds: 4, realTokens });
      } finally {
        await endpoint.close();
      }
      const { real, bogus } = result;
      expect(real.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect(Math.max(...real.map((r) => r.ms))).toBeLessThan(1_000);
      expect(bogus.filter((b) => ![401, 429, 503].includes(b.status))).toEqual([]);
      expect(
        percentile(
          bogus.map((b) => b.ms),
          0.99,
        ),
      ).toBeLessThan(2_500);
      // Reviews: a bounded rate for tokens never seen (5/s, burst 10), whatever the flood's (400 requests).
      const reviews = fake.calls.filter((c) => c.startsWith('createTokenReview')).length;
      expect(reviews - realTokens.length).toBeLessThanOrEqual(10 + 5 * 5);
    },
  );
});

describe('the metrics certificate', () => {
  const allowAll = { check: async () => ({ kind: 'allowed', user: 'u' }) as const };
  let endpoint: Endpoint | undefined;
  afterEach(async () => {
    await endpoint?.close();
    endpoint = undefined;
  });

  it('self-signed: for localhost and the loopback addresses, a server certificate that is no CA, valid now and for a year', () => {
    const pair = selfSignedSource().next(new Date());
    const cert = new X509Certificate(pair?.cert ?? '');
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.checkPrivateKey(createPrivateKey(pair?.key ?? ''))).toBe(true);
    expect(cert.checkHost('localhost')).toBe('localhost');
    expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(cert.checkIP('::1')).toBeDefined();
    expect(cert.ca).toBe(false);
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    const days = (new Date(cert.validTo).getTime() - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(364);
    expect(new Date(cert.validFrom).getTime()).toBeLessThan(Date.now());
  });

  it('self-signed, in a cluster: also names the metrics Service, so a scraper may verify it against it', () => {
    const cert = new X509Certificate(selfSignedSource({ service: { name: 'pvx-metrics', namespace: 'pvx-system' } }).next(new Date())?.cert ?? '');
    for (const name of ['pvx-metrics', 'pvx-metrics.pvx-system', 'pvx-metrics.pvx-system.svc', 'pvx-metrics.pvx-system.svc.cluster.local', 'localhost'])
      expect(cert.checkHost(name)).toBe(name);
  });

  it('self-signed: made once, and made again 30 days before it ends', () => {
    const source = selfSignedSource();
    const now = Date.now();
    expect(source.next(new Date(now))).toBeDefined();
    expect(source.next(new Date(now + 300 * 86_400_000))).toBeUndefined();
    expect(source.next(new Date(now + 336 * 86_400_000))).toBeDefined();
  });

  it('from a directory: served, verified against itself, and replaced when the files change (a half-written pair is skipped)', async () => {
    const dir = mkdtempSync(join(scratch, 'certs-'));
    const write = (p: { cert: string; key: string }) => {
      writeFileSync(join(dir, 'tls.crt'), p.cert);
      writeFileSync(join(dir, 'tls.key'), p.key);
    };
    const hosts = { commonName: 'pvx-metrics', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'] };
    const first = selfSignedCertificate({ ...hosts, ...validFor(90) });
    write(first);
    endpoint = await startMetricsServer({
      listen: '127.0.0.1:0',
      registry: new Registry(),
      logger,
      secure: { certificates: certificateDirectory(dir), authorizer: allowAll, reloadIntervalMs: 20 },
    });
    const port = endpoint.address.port;
    expect(await httpsGet(port, '/metrics', { ca: first.cert, token: 't' })).toMatchObject({ status: 200, certificate: fingerprint(first.cert) });

    // cert-manager renewed it; the kubelet updates the mounted Secret.
    const second = selfSignedCertificate({ ...hosts, ...validFor(90) });
    writeFileSync(join(dir, 'tls.crt'), second.cert); // the key not yet: the pair does not match
    await new Promise((r) => setTimeout(r, 100));
    expect(await httpsGet(port, '/metrics', { ca: first.cert, token: 't' })).toMatchObject({ status: 200, certificate: fingerprint(first.cert) });
    write(second);
    await new Promise((r) => setTimeout(r, 100));
    expect(await httpsGet(port, '/metrics', { ca: second.cert, token: 't' })).toMatchObject({ status: 200, certificate: fingerprint(second.cert) });
  });

  it('from a directory without the files: the start fails naming them', async () => {
    const dir = mkdtempSync(join(scratch, 'empty-'));
    await expect(
      startMetricsServer({
        listen: '127.0.0.1:0',
        registry: new Registry(),
        logger,
        secure: { certificates: certificateDirectory(dir), authorizer: allowAll },
      }),
    ).rejects.toThrow(/tls\.crt/);
  });
});

describe('--metrics-secure=false', () => {
  it('serves /metrics over plain HTTP to anyone', async () => {
    const registry = new Registry();
    const endpoint = await startMetricsServer({ listen: '127.0.0.1:0', registry, logger });
    try {
      const res = await fetch(`http://127.0.0.1:${endpoint.address.port}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(registry.contentType);
    } finally {
      await endpoint.close();
    }
  });
});

describe('/metrics facing clients that hold connections', () => {
  const allowAll = { check: async () => ({ kind: 'allowed', user: 'u' }) as const };
  const start = () =>
    startMetricsServer({
      listen: '127.0.0.1:0',
      registry: new Registry(),
      logger,
      secure: { certificates: selfSignedSource(), authorizer: allowAll, handshakeTimeoutMs: 200, headersTimeoutMs: 300 },
    });
  /** How long the server took to close a connection the client opened with `open` and then left alone, ms. */
  const closedAfter = (open: (onClose: () => void) => Socket | TLSSocket) =>
    new Promise<number>((resolve) => {
      const started = performance.now();
      open(() => resolve(performance.now() - started)).on('error', () => undefined);
    });

  it('closes a connection that never starts its TLS handshake', async () => {
    const endpoint = await start();
    try {
      expect(await closedAfter((onClose) => connect(endpoint.address.port, '127.0.0.1').on('close', onClose))).toBeLessThan(5_000);
    } finally {
      await endpoint.close();
    }
  });

  it('closes a TLS connection that never finishes its request headers', async () => {
    const endpoint = await start();
    try {
      const held = closedAfter((onClose) => {
        const s = tlsConnect({ port: endpoint.address.port, host: '127.0.0.1', rejectUnauthorized: false }, () =>
          s.write('GET /metrics HTTP/1.1\r\nHost: x\r\n'),
        );
        // Read what the server sends (its 408), or its close would go unseen.
        return s.on('close', onClose).resume();
      });
      expect(await held).toBeLessThan(5_000);
    } finally {
      await endpoint.close();
    }
  });
});
