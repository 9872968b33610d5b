// The module graph of src/, read from the source text, for tests that hold a command to what it may
// load: the read-only commands never reach the operator; `pvx run` reaches no value import of
// client-node. An import's kind decides whether a walk follows it: a type-only import
// (`import type`, `export type`) is erased from the JavaScript; `import { type A } from 'x'` is not
// (under verbatimModuleSyntax it is emitted as `import {} from 'x'`, which loads x); `import()` runs
// only when the code calling it runs.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export interface Import {
  /** As written: './run.ts', '@kubernetes/client-node', 'node:fs'. */
  specifier: string;
  /** The file a relative specifier names; undefined for a package. */
  file: string | undefined;
  typeOnly: boolean;
  dynamic: boolean;
}

const declarations = /(?:^|\n)[ \t]*(import|export)\s+(type\s+)?(?:[^;'"]*?\sfrom\s*)?['"]([^'"]+)['"]/g;
const dynamicImports = /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Every import and re-export of a file. */
export function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const named = (specifier: string) => (specifier.startsWith('.') ? resolve(dirname(file), specifier) : undefined);
  return [
    ...[...text.matchAll(declarations)].map((m) => ({ specifier: m[3] as string, file: named(m[3] as string), typeOnly: Boolean(m[2]), dynamic: false })),
    ...[...text.matchAll(dynamicImports)].map((m) => ({ specifier: m[1] as string, file: named(m[1] as string), typeOnly: false, dynamic: true })),
  ];
}

/**
 * Every module of src/ that `from` reaches through the relative imports `follow` accepts (by
 * default all of them: static, dynamic, type-only), with the path of files to each.
 */
export function reachable(from: string, follow: (i: Import) => boolean = () => true): Map<string, string[]> {
  const paths = new Map<string, string[]>([[from, [from]]]);
  const todo = [from];
  for (let file = todo.pop(); file; file = todo.pop()) {
    for (const i of importsOf(file)) {
      if (!i.file || !follow(i) || paths.has(i.file)) continue;
      paths.set(i.file, [...(paths.get(file) ?? []), i.file]);
      todo.push(i.file);
    }
  }
  return paths;
}

/** What a module loads when it is loaded: its static imports that are not type-only. */
export const loadedWithIt = (i: Import): boolean => !i.dynamic && !i.typeOnly;
