// `npm run sim -- --seeds N [--from S] [--seed S --trace] [--workloads always|never]`: runs seeds of the deterministic
// simulation and prints what happened; exits 1 on any invariant violation.
// `npm run sim -- --mutants [--seeds N]` (or `--mutant NAME,…`): runs each deliberately broken pvx
// (mutants.ts) until one of its invariants catches it; exits 1 if one survives N seeds.
// `node --expose-gc test/sim/main.ts --seeds N --heap 50` prints the heap after a full collection every 50 seeds.
import { parseArgs } from 'node:util';
import { formatEntry } from './trace.ts';
import { defaultPeriods, runSeed, type SeedOptions, type SeedResult } from './simulation.ts';
import { mutantNamed, mutants, type Mutant } from './mutants.ts';
import { parseDuration } from '../../src/policies/shared/duration.ts';

export interface BatchSummary {
  seeds: number;
  steps: number;
  simulatedMs: number;
  faults: Map<string, number>;
  failures: SeedResult[];
  elapsedMs: number;
  phases: Map<string, number>;
}

/** The command that runs this seed again, with the options it ran with. */
export function replayCommand(r: SeedResult): string {
  const periods =
    r.chaosMs !== defaultPeriods.chaosMs || r.quietMs !== defaultPeriods.quietMs ? ` --chaos ${r.chaosMs / 1000}s --quiet ${r.quietMs / 1000}s` : '';
  const without = r.without.length > 0 ? ` --without ${r.without.join(',')}` : '';
  return `npm run sim -- --seed ${r.seed} --trace${periods}${without}`;
}

/** Lines to print for a failing seed: its violations, the last relevant steps, the command that replays it. */
export function describeFailure(r: SeedResult, lines = 40): string {
  // The steps that led to the first violation: per-call noise (failed calls, lagging streams)
  // only where it names the request or claim at fault.
  const first = r.violations[0];
  const names = first ? first.subject.split(/[\s/]/).filter((w) => /^(req-|grow-|claim-|data-)/.test(w)) : [];
  const end = first ? r.trace.entries.findIndex((e) => e.kind === 'violation' && e.text.startsWith(`${first.rule} ${first.subject}`)) : -1;
  const upTo = end >= 0 ? r.trace.entries.slice(0, end + 1) : r.trace.entries;
  const noisy = /^(api-fail|watch-lag|watch-drop|lost-response)/;
  const relevant = upTo.filter((e) => e.kind !== 'note' && !(e.kind === 'fault' && noisy.test(e.text) && !names.some((n) => e.text.includes(n))));
  return [
    `seed ${r.seed}: ${r.violations.length} violation(s)`,
    ...r.violations.map((v) => `  ✗ ${v.rule} ${v.subject}: ${v.message}`),
    `  the ${Math.min(lines, relevant.length)} steps before the first:`,
    ...relevant.slice(-lines).map((e) => `    ${formatEntry(e)}`),
    `  replay: ${replayCommand(r)}`,
  ].join('\n');
}

