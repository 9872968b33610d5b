import type { V1ManagedFieldsEntry, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { pvcAnnotations } from '../../crds/keys.ts';
import { attributesClassFields, storageRequestFields } from '../../k8s/resources.ts';
import { currentLedger, ledgerAnnotations, ledgerText, observeClaim, observedAlike, readLedger, type Ledger, type LedgerEntry } from './ledger.ts';

const now = new Date('2026-11-29T12:00:00Z');
const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000).toISOString();
const budget = { count: 4, windowMs: 24 * 3_600_000 };

const writer = (manager: string, minutes: number | undefined, fieldsV1: object = storageRequestFields): V1ManagedFieldsEntry =>
  ({ manager, operation: 'Update', ...(minutes === undefined ? {} : { time: ago(minutes) }), fieldsV1 }) as V1ManagedFieldsEntry;

interface ClaimOptions {
  request?: string;
  capacity?: string;
  cls?: string;
  /** status.currentVolumeAttributesClassName: default the spec's class (none applied: null). */
  applied?: string | null;
  modifyVolumeStatus?: { targetVolumeAttributesClassName?: string; status: string };
  phase?: string;
  ledger?: Ledger | string;
  annotations?: Record<string, string>;
  writers?: V1ManagedFieldsEntry[];
}

function claim(o: ClaimOptions = {}): V1PersistentVolumeClaim {
  const ledger: Record<string, string> =
    o.ledger === undefined ? {} : { [pvcAnnotations.modifications]: typeof o.ledger === 'string' ? o.ledger : ledgerText(o.ledger) };
  return {
    metadata: {
      name: 'data',
      namespace: 'db',
      uid: 'u1',
      annotations: { ...ledger, ...o.annotations },
      managedFields: [writer('kubectl-client-side-apply', 6000), ...(o.writers ?? [])],
    },
    spec: { storageClassName: 'gp3', resources: { requests: { storage: o.request ?? '40Gi' } }, ...(o.cls ? { volumeAttributesClassName: o.cls } : {}) },
    status: {
      phase: o.phase ?? 'Bound',
      capacity: { storage: o.capacity ?? '40Gi' },
      ...((o.applied === undefined ? o.cls : o.applied) ? { currentVolumeAttributesClassName: (o.applied === undefined ? o.cls : o.applied) as string } : {}),
      ...(o.modifyVolumeStatus ? { modifyVolumeStatus: o.modifyVolumeStatus } : {}),
    },
  };
}

const earlier: LedgerEntry = { at: ago(300), by: 'ver/grow-1', size: ['30Gi', '40Gi'] };
const ledger = (spec: Ledger['spec'] = { size: '40Gi' }, mods: LedgerEntry[] = [earlier]): Ledger => ({ spec, mods });

