import { describe, expect, it } from 'vitest';
import { ApiError } from '../../k8s/errors.ts';
import {
  afterAccessReview,
  afterTokenReview,
  bearerToken,
  defaultVerdictTtls,
  refusal,
  reviewFailed,
  VerdictCache,
  verdictTtlMs,
  type ScrapeVerdict,
} from './metrics-access.ts';

const prometheus = { username: 'system:serviceaccount:monitoring:prometheus', uid: 'u7', groups: ['system:serviceaccounts'] };

describe('bearerToken', () => {
  it.each([
    ['Bearer abc.def-ghi_jkl~', 'abc.def-ghi_jkl~'],
    ['bearer abc', 'abc'], // the scheme is case-insensitive
    ['BEARER  abc==', 'abc=='],
    [undefined, undefined],
    ['', undefined],
    ['Bearer', undefined],
    ['Bearer ', undefined],
    ['Basic dXNlcjpwYXNz', undefined],
    ['Bearer a b', undefined],
    ['Bearerabc', undefined],
  ])('%j → %j', (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });
});

describe('the verdict', () => {
  it('a token the API server does not know: 401, with its reason', () => {
    expect(afterTokenReview({ authenticated: false, error: 'token expired' })).toEqual({
      kind: 'unauthenticated',
      message: 'the bearer token is not valid (token expired)',
    });
    expect(afterTokenReview({ authenticated: false })).toEqual({ kind: 'unauthenticated', message: 'the bearer token is not valid' });
  });

  it('a known token: its user is authorized next', () => {
    expect(afterTokenReview({ authenticated: true, user: prometheus })).toEqual({ next: 'authorize', user: prometheus });
  });

  it('allowed, or forbidden naming the user, the reason and the ClusterRole to bind', () => {
    expect(afterAccessReview(prometheus, { allowed: true })).toEqual({ kind: 'allowed', user: prometheus.username });
    expect(afterAccessReview({ username: 'alice' }, { allowed: false, reason: 'no RBAC policy matched' })).toEqual({
      kind: 'forbidden',
      user: 'alice',
      message: 'user "alice" may not get /metrics (no RBAC policy matched): bind it to the ClusterRole pvx-metrics-reader',
    });
    expect(afterAccessReview({ username: 'alice' }, { allowed: false, evaluationError: 'webhook down' })).toMatchObject({
      message: expect.stringContaining('(webhook down)'),
    });
  });

  it('a review pvx may not make is a 500 saying what to grant; any other failure a 503', () => {
    const forbidden = new ApiError(
      403,
      'Forbidden',
      'tokenreviews.authentication.k8s.io is forbidden: User "system:serviceaccount:pvx-system:pvx" cannot create resource "tokenreviews"',
    );
    expect(reviewFailed('TokenReview', forbidden)).toEqual({
      kind: 'unavailable',
      status: 500,
      message: `pvx may not create tokenreviews.authentication.k8s.io, so it cannot check who is scraping (grant it, see the ClusterRole pvx-metrics-auth): ${forbidden.message}`,
    });
    expect(reviewFailed('SubjectAccessReview', new ApiError(403, 'Forbidden', 'no'))).toMatchObject({
      status: 500,
      message: expect.stringContaining('subjectaccessreviews.authorization.k8s.io'),
    });
    expect(reviewFailed('SubjectAccessReview', new ApiError(503, 'ServiceUnavailable', 'etcd'))).toEqual({
      kind: 'unavailable',
      status: 503,
      message: 'pvx could not check who is scraping: the SubjectAccessReview failed: etcd',
    });
    expect(reviewFailed('TokenReview', new Error('connect ECONNREFUSED'))).toMatchObject({ status: 503, message: expect.stringContaining('ECONNREFUSED') });
  });

  it.each<[ScrapeVerdict, number, Record<string, string>]>([
    [{ kind: 'unauthenticated', message: 'm' }, 401, { 'www-authenticate': 'Bearer realm="pvx metrics"' }],
    [{ kind: 'forbidden', user: 'alice', message: 'm' }, 403, {}],
    [{ kind: 'unavailable', status: 500, message: 'm' }, 500, {}],
    [{ kind: 'unavailable', status: 503, message: 'm' }, 503, {}],
    [{ kind: 'shed', status: 429, retryAfterSeconds: 1, message: 'm' }, 429, { 'retry-after': '1' }],
    [{ kind: 'shed', status: 503, retryAfterSeconds: 1, message: 'm' }, 503, { 'retry-after': '1' }],
  ])('answers %j with %s', (verdict, status, headers) => {
    expect(refusal(verdict as Exclude<ScrapeVerdict, { kind: 'allowed' }>)).toEqual({ status, headers, body: expect.stringContaining('m\n') });
  });

  it.each<[ScrapeVerdict, number]>([
    [{ kind: 'allowed', user: 'u' }, 10_000],
    [{ kind: 'unauthenticated', message: 'm' }, 5_000],
    [{ kind: 'forbidden', user: 'u', message: 'm' }, 5_000],
    [{ kind: 'unavailable', status: 503, message: 'm' }, 0],
    [{ kind: 'shed', status: 429, retryAfterSeconds: 1, message: 'm' }, 0],
  ])('keeps %j for %s ms', (verdict, ms) => {
    expect(verdictTtlMs(verdict, defaultVerdictTtls)).toBe(ms);
  });
});

describe('VerdictCache', () => {
  const allowed: ScrapeVerdict = { kind: 'allowed', user: 'u' };

  it('keeps a verdict until it expires, and none with no lifetime', () => {
    let t = 0;
    const cache = new VerdictCache({ maxEntries: 10, now: () => t });
    cache.set('a', allowed, 1000);
    cache.set('b', allowed, 0);
    t = 999;
    expect(cache.get('a')).toBe(allowed);
    expect(cache.get('b')).toBeUndefined();
    t = 1000;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('holds at most maxEntries: expired ones go first, then the oldest', () => {
    let t = 0;
    const cache = new VerdictCache({ maxEntries: 2, now: () => t });
    cache.set('old', allowed, 10_000);
    cache.set('short', allowed, 10);
    t = 20;
    cache.set('new', allowed, 10_000); // 'short' has expired: it goes, 'old' stays
    expect([cache.get('old'), cache.get('short'), cache.get('new')]).toEqual([allowed, undefined, allowed]);
    cache.set('newer', allowed, 10_000); // none expired: the oldest goes
    expect([cache.get('old'), cache.get('new'), cache.get('newer')]).toEqual([undefined, allowed, allowed]);
    expect(cache.size).toBe(2);
  });

  it.each([0, 1.5, NaN])('refuses maxEntries %s', (n) => {
    expect(() => new VerdictCache({ maxEntries: n, now: () => 0 })).toThrow(new TypeError(`maxEntries must be a whole number ≥ 1, got ${n}`));
  });
});
