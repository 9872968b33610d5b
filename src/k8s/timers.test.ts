import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { maxNativeTimerMs, setLongInterval, setLongTimeout } from './timers.ts';

const day = 24 * 3_600_000;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('setLongTimeout', () => {
  it.each([
    ['1 ms', 1],
    ['the longest native delay', maxNativeTimerMs],
    ['one ms past it', maxNativeTimerMs + 1],
    ['30 days', 30 * day],
    ['a year', 365 * day],
  ])('waits %s, not a moment less', async (_, ms) => {
    const fn = vi.fn();
    setLongTimeout(fn, ms);
    await vi.advanceTimersByTimeAsync(ms - 1);
    expect(fn).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(fn).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(2 * ms);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('fires a negative delay once, at once, as setTimeout does', async () => {
    const fn = vi.fn();
    setLongTimeout(fn, -5000);
    await vi.advanceTimersByTimeAsync(0);
    expect(fn).toHaveBeenCalledTimes(1);
  });

  it('can be cleared in any link of the chain', async () => {
    const fn = vi.fn();
    const t = setLongTimeout(fn, 60 * day);
    await vi.advanceTimersByTimeAsync(40 * day);
    t.clear();
    await vi.advanceTimersByTimeAsync(60 * day);
    expect(fn).not.toHaveBeenCalled();
  });

  it('lets the process exit once unref’d', () => {
    // A real process: fake timers do not model the event loop's ref count.
    const script = `import { setLongTimeout } from ${JSON.stringify(new URL('./timers.ts', import.meta.url).href)}; setLongTimeout(() => {}, 40 * 86400000).unref();`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { timeout: 30_000 });
    expect(child.error).toBeUndefined();
    expect(child.status).toBe(0);
  });

  it.each([NaN, Infinity, -Infinity])('refuses a delay of %s with a TypeError naming it', (ms) => {
    expect(() => setLongTimeout(() => undefined, ms)).toThrow(new TypeError(`timeout delay must be a finite number of ms, got ${ms}`));
  });
});

describe('setLongInterval', () => {
  it.each([
    ['1 s', 1000],
    ['28 days', 28 * day],
  ])('repeats every %s and never sooner', async (_, ms) => {
    const fn = vi.fn();
    const t = setLongInterval(fn, ms);
    await vi.advanceTimersByTimeAsync(ms - 1);
    expect(fn).toHaveBeenCalledTimes(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(fn).toHaveBeenCalledTimes(1);
    await vi.advanceTimersByTimeAsync(2 * ms);
    expect(fn).toHaveBeenCalledTimes(3);
    t.clear();
    await vi.advanceTimersByTimeAsync(5 * ms);
    expect(fn).toHaveBeenCalledTimes(3);
  });

  it('keeps a long series going when one call throws', async () => {
    let calls = 0;
    setLongInterval(() => {
      calls++;
      if (calls === 1) throw new Error('boom');
    }, 28 * day);
    await vi.advanceTimersByTimeAsync(28 * day).catch(() => undefined);
    await vi.advanceTimersByTimeAsync(28 * day);
    expect(calls).toBe(2);
  });

  it.each([0, -1, NaN, Infinity])('refuses a period of %s', (ms) => {
    expect(() => setLongInterval(() => undefined, ms)).toThrow(TypeError);
    expect(() => setLongInterval(() => undefined, ms)).toThrow(String(ms));
  });
});
