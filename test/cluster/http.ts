// Minimal HTTP(S) GET for health probes (the API server with the admin certificate, loopback
// health endpoints without one).
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readFileSync } from 'node:fs';

export interface ClientTLS {
  ca?: string;
  cert?: string;
  key?: string;
}

export function probe(url: string, tls?: ClientTLS, timeoutMs = 2000): Promise<{ status: number; body: string }> {
  const secure = url.startsWith('https:');
  const options = secure
    ? {
        ca: tls?.ca ? readFileSync(tls.ca) : undefined,
        cert: tls?.cert ? readFileSync(tls.cert) : undefined,
        key: tls?.key ? readFileSync(tls.key) : undefined,
        // Component health ports serve self-signed certificates; only the API server is verified.
        rejectUnauthorized: Boolean(tls?.ca),
        timeout: timeoutMs,
      }
    : { timeout: timeoutMs };
  return new Promise((resolve, reject) => {
    const req = (secure ? httpsRequest : httpRequest)(url, options, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

export async function isOK(url: string, tls?: ClientTLS): Promise<boolean> {
  try {
    return (await probe(url, tls)).status === 200;
  } catch {
    return false;
  }
}
