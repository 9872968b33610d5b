// The docs name what pvx offers — its commands, audit rules, alerts and the gates of `pvx why` — and
// link to one another. These checks keep them true when a rule, a gate, an alert or a command is
// added or renamed, and when a page or a heading moves (the generated references in docs/ have
// tests of their own: crds.test.ts, observability.test.ts).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { commandNames } from '../../src/cli/commands.ts';
import { readRuleGroups } from '../../src/observability/generate.ts';
import { auditRules } from '../../src/policies/audit/rules.ts';
import { gateIds, gateTable } from '../../src/policies/why/gates.ts';

const root = resolve(import.meta.dirname, '..', '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

/** Every Markdown file of the project a reader may open: the README, the contributors' files and docs/, and the READMEs beside the code. */
function markdownFiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!['node_modules', '.git', 'dist', '.test-results'].includes(entry.name) && !entry.name.startsWith('.')) walk(path);
      } else if (entry.name.endsWith('.md')) found.push(path);
    }
  };
  walk('');
  return found.sort();
}

/** A table's rows whose first cell is a code span: [first cell, other cells]. */
function tableRows(text: string): [string, string[]][] {
  return text
    .split('\n')
    .filter((l) => /^\| `[^`]+` \|/.test(l))
    .map((l) => {
      const cells = l
        .split(/(?<!\\)\|/)
        .slice(1, -1)
        .map((c) => c.trim());
      return [(cells[0] as string).slice(1, -1), cells.slice(1)];
    });
}

/** The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const body = text.replace(/```[\s\S]*?```/g, '');
  for (const m of body.matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = (m[1] as string)
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

const numberWords = [
  'zero',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
  'thirteen',
  'fourteen',
  'fifteen',
  'sixteen',
  'seventeen',
  'eighteen',
  'nineteen',
  'twenty',
];
const count = (word: string): number => (/^\d+$/.test(word) ? Number(word) : numberWords.indexOf(word.toLowerCase()));

describe('the docs', () => {
  const files = markdownFiles();

  it('are found', () => {
    expect(files).toEqual(
      expect.arrayContaining(['README.md', 'ARCHITECTURE.md', 'CONTRIBUTING.md', 'docs/README.md', 'docs/audit.md', 'docs/cli.md', 'docs/troubleshooting.md']),
    );
  });

  it.each(auditRules.map((r) => [r.id, r.severity]))('list audit rule %s with severity %s', (id, severity) => {
    expect(read('docs/audit.md')).toMatch(new RegExp(`\\| \`${id}\` \\| ${severity} \\|`));
  });

  it('list no audit rule the code does not have', () => {
    const ids = new Set(auditRules.map((r) => r.id));
    expect(
      tableRows(read('docs/audit.md'))
        .map(([id]) => id)
        .filter((id) => !ids.has(id as never)),
    ).toEqual([]);
  });

  it.each(readRuleGroups().flatMap((g) => g.rules.map((r) => r.alert)))('name alert %s', (alert) => {
    expect(read('docs/observability.md')).toMatch(new RegExp(`\\b${alert}\\b`));
  });

  it.each(commandNames)('document the command pvx %s in the command line guide and name it in the README', (command) => {
    expect(read('docs/cli.md')).toMatch(new RegExp(`\\| \`pvx ${command}\\b`));
    expect(read('README.md')).toContain(`\`pvx ${command}\``);
  });

  it("list the gates of pvx why as their table in src/policies/why/gates.ts has them, in the chain's order", () => {
    const text = read('docs/troubleshooting.md');
    const table = text.slice(text.indexOf('| Gate |')).split('\n\n')[0] as string;
    const rows = table.split('\n').slice(2);
    expect(rows).toEqual(gateTable.map((g) => `| \`${g.id}\` | ${g.holds} | ${g.judgedBy} | ${g.reads} |`));
  });

  it('count the audit rules and the gates as the code does', () => {
    const claims = files.flatMap((file) => {
      const text = read(file);
      return [
        ...[...text.matchAll(/\b(\w+) (?:audit )?rules with stable ids\b/gi)].map((m) => ({
          file,
          said: m[0],
          n: count(m[1] as string),
          actual: auditRules.length,
        })),
        ...[...text.matchAll(/\b(\w+) gates\b/gi)]
          .filter((m) => count(m[1] as string) >= 0)
          .map((m) => ({ file, said: m[0], n: count(m[1] as string), actual: gateIds.length })),
      ];
    });
    expect(claims.filter((c) => c.n !== c.actual).map((c) => `${c.file}: "${c.said}", the code has ${c.actual}`)).toEqual([]);
  });

  it('keep the list of guarantees in one place, the user guide, and link to it from elsewhere', () => {
    const guide = read('docs/README.md');
    const section = guide.slice(guide.indexOf('## What pvx guarantees'));
    const promises = [...section.matchAll(/^- \*\*(.+?)\*\*/gm)].map((m) => m[1] as string);
    expect(promises.length).toBeGreaterThanOrEqual(6);
    for (const file of files.filter((f) => f !== 'docs/README.md'))
      for (const promise of promises) expect(read(file), `${file} repeats "${promise}"`).not.toContain(`**${promise}**`);
    expect(read('ARCHITECTURE.md')).toContain('(docs/README.md#what-pvx-guarantees)');
  });

  it('link only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const file of files) {
      const text = read(file)
        .replace(/```[\s\S]*?```/g, '')
        .replace(/`[^`\n]*`/g, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/.test(target)) continue;
        const [path = '', anchor] = target.split('#');
        const to = path === '' ? join(root, file) : resolve(dirname(join(root, file)), path);
        if (!existsSync(to)) {
          broken.push(`${file}: ${target} (no ${relative(root, to)})`);
          continue;
        }
        if (anchor !== undefined && to.endsWith('.md') && !anchors(readFileSync(to, 'utf8')).has(anchor))
          broken.push(`${file}: ${target} (no heading #${anchor})`);
      }
    }
    expect(broken).toEqual([]);
  });
});
