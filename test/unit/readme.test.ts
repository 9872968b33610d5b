// The README names what pvx offers; these checks keep it true when a rule, an alert or a command
// is added or renamed (the generated references in docs/ have tests of their own).
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readRuleGroups } from '../../src/observability/generate.ts';
import { auditRules } from '../../src/policies/audit/rules.ts';
import { commandNames } from '../../src/cli/commands.ts';

const readme = readFileSync(resolve(import.meta.dirname, '..', '..', 'README.md'), 'utf8');

describe('README', () => {
  it.each(auditRules.map((r) => [r.id, r.severity]))('lists audit rule %s with severity %s', (id, severity) => {
    expect(readme).toMatch(new RegExp(`\\| \`${id}\` \\| ${severity} \\|`));
  });

  it.each(readRuleGroups().flatMap((g) => g.rules.map((r) => r.alert)))('names alert %s', (alert) => {
    expect(readme).toMatch(new RegExp(`\\b${alert}\\b`));
  });

  it.each(commandNames)('documents the command pvx %s', (command) => {
    expect(readme).toMatch(new RegExp(`\\| \`pvx ${command}\\b`));
  });
});
