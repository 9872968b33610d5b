// Maintenance windows: a cron expression for when each window opens, how long it stays open, and
// the time zone the expression is read in. Pure apart from the cron library; the clock is passed in.
import { Cron } from 'croner';
import { setBounded } from '../shared/collections.ts';

export interface MaintenanceWindow {
  /** Five-field cron expression of the window's openings, e.g. "0 2 * * *" (02:00 daily). */
  schedule: string;
  durationMs: number;
  /** IANA time zone, e.g. "Europe/Berlin" (default UTC). */
  timeZone?: string;
}

export class WindowError extends Error {
  override name = 'WindowError';
}

/** Whether the runtime knows an IANA time zone of this name (croner itself fails only later, when asked for a time). */
function knownTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Parsed schedules, by time zone and expression: a namespace's policies may hold thousands of
 * windows, read for every claim they select on every pass (4,000 policies of 16 windows cost 283 s
 * a pass when each read parsed again). Bounded: the oldest parse goes first.
 */
const parsed = new Map<string, Cron | WindowError>();
const parsedBound = 8192;

function cron(w: MaintenanceWindow): Cron {
  const key = `${w.timeZone ?? ''}\u0000${w.schedule}`;
  let c = parsed.get(key);
  if (c === undefined) {
    c = parse(w);
    setBounded(parsed, key, c, parsedBound);
  }
  if (c instanceof WindowError) throw c;
  return c;
}

function parse(w: MaintenanceWindow): Cron | WindowError {
  const where = `maintenance window "${w.schedule}"${w.timeZone ? ` (${w.timeZone})` : ''}`;
  if (w.timeZone !== undefined && !knownTimeZone(w.timeZone)) {
    return new WindowError(`${where}: unknown time zone "${w.timeZone}"; use an IANA name such as Europe/Berlin or UTC`);
  }
  try {
    return new Cron(w.schedule, { timezone: w.timeZone ?? 'UTC', paused: true });
  } catch (err) {
    return new WindowError(`${where}: ${(err as Error).message}`);
  }
}

/**
 * Why these windows cannot be read (the first that cannot, in words), or undefined: checked before
 * a policy is decided, so a window pvx cannot read stops its own policy, with a reason in its
 * status, and no other.
 */
export function windowsProblem(windows: readonly MaintenanceWindow[]): string | undefined {
  for (const w of windows) {
    try {
      cron(w);
    } catch (err) {
      if (err instanceof WindowError) return err.message;
      throw err;
    }
  }
  return undefined;
}

/**
 * The last answer for a list of windows (one policy's, as its spec was read for a pass) and the
 * instant it was asked for: a pass asks once per claim the policy selects, at one instant.
 */
const lastState = new WeakMap<readonly MaintenanceWindow[], { at: number; state: { open: boolean; nextOpen?: Date } }>();

/** Whether any window is open at `now`; if none is, when the next one opens. */
export function windowState(windows: readonly MaintenanceWindow[], now: Date): { open: boolean; nextOpen?: Date } {
  if (windows.length === 0) return { open: true };
  const last = lastState.get(windows);
  if (last?.at === now.getTime()) return last.state;
  const state = computeWindowState(windows, now);
  lastState.set(windows, { at: now.getTime(), state });
  return state;
}

function computeWindowState(windows: readonly MaintenanceWindow[], now: Date): { open: boolean; nextOpen?: Date } {
  let nextOpen: Date | undefined;
  for (const w of windows) {
    const c = cron(w);
    // Open now iff an opening happened within the last durationMs.
    const lastStartCandidate = c.nextRun(new Date(now.getTime() - w.durationMs));
    if (lastStartCandidate && lastStartCandidate.getTime() <= now.getTime()) return { open: true };
    const next = c.nextRun(now);
    if (next && (!nextOpen || next < nextOpen)) nextOpen = next;
  }
  return { open: false, nextOpen };
}
