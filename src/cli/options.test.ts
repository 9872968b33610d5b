import { describe, expect, it } from 'vitest';
import { defaultDriverProfiles, profiledBudgets, profiledDrivers } from '../policies/budget/drivers.ts';
import { dfHelp } from './df.ts';
import { runHelp } from './run.ts';
import { modificationBudgetsFlag } from './options.ts';

// The flags' help quotes what pvx's driver profiles hold; when a profile changes, the help changes with it.
describe('the driver limits the help quotes', () => {
  it('are the profiles’ budgets, written as --modification-budget takes them', () => {
    const parsed = modificationBudgetsFlag([profiledBudgets], undefined);
    expect(Object.keys(parsed)).toEqual(profiledDrivers.filter((d) => defaultDriverProfiles(d).modificationBudget));
    for (const [driver, budget] of Object.entries(parsed)) expect(budget).toEqual(defaultDriverProfiles(driver).modificationBudget);
  });

  it('appear in pvx run’s and the read-only commands’ --help', () => {
    expect(runHelp).toContain(`pvx's profile (${profiledBudgets})`);
    expect(runHelp).toContain(`built in: ${profiledDrivers.join(', ')}`);
    expect(dfHelp).toContain(`default: pvx's profiles, ${profiledBudgets}`);
  });
});
