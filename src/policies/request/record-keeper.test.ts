// The record keeper's decisions, case by case: a record, the StatefulSet as cached or just read,
// its namespace and its request — one decision out, its continuations followed with what the API
// server would answer.
import type { KubernetesObject, V1StatefulSet } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { DeletionHistory } from '../../k8s/client.ts';
import { decideRecord, deletedByOwner, type RecordDecision, type RecordInput } from './record-keeper.ts';
import type { StatefulSetRecord } from './statefulset-record.ts';
import { now, statefulSet, statefulSetRecord } from './statefulsets.testing.ts';

const sts = statefulSet;

const record = (over: Partial<StatefulSetRecord> = {}): StatefulSetRecord => statefulSetRecord({ resourceVersion: '5', uid: 'cm-1', ...over });

const decide = (over: Partial<RecordInput> = {}): RecordDecision =>
  decideRecord({ record: record(), statefulSet: sts(), namespace: { metadata: { name: 'db', uid: 'ns-1' } }, request: 'open', now, ...over });

/** The decision once its read or write answered as given; an update's `then` followed. */
function follow(
  d: RecordDecision,
  answer: { sts?: V1StatefulSet; listedAt?: string; history?: DeletionHistory; created?: V1StatefulSet } = {},
): RecordDecision {
  if (d.kind === 'readStatefulSet') return d.onRead(answer.sts, answer.listedAt ?? '30');
  if (d.kind === 'update' && d.then) return d.then;
  if (d.kind === 'deleteStatefulSet') return d.onDeleted('22');
  if (d.kind === 'readDeletion') return d.onRead(answer.history as DeletionHistory);
  if (d.kind === 'createStatefulSet') return d.onCreated(answer.created ?? { metadata: { uid: 'sts-2' } });
  return d;
}

const ended = (phase: string, reason: string) => ({ kind: 'update', content: { phase, reason } });

