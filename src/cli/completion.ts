// `pvx completion bash|zsh|fish|kubectl-plugin`: shell completion scripts rendered from the command
// table (commands.ts) — commands, flags, the fixed values of a flag or argument, and, read from the
// cluster as the user types, namespaces (-n) and the objects a positional argument names (ver/NAME,
// pvc/NAME) through `kubectl get … -o name`, in the namespace and kubeconfig given on the command
// line so far. The scripts compute nothing at TAB time beyond those reads: no Node process starts.
//
// kubectl (1.26 and later) completes `kubectl pvx …` by running an executable named
// `kubectl_complete-pvx` from PATH with the words after `pvx`, and reads cobra's answer: one
// candidate a line, then `:DIRECTIVE`. The kubectl-plugin script is that executable: the bash
// completion itself, run once over the given words, its candidates printed with directive 4
// (no file completion: the script lists files itself where a flag takes a path).
import { parseArgs } from 'node:util';
import { commands, commandNames, globalFlags, resourceKinds, shells, type ArgSpec, type CommandSpec, type FlagSpec } from './commands.ts';
import { oneOf } from './options.ts';
import { UsageError } from './errors.ts';

export const completionHelp = `usage: pvx completion bash|zsh|fish|kubectl-plugin

Prints a shell completion script for pvx (and kubectl-pvx). Commands, flags and the fixed values of
flags (-o table|json|yaml, df's sort keys …) are completed from pvx's command table; namespaces
(-n) and the requests or claims an argument names (ver/NAME, pvc/NAME) are read from the cluster with
\`kubectl get … -o name\` (kubectl on PATH; in the namespace and kubeconfig typed so far).

  bash             source <(pvx completion bash)               (e.g. in ~/.bashrc)
  zsh              source <(pvx completion zsh)                (after compinit), or save it as _pvx on $fpath
  fish             pvx completion fish > ~/.config/fish/completions/pvx.fish
  kubectl-plugin   for \`kubectl pvx <TAB>\` (kubectl 1.26+): an executable named kubectl_complete-pvx on
                   PATH, e.g.
                     pvx completion kubectl-plugin > ~/.local/bin/kubectl_complete-pvx
                     chmod +x ~/.local/bin/kubectl_complete-pvx
                   It needs bash; kubectl's own completion (kubectl completion bash|zsh|fish) calls it.`;

type Entry = [name: string, spec: CommandSpec];

const entries = (): Entry[] => commandNames.map((n) => [n, commands[n]]);

/** A command's flags with the global ones (--help) it does not define itself. */
const flagsOf = (spec: Pick<CommandSpec, 'flags'>): [string, FlagSpec][] => Object.entries({ ...globalFlags, ...spec.flags });

/** What a flag's value completes to: nothing for a switch, its choices, a dynamic kind, or free text. */
type ValueKind = { kind: 'none' } | { kind: 'choices'; values: readonly string[] } | { kind: 'namespace' } | { kind: 'file' } | { kind: 'free' };

function valueKind(flag: FlagSpec): ValueKind {
  if (flag.type === 'boolean') return { kind: 'none' };
  if (flag.choices) return { kind: 'choices', values: flag.choices };
  if (flag.complete) return { kind: flag.complete };
  return { kind: 'free' };
}

/** The listing of an argument's kind: `kubectl get LIST -o name`, printed as PREFIX/NAME. */
const argSource = (arg: ArgSpec) => (arg.resource ? { list: resourceKinds[arg.resource].list, prefix: `${arg.resource}/` } : undefined);

/** POSIX shells' single quotes (bash, zsh). */
const sq = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
/** fish's single quotes: \ and ' escaped. */
const fq = (text: string) => `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`;

// ---------------------------------------------------------------------------------------------
// bash (3.2 and later: no associative arrays, no mapfile)

