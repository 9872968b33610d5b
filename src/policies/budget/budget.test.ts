import { describe, expect, it } from 'vitest';
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { pvcAnnotations } from '../../crds/keys.ts';
import { claimModifications, rateLimitNote, volumeModifications, type Modification } from './budget.ts';
import { ledgerText } from './ledger.ts';
import type { Ledger } from './ledger.ts';

const now = new Date('2026-11-29T12:00:00Z');
const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000);
const budget = { count: 4, windowMs: 24 * 3_600_000 };

const patched = (name: string, minutes: number, dryRun = false) => ({
  metadata: { name },
  spec: { dryRun },
  status: { fromCapacity: '10Gi', targetSize: '20Gi', timeline: { patchedAt: ago(minutes).toISOString() } },
});
const ledger = (...mods: [string, number][]): Ledger => ({
  spec: { size: '20Gi' },
  mods: mods.map(([by, minutes]) => ({ at: ago(minutes).toISOString(), by, size: ['10Gi', '20Gi'] })),
});
const summary = (ms: Modification[]) => ms.map((m) => `${m.by}@${(now.getTime() - m.at.getTime()) / 60_000}`);

describe('volumeModifications', () => {
  it("counts a request's ledger entry and its patch once, at the later of the two times", () => {
    // The entry is written with the patch; patchedAt is when the API server's answer came back.
    expect(summary(volumeModifications(ledger(['ver/grow', 10]), [patched('grow', 9)]))).toEqual(['ver/grow@9']);
    expect(summary(volumeModifications(ledger(['ver/grow', 9]), [patched('grow', 10)]))).toEqual(['ver/grow@9']);
  });

  it('keeps observed changes, requests patched before the ledger existed, and entries of deleted requests', () => {
    const ms = volumeModifications(ledger(['observed:kubectl-patch', 300], ['ver/gone', 200], ['ver/grow', 10]), [patched('old', 600), patched('grow', 10)]);
    expect(summary(ms)).toEqual(['ver/old@600', 'observed:kubectl-patch@300', 'ver/gone@200', 'ver/grow@10']);
  });

  it('pairs a name used twice (a request deleted and created again) only once, with the nearest entry', () => {
    expect(summary(volumeModifications(ledger(['ver/grow', 300], ['ver/grow', 10]), [patched('grow', 9)]))).toEqual(['ver/grow@300', 'ver/grow@9']);
  });

  it("dates a request's modification no earlier than the driver made it: when the controller stage was done", () => {
    const timeline = { patchedAt: ago(600).toISOString(), controllerExpandedAt: ago(60).toISOString() };
    const limited = { ...patched('grow', 600), status: { errorSince: ago(599).toISOString(), timeline } };
    expect(summary(volumeModifications(ledger(['ver/grow', 601]), [limited]))).toEqual(['ver/grow@60']);
    expect(summary(volumeModifications(undefined, [limited]))).toEqual(['ver/grow@60']);
    // Not refused: EC2 still counts from after the patch; the controller stage's end is the earliest time pvx knows it had begun.
    expect(summary(volumeModifications(undefined, [{ ...patched('grow', 600), status: { timeline } }]))).toEqual(['ver/grow@60']);
    // Still at the controller stage: the patch is all there is.
    expect(summary(volumeModifications(undefined, [{ ...patched('grow', 600), status: { timeline: { patchedAt: timeline.patchedAt } } }]))).toEqual([
      'ver/grow@600',
    ]);
  });

  it('never counts a dry run', () => {
    expect(volumeModifications(undefined, [patched('grow', 9, true)])).toEqual([]);
  });
});

