import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../k8s/errors.ts';
import { FakeKubeClient } from '../../k8s/testing/fake-client.ts';
import { MetricsAuthorizer } from './metrics-auth.ts';

const prometheus = { username: 'system:serviceaccount:monitoring:prometheus', uid: 'u7', groups: ['system:serviceaccounts', 'system:authenticated'], extra: { 'authentication.kubernetes.io/pod-name': ['prometheus-0'] } };

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
    expect(await auth.check(undefined)).toMatchObject({ kind: 'unauthenticated', message: expect.stringContaining('no bearer token') });
    expect(await auth.check('Basic dXNlcjpwYXNz')).toMatchObject({ kind: 'unauthenticated' });
    expect(reviews()).toEqual([]);
  });

  it('a token the API server does not know: 401 after the TokenReview alone', async () => {
    const { auth, reviews } = setup();
    expect(await auth.check('Bearer forged')).toEqual({ kind: 'unauthenticated', message: 'the bearer token is not valid (invalid bearer token)' });
    expect(reviews()).toEqual(['createTokenReview ']);
  });

  it('a known user without the binding: 403', async () => {
    const { auth, reviews } = setup();
    expect(await auth.check('Bearer intruder')).toMatchObject({ kind: 'forbidden', user: 'alice' });
    expect(reviews()).toEqual(['createTokenReview ', 'createSubjectAccessReview alice get /metrics']);
  });

  it('an allowed user: the SubjectAccessReview carries the user, uid, groups and extra the TokenReview gave', async () => {
    const { fake, auth } = setup();
    const seen: unknown[] = [];
    const decide = fake.authorize;
    fake.authorize = (r) => (seen.push(r), decide(r));
    expect(await auth.check('Bearer scraper')).toEqual({ kind: 'allowed', user: prometheus.username });
    expect(seen).toEqual([{ user: prometheus, path: '/metrics', verb: 'get' }]);
  });

  it('reuses an allowed verdict for 10 s and a refusal for 5 s, then asks again (a revoked binding takes effect)', async () => {
    const { fake, clock, auth, reviews } = setup();
    await auth.check('Bearer scraper');
    await auth.check('Bearer intruder');
    expect(reviews()).toHaveLength(4);
    clock.t = 4_999;
    expect(await auth.check('Bearer scraper')).toMatchObject({ kind: 'allowed' });
    expect(await auth.check('Bearer intruder')).toMatchObject({ kind: 'forbidden' });
    expect(reviews()).toHaveLength(4);
    fake.authorize = () => ({ allowed: true }); // alice was granted the binding
    clock.t = 5_000;
    expect(await auth.check('Bearer intruder')).toMatchObject({ kind: 'allowed' });
    fake.authorize = () => ({ allowed: false }); // and the scraper's was revoked
    clock.t = 9_999;
    expect(await auth.check('Bearer scraper')).toMatchObject({ kind: 'allowed' });
    clock.t = 10_000;
    expect(await auth.check('Bearer scraper')).toMatchObject({ kind: 'forbidden' });
  });

  it('a failed review is a 503 (or 500 when pvx may not review), never cached: the next scrape asks again', async () => {
    const { fake, auth, reviews } = setup();
    fake.failNext('createTokenReview', new ApiError(503, 'ServiceUnavailable', 'the server is currently unable to handle the request'));
    expect(await auth.check('Bearer scraper')).toMatchObject({ kind: 'unavailable', status: 503 });
    fake.failNext('createSubjectAccessReview', new ApiError(403, 'Forbidden', 'cannot create resource "subjectaccessreviews"'));
    expect(await auth.check('Bearer scraper')).toMatchObject({ kind: 'unavailable', status: 500, message: expect.stringContaining('subjectaccessreviews') });
    fake.tokens.set('scraper', new Error('connect ECONNREFUSED'));
    expect(await auth.check('Bearer scraper')).toMatchObject({ kind: 'unavailable', status: 503, message: expect.stringContaining('ECONNREFUSED') });
    fake.tokens.set('scraper', prometheus);
    expect(await auth.check('Bearer scraper')).toMatchObject({ kind: 'allowed' });
    expect(reviews()).toHaveLength(6);
  });

  it('scrapes arriving together with one token share one review', async () => {
    const { auth, reviews } = setup();
    const verdicts = await Promise.all([auth.check('Bearer scraper'), auth.check('Bearer scraper'), auth.check('bearer scraper')]);
    expect(verdicts.map((v) => v.kind)).toEqual(['allowed', 'allowed', 'allowed']);
    expect(reviews()).toHaveLength(2);
  });

  it('keeps at most maxEntries verdicts, so a new token per request cannot grow memory', async () => {
    const fake = new FakeKubeClient();
    const auth = new MetricsAuthorizer({ client: fake, logger: pino({ level: 'silent' }), maxEntries: 3, now: () => 0 });
    for (let i = 0; i < 10; i++) await auth.check(`Bearer forged-${i}`);
    await auth.check('Bearer forged-9');
    await auth.check('Bearer forged-0'); // evicted: asked again
    expect(fake.calls.filter((c) => c.startsWith('createTokenReview'))).toHaveLength(11);
  });
});
