// npm run build: dist/cli/main.js and one file per command, bundled by esbuild from src/cli/main.ts.
//
// Why bundled (bench/README.md, "Command start-up", has the figures): Node's ES module loader
// pays for every file — resolve, read, compile, link — and a command reached ~110 files (yaml alone
// is 72); bundled, `pvx status` runs about a fifth fewer instructions before its first request.
// Split, not one file: main.js loads only the chunk of the command it runs (one file holding every
// command evaluated the operator's modules for `pvx why --help` too, four times the instructions).
// client-node stays a package, imported only where a kubeconfig needs it (src/cli/connect.ts).
// Node's module compile cache (enabled in main.ts) then spares the compile on later starts.
//
// The chunks sit in dist/cli/, two levels below the package as the modules did, so that paths
// taken from import.meta.dirname (config/crd) still resolve. Type checking is `npm run typecheck`.
import { build } from 'esbuild';
import { chmodSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const outdir = join(root, 'dist', 'cli');
rmSync(join(root, 'dist'), { recursive: true, force: true });
const result = await build({
  entryPoints: [join(root, 'src', 'cli', 'main.ts')],
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  external: ['@kubernetes/client-node'],
  // The bundled CommonJS packages (pino, prom-client, yaml) call require() for Node's own modules.
  banner: { js: "import { createRequire as __pvxCreateRequire } from 'node:module'; const require = __pvxCreateRequire(import.meta.url);" },
  sourcemap: 'linked',
  // Chunk names say which command they serve where they can (run-XXXX.js, why-XXXX.js).
  chunkNames: 'chunk-[hash]',
  logLevel: 'warning',
  metafile: true,
});
chmodSync(join(outdir, 'main.js'), 0o755);
const bytes = Object.entries(result.metafile.outputs)
  .filter(([f]) => f.endsWith('.js'))
  .reduce((n, [, o]) => n + o.bytes, 0);
process.stdout.write(`dist/cli: ${Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.js')).length} files, ${(bytes / 1024).toFixed(0)} KiB\n`);
