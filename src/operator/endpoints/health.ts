// The operator's health endpoint, plain HTTP for the kubelet's probes: /healthz (the process is
// alive and its event loop answers), /readyz (every cache has synced; says whether this replica
// leads), and, when enabled, /debug/informers (per-cache state, for diagnosis and the e2e suites).
// /metrics is served apart (metrics-server.ts), on its own port, behind authentication.
import { endpointHandler, listenOn, plainHttpTimeouts, type Endpoint, type Send } from './http-endpoint.ts';

// Not `import … from 'node:http'`: see http-client.ts (the module namespace loads undici).
const { createServer } = process.getBuiltinModule('node:http');

export interface HealthSources {
  /** Each cache's name and whether it has synced. */
  caches: () => { name: string; synced: boolean; objects: number; resourceVersion: string }[];
  isLeader: () => boolean;
  /** Keys and resourceVersions of one cache, for /debug/informers/<name>. */
  cacheContents?: (name: string) => Record<string, string> | undefined;
  debug?: boolean;
}

export function startHealthServer(listen: string, src: HealthSources): Promise<Endpoint> {
  return listenOn(
    createServer(
      plainHttpTimeouts,
      endpointHandler((url, req, send) => route(url, src, send, req.socket.remoteAddress)),
    ),
    listen,
    'health probes',
  );
}

/**
 * Whether a peer may read the debug endpoints: only from loopback (kubectl port-forward arrives
 * there), never from the pod network — the probe port is open to every pod and node, and the
 * caches' keys name every claim and request of the cluster.
 */
export function debugAllowed(peer: string | undefined): boolean {
  if (!peer) return false;
  const v4 = peer.startsWith('::ffff:') ? peer.slice('::ffff:'.length) : peer;
  return v4 === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4);
}

function route(url: URL, src: HealthSources, send: Send, peer?: string): void {
  switch (url.pathname) {
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
      if (src.debug && url.pathname.startsWith('/debug/') && !debugAllowed(peer))
        return send(403, 'the debug endpoints answer on loopback only (kubectl port-forward)\n');
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