/** The bash functions: _pvx (the completion) and its helpers. */
function bashFunctions(): string {
  const flagWords = (spec: Pick<CommandSpec, 'flags'>) =>
    flagsOf(spec)
      .flatMap(([long, f]) => [`--${long}`, ...(f.short ? [`-${f.short}`] : [])])
      .join(' ');
  const valueCases = entries().flatMap(([name, spec]) =>
    flagsOf(spec).flatMap(([long, f]) => {
      const v = valueKind(f);
      if (v.kind === 'none') return [];
      const patterns = [`--${long}`, ...(f.short ? [`-${f.short}`] : [])].map((p) => `"${name} ${p}"`).join('|');
      return [`    ${patterns}) echo ${v.kind === 'choices' ? sq(`choices ${v.values.join(' ')}`) : v.kind} ;;`];
    }),
  );
  const argCases = entries().flatMap(([name, spec]) =>
    spec.args.map((arg, i) => {
      const source = argSource(arg);
      const what = source ? sq(`object ${source.list} ${source.prefix}`) : sq(`choices ${(arg.choices ?? []).join(' ')}`);
      // A repeated argument is the same at every position from its own.
      return `    ${arg.repeat ? `"${name} "*` : `"${name} ${i}"`}) echo ${what} ;;`;
    }),
  );
  return `# Names from the cluster: kubectl get LIST -o name, each printed as PREFIX NAME (namespaced
# lists in the namespace of -n, with the --kubeconfig of the command line). Quiet and bounded: a
# cluster that does not answer offers nothing.
__pvx_kubectl_names() {
  local list=$1 prefix=$2 namespaced=$3
  local -a args
  args=(get "$list" -o name --request-timeout=5s)
  if [ "$namespaced" = 1 ] && [ -n "$__pvx_namespace" ]; then args+=(-n "$__pvx_namespace"); fi
  if [ -n "$__pvx_kubeconfig" ]; then args+=(--kubeconfig "$__pvx_kubeconfig"); fi
  command kubectl "\${args[@]}" 2>/dev/null | sed "s|^[^/]*/|$prefix|"
}

# The words a command takes as flags.
__pvx_flags() {
  case "$1" in
${entries()
  .map(([name, spec]) => `    ${name}) echo ${sq(flagWords(spec))} ;;`)
  .join('\n')}
    *) echo ${sq(flagWords({ flags: {} }))} ;;
  esac
}

# What the value of a command's flag is: choices …, namespace, file or free; nothing for a switch.
__pvx_value() {
  case "$1 $2" in
${valueCases.join('\n')}
  esac
}

# What a command's Nth positional argument is (from 0): choices … or object LIST PREFIX.
__pvx_arg() {
  case "$1 $2" in
${argCases.join('\n')}
  esac
}

_pvx() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=""
  [ "$COMP_CWORD" -gt 0 ] && prev=\${COMP_WORDS[COMP_CWORD-1]}
  COMPREPLY=()
  # --flag=value: bash splits it at the = (COMP_WORDBREAKS), leaving "=" or the value being typed.
  if [ "$cur" = "=" ]; then prev=\${COMP_WORDS[COMP_CWORD-1]}; cur=""
  elif [ "$prev" = "=" ]; then prev=\${COMP_WORDS[COMP_CWORD-2]}
  fi
  if [ "$COMP_CWORD" -le 1 ]; then
    COMPREPLY=($(compgen -W ${sq([...commandNames, '--help'].join(' '))} -- "$cur"))
    return 0
  fi
  local cmd=\${COMP_WORDS[1]}
  # The namespace and kubeconfig given so far, and how many positional arguments.
  __pvx_namespace="" __pvx_kubeconfig=""
  local i=2 w positionals=0 takes
  while [ "$i" -lt "$COMP_CWORD" ]; do
    w=\${COMP_WORDS[i]}
    case "$w" in
      -*) takes=$(__pvx_value "$cmd" "$w")
          if [ -n "$takes" ]; then
            i=$((i+1))
            [ "\${COMP_WORDS[i]}" = "=" ] && i=$((i+1))
            case "$w" in
              -n|--namespace) __pvx_namespace=\${COMP_WORDS[i]} ;;
              --kubeconfig) __pvx_kubeconfig=\${COMP_WORDS[i]} ;;
            esac
          fi ;;
      *) positionals=$((positionals+1)) ;;
    esac
    i=$((i+1))
  done
  local what
  what=$(__pvx_value "$cmd" "$prev")
  if [ -z "$what" ]; then
    case "$cur" in
      -*) COMPREPLY=($(compgen -W "$(__pvx_flags "$cmd")" -- "$cur")); return 0 ;;
    esac
    what=$(__pvx_arg "$cmd" "$positionals")
  fi
  case "$what" in
    choices\\ *) COMPREPLY=($(compgen -W "\${what#choices }" -- "$cur")) ;;
    namespace) COMPREPLY=($(compgen -W "$(__pvx_kubectl_names namespaces '' 0)" -- "$cur")) ;;
    file) type compopt >/dev/null 2>&1 && compopt -o filenames 2>/dev/null
          COMPREPLY=($(compgen -f -- "$cur")) ;;
    object\\ *) set -- $what
          # ver/NAME while what is typed could still become it, NAME once it is a bare name.
          local prefix=$3
          case "$prefix" in "$cur"*) ;; *) case "$cur" in */*) ;; *) prefix="" ;; esac ;; esac
          COMPREPLY=($(compgen -W "$(__pvx_kubectl_names "$2" "$prefix" 1)" -- "$cur")) ;;
  esac
  return 0
}`;
}

