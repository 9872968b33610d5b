// The template step of a StatefulSet request, case by case: a request whose claims have all grown,
// the StatefulSet as the cache (and the API server) have it, the clock — one decision out.
import type { V1StatefulSet } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { RequestStatus, TemplateStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { RequestDecision } from './decision.ts';
import { decideRequest, type ClaimContext } from './decide.ts';
import { decideTemplate, notSteady, otherManager, recordOf, recreated, type TemplateInput } from './template.ts';

const now = new Date('2026-11-29T12:00:00.000Z');

function sts(
  over: {
    uid?: string;
    rv?: string;
    size?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    owner?: boolean;
    status?: V1StatefulSet['status'];
    deleting?: boolean;
    strategy?: string;
  } = {},
): V1StatefulSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: {
      name: 'web',
      namespace: 'db',
      uid: over.uid ?? 'sts-1',
      resourceVersion: over.rv ?? '21',
      generation: 3,
      creationTimestamp: new Date('2026-11-01T00:00:00Z'),
      managedFields: [{ manager: 'kubectl', operation: 'Update' }],
      ...(over.labels ? { labels: over.labels } : {}),
      ...(over.annotations ? { annotations: over.annotations } : {}),
      ...(over.owner ? { ownerReferences: [{ apiVersion: 'db.example/v1', kind: 'Cluster', name: 'main', uid: 'c1', controller: true }] } : {}),
      ...(over.deleting ? { deletionTimestamp: now, finalizers: ['orphan'] } : {}),
    },
    spec: {
      replicas: 2,
      serviceName: 'web',
      selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
      ...(over.strategy ? { updateStrategy: { type: over.strategy } } : {}),
      volumeClaimTemplates: [
        { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: over.size ?? '1Gi' } } } },
      ],
    },
    status: over.status ?? { observedGeneration: 3, replicas: 2, currentRevision: 'web-abc', updateRevision: 'web-abc' },
  };
}

const claimsDone: RequestStatus & { message: string } = {
  targets: [
    { pvcName: 'data-web-0', phase: 'Completed', targetSize: '2Gi' },
    { pvcName: 'data-web-1', phase: 'Completed', targetSize: '2Gi' },
  ],
  timeline: { acceptedAt: '2026-11-29T11:50:00.000Z' },
  message: '2/2 PVCs completed',
};

function request(
  tpl?: TemplateStatus,
  over: { evenIfManaged?: boolean; deleting?: boolean; increment?: string; finalizers?: string[] } = {},
): VolumeExpansionRequest {
  return {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: {
      name: 'grow',
      namespace: 'db',
      uid: 'req-1',
      ...(over.deleting ? { deletionTimestamp: now } : {}),
      ...(over.finalizers ? { finalizers: over.finalizers } : {}),
    },
    spec: {
      target: { statefulSetName: 'web', volumeClaimTemplate: 'data' },
      ...(over.increment ? { increment: over.increment } : { size: '2Gi' }),
      statefulSetTemplate: { update: true, evenIfManaged: over.evenIfManaged ?? false },
    },
    status: { ...claimsDone, phase: tpl ? 'UpdatingTemplate' : 'NodeExpansionPending', ...(tpl ? { statefulSetTemplate: tpl } : {}) },
  };
}

const decide = (req: VolumeExpansionRequest, cached: V1StatefulSet | undefined, extra: Partial<TemplateInput> = {}): RequestDecision =>
  decideTemplate({ request: req, statefulSet: cached, now, claimsDone, ...extra });

/** The decision a step leads to once its read/write answered. */
function follow(d: RequestDecision, answer: V1StatefulSet | undefined = sts()): RequestDecision {
  if (d.kind === 'readStatefulSet') return d.onRead(answer);
  if (d.kind === 'deleteStatefulSet') return d.onDeleted();
  if (d.kind === 'createStatefulSet') return d.onCreated(answer);
  return d;
}

