#!/usr/bin/env node
// The `pvx` command (also installed as the kubectl plugin `kubectl-pvx`).
// Each command is imported when it runs, so a command loads only what it uses: `pvx run` in
// particular never loads client-node unless its credentials need it (see connect.ts).
import { parseArgs } from 'node:util';
import { CommandFailure, UsageError } from './usage.ts';

const help = `usage: pvx <command> [flags]

Commands:
  run            run the operator (see pvx run --help)
  install-crds   create or update pvx's CustomResourceDefinitions [--kubeconfig PATH]
  approve        approve a request a policy created in Approval mode: pvx approve ver/NAME -n NS
  audit          read-only check of the cluster's claims for expansion problems: pvx audit [-n NS | -A] (see --help)
  status         list VolumeExpansionRequests, active first: pvx status [-n NS | -A] [-o table|json|yaml]
  wait           follow a request until it finishes: pvx wait ver/NAME -n NS [--timeout 10m] (see --help)
  plan           what the policies would do now, read-only: pvx plan [-n NS | -A] (see --help)
  why            which gate holds a claim from growing, and the next step: pvx why pvc/NAME | ver/NAME -n NS (see --help)

pvx audits and orchestrates PersistentVolumeClaim expansion.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    process.stdout.write(`${help}\n`);
    return 0;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    const commandHelp = await helpOf(command);
    if (commandHelp) {
      process.stdout.write(`${commandHelp}\n`);
      return 0;
    }
  }
  switch (command) {
    case 'run':
      return (await import('./run.ts')).run(rest);
    case 'approve':
      return (await import('./approve.ts')).approve(rest);
    case 'audit':
      return (await import('./audit.ts')).audit(rest);
    case 'status':
      return (await import('./status.ts')).status(rest);
    case 'wait':
      return (await import('./wait.ts')).wait(rest);
    case 'plan':
      return (await import('./plan.ts')).plan(rest);
    case 'why':
      return (await import('./why.ts')).why(rest);
    case 'install-crds': {
      const { values } = parseArgs({ args: rest, options: { kubeconfig: { type: 'string' } } });
      const [{ installCRDs }, { loadKubeConfig }] = await Promise.all([import('../k8s/crd-install.ts'), import('./kubeconfig.ts')]);
      await installCRDs(loadKubeConfig(values.kubeconfig ?? process.env.KUBECONFIG), (line) => process.stdout.write(`${line}\n`));
      return 0;
    }
    default:
      throw new UsageError(`unknown command "${command}"\n\n${help}`);
  }
}

/** A command's own --help text, for the commands that have one (the others parse --help themselves). */
async function helpOf(command: string): Promise<string | undefined> {
  switch (command) {
    case 'run':
      return (await import('./run.ts')).runHelp;
    case 'status':
      return (await import('./status.ts')).statusHelp;
    case 'wait':
      return (await import('./wait.ts')).waitHelp;
    case 'plan':
      return (await import('./plan.ts')).planHelp;
    default:
      return undefined;
  }
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
