import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { rmSync } from 'node:fs';
import { commandNames, commands } from './commands.ts';
import { bashScript, fishScript, kubectlPluginScript, parseCompletionArgs, zshScript } from './completion.ts';
import { UsageError } from './errors.ts';

const dir = mkdtempSync(join(tmpdir(), 'pvx-completion-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A stand-in kubectl: fixed names for namespaces and requests, each call logged. */
const kubectlLog = join(dir, 'kubectl.log');
const bin = join(dir, 'bin');
execFileSync('mkdir', ['-p', bin]);
writeFileSync(
  join(bin, 'kubectl'),
  `#!/bin/sh
echo "$*" >> ${kubectlLog}
case "$2" in
  namespaces) printf 'namespace/db\\nnamespace/default\\nnamespace/shop\\n' ;;
  volumeexpansionrequests.pvx.dev) printf 'volumeexpansionrequest.pvx.dev/grow\\nvolumeexpansionrequest.pvx.dev/grow-more\\n' ;;
  persistentvolumeclaims) printf 'persistentvolumeclaim/data-0\\n' ;;
esac
`,
);
chmodSync(join(bin, 'kubectl'), 0o755);

/** A shell's run, bounded for a loaded 2-core machine (the test's own bound is the unit project's). */
const shellBoundMs = 30_000;

const has = (shell: string) => spawnSync('sh', ['-c', `command -v ${shell}`]).status === 0;

function write(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text, { mode: 0o755 });
  return file;
}

/** Sources the bash script and runs _pvx over the words (the last being the one typed); its candidates. */
function bashComplete(...words: string[]): string[] {
  const script = write('pvx.bash', bashScript());
  const run = `source ${script}
COMP_WORDS=("$@"); COMP_CWORD=$(( $# - 1 ))
_pvx
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const out = execFileSync('bash', ['-c', run, 'bash', ...words], {
    env: { PATH: `${bin}:${process.env.PATH}` },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: shellBoundMs,
  });
  return out.split('\n').filter(Boolean);
}

describe('the generated scripts are valid for their shells', () => {
  it('bash -n', () => {
    expect(spawnSync('bash', ['-n', write('check.bash', bashScript())], { encoding: 'utf8', timeout: shellBoundMs }).stderr).toBe('');
    expect(spawnSync('bash', ['-n', write('kubectl_complete-pvx', kubectlPluginScript())], { encoding: 'utf8', timeout: shellBoundMs }).stderr).toBe('');
  });

  it.skipIf(!has('zsh'))('zsh -n (skipped without zsh; scripts/test installs it)', () => {
    const r = spawnSync('zsh', ['-n', write('_pvx', zshScript())], { encoding: 'utf8', timeout: shellBoundMs });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it.skipIf(!has('fish'))('fish --no-execute (skipped without fish; scripts/test installs it)', () => {
    const r = spawnSync('fish', ['--no-execute', write('pvx.fish', fishScript())], { encoding: 'utf8', timeout: shellBoundMs });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it.skipIf(!has('fish'))('fish offers the table’s commands and choices (skipped without fish)', () => {
    const script = write('pvx.fish', fishScript());
    const complete = (line: string) =>
      execFileSync('fish', ['-c', `source ${script}; complete -C ${JSON.stringify(line)}`], {
        env: { ...process.env, PATH: `${bin}:${process.env.PATH}` },
        encoding: 'utf8',
        timeout: shellBoundMs,
      })
        .split('\n')
        .map((l) => l.split('\t')[0])
        .filter(Boolean);
    expect(complete('pvx ')).toEqual(expect.arrayContaining([...commandNames]));
    expect(complete('pvx df --sort ')).toEqual(['free', 'ttf', 'used']);
    expect(complete('pvx wait -n ')).toEqual(['db', 'default', 'shop']);
  });

  it.skipIf(!has('zsh'))('zsh loads it as a completion function (skipped without zsh)', () => {
    const script = write('_pvx', zshScript());
    // compinit over the generated file's directory and its own, not the whole system fpath (which
    // took 5 s on a loaded 2-core machine): what is checked is that zsh takes the file for pvx.
    const zsh = `fpath=(${dirname(script)} \${^fpath}/compinit(N:h)); autoload -Uz compinit && compinit -u -D && source ${script} && print -r -- $_comps[pvx] $_comps[kubectl-pvx]`;
    const r = spawnSync('zsh', ['-f', '-c', zsh], { encoding: 'utf8', timeout: shellBoundMs });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('_pvx _pvx');
  });
});

describe('bash completion', () => {
  it('completes the commands of the table', () => {
    expect(bashComplete('pvx', '')).toEqual([...commandNames, '--help']);
    expect(bashComplete('pvx', 'd')).toEqual(['df']);
  });

  it('completes a command’s flags, long and short', () => {
    expect(bashComplete('pvx', 'df', '--s')).toEqual(['--selector', '--sort', '--samples', '--sample-interval']);
    expect(bashComplete('pvx', 'wait', '-')).toEqual(expect.arrayContaining(['--all', '-l', '--selector', '-A', '--timeout', '-q']));
  });

  it('completes the fixed values of a flag, also after --flag=', () => {
    expect(bashComplete('pvx', 'df', '--sort', '')).toEqual(['used', 'free', 'ttf']);
    expect(bashComplete('pvx', 'df', '-o', '')).toEqual(['table', 'wide', 'json']);
    expect(bashComplete('pvx', 'status', '-o', 'j')).toEqual(['json']);
    expect(bashComplete('pvx', 'plan', '--output', '=', '')).toEqual(['table', 'json', 'yaml']);
    expect(bashComplete('pvx', 'completion', '')).toEqual(['bash', 'zsh', 'fish', 'kubectl-plugin']);
  });

  it('offers nothing for a value it cannot know', () => {
    expect(bashComplete('pvx', 'wait', '--timeout', '')).toEqual([]);
  });

  it('reads namespaces and requests from the cluster, in the namespace given', () => {
    writeFileSync(kubectlLog, '');
    expect(bashComplete('pvx', 'df', '-n', '')).toEqual(['db', 'default', 'shop']);
    expect(bashComplete('pvx', 'wait', '-n', 'shop', '--timeout', '1m', '')).toEqual(['ver/grow', 'ver/grow-more']);
    expect(bashComplete('pvx', 'approve', '--kubeconfig', '/k', 'ver/grow-')).toEqual(['ver/grow-more']);
    // A bare name completes to bare names.
    expect(bashComplete('pvx', 'wait', 'grow-')).toEqual(['grow-more']);
    expect(execFileSync('cat', [kubectlLog], { encoding: 'utf8' }).trim().split('\n')).toEqual([
      'get namespaces -o name --request-timeout=5s',
      'get volumeexpansionrequests.pvx.dev -o name --request-timeout=5s -n shop',
      'get volumeexpansionrequests.pvx.dev -o name --request-timeout=5s --kubeconfig /k',
      'get volumeexpansionrequests.pvx.dev -o name --request-timeout=5s',
    ]);
  });

  it('offers an argument once when the command takes one', () => {
    expect(bashComplete('pvx', 'approve', 'ver/grow', '')).toEqual([]);
  });
});

describe('kubectl_complete-pvx', () => {
  it('answers kubectl in cobra’s format: candidates, then the no-file directive', () => {
    const script = write('kubectl_complete-pvx', kubectlPluginScript());
    const run = (...args: string[]) =>
      execFileSync(script, args, { env: { PATH: `${bin}:${process.env.PATH}` }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: shellBoundMs });
    expect(run('df', '--sort', '')).toBe('used\nfree\nttf\n:4\n');
    expect(run('wait', '-n', 'db', 'ver/')).toBe('ver/grow\nver/grow-more\n:4\n');
    expect(run().split('\n').slice(0, commandNames.length)).toEqual([...commandNames]);
  });
});

describe('pvx completion', () => {
  it('takes one shell of the table', () => {
    expect(parseCompletionArgs(['zsh'])).toBe('zsh');
    expect(() => parseCompletionArgs([])).toThrow(UsageError);
    expect(() => parseCompletionArgs(['tcsh'])).toThrow(/must be one of bash, zsh, fish, kubectl-plugin/);
    expect(commands.completion.args[0].choices).toContain('kubectl-plugin');
  });
});
