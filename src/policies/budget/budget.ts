// A volume's modification budget as pvx counts it: every modification Kubernetes shows — the
// claim's ledger (src/policies/budget/ledger.ts: others' changes, and pvx's own requests' entries) and
// pvx's request history (requests patched before the ledger existed) — each counted once, and
// what to say when the budget is spent or the driver refuses anyway. Pure.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { nextModificationAt, type ModificationBudget } from './drivers.ts';
import { humanDuration } from '../shared/duration.ts';
import { pvxModifications, type Modification, type RequestRecord } from './history.ts';
import { currentLedger, describeEntry, type Ledger } from './ledger.ts';

export type { Modification } from './history.ts';

export const isPvxRequest = (m: Modification): boolean => m.by.startsWith('ver/');

function ledgerModifications(ledger: Ledger | undefined): Modification[] {
  return (ledger?.mods ?? []).map((m) => ({ at: new Date(m.at), by: m.by, change: describeEntry(m), ...(m.class ? { performance: true } : {}) }));
}

/** Whether a change spends the budget, and so waits for it: every change, or a performance budget's performance changes only. */
export const spendsBudget = (budget: ModificationBudget | undefined, change: { performance: boolean }): budget is ModificationBudget =>
  budget !== undefined && (budget.counts !== 'performance' || change.performance);

/** The budget when the change spends it (what holds it back, and what its refusal is read against); else none. */
export const budgetSpentBy = (budget: ModificationBudget | undefined, change: { performance: boolean }): ModificationBudget | undefined =>
  spendsBudget(budget, change) ? budget : undefined;

/**
 * The ledger's modifications and the requests' patches as one list. A request's ledger entry
 * (written with its patch, just before the API server answered) and its patchedAt (just after)
 * are one modification: each patch pairs with the entry of the same request nearest in time, and
 * keeps the later time. A request deleted and created again under its name pairs only once.
 */
export function volumeModifications(ledger: Ledger | undefined, requests: readonly RequestRecord[]): Modification[] {
  const recorded = ledgerModifications(ledger);
  const unpaired = new Set(recorded);
  const merged: Modification[] = [];
  for (const patch of pvxModifications(requests)) {
    const nearest = [...unpaired]
      .filter((m) => m.by === patch.by)
      .sort((a, b) => Math.abs(a.at.getTime() - patch.at.getTime()) - Math.abs(b.at.getTime() - patch.at.getTime()))[0];
    if (!nearest) {
      merged.push(patch);
      continue;
    }
    unpaired.delete(nearest);
    merged.push({ ...nearest, at: nearest.at > patch.at ? nearest.at : patch.at, ...(nearest.performance || patch.performance ? { performance: true } : {}) });
  }
  return [...merged, ...unpaired].sort((a, b) => a.at.getTime() - b.at.getTime());
}

/**
 * Every modification of the claim's volume pvx knows of: its ledger as it should be now (a change
 * it does not record yet, when no writer dates it, taken as seen at `claimSeenAt`, else now), and
 * the requests' patches.
 */
export function claimModifications(
  claim: V1PersistentVolumeClaim | undefined,
  budget: ModificationBudget | undefined,
  requests: readonly RequestRecord[],
  now: Date,
  claimSeenAt?: Date,
): Modification[] {
  const all = volumeModifications(currentLedger(claim, budget, now, claimSeenAt), requests);
  return budget?.counts === 'performance' ? all.filter((m) => m.performance) : all;
}

/** The modifications the budget's window holds at `at`. */
export function inWindow(budget: ModificationBudget, modifications: readonly Modification[], at: Date): Modification[] {
  return modifications.filter((m) => m.at.getTime() > at.getTime() - budget.windowMs && m.at <= at);
}

/** "N modifications per volume per 24h"; "1 performance change per volume per 4h". */
export const budgetText = (budget: ModificationBudget): string =>
  budget.counts === 'performance'
    ? `${budget.count} performance change${budget.count === 1 ? '' : 's'} (VolumeAttributesClass) per volume per ${humanDuration(budget.windowMs)}`
    : `${budget.count} modification${budget.count === 1 ? '' : 's'} per volume per ${humanDuration(budget.windowMs)}`;

/** How the count was made: "3 by pvx requests, 1 observed: resized 30Gi → 40Gi by kubectl-patch at …". */
export function countedAs(modifications: readonly Modification[]): string {
  const byPvx = modifications.filter(isPvxRequest).length;
  const observed = modifications.filter((m) => !isPvxRequest(m));
  const pvxPart = `${byPvx} by pvx request${byPvx === 1 ? '' : 's'}`;
  if (observed.length === 0) return pvxPart;
  const listed = observed.map((m) => `${m.change ?? 'modified'} by ${m.by.replace(/^observed:/, '')} at ${m.at.toISOString()}`).join('; ');
  return `${pvxPart}, ${observed.length} observed: ${listed}`;
}

/** The ModificationBudgetExhausted message: the rule, the count and how it was made, and when the next is allowed. */
export function budgetExhaustedMessage(
  driver: string,
  claimName: string,
  budget: ModificationBudget,
  modifications: readonly Modification[],
  nextAt: Date,
  now: Date,
): string {
  const counted = inWindow(budget, modifications, now);
  return `${driver} allows ${budgetText(budget)}; ${claimName} has ${counted.length} in the window (${countedAs(counted)}); the next is allowed at ${nextAt.toISOString()}`;
}

/**
 * What a rate-limit refusal tells of the budget. The driver refused at `refusedAt` (when pvx first
 * saw the refusal): its window then held `count` modifications, each of which leaves it by
 * refusedAt + window — so the next modification is allowed no later than that, whatever pvx saw.
 * When the modifications pvx knows of explain the refusal, their exact time is given instead; when
 * they do not, the rest were made where Kubernetes cannot show them (the EC2 console or API).
 * `refused` names the modification the driver refused (the refusing request's own, `ver/NAME`):
 * it did not happen, so the driver's window does not hold it and neither does the count.
 */
export function rateLimitNote(
  budget: ModificationBudget | undefined,
  modifications: readonly Modification[],
  refusedAt: Date,
  now: Date,
  refused?: string,
): string {
  if (!budget) return 'the driver refuses modifications of this volume for now (pvx knows no budget for it); the resizer keeps retrying';
  const made = modifications.filter((m) => m.by !== refused);
  const known = inWindow(budget, made, refusedAt).length;
  const unseen = Math.max(0, budget.count - known);
  const exact = nextModificationAt(
    budget,
    made.map((m) => m.at),
    now,
  );
  const bound = new Date(refusedAt.getTime() + budget.windowMs);
  if (unseen === 0) {
    return exact
      ? `the driver's budget (${budgetText(budget)}) allows the next modification at ${exact.toISOString()}; the resizer retries until then`
      : `the driver's budget (${budgetText(budget)}) allows a modification again: the resizer's next retry expands the volume`;
  }
  const latest = exact && exact > bound ? exact : bound;
  const hidden = `${unseen} of the ${budget.count} modifications it counted ${unseen === 1 ? 'was' : 'were'} made where pvx cannot see ${unseen === 1 ? 'it' : 'them'} (outside Kubernetes: the EC2 console or API)`;
  if (latest <= now)
    return `the driver's budget (${budgetText(budget)}) should allow a modification again since ${latest.toISOString()} (it refused at ${refusedAt.toISOString()}): the resizer's next retry expands the volume; ${hidden}`;
  return `the driver's budget (${budgetText(budget)}) allows the next modification no later than ${latest.toISOString()} (it refused at ${refusedAt.toISOString()}); ${hidden}`;
}
