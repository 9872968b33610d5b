// The chaos suite's checker, on hand-made audit records: each rule stays quiet on a clean run and
// fires on the record of the fault it exists for.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { VolumeExpansionRequest } from '../../../src/crds/volume-expansion-request.ts';
import type { AuditEvent } from '../../e2e/support/audit-log.ts';
import { checkInvariants, maxStatusWritesPerMinute, type RunRecord } from '../../e2e/support/chaos-invariants.ts';

const ns = 'chaos';
const pvxUser = 'system:serviceaccount:pvx-system:pvx';
const t0 = Date.parse('2026-01-01T10:00:00Z');
const at = (s: number) => new Date(t0 + s * 1000).toISOString();

let seq = 0;
function event(over: Partial<AuditEvent> & { seconds?: number }): AuditEvent {
  const { seconds = 0, ...rest } = over;
  return {
    auditID: `a${++seq}`,
    stage: 'ResponseComplete',
    verb: 'patch',
    user: { username: pvxUser },
    requestReceivedTimestamp: at(seconds),
    stageTimestamp: at(seconds),
    responseStatus: { code: 200 },
    ...rest,
  };
}

/** pvx raising a claim for a request (the body pvx's patchPvcSize sends). */
function raise(claim: string, claimUID: string | undefined, storage: string, requestUID: string, previous = '1Gi', seconds = 1, code = 200): AuditEvent {
  return event({
    seconds,
    objectRef: { resource: 'persistentvolumeclaims', namespace: ns, name: claim },
    responseStatus: { code },
    requestObject: {
      metadata: {
        uid: claimUID,
        resourceVersion: '1',
        annotations: { 'pvx.dev/request-uid': requestUID, 'pvx.dev/previous-capacity': previous, 'pvx.dev/target-size': storage, 'pvx.dev/recovered-to': null },
      },
      spec: { resources: { requests: { storage } } },
    },
  });
}

function lower(claim: string, claimUID: string, storage: string, seconds = 5): AuditEvent {
  return event({
    seconds,
    objectRef: { resource: 'persistentvolumeclaims', namespace: ns, name: claim },
    requestObject: {
      metadata: { uid: claimUID, resourceVersion: '2', annotations: { 'pvx.dev/recovered-to': storage } },
      spec: { resources: { requests: { storage } } },
    },
  });
}

const statusWrite = (name: string, seconds: number) =>
  event({ seconds, objectRef: { resource: 'volumeexpansionrequests', subresource: 'status', namespace: ns, name, apiGroup: 'pvx.dev' } });

function request(name: string, uid: string, spec: Partial<VolumeExpansionRequest['spec']>, status: VolumeExpansionRequest['status']): VolumeExpansionRequest {
  return {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: { name, namespace: ns, uid },
    spec: { target: { pvcName: 'c0' }, ...spec },
    status,
  };
}

const claim = (uid: string, capacity: string): V1PersistentVolumeClaim => ({
  metadata: { name: 'c0', namespace: ns, uid },
  status: { capacity: { storage: capacity } },
});

const completed = request(
  'grow',
  'req-1',
  { size: '2Gi' },
  { phase: 'Completed', reason: 'Completed', pvcUID: 'claim-1', targetSize: '2Gi', timeline: { acceptedAt: at(0) }, phaseSince: at(10) },
);

function run(over: Partial<RunRecord>): RunRecord {
  return {
    namespace: ns,
    pvxUser,
    events: [raise('c0', 'claim-1', '2Gi', 'req-1'), statusWrite('grow', 2), statusWrite('grow', 10)],
    requests: [completed],
    claims: new Map([['c0', claim('claim-1', '2Gi')]]),
    claimUIDs: new Map([['c0', ['claim-1']]]),
    classMax: new Map(),
    now: t0 + 60_000,
    ...over,
  };
}

const rules = (r: RunRecord) => checkInvariants(r).violations.map((v) => v.rule);

