// The modification ledger: what a claim's driver budget has been spent on, kept on the claim
// itself (annotation pvx.dev/modifications), so that the budget counts every modification
// Kubernetes shows — pvx's own requests and changes anyone else made to the claim's size or
// VolumeAttributesClass — and a restart reads it back. Pure: the decisions here, the writes in
// src/operator (the request reconciler writes its own entry in the same patch as the size; the
// claim-ledger reconciler records what others did, one annotation patch each).
//
// The annotation holds compact JSON:
//   {"spec":{"size":"40Gi","class":"fast"},
//    "mods":[{"at":"2026-11-29T10:02:07.000Z","by":"observed:kubectl-patch","size":["30Gi","40Gi"],"timeFrom":"managedFields"},
//            {"at":"2026-11-29T11:00:00.000Z","by":"ver/grow-data","size":["40Gi","50Gi"]}]}
// spec is the last spec pvx accounted for (the baseline: a claim whose spec differs from it was
// changed by someone else since); mods are the modifications within the driver's window (older
// ones are dropped whenever the ledger is written), each with when, by whom — a pvx request
// (ver/<name>) or another field manager (observed:<manager>) — and what. An observed change is
// dated by its writer's managedFields entry (never earlier than the change), else by the time pvx
// saw it (later than the change): either way the entry stays in the window at least as long as
// the modification does. "When pvx saw it" is the look's own time, or — for a reconciler that
// looks again and again at one version of the claim — when it first saw that version, so that what
// it writes from the entry does not move with the clock.
import { isDeepStrictEqual } from 'node:util';
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { pvcAnnotations } from '../../crds/keys.ts';
import { readBytes } from '../../k8s/quantity.ts';
import type { ModificationBudget } from './drivers.ts';
import { humanDuration } from '../shared/duration.ts';
import { currentClass, specClass } from '../claim/modify.ts';
import { isPvx, lastWriter, type FieldWriter } from '../claim/writers.ts';

export interface LedgerEntry {
  /** When the modification was made (ISO 8601). */
  at: string;
  /** `ver/<request name>` for a pvx request's patch; `observed:<field manager>` for a change pvx saw. */
  by: string;
  /** The storage request, from → to. */
  size?: [string, string];
  /** The VolumeAttributesClass, from → to (null: none). */
  class?: [string | null, string | null];
  /** How an observed change's time was known: its writer's managedFields entry, or when pvx saw it. */
  timeFrom?: 'managedFields' | 'seen';
}

/** The spec fields whose change spends a modification: the baseline of the next observation. */
export interface LedgerSpec {
  size?: string;
  class?: string;
}

export interface Ledger {
  spec: LedgerSpec;
  mods: LedgerEntry[];
}

export function claimSpec(claim: V1PersistentVolumeClaim): LedgerSpec {
  const size = claim.spec?.resources?.requests?.storage;
  const cls = claim.spec?.volumeAttributesClassName;
  return { ...(size !== undefined ? { size } : {}), ...(cls ? { class: cls } : {}) };
}

/** The claim's ledger, or undefined when it has none or one pvx cannot read (then it starts anew). */
export function readLedger(claim: V1PersistentVolumeClaim | undefined): Ledger | undefined {
  const text = claim?.metadata?.annotations?.[pvcAnnotations.modifications];
  if (!text) return undefined;
  try {
    const value = JSON.parse(text) as Ledger;
    // A baseline without a size could never show a change: as good as none.
    if (!value || typeof value.spec?.size !== 'string' || !Array.isArray(value.mods)) return undefined;
    const mods = value.mods.filter((m) => typeof m?.at === 'string' && !Number.isNaN(Date.parse(m.at)) && typeof m.by === 'string');
    return { spec: value.spec, mods };
  } catch {
    return undefined;
  }
}

