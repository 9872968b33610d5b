import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../k8s/errors.ts';
import { FakeKubeClient } from '../k8s/testing/fake-client.ts';
import { readsVolumeAttributesClasses } from './wiring.ts';

describe('readsVolumeAttributesClasses', () => {
  const logger = pino({ level: 'silent' });
  const refusing = (err: unknown) => {
    const fake = new FakeKubeClient();
    fake.failNext('list', err);
    return fake;
  };

  it('true where the cluster serves them to pvx (Kubernetes 1.34)', async () => {
    expect(await readsVolumeAttributesClasses(new FakeKubeClient(), logger)).toBe(true);
  });

  it.each([
    ['not served (before 1.34)', new ApiError(404, 'NotFound', 'the server could not find the requested resource')],
    ['not served, as client-node says it', new Error('Unrecognized API version and kind: storage.k8s.io/v1 VolumeAttributesClass')],
    ['not allowed (an older ClusterRole)', new ApiError(403, 'Forbidden', 'volumeattributesclasses.storage.k8s.io is forbidden')],
  ])('false where they are %s: pvx runs without them rather than wait for a cache that never syncs', async (_name, err) => {
    expect(await readsVolumeAttributesClasses(refusing(err), logger)).toBe(false);
  });

  it('any other failure is the cluster’s, and stops the start', async () => {
    await expect(readsVolumeAttributesClasses(refusing(new ApiError(500, 'InternalError', 'etcd')), logger)).rejects.toThrow('etcd');
  });
});
