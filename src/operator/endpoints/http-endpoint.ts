// What the operator's two HTTP endpoints share — health (plain HTTP, for the kubelet's probes) and
// metrics (HTTPS behind token review, or plain HTTP when opted out): the listen address format,
// reading the request target, an answer to every request, and listening with a clear error.
import type { IncomingMessage, RequestListener, Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** Answers a request: status, body, content type, extra headers. */
export type Send = (code: number, body: string, type?: string, headers?: Record<string, string>) => void;

/** Answers one request whose method is GET or HEAD and whose target parsed. */
export type Route = (url: URL, req: IncomingMessage, send: Send) => void | Promise<void>;

export interface Endpoint {
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

/**
 * A request listener around a route. Every request gets an answer: another method 405, a
 * malformed target 400, a failure inside 500. A throw escaping the handler would leave the
 * connection hanging.
 */
export function endpointHandler(route: Route): RequestListener {
  return (req, res) => {
    const send: Send = (code, body, type = 'text/plain; charset=utf-8', headers = {}) => {
      res.writeHead(code, { 'content-type': type, 'cache-control': 'no-store', ...headers });
      res.end(body);
    };
    const fail = (err: unknown) => {
      if (res.headersSent) res.destroy();
      else send(500, `internal error: ${err instanceof Error ? err.message : String(err)}\n`);
    };
    try {
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed\n');
      const url = requestUrl(req.url ?? '/');
      if (!url) return send(400, 'malformed request target\n');
      const answered = route(url, req, send);
      if (answered) answered.catch(fail);
    } catch (err) {
      fail(err);
    }
  };
}

/** How many connections an endpoint holds at once, in all and from one address. */
export interface ConnectionLimits {
  /** Default 512: a scraper or a kubelet's probes need a few; each held connection costs memory. */
  max: number;
  /** Default 64: one peer that opens connections and holds them leaves room for the others. */
  perPeer: number;
}

export const defaultConnectionLimits: ConnectionLimits = { max: 512, perPeer: 64 };

/**
 * Closes a connection at once, before TLS or HTTP read a byte of it, when the endpoint holds
 * `max` already or its peer holds `perPeer`: 12,000 connections held open cost 523 MiB, past the
 * chart's memory limit, and nothing bounded them.
 */
export function limitConnections(server: Server, limits: ConnectionLimits): void {
  const byPeer = new Map<string, number>();
  let open = 0;
  server.on('connection', (socket: Socket) => {
    const peer = socket.remoteAddress ?? 'unknown';
    const held = byPeer.get(peer) ?? 0;
    if (open >= limits.max || held >= limits.perPeer) {
      socket.destroy();
      return;
    }
    open++;
    byPeer.set(peer, held + 1);
    socket.once('close', () => {
      open--;
      const left = (byPeer.get(peer) ?? 1) - 1;
      if (left > 0) byPeer.set(peer, left);
      else byPeer.delete(peer);
    });
  });
}

/**
 * Plain-HTTP timeouts: a connection that sends no complete request head within 10 s (none at all,
 * or a slow one) is closed, a request takes at most 30 s, an idle kept-alive connection 5 s.
 * Node's defaults are a minute and five.
 */
export const plainHttpTimeouts = { headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 5_000, connectionsCheckingInterval: 1_000 };

/**
 * Listens on "host:port", holding at most `limits` connections; `what` names the endpoint in the
 * error when the address is taken.
 */
export async function listenOn(server: Server, listen: string, what: string, limits: ConnectionLimits = defaultConnectionLimits): Promise<Endpoint> {
  const { host, port } = parseListenAddress(listen);
  limitConnections(server, limits);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new Error(`cannot serve ${what} on ${listen}: address in use`) : err),
    );
    server.listen(port, host, () => resolve());
  });
  return {
    server,
    address: server.address() as AddressInfo,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