const recorded = (over: Partial<TemplateStatus> = {}): TemplateStatus => ({
  statefulSetName: 'web',
  volumeClaimTemplate: 'data',
  fromSize: '1Gi',
  toSize: '2Gi',
  statefulSetUID: 'sts-1',
  resourceVersion: '21',
  record: recordOf(sts()),
  phase: 'Recorded',
  reason: 'Recorded',
  ...over,
});

describe('before anything is recorded', () => {
  it('holds the finalizer, reads the StatefulSet fresh, records it whole and deletes it with propagation Orphan on exactly that version', () => {
    const read = decide(request(), sts());
    expect(read).toMatchObject({ kind: 'readStatefulSet', name: 'web', addFinalizer: 'pvx.dev/statefulset-record' });
    const del = follow(read, sts({ rv: '22' }));
    expect(del.kind).toBe('deleteStatefulSet');
    if (del.kind !== 'deleteStatefulSet') return;
    expect(del.preconditions).toEqual({ uid: 'sts-1', resourceVersion: '22' });
    expect(del.record ?? {}).toMatchObject({
      phase: 'UpdatingTemplate',
      reason: 'Recorded',
      statefulSetTemplate: { phase: 'Recorded', statefulSetUID: 'sts-1', resourceVersion: '22', fromSize: '1Gi', toSize: '2Gi' },
    });
    const rec = del.record?.statefulSetTemplate?.record as V1StatefulSet;
    expect(rec.metadata).toEqual({ name: 'web', namespace: 'db' });
    expect(rec.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage).toBe('1Gi');
    expect(follow(del)).toMatchObject({ kind: 'status', status: { phase: 'UpdatingTemplate', statefulSetTemplate: { phase: 'Deleted' } } });
  });

  it('does not add the finalizer twice', () => {
    expect(decide(request(undefined, { finalizers: ['pvx.dev/statefulset-record'] }), sts())).not.toHaveProperty('addFinalizer');
  });

  it('applies an increment to the template’s own size', () => {
    const d = follow(decide(request(undefined, { increment: '50%' }), sts({ size: '4Gi' })), sts({ size: '4Gi' }));
    expect(d).toMatchObject({ kind: 'deleteStatefulSet', record: { statefulSetTemplate: { fromSize: '4Gi', toSize: '6Gi' } } });
  });

  it.each<[string, V1StatefulSet | undefined, Partial<{ evenIfManaged: boolean }>, string, RegExp]>([
    [
      'owned by another controller',
      sts({ owner: true }),
      {},
      'OwnedByController',
      /owned by Cluster main \(an ownerReference with controller: true\): pvx leaves it as it is/,
    ],
    [
      'managed by Argo CD',
      sts({ annotations: { 'argocd.argoproj.io/tracking-id': 'app:apps/StatefulSet:db/web' } }),
      {},
      'ManagedByGitOps',
      /managed by Argo CD \(annotation argocd\.argoproj\.io\/tracking-id\)/,
    ],
    ['managed by Flux', sts({ labels: { 'kustomize.toolkit.fluxcd.io/name': 'apps' } }), {}, 'ManagedByGitOps', /managed by Flux/],
    [
      'managed by Helm',
      sts({ labels: { 'app.kubernetes.io/managed-by': 'Helm' } }),
      {},
      'ManagedByGitOps',
      /managed by Helm \(label app\.kubernetes\.io\/managed-by\)/,
    ],
    ['gone', undefined, {}, 'StatefulSetNotFound', /does not exist any more/],
    ['without the template any more', { ...sts(), spec: { ...sts().spec!, volumeClaimTemplates: [] } }, {}, 'TemplateNotFound', /no volumeClaimTemplate data/],
  ])('leaves a StatefulSet %s as it is, saying why, and ends Completed (its claims grew)', (_name, cached, over, reason, message) => {
    const d = decide(request(undefined, over), cached);
    expect(d).toMatchObject({
      kind: 'finish',
      result: 'completed',
      status: { phase: 'Completed', reason: 'TemplateNotUpdated', statefulSetTemplate: { phase: 'Skipped', reason, record: null } },
    });
    expect(d.kind === 'finish' && d.status.statefulSetTemplate?.message).toMatch(message);
  });

  it('touches a managed one when the request says evenIfManaged, keeping its owner', () => {
    const owned = sts({ owner: true });
    const d = follow(decide(request(undefined, { evenIfManaged: true }), owned), owned);
    expect(d.kind).toBe('deleteStatefulSet');
    const rec = d.kind === 'deleteStatefulSet' ? (d.record?.statefulSetTemplate?.record as V1StatefulSet) : undefined;
    expect(rec?.metadata?.ownerReferences).toEqual([{ apiVersion: 'db.example/v1', kind: 'Cluster', name: 'main', uid: 'c1', controller: true }]);
  });

  it('checks again what the API server answers: a StatefulSet taken over meanwhile is left alone, nothing written', () => {
    const d = follow(decide(request(), sts()), sts({ labels: { 'helm.toolkit.fluxcd.io/name': 'web' } }));
    expect(d).toMatchObject({ kind: 'finish', status: { statefulSetTemplate: { phase: 'Skipped', reason: 'ManagedByGitOps' } } });
  });

  it('nothing to do for a template already at the size: Completed, TemplateUpdated', () => {
    expect(decide(request(), sts({ size: '2Gi' }))).toMatchObject({
      kind: 'finish',
      status: { phase: 'Completed', reason: 'Completed', statefulSetTemplate: { phase: 'Updated', reason: 'AlreadyAtSize' } },
    });
  });

  it.each<[string, V1StatefulSet['status'], string | undefined]>([
    ['a rolling update under way', { replicas: 2, observedGeneration: 3, currentRevision: 'web-abc', updateRevision: 'web-def' }, undefined],
    ['a generation not yet observed', { replicas: 2, observedGeneration: 2, currentRevision: 'web-abc', updateRevision: 'web-abc' }, undefined],
    [
      'revisions apart, but OnDelete (pods roll only when deleted)',
      { replicas: 2, observedGeneration: 3, currentRevision: 'web-abc', updateRevision: 'web-def' },
      'OnDelete',
    ],
  ])('%s', (name, status, strategy) => {
    const s = sts({ status, ...(strategy ? { strategy } : {}) });
    const d = decide(request(), s);
    if (strategy) expect(d.kind).toBe('readStatefulSet');
    else expect(d, name).toMatchObject({ kind: 'status', status: { phase: 'UpdatingTemplate', reason: 'StatefulSetNotSteady' } });
  });

  it('past the deadline, before anything was touched: left as it is', () => {
    expect(decide(request(), sts(), { deadline: new Date(now.getTime() - 1) })).toMatchObject({
      kind: 'finish',
      status: { statefulSetTemplate: { phase: 'Skipped', reason: 'DeadlineExceeded' } },
    });
  });

  it('a request being deleted touches nothing', () => {
    expect(decide(request(undefined, { deleting: true }), sts())).toMatchObject({
      kind: 'finish',
      status: { statefulSetTemplate: { phase: 'Skipped', reason: 'RequestDeleted' } },
    });
  });

  it('a refusal of the API server (no opt-in RBAC) ends it with what the admins grant, nothing touched', () => {
    const read = decide(request(), sts());
    const d = read.kind === 'readStatefulSet' ? read.onRefused(403, 'statefulsets.apps "web" is forbidden') : read;
    expect(d).toMatchObject({ kind: 'finish', status: { statefulSetTemplate: { phase: 'Skipped', reason: 'Forbidden' } } });
    expect(d.kind === 'finish' && d.status.statefulSetTemplate?.message).toMatch(/statefulSetTemplates\.enabled/);
  });
});

