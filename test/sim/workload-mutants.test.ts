// A check that cannot fail proves nothing: each invariant of workload mode is shown to catch a
// decision broken on purpose. The operator runs with one of these mutants of its template and
// eviction steps in place of the real one, over seeds in workload mode, until the invariant the
// mutant breaks fires; each test prints the first seed that caught it.
import { describe, expect, it, vi } from 'vitest';
import type { V1StatefulSet } from '@kubernetes/client-node';
import type { DeletionHistory } from '../../src/k8s/client.ts';
import type { RequestDecision } from '../../src/policies/request/decision.ts';
import type { EvictionInput } from '../../src/policies/request/eviction.ts';
import type { RecordDecision, RecordInput } from '../../src/policies/request/record-keeper.ts';
import { runSeed } from './simulation.ts';

type Mutant = 'forget-the-record' | 'never-finish-the-template' | 'evict-again' | 'evict-unrecorded' | 'ignore-the-workload';
const active = vi.hoisted(() => ({ mutant: undefined as string | undefined }));

vi.mock('../../src/policies/request/record-keeper.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/policies/request/record-keeper.ts')>();
  const mutate = (d: RecordDecision, input: RecordInput): RecordDecision => {
    if (d.kind === 'update' && d.then) return { ...d, then: mutate(d.then, input) };
    if (d.kind === 'readStatefulSet') return { ...d, onRead: (s: V1StatefulSet | undefined) => mutate(d.onRead(s), input) };
    if (d.kind === 'readDeletion') return { ...d, onRead: (h: DeletionHistory) => mutate(d.onRead(h), input) };
    if (d.kind !== 'createStatefulSet') return d;
    // A StatefulSet gone after pvx deleted it: the record ends instead of creating it again.
    if (active.mutant === 'forget-the-record') {
      const { name: _n, namespace: _ns, resourceVersion: _rv, uid: _uid, ...content } = input.record;
      return { kind: 'update', content: { ...content, phase: 'Recreated', reason: 'Recreated', message: 'forgotten' } };
    }
    // The record kept Deleting for ever where it would create the StatefulSet again.
    if (active.mutant === 'never-finish-the-template') return { kind: 'wait', requeueAfterMs: 60_000 };
    return d;
  };
  return { ...real, decideRecord: (input: RecordInput): RecordDecision => mutate(real.decideRecord(input), input) };
});

vi.mock('../../src/policies/request/eviction.ts', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/policies/request/eviction.ts')>();
  return {
    ...real,
    decideEviction: (e: EvictionInput): RequestDecision | undefined => {
      const req = e.request;
      // The request's eviction forgotten once made: it evicts again whenever the kubelet still refuses.
      if (active.mutant === 'evict-again' && req.status?.eviction?.phase === 'Evicted') {
        return real.decideEviction({ ...e, request: { ...req, status: { ...req.status, eviction: undefined } } });
      }
      // The workload ignored: no other request, no other pod, no StatefulSet whose ordinals say which pods are missing.
      const blind = {
        ...e,
        requests: [],
        pods: e.pods.filter((p) => p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === req.spec.target.pvcName)),
        statefulSetNamed: undefined,
      };
      const d = real.decideEviction(active.mutant === 'ignore-the-workload' ? blind : e);
      // The pod evicted without its record written first.
      if (active.mutant === 'evict-unrecorded' && d?.kind === 'evict') return { ...d, record: undefined };
      return d;
    },
  };
});

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
    ['forget-the-record', 'no-statefulset-lost', 80],
    ['never-finish-the-template', 'template-update-settles', 80],
    ['evict-unrecorded', 'eviction-recorded-first', 80],
    ['evict-again', 'one-eviction-per-request', 150],
    ['ignore-the-workload', 'one-pod-of-a-workload-at-a-time', 150],
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
