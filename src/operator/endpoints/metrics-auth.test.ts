import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../../k8s/errors.ts';
import { FakeKubeClient } from '../../k8s/testing/fake-client.ts';
import { MetricsAuthorizer } from './metrics-auth.ts';

/** Where the scrapes of the tests below come from. */
const here = { peer: '10.0.0.1' };

const prometheus = {
  username: 'system:serviceaccount:monitoring:prometheus',
  uid: 'u7',
  groups: ['system:serviceaccounts', 'system:authenticated'],
  extra: { 'authentication.kubernetes.io/pod-name': ['prometheus-0'] },
};

/** A fake API server knowing the tokens "scraper" (allowed) and "intruder" (a user without the binding), and a clock. */
function setup() {
  const fake = new FakeKubeClient();
  fake.tokens.set('scraper', prometheus);
  fake.tokens.set('intruder', { username: 'alice' });
  fake.authorize = (r) => ({ allowed: r.user.username === prometheus.username && r.path === '/metrics' && r.verb === 'get' });
  const clock = { t: 0 };
  const auth = new MetricsAuthorizer({ client: fake, logger: pino({ level: 'silent' }), now: () => clock.t });
  const reviews = () => fake.calls.filter((c) => c.startsWith('create'));
  return { fake, clock, auth, reviews };
}

describe('MetricsAuthorizer', () => {
  it('no bearer token: 401 without asking the API server', async () => {
    const { auth, reviews } = setup();
    expect(await auth.check(undefined, here)).toMatchObject({ kind: 'unauthenticated', message: expect.stringContaining('no bearer token') });
    expect(await auth.check('Basic dXNlcjpwYXNz', here)).toMatchObject({ kind: 'unauthenticated' });
    expect(reviews()).toEqual([]);
  });

  it('a token the API server does not know: 401 after the TokenReview alone', async () => {
    const { auth, reviews } = setup();
    expect(await auth.check('Bearer forged', here)).toEqual({ kind: 'unauthenticated', message: 'the bearer token is not valid (invalid bearer token)' });
    expect(reviews()).toEqual(['createTokenReview ']);
  });

  it('a known user without the binding: 403', async () => {
    const { auth, reviews } = setup();
    expect(await auth.check('Bearer intruder', here)).toMatchObject({ kind: 'forbidden', user: 'alice' });
    expect(reviews()).toEqual(['createTokenReview ', 'createSubjectAccessReview alice get /metrics']);
  });

  it('an allowed user: the SubjectAccessReview carries the user, uid, groups and extra the TokenReview gave', async () => {
    const { fake, auth } = setup();
    const seen: unknown[] = [];
    const decide = fake.authorize;
    fake.authorize = (r) => (seen.push(r), decide(r));
    expect(await auth.check('Bearer scraper', here)).toEqual({ kind: 'allowed', user: prometheus.username });
    expect(seen).toEqual([{ user: prometheus, path: '/metrics', verb: 'get' }]);
  });

  it('reuses an allowed verdict for 10 s and a refusal for 5 s, then asks again (a revoked binding takes effect)', async () => {
    const { fake, clock, auth, reviews } = setup();
    await auth.check('Bearer scraper', here);
    await auth.check('Bearer intruder', here);
    expect(reviews()).toHaveLength(4);
    clock.t = 4_999;
    expect(await auth.check('Bearer scraper', here)).toMatchObject({ kind: 'allowed' });
    expect(await auth.check('Bearer intruder', here)).toMatchObject({ kind: 'forbidden' });
    expect(reviews()).toHaveLength(4);
    fake.authorize = () => ({ allowed: true }); // alice was granted the binding
    clock.t = 5_000;
    expect(await auth.check('Bearer intruder', here)).toMatchObject({ kind: 'allowed' });
    fake.authorize = () => ({ allowed: false }); // and the scraper's was revoked
    clock.t = 9_999;
    expect(await auth.check('Bearer scraper', here)).toMatchObject({ kind: 'allowed' });
    clock.t = 10_000;
    expect(await auth.check('Bearer scraper', here)).toMatchObject({ kind: 'forbidden' });
  });

  it('a failed review is a 503 (or 500 when pvx may not review), never cached: the next scrape asks again', async () => {
    const { fake, auth, reviews } = setup();
    fake.failNext('createTokenReview', new ApiError(503, 'ServiceUnavailable', 'the server is currently unable to handle the request'));
    expect(await auth.check('Bearer scraper', here)).toMatchObject({ kind: 'unavailable', status: 503 });
    fake.failNext('createSubjectAccessReview', new ApiError(403, 'Forbidden', 'cannot create resource "subjectaccessreviews"'));
    expect(await auth.check('Bearer scraper', here)).toMatchObject({
      kind: 'unavailable',
      status: 500,
      message: expect.stringContaining('subjectaccessreviews'),
    });
    fake.tokens.set('scraper', new Error('connect ECONNREFUSED'));
    expect(await auth.check('Bearer scraper', here)).toMatchObject({ kind: 'unavailable', status: 503, message: expect.stringContaining('ECONNREFUSED') });
    fake.tokens.set('scraper', prometheus);
    expect(await auth.check('Bearer scraper', here)).toMatchObject({ kind: 'allowed' });
    expect(reviews()).toHaveLength(6);
  });

  it('scrapes arriving together with one token share one review', async () => {
    const { auth, reviews } = setup();
    const verdicts = await Promise.all([auth.check('Bearer scraper', here), auth.check('Bearer scraper', here), auth.check('bearer scraper', here)]);
    expect(verdicts.map((v) => v.kind)).toEqual(['allowed', 'allowed', 'allowed']);
    expect(reviews()).toHaveLength(2);
  });

  it('keeps at most maxEntries verdicts, so a new token per request cannot grow memory', async () => {
    const fake = new FakeKubeClient();
    const auth = new MetricsAuthorizer({ client: fake, logger: pino({ level: 'silent' }), maxEntries: 3, now: () => 0, unknownTokens: { burst: 100 } });
    for (let i = 0; i < 10; i++) await auth.check(`Bearer forged-${i}`, here);
    await auth.check('Bearer forged-9', here);
    await auth.check('Bearer forged-0', here); // evicted: asked again
    expect(fake.calls.filter((c) => c.startsWith('createTokenReview'))).toHaveLength(11);
  });
});

