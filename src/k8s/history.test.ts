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

  // Seed 2703066: the stream broke before the ADDED of the StatefulSet its owner applied again (and
  // deleted); read as "nothing after pvx's delete", pvx created it once more.
  it('a stream that breaks off after the DELETED, before its moment is up: an error, never "nothing after it"', async () => {
    const fake = new FakeKubeClient();
    const recorded = statefulSet(fake);
    await fake.deleteStatefulSetOrphan('db', 'web', { uid: recorded.metadata?.uid as string, resourceVersion: recorded.metadata?.resourceVersion as string });
    fake.collectGarbage();
    const reading = readDeletion(fake, resources.statefulSets, 'db', 'web', recorded.metadata?.resourceVersion as string, 1000, 500);
    await new Promise((r) => setTimeout(r, 20));
    fake.breakWatches();
    await expect(reading).rejects.toThrow(/broke off within 500 ms after its DELETED event: read again/);
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
