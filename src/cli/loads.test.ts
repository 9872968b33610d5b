// What each command loads before it sends its first request, read from the module graph (no
// process is started: speed itself is measured in bench/cli-startup.ts). Every command of the
// table, `--help` included, runs on pvx's own HTTP client for static credentials: client-node — a
// second of start-up and ~70 MiB for its generated models — is imported only by connect.ts, and
// only when a kubeconfig needs it (exec plugins, auth providers …).
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importsOf, loadedWithIt, reachable } from '../import-graph.testing.ts';
import { commandNames } from './commands.ts';

const src = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const at = (file: string) => resolve(src, file);
const main = at('cli/main.ts');

/** Each command's module, as main.ts imports it when the command runs. */
const commandModules = importsOf(main)
  .filter((i) => i.dynamic && i.file)
  .map((i) => i.file as string);

/** What running a command loads before it does anything: main.ts, then the command's module, and what they import statically. */
const loadedBy = (module: string) => new Map([...reachable(main, loadedWithIt), ...reachable(module, loadedWithIt)]);

/** Every loaded module with a value import of '@kubernetes/client-node', as the path of imports leading to it. */
const clientNodeImports = (modules: Map<string, string[]>) =>
  [...modules]
    .filter(([file]) => importsOf(file).some((i) => i.specifier === '@kubernetes/client-node' && loadedWithIt(i)))
    .map(([, path]) => path.map((f) => relative(src, f)).join(' → '));

describe('what a command loads before its first request', () => {
  it('main.ts imports one module per command of the table, each only when it runs', () => {
    expect(commandModules).toHaveLength(commandNames.length);
    expect(
      importsOf(main)
        .filter((i) => i.file && !i.dynamic && !i.typeOnly)
        .map((i) => relative(src, i.file as string))
        .sort(),
    ).toEqual(['cli/commands.ts', 'cli/errors.ts']);
  });

  it.each(commandModules.map((m) => [relative(src, m), m]))(
    '%s loads no value of client-node, --help or a static-credentials connection alike',
    (_name, module) => {
      expect(clientNodeImports(loadedBy(module))).toEqual([]);
    },
  );

  it.each(commandModules.filter((m) => !m.endsWith('/run.ts')).map((m) => [relative(src, m), m]))(
    '%s loads of the packages only yaml and croner (no schema library, no logger, no metrics)',
    (_name, module) => {
      const packages = [...loadedBy(module)].flatMap(([file]) =>
        importsOf(file)
          .filter((i) => loadedWithIt(i) && !i.file && !i.specifier.startsWith('node:'))
          .map((i) => i.specifier.replace(/^((@[^/]+\/)?[^/]+).*$/, '$1')),
      );
      expect([...new Set(packages)].filter((p) => !['yaml', 'croner'].includes(p))).toEqual([]);
    },
  );

  it('client-node is reached only through connect.ts’s dynamic imports, for the connections pvx’s own client does not serve', () => {
    // (a type written import('@kubernetes/client-node').X reads as a dynamic import, and is erased: static imports count here)
    const importers = [...reachable(main)]
      .filter(([file]) => importsOf(file).some((i) => i.specifier === '@kubernetes/client-node' && loadedWithIt(i)))
      .map(([file]) => relative(src, file));
    expect(importers.sort()).toEqual(['cli/kubeconfig.ts', 'k8s/node-client.ts']);
    const dynamicImporters = [...reachable(main)]
      .filter(([file]) => importsOf(file).some((i) => i.dynamic && ['k8s/node-client.ts', 'cli/kubeconfig.ts'].includes(relative(src, i.file ?? ''))))
      .map(([file]) => relative(src, file));
    expect(dynamicImporters).toEqual(['cli/connect.ts']);
  });

  it('finds a value import of client-node where there is one (the check can fail)', () => {
    expect(clientNodeImports(reachable(at('k8s/node-client.ts'), loadedWithIt))).toEqual(['k8s/node-client.ts']);
    expect(clientNodeImports(reachable(at('cli/connect.ts')))).toContain('cli/connect.ts → k8s/node-client.ts');
  });
});
