// A check that cannot fail proves nothing: each invariant of workload mode is shown to catch a
// decision broken on purpose. The operator runs with one of these mutants of its template, record,
// eviction, request or policy decisions in place of the real one, over seeds in workload mode,
// until the invariant the mutant breaks fires; each test prints the first seed that caught it.
import type { V1PersistentVolumeClaim, V1Pod, V1StatefulSet } from '@kubernetes/client-node';
import { describe, expect, it, vi } from 'vitest';
import type { VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import type { DeletionHistory } from '../../src/k8s/client.ts';
import type { PassInput } from '../../src/policies/autoscale/policy-pass.ts';
import type { RequestDecision } from '../../src/policies/request/decision.ts';
import type { RequestInput } from '../../src/policies/request/decide.ts';
import type { EvictionInput } from '../../src/policies/request/eviction.ts';
import { pvcAnnotations } from '../../src/crds/keys.ts';
import type { RecordDecision, RecordInput } from '../../src/policies/request/record-keeper.ts';
import { runSeed } from './simulation.ts';

type Mutant =
  | 'forget-the-record'
  | 'never-finish-the-template'
  | 'recreate-from-the-record'
  | 'recreate-what-its-owner-deleted'
  | 'keep-the-record'
  | 'evict-again'
  | 'believe-the-status'
  | 'evict-unrecorded'
  | 'ignore-the-workload'
  | 'evict-a-shared-claim'
  | 'hold-the-namespace'
  | 'create-in-a-new-namespace'
  | 'block-claims-a-statefulset-request-is-done-with';
const active = vi.hoisted(() => ({ mutant: undefined as string | undefined }));

vi.mock('../../src/policies/request/record-keeper.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/policies/request/record-keeper.ts')>();
  const { recreated } = await import('../../src/policies/request/statefulset-record.ts');
  const mutate = (d: RecordDecision, input: RecordInput): RecordDecision => {
    if (d.kind === 'update' && d.then) return { ...d, then: mutate(d.then, input) };
    if (d.kind === 'readStatefulSet') return { ...d, onRead: (s: V1StatefulSet | undefined, at: string) => mutate(d.onRead(s, at), input) };
    if (d.kind === 'readDeletion')
      return { ...d, onRead: (h: DeletionHistory) => mutate(d.onRead(active.mutant === 'recreate-what-its-owner-deleted' ? orphanedOnly(h) : h), input) };
    // The record never let go of, whatever became of its request.
    if (active.mutant === 'keep-the-record' && d.kind === 'deleteRecord') return { kind: 'wait' };
    if (d.kind !== 'createStatefulSet') return d;
    const { name: _n, namespace: _ns, resourceVersion: _rv, uid: _uid, ...content } = input.record;
    // A StatefulSet gone after pvx deleted it: the record ends instead of creating it again.
    if (active.mutant === 'forget-the-record')
      return { kind: 'update', content: { ...content, phase: 'Recreated', reason: 'Recreated', message: 'forgotten' } };
    // The record kept Deleting for ever where it would create the StatefulSet again.
    if (active.mutant === 'never-finish-the-template') return { kind: 'wait', requeueAfterMs: 60_000 };
    // Created again from the state recorded before the delete, not its last state (an edit made meanwhile lost).
    if (active.mutant === 'recreate-from-the-record') return { ...d, statefulSet: recreated(input.record.object, input.record) };
    return d;
  };
  return {
    ...real,
    decideRecord: (input: RecordInput): RecordDecision => {
      // Any deletion taken for pvx's own: one its owner began is created again.
      const blind: RecordInput =
        active.mutant === 'recreate-what-its-owner-deleted'
          ? {
              ...input,
              record: {
                ...input.record,
                phase: input.record.phase === 'Recorded' ? 'Deleting' : input.record.phase,
                deletedResourceVersion: input.record.deletedResourceVersion ?? input.record.statefulSet.resourceVersion,
              },
              statefulSet: input.statefulSet && { ...input.statefulSet, metadata: { ...input.statefulSet.metadata, finalizers: ['orphan'] } },
            }
          : input;
      // The namespace known by its name alone: one deleted and created again is taken for the one pvx deleted from.
      if (active.mutant === 'create-in-a-new-namespace') {
        const byName: RecordInput = { ...blind, record: { ...blind.record, namespaceUID: undefined } };
        return mutate(real.decideRecord(byName), byName);
      }
      return mutate(real.decideRecord(blind), blind);
    },
  };
});

