// A check that cannot fail proves nothing: every mutant of test/sim/mutants.ts (a deliberately
// broken pvx) must be caught by one of the invariants written for it within the CI's seeds, and
// every invariant the simulation checks must be meant to catch at least one mutant. Each mutant's
// line says which invariant caught it at which seed (`npm run sim -- --mutants` prints the same).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatMutantResult, runMutant } from './main.ts';
import { mutants } from './mutants.ts';
import { defaultPeriods } from './simulation.ts';

/** Seeds a mutant may take to be caught (the slowest, forget-class-patched, needs about 210). */
const mutantSeeds = Number(process.env.PVX_SIM_MUTANT_SEEDS ?? 400);

/** The rules each invariant module can report: the first argument of every this.violate('…') / violate('…'). */
function rulesIn(file: string): string[] {
  const text = readFileSync(new URL(file, import.meta.url), 'utf8');
  return [...text.matchAll(/violate\(\s*'([a-z-]+)'/g)].map((m) => m[1] as string);
}

describe('the simulation’s invariants catch a broken pvx', () => {
  it.each(mutants.map((m) => [m.name, m] as const))(
    'mutant %s is caught',
    async (_name, mutant) => {
      const result = await runMutant(mutant, 1, mutantSeeds, defaultPeriods);
      console.log(formatMutantResult(result));
      expect(result.caughtBy, formatMutantResult(result)).toBeDefined();
    },
    900_000,
  );

  it('every invariant is meant to catch some mutant (the workload ones in workload-mutants.test.ts)', () => {
    const rules = new Set([...rulesIn('./invariants.ts'), ...rulesIn('./claim-invariants.ts')]);
    const meant = new Set(mutants.flatMap((m) => m.catches));
    expect(rules.size).toBeGreaterThan(20);
    expect([...rules].filter((r) => !meant.has(r)).sort()).toEqual([]);
    // And no mutant names a rule that no invariant reports (a typo would let it survive unseen).
    expect([...meant].filter((r) => !rules.has(r)).sort()).toEqual([]);
    // Workload mode's invariants each have their mutant there.
    const workloadTest = readFileSync(new URL('./workload-mutants.test.ts', import.meta.url), 'utf8');
    for (const rule of rulesIn('./workload-invariants.ts')) expect(workloadTest, `no workload mutant for ${rule}`).toContain(`'${rule}'`);
  });
});
