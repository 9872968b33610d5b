import { generateKeyPairSync, sign } from 'node:crypto';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ClusterSigningKeys } from './signing-keys.ts';

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
const subject = 'system:serviceaccount:monitoring:prometheus';

function signer(kid: string) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const token = () => {
    const data = `${b64({ alg: 'ES256', kid })}.${b64({ sub: subject, exp: Date.now() / 1000 + 600 })}`;
    return `${data}.${sign('sha256', Buffer.from(data), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
  };
  return { token, jwk: { ...publicKey.export({ format: 'jwk' }), kid } };
}

/** A key source over a key set the test changes, on a clock it moves, counting reads and warnings. */
function source(initial: unknown[]) {
  const state = { jwks: { keys: initial } as unknown, reads: 0, fail: false, t: 0 };
  const warnings: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line).msg as string) });
  const keys = new ClusterSigningKeys({
    read: async () => {
      state.reads++;
      if (state.fail) throw new Error('403 Forbidden');
      return state.jwks;
    },
    logger,
    now: () => state.t,
  });
  return { state, keys, warnings };
}

describe('ClusterSigningKeys', () => {
  it('reads the keys at the first token, not before; until they are in, every token is unsigned', async () => {
    const a = signer('a');
    const { state, keys } = source([a.jwk]);
    expect(state.reads).toBe(0);
    expect(keys.signedSubject(a.token())).toBeUndefined();
    await keys.settled();
    expect(keys.signedSubject(a.token())).toBe(subject);
    expect(keys.signedSubject('made-up')).toBeUndefined();
    expect(state.reads).toBe(1);
  });

  it('reads them again for a key it does not know, at most once a minute, and every ten minutes', async () => {
    const a = signer('a');
    const b = signer('b');
    const { state, keys } = source([a.jwk]);
    keys.signedSubject(a.token());
    await keys.settled();
    state.jwks = { keys: [a.jwk, b.jwk] }; // the cluster rotated
    state.t = 30_000;
    expect(keys.signedSubject(b.token())).toBeUndefined(); // within the minute: not read again
    expect(state.reads).toBe(1);
    state.t = 60_000;
    keys.signedSubject(b.token());
    await keys.settled();
    expect(state.reads).toBe(2);
    expect(keys.signedSubject(b.token())).toBe(subject);
    for (let i = 0; i < 100; i++) keys.signedSubject(`${b64({ alg: 'ES256', kid: `made-up-${i}` })}.${b64({})}.AA`);
    expect(state.reads).toBe(2); // made-up key IDs cost one read a minute at most
    state.t = 60_000 + 600_000;
    keys.signedSubject(a.token());
    await keys.settled();
    expect(state.reads).toBe(3);
  });

  it('keeps the keys it has when a read fails, and says so once', async () => {
    const a = signer('a');
    const { state, keys, warnings } = source([a.jwk]);
    keys.signedSubject(a.token());
    await keys.settled();
    state.fail = true;
    for (const t of [600_000, 1_200_000, 1_800_000]) {
      state.t = t;
      keys.signedSubject(a.token());
      await keys.settled();
    }
    expect(state.reads).toBe(4);
    expect(keys.signedSubject(a.token())).toBe(subject);
    expect(warnings).toEqual([expect.stringContaining("could not read the cluster's token signing keys")]);
  });
});