describe('observeClaim', () => {
  it.each<[string, ClaimOptions, typeof budget | undefined]>([
    ['a driver without a budget', { request: '50Gi', ledger: ledger(), writers: [writer('kubectl-patch', 1)] }, undefined],
    ['a claim not Bound', { phase: 'Pending', request: '50Gi', ledger: ledger(), writers: [writer('kubectl-patch', 1)] }, budget],
    ['no ledger, the spec as the volume has it (the spec is the baseline, unwritten)', {}, budget],
    ['no ledger, a raise pvx asked for (its target-size)', { request: '50Gi', annotations: { [pvcAnnotations.targetSize]: '50Gi' } }, budget],
    ['no ledger, a raise pvx wrote (before it kept a ledger)', { request: '50Gi', writers: [writer('pvx', 2)] }, budget],
    ['no ledger, the class the volume has', { cls: 'gp3-base', writers: [writer('kubectl-edit', 3, attributesClassFields)] }, budget],
    [
      'no ledger, a class on a claim with none applied that no resizer took up (its status not yet written since it was bound)',
      { cls: 'io2-fast', applied: null, writers: [writer('kubectl-edit', 3, attributesClassFields)] },
      budget,
    ],
    [
      'no ledger, a class pvx asked for (its target class)',
      { cls: 'io2-fast', applied: 'gp3-base', annotations: { [pvcAnnotations.targetVolumeAttributesClass]: 'io2-fast' } },
      budget,
    ],
    [
      'no ledger, a class pvx wrote (before it kept a ledger)',
      { cls: 'io2-fast', applied: 'gp3-base', writers: [writer('pvx', 2, attributesClassFields)] },
      budget,
    ],
    ['a ledger whose baseline is the spec', { ledger: ledger() }, budget],
    ['a ledger whose baseline is the spec written another way', { request: '40960Mi', ledger: ledger() }, budget],
    ['an unreadable size', { request: '40 Gi', ledger: ledger(), writers: [writer('kubectl-patch', 1)] }, budget],
  ])('records nothing for %s', (_name, o, b) => {
    expect(observeClaim(claim(o), b, now)).toEqual({ kind: 'none' });
  });

  it('without a ledger, records a raise under way that pvx did not ask for, dated by its writer', () => {
    const o = observeClaim(claim({ request: '50Gi', capacity: '40Gi', writers: [writer('kubectl-patch', 5)] }), budget, now);
    expect(o).toEqual({
      kind: 'record',
      ledger: { spec: { size: '50Gi' }, mods: [{ at: ago(5), by: 'observed:kubectl-patch', size: ['40Gi', '50Gi'], timeFrom: 'managedFields' }] },
      entry: { at: ago(5), by: 'observed:kubectl-patch', size: ['40Gi', '50Gi'], timeFrom: 'managedFields' },
      summary: `resized 40Gi → 50Gi by kubectl-patch at ${ago(5)}`,
    });
  });

  it('without a ledger, records a class change under way that pvx did not ask for, from the class the volume has, dated by its writer', () => {
    const o = observeClaim(claim({ cls: 'io2-fast', applied: 'gp3-base', writers: [writer('kubectl-edit', 3, attributesClassFields)] }), budget, now);
    const entry = { at: ago(3), by: 'observed:kubectl-edit', class: ['gp3-base', 'io2-fast'], timeFrom: 'managedFields' };
    expect(o).toEqual({
      kind: 'record',
      ledger: { spec: { size: '40Gi', class: 'io2-fast' }, mods: [entry] },
      entry,
      summary: `class gp3-base → io2-fast by kubectl-edit at ${ago(3)}`,
    });
    // A claim with no class applied: once the resizer has taken the change up.
    const first = observeClaim(
      claim({ cls: 'io2-fast', applied: null, modifyVolumeStatus: { targetVolumeAttributesClassName: 'io2-fast', status: 'InProgress' } }),
      budget,
      now,
    );
    expect(first).toMatchObject({ kind: 'record', entry: { class: [null, 'io2-fast'], by: 'observed:unknown', timeFrom: 'seen' } });
    // One the driver refused still asks for another class: counted as a change with a ledger is.
    const refused = observeClaim(
      claim({ cls: 'io2-bad', applied: 'gp3-base', modifyVolumeStatus: { targetVolumeAttributesClassName: 'io2-bad', status: 'Infeasible' } }),
      budget,
      now,
    );
    expect(refused).toMatchObject({ kind: 'record', entry: { class: ['gp3-base', 'io2-bad'] } });
  });

  it('without a ledger, counts a raise and a class change under way together as one modification', () => {
    const o = observeClaim(
      claim({ request: '50Gi', cls: 'io2-fast', applied: 'gp3-base', writers: [writer('kubectl-patch', 9), writer('helm', 4, attributesClassFields)] }),
      budget,
      now,
    );
    expect(o).toMatchObject({
      kind: 'record',
      ledger: { spec: { size: '50Gi', class: 'io2-fast' } },
      entry: { at: ago(4), by: 'observed:kubectl-patch+helm', size: ['40Gi', '50Gi'], class: ['gp3-base', 'io2-fast'] },
    });
    expect(o.kind === 'record' ? o.ledger.mods : []).toHaveLength(1);
    // pvx's raise (its target size) with someone's class: the class alone.
    const mixed = observeClaim(
      claim({
        request: '50Gi',
        cls: 'io2-fast',
        applied: 'gp3-base',
        annotations: { [pvcAnnotations.targetSize]: '50Gi' },
        writers: [writer('helm', 4, attributesClassFields)],
      }),
      budget,
      now,
    );
    expect(mixed).toMatchObject({
      kind: 'record',
      ledger: { spec: { size: '50Gi', class: 'io2-fast' } },
      entry: { by: 'observed:helm', class: ['gp3-base', 'io2-fast'] },
    });
    expect(mixed.kind === 'record' && mixed.entry?.size).toBeUndefined();
  });

  it('dates a change with no managedFields by the time pvx saw it', () => {
    const pvc = claim({ request: '50Gi', ledger: ledger() });
    pvc.metadata!.managedFields = undefined;
    expect(observeClaim(pvc, budget, now)).toMatchObject({
      kind: 'record',
      entry: { at: now.toISOString(), by: 'observed:unknown', timeFrom: 'seen' },
      summary: `resized 40Gi → 50Gi by unknown seen at ${now.toISOString()}`,
    });
  });

  it('dates it by the first sight of the claim as it is, when the caller gives one, never later than now', () => {
    const pvc = claim({ request: '50Gi', ledger: ledger() });
    pvc.metadata!.managedFields = undefined;
    expect(observeClaim(pvc, budget, now, new Date(ago(2)))).toMatchObject({ entry: { at: ago(2), timeFrom: 'seen' } });
    expect(observeClaim(pvc, budget, now, new Date(now.getTime() + 1000))).toMatchObject({ entry: { at: now.toISOString() } });
  });

  it('with a ledger, records a raise since its baseline, keeps the entries within the window and drops older ones', () => {
    const old: LedgerEntry = { at: ago(25 * 60), by: 'observed:kubectl-edit', size: ['20Gi', '30Gi'], timeFrom: 'seen' };
    const o = observeClaim(claim({ request: '60Gi', ledger: ledger({ size: '40Gi' }, [old, earlier]), writers: [writer('kubectl-patch', 2)] }), budget, now);
    expect(o).toMatchObject({
      kind: 'record',
      ledger: { spec: { size: '60Gi' }, mods: [earlier, { at: ago(2), by: 'observed:kubectl-patch', size: ['40Gi', '60Gi'], timeFrom: 'managedFields' }] },
    });
  });

  it('records a change of VolumeAttributesClass, by the writer of that field', () => {
    const o = observeClaim(
      claim({ cls: 'io2-fast', ledger: ledger({ size: '40Gi', class: 'gp3-base' }), writers: [writer('kubectl-edit', 3, attributesClassFields)] }),
      budget,
      now,
    );
    expect(o).toMatchObject({
      kind: 'record',
      ledger: { spec: { size: '40Gi', class: 'io2-fast' } },
      entry: { by: 'observed:kubectl-edit', class: ['gp3-base', 'io2-fast'], at: ago(3) },
    });
    expect(o.kind === 'record' && o.entry?.size).toBeUndefined();
    const unset = observeClaim(
      claim({ ledger: ledger({ size: '40Gi', class: 'gp3-base' }), writers: [writer('kubectl-edit', 3, attributesClassFields)] }),
      budget,
      now,
    );
    expect(unset).toMatchObject({
      kind: 'record',
      ledger: { spec: { size: '40Gi' } },
      entry: { class: ['gp3-base', null] },
      summary: `class gp3-base → (none) by kubectl-edit at ${ago(3)}`,
    });
  });

  it('counts a size and class changed together as one modification (the driver makes one ModifyVolume), dated by the later writer', () => {
    const o = observeClaim(
      claim({ request: '50Gi', cls: 'io2-fast', ledger: ledger(), writers: [writer('kubectl-patch', 9), writer('helm', 4, attributesClassFields)] }),
      budget,
      now,
    );
    expect(o).toMatchObject({ kind: 'record', entry: { at: ago(4), by: 'observed:kubectl-patch+helm', size: ['40Gi', '50Gi'], class: [null, 'io2-fast'] } });
    expect(o.kind === 'record' ? o.ledger.mods : []).toHaveLength(2);
  });

  it('moves the baseline down after a lowered request, counting nothing (the raise was counted)', () => {
    const o = observeClaim(claim({ request: '45Gi', capacity: '40Gi', ledger: ledger({ size: '50Gi' }), writers: [writer('kubectl-patch', 1)] }), budget, now);
    expect(o).toMatchObject({ kind: 'record', ledger: { spec: { size: '45Gi' }, mods: [earlier] } });
    expect(o.kind === 'record' && o.entry).toBeUndefined();
  });

  it('moves the baseline without counting a change whose writer wrote before the window', () => {
    const o = observeClaim(claim({ request: '50Gi', ledger: ledger(), writers: [writer('kubectl-patch', 25 * 60)] }), budget, now);
    expect(o).toMatchObject({ kind: 'record', ledger: { spec: { size: '50Gi' }, mods: [earlier] }, summary: expect.stringMatching(/not counted$/) });
    expect(o.kind === 'record' && o.entry).toBeUndefined();
  });

  it("counts a raise pvx made before it kept a ledger as its request's", () => {
    const o = observeClaim(
      claim({
        request: '50Gi',
        ledger: ledger(),
        writers: [writer('pvx', 2)],
        annotations: { [pvcAnnotations.request]: 'grow-2', [pvcAnnotations.targetSize]: '50Gi' },
      }),
      budget,
      now,
    );
    expect(o).toMatchObject({ kind: 'record', entry: { by: 'ver/grow-2', size: ['40Gi', '50Gi'] } });
  });

  it('starts anew from a ledger it cannot read', () => {
    expect(readLedger(claim({ ledger: '{not json' }))).toBeUndefined();
    expect(readLedger(claim({ ledger: '{"spec":{"size":"40Gi"},"mods":"x"}' }))).toBeUndefined();
    expect(readLedger(claim({ ledger: '{"spec":{},"mods":[]}' }))).toBeUndefined();
    expect(observeClaim(claim({ ledger: '{not json' }), budget, now)).toEqual({ kind: 'none' });
    expect(observeClaim(claim({ ledger: '{not json', request: '50Gi', writers: [writer('kubectl-patch', 1)] }), budget, now)).toMatchObject({
      kind: 'record',
      ledger: { spec: { size: '50Gi' } },
    });
  });

  it('keeps a ledger small whatever happens: at most 16 entries (or twice the budget), newest kept', () => {
    const many = Array.from({ length: 40 }, (_, i): LedgerEntry => ({ at: ago(100 - i), by: `observed:loop-${i}`, size: ['1Gi', '2Gi'] }));
    const o = observeClaim(claim({ request: '50Gi', ledger: ledger({ size: '40Gi' }, many), writers: [writer('kubectl-patch', 1)] }), budget, now);
    const mods = o.kind === 'record' ? o.ledger.mods : [];
    expect(mods).toHaveLength(16);
    expect(mods.at(-1)?.by).toBe('observed:kubectl-patch');
    expect(mods[0]?.by).toBe('observed:loop-25');
  });
});

