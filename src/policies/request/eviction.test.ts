// The eviction step of a request whose claim waits at the node stage, case by case: the request,
// its claim as the kubelet left it, the namespace's pods and requests — one decision out.
import type { V1PersistentVolumeClaim, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { EvictionStatus, Phase, RequestStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { RequestDecision } from './decision.ts';
import { decideEviction, evictionMarkText, evictionRetryMaxMs, evictionRetryMs, nextEvictionAttempt, type EvictionInput } from './eviction.ts';
import { pvcAnnotations } from '../../crds/keys.ts';
import { derivePhase } from './phase.ts';

const now = new Date('2026-11-29T12:00:00.000Z');
/** What the kubelet writes when the driver refuses NodeExpandVolume on a volume in use (Kubernetes 1.34, node_expander.go). */
const inUse =
  'failed to expand pvc with Expander.NodeExpand failed to expand the volume : rpc error: code = FailedPrecondition desc = volume pvc-1 is in use: this driver grows its filesystem only when it is mounted anew';

function claim(name = 'data-web-0', refused = true): V1PersistentVolumeClaim {
  return {
    metadata: { name, namespace: 'db', uid: `claim-${name}` },
    spec: { storageClassName: 'offline', resources: { requests: { storage: '2Gi' } } },
    status: {
      phase: 'Bound',
      capacity: { storage: '1Gi' },
      allocatedResources: { storage: '2Gi' },
      allocatedResourceStatuses: { storage: 'NodeResizeInProgress' },
      conditions: [{ type: 'FileSystemResizePending', status: 'True' }, ...(refused ? [{ type: 'NodeResizeError', status: 'True', message: inUse }] : [])],
    },
  };
}

/** Claims by name, each as the request whose UID it carries patched it. */
function claimsPatchedBy(...patched: [V1PersistentVolumeClaim, string][]): Map<string, V1PersistentVolumeClaim> {
  return new Map(patched.map(([c, uid]) => [c.metadata?.name as string, { ...c, metadata: { ...c.metadata, annotations: { 'pvx.dev/request-uid': uid } } }]));
}

/** The eviction record of web-0, refused by a disruption budget since `at`. */
function blockedSince(at: Date): EvictionStatus {
  return {
    phase: 'Blocked',
    reason: 'DisruptionBudget',
    podName: 'web-0',
    podUID: 'uid-web-0',
    owner: 'StatefulSet/web',
    requestedAt: at.toISOString(),
    message: 'refused',
  };
}

function pod(
  name: string,
  claimName: string,
  over: { owner?: string | null; ownerName?: string; ready?: boolean; deleting?: boolean; uid?: string; phase?: string } = {},
): V1Pod {
  const owner = over.owner === undefined ? 'StatefulSet' : over.owner;
  const ownerName = over.ownerName ?? 'web';
  return {
    metadata: {
      name,
      namespace: 'db',
      uid: over.uid ?? `uid-${name}`,
      ...(owner
        ? {
            ownerReferences: [
              { apiVersion: 'apps/v1', kind: owner, name: ownerName, uid: ownerName === 'web' ? 'sts-1' : `uid-${ownerName}`, controller: true },
            ],
          }
        : {}),
      ...(over.deleting ? { deletionTimestamp: now } : {}),
    },
    spec: { containers: [], volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }] },
    status: { phase: over.phase ?? 'Running', conditions: [{ type: 'Ready', status: over.ready === false ? 'False' : 'True' }] },
  };
}

function request(name = 'grow-0', over: { opt?: 'EvictPod' | 'Wait'; eviction?: EvictionStatus; claimName?: string } = {}): VolumeExpansionRequest {
  return {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: { name, namespace: 'db', uid: `req-${name}` },
    spec: {
      target: { pvcName: over.claimName ?? 'data-web-0' },
      size: '2Gi',
      ...(over.opt ? { offlineNodeExpansion: over.opt } : { offlineNodeExpansion: 'EvictPod' as const }),
    },
    status: { phase: 'NodeExpansionPending', ...(over.eviction ? { eviction: over.eviction } : {}) },
  };
}

const shown: RequestStatus & { phase: Phase } = {
  phase: 'NodeExpansionPending',
  reason: 'PodRestartRequired',
  message: 'the kubelet cannot grow the filesystem while the volume is in use',
  timeline: { patchedAt: '2026-11-29T11:59:00.000Z' },
};

/** The claim as pvx marks it before it records an eviction: the pod it chose, for the request. */
function marked(c: V1PersistentVolumeClaim, req: VolumeExpansionRequest, ev: Pick<EvictionStatus, 'podName' | 'podUID' | 'owner'>): V1PersistentVolumeClaim {
  const mark = evictionMarkText({ request: req.metadata.uid as string, podName: ev.podName, podUID: ev.podUID, owner: ev.owner ?? '' });
  return { ...c, metadata: { ...c.metadata, annotations: { ...c.metadata?.annotations, [pvcAnnotations.eviction]: mark } } };
}

/**
 * An eviction decided for the input; its claim, and those of the other requests that record one,
 * marked for the recorded pod as pvx's own record would have it (unless `pvc`, `claimNamed` are given).
 */
