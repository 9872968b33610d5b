// A self-signed X.509 certificate for /metrics when no certificate is given, made in memory at
// start as kubebuilder's scaffold does without cert-manager. Node's crypto makes the key pair and
// the signature and reads certificates (X509Certificate), but cannot write one; the DER encoding
// of the few structures a server certificate needs (RFC 5280) is small enough to write here rather
// than take a dependency for it. The key is ECDSA P-256, signed with SHA-256: what every TLS
// client accepts, and quick to make (no RSA prime search at start).
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { isIPv4, isIPv6 } from 'node:net';

export interface SelfSignedOptions {
  commonName: string;
  /** subjectAltName dNSName entries. */
  dnsNames: string[];
  /** subjectAltName iPAddress entries (IPv4 or IPv6 text). */
  ipAddresses: string[];
  notBefore: Date;
  notAfter: Date;
}

/** A certificate and its private key, PEM: what tls.createSecureContext takes. */
export interface CertificatePair {
  cert: string;
  key: string;
}

export function selfSignedCertificate(o: SelfSignedOptions): CertificatePair {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const ecdsaWithSha256 = seq(oid('1.2.840.10045.4.3.2'));
  const name = seq(set(seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(o.commonName, 'utf8')))));
  // A positive serial of 16 random bytes (RFC 5280: unique per issuer, at most 20 octets).
  const serial = randomBytes(16);
  serial[0] = ((serial[0] as number) & 0x7f) | 0x01;
  const altNames = [...o.dnsNames.map((d) => tlv(0x82, Buffer.from(d, 'ascii'))), ...o.ipAddresses.map((ip) => tlv(0x87, ipBytes(ip)))];
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  // The key identifier (RFC 5280 4.2.1.2, method 1): SHA-1 of the subjectPublicKey BIT STRING's
  // value — for a P-256 key, the last 65 bytes of the SubjectPublicKeyInfo. Clients that build
  // chains by key identifier (and openssl verify -x509_strict) expect it on every certificate.
  const keyId = createHash('sha1')
    .update(spki.subarray(spki.length - 65))
    .digest();
  const extensions = [
    // basicConstraints, critical: not a CA.
    seq(oid('2.5.29.19'), tlv(0x01, Buffer.from([0xff])), octets(seq())),
    // keyUsage, critical: digitalSignature (the ECDHE handshake's signature).
    seq(oid('2.5.29.15'), tlv(0x01, Buffer.from([0xff])), octets(tlv(0x03, Buffer.from([0x07, 0x80])))),
    // extKeyUsage: serverAuth.
    seq(oid('2.5.29.37'), octets(seq(oid('1.3.6.1.5.5.7.3.1')))),
    seq(oid('2.5.29.17'), octets(seq(...altNames))),
    // subjectKeyIdentifier, and authorityKeyIdentifier [0] keyIdentifier: the same key (self-signed).
    seq(oid('2.5.29.14'), octets(octets(keyId))),
    seq(oid('2.5.29.35'), octets(seq(tlv(0x80, keyId)))),
  ];
  const tbs = seq(
    tlv(0xa0, int(Buffer.from([2]))), // version: v3
    int(serial),
    ecdsaWithSha256,
    name, // issuer: itself
    seq(time(o.notBefore), time(o.notAfter)),
    name,
    spki,
    tlv(0xa3, seq(...extensions)),
  );
  const signature = sign('sha256', tbs, { key: privateKey, dsaEncoding: 'der' });
  const der = seq(tbs, ecdsaWithSha256, tlv(0x03, Buffer.concat([Buffer.from([0]), signature])));
  const base64 = der.toString('base64').replace(/.{1,64}/g, '$&\n');
  return { cert: `-----BEGIN CERTIFICATE-----\n${base64}-----END CERTIFICATE-----\n`, key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string };
}

// --- DER (X.690), only what the certificate above uses ------------------------------------------

function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), derLength(content.length), content]);
}

/** Short form below 128; else 0x80 | the count of length bytes, then the length big-endian. */
function derLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
const octets = (content: Buffer) => tlv(0x04, content);
/** An INTEGER of non-negative big-endian bytes whose top bit is clear. */
const int = (bytes: Buffer) => tlv(0x02, bytes);

function oid(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split('.').map(Number);
  const out = [40 * a + b];
  for (const n of rest) {
    // Base 128, most significant group first, the high bit set on all but the last.
    const groups = [n & 0x7f];
    for (let v = n >>> 7; v > 0; v >>>= 7) groups.unshift((v & 0x7f) | 0x80);
    out.push(...groups);
  }
  return tlv(0x06, Buffer.from(out));
}

/** UTCTime through 2049, GeneralizedTime from 2050 (RFC 5280 4.1.2.5), in whole seconds UTC. */
function time(d: Date): Buffer {
  const text = d
    .toISOString()
    .replace(/[-:T]/g, '')
    .replace(/\.\d{3}Z$/, 'Z');
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(text.slice(2), 'ascii')) : tlv(0x18, Buffer.from(text, 'ascii'));
}

function ipBytes(ip: string): Buffer {
  if (isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  if (!isIPv6(ip)) throw new TypeError(`not an IP address: "${ip}"`);
  // Expand "::" to the missing zero groups, then 8 groups of 16 bits.
  const [head = '', tail] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return Buffer.from(groups.map((g) => g.padStart(4, '0')).join(''), 'hex');
}