describe('once recorded: never lost', () => {
  it('deletes again a StatefulSet recorded but not deleted yet (pvx stopped before its delete), on the record the status holds (no second write of it)', () => {
    const d = decide(request(recorded()), sts());
    expect(d).toMatchObject({ kind: 'deleteStatefulSet', preconditions: { uid: 'sts-1', resourceVersion: '21' } });
    expect(d).not.toHaveProperty('record');
  });

  it('records again a StatefulSet that changed after it was recorded (nothing was deleted)', () => {
    expect(decide(request(recorded()), sts({ rv: '30' }))).toMatchObject({ kind: 'readStatefulSet' });
  });

  it('waits while the garbage collector orphans the pods of the StatefulSet it deleted, as the API server says, not the cache', () => {
    // The cache shows it deleting: that may be a watch that lost its DELETED event (seed 51084).
    const d = decide(request(recorded()), sts({ deleting: true }));
    expect(d.kind).toBe('readStatefulSet');
    if (d.kind !== 'readStatefulSet') return;
    expect(d.onRead(sts({ deleting: true }))).toMatchObject({
      kind: 'status',
      status: { phase: 'UpdatingTemplate', statefulSetTemplate: { phase: 'Deleted' } },
      requeueAfterMs: 5000,
    });
    // Gone on the API server: created again from the record at once.
    expect(d.onRead(undefined).kind).toBe('createStatefulSet');
  });

  it.each([
    ['Recorded (pvx stopped between the delete and its status write)', 'Recorded'],
    ['Deleted (pvx stopped between the status write and the create)', 'Deleted'],
  ] as const)('creates it again from the record once it is gone: %s', (_name, phase) => {
    const d = decide(request(recorded({ phase })), undefined);
    expect(d.kind).toBe('createStatefulSet');
    if (d.kind !== 'createStatefulSet') return;
    expect(d.statefulSet.metadata).toEqual({
      name: 'web',
      namespace: 'db',
      annotations: { 'pvx.dev/template-request': 'grow', 'pvx.dev/template-request-uid': 'req-1' },
    });
    expect(d.statefulSet.spec?.volumeClaimTemplates?.[0]?.spec).toEqual({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '2Gi' } } });
    expect(d.statefulSet.spec?.template).toEqual(sts().spec?.template);
    const end = d.onCreated(sts({ uid: 'sts-2', size: '2Gi' }));
    expect(end).toMatchObject({
      kind: 'finish',
      result: 'completed',
      status: {
        phase: 'Completed',
        reason: 'Completed',
        statefulSetTemplate: { phase: 'Updated', reason: 'Recreated', recreatedUID: 'sts-2', record: null },
        timeline: { templateUpdatedAt: now.toISOString() },
      },
    });
  });

  it('whatever the deadline, or the request being deleted: a deleted StatefulSet is created again', () => {
    expect(decide(request(recorded({ phase: 'Deleted' }), { deleting: true }), undefined, { deadline: new Date(now.getTime() - 3_600_000) }).kind).toBe(
      'createStatefulSet',
    );
  });

  it('keeps the record and tries again when the API server refuses the create', () => {
    const d = decide(request(recorded({ phase: 'Deleted' })), undefined);
    const refused = d.kind === 'createStatefulSet' ? d.onRefused(403, 'forbidden') : d;
    expect(refused).toMatchObject({
      kind: 'status',
      status: { phase: 'UpdatingTemplate', statefulSetTemplate: { phase: 'Deleted', reason: 'CreateRefused' } },
      requeueAfterMs: 30_000,
    });
    expect(refused.kind === 'status' && refused.status.statefulSetTemplate?.record).toBeTruthy();
  });

  it.each<[string, V1StatefulSet, Partial<TemplateStatus>]>([
    [
      'its own (the create’s answer was lost): its annotations name the request',
      sts({ uid: 'sts-2', annotations: { 'pvx.dev/template-request-uid': 'req-1' } }),
      { phase: 'Updated', reason: 'Recreated', recreatedUID: 'sts-2' },
    ],
    ['someone else’s, at the new size', sts({ uid: 'sts-3', size: '2Gi' }), { phase: 'Updated', reason: 'RecreatedElsewhere' }],
    ['someone else’s, at the old size', sts({ uid: 'sts-3' }), { phase: 'Skipped', reason: 'RecreatedElsewhere' }],
  ])('a StatefulSet of the name that is not the recorded one: %s', (_name, other, want) => {
    expect(decide(request(recorded({ phase: 'Deleted' })), other)).toMatchObject({ kind: 'finish', status: { phase: 'Completed', statefulSetTemplate: want } });
  });

  it('a request being deleted with its StatefulSet recorded and untouched (as the API server says) leaves it as it is', () => {
    const read = decide(request(recorded(), { deleting: true }), sts());
    expect(read).toMatchObject({ kind: 'readStatefulSet', name: 'web' });
    expect(read).not.toHaveProperty('addFinalizer');
    expect(follow(read, sts())).toMatchObject({ kind: 'finish', status: { statefulSetTemplate: { phase: 'Skipped', reason: 'RequestDeleted' } } });
  });

  // Seed 492: the StatefulSets' watch lagged, the cache showed the StatefulSet pvx had deleted as
  // untouched (at a version before a GitOps label was added), the request was deleted, and pvx
  // let go of the record — "recorded but not deleted" — with the StatefulSet gone.
  it.each([
    ['Deleted, the request being deleted', recorded({ phase: 'Deleted' }), { deleting: true }, sts({ rv: '20' })],
    ['Deleted, the cache at the recorded version', recorded({ phase: 'Deleted' }), {}, sts()],
    ['Recorded, the request being deleted (the delete’s answer lost)', recorded(), { deleting: true }, sts()],
    ['Recorded, the cache at another version', recorded(), {}, sts({ rv: '20' })],
  ] as const)(
    'a cache that shows the recorded StatefulSet untouched is read again from the API server, never trusted to let the record go: %s',
    (_name, tpl, over, cached) => {
      const read = decide(request(tpl, over), cached);
      expect(read).toMatchObject({ kind: 'readStatefulSet', name: 'web' });
      // Gone by now: created again from the record, whatever the request's state.
      expect(read.kind === 'readStatefulSet' && read.onRead(undefined)).toMatchObject({ kind: 'createStatefulSet' });
      // Being deleted: waits for the garbage collector, the record kept.
      const deleting = follow(read, sts({ rv: '22', deleting: true }));
      expect(deleting).toMatchObject({ kind: 'status', status: { phase: 'UpdatingTemplate', statefulSetTemplate: { phase: 'Deleted', record: tpl.record } } });
    },
  );

  it('a refused read while a StatefulSet is recorded keeps the record and looks again', () => {
    const read = decide(request(recorded({ phase: 'Deleted' }), { deleting: true }), sts());
    const d = read.kind === 'readStatefulSet' ? read.onRefused(403, 'forbidden') : read;
    expect(d).toMatchObject({ kind: 'status', status: { phase: 'UpdatingTemplate', statefulSetTemplate: { phase: 'Deleted' } } });
    expect(d.kind === 'status' && d.status.statefulSetTemplate?.record).toBeTruthy();
  });
});

