import type { KubernetesObject, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { ListOptions } from './client.ts';
import { ApiError } from './errors.ts';
import { FakeKubeClient } from './testing/fake-client.ts';
import { listAll } from './list.ts';
import { resources, type ResourceType } from './resources.ts';

const claim = (namespace: string, name: string): V1PersistentVolumeClaim => ({ metadata: { namespace, name }, spec: {}, status: { phase: 'Bound' } });

describe('listAll', () => {
  it('reads every page', async () => {
    const c = new FakeKubeClient();
    for (let i = 0; i < 1201; i++) c.create(resources.persistentVolumeClaims, claim('db', `c${i}`));
    expect((await listAll(c, resources.persistentVolumeClaims)).items).toHaveLength(1201);
    expect(c.calls.filter((call) => call === 'list persistentvolumeclaims')).toHaveLength(3);
  });

  it('starts over when the continue token expired meanwhile (410)', async () => {
    const c = new FakeKubeClient();
    for (let i = 0; i < 600; i++) c.create(resources.persistentVolumeClaims, claim('db', `c${i}`));
    let calls = 0;
    const expiring = {
      list: async (type: ResourceType, opts: ListOptions) => {
        calls++;
        if (calls === 2) throw new ApiError(410, 'Expired', 'The provided continue parameter is too old');
        return c.list(type, opts);
      },
    } as unknown as FakeKubeClient;
    expect((await listAll(expiring, resources.persistentVolumeClaims)).items).toHaveLength(600);
    expect(calls).toBe(4);
  });

  it("applies the kind's transform (pods are slimmed)", async () => {
    const c = new FakeKubeClient();
    c.create(resources.pods, {
      metadata: { namespace: 'db', name: 'p', annotations: { big: 'x'.repeat(100) } },
      spec: { containers: [{ name: 'c' }] },
    } as KubernetesObject);
    const [pod] = (await listAll(c, resources.pods)).items;
    expect(pod?.metadata?.annotations).toBeUndefined();
  });
});

describe('listAll options', () => {
  it("adds a field selector to the kind's own and returns the list's resourceVersion", async () => {
    const c = new FakeKubeClient();
    c.create(resources.persistentVolumeClaims, claim('db', 'a'));
    const seen: ListOptions[] = [];
    const spy = { list: async (type: ResourceType, opts: ListOptions) => (seen.push(opts), c.list(type, opts)) } as unknown as FakeKubeClient;
    const { resourceVersion } = await listAll(spy, resources.pods, { fieldSelector: 'metadata.name=p' });
    expect(seen[0]?.fieldSelector).toBe('status.phase!=Succeeded,status.phase!=Failed,metadata.name=p');
    expect(resourceVersion).not.toBe('');
  });
});