/** The annotation's value: the fields in one order, so equal ledgers are equal texts. */
export function ledgerText(ledger: Ledger): string {
  const entry = (m: LedgerEntry) => ({
    at: m.at,
    by: m.by,
    ...(m.size ? { size: m.size } : {}),
    ...(m.class ? { class: m.class } : {}),
    ...(m.timeFrom ? { timeFrom: m.timeFrom } : {}),
  });
  const spec = { ...(ledger.spec.size !== undefined ? { size: ledger.spec.size } : {}), ...(ledger.spec.class ? { class: ledger.spec.class } : {}) };
  return JSON.stringify({ spec, mods: ledger.mods.map(entry) });
}

/**
 * Entries beyond this many are dropped, oldest first, whatever the window: a claim resized in a
 * loop must not grow its annotation without bound. Only the newest `count` decide the budget.
 */
const maxEntries = (budget: ModificationBudget) => Math.max(16, 2 * budget.count);

/** The entries still within the budget's window, at most maxEntries, oldest first. */
function withinWindow(mods: readonly LedgerEntry[], budget: ModificationBudget, now: Date): LedgerEntry[] {
  const since = now.getTime() - budget.windowMs;
  return mods
    .filter((m) => Date.parse(m.at) > since)
    .sort((a, b) => Date.parse(a.at) - Date.parse(b.at))
    .slice(-maxEntries(budget));
}

/** In words, for messages: "resized 30Gi → 40Gi", "class fast → (none)". */
export function describeEntry(m: Pick<LedgerEntry, 'size' | 'class'>): string {
  const parts = [
    ...(m.size ? [`resized ${m.size[0]} → ${m.size[1]}`] : []),
    ...(m.class ? [`class ${m.class[0] ?? '(none)'} → ${m.class[1] ?? '(none)'}`] : []),
  ];
  return parts.join(', ') || 'modified';
}

export type Observation =
  /** Nothing to record: the claim shows no change pvx has not accounted for. */
  | { kind: 'none' }
  /**
   * Write this ledger: the claim's spec moved (a change by someone else, or one made before pvx
   * kept a ledger). `entry` is the modification it counts, absent when the change spends nothing
   * within the window (a lowered request; a change older than the window).
   */
  | { kind: 'record'; ledger: Ledger; entry?: LedgerEntry; summary: string };

/**
 * What modification the claim shows that its ledger does not record yet. With a ledger: any
 * difference between the claim's spec and the ledger's baseline is a change pvx did not make
 * (pvx's own patches move the baseline in the same write); a larger size or another class is a
 * modification, a smaller size (KEP-1790's lowering after a failure) only moves the baseline.
 * Without one, the claim's spec is the baseline as it is — nothing is written — unless the claim
 * proves a change under way that pvx did not ask for: it requests more than it has, or a class
 * its volume does not have.
 * Only for a driver with a budget, and a Bound claim (a pending claim's changes modify no volume).
 */
