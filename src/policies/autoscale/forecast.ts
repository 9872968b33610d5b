// Time-to-full from a least-squares line through usage samples — the idea of PromQL's
// predict_linear. Pure; times in milliseconds, sizes in bytes (as numbers: the fit is statistical).

export interface Point {
  atMs: number;
  usedBytes: number;
}

export interface Fit {
  /** Bytes per millisecond. */
  slope: number;
  /** Used bytes at atMs = 0. */
  intercept: number;
}

/** Ordinary least squares; undefined with fewer than two distinct times. */
export function linearFit(points: Point[]): Fit | undefined {
  if (points.length < 2) return undefined;
  // Centre the times: epoch milliseconds squared lose precision in doubles.
  const t0 = points[0]?.atMs ?? 0;
  const n = points.length;
  let sx = 0;
  let sy = 0;
  for (const p of points) {
    sx += p.atMs - t0;
    sy += p.usedBytes;
  }
  const mx = sx / n;
  const my = sy / n;
  let sxx = 0;
  let sxy = 0;
  for (const p of points) {
    const dx = p.atMs - t0 - mx;
    sxx += dx * dx;
    sxy += dx * (p.usedBytes - my);
  }
  if (sxx === 0) return undefined;
  const slope = sxy / sxx;
  return { slope, intercept: my - slope * (mx + t0) };
}

/**
 * Milliseconds from `nowMs` until the fitted line reaches `capacityBytes`; undefined when usage is
 * flat or shrinking (never full at this rate), 0 when the line is already past it.
 */
export function timeToFullMs(points: Point[], capacityBytes: number, nowMs: number): number | undefined {
  const fit = linearFit(points);
  if (!fit || !(fit.slope > 0)) return undefined;
  const fullAt = (capacityBytes - fit.intercept) / fit.slope;
  return Math.max(0, fullAt - nowMs);
}

export interface Fill {
  /** Bytes per millisecond: the slowest of the intervals read. */
  rate: number;
  /** The longest of those intervals, in milliseconds. */
  longestIntervalMs: number;
}

/**
 * How fast a volume fills, judged on its last `intervals` intervals between measurements (points
 * with distinct times, oldest first): the slowest interval's rate when every one of them grew,
 * undefined otherwise — fewer points, or an interval that stayed level or shrank. So one jump
 * between two measurements is never a fill: a high reading between normal ones is followed by a
 * fall, a jump that stays is followed by a level interval, and a jump just now was preceded by
 * one; and a fill that was sustained is judged at its slowest, never at its burst.
 */
export function sustainedFill(points: readonly Point[], intervals: number): Fill | undefined {
  if (intervals < 1 || points.length < intervals + 1) return undefined;
  const recent = points.slice(-(intervals + 1));
  let rate = Infinity;
  let longestIntervalMs = 0;
  for (let i = 1; i < recent.length; i++) {
    const a = recent[i - 1] as Point;
    const b = recent[i] as Point;
    const dt = b.atMs - a.atMs;
    const grown = b.usedBytes - a.usedBytes;
    if (!(dt > 0) || !(grown > 0)) return undefined;
    rate = Math.min(rate, grown / dt);
    longestIntervalMs = Math.max(longestIntervalMs, dt);
  }
  return { rate, longestIntervalMs };
}
