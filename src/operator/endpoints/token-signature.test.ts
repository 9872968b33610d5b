import { createHmac, generateKeyPairSync, sign, constants, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signingKeys, tokenSignature } from './token-signature.ts';

const now = 1_800_000_000; // seconds since the epoch
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const prometheus = 'system:serviceaccount:monitoring:prometheus';

function keyPair(type: 'rsa' | 'ec', kid: string) {
  const { privateKey, publicKey } = type === 'rsa' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { privateKey, jwk: { ...publicKey.export({ format: 'jwk' }), kid, use: 'sig' } };
}

/** A JWT as the API server writes one for a ServiceAccount, signed with `key`. */
function jwt(key: KeyObject, header: Record<string, unknown>, claims: Record<string, unknown> = {}): string {
  const data = `${b64(header)}.${b64({ iss: 'https://kubernetes.default.svc', sub: prometheus, exp: now + 3600, nbf: now - 10, iat: now - 10, ...claims })}`;
  const alg = String(header.alg);
  const hash = `sha${alg.slice(2)}`;
  const signature = alg.startsWith('ES')
    ? sign(hash, Buffer.from(data), { key, dsaEncoding: 'ieee-p1363' })
    : sign(
        hash,
        Buffer.from(data),
        alg.startsWith('PS') ? { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST } : key,
      );
  return `${data}.${signature.toString('base64url')}`;
}

const rsa = keyPair('rsa', 'rsa-1');
const ec = keyPair('ec', 'ec-1');
const other = keyPair('rsa', 'rsa-1'); // a key of another cluster, under the same key ID
const keys = signingKeys({ keys: [rsa.jwk, ec.jwk] });

describe('tokenSignature', () => {
  it('names the ServiceAccount of a token signed by one of the keys: RS256, PS256, ES256', () => {
    expect(tokenSignature(jwt(rsa.privateKey, { alg: 'RS256', kid: 'rsa-1' }), keys, now)).toEqual({ kind: 'signed', subject: prometheus });
    expect(tokenSignature(jwt(rsa.privateKey, { alg: 'PS256', kid: 'rsa-1' }), keys, now)).toEqual({ kind: 'signed', subject: prometheus });
    expect(tokenSignature(jwt(ec.privateKey, { alg: 'ES256', kid: 'ec-1' }), keys, now)).toEqual({ kind: 'signed', subject: prometheus });
    // No key ID in the token: every key of the algorithm's type is tried.
    expect(tokenSignature(jwt(ec.privateKey, { alg: 'ES256' }), keys, now)).toEqual({ kind: 'signed', subject: prometheus });
  });

  it('takes for unsigned what another key signed, what was changed after signing, and what is no JWT at all', () => {
    expect(tokenSignature(jwt(other.privateKey, { alg: 'RS256', kid: 'rsa-1' }), keys, now)).toEqual({ kind: 'unsigned' });
    const [h, , s] = jwt(rsa.privateKey, { alg: 'RS256', kid: 'rsa-1' }).split('.');
    const forged = `${h}.${b64({ sub: 'system:serviceaccount:kube-system:admin', exp: now + 3600 })}.${s}`;
    expect(tokenSignature(forged, keys, now)).toEqual({ kind: 'unsigned' });
    for (const junk of ['', 'a.b', 'a.b.c', 'x'.repeat(4000), `${b64({ alg: 'RS256' })}.${b64({})}.`, '...', `${b64([])}.${b64({})}.AA`]) {
      expect(tokenSignature(junk, keys, now)).toEqual({ kind: 'unsigned' });
    }
  });

  it('refuses the algorithms that are not signatures: none, and HMAC keyed with a public key', () => {
    const data = `${b64({ alg: 'none', kid: 'rsa-1' })}.${b64({ sub: prometheus, exp: now + 60 })}`;
    expect(tokenSignature(`${data}.`, keys, now)).toEqual({ kind: 'unsigned' });
    const hsData = `${b64({ alg: 'HS256', kid: 'rsa-1' })}.${b64({ sub: prometheus, exp: now + 60 })}`;
    const hs = createHmac('sha256', JSON.stringify(rsa.jwk)).update(hsData).digest('base64url');
    expect(tokenSignature(`${hsData}.${hs}`, keys, now)).toEqual({ kind: 'unsigned' });
    // An ES256 header over an RSA key's signature: the key types do not match.
    const [, body, sig] = jwt(rsa.privateKey, { alg: 'RS256', kid: 'rsa-1' }).split('.');
    expect(tokenSignature(`${b64({ alg: 'ES256', kid: 'rsa-1' })}.${body}.${sig}`, keys, now)).toEqual({ kind: 'unsigned' });
  });

  it('takes for unsigned a token out of date (a minute of leeway) or not a ServiceAccount’s', () => {
    const signed = (claims: Record<string, unknown>) => tokenSignature(jwt(rsa.privateKey, { alg: 'RS256', kid: 'rsa-1' }, claims), keys, now);
    expect(signed({ exp: now - 61 })).toEqual({ kind: 'unsigned' });
    expect(signed({ exp: now - 30 })).toMatchObject({ kind: 'signed' });
    expect(signed({ exp: undefined })).toEqual({ kind: 'unsigned' });
    expect(signed({ nbf: now + 61 })).toEqual({ kind: 'unsigned' });
    expect(signed({ nbf: now + 30 })).toMatchObject({ kind: 'signed' });
    expect(signed({ sub: 'alice' })).toEqual({ kind: 'unsigned' });
    expect(signed({ sub: 'system:serviceaccount:monitoring' })).toEqual({ kind: 'unsigned' });
  });

  it('says when a token names a key ID none of the keys has (the cluster rotated its keys)', () => {
    const rotated = keyPair('rsa', 'rsa-2');
    expect(tokenSignature(jwt(rotated.privateKey, { alg: 'RS256', kid: 'rsa-2' }), keys, now)).toEqual({ kind: 'unknown-key', kid: 'rsa-2' });
    expect(tokenSignature(jwt(rotated.privateKey, { alg: 'RS256', kid: 'rsa-2' }), signingKeys({ keys: [rotated.jwk] }), now)).toMatchObject({
      kind: 'signed',
    });
  });

  it('reads the keys of a key set, leaving out those it cannot read and those for encryption', () => {
    expect(signingKeys({ keys: [rsa.jwk, { kty: 'XYZ', kid: 'broken' }, { ...ec.jwk, use: 'enc' }, 'x', null] }).map((k) => k.kid)).toEqual(['rsa-1']);
    expect(signingKeys(undefined)).toEqual([]);
    expect(signingKeys({ keys: 'none' })).toEqual([]);
  });
});