describe('the ledger as text', () => {
  it('reads back what it writes, in one field order whatever the input', () => {
    const l: Ledger = { mods: [{ timeFrom: 'seen', size: ['1Gi', '2Gi'], by: 'observed:x', at: ago(1) }], spec: { class: 'c', size: '2Gi' } };
    const text = ledgerText(l);
    expect(text).toBe(`{"spec":{"size":"2Gi","class":"c"},"mods":[{"at":"${ago(1)}","by":"observed:x","size":["1Gi","2Gi"],"timeFrom":"seen"}]}`);
    expect(readLedger(claim({ ledger: text }))).toEqual(l);
  });
});

describe("ledgerAnnotations (pvx's own patch)", () => {
  const read = (anns: Record<string, string>) => JSON.parse(anns[pvcAnnotations.modifications] ?? 'null') as Ledger | null;

  it('adds nothing for a driver without a budget', () => {
    expect(ledgerAnnotations(claim(), undefined, { request: 'grow', size: '50Gi', spends: true }, now)).toEqual({});
  });

  it("starts the ledger with the request's raise and the target as the baseline", () => {
    expect(read(ledgerAnnotations(claim(), budget, { request: 'grow', size: '50Gi', spends: true }, now))).toEqual({
      spec: { size: '50Gi' },
      mods: [{ at: now.toISOString(), by: 'ver/grow', size: ['40Gi', '50Gi'] }],
    });
  });

  it('never hides a change it has not recorded yet: the patch records it too', () => {
    const pvc = claim({ request: '45Gi', capacity: '45Gi', ledger: ledger(), writers: [writer('kubectl-patch', 30)] });
    expect(read(ledgerAnnotations(pvc, budget, { request: 'grow', size: '60Gi', spends: true }, now))).toEqual({
      spec: { size: '60Gi' },
      mods: [
        earlier,
        { at: ago(30), by: 'observed:kubectl-patch', size: ['40Gi', '45Gi'], timeFrom: 'managedFields' },
        { at: now.toISOString(), by: 'ver/grow', size: ['45Gi', '60Gi'] },
      ],
    });
  });

  // Seed 1663 of the simulation: a class set by hand, then a raise by hand that completed before
  // pvx looked. Only a ledger started by the class change lets pvx's own patch see the raise.
  it('folds in a raise by hand that completed before the patch, on a claim whose ledger a class change by hand started', () => {
    const reclassed = observeClaim(
      claim({ request: '17Gi', capacity: '17Gi', cls: 'fast-turbo', applied: 'io2', writers: [writer('kubectl-edit', 50, attributesClassFields)] }),
      budget,
      now,
    );
    expect(reclassed.kind).toBe('record');
    const started = reclassed.kind === 'record' ? reclassed.ledger : undefined;
    const raisedAndDone = claim({
      request: '18Gi',
      capacity: '18Gi',
      cls: 'fast-turbo',
      ledger: started,
      writers: [writer('kubectl-edit', 50, attributesClassFields), writer('kubectl-patch', 13)],
    });
    expect(read(ledgerAnnotations(raisedAndDone, budget, { request: 'req-4', size: '36Gi', spends: true }, now))).toEqual({
      spec: { size: '36Gi', class: 'fast-turbo' },
      mods: [
        { at: ago(50), by: 'observed:kubectl-edit', class: ['io2', 'fast-turbo'], timeFrom: 'managedFields' },
        { at: ago(13), by: 'observed:kubectl-patch', size: ['17Gi', '18Gi'], timeFrom: 'managedFields' },
        { at: now.toISOString(), by: 'ver/req-4', size: ['18Gi', '36Gi'] },
      ],
    });
  });

  it('moves only the baseline when lowering after a failed raise, and keeps the class', () => {
    const pvc = claim({ request: '100Gi', cls: 'fast', ledger: ledger({ size: '100Gi', class: 'fast' }) });
    expect(read(ledgerAnnotations(pvc, budget, { request: 'grow', size: '64Gi', spends: false }, now))).toEqual({
      spec: { size: '64Gi', class: 'fast' },
      mods: [earlier],
    });
  });
});