export function bashScript(): string {
  return `# bash completion for pvx and kubectl-pvx, generated by \`pvx completion bash\` from pvx's command table.
# Load it with: source <(pvx completion bash)
${bashFunctions()}

complete -F _pvx pvx kubectl-pvx
`;
}

/** The executable kubectl runs for `kubectl pvx <TAB>`: the bash completion over its arguments, in cobra's answer format. */
export function kubectlPluginScript(): string {
  return `#!/usr/bin/env bash
# kubectl_complete-pvx: completes \`kubectl pvx …\` (kubectl 1.26+ runs it with the words after "pvx",
# the last being the one typed). Generated by \`pvx completion kubectl-plugin\` from pvx's command
# table; install it as an executable named kubectl_complete-pvx on PATH.
${bashFunctions()}

if [ "$#" -eq 0 ]; then set -- ""; fi
COMP_WORDS=(pvx "$@")
COMP_CWORD=$#
_pvx
for candidate in "\${COMPREPLY[@]}"; do printf '%s\\n' "$candidate"; done
# cobra's ShellCompDirectiveNoFileComp: the candidates above are all there is.
printf ':4\\n'
`;
}

// ---------------------------------------------------------------------------------------------
// zsh

/** A description inside an _arguments spec: brackets and colons would end it. */
const zdesc = (text: string) => text.replace(/\[/g, '(').replace(/]/g, ')').replace(/:/g, '\\:');

function zshAction(v: ValueKind): string {
  if (v.kind === 'choices') return `(${v.values.join(' ')})`;
  if (v.kind === 'namespace') return '_pvx_namespaces';
  if (v.kind === 'file') return '_files';
  return ' ';
}

function zshFlagSpecs(spec: CommandSpec): string[] {
  return flagsOf(spec).map(([long, f]) => {
    const v = valueKind(f);
    const takes = v.kind !== 'none';
    const names = [`--${long}${takes ? '=' : ''}`, ...(f.short ? [`-${f.short}${takes ? '+' : ''}`] : [])];
    const exclusive = f.multiple ? '*' : `(${[`--${long}`, ...(f.short ? [`-${f.short}`] : [])].join(' ')})`;
    const value = takes ? `:${zdesc(f.value ?? 'VALUE')}:${zshAction(v)}` : '';
    return names.length === 1
      ? sq(`${f.multiple ? '*' : ''}${names[0]}[${zdesc(f.help)}]${value}`)
      : `${sq(exclusive)}{${names.join(',')}}${sq(`[${zdesc(f.help)}]${value}`)}`;
  });
}

function zshArgSpecs(spec: CommandSpec): string[] {
  return spec.args.map((arg, i) => {
    const source = argSource(arg);
    const action = source ? `_pvx_objects ${source.list} ${source.prefix}` : `(${(arg.choices ?? []).join(' ')})`;
    return sq(`${arg.repeat ? '*' : String(i + 1)}:${zdesc(arg.name)}:${action}`);
  });
}

export function zshScript(): string {
  const commandList = entries().map(([name, spec]) => `    ${sq(`${name}:${spec.summary.replace(/:/g, '\\:')}`)}`);
  const perCommand = entries().map(
    ([name, spec]) => `        ${name})
          _arguments -s ${[...zshFlagSpecs(spec), ...zshArgSpecs(spec)].join(' \\\n            ')} ;;`,
  );
  return `#compdef pvx kubectl-pvx
# zsh completion for pvx and kubectl-pvx, generated by \`pvx completion zsh\` from pvx's command table.
# Load it with: source <(pvx completion zsh) (after compinit), or save it as _pvx in a directory of $fpath.

# kubectl's scope from the command line so far: the -n namespace and the --kubeconfig.
_pvx_kubectl() {
  local -a scope
  local ns=\${opt_args[-n]:-\${opt_args[--namespace]}} kubeconfig=\${opt_args[--kubeconfig]}
  [[ $1 == namespaced && -n $ns ]] && scope+=(-n "$ns")
  [[ -n $kubeconfig ]] && scope+=(--kubeconfig "$kubeconfig")
  shift
  command kubectl get "$@" -o name --request-timeout=5s "\${scope[@]}" 2>/dev/null
}

_pvx_namespaces() {
  local -a names
  names=(\${(f)"$(_pvx_kubectl cluster namespaces)"})
  names=(\${names#namespace/})
  compadd -a names
}

# Objects of a kind (LIST), offered as PREFIX NAME.
_pvx_objects() {
  local -a names
  names=(\${(f)"$(_pvx_kubectl namespaced $1)"})
  names=(\${names/#*\\//$2})
  compadd -a names
}

_pvx() {
  local curcontext=$curcontext state line
  local -A opt_args
  local -a commands
  commands=(
${commandList.join('\n')}
  )
  _arguments -C '(- *)'{-h,--help}'[show help]' '1:command:->command' '*::argument:->argument'
  case $state in
    command) _describe -t commands 'pvx command' commands ;;
    argument)
      case $words[1] in
${perCommand.join('\n')}
      esac ;;
  esac
}

if [[ $funcstack[1] == _pvx ]]; then
  _pvx "$@"
else
  compdef _pvx pvx kubectl-pvx
fi
`;
}

