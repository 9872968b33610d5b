import { execFileSync } from 'node:child_process';
import { createHash, createPublicKey, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { selfSignedCertificate } from './x509.ts';

describe('selfSignedCertificate', () => {
  it.each([
    ['UTCTime (through 2049)', new Date('2026-01-02T03:04:05.678Z'), new Date('2049-12-31T23:59:59Z')],
    ['GeneralizedTime (from 2050)', new Date('2026-01-02T03:04:05Z'), new Date('2060-06-30T12:00:00Z')],
  ])('writes validity as %s, to the second', (_, notBefore, notAfter) => {
    const cert = new X509Certificate(
      selfSignedCertificate({ commonName: 'pvx-metrics', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], notBefore, notAfter }).cert,
    );
    expect(new Date(cert.validFrom).toISOString()).toBe(new Date(Math.floor(notBefore.getTime() / 1000) * 1000).toISOString());
    expect(new Date(cert.validTo).toISOString()).toBe(notAfter.toISOString());
  });

  it('names its hosts and addresses, is signed by its own key, and gets a new key and serial each time', () => {
    const opts = {
      commonName: 'pvx-metrics',
      dnsNames: ['localhost', 'pvx-7d9c-abcde'],
      ipAddresses: ['127.0.0.1', '::1', 'fd00::1:2'],
      notBefore: new Date(),
      notAfter: new Date(Date.now() + 86_400_000),
    };
    const a = new X509Certificate(selfSignedCertificate(opts).cert);
    const b = new X509Certificate(selfSignedCertificate(opts).cert);
    expect(a.subject).toBe('CN=pvx-metrics');
    expect(a.issuer).toBe('CN=pvx-metrics');
    expect(a.subjectAltName).toBe('DNS:localhost, DNS:pvx-7d9c-abcde, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:FD00:0:0:0:0:0:1:2');
    expect(a.verify(a.publicKey)).toBe(true);
    expect(a.verify(b.publicKey)).toBe(false);
    expect(a.serialNumber).not.toBe(b.serialNumber);
    expect(Number.parseInt(a.serialNumber.slice(0, 2), 16)).toBeLessThan(0x80); // a positive INTEGER
  });

  it('carries a subject key identifier (SHA-1 of its public key, RFC 5280 method 1) and the same authority key identifier, and passes openssl verify -x509_strict', () => {
    const { cert } = selfSignedCertificate({
      commonName: 'pvx-metrics',
      dnsNames: ['pvx-metrics.pvx-system.svc'],
      ipAddresses: [],
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 86_400_000),
    });
    const dir = mkdtempSync(join(tmpdir(), 'pvx-x509-'));
    try {
      writeFileSync(join(dir, 'cert.pem'), cert);
      const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, encoding: 'utf8', timeout: 30_000 });
      const text = openssl('x509', '-in', 'cert.pem', '-noout', '-ext', 'subjectKeyIdentifier,authorityKeyIdentifier');
      // The key's BIT STRING, without the SubjectPublicKeyInfo around it: for P-256, the last 65 bytes.
      const spki = createPublicKey(cert).export({ type: 'spki', format: 'der' });
      const keyId = createHash('sha1')
        .update(spki.subarray(spki.length - 65))
        .digest('hex')
        .toUpperCase()
        .match(/../g)
        ?.join(':');
      expect(text).toMatch(new RegExp(`Subject Key Identifier:\\s+${keyId}`));
      expect(text).toMatch(new RegExp(`Authority Key Identifier:\\s+(keyid:)?${keyId}`));
      expect(openssl('verify', '-x509_strict', '-CAfile', 'cert.pem', 'cert.pem').trim()).toBe('cert.pem: OK');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
