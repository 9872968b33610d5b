import type { KubernetesObject, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { ListOptions, ListPage } from '../k8s/client.ts';
import { ApiError } from '../k8s/errors.ts';
import { FakeKubeClient } from '../k8s/testing/fake-client.ts';
import {
  clusterVolumeExpansionPolicies,
  namespaces,
  resources,
  volumeExpansionPolicies,
  volumeExpansionRequests,
  type ResourceType,
} from '../k8s/resources.ts';
import type { UsageSource } from '../usage/source.ts';
import { collectSnapshot } from './read-cluster.ts';

/** The fake API server, refusing chosen kinds the way a real one does. */
class RefusingClient extends FakeKubeClient {
  readonly refusals = new Map<string, Error>();
  override async list(type: ResourceType, opts: ListOptions): Promise<ListPage> {
    const refusal = this.refusals.get(type.resource);
    if (refusal) throw refusal;
    return super.list(type, opts);
  }
}

const claim = (namespace: string, name: string): V1PersistentVolumeClaim => ({ metadata: { namespace, name }, spec: {}, status: { phase: 'Bound' } });

function cluster(): RefusingClient {
  const c = new RefusingClient();
  c.create(resources.persistentVolumeClaims, claim('db', 'data'));
  c.create(resources.persistentVolumeClaims, claim('web', 'cache'));
  c.create(resources.storageClasses, { metadata: { name: 'fast' }, provisioner: 'x' } as KubernetesObject);
  c.create(namespaces, { metadata: { name: 'db', labels: { team: 'a' } } });
  return c;
}

describe('collectSnapshot', () => {
  it('reads every kind, the namespaced ones of one namespace only', async () => {
    const { snapshot, warnings, unreliableRules } = await collectSnapshot(cluster(), { namespace: 'db' });
    expect(snapshot.pvcs.map((p) => p.metadata?.name)).toEqual(['data']);
    expect(snapshot.storageClasses.map((s) => s.metadata?.name)).toEqual(['fast']);
    expect(snapshot.namespaces?.map((n) => n.metadata?.labels)).toEqual([{ team: 'a' }]);
    expect(snapshot.usage).toBeUndefined();
    expect(warnings).toEqual([]);
    expect(unreliableRules).toEqual([]);
  });

  it("reads pvx's kinds as none when their CRDs are not installed, and says so", async () => {
    const c = cluster();
    for (const t of [volumeExpansionRequests, volumeExpansionPolicies, clusterVolumeExpansionPolicies]) {
      c.refusals.set(t.resource, new Error(`Unrecognized API version and kind: ${t.group}/${t.version} ${t.kind}`));
    }
    const { snapshot, warnings, unreliableRules } = await collectSnapshot(c);
    expect(snapshot.requests).toEqual([]);
    expect(snapshot.policies).toEqual([]);
    expect(warnings).toContain("volumeexpansionpolicies.pvx.dev is not served by this cluster (pvx's CRDs are not installed): read as none");
    // None exist, so the rules reading them are right: nothing to skip.
    expect(unreliableRules).toEqual([]);
  });

  it('reads VolumeAttributesClasses as none before Kubernetes 1.34; not allowed to list them, it knows none and skips modify-stuck', async () => {
    const c = cluster();
    c.refusals.set('volumeattributesclasses', new ApiError(404, 'NotFound', 'the server could not find the requested resource'));
    const old = await collectSnapshot(c);
    expect(old.snapshot.volumeAttributesClasses).toEqual([]);
    expect(old.warnings).toEqual(['volumeattributesclasses.storage.k8s.io is not served by this cluster (a later Kubernetes version serves it): read as none']);
    expect(old.unreliableRules).toEqual([]);
    c.refusals.set('volumeattributesclasses', new ApiError(403, 'Forbidden', 'volumeattributesclasses is forbidden'));
    const forbidden = await collectSnapshot(c);
    // Unknown, not empty: a class pvx may not see is not reported missing.
    expect(forbidden.snapshot.volumeAttributesClasses).toBeUndefined();
    expect(forbidden.unreliableRules).toEqual(['modify-stuck']);
  });

  it('names the rules a forbidden kind makes unreliable', async () => {
    const c = cluster();
    c.refusals.set('storageclasses', new ApiError(403, 'Forbidden', 'storageclasses is forbidden'));
    c.refusals.set('pods', new ApiError(403, 'Forbidden', 'pods is forbidden'));
    const { snapshot, warnings, unreliableRules } = await collectSnapshot(c, { namespace: 'db' });
    expect(snapshot.storageClasses).toEqual([]);
    expect(warnings).toEqual([
      'not allowed to list storageclasses.storage.k8s.io: skipping class-not-expandable, quota-headroom, driver-budget-exhausted',
      'not allowed to list pods in namespace db: skipping resize-stuck, waiting-for-pod',
    ]);
    expect(unreliableRules.sort()).toEqual(['class-not-expandable', 'driver-budget-exhausted', 'quota-headroom', 'resize-stuck', 'waiting-for-pod']);
  });

  it('skips the policy rules without namespace labels only when a cluster policy selects namespaces', async () => {
    const c = cluster();
    c.refusals.set('namespaces', new ApiError(403, 'Forbidden', 'namespaces is forbidden'));
    expect((await collectSnapshot(c)).unreliableRules).toEqual([]);
    expect((await collectSnapshot(c)).snapshot.namespaces).toBeUndefined();
    c.create(clusterVolumeExpansionPolicies, {
      metadata: { name: 'teams' },
      spec: { namespaceSelector: { matchLabels: { team: 'a' } }, triggers: { usedPercent: 80 } },
    } as KubernetesObject);
    expect((await collectSnapshot(c)).unreliableRules.sort()).toEqual(['nearly-full-uncovered', 'policy-overlap', 'quota-headroom']);
  });

  // The map of what each rule reads was kept here by hand, and drifted: policy-overlap (reads the
  // policies) and modify-stuck (reads the requests) were missing. It comes from the rule table now.
  it('skips every rule the rule table says reads a kind the caller may not list', async () => {
    const c = cluster();
    c.refusals.set('volumeexpansionpolicies', new ApiError(403, 'Forbidden', 'volumeexpansionpolicies.pvx.dev is forbidden'));
    c.refusals.set('volumeexpansionrequests', new ApiError(403, 'Forbidden', 'volumeexpansionrequests.pvx.dev is forbidden'));
    const { warnings, unreliableRules } = await collectSnapshot(c, { namespace: 'db' });
    expect(warnings.sort()).toEqual([
      'not allowed to list volumeexpansionpolicies.pvx.dev in namespace db: skipping nearly-full-uncovered, quota-headroom, policy-overlap',
      'not allowed to list volumeexpansionrequests.pvx.dev in namespace db: skipping driver-budget-exhausted, modify-stuck',
    ]);
    expect(unreliableRules.sort()).toEqual(['driver-budget-exhausted', 'modify-stuck', 'nearly-full-uncovered', 'policy-overlap', 'quota-headroom']);
  });

  it('fails, naming the list, when the claims cannot be read', async () => {
    const c = cluster();
    c.refusals.set('persistentvolumeclaims', new ApiError(403, 'Forbidden', 'persistentvolumeclaims is forbidden: User "u" cannot list'));
    const err = (await collectSnapshot(c, { namespace: 'db' }).catch((e: unknown) => e)) as Error;
    expect(err.message).toBe('listing persistentvolumeclaims in namespace db: persistentvolumeclaims is forbidden: User "u" cannot list');
    expect(err.cause).toBeInstanceOf(ApiError);
  });

  it('fails on an API error other than not served or forbidden', async () => {
    const c = cluster();
    c.refusals.set('persistentvolumes', new ApiError(500, 'InternalError', 'etcd timeout'));
    await expect(collectSnapshot(c)).rejects.toThrow('listing persistentvolumes: etcd timeout');
  });

  it("adds the usage samples, and the source's failures as warnings", async () => {
    const sample = { at: new Date('2026-11-29T12:00:00Z'), usedBytes: 1n, capacityBytes: 2n };
    const usage: UsageSource = {
      name: 'kubelet',
      collect: async () => ({ samples: new Map([['db/data', sample]]), errors: [{ target: 'node-2', message: 'no answer within 10000 ms' }] }),
    };
    const { snapshot, warnings } = await collectSnapshot(cluster(), { usage });
    expect(snapshot.usage?.get('db/data')).toEqual(sample);
    expect(warnings).toEqual(['usage from kubelet: node-2: no answer within 10000 ms']);
  });
});