describe('a StatefulSet recorded and not touched', () => {
  it('reads it from the API server, writes "Deleting" first (with the version of that read), then deletes it with propagation Orphan on the version recorded', () => {
    const read = decide();
    expect(read.kind).toBe('readStatefulSet');
    const d = follow(read, { sts: sts(), listedAt: '30' });
    expect(d).toMatchObject({
      kind: 'update',
      content: { phase: 'Deleting', statefulSet: { uid: 'sts-1', resourceVersion: '21' }, namespaceUID: 'ns-1', historyFrom: '30' },
    });
    expect(follow(d)).toMatchObject({ kind: 'deleteStatefulSet', preconditions: { uid: 'sts-1', resourceVersion: '21' } });
  });

  it('changed since it was recorded: read from the API server, recorded again as it is now, then deleted on that version', () => {
    const read = decide({ statefulSet: sts({ rv: '23' }) });
    expect(read.kind).toBe('readStatefulSet');
    const again = follow(read, { sts: sts({ rv: '24', image: 'busybox:2' }) });
    expect(again).toMatchObject({ kind: 'update', content: { phase: 'Deleting', statefulSet: { resourceVersion: '24' } } });
    expect(again.kind === 'update' && (again.content.object as V1StatefulSet).spec?.template.spec?.containers[0]?.image).toBe('busybox:2');
    expect(follow(again)).toMatchObject({ kind: 'deleteStatefulSet', preconditions: { resourceVersion: '24' } });
  });

  // Review, 2026-12-04: a StatefulSet its owner deleted (foreground or background) while pvx held a
  // record it had not acted on was created again by pvx.
  it.each<[string, V1StatefulSet | undefined]>([
    ['being deleted by its owner (foreground)', sts({ rv: '22', deleting: ['foregroundDeletion'] })],
    ['being deleted by its owner (another controller’s finalizer holds it)', sts({ rv: '22', deleting: ['example.com/backup'] })],
    ['being deleted with --cascade=orphan by its owner', sts({ rv: '22', deleting: ['orphan'] })],
    ['gone (its owner’s background delete)', undefined],
  ])('%s: never created again, nothing deleted', (_name, live) => {
    const read = decide({ statefulSet: live });
    expect(read.kind).toBe('readStatefulSet');
    const d = follow(read, { sts: live });
    expect(d).toMatchObject(ended('Abandoned', 'DeletedByOwner'));
    expect(d.kind === 'update' && d.then).toBeFalsy();
  });

  it.each<[string, V1StatefulSet, string]>([
    ['taken over by Flux', sts({ labels: { 'kustomize.toolkit.fluxcd.io/name': 'apps' } }), 'ManagedByGitOps'],
    [
      'its template at the size already',
      { ...sts(), spec: { ...sts().spec!, volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '2Gi' } } } }] } },
      'AlreadyAtSize',
    ],
  ])('%s since it was recorded: left as it is', (_name, live, reason) => {
    expect(follow(decide({ statefulSet: live, live: true }), { sts: live })).toMatchObject(ended('Abandoned', reason));
  });

  it('a rollout begun since: waits, saying so, and deletes nothing', () => {
    const rolling = { ...sts(), status: { ...sts().status!, updateRevision: 'web-def' } } as V1StatefulSet;
    const d = decide({ statefulSet: rolling, live: true });
    expect(d).toMatchObject({ kind: 'update', content: { phase: 'Recorded', reason: 'StatefulSetNotSteady' }, requeueAfterMs: 15_000 });
    expect(d.kind === 'update' && d.then).toBeFalsy();
  });

  // Simulation seed 203722: a rollout that never settled held a request UpdatingTemplate past its deadline for good.
  it('a rollout still under way at the request’s deadline: left as it is; before it, looked at again by then', () => {
    const rolling = { ...sts(), status: { ...sts().status!, updateRevision: 'web-def' } } as V1StatefulSet;
    const soon = record({ deadline: new Date(now.getTime() + 5000).toISOString() });
    expect(decide({ record: soon, statefulSet: rolling, live: true })).toMatchObject({
      kind: 'update',
      content: { reason: 'StatefulSetNotSteady' },
      requeueAfterMs: 5000,
    });
    const past = record({ deadline: new Date(now.getTime() - 1).toISOString() });
    const d = decide({ record: past, statefulSet: rolling, live: true });
    expect(d).toMatchObject(ended('Abandoned', 'DeadlineExceeded'));
    expect(d.kind === 'update' && d.then).toBeFalsy();
  });

  it.each(['gone', 'deleting'] as const)('the request %s before pvx deleted it: left as it is', (request) => {
    expect(decide({ request })).toMatchObject(ended('Abandoned', 'RequestDeleted'));
  });

  // Simulation seed 1865967.
  it('the request finished before pvx deleted it: left as it is, and the record goes', () => {
    const d = decide({ request: 'finished' });
    expect(d).toMatchObject(ended('Abandoned', 'RequestFinished'));
    expect(d.kind === 'update' && d.then).toBeFalsy();
  });

  it('a delete pvx may not make (403): left as it is, saying what to grant', () => {
    const del = follow(follow(decide(), { sts: sts() }));
    expect(del.kind === 'deleteStatefulSet' && del.onRefused(403, 'forbidden')).toMatchObject(ended('Abandoned', 'Forbidden'));
  });
});

