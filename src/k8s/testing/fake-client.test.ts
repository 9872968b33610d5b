// The in-memory API server's claim patch where it concerns a VolumeAttributesClass, as the real one
// answers (Kubernetes 1.34 validation, pkg/apis/core/validation: ValidatePersistentVolumeClaimUpdate):
// the class changes with or without the size, in one write; only a Bound claim's may change; a
// class that does not exist is not refused (the claim's modification waits Pending for it).
import type { V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import { beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../errors.ts';
import { FakeKubeClient, type WriteRecord } from './fake-client.ts';
import { resources } from '../resources.ts';

let fake: FakeKubeClient;
let claim: V1PersistentVolumeClaim;

function createClaim(phase = 'Bound'): V1PersistentVolumeClaim {
  return fake.create(resources.persistentVolumeClaims, {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'data', namespace: 'db' },
    spec: { storageClassName: 'gp3', volumeAttributesClassName: 'gp3-default', resources: { requests: { storage: '10Gi' } } },
    status: { phase, capacity: { storage: '10Gi' } },
  } as V1PersistentVolumeClaim);
}

beforeEach(() => {
  fake = new FakeKubeClient();
  fake.create(resources.storageClasses, { metadata: { name: 'gp3' }, provisioner: 'ebs.csi.aws.com', allowVolumeExpansion: true } as V1StorageClass);
  claim = createClaim();
});

const preconditions = () => ({ uid: claim.metadata?.uid as string, resourceVersion: claim.metadata?.resourceVersion as string });
const read = () => fake.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;

describe('patchPvcSize with a VolumeAttributesClass', () => {
  it('sets the class and leaves the size when the patch has no size', async () => {
    await fake.patchPvcSize('db', 'data', { ...preconditions(), volumeAttributesClassName: 'io2', annotations: { 'pvx.dev/target-volume-attributes-class': 'io2' } });
    expect(read().spec).toMatchObject({ volumeAttributesClassName: 'io2', resources: { requests: { storage: '10Gi' } } });
    expect(read().metadata?.annotations).toEqual({ 'pvx.dev/target-volume-attributes-class': 'io2' });
  });

  it('sets the size and the class in one write', async () => {
    const writes: WriteRecord[] = [];
    fake.observeWrites((w) => writes.push(w));
    await fake.patchPvcSize('db', 'data', { ...preconditions(), storage: '20Gi', volumeAttributesClassName: 'io2', annotations: {} });
    expect(writes).toHaveLength(1);
    expect((writes[0]?.after as V1PersistentVolumeClaim).spec).toMatchObject({ volumeAttributesClassName: 'io2', resources: { requests: { storage: '20Gi' } } });
  });

  it('accepts a class that does not exist: Kubernetes does not look it up at admission', async () => {
    await expect(fake.patchPvcSize('db', 'data', { ...preconditions(), volumeAttributesClassName: 'no-such-class', annotations: {} })).resolves.toBeDefined();
  });

  it('refuses a new class on a claim that is not Bound (422: its spec is immutable until then)', async () => {
    fake.delete(resources.persistentVolumeClaims, 'db', 'data');
    claim = createClaim('Pending');
    const err = await fake.patchPvcSize('db', 'data', { ...preconditions(), volumeAttributesClassName: 'io2', annotations: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe(422);
    expect(read().spec?.volumeAttributesClassName).toBe('gp3-default');
  });

  it('keeps its preconditions: a stale resourceVersion is 409 whatever the patch changes', async () => {
    await fake.patchPvcSize('db', 'data', { ...preconditions(), volumeAttributesClassName: 'io2', annotations: {} });
    const err = await fake.patchPvcSize('db', 'data', { ...preconditions(), volumeAttributesClassName: 'io2-fast', annotations: {} }).catch((e: unknown) => e);
    expect((err as ApiError).code).toBe(409);
  });
});