describe('MetricsAuthorizer under a flood of tokens nobody issued', () => {
  /** A check from one peer address. */
  const from = (peer: string, signal?: AbortSignal) => ({ peer, ...(signal ? { signal } : {}) });
  const reviewsOf = (fake: FakeKubeClient) => fake.calls.filter((c) => c.startsWith('createTokenReview')).length;

  it('bogus tokens cannot push an allowed verdict out of the cache', async () => {
    const { fake, clock } = setup();
    // No gate to speak of: every bogus token is reviewed, and refused.
    const auth = new MetricsAuthorizer({
      client: fake,
      logger: pino({ level: 'silent' }),
      maxEntries: 16,
      now: () => clock.t,
      unknownTokens: { qps: 1e6, burst: 1_000_000 },
    });
    await auth.check('Bearer scraper', from('10.0.0.9'));
    for (let i = 0; i < 2_000; i++) await auth.check(`Bearer forged-${i}`, from(`10.0.${i >> 8}.${i & 255}`));
    const reviews = reviewsOf(fake);
    expect(reviews).toBe(2_001);
    expect(await auth.check('Bearer scraper', from('10.0.0.9'))).toMatchObject({ kind: 'allowed' });
    expect(reviewsOf(fake)).toBe(reviews); // still cached: no review
  });

  it('one peer with an unknown token under review is refused another at once (429), without a review', async () => {
    const fake = new FakeKubeClient();
    let release = () => undefined as void;
    const held = new Promise<void>((r) => (release = r));
    const realReview = fake.createTokenReview.bind(fake);
    let started = 0;
    fake.createTokenReview = async (t) => {
      started++;
      await held;
      return realReview(t);
    };
    const auth = new MetricsAuthorizer({ client: fake, logger: pino({ level: 'silent' }) });
    const first = auth.check('Bearer forged-1', from('10.1.1.1'));
    await new Promise((r) => setImmediate(r));
    expect(await auth.check('Bearer forged-2', from('10.1.1.1'))).toMatchObject({ kind: 'shed', status: 429, retryAfterSeconds: 1 });
    expect(started).toBe(1);
    release();
    expect(await first).toMatchObject({ kind: 'unauthenticated' });
    // Its review done, the peer may ask again.
    expect(await auth.check('Bearer forged-3', from('10.1.1.1'))).toMatchObject({ kind: 'unauthenticated' });
  });

  it('past the rate, unknown tokens wait in a bounded queue, and those that wait too long are refused (503); a token allowed before is reviewed at once, ahead of them', async () => {
    const { fake, clock } = setup();
    const gated = new MetricsAuthorizer({
      client: fake,
      logger: pino({ level: 'silent' }),
      now: () => clock.t,
      unknownTokens: { qps: 1, burst: 1, maxQueued: 1, maxWaitMs: 50 },
    });
    // The scraper's token was allowed once (its review took the bucket's one token); its verdict has expired since.
    expect(await gated.check('Bearer scraper', from('10.9.9.9'))).toMatchObject({ kind: 'allowed' });
    clock.t = 60_000; // the bucket holds one token again
    const admitted = gated.check('Bearer forged-1', from('10.2.0.1'));
    const queued = gated.check('Bearer forged-2', from('10.2.0.2'));
    expect(await gated.check('Bearer forged-3', from('10.2.0.3'))).toMatchObject({ kind: 'shed', status: 503, message: expect.stringContaining('too many') });
    const reviewsBefore = reviewsOf(fake);
    expect(await gated.check('Bearer scraper', from('10.9.9.9'))).toMatchObject({ kind: 'allowed' });
    expect(reviewsOf(fake)).toBe(reviewsBefore + 1);
    clock.t = 60_100; // past forged-2's wait, before the next token
    expect(await admitted).toMatchObject({ kind: 'unauthenticated' });
    expect(await queued).toMatchObject({ kind: 'shed', status: 503, message: expect.stringContaining('no review slot within 50 ms') });
    expect(reviewsOf(fake)).toBe(reviewsBefore + 1);
  });

  it('a scrape whose client went away leaves the queue: its token is never reviewed', async () => {
    const fake = new FakeKubeClient();
    const clock = { t: 0 };
    const auth = new MetricsAuthorizer({
      client: fake,
      logger: pino({ level: 'silent' }),
      now: () => clock.t,
      unknownTokens: { qps: 1, burst: 1, maxWaitMs: 60_000 },
    });
    await auth.check('Bearer forged-0', from('10.3.0.1')); // takes the one token
    const gone = new AbortController();
    const waiting = auth.check('Bearer forged-1', from('10.3.0.2', gone.signal));
    gone.abort();
    expect(await waiting).toMatchObject({ kind: 'shed' });
    clock.t = 10_000; // tokens again; nothing left to review
    await new Promise((r) => setTimeout(r, 20));
    expect(reviewsOf(fake)).toBe(1);
  });
});

