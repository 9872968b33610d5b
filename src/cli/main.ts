#!/usr/bin/env node
// The `pvx` command (also installed as the kubectl plugin `kubectl-pvx`).
// Each command is imported when it runs, so a command loads only what it uses: `pvx run` in
// particular never loads client-node unless its credentials need it (see connect.ts).
import { isCommandName, topLevelHelp, type CommandName } from './commands.ts';
import { CommandFailure, UsageError } from './errors.ts';

// Node's module compile cache (in os.tmpdir(), or NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1
// turns it off): a later start reads the compiled code of each command's modules instead of
// compiling them again. Where the directory cannot be written (the operator's read-only root
// filesystem) it stays off and nothing else changes.
process.getBuiltinModule('node:module').enableCompileCache?.();

/** What a command is when it runs: its entry point, and its --help text when it has one (the others parse --help themselves). */
interface Loaded {
  run(argv: string[]): Promise<number>;
  help?: string;
}

/** Each command of the table (commands.ts), loaded only when it runs. */
const loaders: Record<CommandName, () => Promise<Loaded>> = {
  run: async () => {
    const m = await import('./run.ts');
    return { run: m.run, help: m.runHelp };
  },
  'install-crds': async () => ({ run: (await import('./install-crds.ts')).installCrds }),
  approve: async () => ({ run: (await import('./approve.ts')).approve }),
  audit: async () => ({ run: (await import('./audit.ts')).audit }),
  status: async () => {
    const m = await import('./status.ts');
    return { run: m.status, help: m.statusHelp };
  },
  wait: async () => {
    const m = await import('./wait.ts');
    return { run: m.wait, help: m.waitHelp };
  },
  plan: async () => {
    const m = await import('./plan.ts');
    return { run: m.plan, help: m.planHelp };
  },
  why: async () => {
    const m = await import('./why.ts');
    return { run: m.why, help: m.whyHelp };
  },
  df: async () => {
    const m = await import('./df.ts');
    return { run: m.df, help: m.dfHelp };
  },
  completion: async () => {
    const m = await import('./completion.ts');
    return { run: m.completion, help: m.completionHelp };
  },
};

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${topLevelHelp()}\n`);
    return 0;
  }
  if (!isCommandName(command)) throw new UsageError(`unknown command "${command}"\n\n${topLevelHelp()}`);
  const loaded = await loaders[command]();
  if (loaded.help && (rest.includes('--help') || rest.includes('-h'))) {
    process.stdout.write(`${loaded.help}\n`);
    return 0;
  }
  return loaded.run(rest);
}

const command = process.argv[2];
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    // A command is done when it returns: a request it no longer needs (`wait`'s last read at its
    // timeout) must not hold the process open. The operator returns only once it has stopped.
    if (command !== 'run') process.exit(code);
  },
  (err: unknown) => {
    if (err instanceof UsageError || (err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'))) {
      process.stderr.write(`pvx: ${err.message}\n`);
      process.exitCode = 2;
    } else if (err instanceof CommandFailure) {
      // A failure the user can act on: its message says what to do; a stack would bury it.
      process.stderr.write(`pvx: ${err.message}\n`);
      process.exitCode = 1;
    } else {
      process.stderr.write(`pvx: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    }
  },
);