function decide(over: Partial<EvictionInput> = {}): RequestDecision | undefined {
  const pods = over.pods ?? [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1')];
  const claims = new Map([claim(), claim('data-web-1', false)].map((c) => [c.metadata?.name as string, c]));
  for (const r of over.requests ?? []) {
    const name = r.spec.target.pvcName as string;
    const ev = r.status?.eviction;
    if (ev && claims.has(name)) claims.set(name, marked(claims.get(name) as V1PersistentVolumeClaim, r, ev));
  }
  const req = over.request ?? request();
  const recorded = req.status?.eviction;
  return decideEviction({
    request: req,
    pvc: recorded ? marked(claim(req.spec.target.pvcName), req, recorded) : claim(req.spec.target.pvcName),
    pods,
    requests: [],
    claimNamed: (n) => claims.get(n),
    shown,
    now,
    requeueAfterMs: 30_000,
    ...over,
  });
}

describe('the kubelet’s refusal is read as it writes it', () => {
  it('derivePhase: NodeResizeError with FailedPrecondition is a restart to make, not a driver error to retry', () => {
    const p = derivePhase({ pvc: claim(), pvcUID: 'claim-data-web-0', targetBytes: 2n * 1024n ** 3n, mountedByRunningPod: true, now });
    expect(p).toMatchObject({ phase: 'NodeExpansionPending', reason: 'PodRestartRequired' });
    const other = claim();
    other.status!.conditions = [{ type: 'NodeResizeError', status: 'True', message: 'rpc error: code = Internal desc = resize2fs failed' }];
    expect(derivePhase({ pvc: other, pvcUID: 'claim-data-web-0', targetBytes: 2n * 1024n ** 3n, mountedByRunningPod: true, now }).reason).toBe(
      'NodeResizeError',
    );
  });
});

describe('evicting the pod that mounts the claim', () => {
  it('records the pod first, then evicts it on its UID', () => {
    const d = decide();
    expect(d?.kind).toBe('evict');
    if (d?.kind !== 'evict') return;
    expect(d.pod).toEqual({ namespace: 'db', name: 'web-0', uid: 'uid-web-0' });
    expect(d.record).toMatchObject({
      phase: 'NodeExpansionPending',
      eviction: { phase: 'Requested', podName: 'web-0', podUID: 'uid-web-0', owner: 'StatefulSet/web', requestedAt: now.toISOString() },
    });
    expect(d.onEvicted(now)).toMatchObject({
      kind: 'status',
      status: { reason: 'PodEvicted', eviction: { phase: 'Evicted', evictedAt: now.toISOString() }, timeline: { evictedAt: now.toISOString() } },
    });
    expect(
      d.onBlocked(429, "Cannot evict pod as it would violate the pod's disruption budget. The disruption budget web needs 2 healthy pods and has 2 currently"),
    ).toMatchObject({
      kind: 'status',
      status: { eviction: { phase: 'Blocked', reason: 'DisruptionBudget' } },
      requeueAfterMs: evictionRetryMs,
    });
    expect(d.onBlocked(403, 'forbidden')).toMatchObject({
      status: { eviction: { phase: 'Blocked', reason: 'Forbidden', message: expect.stringMatching(/offlineExpansion\.enabled/) } },
    });
  });

  it('without the opt-in, names the pod a person should restart, and evicts nothing', () => {
    const d = decide({ request: request('grow-0', { opt: 'Wait' }) });
    expect(d).toMatchObject({ kind: 'status' });
    expect(d?.kind === 'status' && d.status.message).toMatch(
      /restart pod web-0 \(kubectl delete pod web-0 -n db: its controller creates it again\), or let pvx evict it: a request with spec\.offlineNodeExpansion: EvictPod/,
    );
  });

  it('not before the kubelet said it cannot grow the filesystem in use', () => {
    expect(decide({ pvc: claim('data-web-0', false) })).toBeUndefined();
  });

  it.each<[string, string | null]>([
    ['a bare pod', null],
    ['a pod of a Job (its restarts count against it)', 'Job'],
    ['a pod of an operator pvx does not know', 'Cluster'],
  ])('never evicts %s: a person restarts it', (_name, owner) => {
    const d = decide({ pods: [pod('web-0', 'data-web-0', { owner })] });
    expect(d?.kind).toBe('status');
    expect(d?.kind === 'status' && d.status.message).toMatch(
      /pvx evicts only a pod a StatefulSet, ReplicaSet, ReplicationController or DaemonSet creates again/,
    );
  });

  it.each(['ReplicaSet', 'DaemonSet', 'ReplicationController'])('evicts a pod of a %s', (owner) => {
    expect(decide({ pods: [pod('web-0', 'data-web-0', { owner })] })?.kind).toBe('evict');
  });

  describe('one pod of a workload at a time', () => {
    it.each([
      ['another of its pods is not ready', { ready: false }],
      ['another of its pods is terminating', { deleting: true }],
    ])('waits while %s', (_name, over) => {
      const d = decide({ pods: [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1', over)] });
      expect(d?.kind).toBe('status');
      expect(d?.kind === 'status' && d.status.message).toMatch(
        /waiting to evict pod web-0: pod web-1 of StatefulSet web is not ready \(one pod of StatefulSet web at a time\)/,
      );
    });

    // Seed 520: the request that evicted web-1 was deleted at once, and web-1 was gone from the
    // pods' cache before its StatefulSet created it again: no record and no pod showed it.
    it('waits while a pod of an ordinal its StatefulSet runs is missing (evicted for a request deleted since, not created again yet)', () => {
      const sts = (replicas: number, uid = 'sts-1') => ({
        metadata: { name: 'web', namespace: 'db', uid },
        spec: { replicas, selector: {}, serviceName: 'web', template: {} },
      });
      const d = decide({ pods: [pod('web-0', 'data-web-0')], statefulSetNamed: () => sts(2) });
      expect(d).toMatchObject({
        kind: 'status',
        status: { reason: 'EvictionWaits', message: expect.stringMatching(/waiting to evict pod web-0: pod web-1 of StatefulSet web is missing/) },
      });
      // Back, or an ordinal it no longer runs, or another StatefulSet of the name (the pods' owner is not it): no wait.
      expect(decide({ pods: [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1', { uid: 'uid-web-1-new' })], statefulSetNamed: () => sts(2) })?.kind).toBe(
        'evict',
      );
      expect(decide({ pods: [pod('web-0', 'data-web-0')], statefulSetNamed: () => sts(1) })?.kind).toBe('evict');
      expect(decide({ pods: [pod('web-0', 'data-web-0')], statefulSetNamed: () => sts(2, 'sts-2') })?.kind).toBe('evict');
    });

    it('waits while another request evicts (or evicted, and its claim has not grown yet) a pod of the same workload', () => {
      const other = request('grow-1', {
        claimName: 'data-web-1',
        eviction: { phase: 'Blocked', podName: 'web-1', podUID: 'uid-web-1', owner: 'StatefulSet/web' },
      });
      expect(decide({ requests: [other] })).toMatchObject({
        kind: 'status',
        status: { message: expect.stringMatching(/request grow-1 is evicting pod web-1/) },
      });
      const evicted = request('grow-1', {
        claimName: 'data-web-1',
        eviction: { phase: 'Evicted', podName: 'web-1', podUID: 'uid-web-1', owner: 'StatefulSet/web' },
      });
      expect(decide({ requests: [evicted], pods: [pod('web-0', 'data-web-0')] })).toMatchObject({
        kind: 'status',
        status: { message: expect.stringMatching(/request grow-1 evicted pod web-1, which is not back yet/) },
      });
      // Back (another pod, ready, mounts its claim): it is in nobody's way.
      expect(decide({ requests: [evicted], pods: [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1', { uid: 'uid-web-1-new' })] })?.kind).toBe('evict');
    });

    // Seed 2393668: grow-1 evicted web-1 and failed at its deadline while web-1 was being created
    // again (Pending); web-0, not ready, was evicted for grow-0 at once: two pods of one workload down.
    describe('an eviction whose request has ended (or was deleted) holds the workload until its pod is back', () => {
      const evicted: EvictionStatus = { phase: 'Evicted', podName: 'web-1', podUID: 'uid-web-1', owner: 'StatefulSet/web', evictedAt: now.toISOString() };
      const failed = request('grow-1', { claimName: 'data-web-1', eviction: evicted });
      failed.status = { ...failed.status, phase: 'Failed', reason: 'DeadlineExceeded' };
      const claims = new Map([
        ['data-web-0', claim()],
        ['data-web-1', marked(claim('data-web-1', false), failed, evicted)],
      ]);
      const mine = request('grow-0');
      const after = (pods: V1Pod[], requests: VolumeExpansionRequest[]) =>
        decide({ request: mine, pods, requests: [mine, ...requests], claimNamed: (n) => claims.get(n) });
      const web0 = pod('web-0', 'data-web-0', { ready: false });
      const pending = pod('web-1', 'data-web-1', { uid: 'uid-web-1-new', phase: 'Pending', ready: false });

      it.each([
        ['failed at its deadline', [failed]],
        ['deleted (its mark on the claim alone)', []],
      ])('%s: waits while the pod it evicted is being created again', (_name, requests) => {
        expect(after([web0, pending], requests)).toMatchObject({
          kind: 'status',
          status: { reason: 'EvictionWaits', message: expect.stringMatching(/pod web-1, evicted by pvx for a request that has ended, is not back yet/) },
        });
      });

      it('goes once a pod runs with the claim again, ready or not (a crash loop does not hold the workload for ever)', () => {
        const running = pod('web-1', 'data-web-1', { uid: 'uid-web-1-new', ready: false });
        expect(after([web0, running], [failed])?.kind).toBe('evict');
      });

      it('a pod of an ordinal its StatefulSet no longer runs, or of another workload, holds nothing', () => {
        const sts = { metadata: { name: 'web', namespace: 'db', uid: 'sts-1' }, spec: { replicas: 1, selector: {}, serviceName: 'web', template: {} } };
        expect(decide({ request: mine, pods: [web0], requests: [mine, failed], claimNamed: (n) => claims.get(n), statefulSetNamed: () => sts })?.kind).toBe(
          'evict',
        );
        const elsewhere = pod('web-0', 'data-web-0', { ready: false, ownerName: 'queue' });
        expect(after([elsewhere, pending], [failed])?.kind).toBe('evict');
      });
    });

    it('of two requests that would evict pods of one workload now, the first by name goes first; one waiting its turn for its claim is no rival', () => {
      const claims = claimsPatchedBy([claim(), 'req-grow-0'], [claim('data-web-1'), 'req-grow-1']);
      const [a, b] = [request('grow-0'), request('grow-1', { claimName: 'data-web-1' })];
      const input = { pods: [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1')], requests: [a, b], claimNamed: (n: string) => claims.get(n) };
      expect(decide({ ...input, request: a })?.kind).toBe('evict');
      const second = decide({ ...input, request: b, pvc: claims.get('data-web-1') as V1PersistentVolumeClaim });
      expect(second).toMatchObject({
        kind: 'status',
        status: { reason: 'EvictionWaits', message: expect.stringMatching(/request grow-0 evicts its pod first/) },
      });
      // grow-0 did not patch its claim (another request did, and grow-0 waits its turn): grow-1 goes.
      const notIts = claimsPatchedBy([claim(), 'someone-else'], [claim('data-web-1'), 'req-grow-1']);
      expect(decide({ ...input, claimNamed: (n: string) => notIts.get(n), request: b, pvc: notIts.get('data-web-1') as V1PersistentVolumeClaim })?.kind).toBe(
        'evict',
      );
    });

    it('tries the recorded pod again without writing its record again (an eviction whose answer was lost)', () => {
      const requested: EvictionStatus = { phase: 'Requested', podName: 'web-0', podUID: 'uid-web-0', owner: 'StatefulSet/web', requestedAt: now.toISOString() };
      const d = decide({ request: request('grow-0', { eviction: requested }) });
      expect(d).toMatchObject({ kind: 'evict', pod: { uid: 'uid-web-0' } });
      expect(d).not.toHaveProperty('record');
    });
  });

  describe('at most once per request', () => {
    const evicted: EvictionStatus = {
      phase: 'Evicted',
      podName: 'web-0',
      podUID: 'uid-web-0',
      owner: 'StatefulSet/web',
      evictedAt: '2026-11-29T11:59:30.000Z',
    };

    it('never evicts the next pod, whatever the kubelet says', () => {
      const d = decide({ request: request('grow-0', { eviction: evicted }), pods: [pod('web-0', 'data-web-0', { uid: 'uid-web-0-new' })] });
      expect(d).toMatchObject({ kind: 'status', status: { eviction: { phase: 'Evicted' } } });
      expect(d?.kind === 'status' && d.status.message).toMatch(/pvx evicts no other pod for this request/);
    });

    it('retries only the pod it recorded, once a refusal’s wait is over', () => {
      const { reason: _, ...blocked } = blockedSince(new Date(now.getTime() - 5000));
      expect(decide({ request: request('grow-0', { eviction: blocked }) })).toMatchObject({ kind: 'status', requeueAfterMs: evictionRetryMs - 5000 });
      const later = { ...blocked, requestedAt: new Date(now.getTime() - evictionRetryMs).toISOString() };
      expect(decide({ request: request('grow-0', { eviction: later }) })).toMatchObject({ kind: 'evict', pod: { uid: 'uid-web-0' } });
    });

    // Seed 1494: a budget that refused for minutes cost two status writes per attempt (the record
    // written again as Requested, then Blocked), and the StatefulSet request above the child,
    // reconciled on each, went past the bound on reconciles of a request.
    it('tries a refused eviction again without writing its record again (the pod is recorded): one status write per attempt', () => {
      const blocked = blockedSince(new Date(now.getTime() - evictionRetryMs));
      const d = decide({ request: request('grow-0', { eviction: blocked }) });
      expect(d).toMatchObject({ kind: 'evict', pod: { uid: 'uid-web-0' } });
      expect(d).not.toHaveProperty('record');
      if (d?.kind !== 'evict') return;
      // Refused again with the same words: the status reads as it did (nothing to write), and the
      // refusals keep the time they began, from which the next wait grows.
      const again = d.onBlocked(429, 'refused');
      expect(again).toMatchObject({
        kind: 'status',
        status: { eviction: { phase: 'Blocked', podUID: 'uid-web-0', requestedAt: blocked.requestedAt } },
        requeueAfterMs: evictionRetryMs,
      });
      if (again.kind !== 'status') return;
      const later = new Date(now.getTime() + evictionRetryMs);
      const third = decide({ request: { ...request('grow-0'), status: again.status }, now: later, lastAttemptAt: now });
      if (third?.kind !== 'evict') throw new Error(`expected an eviction, got ${third?.kind}`);
      const thirdRefusal = third.onBlocked(429, 'refused');
      expect(thirdRefusal.kind === 'status' && thirdRefusal.status.eviction).toEqual(again.status.eviction);
      expect(thirdRefusal.kind === 'status' && thirdRefusal.status.message).toBe(again.status.message);
      expect(d.onEvicted(now)).toMatchObject({ kind: 'status', status: { eviction: { phase: 'Evicted', podUID: 'uid-web-0', evictedAt: now.toISOString() } } });
    });

    // Seed 893: the status a refusal wrote and the one shown while its wait runs said the same
    // thing in two texts, so each attempt cost a second write (and the StatefulSet request above
    // the child a look at each).
    it('while a refusal’s wait runs, shows what the refusal wrote: nothing to write between two attempts', () => {
      const requested: EvictionStatus = { phase: 'Requested', podName: 'web-0', podUID: 'uid-web-0', owner: 'StatefulSet/web', requestedAt: now.toISOString() };
      const first = decide({ request: request('grow-0', { eviction: requested }) });
      if (first?.kind !== 'evict') throw new Error(`expected an eviction, got ${first?.kind}`);
      const refused = first.onBlocked(429, "Cannot evict pod as it would violate the pod's disruption budget.");
      if (refused.kind !== 'status') throw new Error(`expected a status, got ${refused.kind}`);
      const later = new Date(now.getTime() + 5000);
      const waiting = decide({ request: { ...request('grow-0'), status: refused.status }, now: later });
      expect(waiting).toMatchObject({ kind: 'status', requeueAfterMs: evictionRetryMs - 5000 });
      expect(waiting?.kind === 'status' && { message: waiting.status.message, reason: waiting.status.reason, eviction: waiting.status.eviction }).toEqual({
        message: refused.status.message,
        reason: refused.status.reason,
        eviction: refused.status.eviction,
      });
    });

    it('the recorded pod gone (its eviction’s answer lost, or it went by itself): no other is evicted', () => {
      const requested: EvictionStatus = { phase: 'Requested', podName: 'web-0', podUID: 'uid-web-0', owner: 'StatefulSet/web', requestedAt: now.toISOString() };
      const d = decide({ request: request('grow-0', { eviction: requested }), pods: [pod('web-0', 'data-web-0', { uid: 'uid-web-0-new' })] });
      expect(d).toMatchObject({ kind: 'status', status: { eviction: { phase: 'Evicted', reason: 'PodGone', podUID: 'uid-web-0' } } });
    });

    it('the recorded pod gone while its claim no longer shows the kubelet’s refusal (it waits for a pod): recorded as gone all the same', () => {
      const requested: EvictionStatus = { phase: 'Requested', podName: 'web-0', podUID: 'uid-web-0', owner: 'StatefulSet/web', requestedAt: now.toISOString() };
      const waiting = { ...shown, phase: 'WaitingForPod' as Phase, reason: 'NodeResizePending' };
      const req = request('grow-0', { eviction: requested });
      const d = decide({ request: req, pvc: marked(claim('data-web-0', false), req, requested), pods: [], shown: waiting });
      expect(d).toMatchObject({ kind: 'status', status: { phase: 'WaitingForPod', eviction: { phase: 'Evicted', reason: 'PodGone' } } });
    });
  });

  describe('another request’s eviction whose record the pod has outrun', () => {
    const requested: EvictionStatus = { phase: 'Requested', podName: 'web-1', podUID: 'uid-web-1', owner: 'StatefulSet/web', requestedAt: now.toISOString() };
    const other = request('grow-1', { claimName: 'data-web-1', eviction: requested });

    it('its pod gone and not back: the workload waits for it, as for one recorded Evicted', () => {
      expect(decide({ requests: [other], pods: [pod('web-0', 'data-web-0')] })).toMatchObject({
        kind: 'status',
        status: { reason: 'EvictionWaits', message: expect.stringMatching(/request grow-1 evicted pod web-1, which is not back yet/) },
      });
    });

    it('its pod gone for good (its StatefulSet no longer runs that ordinal): in nobody’s way, however long its record says Requested', () => {
      const sts = { metadata: { name: 'web', namespace: 'db' }, spec: { replicas: 1, selector: {}, serviceName: 'web', template: {} } };
      expect(decide({ requests: [other], pods: [pod('web-0', 'data-web-0')], statefulSetNamed: () => sts })?.kind).toBe('evict');
    });
  });
});

// A refusal that lasts: each wait as long as the refusals have lasted, at most five minutes — a
// budget refusing for an hour costs about 15 attempts and no status write for those that read the
// same (it cost about 180 writes an hour at one attempt every 20 s).
describe('a refused eviction is tried again less and less often', () => {
  const since = new Date(now.getTime() - 10 * 60_000);
  const blocked = blockedSince(since);

  it.each<[string, number | undefined, number]>([
    ['first wait after the refusal', undefined, evictionRetryMs],
    ['20 s after the first refusal', 0, evictionRetryMs],
    ['a minute of refusals', 60_000, 60_000],
    ['ten minutes of refusals', 10 * 60_000, evictionRetryMaxMs],
  ])('%s', (_name, lastAfterMs, waitMs) => {
    const last = lastAfterMs === undefined ? undefined : new Date(since.getTime() + lastAfterMs);
    expect(nextEvictionAttempt(since, last).getTime() - (last ?? since).getTime()).toBe(waitMs);
  });

  it('waits until then with the status as the refusal wrote it, then tries the same pod', () => {
    const lastAttemptAt = new Date(now.getTime() - 60_000);
    const d = decide({ request: request('grow-0', { eviction: blocked }), lastAttemptAt });
    expect(d).toMatchObject({ kind: 'status', status: { eviction: blocked }, requeueAfterMs: evictionRetryMaxMs - 60_000 });
    expect(decide({ request: request('grow-0', { eviction: blocked }), lastAttemptAt: new Date(now.getTime() - evictionRetryMaxMs) })).toMatchObject({
      kind: 'evict',
      pod: { uid: 'uid-web-0' },
    });
  });
});

// Review, 2026-12-04: a Job's pod (a backup) also mounted the claim; pvx evicted the StatefulSet's
// pod, the Job kept the volume in use, and the filesystem did not grow.
describe('no eviction that cannot finish the expansion', () => {
  it.each<[string, V1Pod]>([
    ['a Job’s pod', pod('backup-1', 'data-web-0', { owner: 'Job', ownerName: 'backup' })],
    ['a bare pod', pod('debug', 'data-web-0', { owner: null })],
    ['another workload’s pod', pod('reader-0', 'data-web-0', { owner: 'ReplicaSet', ownerName: 'reader' })],
    ['a pod about to start', pod('backup-2', 'data-web-0', { owner: 'Job', ownerName: 'backup', phase: 'Pending' })],
  ])('evicts nothing while %s also holds the volume, and names it', (_name, other) => {
    const d = decide({ pods: [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1'), other] });
    expect(d).toMatchObject({ kind: 'status', status: { reason: 'VolumeHeldByOtherPod' } });
    expect(d?.kind === 'status' && d.status.message).toMatch(
      new RegExp(`pod ${other.metadata?.name} \\(.*\\) also mounts data-web-0: evicting pod web-0 would not grow the filesystem`),
    );
    expect(d).not.toHaveProperty('status.eviction');
  });

  it('a finished pod that named the claim holds nothing: evicts', () => {
    const done = pod('backup-1', 'data-web-0', { owner: 'Job', ownerName: 'backup', phase: 'Succeeded' });
    expect(decide({ pods: [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1'), done] })?.kind).toBe('evict');
  });

  it('waits for a terminating pod that still holds the volume', () => {
    const going = pod('backup-1', 'data-web-0', { owner: 'Job', ownerName: 'backup', deleting: true });
    expect(decide({ pods: [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1'), going] })).toMatchObject({
      kind: 'status',
      status: { reason: 'EvictionWaits', message: expect.stringMatching(/pod backup-1 is terminating and still holds data-web-0/) },
    });
  });

  it('a recorded eviction is not tried again while another pod holds the volume', () => {
    const requested: EvictionStatus = { phase: 'Requested', podName: 'web-0', podUID: 'uid-web-0', owner: 'StatefulSet/web', requestedAt: now.toISOString() };
    const job = pod('backup-1', 'data-web-0', { owner: 'Job', ownerName: 'backup' });
    expect(decide({ request: request('grow-0', { eviction: requested }), pods: [pod('web-0', 'data-web-0'), job] })).toMatchObject({
      kind: 'status',
      status: { reason: 'VolumeHeldByOtherPod', eviction: requested },
    });
  });
});

describe('two requests evicting in one workload never wait on each other', () => {
  const claims = claimsPatchedBy([claim(), 'req-grow-0'], [claim('data-web-1'), 'req-grow-1']);
  const [a, b] = [request('grow-0'), request('grow-1', { claimName: 'data-web-1' })];
  const both = (pods: V1Pod[], req: VolumeExpansionRequest) =>
    decide({
      pods,
      requests: [a, b],
      claimNamed: (n: string) => claims.get(n),
      request: req,
      pvc: claims.get(req.spec.target.pvcName as string) as V1PersistentVolumeClaim,
    });

  // Review, 2026-12-04: grow-0's pod was ready and waited for web-1 to be ready; grow-1's pod,
  // web-1, crash-looped on its full disk (Running, not Ready) and waited for grow-0, first by name.
  it('the request whose pod is not ready goes first: evicting it takes nothing more down', () => {
    const pods = [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1', { ready: false })];
    expect(both(pods, b)?.kind).toBe('evict');
    expect(both(pods, a)).toMatchObject({
      kind: 'status',
      status: { reason: 'EvictionWaits', message: expect.stringMatching(/pod web-1 of StatefulSet web is not ready/) },
    });
  });

  it('both pods not ready: the first by name goes, the other waits its turn', () => {
    const pods = [pod('web-0', 'data-web-0', { ready: false }), pod('web-1', 'data-web-1', { ready: false })];
    expect(both(pods, a)?.kind).toBe('evict');
    expect(both(pods, b)).toMatchObject({ kind: 'status', status: { message: expect.stringMatching(/request grow-0 evicts its pod first/) } });
  });

  // Simulation seed 255206: grow-1 recorded web-1 (marked on its claim), then a bare pod mounted
  // data-web-1 too; grow-1 could not evict, and held web-0's eviction for as long as the pod ran.
  it('a request whose recorded eviction waits on another pod holding its volume holds no other up', () => {
    const recorded = request('grow-1', {
      claimName: 'data-web-1',
      eviction: { phase: 'Requested', podName: 'web-1', podUID: 'uid-web-1', owner: 'StatefulSet/web' },
    });
    const debug = pod('debug', 'data-web-1', { owner: null });
    expect(decide({ requests: [recorded], pods: [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1'), debug] })?.kind).toBe('evict');
    // Without the other pod it would go on with its eviction: the workload waits for it.
    expect(decide({ requests: [recorded], pods: [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1')] })).toMatchObject({
      kind: 'status',
      status: { reason: 'EvictionWaits', message: expect.stringMatching(/request grow-1 is evicting pod web-1/) },
    });
  });

  it('a request that cannot evict (another pod holds its volume) holds no other up', () => {
    const job = pod('backup-1', 'data-web-0', { owner: 'Job', ownerName: 'backup' });
    const pods = [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1'), job];
    expect(both(pods, a)).toMatchObject({ kind: 'status', status: { reason: 'VolumeHeldByOtherPod' } });
    expect(both(pods, b)?.kind).toBe('evict');
  });
});

// Simulation seed 4142: a status writer rewrote a request's eviction record (Evicted, of the pod it
// evicted) into a Requested one for the pod that replaced it, and pvx evicted that one too.
describe('the eviction record is believed only as far as pvx marked it on the claim', () => {
  const evicted: EvictionStatus = { phase: 'Evicted', podName: 'web-0', podUID: 'uid-web-0', owner: 'StatefulSet/web', evictedAt: now.toISOString() };
  const forged: EvictionStatus = { phase: 'Requested', podName: 'web-0', podUID: 'uid-web-0-new', owner: 'StatefulSet/web' };
  const next = [pod('web-0', 'data-web-0', { uid: 'uid-web-0-new' }), pod('web-1', 'data-web-1')];

  it('a record rewritten for another pod: the marked one stands, and no other is evicted', () => {
    const req = request('grow-0', { eviction: forged });
    const d = decide({ request: req, pvc: marked(claim(), req, evicted), pods: next });
    expect(d?.kind).toBe('status');
    expect(d).toMatchObject({ status: { eviction: { podUID: 'uid-web-0', phase: 'Evicted', reason: 'PodGone' } } });
  });

  // Simulation seed 3050966: each rewrite cost two writes (the record restored, then its message),
  // and the request's StatefulSet request a write for each.
  it('a record rewritten for another pod is restored in one write: deciding again on it writes nothing more', () => {
    const req = request('grow-0', { eviction: forged });
    const pvc = marked(claim(), req, evicted);
    const timeline = { ...shown.timeline, evictedAt: '2026-11-29T11:59:30.000Z' };
    const first = decide({ request: req, pvc, pods: next, shown: { ...shown, timeline } });
    if (first?.kind !== 'status') throw new Error('expected a status');
    expect(first.status.eviction).toMatchObject({ podUID: 'uid-web-0', phase: 'Evicted', evictedAt: '2026-11-29T11:59:30.000Z' });
    const restored = { ...req, status: { ...req.status, ...first.status } } as VolumeExpansionRequest;
    const later = new Date(now.getTime() + 30_000);
    const again = decide({ request: restored, pvc, pods: next, shown: { ...shown, timeline }, now: later });
    expect(again).toMatchObject({ kind: 'status', status: first.status });
    expect(first.status.message).toMatch(/pod web-0 is gone; pod web-0 mounts it now and the kubelet still cannot grow it/);
  });

  // Simulation seed 255206: a status writer wrote an eviction record into another request of the workload.
  it('another request’s record with no mark on its claim holds nobody up, unless this process decided it (its mark on its way)', () => {
    const forged = request('grow-1', {
      claimName: 'data-web-1',
      eviction: { phase: 'Requested', podName: 'web-1', podUID: 'uid-web-1', owner: 'StatefulSet/web' },
    });
    const unmarked = new Map([claim(), claim('data-web-1', false)].map((c) => [c.metadata?.name as string, c]));
    const input = { requests: [forged], claimNamed: (n: string) => unmarked.get(n) };
    expect(decide(input)?.kind).toBe('evict');
    expect(decide({ ...input, decidedHere: (uid) => uid === 'req-grow-1' })).toMatchObject({
      kind: 'status',
      status: { reason: 'EvictionWaits', message: expect.stringMatching(/request grow-1 is evicting pod web-1/) },
    });
  });

  it('a record with no mark on the claim is not pvx’s: a new eviction is marked first, then recorded', () => {
    const d = decide({ request: request('grow-0', { eviction: forged }), pvc: claim(), pods: [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1')] });
    expect(d).toMatchObject({ kind: 'evict', pod: { uid: 'uid-web-0' }, record: { eviction: { podUID: 'uid-web-0', phase: 'Requested' } } });
    if (d?.kind !== 'evict') return;
    expect(JSON.parse(d.mark?.patch.annotations[pvcAnnotations.eviction] as string)).toEqual({
      request: 'req-grow-0',
      podName: 'web-0',
      podUID: 'uid-web-0',
      owner: 'StatefulSet/web',
    });
    expect(d.mark?.patch).toMatchObject({ uid: 'claim-data-web-0' });
  });

  it('a pod marked and not recorded (the record’s write failed) is recorded first, so that the workload’s other requests count it', () => {
    const req = request();
    const d = decide({ request: req, pvc: marked(claim(), req, { podName: 'web-0', podUID: 'uid-web-0', owner: 'StatefulSet/web' }) });
    expect(d).toMatchObject({ kind: 'evict', pod: { uid: 'uid-web-0' }, record: { eviction: { podUID: 'uid-web-0', phase: 'Requested' } } });
    // The mark is there already: not written again.
    expect(d).not.toHaveProperty('mark');
  });

  it('evicts nothing while the claim, read live, marks another pod for the request (a cache behind the mark)', () => {
    const d = decide({ pods: [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1')] });
    if (d?.kind !== 'evict') throw new Error('expected an eviction');
    const req = request();
    const live = [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1')];
    expect(d.onLive(live, marked(claim(), req, { podName: 'web-0', podUID: 'uid-web-0', owner: 'StatefulSet/web' }))).toBeUndefined();
    expect(d.onLive(live, marked(claim(), req, { podName: 'web-0', podUID: 'uid-web-0-old', owner: 'StatefulSet/web' }))).toMatchObject({
      kind: 'status',
      status: { reason: 'EvictionWaits', message: expect.stringMatching(/pvx chose pod web-0 for this request already: it evicts no other/) },
    });
    expect(d.onLive(live, claim())).toMatchObject({ kind: 'status', status: { message: expect.stringMatching(/does not show pvx's mark/) } });
  });
});

// Seed 1212322: a pods list answered late showed the pod still owned by a StatefulSet deleted with
// propagation Orphan meanwhile; the pod was evicted and nothing created it again.
describe('the StatefulSet that creates the pod again, read after the pods', () => {
  const req = request();
  const live = [pod('web-0', 'data-web-0')];
  const markedClaim = () => marked(claim(), req, { podName: 'web-0', podUID: 'uid-web-0', owner: 'StatefulSet/web' });
  const web = (over: Partial<V1StatefulSet['metadata']> = {}): V1StatefulSet => ({ metadata: { name: 'web', namespace: 'db', uid: 'sts-1', ...over } });
  const evicting = () => {
    const d = decide({ pods: live });
    if (d?.kind !== 'evict') throw new Error('expected an eviction');
    return d;
  };

  it('evicts when it is there, the same one, not being deleted (or when it was not read)', () => {
    expect(evicting().onLive(live, markedClaim(), web())).toBeUndefined();
    expect(evicting().onLive(live, markedClaim())).toBeUndefined();
  });

  it.each([
    ['gone', null, /StatefulSet web, which would create it again, is gone/],
    ['another of the name', web({ uid: 'sts-2' }), /is gone/],
    ['being deleted', web({ deletionTimestamp: now }), /StatefulSet web, which would create it again, is being deleted/],
  ])('evicts nothing when it is %s, and says to restart the pod by hand', (_what, statefulSet, message) => {
    expect(evicting().onLive(live, markedClaim(), statefulSet)).toMatchObject({
      kind: 'status',
      status: { reason: 'EvictionNotPossible', message: expect.stringMatching(message) },
    });
  });
});

// Seed 206131: a recorded eviction waiting its turn (another pod of the workload not ready) read as
// PodRestartRequired, as if a person had to act, and not as the wait it is.
it('a recorded eviction waiting for another pod of its workload reads EvictionWaits, as a first attempt does', () => {
  const requested: EvictionStatus = { phase: 'Requested', podName: 'web-0', podUID: 'uid-web-0', owner: 'StatefulSet/web', requestedAt: now.toISOString() };
  const d = decide({ request: request('grow-0', { eviction: requested }), pods: [pod('web-0', 'data-web-0'), pod('web-1', 'data-web-1', { ready: false })] });
  expect(d).toMatchObject({ kind: 'status', status: { reason: 'EvictionWaits', message: expect.stringMatching(/pod web-1 of StatefulSet web is not ready/) } });
});

// Seed 450485: a refused eviction's backoff (up to five minutes) looked again only past the
// request's deadline, which then did not hold.
it('no wait outlasts the request’s deadline, a refused eviction’s backoff included', () => {
  const blocked = blockedSince(new Date(now.getTime() - 10 * 60_000));
  const lastAttemptAt = new Date(now.getTime() - 1000);
  const far = decide({ request: request('grow-0', { eviction: blocked }), lastAttemptAt });
  expect(far).toMatchObject({ kind: 'status' });
  expect(far?.kind === 'status' && far.requeueAfterMs).toBeGreaterThan(30_000);
  const d = decide({ request: request('grow-0', { eviction: blocked }), lastAttemptAt, deadline: new Date(now.getTime() + 30_000) });
  expect(d).toMatchObject({ kind: 'status', requeueAfterMs: 30_000 });
});
