// The operator's HTTP endpoints: /metrics (Prometheus), /healthz (the process is alive and its
// event loop answers), /readyz (every cache has synced; says whether this replica leads), and,
// when enabled, /debug/informers (per-cache state, for diagnosis and the e2e suites).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

// Not `import … from 'node:http'`: see http-client.ts (the module namespace loads undici).
const { createServer } = process.getBuiltinModule('node:http');

export interface HealthSources {
  registry: Registry;
  /** Each cache's name and whether it has synced. */
  caches: () => { name: string; synced: boolean; objects: number; resourceVersion: string }[];
  isLeader: () => boolean;
  /** Keys and resourceVersions of one cache, for /debug/informers/<name>. */
  cacheContents?: (name: string) => Record<string, string> | undefined;
  debug?: boolean;
}

export interface HealthServer {
  server: Server;
  address: AddressInfo;
  close(): Promise<void>;
}

/** Parses "host:port" (":8080" and "8080" mean all interfaces). */
export function parseListenAddress(text: string): { host: string; port: number } {
  const m = /^(?:\[?([^\]]*)\]?:)?(\d+)$/.exec(text.trim());
  const port = Number(m?.[2]);
  if (!m || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new TypeError(`listen address "${text}" is not host:port (e.g. 127.0.0.1:8080 or :8080)`);
  }
  return { host: m[1] || '0.0.0.0', port };
}

/**
 * The URL of a request target: origin-form ("/path?query", what clients send) read as a path even
 * when it starts with "//", or absolute-form ("http://host/path"); undefined for anything else
 * ("*", a broken authority).
 */
function requestUrl(target: string): URL | undefined {
  try {
    return target.startsWith('/') ? new URL(`http://localhost${target}`) : new URL(target);
  } catch {
    return undefined;
  }
}

export async function startHealthServer(listen: string, src: HealthSources): Promise<HealthServer> {
  const { host, port } = parseListenAddress(listen);
  // Every request gets an answer: a malformed one 400, a failure inside 500. A throw escaping
  // the handler would leave the connection hanging.
  const server = createServer((req, res) => {
    const send = (code: number, body: string, type = 'text/plain; charset=utf-8') => {
      res.writeHead(code, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed\n');
      const url = requestUrl(req.url ?? '/');
      if (!url) return send(400, 'malformed request target\n');
      route(url, src, send);
    } catch (err) {
      if (res.headersSent) res.destroy();
      else send(500, `internal error: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new Error(`cannot serve metrics and health on ${listen}: address in use`) : err),
    );
    server.listen(port, host, () => resolve());
  });
  return {
    server,
    address: server.address() as AddressInfo,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

function route(url: URL, src: HealthSources, send: (code: number, body: string, type?: string) => void): void {
  switch (url.pathname) {
    case '/metrics':
      src.registry.metrics().then(
        (text) => send(200, text, src.registry.contentType),
        (err: unknown) => send(500, `collecting metrics failed: ${String(err)}\n`),
      );
      return;
    case '/healthz':
    case '/livez':
      return send(200, 'ok\n');
    case '/readyz': {
      const caches = src.caches();
      const pending = caches.filter((c) => !c.synced).map((c) => c.name);
      const lines = caches.map((c) => `[${c.synced ? '+' : '-'}]cache ${c.name}${c.synced ? '' : ' not synced'}`);
      lines.push(`leader: ${src.isLeader() ? 'yes' : 'no (standby)'}`);
      const ok = pending.length === 0;
      const verbose = url.searchParams.has('verbose');
      return send(ok ? 200 : 503, verbose || !ok ? `${lines.join('\n')}\n${ok ? 'ok' : `waiting for: ${pending.join(', ')}`}\n` : 'ok\n');
    }
    default:
      if (src.debug && url.pathname === '/debug/informers') return send(200, JSON.stringify(src.caches()), 'application/json');
      if (src.debug && url.pathname.startsWith('/debug/informers/') && src.cacheContents) {
        const name = decodePathSegment(url.pathname.slice('/debug/informers/'.length));
        if (name === undefined) return send(400, 'malformed cache name: a percent sign must start an escape of UTF-8\n');
        const contents = src.cacheContents(name);
        return contents ? send(200, JSON.stringify(contents), 'application/json') : send(404, 'no such cache\n');
      }
      return send(404, 'not found\n');
  }
}

/** A path segment with its %-escapes decoded, or undefined when they do not decode (a lone %, bad UTF-8). */
function decodePathSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
