// The module graph of src/, read from the source text, for tests that hold code to what it may
// load: the layering (src/architecture.test.ts: no circles, no import back up); the read-only
// commands never reach the operator; `pvx run` reaches no value import of client-node. An import's kind decides whether a walk follows it: a type-only import
// (`import type`, `export type`) is erased from the JavaScript; `import { type A } from 'x'` is not
// (under verbatimModuleSyntax it is emitted as `import {} from 'x'`, which loads x); `import()` runs
// only when the code calling it runs.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

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

/** Test code: a test, a helper of tests (*.testing.ts), or anything under a testing/ folder. None of it ships. */
export const isTestCode = (file: string): boolean => /\.test\.ts$|\.testing\.ts$/.test(file) || /[\\/]testing[\\/]/.test(file);

/** Every .ts file under dir, recursively, sorted. */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f))
    .sort();
}

/**
 * The circles of a graph (file → the files it imports): each strongly connected component of more
 * than one file, or a file that imports itself, with its files sorted. Tarjan's algorithm.
 */
export function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v) as number);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    for (let w = stack.pop(); w !== undefined; w = stack.pop()) {
      onStack.delete(w);
      component.push(w);
      if (w === v) break;
    }
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}
