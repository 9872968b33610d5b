// The operator's kubelet reader: a token minted for a ServiceAccount that may only read node
// statistics, never the token pvx writes with.
import { describe, expect, it } from 'vitest';
import { ApiError } from '../k8s/errors.ts';
import { FakeKubeClient } from '../k8s/testing/fake-client.ts';
import { MintedKubeletCredentials, kubeletTokenSeconds } from './kubelet-identity.ts';

const identity = { namespace: 'pvx-system', name: 'pvx-usage-reader' };

function setup() {
  const fake = new FakeKubeClient();
  fake.serviceAccounts.add('pvx-system/pvx-usage-reader');
  let now = new Date();
  const creds = new MintedKubeletCredentials({ client: fake, identity, now: () => now });
  const mints = () => fake.calls.filter((c) => c.startsWith('createServiceAccountToken'));
  return { fake, creds, mints, advance: (s: number) => (now = new Date(now.getTime() + s * 1000)) };
}

describe('the kubelet reader’s credentials', () => {
  it('are a token minted for the reader (TokenRequest, ten minutes), the reader’s as the API server reviews it', async () => {
    const { fake, creds, mints } = setup();
    const { token } = await creds.credentials();
    expect(mints()).toEqual([`createServiceAccountToken pvx-system/pvx-usage-reader ${kubeletTokenSeconds}s`]);
    expect(await fake.createTokenReview(token as string)).toMatchObject({
      authenticated: true,
      user: { username: 'system:serviceaccount:pvx-system:pvx-usage-reader' },
    });
  });

  it('are minted once for many reads, and again once most of the token’s life has passed', async () => {
    const { creds, mints, advance } = setup();
    const [a, b] = await Promise.all([creds.credentials(), creds.credentials()]);
    expect(b).toEqual(a);
    advance(0.79 * kubeletTokenSeconds);
    expect(await creds.credentials()).toEqual(a);
    expect(mints()).toHaveLength(1);
    advance(0.02 * kubeletTokenSeconds);
    expect(await creds.credentials()).not.toEqual(a);
    expect(mints()).toHaveLength(2);
  });

  it('a failed mint keeps the token held while it is valid, and says what to fix when none is', async () => {
    const { fake, creds, advance } = setup();
    const first = await creds.credentials();
    advance(0.9 * kubeletTokenSeconds);
    fake.failNext('createServiceAccountToken', new ApiError(503, 'ServiceUnavailable', 'etcd is slow'));
    expect(await creds.credentials()).toEqual(first);
    advance(0.2 * kubeletTokenSeconds);
    fake.failNext('createServiceAccountToken', new ApiError(503, 'ServiceUnavailable', 'etcd is slow'));
    await expect(creds.credentials()).rejects.toThrow(/could not mint a token for ServiceAccount pvx-system\/pvx-usage-reader.*etcd is slow/);
  });

  it.each([
    [new ApiError(404, 'NotFound', 'serviceaccounts "pvx-usage-reader" not found'), /does not exist: create it \(config\/rbac\/kubelet_usage_role.yaml/],
    [
      new ApiError(403, 'Forbidden', 'cannot create resource "serviceaccounts/token"'),
      /needs create on serviceaccounts\/token for it \(Role pvx-kubelet-identity in pvx-system\)/,
    ],
  ])('a refusal names the missing piece: %s', async (err, message) => {
    const { fake, creds } = setup();
    fake.failNext('createServiceAccountToken', err);
    await expect(creds.credentials()).rejects.toThrow(message);
  });
});
