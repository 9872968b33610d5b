import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../k8s/errors.ts';
import { FakeKubeClient } from '../k8s/testing/fake-client.ts';
import { ledgerClassEvents, readsVolumeAttributesClasses, requestEvents } from './wiring.ts';
import type { VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';

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

describe('requestEvents', () => {
  const req = (name: string, phase?: 'Completed' | 'Expanding', parent?: string): VolumeExpansionRequest => ({
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: { name, namespace: 'db', ...(parent ? { labels: { 'pvx.dev/parent-request': parent } } : {}) },
    spec: { target: { pvcName: 'data' }, size: '2Gi' },
    ...(phase ? { status: { phase } } : {}),
  });
  const added = (event: (h: ReturnType<typeof requestEvents>) => void) => {
    const keys: string[] = [];
    event(
      requestEvents(
        (k) => keys.push(k),
        () => ['db/waiting'],
      ),
    );
    return keys;
  };

  it('a deleted request is enqueued (its memory dropped), with its parent and the requests waiting for its claim', () => {
    expect(added((h) => h.onDelete?.(req('grow-0', 'Expanding', 'grow')))).toEqual(['db/grow-0', 'db/grow', 'db/waiting']);
  });

  it('an update enqueues the request; a finished one frees its claim for the next', () => {
    expect(added((h) => h.onUpdate?.(req('a', 'Expanding'), req('a', 'Expanding')))).toEqual(['db/a']);
    expect(added((h) => h.onUpdate?.(req('a', 'Expanding'), req('a', 'Completed')))).toEqual(['db/a', 'db/waiting']);
  });
});

describe('ledgerClassEvents', () => {
  // Seed 1313: a claim of an EBS class was raised by hand while its StorageClass was deleted (no
  // class, no budget: nothing to count), and the class was created again; no claim event came
  // after, so the raise went uncounted until the next resync, ten minutes on.
  it('a class created (again) enqueues the claims of that class: what they show is counted against its driver’s budget', () => {
    const keys: string[] = [];
    const claims: Record<string, string[]> = { ebs: ['db/data-0', 'web/data'], other: ['db/x'] };
    const h = ledgerClassEvents(
      (k) => keys.push(k),
      (className) => claims[className] ?? [],
    );
    h.onAdd?.({ metadata: { name: 'ebs' }, provisioner: 'ebs.csi.aws.com' });
    expect(keys).toEqual(['db/data-0', 'web/data']);
  });
});