describe('the request around the step (decideRequest)', () => {
  const base = (tpl?: TemplateStatus, finalizers?: string[], phase?: RequestStatus['phase']): VolumeExpansionRequest => {
    const r = request(tpl, { finalizers });
    return { ...r, status: { ...r.status, ...(phase ? { phase } : {}) } };
  };

  it('keeps the record finalizer while a StatefulSet is recorded, and drops it once the request finished', () => {
    const inFlight = base(recorded({ phase: 'Deleted' }), ['pvx.dev/statefulset-record', 'other']);
    expect(
      decideRequest({
        request: inFlight,
        claim: () => ({ claim: undefined, storageClass: undefined, quotas: [], otherRequests: [], guardrails: [], mountedByRunningPod: false }),
        now,
      }).kind,
    ).not.toBe('setFinalizers');
    const finished = base(recorded({ phase: 'Updated' }), ['pvx.dev/statefulset-record', 'other'], 'Completed');
    expect(
      decideRequest({
        request: finished,
        claim: () => ({ claim: undefined, storageClass: undefined, quotas: [], otherRequests: [], guardrails: [], mountedByRunningPod: false }),
        now,
      }),
    ).toEqual({
      kind: 'setFinalizers',
      finalizers: ['other'],
      then: { kind: 'wait' },
    });
  });

  it('a claim already at the size is done, not a refusal: a request whose claims have all grown only updates the template', () => {
    const grown = (name: string): ClaimContext => ({
      claim: {
        metadata: { name, namespace: 'db', uid: `u-${name}`, resourceVersion: '1' },
        spec: { storageClassName: 'fast', resources: { requests: { storage: '2Gi' } } },
        status: { phase: 'Bound', capacity: { storage: '2Gi' } },
      },
      storageClass: { metadata: { name: 'fast' }, provisioner: 'hostpath.pvx.dev', allowVolumeExpansion: true },
      quotas: [],
      otherRequests: [],
      guardrails: [],
      mountedByRunningPod: true,
    });
    const fresh: VolumeExpansionRequest = { ...request(), status: undefined };
    const accepted = decideRequest({ request: fresh, claim: grown, statefulSet: sts(), children: [], now });
    expect(accepted).toMatchObject({
      kind: 'status',
      status: {
        targets: [
          { pvcName: 'data-web-0', phase: 'Completed', reason: 'AlreadyAtSize' },
          { pvcName: 'data-web-1', phase: 'Completed', reason: 'AlreadyAtSize' },
        ],
      },
    });
    const next = decideRequest({
      request: { ...fresh, status: accepted.kind === 'status' ? accepted.status : {} },
      claim: grown,
      statefulSet: sts(),
      children: [],
      requestNamed: () => undefined,
      now,
    });
    expect(next).toMatchObject({ kind: 'readStatefulSet', name: 'web' });
    // Without the opt-in, the same claims refuse the request as before.
    const plain: VolumeExpansionRequest = { ...fresh, spec: { ...fresh.spec, statefulSetTemplate: undefined } };
    expect(decideRequest({ request: plain, claim: grown, statefulSet: sts(), children: [], now })).toMatchObject({
      kind: 'finish',
      status: { phase: 'Rejected', reason: 'TargetRejected' },
    });
  });

  it('refuses a template update on a claim target, or without a size (as admission does)', () => {
    const onClaim: VolumeExpansionRequest = {
      ...request(),
      spec: { target: { pvcName: 'data' }, size: '2Gi', statefulSetTemplate: { update: true } },
      status: undefined,
    };
    expect(
      decideRequest({
        request: onClaim,
        claim: () => ({ claim: undefined, storageClass: undefined, quotas: [], otherRequests: [], guardrails: [], mountedByRunningPod: false }),
        now,
      }),
    ).toMatchObject({
      kind: 'finish',
      status: { phase: 'Rejected', reason: 'InvalidSpec' },
    });
  });
});