describe('observedAlike', () => {
  const underWay = claim({ request: '50Gi', capacity: '40Gi', writers: [writer('kubectl-patch', 5)] });
  const withStatus = (status: V1PersistentVolumeClaim['status']) => ({ ...underWay, metadata: { ...underWay.metadata, resourceVersion: '99' }, status });

  it('holds when only the progress of the change moved: what one copy showed under way was made', () => {
    expect(observedAlike(underWay, withStatus({ phase: 'Bound', capacity: { storage: '50Gi' }, allocatedResources: { storage: '50Gi' } }))).toBe(true);
  });

  it.each<[string, V1PersistentVolumeClaim]>([
    ['another claim of the name', { ...underWay, metadata: { ...underWay.metadata, uid: 'u2' } }],
    ['another size', claim({ request: '60Gi', capacity: '40Gi', writers: [writer('kubectl-patch', 5)] })],
    ['another class', claim({ request: '50Gi', capacity: '40Gi', cls: 'io2-fast', writers: [writer('kubectl-patch', 5)] })],
    ['a ledger written meanwhile', claim({ request: '50Gi', capacity: '40Gi', ledger: ledger({ size: '50Gi' }), writers: [writer('kubectl-patch', 5)] })],
    [
      "pvx's annotations written meanwhile",
      claim({ request: '50Gi', capacity: '40Gi', annotations: { [pvcAnnotations.targetSize]: '50Gi' }, writers: [writer('kubectl-patch', 5)] }),
    ],
    ['another writer of the size', claim({ request: '50Gi', capacity: '40Gi', writers: [writer('helm', 1)] })],
    ['no longer Bound', withStatus({ phase: 'Lost', capacity: { storage: '40Gi' } })],
  ])('does not hold for %s', (_name, other) => {
    expect(observedAlike(underWay, other)).toBe(false);
  });
});

describe('currentLedger', () => {
  it("is the claim's ledger with what the claim shows and it does not record yet", () => {
    expect(currentLedger(claim({ ledger: ledger() }), budget, now)).toEqual(ledger());
    expect(currentLedger(claim({ request: '50Gi', ledger: ledger(), writers: [writer('kubectl-patch', 1)] }), budget, now)?.mods).toHaveLength(2);
    expect(currentLedger(claim(), budget, now)).toBeUndefined();
    expect(currentLedger(claim({ ledger: ledger() }), undefined, now)).toBeUndefined();
  });
});
