import type { V1PersistentVolumeClaim, V1StatefulSet } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { policyRequest, type EvaluatedPolicy } from './policy-pass.ts';
import { selectionLookups } from './selection.ts';
import { templateFollowRequests, type TemplateFollowInput } from './template-follow.ts';

const policy = (over: Partial<VolumeExpansionPolicy['spec']> = {}): VolumeExpansionPolicy => ({
  apiVersion: 'pvx.dev/v1alpha1',
  kind: 'VolumeExpansionPolicy',
  metadata: { name: 'grow', namespace: 'db', uid: 'p1' },
  spec: { triggers: { usedPercent: 80 }, statefulSetName: 'web', statefulSetTemplate: { update: true }, ...over },
});
const sts: V1StatefulSet = {
  metadata: { name: 'web', namespace: 'db', uid: 's1' },
  spec: {
    replicas: 2,
    serviceName: 'web',
    selector: {},
    template: {},
    volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '10Gi' } } } }],
  },
};
const claim = (capacity: string, over: Partial<V1PersistentVolumeClaim['status']> = {}, labels: Record<string, string> = {}): V1PersistentVolumeClaim => ({
  metadata: { namespace: 'db', labels },
  spec: { resources: { requests: { storage: capacity } } },
  status: { phase: 'Bound', capacity: { storage: capacity }, ...over },
});
const now = new Date('2026-11-29T12:00:00Z');

function input(sizes: Record<string, V1PersistentVolumeClaim | undefined>, over: Partial<TemplateFollowInput> = {}): TemplateFollowInput {
  const named = (n: string) => {
    const c = sizes[n];
    return c && { ...c, metadata: { ...c.metadata, name: n } };
  };
  return {
    policies: [policy()],
    lookups: selectionLookups([{ metadata: { name: 'db' } }], [sts]),
    claim: (_ns, n) => named(n),
    requests: [],
    now,
    ...over,
  };
}

describe('templateFollowRequests', () => {
  it('once every live replica’s claim has grown past the template, asks to carry the smallest of their sizes into it', () => {
    const [r, ...more] = templateFollowRequests(input({ 'data-web-0': claim('12Gi'), 'data-web-1': claim('15Gi') }));
    expect(more).toEqual([]);
    expect(r).toMatchObject({
      metadata: {
        namespace: 'db',
        labels: { 'pvx.dev/policy': 'grow' },
        ownerReferences: [{ kind: 'VolumeExpansionPolicy', name: 'grow', uid: 'p1', controller: true }],
      },
      spec: { target: { statefulSetName: 'web', volumeClaimTemplate: 'data' }, size: '12Gi', statefulSetTemplate: { update: true, evenIfManaged: false } },
    });
    // The same intent, the same name: a create retried meets its own.
    expect(templateFollowRequests(input({ 'data-web-0': claim('12Gi'), 'data-web-1': claim('15Gi') }))[0]?.metadata.name).toBe(r?.metadata.name);
  });

  it.each<[string, Record<string, V1PersistentVolumeClaim | undefined>, Partial<TemplateFollowInput>]>([
    ['a replica’s claim has not grown', { 'data-web-0': claim('12Gi'), 'data-web-1': claim('10Gi') }, {}],
    ['a replica’s claim is missing', { 'data-web-0': claim('12Gi') }, {}],
    [
      'a claim is being resized',
      { 'data-web-0': claim('12Gi'), 'data-web-1': claim('12Gi', { allocatedResourceStatuses: { storage: 'NodeResizePending' } }) },
      {},
    ],
    ['the policy does not ask', { 'data-web-0': claim('12Gi'), 'data-web-1': claim('12Gi') }, { policies: [policy({ statefulSetTemplate: undefined })] }],
    ['the policy only reports (DryRun)', { 'data-web-0': claim('12Gi'), 'data-web-1': claim('12Gi') }, { policies: [policy({ mode: 'DryRun' })] }],
    [
      'a request for the StatefulSet is unfinished',
      { 'data-web-0': claim('12Gi'), 'data-web-1': claim('12Gi') },
      {
        requests: [
          {
            metadata: { name: 'x', namespace: 'db' },
            spec: { target: { statefulSetName: 'web', volumeClaimTemplate: 'data' } },
            status: { phase: 'Expanding' },
          } as VolumeExpansionRequest,
        ],
      },
    ],
  ])('asks nothing when %s', (_name, sizes, over) => {
    expect(templateFollowRequests(input(sizes, over))).toEqual([]);
  });

  it('asks once: a request of that name made before (finished, or skipped) is not made again', () => {
    const sizes = { 'data-web-0': claim('12Gi'), 'data-web-1': claim('12Gi') };
    const [made] = templateFollowRequests(input(sizes));
    const finished = { ...made, status: { phase: 'Completed' as const, reason: 'TemplateNotUpdated' } } as VolumeExpansionRequest;
    expect(templateFollowRequests(input(sizes, { requests: [finished] }))).toEqual([]);
  });
});