describe('the pieces', () => {
  it('the record keeps what the user set and nothing the server owns', () => {
    const s = sts({ labels: { app: 'web' }, annotations: { note: 'x' }, deleting: true });
    expect(recordOf(s)).toEqual({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'web', namespace: 'db', labels: { app: 'web' }, annotations: { note: 'x' } },
      spec: s.spec,
    });
  });

  it('created again: the record, the template’s size, and the request named', () => {
    const again = recreated(recordOf(sts({ annotations: { note: 'x' } })), 'data', '5Gi', request());
    expect(again.metadata?.annotations).toEqual({ note: 'x', 'pvx.dev/template-request': 'grow', 'pvx.dev/template-request-uid': 'req-1' });
    expect(again.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage).toBe('5Gi');
  });

  it.each([
    [{}, undefined],
    [{ 'app.kubernetes.io/name': 'web' }, undefined],
    [{ 'app.kubernetes.io/instance': 'web' }, 'ManagedByGitOps'],
    [{ 'kapp.k14s.io/app': '123' }, 'ManagedByGitOps'],
  ])('otherManager of labels %o → %s', (labels, reason) => {
    expect(otherManager(sts({ labels }))?.reason).toBe(reason);
  });

  it('a StatefulSet whose controller has observed it and rolls nothing is steady', () => {
    expect(notSteady(sts())).toBeUndefined();
    expect(notSteady(sts({ status: { observedGeneration: 3, replicas: 2 } }))).toBeUndefined();
  });
});