export function observeClaim(claim: V1PersistentVolumeClaim, budget: ModificationBudget | undefined, now: Date, seenAt?: Date): Observation {
  if (!budget || claim.status?.phase !== 'Bound') return { kind: 'none' };
  const spec = claimSpec(claim);
  const requested = readBytes(spec.size);
  const recorded = readLedger(claim);
  if (!recorded) {
    // The new ledger's baseline needs a size (one without is read as none, and would be written
    // again on every look).
    if (requested === undefined) return { kind: 'none' };
    const capacity = readBytes(claim.status?.capacity?.storage);
    const raised = capacity !== undefined && requested > capacity && !sizeSetByPvx(claim, requested);
    // A class change under way proves a modification as a raise under way does; missing it left
    // the claim without a ledger, so a later change by hand that completed before pvx looked
    // could never show as a difference from a baseline.
    const reclassed = classChangeUnderWay(claim) && !classSetByPvx(claim);
    if (!raised && !reclassed) return { kind: 'none' };
    const change: Pick<LedgerEntry, 'size' | 'class'> = {
      ...(raised ? { size: [claim.status?.capacity?.storage as string, spec.size as string] as [string, string] } : {}),
      ...(reclassed ? { class: [currentClass(claim) ?? null, spec.class ?? null] as [string | null, string | null] } : {}),
    };
    const writers = [...(raised ? [lastWriter(claim, 'size')] : []), ...(reclassed ? [lastWriter(claim, 'class')] : [])];
    return record({ spec, mods: [] }, spec, change, { writers }, budget, { now, seenAt });
  }
  const baseline = readBytes(recorded.spec.size);
  const classChanged = (spec.class ?? null) !== (recorded.spec.class ?? null);
  if (requested === undefined || baseline === undefined || (requested === baseline && !classChanged)) return { kind: 'none' };
  const grew = requested > baseline;
  if (!grew && !classChanged) {
    const ledger = { spec, mods: withinWindow(recorded.mods, budget, now) };
    return {
      kind: 'record',
      ledger,
      summary: `the claim's request was lowered ${recorded.spec.size} → ${spec.size}: no modification of the volume, the baseline follows it`,
    };
  }
  const change: Pick<LedgerEntry, 'size' | 'class'> = {
    ...(grew ? { size: [recorded.spec.size as string, spec.size as string] as [string, string] } : {}),
    ...(classChanged ? { class: [recorded.spec.class ?? null, spec.class ?? null] as [string | null, string | null] } : {}),
  };
  const writers = [...(grew ? [lastWriter(claim, 'size')] : []), ...(classChanged ? [lastWriter(claim, 'class')] : [])];
  // A size pvx asked for, set by a pvx that kept no ledger yet: its request's, counted once with it.
  const byPvx = (!grew || sizeSetByPvx(claim, requested)) && (!classChanged || isPvx(lastWriter(claim, 'class')));
  const pvxRequest = byPvx ? (claim.metadata?.annotations?.[pvcAnnotations.request] ?? 'unknown') : undefined;
  return record(recorded, spec, change, { writers, pvxRequest }, budget, { now, seenAt });
}

/**
 * Whether observeClaim decides alike from two copies of a claim: they agree on all it reads but
 * the progress of a change (the status, apart from the binding) — which claim, its spec, its
 * ledger and pvx's annotations, who wrote its size and class. A change one copy showed under way
 * was made, so what was observed from it holds for the other even if the change is done there.
 */
export function observedAlike(a: V1PersistentVolumeClaim, b: V1PersistentVolumeClaim): boolean {
  const inputs = (c: V1PersistentVolumeClaim) => [
    c.metadata?.uid,
    claimSpec(c),
    c.metadata?.annotations ?? {},
    c.status?.phase,
    lastWriter(c, 'size'),
    lastWriter(c, 'class'),
  ];
  return isDeepStrictEqual(inputs(a), inputs(b));
}

/** The ledger with the observed change counted (if within the window) and its spec as the baseline. */
function record(
  recorded: Ledger,
  spec: LedgerSpec,
  change: Pick<LedgerEntry, 'size' | 'class'>,
  who: { writers: (FieldWriter | undefined)[]; pvxRequest?: string },
  budget: ModificationBudget,
  times: { now: Date; seenAt: Date | undefined },
): Observation {
  const { writers } = who;
  const { now } = times;
  const known = writers.filter((w): w is FieldWriter => w !== undefined);
  const managers = [...new Set(known.map((w) => w.manager))];
  const by = who.pvxRequest !== undefined ? `ver/${who.pvxRequest}` : `observed:${managers.join('+') || 'unknown'}`;
  // Every writer's entry dated: the latest of them is no earlier than the change.
  const dated = known.length === writers.length && known.every((w) => w.at !== undefined);
  const latest = dated
    ? Math.min(now.getTime(), Math.max(...known.map((w) => (w.at as Date).getTime())))
    : Math.min(now.getTime(), (times.seenAt ?? now).getTime());
  const what = describeEntry(change);
  if (latest <= now.getTime() - budget.windowMs) {
    const ledger = { spec, mods: withinWindow(recorded.mods, budget, now) };
    return {
      kind: 'record',
      ledger,
      summary: `${what} by ${managers.join('+')} at ${new Date(latest).toISOString()}, before the budget's window of ${humanDuration(budget.windowMs)}: not counted`,
    };
  }
  const entry: LedgerEntry = { at: new Date(latest).toISOString(), by, ...change, timeFrom: dated ? 'managedFields' : 'seen' };
  const ledger = { spec, mods: withinWindow([...recorded.mods, entry], budget, now) };
  const when = dated ? `at ${entry.at}` : `seen at ${entry.at}`;
  return { kind: 'record', ledger, entry, summary: `${what} by ${by.replace(/^observed:/, '')} ${when}` };
}