// Review, 2026-12-04: a policy pvx could not read ("decides nothing", InvalidSpec) deleted and
// re-created a StatefulSet through its template request, and two policies over one StatefulSet made
// two template requests that both deleted it.
describe('template-follow obeys every rule other policy actions obey', () => {
  const grown = { 'data-web-0': claim('12Gi'), 'data-web-1': claim('12Gi') };
  const at = (p: VolumeExpansionPolicy, minutesAgo: number, name: string): VolumeExpansionPolicy => ({
    ...p,
    metadata: { ...p.metadata, name, uid: `uid-${name}`, creationTimestamp: new Date(now.getTime() - minutesAgo * 60_000) },
  });

  it.each<[string, VolumeExpansionPolicy]>([
    ['its windows cannot be read', policy({ windows: [{ schedule: 'every night', duration: '1h' }] })],
    ['a window names an unknown time zone', policy({ windows: [{ schedule: '0 2 * * *', duration: '1h', timeZone: 'Mars/Olympus' }] })],
    ['its step cannot be read', policy({ step: { minimum: 'lots' } })],
  ])('a policy that is not Ready (%s) asks nothing', (_name, p) => {
    expect(templateFollowRequests(input(grown, { policies: [p] }))).toEqual([]);
  });

  it('outside its maintenance windows it waits; inside one it asks', () => {
    const nightly = policy({ windows: [{ schedule: '0 2 * * *', duration: '1h' }] });
    expect(templateFollowRequests(input(grown, { policies: [nightly] }))).toEqual([]);
    expect(templateFollowRequests(input(grown, { policies: [nightly], now: new Date('2026-11-29T02:30:00Z') }))).toHaveLength(1);
  });

  it('of two policies over one StatefulSet, only the one that governs its claims asks', () => {
    const made = templateFollowRequests(input(grown, { policies: [at(policy(), 5, 'newer'), at(policy(), 60, 'older')] }));
    expect(made.map((r) => r.metadata.labels?.['pvx.dev/policy'])).toEqual(['older']);
  });

  it('a request made earlier in the same pass counts as busy: one request per StatefulSet', () => {
    const two: V1StatefulSet = {
      ...sts,
      spec: {
        ...(sts.spec as NonNullable<V1StatefulSet['spec']>),
        volumeClaimTemplates: [
          { metadata: { name: 'data' }, spec: { resources: { requests: { storage: '10Gi' } } } },
          { metadata: { name: 'logs' }, spec: { resources: { requests: { storage: '10Gi' } } } },
        ],
      },
    };
    const sizes = {
      'data-web-0': claim('12Gi', {}, { tier: 'data' }),
      'data-web-1': claim('12Gi', {}, { tier: 'data' }),
      'logs-web-0': claim('12Gi', {}, { tier: 'logs' }),
      'logs-web-1': claim('12Gi', {}, { tier: 'logs' }),
    };
    const byTier = (tier: string) => at(policy({ selector: { matchLabels: { tier } } }), tier === 'data' ? 60 : 30, tier);
    const made = templateFollowRequests(
      input(sizes, { policies: [byTier('data'), byTier('logs')], lookups: selectionLookups([{ metadata: { name: 'db' } }], [two]) }),
    );
    expect(made).toHaveLength(1);
  });
});

describe('the policy’s opt-in for offline node expansion', () => {
  it('carries into the requests it creates, and only when asked', () => {
    const evaluated = (spec: EvaluatedPolicy['spec']): EvaluatedPolicy => ({
      ref: { kind: 'VolumeExpansionPolicy', namespace: 'db', name: 'grow' },
      apiVersion: 'pvx.dev/v1alpha1',
      uid: 'p1',
      spec,
    });
    const pvc: V1PersistentVolumeClaim = { metadata: { name: 'data', namespace: 'db', uid: 'c1' } };
    const d = {
      kind: 'expand' as const,
      fromBytes: 10n * 1024n ** 3n,
      targetBytes: 12n * 1024n ** 3n,
      trigger: 'UsedRatio' as const,
      message: 'y',
      detail: 'z',
    };
    expect(policyRequest(evaluated({ triggers: { usedPercent: 80 }, offlineNodeExpansion: 'EvictPod' }), 'Auto', pvc, d, new Date()).spec).toEqual({
      target: { pvcName: 'data' },
      size: '12Gi',
      offlineNodeExpansion: 'EvictPod',
    });
    expect(policyRequest(evaluated({ triggers: { usedPercent: 80 } }), 'Auto', pvc, d, new Date()).spec).toEqual({
      target: { pvcName: 'data' },
      size: '12Gi',
    });
  });
});
