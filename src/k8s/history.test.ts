// readDeletion over the in-memory API server, whose watch replays history after a resourceVersion
// and answers 410 once it is compacted, as the API server's watch cache does.
import type { V1StatefulSet } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ApiError } from './errors.ts';
import { readDeletion } from './history.ts';
import { resources } from './resources.ts';
import { FakeKubeClient } from './testing/fake-client.ts';

function statefulSet(fake: FakeKubeClient, name = 'web'): V1StatefulSet {
  return fake.create(resources.statefulSets, {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, namespace: 'db' },
    spec: { selector: {}, serviceName: name, template: {} },
  } as V1StatefulSet);
}

describe('readDeletion', () => {
  it('every version after the one asked from, of that object only, and its last state', async () => {
    const fake = new FakeKubeClient();
    const recorded = statefulSet(fake);
    statefulSet(fake, 'other');
    await fake.deleteStatefulSetOrphan('db', 'web', { uid: recorded.metadata?.uid as string, resourceVersion: recorded.metadata?.resourceVersion as string });
    const deleting = fake.get<V1StatefulSet>(resources.statefulSets, 'db', 'web') as V1StatefulSet;
    fake.update(resources.statefulSets, { ...deleting, metadata: { ...deleting.metadata, resourceVersion: undefined, labels: { edited: 'yes' } } });
    fake.collectGarbage();
    const h = await readDeletion(fake, resources.statefulSets, 'db', 'web', recorded.metadata?.resourceVersion as string);
    expect(h.kind).toBe('deleted');
    if (h.kind !== 'deleted') return;
    expect(h.versions.map((v) => v.metadata?.finalizers)).toEqual([['orphan'], ['orphan']]);
    expect(h.versions.every((v) => v.metadata?.name === 'web')).toBe(true);
    expect(h.last.metadata?.labels).toEqual({ edited: 'yes' });
  });

  // Seed 350167: pvx's own create after its delete (answer and event lost), then deleted by its
  // owner: the first DELETED alone read as pvx's delete.
  it('what the history holds of the name after its DELETED: another object created under it, and how it went', async () => {
    const fake = new FakeKubeClient();
    const recorded = statefulSet(fake);
    await fake.deleteStatefulSetOrphan('db', 'web', { uid: recorded.metadata?.uid as string, resourceVersion: recorded.metadata?.resourceVersion as string });
    fake.collectGarbage();
    const again = statefulSet(fake);
    fake.delete(resources.statefulSets, 'db', 'web');
    const h = await readDeletion(fake, resources.statefulSets, 'db', 'web', recorded.metadata?.resourceVersion as string, 1000, 20);
    expect(h.kind).toBe('deleted');
    if (h.kind !== 'deleted') return;
    expect(h.last.metadata?.uid).toBe(recorded.metadata?.uid);
    expect(h.later?.map((e) => [e.type, e.object.metadata?.uid])).toEqual([
      ['ADDED', again.metadata?.uid],
      ['DELETED', again.metadata?.uid],
    ]);
    expect(fake.openWatches).toBe(0);
  });

  it('compacted history: says so', async () => {
    const fake = new FakeKubeClient();
    const recorded = statefulSet(fake);
    fake.delete(resources.statefulSets, 'db', 'web');
    fake.compact();
    expect(await readDeletion(fake, resources.statefulSets, 'db', 'web', recorded.metadata?.resourceVersion as string)).toEqual({ kind: 'compacted' });
  });

  it('its namespace gone (the watch refused with 404 for the namespace): says so; any other 404 is an error', async () => {
    const fake = new FakeKubeClient();
    const recorded = statefulSet(fake);
    fake.failNext('watch', new ApiError(404, 'NotFound', 'namespaces "db" not found'));
    expect(await readDeletion(fake, resources.statefulSets, 'db', 'web', recorded.metadata?.resourceVersion as string)).toEqual({ kind: 'namespaceGone' });
    fake.failNext('watch', new ApiError(404, 'NotFound', 'the server could not find the requested resource'));
    await expect(readDeletion(fake, resources.statefulSets, 'db', 'web', recorded.metadata?.resourceVersion as string)).rejects.toThrow(/could not find/);
  });

  it('not deleted within the wait: present', async () => {
    const fake = new FakeKubeClient();
    const recorded = statefulSet(fake);
    expect(await readDeletion(fake, resources.statefulSets, 'db', 'web', recorded.metadata?.resourceVersion as string, 20)).toEqual({
      kind: 'present',
      versions: [],
    });
    expect(fake.openWatches).toBe(0);
  });
});