describe('checkInvariants', () => {
  it('finds nothing wrong with one raise, its status writes and the capacity it asked for', () => {
    const report = checkInvariants(run({}));
    expect(report.violations).toEqual([]);
    expect(report.patches).toEqual({ raises: 1, lowerings: 0, refused: 0 });
    expect(report.checked).toBeGreaterThan(5);
  });

  it.each<[string, Partial<RunRecord>, string[]]>([
    [
      'two raises for one request',
      { events: [raise('c0', 'claim-1', '2Gi', 'req-1'), raise('c0', 'claim-1', '2Gi', 'req-1', '2Gi', 3), statusWrite('grow', 4)] },
      ['one-raise-per-request'],
    ],
    [
      'a raise refused by the server does not count',
      { events: [raise('c0', 'claim-1', '2Gi', 'req-1', '1Gi', 1, 409), raise('c0', 'claim-1', '2Gi', 'req-1', '1Gi', 2), statusWrite('grow', 4)] },
      [],
    ],
    [
      'a raise of a re-created claim on the old one’s record',
      {
        events: [raise('c0', 'claim-2', '2Gi', 'req-1'), statusWrite('grow', 4)],
        claimUIDs: new Map([['c0', ['claim-1', 'claim-2']]]),
      },
      ['patch-of-recorded-claim'],
    ],
    ['a raise without the claim UID precondition', { events: [raise('c0', undefined, '2Gi', 'req-1'), statusWrite('grow', 4)] }, ['patch-carries-claim-uid']],
    ['a raise above the class maximum', { classMax: new Map([['c0', '1Gi']]) }, ['size-within-class-max']],
    [
      'a raise above the request’s target',
      { events: [raise('c0', 'claim-1', '3Gi', 'req-1'), statusWrite('grow', 4)] },
      ['size-within-target', 'size-within-spec'],
    ],
    [
      'a raise naming no request',
      {
        events: [
          event({
            objectRef: { resource: 'persistentvolumeclaims', namespace: ns, name: 'c0' },
            requestObject: { metadata: { uid: 'claim-1' }, spec: { resources: { requests: { storage: '2Gi' } } } },
          }),
          statusWrite('grow', 4),
        ],
      },
      ['patch-names-request'],
    ],
    ['Completed while the claim is smaller than the target', { claims: new Map([['c0', claim('claim-1', '1Gi')]]) }, ['completed-has-capacity']],
    [
      'Completed, but the claim was re-created since',
      { claims: new Map([['c0', claim('claim-2', '1Gi')]]), claimUIDs: new Map([['c0', ['claim-1', 'claim-2']]]) },
      [],
    ],
    [
      'a status write loop',
      { events: [raise('c0', 'claim-1', '2Gi', 'req-1'), ...Array.from({ length: maxStatusWritesPerMinute + 1 }, (_, i) => statusWrite('grow', 2 + i))] },
      ['no-hot-loop'],
    ],
    [
      'as many status writes spread over minutes',
      { events: [raise('c0', 'claim-1', '2Gi', 'req-1'), ...Array.from({ length: maxStatusWritesPerMinute + 1 }, (_, i) => statusWrite('grow', 2 + i * 10))] },
      [],
    ],
    ['no pvx writes in the log at all', { events: [] }, ['audit-log-records']],
    [
      'writes by someone else are not pvx’s',
      { events: [{ ...raise('c0', 'claim-1', '9Gi', 'req-1'), user: { username: 'admin' } }, statusWrite('grow', 4)] },
      [],
    ],
  ])('%s', (_name, over, expected) => {
    expect(rules(run(over))).toEqual(expected);
  });

  it('checks deadlines in every phase: ended late, still running late, ended in time', () => {
    const late = request(
      'late',
      'req-2',
      { size: '2Gi', deadline: '30s' },
      { phase: 'Failed', reason: 'DeadlineExceeded', timeline: { acceptedAt: at(0) }, phaseSince: at(200) },
    );
    const running = request('running', 'req-3', { size: '2Gi', deadline: '30s' }, { phase: 'Expanding', timeline: { acceptedAt: at(0) } });
    const inTime = request(
      'in-time',
      'req-4',
      { size: '2Gi', deadline: '30s' },
      { phase: 'Failed', reason: 'DeadlineExceeded', timeline: { acceptedAt: at(0) }, phaseSince: at(40) },
    );
    const report = checkInvariants(run({ requests: [completed, late, running, inTime], now: t0 + 300_000 }));
    expect(report.violations.map((v) => [v.rule, v.subject])).toEqual([
      ['deadline-holds', 'late'],
      ['deadline-holds', 'running'],
    ]);
  });

  it('attributes recovery’s lowering to the request that records it, and flags one nobody records', () => {
    const recovering = request(
      'recover',
      'req-5',
      { size: '5Gi', recovery: 'Auto' },
      {
        phase: 'Failed',
        reason: 'RecoveredAtLowerSize',
        pvcUID: 'claim-1',
        targetSize: '5Gi',
        recovery: { attemptedSizes: ['1025Mi'] },
        timeline: { acceptedAt: at(0) },
      },
    );
    const events = [raise('c0', 'claim-1', '5Gi', 'req-5'), lower('c0', 'claim-1', '1025Mi'), statusWrite('recover', 6)];
    const clean = checkInvariants(run({ events, requests: [recovering], claims: new Map([['c0', claim('claim-1', '1025Mi')]]) }));
    expect(clean.violations).toEqual([]);
    expect(clean.patches).toEqual({ raises: 1, lowerings: 1, refused: 0 });
    const stray = [...events, lower('c0', 'claim-1', '2Gi', 7)];
    expect(rules(run({ events: stray, requests: [recovering], claims: new Map([['c0', claim('claim-1', '1025Mi')]]) }))).toEqual(['lowering-attributed']);
  });

  // Seen on the real cluster (seed 7807194): request A (recovery Auto) was lowered to 1025Mi, which
  // left pvx.dev/recovered-to on the claim; request B (recovery None) raised it to 4Gi beyond the
  // driver's limit, and reported RecoveredAtLowerSize "lowered to 1025Mi and grew to it" although
  // nothing lowered the claim for it (its spec stayed 4Gi, ControllerResizeInfeasible).
  it('flags a request that records a recovery it never had (an earlier request’s recovered-to read as its own)', () => {
    const a = request(
      'a',
      'req-a',
      { size: '6Gi', recovery: 'Auto' },
      {
        phase: 'Failed',
        reason: 'RecoveredAtLowerSize',
        pvcUID: 'claim-1',
        targetSize: '6Gi',
        recovery: { attemptedSizes: ['1025Mi'] },
        timeline: { acceptedAt: at(0) },
      },
    );
    const b = request(
      'b',
      'req-b',
      { increment: '2Gi' },
      {
        phase: 'Failed',
        reason: 'RecoveredAtLowerSize',
        pvcUID: 'claim-1',
        targetSize: '4Gi',
        recovery: { attemptedSizes: ['1025Mi'] },
        timeline: { acceptedAt: at(20) },
      },
    );
    const events = [
      raise('c0', 'claim-1', '6Gi', 'req-a', '1Gi', 1),
      lower('c0', 'claim-1', '1025Mi', 2),
      statusWrite('a', 3),
      raise('c0', 'claim-1', '4Gi', 'req-b', '1025Mi', 21),
      statusWrite('b', 22),
    ];
    const report = checkInvariants(run({ events, requests: [a, b], claims: new Map([['c0', claim('claim-1', '1025Mi')]]) }));
    expect(report.violations.map((v) => [v.rule, v.subject])).toEqual([['recovery-recorded-truly', 'b (req-b)']]);
    expect(report.violations[0]?.evidence.map((e) => e.auditID)).toEqual([events[3]?.auditID, events[1]?.auditID]);
  });

  it('names the evidence: the audit lines of the violation', () => {
    const events = [raise('c0', 'claim-1', '2Gi', 'req-1'), raise('c0', 'claim-1', '2Gi', 'req-1', '2Gi', 3), statusWrite('grow', 4)];
    const [v] = checkInvariants(run({ events })).violations;
    expect(v?.evidence.map((e) => e.auditID)).toEqual([events[0]?.auditID, events[1]?.auditID]);
  });
});