export async function runBatch(from: number, count: number, opts: SeedOptions = {}, onSeed?: (r: SeedResult) => void): Promise<BatchSummary> {
  const started = performance.now();
  const summary: BatchSummary = { seeds: 0, steps: 0, simulatedMs: 0, faults: new Map(), failures: [], elapsedMs: 0, phases: new Map() };
  for (let seed = from; seed < from + count; seed++) {
    const r = await runSeed(seed, opts).catch((e: unknown) => {
      // A simulation that throws is a failure too: name the seed that replays it.
      throw new Error(`seed ${seed} threw (replay: npm run sim -- --seed ${seed} --trace): ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    });
    summary.seeds++;
    summary.steps += r.steps;
    summary.simulatedMs += r.simulatedMs;
    for (const [k, n] of r.faults) summary.faults.set(k, (summary.faults.get(k) ?? 0) + n);
    for (const [k, n] of r.phases) summary.phases.set(k, (summary.phases.get(k) ?? 0) + n);
    if (r.violations.length > 0) summary.failures.push(r);
    onSeed?.(r);
  }
  summary.elapsedMs = performance.now() - started;
  return summary;
}

export interface MutantResult {
  mutant: Mutant;
  /** The first seed whose run broke one of the invariants the mutant is meant to trip, and which. */
  caughtBy?: { seed: number; rule: string; subject: string; message: string };
  /** Other invariants that fired on the way (a mutant may break more than it is meant to). */
  alsoFired: Set<string>;
  seeds: number;
  elapsedMs: number;
}

/** Runs seeds with the mutant from `from` until one of its invariants catches it, or `count` seeds. */
export async function runMutant(mutant: Mutant, from: number, count: number, opts: SeedOptions = {}): Promise<MutantResult> {
  const started = performance.now();
  const result: MutantResult = { mutant, alsoFired: new Set(), seeds: 0, elapsedMs: 0 };
  for (let seed = from; seed < from + count && !result.caughtBy; seed++) {
    const r = await runSeed(seed, { ...opts, mutant });
    result.seeds++;
    for (const v of r.violations) {
      if (mutant.catches.includes(v.rule) && !result.caughtBy) result.caughtBy = { seed, rule: v.rule, subject: v.subject, message: v.message };
      else result.alsoFired.add(v.rule);
    }
  }
  result.elapsedMs = performance.now() - started;
  return result;
}

export function formatMutantResult(m: MutantResult): string {
  const also = m.alsoFired.size > 0 ? `; also ${[...m.alsoFired].sort().join(', ')}` : '';
  return m.caughtBy
    ? `  ✓ ${m.mutant.name.padEnd(34)} caught by ${m.caughtBy.rule} at seed ${m.caughtBy.seed} (${m.seeds} seed${m.seeds === 1 ? '' : 's'}, ${(m.elapsedMs / 1000).toFixed(1)} s)${also}`
    : `  ✗ ${m.mutant.name.padEnd(34)} SURVIVED ${m.seeds} seeds — meant to be caught by ${m.mutant.catches.join(' or ')}${also}`;
}

export function formatSummary(s: BatchSummary): string {
  const byRule = new Map<string, number[]>();
  for (const f of s.failures) for (const rule of new Set(f.violations.map((v) => v.rule))) byRule.set(rule, [...(byRule.get(rule) ?? []), f.seed]);
  return [
    `seeds run: ${s.seeds} in ${(s.elapsedMs / 1000).toFixed(1)} s (${(s.seeds / (s.elapsedMs / 1000)).toFixed(1)} seeds/s); steps: ${s.steps}; simulated: ${(s.simulatedMs / 3_600_000).toFixed(1)} h`,
    `faults injected: ${
      [...s.faults]
        .sort()
        .map(([k, n]) => `${k} ${n}`)
        .join(', ') || 'none'
    }`,
    `request outcomes: ${[...s.phases]
      .sort()
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
    `invariant violations: ${s.failures.length === 0 ? 'none' : `${s.failures.length} seed(s)`}`,
    ...[...byRule].map(([rule, seeds]) => `  ${rule}: ${seeds.length} seed(s), e.g. ${seeds.slice(0, 8).join(', ')}`),
  ].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      seeds: { type: 'string', default: '100' },
      from: { type: 'string', default: '1' },
      seed: { type: 'string' },
      trace: { type: 'boolean', default: false },
      lines: { type: 'string', default: '40' },
      chaos: { type: 'string' },
      quiet: { type: 'string' },
      without: { type: 'string' },
      heap: { type: 'string' },
      mutant: { type: 'string' },
      mutants: { type: 'boolean', default: false },
      workloads: { type: 'string', default: 'drawn' },
    },
  });
  if (!['drawn', 'always', 'never'].includes(values.workloads)) throw new TypeError(`--workloads must be drawn, always or never, got "${values.workloads}"`);
  const lines = Number(values.lines);
  const period = (flag: 'chaos' | 'quiet'): number | undefined => {
    const text = values[flag];
    if (text === undefined) return undefined;
    const ms = parseDuration(text);
    if (!ms) throw new TypeError(`--${flag} must be a duration such as 10m, got "${text}"`);
    return ms;
  };
  const periods: SeedOptions = {
    chaosMs: period('chaos'),
    quietMs: period('quiet'),
    without: values.without ? values.without.split(',').map((s) => s.trim()) : [],
    workloads: values.workloads as SeedOptions['workloads'],
  };
  if (values.mutants || values.mutant) {
    // Each mutant (or the one named) from --from, until caught or --seeds seeds.
    const chosen = values.mutant ? values.mutant.split(',').map((n) => mutantNamed(n.trim())) : mutants;
    let survived = 0;
    for (const m of chosen) {
      const r = await runMutant(m, Number(values.from), Number(values.seeds), periods);
      if (!r.caughtBy) survived++;
      console.log(formatMutantResult(r));
    }
    return survived > 0 ? 1 : 0;
  }
  if (values.seed !== undefined) {
    const seed = Number(values.seed);
    if (!Number.isInteger(seed) || seed < 0) throw new TypeError(`--seed must be a non-negative integer, got "${values.seed}"`);
    const r = await runSeed(seed, { ...periods, keepTrace: values.trace });
    if (values.trace) for (const e of r.trace.entries) console.log(formatEntry(e));
    console.log(
      `seed ${seed}: ${r.steps} steps, ${r.requests} requests, trace ${r.digest}, faults ${[...r.faults].map(([k, n]) => `${k} ${n}`).join(', ') || 'none'}`,
    );
    if (r.violations.length > 0) console.log(describeFailure(r, lines));
    return r.violations.length > 0 ? 1 : 0;
  }
  const count = Number(values.seeds);
  const from = Number(values.from);
  if (!Number.isInteger(count) || count < 1) throw new TypeError(`--seeds must be a positive integer, got "${values.seeds}"`);
  if (!Number.isInteger(from) || from < 0) throw new TypeError(`--from must be a non-negative integer, got "${values.from}"`);
  const heapEvery = values.heap === undefined ? 0 : Number(values.heap);
  if (!Number.isInteger(heapEvery) || heapEvery < 0) throw new TypeError(`--heap must be a non-negative integer, got "${values.heap}"`);
  const gc = (globalThis as { gc?: () => void }).gc;
  if (heapEvery > 0 && !gc) throw new TypeError('--heap needs node --expose-gc (so the heap is measured after a full collection)');
  let ran = 0;
  const summary = await runBatch(from, count, periods, (r) => {
    if (r.violations.length > 0) console.log(`${describeFailure(r, lines)}\n`);
    // A seed's world must be garbage once it ends: the heap after a full collection stays flat.
    if (heapEvery > 0 && ++ran % heapEvery === 0) {
      gc?.();
      console.log(`heap after ${ran} seeds (to seed ${r.seed}): ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(1)} MiB`);
    }
  });
  console.log(formatSummary(summary));
  return summary.failures.length > 0 ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(2);
    },
  );
}
