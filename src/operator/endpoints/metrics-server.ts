// /metrics on its own address. By default over HTTPS, each scrape's bearer token reviewed by the
// API server (metrics-auth.ts) before anything is collected; with --metrics-secure=false over plain
// HTTP to anyone who reaches the port. Thin on purpose: who may scrape is decided in
// src/operator/endpoints/metrics-access.ts, the certificate comes from metrics-certs.ts.
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { refusal, type ScrapeVerdict } from './metrics-access.ts';
import { endpointHandler, listenOn, plainHttpTimeouts, type Endpoint, type Send } from './http-endpoint.ts';
import type { ScrapeOrigin } from './metrics-auth.ts';
import type { CertificateSource } from './metrics-certs.ts';

// Not `import … from 'node:http'`: see http-client.ts (the module namespace loads undici).
const http = process.getBuiltinModule('node:http');
const https = process.getBuiltinModule('node:https');

export interface MetricsEndpointOptions {
  /** host:port. */
  listen: string;
  registry: Registry;
  logger: Logger;
  /** HTTPS and a review of every scrape; absent: plain HTTP with no check (--metrics-secure=false). */
  secure?: {
    certificates: CertificateSource;
    authorizer: { check(authorization: string | undefined, origin: ScrapeOrigin): Promise<ScrapeVerdict> };
    /** How often the certificate source is asked for a new certificate, ms. Default 10,000. */
    reloadIntervalMs?: number;
    /** A connection whose TLS handshake is not done within this long is closed, ms. Default 10,000. */
    handshakeTimeoutMs?: number;
    /** A request whose headers are not all in within this long is closed, ms. Default 10,000. */
    headersTimeoutMs?: number;
  };
}

export async function startMetricsServer(o: MetricsEndpointOptions): Promise<Endpoint> {
  const { secure } = o;
  if (!secure) {
    return listenOn(
      http.createServer(
        plainHttpTimeouts,
        endpointHandler((url, _req, send) => route(url, o.registry, send)),
      ),
      o.listen,
      'metrics',
    );
  }
  const first = secure.certificates.next(new Date());
  if (!first) throw new Error(`no metrics certificate from ${secure.certificates.description}`);
  // A scraper sends its request at once; a client that holds a connection without one (slowloris)
  // is closed within seconds, not Node's minutes.
  const headersTimeout = secure.headersTimeoutMs ?? 10_000;
  const server = https.createServer(
    {
      ...first,
      handshakeTimeout: secure.handshakeTimeoutMs ?? 10_000,
      headersTimeout,
      requestTimeout: Math.max(30_000, headersTimeout),
      connectionsCheckingInterval: Math.min(1_000, headersTimeout),
    },
    endpointHandler(async (url, req, send) => {
      // Only /metrics is reviewed: a 404 costs the API server nothing.
      if (url.pathname !== '/metrics') return send(404, 'not found\n');
      // A client that goes away (its connection closes) before its token is reviewed withdraws the review.
      const gone = new AbortController();
      const leave = () => gone.abort();
      req.socket.once('close', leave);
      const verdict = await secure.authorizer.check(req.headers.authorization, { peer: req.socket.remoteAddress ?? 'unknown', signal: gone.signal });
      req.socket.off('close', leave);
      if (gone.signal.aborted) return;
      if (verdict.kind !== 'allowed') {
        const r = refusal(verdict);
        return send(r.status, r.body, undefined, r.headers);
      }
      route(url, o.registry, send);
    }),
  );
  const endpoint = await listenOn(server, o.listen, 'metrics');
  const reload = setInterval(() => {
    try {
      const pair = secure.certificates.next(new Date());
      if (!pair) return;
      // Throws for a certificate that does not match its key (a Secret caught between its two
      // files' updates): the one served so far stays until the next try.
      server.setSecureContext(pair);
      o.logger.info({ source: secure.certificates.description }, 'serving a new metrics certificate');
    } catch (err) {
      o.logger.warn(
        { err: (err as Error).message, source: secure.certificates.description },
        'cannot load the new metrics certificate; serving the previous one',
      );
    }
  }, secure.reloadIntervalMs ?? 10_000);
  reload.unref();
  return {
    ...endpoint,
    close: () => {
      clearInterval(reload);
      return endpoint.close();
    },
  };
}

function route(url: URL, registry: Registry, send: Send): void {
  if (url.pathname !== '/metrics') return send(404, 'not found\n');
  registry.metrics().then(
    (text) => send(200, text, registry.contentType),
    (err: unknown) => send(500, `collecting metrics failed: ${String(err)}\n`),
  );
}
