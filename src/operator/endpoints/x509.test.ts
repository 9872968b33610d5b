import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { selfSignedCertificate } from './x509.ts';

describe('selfSignedCertificate', () => {
  it.each([
    ['UTCTime (through 2049)', new Date('2026-01-02T03:04:05.678Z'), new Date('2049-12-31T23:59:59Z')],
    ['GeneralizedTime (from 2050)', new Date('2026-01-02T03:04:05Z'), new Date('2060-06-30T12:00:00Z')],
  ])('writes validity as %s, to the second', (_, notBefore, notAfter) => {
    const cert = new X509Certificate(selfSignedCertificate({ commonName: 'pvx-metrics', dnsNames: ['localhost'], ipAddresses: ['127.0.0.1'], notBefore, notAfter }).cert);
    expect(new Date(cert.validFrom).toISOString()).toBe(new Date(Math.floor(notBefore.getTime() / 1000) * 1000).toISOString());
    expect(new Date(cert.validTo).toISOString()).toBe(notAfter.toISOString());
  });

  it('names its hosts and addresses, is signed by its own key, and gets a new key and serial each time', () => {
    const opts = { commonName: 'pvx-metrics', dnsNames: ['localhost', 'pvx-7d9c-abcde'], ipAddresses: ['127.0.0.1', '::1', 'fd00::1:2'], notBefore: new Date(), notAfter: new Date(Date.now() + 86_400_000) };
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
});
