// What the benchmarks' stand-in API servers on 127.0.0.1 share (bench/cli-startup.ts,
// bench/idle.ts): a certificate made for the run, and a kubeconfig with static credentials — a
// token — that trusts it.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A self-signed P-256 certificate for IP 127.0.0.1, written into dir (key.pem, cert.pem). */
export function loopbackCertificate(dir: string): { cert: Buffer; key: Buffer } {
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'].concat([
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      join(dir, 'cert.pem'),
    ]),
    { stdio: 'ignore', timeout: 60_000 },
  );
  return { cert: readFileSync(join(dir, 'cert.pem')), key: readFileSync(join(dir, 'key.pem')) };
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