describe('MetricsAuthorizer: tokens the cluster signed are reviewed first', () => {
  const from = (peer: string) => ({ peer });
  const tenantBot = 'system:serviceaccount:team-a:bot';
  /** Stands for signing-keys.ts: the tokens "scraper" and "bot-*" are the cluster's, the rest made up. */
  const signingKeys = {
    signedSubject: (token: string) => (token === 'scraper' ? prometheus.username : token.startsWith('bot-') ? tenantBot : undefined),
  };

  /** One review a second, one at once, four waiting at most in each lane; made-up tokens fill their lane from many addresses. */
  function flooded(withKeys: boolean) {
    vi.useFakeTimers();
    const { fake } = setup();
    for (const t of ['bot-1', 'bot-2', 'bot-3']) fake.tokens.set(t, { username: tenantBot });
    const auth = new MetricsAuthorizer({
      client: fake,
      logger: pino({ level: 'silent' }),
      now: () => Date.now(),
      unknownTokens: { qps: 1, burst: 1, maxQueued: 4, maxWaitMs: 60_000 },
      ...(withKeys ? { signingKeys } : {}),
    });
    const flood = Array.from({ length: 6 }, (_, i) => auth.check(`Bearer forged-${i}`, from(`10.4.0.${i}`)));
    return { fake, auth, flood };
  }
  afterEach(() => vi.useRealTimers());

  it('a scraper pvx has never seen, its token signed, goes before a flood of made-up tokens from many addresses', async () => {
    const { auth, flood } = flooded(true);
    const scrape = auth.check('Bearer scraper', from('10.9.9.9'));
    await vi.advanceTimersByTimeAsync(1_000); // the next review: the scraper's, not the flood's
    expect(await scrape).toEqual({ kind: 'allowed', user: prometheus.username });
    await vi.advanceTimersByTimeAsync(10_000);
    expect((await Promise.all(flood)).map((v) => v.kind)).toEqual([
      'unauthenticated',
      'unauthenticated',
      'unauthenticated',
      'unauthenticated',
      'unauthenticated',
      'shed',
    ]);
  });

  it('without the cluster’s keys the same scraper is turned away while the flood waits (what the keys change)', async () => {
    const { auth, flood } = flooded(false);
    expect(await auth.check('Bearer scraper', from('10.9.9.9'))).toMatchObject({ kind: 'shed', status: 503 });
    await vi.advanceTimersByTimeAsync(10_000);
    await Promise.all(flood);
  });

  it('one review at a time per ServiceAccount, and a ServiceAccount refused waits with the made-up tokens for a minute', async () => {
    const { fake, auth, flood } = flooded(true);
    const first = auth.check('Bearer bot-1', from('10.5.0.1'));
    expect(await auth.check('Bearer bot-2', from('10.5.0.2'))).toMatchObject({ kind: 'shed', status: 429, message: expect.stringContaining(tenantBot) });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await first).toMatchObject({ kind: 'forbidden', user: tenantBot });
    // Refused: the bot's next token joins the made-up ones' lane, full, and the scraper still goes first.
    expect(await auth.check('Bearer bot-3', from('10.5.0.3'))).toMatchObject({ kind: 'shed', status: 503 });
    const scrape = auth.check('Bearer scraper', from('10.9.9.9'));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await scrape).toMatchObject({ kind: 'allowed' });
    await vi.advanceTimersByTimeAsync(70_000);
    await Promise.all(flood);
    expect(fake.calls.filter((c) => c === `createSubjectAccessReview ${tenantBot} get /metrics`)).toHaveLength(1);
    // A minute on, it goes first again (a binding made meanwhile takes effect soon).
    const again = auth.check('Bearer bot-3', from('10.5.0.3'));
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await again).toMatchObject({ kind: 'forbidden' });
  });
});
