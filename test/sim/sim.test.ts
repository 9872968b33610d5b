// The CI batch of the deterministic simulation (npm run sim runs any number of seeds by hand).
// One seed: 1–2 claims (plus a 2-replica StatefulSet's in 30% of seeds), up to 5 requests,
// 5 simulated minutes of faults then 10 without (`npm run sim -- --chaos 20m --quiet 1h` goes longer), the real operator with leader election over the
// in-memory API server; invariants checked after every step and at the end.
import { describe, expect, it } from 'vitest';
import { describeFailure, formatSummary, runBatch } from './main.ts';
import { defaultPeriods as ciPeriods, runSeed } from './simulation.ts';

const ciSeeds = Number(process.env.PVX_SIM_SEEDS ?? 2000);
const ciFrom = Number(process.env.PVX_SIM_FROM ?? 1);

describe('deterministic simulation', () => {
  it('replays a seed exactly: the same seed gives the same trace', async () => {
    const a = await runSeed(7, { ...ciPeriods, keepTrace: true });
    const b = await runSeed(7, { ...ciPeriods, keepTrace: true });
    expect(a.trace.entries.length).toBeGreaterThan(20);
    expect(b.trace.entries).toEqual(a.trace.entries);
    expect(b.digest).toBe(a.digest);
    const other = await runSeed(8, ciPeriods);
    expect(other.digest).not.toBe(a.digest);
  }, 60_000);

  it(`keeps every invariant over ${ciSeeds} seeds`, async () => {
    const summary = await runBatch(ciFrom, ciSeeds, ciPeriods);
    console.log(formatSummary(summary));
    const report = summary.failures.slice(0, 5).map((f) => describeFailure(f, 25)).join('\n\n');
    expect(summary.failures.map((f) => f.seed), `${formatSummary(summary)}\n\n${report}`).toEqual([]);
  }, 900_000);
});