describe('deleted by pvx: created again from its last state', () => {
  const deleting = (over: Partial<StatefulSetRecord> = {}) => record({ phase: 'Deleting', reason: 'Deleting', ...over });
  const history = (versions: KubernetesObject[], last: KubernetesObject): DeletionHistory => ({ kind: 'deleted', versions, last });
  const orphaned = sts({ rv: '22', deleting: ['orphan'] });

  it('waits while the garbage collector orphans its pods, knowing from which version its history is read', () => {
    expect(decide({ record: deleting({ deletedResourceVersion: '22' }), statefulSet: orphaned })).toEqual({ kind: 'wait', requeueAfterMs: 2000 });
    // The delete's answer lost: the first version seen being deleted (orphaning) is where the history is read from.
    expect(decide({ record: deleting(), statefulSet: orphaned })).toMatchObject({ kind: 'update', content: { deletedResourceVersion: '22' } });
  });

  it('the delete’s answer says where the history is read from: recorded, and read from there', () => {
    const del = follow(follow(decide(), { sts: sts() }));
    expect(del.kind === 'deleteStatefulSet' && del.onDeleted('22')).toMatchObject({
      kind: 'update',
      content: { phase: 'Deleting', deletedResourceVersion: '22' },
    });
    expect(decide({ record: deleting({ deletedResourceVersion: '22' }), statefulSet: undefined })).toMatchObject({
      kind: 'readDeletion',
      fromResourceVersion: '22',
    });
  });

  it('gone, the delete’s answer and every sight of it deleting lost: its history is read from the list pvx read it in before the delete, not its own older version (seed 2278727)', () => {
    expect(decide({ record: deleting({ historyFrom: '30' }), statefulSet: undefined })).toMatchObject({ kind: 'readDeletion', fromResourceVersion: '30' });
    // Its delete's own answer, when it came, is later still: read from there.
    expect(decide({ record: deleting({ historyFrom: '30', deletedResourceVersion: '32' }), statefulSet: undefined })).toMatchObject({
      kind: 'readDeletion',
      fromResourceVersion: '32',
    });
  });

  it('gone: reads how it went, from the version recorded, and creates it again from its last state with the new template size', () => {
    const read = decide({ record: deleting(), statefulSet: undefined });
    expect(read).toMatchObject({ kind: 'readDeletion', fromResourceVersion: '21' });
    const last = sts({ rv: '24', deleting: [] });
    const create = follow(read, { history: history([orphaned, sts({ rv: '23', deleting: [] })], last) });
    expect(create.kind).toBe('createStatefulSet');
    if (create.kind !== 'createStatefulSet') return;
    expect(create.statefulSet.metadata).toEqual({
      name: 'web',
      namespace: 'db',
      annotations: { 'pvx.dev/template-request': 'grow', 'pvx.dev/template-request-uid': 'req-1' },
    });
    expect(create.statefulSet.spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests?.storage).toBe('2Gi');
    expect(follow(create)).toMatchObject({ ...ended('Recreated', 'Recreated'), content: { recreatedUID: 'sts-2' } });
  });

  // Review, 2026-12-04: an edit made to the StatefulSet between pvx's orphaning delete and its
  // re-create was lost: pvx created it again from the older record.
  it('an edit its owner made while it was being deleted is kept in the one created again', () => {
    const edited = sts({ rv: '23', deleting: ['orphan'], image: 'db:2', labels: { tier: 'gold' } });
    const last = sts({ rv: '24', deleting: [], image: 'db:2', labels: { tier: 'gold' } });
    const create = follow(decide({ record: deleting(), statefulSet: undefined }), { history: history([orphaned, edited], last) });
    expect(create.kind === 'createStatefulSet' && create.statefulSet.spec?.template.spec?.containers[0]?.image).toBe('db:2');
    expect(create.kind === 'createStatefulSet' && create.statefulSet.metadata?.labels).toEqual({ tier: 'gold' });
  });

  it.each<[string, KubernetesObject[], KubernetesObject]>([
    ['deleted by its owner before pvx’s delete landed (no orphan: a background delete)', [], sts({ rv: '22', deleting: [] })],
    [
      'turned into a foreground cascade by its owner after pvx’s delete',
      [orphaned, sts({ rv: '23', deleting: ['foregroundDeletion'] })],
      sts({ rv: '24', deleting: [] }),
    ],
  ])('%s: never created again', (_name, versions, last) => {
    expect(follow(decide({ record: deleting(), statefulSet: undefined }), { history: history(versions, last) })).toMatchObject(
      ended('Abandoned', 'DeletedByOwner'),
    );
  });

  it('a foreground cascade seen while it is still there: never created again', () => {
    expect(decide({ record: deleting(), statefulSet: sts({ deleting: ['orphan', 'foregroundDeletion'] }) })).toMatchObject(
      ended('Abandoned', 'DeletedByOwner'),
    );
  });

  it('its history compacted: not created from an older state, said loudly; the record kept while its request is', () => {
    const d = follow(decide({ record: deleting(), statefulSet: undefined }), { history: { kind: 'compacted' } });
    expect(d).toMatchObject({ ...ended('Abandoned', 'FinalStateUnknown'), event: { type: 'Warning', reason: 'StatefulSetFinalStateUnknown' } });
    const unknown = record({ phase: 'Abandoned', reason: 'FinalStateUnknown' });
    expect(decide({ record: unknown, request: 'finished' })).toEqual({ kind: 'wait' });
    expect(decide({ record: unknown, request: 'gone' })).toEqual({ kind: 'deleteRecord' });
  });

  it('the cache behind (no DELETED event in the history yet): looks again', () => {
    expect(follow(decide({ record: deleting(), statefulSet: undefined }), { history: { kind: 'present', versions: [] } })).toEqual({
      kind: 'wait',
      requeueAfterMs: 2000,
    });
  });

  it.each<[string, boolean, string]>([
    ['refused as the namespace is being deleted', true, 'NamespaceDeleted'],
    ['refused otherwise (an admission webhook)', false, 'CreateRefused'],
  ])('its create %s', (_name, terminating, reason) => {
    const create = follow(decide({ record: deleting(), statefulSet: undefined }), { history: history([orphaned], sts({ rv: '22', deleting: [] })) });
    const d = create.kind === 'createStatefulSet' ? create.onRefused(403, 'no', terminating) : create;
    expect(d).toMatchObject({ kind: 'update', content: { reason } });
    if (!terminating) expect(d).toMatchObject({ content: { phase: 'Deleting' }, requeueAfterMs: 30_000, event: { type: 'Warning' } });
  });

  it('its create refused, then the history compacted while it is (a webhook down for minutes): created from the last state it read, unless one of the name exists now', () => {
    const last = sts({ rv: '23', deleting: [], image: 'busybox:2' });
    const create = follow(decide({ record: deleting(), statefulSet: undefined }), { history: history([orphaned], last) });
    const refused = create.kind === 'createStatefulSet' ? create.onRefused(500, 'webhook down', false) : create;
    expect(refused).toMatchObject({ kind: 'update', content: { reason: 'CreateRefused', lastStateRead: true } });
    const kept = refused.kind === 'update' ? record({ ...refused.content }) : record();
    const read = follow(decide({ record: kept, statefulSet: undefined }), { history: { kind: 'compacted' } });
    expect(read.kind).toBe('readStatefulSet');
    const again = follow(read, { sts: undefined });
    expect(again.kind).toBe('createStatefulSet');
    expect(again.kind === 'createStatefulSet' && again.statefulSet.spec?.template.spec?.containers[0]?.image).toBe('busybox:2');
    // One of the name exists now, someone else's: left as it is.
    expect(follow(read, { sts: sts({ uid: 'sts-9', rv: '40' }) })).toMatchObject(ended('Abandoned', 'RecreatedElsewhere'));
    // Never read before: compacted is FinalStateUnknown, as ever.
    expect(follow(decide({ record: deleting(), statefulSet: undefined }), { history: { kind: 'compacted' } })).toMatchObject(
      ended('Abandoned', 'FinalStateUnknown'),
    );
  });

  it('pvx stopped between its "Deleting" and the delete: the API server says it is untouched, and it is deleted then', () => {
    const read = decide({ record: deleting(), statefulSet: sts() });
    expect(read.kind).toBe('readStatefulSet');
    const again = follow(read, { sts: sts() });
    expect(follow(again)).toMatchObject({ kind: 'deleteStatefulSet', preconditions: { uid: 'sts-1', resourceVersion: '21' } });
  });

  it.each<[string, V1StatefulSet, string, string]>([
    ['pvx’s own (its create’s answer lost)', sts({ uid: 'sts-2', annotations: { 'pvx.dev/template-request-uid': 'req-1' } }), 'Recreated', 'Recreated'],
    ['someone else’s', sts({ uid: 'sts-3' }), 'Abandoned', 'RecreatedElsewhere'],
  ])('another StatefulSet of the name, %s, as the API server has it', (_name, other, phase, reason) => {
    expect(decide({ record: deleting(), statefulSet: other, live: true })).toMatchObject(ended(phase, reason));
  });

  // Simulation seed 385: the StatefulSets' cache, behind, still showed the one an earlier request
  // had created; the record keeper took it for someone else's and let its own delete go unfollowed.
  it('another of the name in the cache only (the cache behind): read from the API server first', () => {
    const older = sts({ uid: 'sts-0', annotations: { 'pvx.dev/template-request-uid': 'req-0' } });
    const read = decide({ record: deleting(), statefulSet: older });
    expect(read.kind).toBe('readStatefulSet');
    expect(follow(read, { sts: undefined })).toMatchObject({ kind: 'readDeletion' });
  });
});

