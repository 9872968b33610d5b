// What the benchmarks' stand-in API servers on 127.0.0.1 share (bench/cli-startup.ts,
// bench/idle.ts, bench/hostile-peers.ts): a certificate made for the run, and a kubeconfig with
// static credentials — a token — that trusts it.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { selfSignedCertificate } from '../src/operator/endpoints/x509.ts';

/**
 * A self-signed P-256 certificate for IP 127.0.0.1, valid for a day, made as pvx makes its own
 * /metrics certificate; also written into dir (key.pem, cert.pem) for a child that is given a path.
 */
export function loopbackCertificate(dir: string): { cert: Buffer; key: Buffer } {
  const now = Date.now();
  const pair = selfSignedCertificate({
    commonName: '127.0.0.1',
    dnsNames: [],
    ipAddresses: ['127.0.0.1'],
    notBefore: new Date(now - 60_000),
    notAfter: new Date(now + 86_400_000),
  });
  writeFileSync(join(dir, 'key.pem'), pair.key);
  writeFileSync(join(dir, 'cert.pem'), pair.cert);
  return { cert: Buffer.from(pair.cert), key: Buffer.from(pair.key) };
}

/** Writes a kubeconfig for the server at port, trusting cert, as `token`, in namespace `bench`. */
export function writeTokenKubeconfig(path: string, port: number, cert: Buffer, token: string): void {
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: { server: `https://127.0.0.1:${port}`, 'certificate-authority-data': cert.toString('base64') } }],
      users: [{ name: 'u', user: { token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'u', namespace: 'bench' } }],
      'current-context': 'c',
    }),
  );
}
