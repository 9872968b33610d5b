// The invariants must be able to fail: each row writes a short history into the fake API server
// and names the violations it must raise (none for the lawful ones).
import type { V1Lease, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { pvcAnnotations, requestAnnotations } from '../../src/crds/keys.ts';
import type { VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import { FakeKubeClient } from '../../src/k8s/testing/fake-client.ts';
import { leaseType, resources, volumeExpansionRequests } from '../../src/k8s/resources.ts';
import { Invariants } from './invariants.ts';
import { Trace } from './trace.ts';
import { claim, storageClass } from './world.ts';

interface Harness {
  api: FakeKubeClient;
  inv: Invariants;
  tick(ms: number): void;
  now(): number;
}

function harness(): Harness {
  let t = 0;
  const api = new FakeKubeClient();
  const inv = new Invariants(api, new Trace(() => t), () => t);
  api.observeWrites((w) => inv.onWrite(w));
  inv.pvxIdentities.add('pvx-0');
  inv.pvxIdentities.add('pvx-1');
  api.create(resources.storageClasses, storageClass('fast'));
  api.create(resources.persistentVolumeClaims, claim('data', 'fast', 10));
  api.create(volumeExpansionRequests, {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: { name: 'grow', namespace: 'db' },
    spec: { target: { pvcName: 'data' }, size: '20Gi' },
  } as VolumeExpansionRequest);
  return { api, inv, tick: (ms) => (t += ms), now: () => t };
}

const requestUID = (h: Harness) => h.api.get<VolumeExpansionRequest>(volumeExpansionRequests, 'db', 'grow')?.metadata.uid as string;

function hold(h: Harness, identity: string): void {
  const lease = h.api.get<V1Lease>(leaseType, 'pvx-system', 'pvx-leader');
  const spec = { holderIdentity: identity, leaseDurationSeconds: 15 };
  h.api.asActor(identity, () =>
    lease
      ? h.api.update(leaseType, { ...lease, metadata: { ...lease.metadata, resourceVersion: undefined }, spec })
      : h.api.create(leaseType, { metadata: { name: 'pvx-leader', namespace: 'pvx-system' }, spec }),
  );
}

/**
 * pvx's patch of the claim for request grow: a size, a VolumeAttributesClass or both — the request
 * asking for that size, and its plan recorded first, as pvx does.
 */
async function raise(h: Harness, identity: string, storage: string | undefined, volumeAttributesClassName?: string): Promise<void> {
  const pvc = h.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
  if (storage) {
    const r = h.api.get<VolumeExpansionRequest>(volumeExpansionRequests, 'db', 'grow') as VolumeExpansionRequest;
    const { increment: _i, ...spec } = r.spec;
    asks(h, { ...spec, size: storage });
    await h.api.patchRequestStatus(
      'db',
      'grow',
      { acceptedPlan: { pvcUID: pvc.metadata?.uid as string, fromCapacity: pvc.status?.capacity?.storage as string, targetSize: storage } },
      '',
    );
  }
  await h.api.asActor(identity, () =>
    h.api.patchPvcSize('db', 'data', {
      resourceVersion: pvc.metadata?.resourceVersion as string,
      uid: pvc.metadata?.uid as string,
      ...(storage ? { storage } : {}),
      ...(volumeAttributesClassName ? { volumeAttributesClassName } : {}),
      annotations: { [pvcAnnotations.request]: 'grow', [pvcAnnotations.requestUID]: requestUID(h) },
    }),
  );
  h.inv.onWriteLanded(identity, 'patchPvcSize', 'db/data', h.now());
}

/** Request grow asks for this spec (its size and class) instead. */
function asks(h: Harness, spec: Partial<VolumeExpansionRequest['spec']>): void {
  const r = h.api.get<VolumeExpansionRequest>(volumeExpansionRequests, 'db', 'grow') as VolumeExpansionRequest;
  h.api.update(volumeExpansionRequests, { ...r, metadata: { ...r.metadata, resourceVersion: undefined }, spec: { target: r.spec.target, ...spec } });
}

function reconcile(h: Harness, controller: string, times: number, everyMs: number, keys = 1): void {
  for (let i = 0; i < times; i++) {
    h.inv.onReconcile('pvx-0', controller, `db/grow-${i % keys}`);
    h.tick(everyMs);
  }
}

/** pvx creates a policy's request for "data", whose usage model fills at `rate` bytes a second. */
async function policyRequest(h: Harness, trigger: string, rate: number): Promise<void> {
  const uid = h.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data')?.metadata?.uid;
  h.inv.fillRate = (claimUID) => (claimUID === uid ? rate : undefined);
  await h.api.asActor('pvx-0', () =>
    h.api.createRequest('db', {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow-data-1', namespace: 'db', labels: { 'pvx.dev/policy': 'grow' }, annotations: { [requestAnnotations.trigger]: trigger } },
      spec: { target: { pvcName: 'data' }, size: '12Gi' },
    } as VolumeExpansionRequest),
  );
}

const data = (h: Harness) => h.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;

/** Recovery (KEP-1790): pvx lowers the claim for request grow, whose target is out of reach (or, told so, lowers it though the request is not recovering). */
async function lowered(h: Harness, storage: string, opts = { recovering: true }): Promise<void> {
  if (opts.recovering) {
    asks(h, { size: '20Gi', recovery: 'Auto' });
    await h.api.patchRequestStatus('db', 'grow', { phase: 'Recovering', reason: 'Lowering' }, '');
  }
  const pvc = data(h);
  await h.api.asActor('pvx-0', () =>
    h.api.patchPvcSize('db', 'data', {
      resourceVersion: pvc.metadata?.resourceVersion as string,
      uid: pvc.metadata?.uid as string,
      storage,
      annotations: { [pvcAnnotations.requestUID]: requestUID(h) },
    }),
  );
}

/** Someone other than pvx asks for the claim at this size. */
async function askedByHand(h: Harness, storage: string): Promise<void> {
  const pvc = data(h);
  await h.api.asActor('kubectl', () =>
    h.api.patchPvcSize('db', 'data', { resourceVersion: pvc.metadata?.resourceVersion as string, uid: pvc.metadata?.uid as string, storage, annotations: {} }),
  );
}

describe('Invariants', () => {
  it.each<[string, (h: Harness) => Promise<void>, string[]]>([
    ['one raise by the leader', async (h) => (hold(h, 'pvx-0'), h.tick(1000), raise(h, 'pvx-0', '20Gi')), []],
    // Recovery (KEP-1790) lowers only what pvx set, above the capacity, while its request recovers.
    ['recovery lowers the size pvx set to one above the capacity', async (h) => (hold(h, 'pvx-0'), await raise(h, 'pvx-0', '20Gi'), lowered(h, '11Gi')), []],
    [
      'a lowering while its request is not recovering',
      async (h) => (hold(h, 'pvx-0'), await raise(h, 'pvx-0', '20Gi'), lowered(h, '11Gi', { recovering: false })),
      ['size-as-asked'],
    ],
    [
      // Seed 10285: a person asked for 62Gi after the request's raise; recovery lowered their size.
      'recovery lowers a size someone else asked for after pvx set it',
      async (h) => (hold(h, 'pvx-0'), await raise(h, 'pvx-0', '20Gi'), await askedByHand(h, '25Gi'), lowered(h, '11Gi')),
      ['size-as-asked'],
    ],
    [
      'two raises for one request',
      async (h) => (hold(h, 'pvx-0'), await raise(h, 'pvx-0', '15Gi'), raise(h, 'pvx-0', '20Gi')),
      ['one-raise-per-ask', 'no-raise-over-a-resize'],
    ],
    ['a raise above the class maximum pvx knows (60Gi)', async (h) => (hold(h, 'pvx-0'), raise(h, 'pvx-0', '70Gi')), ['above-class-maximum']],
    ['a raise by a process that does not hold the lease', async (h) => (hold(h, 'pvx-0'), raise(h, 'pvx-1', '20Gi')), ['only-the-leader-writes']],
    ['a raise past the renew deadline', async (h) => (hold(h, 'pvx-0'), h.tick(10_000), raise(h, 'pvx-0', '20Gi')), ['only-the-leader-writes']],
    [
      'a raise after the request failed',
      async (h) => {
        hold(h, 'pvx-0');
        await h.api.asActor('pvx-0', () => h.api.patchRequestStatus('db', 'grow', { phase: 'Failed', reason: 'DeadlineExceeded' }, ''));
        await raise(h, 'pvx-0', '20Gi');
      },
      ['patch-after-finish'],
    ],
    [
      'a finished request that changes phase again',
      async (h) => {
        await h.api.patchRequestStatus('db', 'grow', { phase: 'Rejected', reason: 'NotLarger' }, '');
        await h.api.patchRequestStatus('db', 'grow', { phase: 'Pending', reason: 'AnotherRequestActive' }, '');
      },
      ['terminal-is-final'],
    ],
    [
      'Completed while the claim never grew',
      async (h) =>
        void (await h.api.patchRequestStatus(
          'db',
          'grow',
          { phase: 'Completed', targetSize: '20Gi', pvcUID: h.api.get(resources.persistentVolumeClaims, 'db', 'data')?.metadata?.uid },
          '',
        )),
      ['completed-means-grown'],
    ],
    [
      'a size and a class in one patch',
      async (h) => (hold(h, 'pvx-0'), asks(h, { size: '20Gi', volumeAttributesClassName: 'gold' }), raise(h, 'pvx-0', '20Gi', 'gold')),
      [],
    ],
    [
      'a raise without the class its request sets',
      async (h) => (hold(h, 'pvx-0'), asks(h, { size: '20Gi', volumeAttributesClassName: 'gold' }), raise(h, 'pvx-0', '20Gi')),
      ['size-and-class-in-one-patch'],
    ],
    [
      'a class set without the size its request asks for',
      async (h) => (hold(h, 'pvx-0'), asks(h, { size: '20Gi', volumeAttributesClassName: 'gold' }), raise(h, 'pvx-0', undefined, 'gold')),
      ['size-and-class-in-one-patch'],
    ],
    [
      'a class its request does not name',
      async (h) => (hold(h, 'pvx-0'), asks(h, { volumeAttributesClassName: 'gold' }), raise(h, 'pvx-0', undefined, 'silver')),
      ['class-as-requested'],
    ],
    [
      'two class changes for one request',
      async (h) => {
        hold(h, 'pvx-0');
        asks(h, { volumeAttributesClassName: 'gold' });
        await raise(h, 'pvx-0', undefined, 'gold');
        const pvc = h.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'data') as V1PersistentVolumeClaim;
        h.api.update(resources.persistentVolumeClaims, {
          ...pvc,
          metadata: { ...pvc.metadata, resourceVersion: undefined },
          spec: { ...pvc.spec, volumeAttributesClassName: 'silver' },
        });
        await raise(h, 'pvx-0', undefined, 'gold');
      },
      ['one-class-change-per-request'],
    ],
    [
      'Completed while the class was never applied',
      async (h) => {
        asks(h, { volumeAttributesClassName: 'gold' });
        await h.api.patchRequestStatus(
          'db',
          'grow',
          { phase: 'Completed', pvcUID: h.api.get(resources.persistentVolumeClaims, 'db', 'data')?.metadata?.uid },
          '',
        );
      },
      ['completed-means-applied'],
    ],
    ['a busy instant: 5000 reconciles of many keys at once', async (h) => reconcile(h, 'expansion-request', 5000, 0, 100), []],
    ['a loop that never lets time pass: 5001 reconciles at one instant', async (h) => reconcile(h, 'expansion-request', 5001, 0, 100), ['time-passes']],
    ['5001 reconciles of many keys a millisecond apart', async (h) => reconcile(h, 'expansion-request', 5001, 1, 100), []],
    ['a hot loop on a request: 121 in ten minutes', async (h) => reconcile(h, 'expansion-request', 121, 1000), ['no-hot-loop']],
    ['a request looked at every 5 s: 120 in ten minutes', async (h) => reconcile(h, 'expansion-request', 120, 5000), []],
    ['a policy pass every second: 241 in ten minutes', async (h) => reconcile(h, 'expansion-policy', 241, 1000), ['no-hot-loop']],
    [
      'the same status written twice',
      async (h) =>
        void (
          await h.api.patchRequestStatus('db', 'grow', { phase: 'Pending', reason: 'QuotaExceeded' }, ''),
          await h.api.patchRequestStatus('db', 'grow', { phase: 'Pending', reason: 'QuotaExceeded' }, '')
        ),
      ['writes-change-something'],
    ],
    [
      'the accepted plan written again before a retried patch',
      async (h) =>
        void (
          await h.api.patchRequestStatus('db', 'grow', { phase: 'Expanding', reason: 'Accepted' }, ''),
          await h.api.patchRequestStatus('db', 'grow', { phase: 'Expanding', reason: 'Accepted' }, '')
        ),
      [],
    ],
    [
      'the same status written again after its answer was lost',
      async (h) =>
        void (
          await h.api.patchRequestStatus('db', 'grow', { phase: 'Pending', reason: 'QuotaExceeded' }, ''),
          h.inv.onAnswerLost('db/grow'),
          await h.api.patchRequestStatus('db', 'grow', { phase: 'Pending', reason: 'QuotaExceeded' }, '')
        ),
      [],
    ],
    ['a policy’s forecast request for a filling claim', async (h) => policyRequest(h, 'Forecast', 1000), []],
    ['a policy’s threshold request for a claim whose usage only spikes', async (h) => policyRequest(h, 'UsedRatio', 0), []],
    ['a policy’s forecast request for a claim whose usage only spikes', async (h) => policyRequest(h, 'Forecast', 0), ['no-forecast-on-a-spike']],
  ])('%s', async (_name, history, rules) => {
    const h = harness();
    await history(h);
    h.inv.checkStep();
    expect(h.inv.violations.map((v) => v.rule)).toEqual(rules);
    // The simulation stops a run at the instant it is stuck, and only then.
    expect(h.inv.stuck).toBe(rules.includes('time-passes'));
  });

  describe('ledger-counts-outside-changes (a claim of a driver with a budget: EBS)', () => {
    const vol = (h: Harness) => h.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, 'db', 'vol') as V1PersistentVolumeClaim;
    /** Someone raises the claim with kubectl. */
    const userRaise = (h: Harness, storage: string) => {
      const pvc = vol(h);
      h.api.asActor('user', () =>
        h.api.update(resources.persistentVolumeClaims, {
          ...pvc,
          metadata: { ...pvc.metadata, resourceVersion: undefined },
          spec: { ...pvc.spec, resources: { requests: { storage } } },
        }),
      );
    };
    /** The resizer and the kubelet finish the claim's resize. */
    const grown = (h: Harness) => {
      const pvc = vol(h);
      h.api.update(resources.persistentVolumeClaims, {
        ...pvc,
        metadata: { ...pvc.metadata, resourceVersion: undefined },
        status: { ...pvc.status, capacity: { storage: pvc.spec?.resources?.requests?.storage as string } },
      });
    };
    /** pvx raises the claim, writing this ledger in the same patch. */
    const pvxRaise = (h: Harness, storage: string, ledger: object) =>
      h.api.asActor('pvx-0', () =>
        h.api.patchPvcSize('db', 'vol', {
          resourceVersion: vol(h).metadata?.resourceVersion as string,
          uid: vol(h).metadata?.uid as string,
          storage,
          annotations: { [pvcAnnotations.modifications]: JSON.stringify(ledger) },
        }),
      );
    const byKubectl = { at: '2026-01-05T09:01:40.000Z', by: 'observed:kubectl-patch', size: ['10Gi', '12Gi'] };
    const byPvx = (from: string) => ({ at: '2026-01-05T09:01:53.000Z', by: 'ver/grow', size: [from, '24Gi'] });

    it.each<[string, (h: Harness) => Promise<void> | void, string[]]>([
      ["a raise still under way that the claim's ledger does not record", (h) => userRaise(h, '12Gi'), ['ledger-counts-outside-changes']],
      ['a raise that completed before pvx wrote the claim: nothing showed it', (h) => (userRaise(h, '12Gi'), grown(h)), []],
      // Seed 1663: the claim asks for more than it has, but for pvx's raise, not the other.
      [
        'a raise that completed before pvx wrote the claim, then pvx raised it further',
        async (h) => (userRaise(h, '12Gi'), grown(h), await pvxRaise(h, '24Gi', { spec: { size: '24Gi' }, mods: [byPvx('12Gi')] })),
        [],
      ],
      [
        'pvx raised the claim while a raise was under way, and its ledger left that out',
        async (h) => (userRaise(h, '12Gi'), await pvxRaise(h, '24Gi', { spec: { size: '24Gi' }, mods: [byPvx('12Gi')] }), grown(h)),
        ['ledger-counts-outside-changes'],
      ],
      [
        'pvx raised the claim while a raise was under way, recording both',
        async (h) => (userRaise(h, '12Gi'), await pvxRaise(h, '24Gi', { spec: { size: '24Gi' }, mods: [byKubectl, byPvx('12Gi')] }), grown(h)),
        [],
      ],
    ])('%s', async (_name, history, rules) => {
      const h = harness();
      h.api.create(resources.storageClasses, storageClass('ebs'));
      h.api.create(resources.persistentVolumeClaims, claim('vol', 'ebs', 10));
      await history(h);
      h.inv.checkSettled(0, 0);
      expect(h.inv.violations.map((v) => v.rule).filter((r) => r === 'ledger-counts-outside-changes')).toEqual(rules);
    });
  });

  describe('one-raise-per-breach (a policy asks again only once the last raise settled)', () => {
    /** The resizer finishes the claim's resize to what it asks now. */
    const grown = (h: Harness) => {
      const pvc = data(h);
      h.api.update(resources.persistentVolumeClaims, {
        ...pvc,
        metadata: { ...pvc.metadata, resourceVersion: undefined },
        status: { ...pvc.status, capacity: { storage: pvc.spec?.resources?.requests?.storage as string } },
      });
    };
    /** A policy's request asks for the claim, and pvx raises it to 12Gi for it (after what happens between, if anything). */
    const policyRaise = async (h: Harness, between?: (h: Harness) => Promise<void>) => {
      await policyRequest(h, 'UsedRatio', 0);
      await between?.(h);
      const pvc = data(h);
      const uid = h.api.get<VolumeExpansionRequest>(volumeExpansionRequests, 'db', 'grow-data-1')?.metadata.uid as string;
      await h.api.patchRequestStatus(
        'db',
        'grow-data-1',
        { acceptedPlan: { pvcUID: pvc.metadata?.uid as string, fromCapacity: pvc.status?.capacity?.storage as string, targetSize: '12Gi' } },
        '',
      );
      await h.api.asActor('pvx-0', () =>
        h.api.patchPvcSize('db', 'data', {
          resourceVersion: pvc.metadata?.resourceVersion as string,
          uid: pvc.metadata?.uid as string,
          storage: '12Gi',
          annotations: { [pvcAnnotations.requestUID]: uid },
        }),
      );
    };

    it.each<[string, (h: Harness) => Promise<void>, string[]]>([
      ['asked while an earlier raise is in flight', async (h) => (await raise(h, 'pvx-0', '11Gi'), h.tick(1000), policyRaise(h)), ['one-raise-per-breach']],
      ['asked once the earlier raise completed', async (h) => (await raise(h, 'pvx-0', '11Gi'), grown(h), h.tick(1000), policyRaise(h)), []],
      // Seed 100498: a raise out of reach, lowered by recovery, settles when the claim has the lowered size.
      [
        'asked once recovery lowered an earlier raise and the claim reached the lowered size',
        async (h) => (await raise(h, 'pvx-0', '20Gi'), await lowered(h, '11Gi'), grown(h), h.tick(1000), policyRaise(h)),
        [],
      ],
      // Seed 2020: the claim grown by someone else after the policy asked; the policy's raise answers a breach already answered.
      [
        'carried out on a claim a person grew since the policy asked',
        async (h) => (
          h.tick(1000),
          policyRaise(h, async (h) => {
            const pvc = data(h);
            await h.api.asActor('user', () =>
              h.api.patchPvcSize('db', 'data', {
                resourceVersion: pvc.metadata?.resourceVersion as string,
                uid: pvc.metadata?.uid as string,
                storage: '11Gi',
                annotations: {},
              }),
            );
            grown(h);
          })
        ),
        ['one-raise-per-breach'],
      ],
      ['carried out on the claim as the policy asked about it', async (h) => (h.tick(1000), policyRaise(h)), []],
      [
        'asked while the lowered size is not reached yet',
        async (h) => (await raise(h, 'pvx-0', '20Gi'), await lowered(h, '11Gi'), h.tick(1000), policyRaise(h)),
        ['one-raise-per-breach'],
      ],
    ])('%s', async (_name, history, rules) => {
      const h = harness();
      hold(h, 'pvx-0');
      await history(h);
      expect(h.inv.violations.map((v) => v.rule).filter((r) => r === 'one-raise-per-breach')).toEqual(rules);
    });
  });

  it('calls a request unsettled until it finishes or waits for a person', async () => {
    const h = harness();
    expect(h.inv.unsettled().map((r) => r.metadata.name)).toEqual(['grow']);
    await h.api.patchRequestStatus('db', 'grow', { phase: 'Pending', reason: 'AwaitingApproval' }, '');
    expect(h.inv.unsettled()).toEqual([]);
  });
});