// Simulation seed 350167: pvx's create's answer and its ADDED event lost, the owner deleted the new
// StatefulSet, and the history read to its first DELETED alone (pvx's) had it created once more.
describe('an object created under the name since pvx deleted it', () => {
  const gone = (later: { type: 'ADDED' | 'DELETED'; object: V1StatefulSet }[]): DeletionHistory => ({
    kind: 'deleted',
    versions: [{ ...sts(), metadata: { ...sts().metadata, deletionTimestamp: now, finalizers: ['orphan'] } }],
    last: sts(),
    later,
  });
  const ours = { ...sts(), metadata: { ...sts().metadata, uid: 'sts-2', annotations: { 'pvx.dev/template-request-uid': 'req-1' } } } as V1StatefulSet;
  const theirs = { ...sts(), metadata: { ...sts().metadata, uid: 'sts-3' } } as V1StatefulSet;
  const gonePhase = record({ phase: 'Deleting', reason: 'Deleting', deletedResourceVersion: '22' });

  it.each<[string, { type: 'ADDED' | 'DELETED'; object: V1StatefulSet }[], object]>([
    [
      'pvx’s own, deleted since by someone else: not created again',
      [
        { type: 'ADDED', object: ours },
        { type: 'DELETED', object: ours },
      ],
      ended('Abandoned', 'DeletedByOwner'),
    ],
    ['pvx’s own, still there: waits for the cache to show it', [{ type: 'ADDED', object: ours }], { kind: 'wait', requeueAfterMs: 2000 }],
    ['someone else’s: left as it is', [{ type: 'ADDED', object: theirs }], ended('Abandoned', 'RecreatedElsewhere')],
  ])('%s', (_name, later, want) => {
    const d = follow(decide({ record: gonePhase, statefulSet: undefined }), { history: gone(later) });
    expect(d).toMatchObject(want);
    expect(d.kind).not.toBe('createStatefulSet');
  });
});