vi.mock('../../src/policies/request/eviction.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/policies/request/eviction.ts')>();
  return {
    ...real,
    decideEviction: (e: EvictionInput): RequestDecision | undefined => {
      const req = e.request;
      const unmarked = { ...e.pvc, metadata: { ...e.pvc.metadata, annotations: { ...e.pvc.metadata?.annotations, [pvcAnnotations.eviction]: '' } } };
      // The request's eviction forgotten once made: it evicts again whenever the kubelet still refuses.
      if (active.mutant === 'evict-again' && real.trustedEviction(req, e.pvc)?.phase === 'Evicted') {
        return real.decideEviction({ ...e, pvc: unmarked, request: { ...req, status: { ...req.status, eviction: undefined } } });
      }
      // The status believed as the record of pvx's eviction, whoever wrote it (before the mark on the claim).
      const ev = req.status?.eviction;
      if (active.mutant === 'believe-the-status' && ev) {
        const mark = real.evictionMarkText({ request: req.metadata.uid as string, podName: ev.podName, podUID: ev.podUID, owner: ev.owner ?? '' });
        const asStatus = (c: V1PersistentVolumeClaim) => ({
          ...c,
          metadata: { ...c.metadata, annotations: { ...c.metadata?.annotations, [pvcAnnotations.eviction]: mark } },
        });
        const d = real.decideEviction({ ...e, pvc: asStatus(e.pvc) });
        return d?.kind === 'evict' ? { ...d, onLive: (pods, claim) => d.onLive(pods, claim && asStatus(claim)) } : d;
      }
      const claim = req.spec.target.pvcName;
      const mounts = (p: V1Pod) => p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === claim);
      // The workload ignored: no other request, no other pod, no StatefulSet whose ordinals say which pods are missing.
      const blind = { ...e, requests: [], pods: e.pods.filter(mounts), statefulSetNamed: undefined };
      // Other holders of the volume ignored: only the pods of a controller count, here and in the check before the eviction.
      const shared = { ...e, pods: e.pods.filter((p) => !mounts(p) || p.metadata?.ownerReferences?.some((o) => o.kind === 'StatefulSet')) };
      const d = real.decideEviction(active.mutant === 'ignore-the-workload' ? blind : active.mutant === 'evict-a-shared-claim' ? shared : e);
      if (active.mutant === 'evict-a-shared-claim' && d?.kind === 'evict') return { ...d, onLive: () => undefined };
      // The pod evicted without its mark and record written first.
      if (active.mutant === 'evict-unrecorded' && d?.kind === 'evict') return { ...d, record: undefined, mark: undefined, onLive: () => undefined };
      return d;
    },
  };
});

vi.mock('../../src/policies/request/decide.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/policies/request/decide.ts')>();
  return {
    ...real,
    decideRequest: (input: RequestInput): RequestDecision => {
      const d = real.decideRequest(input);
      if (active.mutant !== 'hold-the-namespace' || !input.request.spec.statefulSetTemplate?.update) return d;
      // The record's finalizer held on every template request and never released, as before the record moved.
      const finalizers = input.request.metadata.finalizers ?? [];
      if (d.kind === 'setFinalizers') return d.then;
      if (finalizers.includes('pvx.dev/statefulset-record') || input.request.metadata.deletionTimestamp) return d;
      return { kind: 'setFinalizers', finalizers: [...finalizers, 'pvx.dev/statefulset-record'], then: d };
    },
  };
});

vi.mock('../../src/policies/autoscale/policy-pass.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/policies/autoscale/policy-pass.ts')>();
  return {
    ...real,
    policyPass: (input: PassInput) => {
      if (active.mutant !== 'block-claims-a-statefulset-request-is-done-with') return real.policyPass(input);
      // An unfinished StatefulSet request counted for every claim it pinned, done with or not.
      const unfinishedTargets = (r: VolumeExpansionRequest): VolumeExpansionRequest =>
        r.spec.target.statefulSetName && r.status?.targets && !['Completed', 'Failed', 'Rejected'].includes(r.status.phase ?? '')
          ? { ...r, status: { ...r.status, targets: r.status.targets.map((t) => ({ ...t, phase: 'Pending', reason: undefined })) } }
          : r;
      return real.policyPass({ ...input, requests: input.requests.map(unfinishedTargets) });
    },
  };
});

/** A history read as if every deletion in it were an orphaning one (pvx's): who began it is lost. */
function orphanedOnly(h: DeletionHistory): DeletionHistory {
  if (h.kind !== 'deleted') return h;
  const orphan = <T extends { metadata?: { finalizers?: string[]; deletionTimestamp?: Date } }>(o: T): T =>
    o.metadata?.deletionTimestamp ? { ...o, metadata: { ...o.metadata, finalizers: ['orphan'] } } : o;
  return { ...h, versions: h.versions.map(orphan), last: orphan(h.last) };
}

/** The first seed (from `from`, at most `count`) whose run breaks `rule` with the mutant in place. */
async function firstCatch(mutant: Mutant, rule: string, from: number, count: number): Promise<number | undefined> {
  active.mutant = mutant;
  try {
    for (let seed = from; seed < from + count; seed++) {
      const r = await runSeed(seed, { workloads: 'always' });
      if (r.violations.some((v) => v.rule === rule)) return seed;
    }
    return undefined;
  } finally {
    active.mutant = undefined;
  }
}

describe('workload mode’s invariants catch a broken decision', () => {
  it.each<[Mutant, string, number]>([
    ['forget-the-record', 'no-statefulset-lost', 150],
    ['never-finish-the-template', 'template-update-settles', 800],
    ['recreate-from-the-record', 'statefulset-recreated-as-written', 300],
    ['recreate-what-its-owner-deleted', 'never-recreate-owner-deleted', 800],
    ['keep-the-record', 'no-record-outlives-its-request', 150],
    ['evict-unrecorded', 'eviction-recorded-first', 150],
    ['evict-again', 'one-eviction-per-request', 200],
    ['believe-the-status', 'eviction-recorded-first', 800],
    ['ignore-the-workload', 'one-pod-of-a-workload-at-a-time', 200],
    ['evict-a-shared-claim', 'eviction-finishes-expansion', 300],
    ['hold-the-namespace', 'namespace-deletion-not-held', 300],
    ['create-in-a-new-namespace', 'never-recreate-owner-deleted', 1200],
    ['block-claims-a-statefulset-request-is-done-with', 'policy-keeps-growing', 800],
  ])(
    'mutant %s is caught by %s',
    async (mutant, rule, count) => {
      const seed = await firstCatch(mutant, rule, 1, count);
      console.log(`mutant ${mutant}: caught by ${rule} at seed ${seed ?? `none of 1–${count}`}`);
      expect(seed, `no seed of 1–${count} caught mutant ${mutant}`).toBeDefined();
    },
    900_000,
  );
});
