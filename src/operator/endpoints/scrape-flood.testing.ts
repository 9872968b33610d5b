// A flood of scrapes with bogus tokens against a /metrics endpoint, while a real scraper scrapes:
// what the unit test, the benchmark (bench/hostile-peers.ts) and the e2e suite drive pvx with.
// Bounded by construction: `seconds` × `bogusPerSecond` requests, each given up after 15 s.
// Every peer is on loopback; the flooder and the real scraper dial from their own loopback
// addresses (127.0.0.2 and 127.0.0.3 by default), as two pods would from their own IPs.
import { randomBytes } from 'node:crypto';
import https from 'node:https';

export interface ScrapeFloodOptions {
  /** The endpoint: https://127.0.0.1:PORT */
  port: number;
  host?: string;
  /** Bogus requests per second, each with a new random token. Default 100. */
  bogusPerSecond?: number;
  /** How long the flood lasts, s. Default 4. */
  seconds?: number;
  /** The real scraper's tokens: one scrape with each, one a second from 0.5 s on. */
  realTokens: string[];
  /** Source address of the flood, or addresses it goes out from in turn (many pods flooding). Default 127.0.0.2. */
  bogusFrom?: string | readonly string[];
  /** Source address of the real scraper. Default 127.0.0.3. */
  realFrom?: string;
}

export interface Scrape {
  status: number;
  ms: number;
  /** Sent a second time: the kept-alive connection it first went out on was closed under it. */
  retried?: boolean;
}

export interface ScrapeFloodResult {
  real: Scrape[];
  bogus: Scrape[];
}

/** `n` loopback addresses from 127.0.1.1 on: a flood's many sources. */
export const floodAddresses = (n: number): string[] => Array.from({ length: n }, (_, i) => `127.0.${1 + (i >> 8)}.${1 + (i & 255)}`);

/** Floods, scrapes, and waits for every answer (or its 15 s timeout). */
export async function scrapeFlood(o: ScrapeFloodOptions): Promise<ScrapeFloodResult> {
  const rate = o.bogusPerSecond ?? 100;
  const total = Math.round(rate * (o.seconds ?? 4));
  // No cap on sockets: a flood does not queue behind its own unanswered requests.
  const addresses = typeof o.bogusFrom === 'string' ? [o.bogusFrom] : (o.bogusFrom ?? ['127.0.0.2']);
  const flooders = addresses.map((localAddress) => new https.Agent({ keepAlive: true, localAddress, rejectUnauthorized: false }));
  const real: Promise<Scrape>[] = [];
  const bogus: Promise<Scrape>[] = [];
  const started = performance.now();
  try {
    for (let i = 0; i < total; i++) {
      // On schedule, whatever the answers do: a flood does not wait for them.
      const due = started + (i * 1000) / rate;
      await new Promise((r) => setTimeout(r, Math.max(0, due - performance.now())));
      bogus.push(scrape(o, randomBytes(24).toString('base64url'), { agent: flooders[i % flooders.length] as https.Agent }));
      const t = (i * 1000) / rate;
      const nextReal = 500 + real.length * 1000;
      if (t >= nextReal && real.length < o.realTokens.length)
        real.push(scrape(o, o.realTokens[real.length] as string, { localAddress: o.realFrom ?? '127.0.0.3' }));
    }
    return { real: await Promise.all(real), bogus: await Promise.all(bogus) };
  } finally {
    for (const f of flooders) f.destroy();
  }
}

/**
 * One GET /metrics with the token; a new connection unless an agent is given. A failure to connect is
 * status 0. A request the server never read because it had just closed the kept-alive connection it
 * went out on (ECONNRESET on a reused socket) is sent once more, as Go's HTTP client (Prometheus's)
 * and Node's documentation do: that race is the client's, whatever the server answers.
 */
function scrape(
  o: ScrapeFloodOptions,
  token: string,
  via: { agent?: https.Agent; localAddress?: string },
  started = performance.now(),
  retried = false,
): Promise<Scrape> {
  return new Promise((resolve) => {
    const done = (status: number) => resolve({ status, ms: performance.now() - started, ...(retried ? { retried } : {}) });
    const req = https.get(
      {
        host: o.host ?? '127.0.0.1',
        port: o.port,
        path: '/metrics',
        headers: { authorization: `Bearer ${token}` },
        ...(via.agent ? { agent: via.agent } : { agent: false, rejectUnauthorized: false, localAddress: via.localAddress }),
      },
      (res) => {
        res.resume();
        res.on('end', () => done(res.statusCode ?? 0));
        res.on('error', () => done(0));
      },
    );
    req.setTimeout(15_000, () => req.destroy(new Error('no answer within 15 s')));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (req.reusedSocket && err.code === 'ECONNRESET' && !retried) resolve(scrape(o, token, via, started, true));
      else done(0);
    });
  });
}

/** The p-th percentile (0–1) of some durations, ms. */
export function percentile(ms: number[], p: number): number {
  const sorted = [...ms].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;
}
