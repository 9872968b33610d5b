// Go-style durations ("30m", "1h30m", "90s"), as the CRDs' CEL rules accept them.

/** Milliseconds, or undefined when the text is not a duration. */
export function parseDuration(text: string): number | undefined {
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const re = /(\d+)(ns|us|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    total += Number(m[1]) * (units[m[2] as string] as number);
    consumed = re.lastIndex;
  }
  return consumed === text.length && consumed > 0 ? total : undefined;
}
