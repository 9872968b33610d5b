// Whether a scrape's bearer token was signed by this cluster, checked here, without the API server:
// a ServiceAccount token is a JWT the API server signed with one of the keys it publishes at
// /openid/v1/jwks (every ServiceAccount may read them: the default ClusterRoleBinding
// system:service-account-issuer-discovery).
//
// This check decides no access. The TokenReview and SubjectAccessReview still decide every scrape
// (metrics-auth.ts); a token signed by the cluster only goes first in the queue of reviews
// (review-gate.ts). Anyone who reaches the port can make up tokens by the thousand, and none of
// them is signed: a flood of them, from any number of addresses, no longer stands between the
// real scraper — a ServiceAccount's token, signed — and its review, also for a pvx that has never
// seen that scraper (just started, or just taken over as leader). A mistake here only reorders
// the queue.
//
// Pure but for the signature check (node:crypto, no I/O).
import { createPublicKey, verify, constants, type KeyObject } from 'node:crypto';

/** One of the cluster's token signing keys, by its key ID. */
export interface SigningKey {
  kid: string | undefined;
  key: KeyObject;
}

/** The keys of a JSON Web Key Set (RFC 7517) as /openid/v1/jwks serves it; keys that do not parse are left out. */
export function signingKeys(jwks: unknown): SigningKey[] {
  const keys = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) return [];
  const out: SigningKey[] = [];
  for (const jwk of keys) {
    if (typeof jwk !== 'object' || jwk === null || (jwk as { use?: unknown }).use === 'enc') continue;
    try {
      const kid = (jwk as { kid?: unknown }).kid;
      out.push({ kid: typeof kid === 'string' ? kid : undefined, key: createPublicKey({ key: jwk as import('node:crypto').JsonWebKey, format: 'jwk' }) });
    } catch {
      // A key type node cannot read: no token of it goes first; its reviews are made all the same.
    }
  }
  return out;
}

/** How each algorithm a cluster may sign with is checked (RFC 7518 §3). */
const algorithms: Readonly<Record<string, { hash: string; keyType: 'rsa' | 'ec'; pss?: boolean }>> = {
  RS256: { hash: 'sha256', keyType: 'rsa' },
  RS384: { hash: 'sha384', keyType: 'rsa' },
  RS512: { hash: 'sha512', keyType: 'rsa' },
  PS256: { hash: 'sha256', keyType: 'rsa', pss: true },
  PS384: { hash: 'sha384', keyType: 'rsa', pss: true },
  PS512: { hash: 'sha512', keyType: 'rsa', pss: true },
  ES256: { hash: 'sha256', keyType: 'ec' },
  ES384: { hash: 'sha384', keyType: 'ec' },
  ES512: { hash: 'sha512', keyType: 'ec' },
};

/** A ServiceAccount's user name, as the API server writes it into `sub`. */
const serviceAccountSubject = /^system:serviceaccount:[a-z0-9]([-a-z0-9]*[a-z0-9])?:[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/;

/** Clocks differ: a token a minute early or late is still taken for signed (the review decides). */
const leewaySeconds = 60;

export type TokenSignature =
  /** Signed by one of the keys, in date, for this ServiceAccount user. */
  | { kind: 'signed'; subject: string }
  /** A JWT naming a key ID none of the keys has: the cluster may have rotated its keys since they were read. */
  | { kind: 'unknown-key'; kid: string }
  /** Anything else: not a JWT, not signed by a key given, out of date, not a ServiceAccount's. */
  | { kind: 'unsigned' };

const unsigned: TokenSignature = { kind: 'unsigned' };

function jsonPart(part: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `token` is a ServiceAccount token signed by one of `keys` and in date at `nowSeconds`. */
export function tokenSignature(token: string, keys: readonly SigningKey[], nowSeconds: number): TokenSignature {
  const parts = token.split('.');
  if (parts.length !== 3) return unsigned;
  const [head, body, signature] = parts as [string, string, string];
  const header = jsonPart(head);
  const alg = typeof header?.alg === 'string' ? algorithms[header.alg] : undefined;
  if (!header || !alg) return unsigned;
  const kid = typeof header.kid === 'string' ? header.kid : undefined;
  const candidates = keys.filter((k) => (kid === undefined || k.kid === undefined || k.kid === kid) && k.key.asymmetricKeyType === alg.keyType);
  if (candidates.length === 0) return kid !== undefined && !keys.some((k) => k.kid === kid) ? { kind: 'unknown-key', kid } : unsigned;
  const data = Buffer.from(`${head}.${body}`);
  const sig = Buffer.from(signature, 'base64url');
  const valid = candidates.some((k) => {
    try {
      return verify(
        alg.hash,
        data,
        {
          key: k.key,
          dsaEncoding: 'ieee-p1363',
          ...(alg.pss ? { padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST } : {}),
        },
        sig,
      );
    } catch {
      return false;
    }
  });
  if (!valid) return unsigned;
  const claims = jsonPart(body);
  const { exp, nbf, sub } = claims ?? {};
  if (typeof exp !== 'number' || exp + leewaySeconds <= nowSeconds) return unsigned;
  if (typeof nbf === 'number' && nbf - leewaySeconds > nowSeconds) return unsigned;
  if (typeof sub !== 'string' || !serviceAccountSubject.test(sub)) return unsigned;
  return { kind: 'signed', subject: sub };
}
