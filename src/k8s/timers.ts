// Timers that wait as long as they are asked to. Node's setTimeout and setInterval take at most
// 2^31−1 ms (24.8 days): a longer delay fires after 1 ms, so a request kept 30 days after it
// finished, or a weekly audit's resync, would turn into a hot loop. These chain native timers of
// at most that length until the whole delay has passed. Every delay the runtime waits (requeues,
// backoffs, resyncs, watchdogs, drain timeouts) goes through here.
//
// Delays are counted on the timers' own clock (monotonic), so a wall-clock step neither shortens
// nor stretches them.
//
// Bad delays: a negative delay is already due and fires once, on the next turn of the event loop,
// as setTimeout would. NaN and ±Infinity throw a TypeError naming the value: no correct
// computation yields one, and quietly reading Infinity as "never" or NaN as 0 would hide the bug
// (the latter as a loop). An interval's period must be finite and above 0: a period of 0 is a busy
// loop by definition.

/** The longest delay one native timer can wait (2^31−1 ms, about 24.8 days). */
export const maxNativeTimerMs = 2 ** 31 - 1;

export interface LongTimer {
  /** Cancels the timer; safe to call more than once, and after it fired. */
  clear(): void;
  /** Lets the process exit while this timer is all that is left to wait for. */
  unref(): LongTimer;
}

/** Calls fn once, after delayMs (any finite length; negative means now). */
export function setLongTimeout(fn: () => void, delayMs: number): LongTimer {
  let remaining = Math.max(0, finiteDelay('timeout delay', delayMs));
  let refed = true;
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    const step = Math.min(remaining, maxNativeTimerMs);
    timer = setTimeout(() => {
      remaining -= step;
      if (remaining > 0) arm();
      else fn();
    }, step);
    if (!refed) timer.unref?.();
  };
  arm();
  const handle: LongTimer = {
    clear: () => clearTimeout(timer),
    unref: () => {
      refed = false;
      timer?.unref?.();
      return handle;
    },
  };
  return handle;
}

/** Calls fn every periodMs (any finite length above 0) until cleared. */
export function setLongInterval(fn: () => void, periodMs: number): LongTimer {
  const period = finiteDelay('interval period', periodMs);
  if (!(period > 0)) throw new TypeError(`interval period must be above 0 ms, got ${periodMs}`);
  if (period <= maxNativeTimerMs) {
    const native = setInterval(fn, period);
    const handle: LongTimer = {
      clear: () => clearInterval(native),
      unref: () => {
        native.unref?.();
        return handle;
      },
    };
    return handle;
  }
  // Longer periods: one long timeout after another, the next armed before fn runs so a throw in
  // fn does not end the series.
  let refed = true;
  let current: LongTimer;
  const arm = () => {
    current = setLongTimeout(() => {
      arm();
      fn();
    }, period);
    if (!refed) current.unref();
  };
  arm();
  const handle: LongTimer = {
    clear: () => current.clear(),
    unref: () => {
      refed = false;
      current.unref();
      return handle;
    },
  };
  return handle;
}

function finiteDelay(what: string, ms: number): number {
  if (typeof ms !== 'number' || !Number.isFinite(ms)) throw new TypeError(`${what} must be a finite number of ms, got ${String(ms)}`);
  return ms;
}
