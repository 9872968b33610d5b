// The command table (commands.ts) is the one definition of pvx's commands: these tests hold every
// command's parser to it, so a flag cannot be parsed without being completed and listed.
import * as util from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { severities } from '../policies/audit/rules.ts';
import { parseApproveArgs, approveHelp } from './approve.ts';
import { auditHelp, parseAuditArgs } from './audit.ts';
import { commandNames, commands, topLevelHelp, type CommandName } from './commands.ts';
import { completionHelp, parseCompletionArgs } from './completion.ts';
import { dfHelp, parseDfArgs } from './df.ts';
import { parseInstallCrdsArgs } from './install-crds.ts';
import { parsePlanArgs, planHelp } from './plan.ts';
import { parseRunArgs, runHelp } from './run.ts';
import { parseStatusArgs, statusHelp } from './status.ts';
import { parseWaitArgs, waitHelp } from './wait.ts';
import { parseWhyArgs, whyHelp } from './why.ts';

// Every call of parseArgs, with the options it was given.
const seen: util.ParseArgsConfig[] = [];
vi.mock('node:util', async (importOriginal) => {
  const real = await importOriginal<typeof util>();
  return { ...real, parseArgs: (config: util.ParseArgsConfig) => (seen.push(config), real.parseArgs(config)) };
});

/** Each command's parser, with arguments it accepts. The record's type asks for every command of the table. */
const parsers: Record<CommandName, () => unknown> = {
  run: () => parseRunArgs([], {}),
  'install-crds': () => parseInstallCrdsArgs([]),
  approve: () => parseApproveArgs(['ver/grow']),
  audit: () => parseAuditArgs([], {}),
  status: () => parseStatusArgs([]),
  wait: () => parseWaitArgs(['ver/grow']),
  plan: () => parsePlanArgs([], {}),
  why: () => parseWhyArgs(['pvc/data'], {}),
  df: () => parseDfArgs([], {}),
  completion: () => parseCompletionArgs(['bash']),
};

/** Each command's --help text, where it has one of its own. */
const helps: Partial<Record<CommandName, string>> = {
  run: runHelp,
  approve: approveHelp,
  audit: auditHelp,
  status: statusHelp,
  wait: waitHelp,
  plan: planHelp,
  why: whyHelp,
  df: dfHelp,
  completion: completionHelp,
};

describe.each(commandNames)('pvx %s', (name) => {
  it('parses exactly the flags of its table entry', () => {
    seen.length = 0;
    parsers[name]();
    expect(seen).toHaveLength(1);
    expect(seen[0]?.options).toBe(commands[name].flags);
  });
});

// install-crds has no --help of its own: the top-level help's line is all it says.
describe.each(Object.entries(helps) as [CommandName, string][])('pvx %s --help', (name, help) => {
  it('names every flag of its table entry, and no other', () => {
    const table = Object.entries(commands[name].flags).filter(([long]) => long !== 'help');
    for (const [long, flag] of table) {
      expect(help, `--${long}`).toMatch(new RegExp(`--${long}\\b`));
      if ('short' in flag && flag.short) expect(help, `-${flag.short}`).toMatch(new RegExp(`-${flag.short},? `));
    }
    const named = [...help.matchAll(/(?<![\w-])--([a-z][a-z-]*[a-z])/g)].map((m) => m[1] as string);
    expect(named.filter((f) => !(f in commands[name].flags) && f !== 'help')).toEqual([]);
  });
});

describe('the table', () => {
  it('gives the audit’s --fail-on the severities of its rules', () => {
    expect([...commands.audit.flags['fail-on'].choices]).toEqual([...severities]);
  });

  it('gives fixed values to string flags only, and a default of their type', () => {
    for (const name of commandNames) {
      for (const [long, flag] of Object.entries(commands[name].flags) as [string, { type: string; choices?: readonly string[]; default?: unknown }][]) {
        if (flag.choices) expect(flag.type, `${name} --${long}`).toBe('string');
        if (flag.default !== undefined) expect(typeof flag.default, `${name} --${long}`).toBe(flag.type);
        if (flag.choices && typeof flag.default === 'string') expect(flag.choices, `${name} --${long}`).toContain(flag.default);
      }
    }
  });

  it('lists every command in the top-level help', () => {
    for (const name of commandNames) expect(topLevelHelp()).toMatch(new RegExp(`^  ${name} {3,}\\S`, 'm'));
  });
});