// ---------------------------------------------------------------------------------------------
// fish

function fishFlagLines(name: string, spec: CommandSpec): string[] {
  return flagsOf(spec).map(([long, f]) => {
    const v = valueKind(f);
    const parts = [`complete -c pvx -n ${fq(`__fish_seen_subcommand_from ${name}`)}`, ...(f.short ? [`-s ${f.short}`] : []), `-l ${long}`];
    if (v.kind === 'choices') parts.push(`-x -a ${fq(v.values.join(' '))}`);
    else if (v.kind === 'namespace') parts.push(`-x -a '(__pvx_namespaces)'`);
    else if (v.kind === 'file') parts.push('-r -F');
    else if (v.kind === 'free') parts.push('-x');
    parts.push(`-d ${fq(f.help)}`);
    return parts.join(' ');
  });
}

function fishArgLines(name: string, spec: CommandSpec): string[] {
  return spec.args.map((arg) => {
    const source = argSource(arg);
    const values = source ? `(__pvx_objects ${source.list} ${source.prefix})` : (arg.choices ?? []).join(' ');
    return `complete -c pvx -n ${fq(`__fish_seen_subcommand_from ${name}`)} -a ${fq(values)}`;
  });
}

export function fishScript(): string {
  const names = commandNames.join(' ');
  return `# fish completion for pvx and kubectl-pvx, generated by \`pvx completion fish\` from pvx's command table.
# Install it with: pvx completion fish > ~/.config/fish/completions/pvx.fish

# kubectl's scope from the command line so far: the -n namespace (namespaced lists) and the --kubeconfig.
function __pvx_kubectl --argument-names scope
    set -l words (commandline -opc)
    set -l args
    for i in (seq (count $words))
        set -l next (math $i + 1)
        switch $words[$i]
            case -n --namespace
                test $scope = namespaced; and test $next -le (count $words); and set args $args -n $words[$next]
            case --kubeconfig
                test $next -le (count $words); and set args $args --kubeconfig $words[$next]
        end
    end
    command kubectl get $argv[2..-1] -o name --request-timeout=5s $args 2>/dev/null
end

function __pvx_namespaces
    __pvx_kubectl cluster namespaces | string replace -r '^[^/]*/' ''
end

# Objects of a kind (LIST), offered as PREFIX NAME.
function __pvx_objects --argument-names list prefix
    __pvx_kubectl namespaced $list | string replace -r '^[^/]*/' $prefix
end

complete -c pvx -f
complete -c kubectl-pvx -w pvx
complete -c pvx -n ${fq(`not __fish_seen_subcommand_from ${names}`)} -s h -l help -d 'show help'
${entries()
  .map(([name, spec]) => `complete -c pvx -n ${fq(`not __fish_seen_subcommand_from ${names}`)} -a ${name} -d ${fq(spec.summary)}`)
  .join('\n')}
${entries()
  .flatMap(([name, spec]) => [...fishFlagLines(name, spec), ...fishArgLines(name, spec)])
  .join('\n')}
`;
}

const scripts: Record<(typeof shells)[number], () => string> = { bash: bashScript, zsh: zshScript, fish: fishScript, 'kubectl-plugin': kubectlPluginScript };

export function parseCompletionArgs(argv: string[]): (typeof shells)[number] {
  const { positionals } = parseArgs({ args: argv, allowPositionals: true, options: commands.completion.flags });
  const [shell, ...extra] = positionals;
  if (shell === undefined || extra.length > 0) throw new UsageError(`name one shell\n\n${completionHelp}`);
  return oneOf('the shell', shell, shells);
}

export async function completion(argv: string[]): Promise<number> {
  process.stdout.write(scripts[parseCompletionArgs(argv)]());
  return 0;
}