/**
 * Whether pvx asked for the claim's current size: its target or recovery size (its annotations),
 * or pvx last wrote the size (a patch made before pvx kept a ledger).
 */
export function sizeSetByPvx(claim: V1PersistentVolumeClaim, requested: bigint): boolean {
  const anns = claim.metadata?.annotations ?? {};
  const pvxSizes = [anns[pvcAnnotations.targetSize], anns[pvcAnnotations.recoveredTo]].map(readBytes);
  return pvxSizes.includes(requested) || isPvx(lastWriter(claim, 'size'));
}

/**
 * Whether the claim asks for a VolumeAttributesClass its volume does not have: a change by
 * someone, under way, pending or refused. A claim with no class applied yet counts only once the
 * resizer took the change up (modifyVolumeStatus): until then its class may be the one it was
 * provisioned with, not yet copied to its status.
 */
function classChangeUnderWay(claim: V1PersistentVolumeClaim): boolean {
  const wanted = specClass(claim);
  const applied = currentClass(claim);
  if (wanted === undefined || wanted === applied) return false;
  return applied !== undefined || claim.status?.modifyVolumeStatus !== undefined;
}

/** Whether pvx asked for the claim's class: its target-class annotation, or pvx last wrote the class. */
function classSetByPvx(claim: V1PersistentVolumeClaim): boolean {
  const target = claim.metadata?.annotations?.[pvcAnnotations.targetVolumeAttributesClass];
  return (target !== undefined && target === specClass(claim)) || isPvx(lastWriter(claim, 'class'));
}

/**
 * The ledger the claim should carry now: its own, with any change it shows not recorded yet (an
 * undated one seen at `seenAt`: see observeClaim).
 */
export function currentLedger(
  claim: V1PersistentVolumeClaim | undefined,
  budget: ModificationBudget | undefined,
  now: Date,
  seenAt?: Date,
): Ledger | undefined {
  if (!claim || !budget) return undefined;
  const o = observeClaim(claim, budget, now, seenAt);
  return o.kind === 'record' ? o.ledger : readLedger(claim);
}

/** A change pvx makes to the claim itself, recorded in the same patch. */
export interface OwnChange {
  /** The request that makes it. */
  request: string;
  /** The new storage request, if it changes. */
  size?: string;
  /** The new VolumeAttributesClass, if it changes (one modification with the size: one patch). */
  class?: string;
  /**
   * Whether it spends a modification: a raise does; lowering the request after a failed raise
   * does not (the raise was counted, and the driver makes one change of the volume in the end).
   */
  spends: boolean;
}

/**
 * The annotations pvx's own patch of the claim adds: the ledger with any change not recorded yet
 * (so the patch never hides it), this change counted, and the new spec as the baseline. Nothing
 * for a driver without a budget.
 */
export function ledgerAnnotations(
  claim: V1PersistentVolumeClaim,
  budget: ModificationBudget | undefined,
  own: OwnChange,
  now: Date,
  claimSeenAt?: Date,
): Record<string, string> {
  if (!budget) return {};
  const base = currentLedger(claim, budget, now, claimSeenAt) ?? { spec: claimSpec(claim), mods: [] };
  const spec = { ...base.spec, ...(own.size !== undefined ? { size: own.size } : {}), ...(own.class !== undefined ? { class: own.class } : {}) };
  const entry: LedgerEntry = {
    at: now.toISOString(),
    by: `ver/${own.request}`,
    ...(own.size !== undefined ? { size: [base.spec.size ?? claim.status?.capacity?.storage ?? '?', own.size] as [string, string] } : {}),
    ...(own.class !== undefined ? { class: [base.spec.class ?? null, own.class] as [string | null, string] } : {}),
  };
  const mods = own.spends ? [...base.mods, entry] : base.mods;
  return { [pvcAnnotations.modifications]: ledgerText({ spec, mods: withinWindow(mods, budget, now) }) };
}