describe('no namespace deletion waits on pvx', () => {
  it.each<[string, Partial<StatefulSetRecord>, V1StatefulSet | undefined]>([
    ['recorded, untouched', {}, sts()],
    ['deleted by pvx, not created again', { phase: 'Deleting' }, undefined],
  ])('%s: the step ends', (_name, over, live) => {
    const d = decide({
      record: record(over),
      statefulSet: live,
      namespace: { metadata: { name: 'db', deletionTimestamp: now }, status: { phase: 'Terminating' } },
    });
    expect(d).toMatchObject(ended('Abandoned', 'NamespaceDeleted'));
  });
});

describe('a namespace deleted, or created again under the name', () => {
  it.each<[string, Partial<StatefulSetRecord>, V1StatefulSet | undefined]>([
    ['deleted by pvx, its namespace gone', { phase: 'Deleting', namespaceUID: 'ns-1' }, undefined],
    ['deleted by pvx, the namespace deleted and created again since', { phase: 'Deleting', namespaceUID: 'ns-0' }, undefined],
    ['being orphaned, the namespace created again since', { phase: 'Deleting', namespaceUID: 'ns-0' }, sts({ deleting: ['orphan'] })],
  ])('%s: nothing is created, the step ends', (_name, over, live) => {
    const gone = _name.includes('gone');
    const d = decide({ record: record(over), statefulSet: live, ...(gone ? { namespace: undefined } : {}) });
    expect(d).toMatchObject(ended('Abandoned', 'NamespaceDeleted'));
    if (d.kind === 'update') expect(d.content.message).toMatch(gone ? /was deleted: / : /one of the name exists again/);
  });

  it('its namespace gone as the API server answers (a watch there, or a create there, refused for the namespace): not created again', () => {
    const read = decide({ record: record({ phase: 'Deleting' }), statefulSet: undefined, namespace: undefined });
    expect(follow(read, { history: { kind: 'namespaceGone' } })).toMatchObject(ended('Abandoned', 'NamespaceDeleted'));
    const create = follow(read, { history: { kind: 'deleted', versions: [sts({ rv: '22', deleting: ['orphan'] })], last: sts({ rv: '23', deleting: [] }) } });
    expect(create.kind).toBe('createStatefulSet');
    if (create.kind === 'createStatefulSet') {
      expect(create.onRefused(404, 'namespaces "db" not found', true)).toMatchObject(ended('Abandoned', 'NamespaceDeleted'));
      expect(create.onRefused(403, 'forbidden', false)).toMatchObject({ kind: 'update', content: { phase: 'Deleting', reason: 'CreateRefused' } });
    }
  });

  it('a namespace pvx has not seen yet: nothing is deleted until it has (its UID goes into the record first)', () => {
    expect(follow(decide({ namespace: undefined }), { sts: sts() })).toEqual({ kind: 'wait', requeueAfterMs: 5000 });
  });
});

