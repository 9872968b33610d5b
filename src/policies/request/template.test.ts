// The template step of a StatefulSet request, case by case: a request whose claims have all grown,
// the StatefulSet as the cache (and the API server) have it, the clock — one decision out.
import type { V1StatefulSet } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { RequestStatus, TemplateStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { RequestDecision } from './decision.ts';
import { decideRequest, type ClaimContext } from './decide.ts';
import { decideTemplate, templateNote, type TemplateInput } from './template.ts';
import { notSteady, otherManager, readRecord, recordConfigMap, recordOf, recreated, type StatefulSetRecord } from './statefulset-record.ts';
import { now, statefulSet, statefulSetRecord } from './statefulsets.testing.ts';

const sts = statefulSet;

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
  decideTemplate({ request: req, statefulSet: cached, now, claimsDone, recordNamespace: 'pvx-system', ...extra });

/** The decision a step leads to once its read/write answered. */
function follow(d: RequestDecision, answer: V1StatefulSet | undefined = sts()): RequestDecision {
  if (d.kind === 'readStatefulSet') return d.onRead(answer);
  if (d.kind === 'recordStatefulSet') return d.onRecorded();
  return d;
}

/** The record keeper's record of this request, at a phase. */
const kept = statefulSetRecord;

describe('before anything is recorded', () => {
  it('reads the StatefulSet fresh and records it whole in pvx’s namespace, named after the request: the record keeper takes it from there', () => {
    const read = decide(request(), sts());
    expect(read).toMatchObject({ kind: 'readStatefulSet', name: 'web' });
    expect(read).not.toHaveProperty('addFinalizer');
    const rec = follow(read, sts({ rv: '22' }));
    expect(rec.kind).toBe('recordStatefulSet');
    if (rec.kind !== 'recordStatefulSet') return;
    expect(rec.record).toMatchObject({
      name: 'pvx-sts-req-1',
      namespace: 'pvx-system',
      request: { namespace: 'db', name: 'grow', uid: 'req-1' },
      statefulSet: { name: 'web', uid: 'sts-1', resourceVersion: '22' },
      template: 'data',
      fromSize: '1Gi',
      toSize: '2Gi',
      phase: 'Recorded',
    });
    expect(rec.record.object).toEqual(recordOf(sts({ rv: '22' })));
    expect(rec.onRecorded()).toMatchObject({
      kind: 'status',
      status: { phase: 'UpdatingTemplate', statefulSetTemplate: { phase: 'Recorded', recordName: 'pvx-system/pvx-sts-req-1', statefulSetUID: 'sts-1' } },
    });
    expect(rec.onRecorded().kind === 'status' && (rec.onRecorded() as { status: RequestStatus }).status.statefulSetTemplate).not.toHaveProperty('record');
  });

  it('applies an increment to the template’s own size', () => {
    const d = follow(decide(request(undefined, { increment: '50%' }), sts({ size: '4Gi' })), sts({ size: '4Gi' }));
    expect(d).toMatchObject({ kind: 'recordStatefulSet', record: { fromSize: '4Gi', toSize: '6Gi' } });
  });

  // KEP-4650: a StatefulSet controller that grows claims to their template must find none larger
  // than the template asks; and the next replica should start as large as the others.
  it('asks for the larger of what the spec asks of the template and what every claim has now', () => {
    const grownMore = { ...claimsDone, targets: claimsDone.targets?.map((t) => ({ ...t, targetSize: '3Gi' })) };
    const d = follow(decide(request(undefined, { increment: '50%' }), sts({ size: '1Gi' }), { claimsDone: grownMore }), sts({ size: '1Gi' }));
    expect(d).toMatchObject({ kind: 'recordStatefulSet', record: { fromSize: '1Gi', toSize: '3Gi' } });
    const uneven = {
      ...claimsDone,
      targets: [
        { pvcName: 'data-web-0', phase: 'Completed', targetSize: '3Gi' },
        { pvcName: 'data-web-1', phase: 'Completed', targetSize: '5Gi' },
      ],
    };
    expect(follow(decide(request(undefined, { increment: '50%' }), sts(), { claimsDone: uneven }), sts())).toMatchObject({ record: { toSize: '3Gi' } });
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
      status: { phase: 'Completed', reason: 'TemplateNotUpdated', statefulSetTemplate: { phase: 'Skipped', reason } },
    });
    expect(d.kind === 'finish' && d.status.statefulSetTemplate?.message).toMatch(message);
  });

  it('touches a managed one when the request says evenIfManaged, keeping its owner', () => {
    const owned = sts({ owner: true });
    const d = follow(decide(request(undefined, { evenIfManaged: true }), owned), owned);
    expect(d.kind).toBe('recordStatefulSet');
    const rec = d.kind === 'recordStatefulSet' ? (d.record.object as V1StatefulSet) : undefined;
    expect(rec?.metadata?.ownerReferences).toEqual([{ apiVersion: 'db.example/v1', kind: 'Cluster', name: 'main', uid: 'c1', controller: true }]);
    expect(d).toMatchObject({ record: { evenIfManaged: true } });
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

  it('records the request’s deadline, which the record keeper holds for the delete too', () => {
    const deadline = new Date(now.getTime() + 60_000);
    const rec = follow(decide(request(), sts(), { deadline }), sts({ rv: '22' }));
    expect(rec).toMatchObject({ kind: 'recordStatefulSet', record: { deadline: deadline.toISOString() } });
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

  it.each<[string, (d: RequestDecision) => RequestDecision]>([
    ['the StatefulSet’s read', (read) => (read.kind === 'readStatefulSet' ? read.onRefused(403, 'statefulsets.apps "web" is forbidden') : read)],
    [
      'the record’s create',
      (read) => {
        const rec = follow(read);
        return rec.kind === 'recordStatefulSet' ? rec.onRefused(403, 'configmaps is forbidden') : rec;
      },
    ],
  ])('a refusal of %s (no opt-in RBAC) ends it with what the admins grant, nothing touched', (_name, refuse) => {
    const d = refuse(decide(request(), sts()));
    expect(d).toMatchObject({ kind: 'finish', status: { statefulSetTemplate: { phase: 'Skipped', reason: 'Forbidden' } } });
    expect(d.kind === 'finish' && d.status.statefulSetTemplate?.message).toMatch(/statefulSetTemplates\.enabled/);
  });

  it('where pvx may keep no records (the opt-in’s Role not granted): skipped, nothing read or touched', () => {
    const d = decide(request(), sts(), { recordNamespace: undefined });
    expect(d).toMatchObject({ kind: 'finish', status: { statefulSetTemplate: { phase: 'Skipped', reason: 'Forbidden' } } });
  });
});

describe('once recorded: the request follows its record', () => {
  it.each<[string, Partial<StatefulSetRecord>, object]>([
    ['recorded, not touched yet', { phase: 'Recorded' }, { phase: 'Recorded' }],
    ['being deleted and created again', { phase: 'Deleting', reason: 'Deleting' }, { phase: 'Deleted', reason: 'Deleting' }],
  ])('%s: shows where it stands', (_name, over, tpl) => {
    expect(decide(request(), sts(), { record: kept(over) })).toMatchObject({
      kind: 'status',
      status: { phase: 'UpdatingTemplate', statefulSetTemplate: { ...tpl, recordName: 'pvx-system/pvx-sts-req-1' } },
    });
  });

  it.each<[string, Partial<StatefulSetRecord>, string, string, string]>([
    ['created again', { phase: 'Recreated', reason: 'Recreated', recreatedUID: 'sts-2' }, 'Updated', 'Recreated', 'Completed'],
    ['deleted by its owner', { phase: 'Abandoned', reason: 'DeletedByOwner' }, 'Skipped', 'DeletedByOwner', 'TemplateNotUpdated'],
    ['its namespace deleted', { phase: 'Abandoned', reason: 'NamespaceDeleted' }, 'Skipped', 'NamespaceDeleted', 'TemplateNotUpdated'],
    ['its history gone', { phase: 'Abandoned', reason: 'FinalStateUnknown' }, 'Skipped', 'FinalStateUnknown', 'TemplateNotUpdated'],
    ['the template at the size by then', { phase: 'Abandoned', reason: 'AlreadyAtSize' }, 'Updated', 'AlreadyAtSize', 'Completed'],
  ])('%s: ends as its record did', (_name, over, phase, reason, requestReason) => {
    expect(decide(request(), sts(), { record: kept(over) })).toMatchObject({
      kind: 'finish',
      status: { phase: 'Completed', reason: requestReason, statefulSetTemplate: { phase, reason } },
    });
  });

  it('a record of another request (a name taken) is not followed', () => {
    expect(decide(request(), sts(), { record: kept({ request: { namespace: 'db', name: 'grow', uid: 'req-0' } }) }).kind).toBe('readStatefulSet');
  });

  it('the status says recorded and the cache shows no record: read from the API server; gone, the request ends saying so', () => {
    const d = decide(request({ statefulSetName: 'web', volumeClaimTemplate: 'data', phase: 'Recorded', toSize: '2Gi' }), sts());
    expect(d).toMatchObject({ kind: 'readRecord', namespace: 'pvx-system', name: 'pvx-sts-req-1' });
    if (d.kind !== 'readRecord') return;
    expect(d.onRead(kept({ phase: 'Deleting' }))).toMatchObject({ kind: 'status', status: { statefulSetTemplate: { phase: 'Deleted' } } });
    expect(d.onRead(undefined)).toMatchObject({ kind: 'finish', status: { statefulSetTemplate: { phase: 'Skipped', reason: 'RecordMissing' } } });
  });

  // Review, 2026-12-04: the record lived in the request's status, which anyone who may write
  // volumeexpansionrequests/status could rewrite; what pvx creates now comes only from its own record.
  it('a status that claims a record (written by someone else) decides nothing: the record is pvx’s own', () => {
    const forged: TemplateStatus = { statefulSetName: 'web', volumeClaimTemplate: 'data', phase: 'Deleted', toSize: '99Gi' };
    const d = decide(request(forged), undefined);
    expect(d.kind).toBe('readRecord');
    if (d.kind === 'readRecord') expect(d.onRead(undefined)).toMatchObject({ kind: 'finish', status: { statefulSetTemplate: { reason: 'RecordMissing' } } });
  });
});

describe('the request around the step (decideRequest)', () => {
  const base = (tpl?: TemplateStatus, finalizers?: string[], phase?: RequestStatus['phase']): VolumeExpansionRequest => {
    const r = request(tpl, { finalizers });
    return { ...r, status: { ...r.status, ...(phase ? { phase } : {}) } };
  };

  // Review, 2026-12-04: a request holding a StatefulSet's record kept its finalizer, so a
  // namespace being deleted waited on pvx (and creates there are refused for ever).
  it('releases the finalizer an earlier pvx held its record under, at once, finished or not', () => {
    const claims = () => ({ claim: undefined, storageClass: undefined, quotas: [], otherRequests: [], guardrails: [], mountedByRunningPod: false });
    const inFlight = base({ statefulSetName: 'web', volumeClaimTemplate: 'data', phase: 'Deleted' }, ['pvx.dev/statefulset-record', 'other']);
    expect(decideRequest({ request: inFlight, claim: claims, now })).toEqual({
      kind: 'setFinalizers',
      finalizers: ['other'],
      then: { kind: 'wait', requeueAfterMs: 1000 },
    });
    const finished = base({ statefulSetName: 'web', volumeClaimTemplate: 'data', phase: 'Updated' }, ['pvx.dev/statefulset-record', 'other'], 'Completed');
    expect(decideRequest({ request: finished, claim: claims, now })).toEqual({ kind: 'setFinalizers', finalizers: ['other'], then: { kind: 'wait' } });
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
      recordNamespace: 'pvx-system',
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
  it('the record keeps what the user set — the StatefulSet controller’s labels included — and nothing the server owns', () => {
    const s = sts({ labels: { app: 'web', 'controller-revision-hash': 'web-abc' }, annotations: { note: 'x' }, deleting: true });
    expect(recordOf(s)).toEqual({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'web', namespace: 'db', labels: { app: 'web', 'controller-revision-hash': 'web-abc' }, annotations: { note: 'x' } },
      spec: s.spec,
    });
  });

  it('created again: its last state, the template’s size (never less than it asked), and the request named', () => {
    const who = { template: 'data', toSize: '5Gi', request: { namespace: 'db', name: 'grow', uid: 'req-1' } };
    const again = recreated(sts({ annotations: { note: 'x' } }), who);
    expect(again.metadata?.annotations).toEqual({ note: 'x', 'pvx.dev/template-request': 'grow', 'pvx.dev/template-request-uid': 'req-1' });
    expect(again.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage).toBe('5Gi');
    expect(recreated(sts({ size: '8Gi' }), who).spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage).toBe('8Gi');
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

  it('a record reads back as written from its ConfigMap; one pvx cannot read is said to be so', () => {
    const r = kept({ phase: 'Deleting', recreatedUID: undefined });
    expect(readRecord({ ...recordConfigMap(r), metadata: { ...recordConfigMap(r).metadata, resourceVersion: '7', uid: 'cm-1' } })).toEqual({
      ...r,
      resourceVersion: '7',
      uid: 'cm-1',
    });
    expect(readRecord({ metadata: { name: 'x' }, data: { 'step.json': '{', 'statefulset.json': '{}' } })).toMatchObject({
      unreadable: expect.stringMatching(/ConfigMap x/),
    });
  });
});

describe('what a StatefulSet request says of its template', () => {
  it('names the template’s size from the StatefulSet, else from what the request recorded, and never a placeholder when neither knows it', () => {
    expect(templateNote(request(), statefulSet({ size: '1Gi' }))).toBe(
      'the template (1Gi) follows once every claim has grown (spec.statefulSetTemplate.update)',
    );
    // The StatefulSet gone (pvx deleted it, or its owner did): the size recorded at the step's start.
    expect(templateNote(request({ phase: 'Deleted', statefulSetName: 'web', volumeClaimTemplate: 'data', fromSize: '1Gi' }), undefined)).toContain(
      'the template (1Gi) follows',
    );
    const unknown = templateNote(request(), undefined);
    expect(unknown).toBe('the template follows once every claim has grown (spec.statefulSetTemplate.update)');
    expect(unknown).not.toContain('?');
  });
});