describe('claimModifications under a budget of performance changes', () => {
  it('counts the changes of VolumeAttributesClass alone: a ledger’s class entries and requests that set a class', () => {
    const performance = { count: 1, windowMs: 4 * 3_600_000, counts: 'performance' as const };
    const kept: Ledger = {
      spec: { size: '30Gi', class: 'fast' },
      mods: [
        { at: ago(30).toISOString(), by: 'observed:kubectl-patch', size: ['20Gi', '30Gi'] },
        { at: ago(20).toISOString(), by: 'observed:kubectl-patch', class: ['slow', 'fast'] },
      ],
    };
    const claim: V1PersistentVolumeClaim = {
      metadata: { annotations: { [pvcAnnotations.modifications]: ledgerText(kept) } },
      spec: { resources: { requests: { storage: '30Gi' } }, volumeAttributesClassName: 'fast' },
      status: { phase: 'Bound', capacity: { storage: '30Gi' } },
    };
    const faster = { ...patched('faster', 10), spec: { volumeAttributesClassName: 'fast' } };
    expect(summary(claimModifications(claim, performance, [patched('grow', 40), faster], now))).toEqual(['observed:kubectl-patch@20', 'ver/faster@10']);
    // Every modification under a budget that counts them all.
    expect(summary(claimModifications(claim, budget, [patched('grow', 40), faster], now))).toHaveLength(4);
  });
});

describe('rateLimitNote', () => {
  const mods = (...minutes: number[]): Modification[] => minutes.map((m) => ({ at: ago(m), by: 'ver/grow' }));

  it('gives the exact time when the modifications pvx knows of explain the refusal', () => {
    expect(rateLimitNote(budget, mods(23 * 60, 600, 300, 60), ago(5), now)).toBe(
      "the driver's budget (4 modifications per volume per 24h) allows the next modification at 2026-11-29T13:00:00.000Z; the resizer retries until then",
    );
  });

  it('bounds the time by the refusal when pvx knows fewer: the rest were made where it cannot see them', () => {
    expect(rateLimitNote(budget, mods(600), ago(30), now)).toBe(
      "the driver's budget (4 modifications per volume per 24h) allows the next modification no later than 2026-11-30T11:30:00.000Z (it refused at 2026-11-29T11:30:00.000Z); 3 of the 4 modifications it counted were made where pvx cannot see them (outside Kubernetes: the EC2 console or API)",
    );
    expect(rateLimitNote(budget, [], ago(30), now)).toMatch(
      /no later than 2026-11-30T11:30:00\.000Z .*; 4 of the 4 modifications it counted were made where pvx cannot see them/,
    );
    expect(rateLimitNote(budget, mods(600, 300, 100), ago(30), now)).toMatch(/; 1 of the 4 modifications it counted was made where pvx cannot see it/);
  });

  it('does not count the refused modification itself: none made outside pvx, or all four', () => {
    const refused = { at: ago(30), by: 'ver/refused' };
    // Four earlier pvx modifications explain the refusal: nothing is hidden, the exact time is given.
    expect(rateLimitNote(budget, [...mods(23 * 60, 600, 300, 60), refused], ago(30), now, 'ver/refused')).toBe(
      "the driver's budget (4 modifications per volume per 24h) allows the next modification at 2026-11-29T13:00:00.000Z; the resizer retries until then",
    );
    // pvx knows of none but the refused one: all four were made where it cannot see them.
    expect(rateLimitNote(budget, [refused], ago(30), now, 'ver/refused')).toMatch(/; 4 of the 4 modifications it counted were made where pvx cannot see them/);
  });

  it('counts only what the window held when the driver refused', () => {
    // Three modifications, but the oldest left the window before the refusal 2 h ago: two unseen.
    expect(rateLimitNote(budget, mods(23 * 60, 300, 100), ago(120), now)).toMatch(/; 2 of the 4 modifications/);
  });

  it('says the budget should allow a modification again once the bound has passed', () => {
    expect(rateLimitNote(budget, [], ago(25 * 60), now)).toMatch(
      /should allow a modification again since 2026-11-29T11:00:00\.000Z .*the resizer's next retry expands the volume/,
    );
    expect(rateLimitNote(budget, mods(1503, 1502, 1501, 1500), ago(1499), now)).toMatch(/allows a modification again: the resizer's next retry/);
  });

  it('says the driver refuses without a time when no budget is known', () => {
    expect(rateLimitNote(undefined, [], ago(5), now)).toMatch(/pvx knows no budget for it/);
  });
});