describe('a record outlives its request only as long as its StatefulSet needs it', () => {
  it.each<[string, StatefulSetRecord['phase'], RecordInput['request'], RecordDecision['kind']]>([
    ['created again, the request finished', 'Recreated', 'finished', 'deleteRecord'],
    ['created again, the request gone', 'Recreated', 'gone', 'deleteRecord'],
    ['created again, the request yet to take it', 'Recreated', 'open', 'wait'],
    ['abandoned, the request gone', 'Abandoned', 'gone', 'deleteRecord'],
  ])('%s: %s', (_name, phase, request, kind) => {
    expect(decide({ record: record({ phase, reason: phase }), request }).kind).toBe(kind);
  });

  it('deleted by pvx, its request deleted since: created again all the same, then let go', () => {
    const read = decide({ record: record({ phase: 'Deleting' }), statefulSet: undefined, request: 'gone' });
    expect(read.kind).toBe('readDeletion');
  });
});

describe('deletedByOwner', () => {
  const v = (rv: string, finalizers?: string[], uid = 'sts-1') => sts({ rv, uid, ...(finalizers ? { deleting: finalizers } : {}) });
  it.each<[string, KubernetesObject[], KubernetesObject, boolean]>([
    ['pvx’s orphaning delete, then the garbage collector', [v('22', ['orphan'])], v('23', []), false],
    ['an edit while deleting', [v('22', ['orphan']), v('23', ['orphan'])], v('24', []), false],
    ['a background delete', [], v('22', []), true],
    ['a foreground delete', [v('22', ['foregroundDeletion'])], v('23', []), true],
    ['an orphaning delete turned foreground', [v('22', ['orphan']), v('23', ['foregroundDeletion'])], v('24', []), true],
    // The API server's DELETED event carries the version before the finalizer's removal: "orphan" on.
    ['pvx’s orphaning delete, then the garbage collector, as the API server shows it', [v('22', ['orphan'])], v('23', ['orphan']), false],
  ])('%s → %s', (_name, versions, last, owner) => {
    expect(deletedByOwner(versions, last, 'sts-1')).toBe(owner);
  });
});
