// Durations: Go-style ones read ("30m", "1h30m", "90s", as the CRDs' CEL rules accept them) and
// the way pvx prints them. Pure: the caller passes the milliseconds.

/**
 * The longest duration Go (and so the API server's CEL duration()) can hold: 2^63−1 ns, about
 * 292 years. Anything longer is refused here as the CRDs' admission would refuse it.
 */
export const maxDurationMs = (2 ** 63 - 1) / 1e6;

/**
 * Milliseconds, or undefined when the text is not a duration: one or more <digits><unit>, unit
 * one of ns us ms s m h, as the CRDs' CEL rule reads them. No sign, no fraction, no bare "0", and
 * nothing past maxDurationMs (so never Infinity). "0s" is a duration of 0: callers that need a
 * positive one check that themselves.
 */
export function parseDuration(text: string): number | undefined {
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const re = /(\d+)(ns|us|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    total += Number(m[1]) * (units[m[2] as string] as number);
    consumed = re.lastIndex;
  }
  if (consumed !== text.length || consumed === 0) return undefined;
  return total <= maxDurationMs ? total : undefined;
}

/**
 * An age as Kubernetes' own tools print one: precise while short, coarser as it grows,
 * so an AGE column stays narrow: 45s, 5m30s, 47m, 5h30m, 30h, 3d4h, 30d, 2y10d.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (days < 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  if (days < 365 * 2) return `${days}d`;
  const years = Math.floor(days / 365);
  return days % 365 === 0 ? `${years}y` : `${years}y${days % 365}d`;
}

/**
 * Time elapsed in a live display, steady in width so successive lines align: 3s, 1m05s, 1h02m.
 */
export function elapsed(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(seconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, '0')}m`;
}
