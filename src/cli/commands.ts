// The one definition of pvx's commands: each command's name, summary, positional arguments and
// flags — their parseArgs type, short form, default, value placeholder and fixed values. The
// top-level help (main.ts) and the shell completions (completion.ts) are generated from it, and each
// command hands its entry's `flags` to parseArgs as they are (parseArgs reads type, short, multiple
// and default, and ignores the rest), so a flag cannot be parsed without being completed, nor
// completed without being parsed. Data only: loading it loads no command, so `pvx plan` reaching it
// never reaches `pvx run`'s modules (main.ts maps each name to its module).
//
// To add a command: an entry here, a loader in main.ts (the compiler asks for it), a row in
// docs/cli.md's command table and its name in the README (test/unit/docs.test.ts checks both).
import { runDefaults } from '../crds/defaults.ts';

/** How the completion finds a value the table cannot list: read from the cluster, or a file path. */
export type Dynamic = 'namespace' | 'file';

export interface FlagSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  default?: string | boolean;
  /** The value's placeholder in help (NS, PATH, DURATION); string flags only. */
  value?: string;
  /** The only values the command accepts: completed, and checked by the command with oneOf. */
  choices?: readonly string[];
  /** Values completed from the cluster (`kubectl get … -o name`) or the file system. */
  complete?: Dynamic;
  /** One line, for the completion's descriptions (zsh, fish). */
  help: string;
}

/** A positional argument: an object of a kind (completed as KIND/NAME from the cluster), or one of fixed words. */
export interface ArgSpec {
  /** As the usage writes it: ver/NAME, SHELL. */
  name: string;
  /** The object kind it names, by its short name; completed from the claim's namespace. */
  resource?: keyof typeof resourceKinds;
  choices?: readonly string[];
  /** Given more than once. */
  repeat?: boolean;
}

export interface CommandSpec {
  summary: string;
  /**
   * The command only reads (the cluster, or nothing): it imports nothing of the operator, which
   * src/architecture.test.ts holds for each command marked so.
   */
  readOnly: boolean;
  /** The arguments after the command name, for the top-level help. */
  synopsis: string;
  args: readonly ArgSpec[];
  flags: Readonly<Record<string, FlagSpec>>;
}

/** The kinds a positional argument may name: how `kubectl get` lists them, and the prefix users type. */
export const resourceKinds = {
  ver: { list: 'volumeexpansionrequests.pvx.dev', namespaced: true },
  pvc: { list: 'persistentvolumeclaims', namespaced: true },
} as const;

export const outputFormats = ['table', 'json', 'yaml'] as const;
export const kubeClients = ['auto', 'http', 'client-node'] as const;
export const logLevels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export const dfSorts = ['used', 'free', 'ttf'] as const;
export const dfOutputs = ['table', 'wide', 'json'] as const;
export const shells = ['bash', 'zsh', 'fish', 'kubectl-plugin'] as const;

// Flags several commands share, defined once. Where a rule of src/policies owns a list (the audit's
// severities), the table repeats it and commands.test.ts holds the two equal: the table stays light
// enough for a completion to load at every TAB.
const kubeconfig = { type: 'string', value: 'PATH', complete: 'file', help: 'kubeconfig file (env KUBECONFIG)' } as const;
const namespace = { type: 'string', short: 'n', value: 'NS', complete: 'namespace', help: 'the namespace (default: the context’s)' } as const;
const allNamespaces = { type: 'boolean', short: 'A', default: false, help: 'every namespace' } as const;
const selector = { type: 'string', short: 'l', value: 'SELECTOR', help: 'label selector, e.g. app=db' } as const;
const output = { type: 'string', short: 'o', default: 'table', value: 'FORMAT', choices: outputFormats, help: 'output format' } as const;
const modificationBudget = { type: 'string', multiple: true, value: 'DRIVER=COUNT/DURATION', help: 'a CSI driver’s modification budget per volume' } as const;
const maxVolumeSize = { type: 'string', multiple: true, value: 'DRIVER=SIZE', help: 'the largest volume a CSI driver makes' } as const;
const prometheusUrl = { type: 'string', value: 'URL', help: 'Prometheus base URL (env PVX_PROMETHEUS_URL)' } as const;
const prometheusMatchers = { type: 'string', value: 'MATCHERS', help: 'extra label matchers, e.g. cluster="prod"' } as const;

/** How the commands that read the kubelets (run, audit, plan, df) reach them; read by kubelet.ts's kubeletFlags. */
export const kubeletOptions = {
  'kubelet-ca-file': { type: 'string', value: 'PATH', complete: 'file', help: 'CA of the kubelets’ serving certificates (env PVX_KUBELET_CA_FILE)' },
  'kubelet-insecure-tls': { type: 'boolean', help: 'do not check the kubelets’ serving certificates (UNSAFE)' },
  'kubelet-preferred-address-types': { type: 'string', value: 'LIST', help: 'node address types to dial, most preferred first' },
} as const;

/**
 * How the read-only commands (audit, plan, df, why) reach the kubelets: through the API server's
 * node proxy unless --kubelet-direct, which sends the person's credentials to every node.
 */
export const commandKubeletOptions = {
  ...kubeletOptions,
  'kubelet-direct': { type: 'boolean', help: 'read each kubelet directly, with your credentials (they go to every node)' },
} as const;

/** The flags of the commands that list a namespace or all of them: -n, -A, -o, --kubeconfig. */
export const listingOptions = { namespace, 'all-namespaces': allNamespaces, output, kubeconfig } as const;

/** How `pvx plan`, `pvx df` and `pvx why` read usage: one spelling, one set of defaults. */
export const usageReadingOptions = {
  usage: { type: 'string', default: 'kubelet', value: 'SOURCE', choices: ['kubelet', 'prometheus', 'none'], help: 'where usage comes from' },
  ...commandKubeletOptions,
  'prometheus-url': prometheusUrl,
  'prometheus-matchers': prometheusMatchers,
  samples: { type: 'string', default: '1', value: 'N', help: 'usage readings to take (1–30)' },
  'sample-interval': { type: 'string', default: '10s', value: 'DURATION', help: 'time between readings' },
  'modification-budget': modificationBudget,
  'max-volume-size': maxVolumeSize,
} as const;

/** Flags every command takes: main.ts answers them before the command runs. */
export const globalFlags = { help: { type: 'boolean', short: 'h', help: 'show help' } } as const satisfies Record<string, FlagSpec>;

const verArg = { name: 'ver/NAME', resource: 'ver' } as const;

export const commands = {
  run: {
    summary: 'run the operator (see pvx run --help)',
    readOnly: false,
    synopsis: '[flags]',
    args: [],
    flags: {
      kubeconfig,
      'kube-client': { type: 'string', value: 'CLIENT', choices: kubeClients, help: 'how to talk to the API server' },
      namespace: { type: 'string', value: 'NS', complete: 'namespace', help: 'watch only this namespace' },
      'namespace-selector': { type: 'string', value: 'KEY=VALUE,...', help: 'handle only namespaces with these labels' },
      'metrics-bind-address': { type: 'string', value: 'HOST:PORT', help: '/metrics address (HTTPS unless --metrics-secure=false)' },
      'metrics-secure': { type: 'string', value: 'BOOL', choices: ['true', 'false'], help: 'HTTPS and token review on /metrics' },
      'metrics-cert-dir': { type: 'string', value: 'DIR', complete: 'file', help: 'tls.crt and tls.key for /metrics' },
      'health-probe-bind-address': { type: 'string', value: 'HOST:PORT', help: '/healthz, /readyz address (plain HTTP)' },
      'leader-elect': { type: 'string', default: runDefaults['leader-elect'], value: 'BOOL', choices: ['true', 'false'], help: 'leader election' },
      'leader-election-id': { type: 'string', value: 'NAME', help: 'Lease name' },
      'leader-election-namespace': { type: 'string', value: 'NS', complete: 'namespace', help: 'Lease namespace' },
      identity: { type: 'string', value: 'ID', help: 'this replica’s name in the Lease' },
      'log-level': { type: 'string', value: 'LEVEL', choices: logLevels, help: 'log level' },
      'enable-debug-endpoints': { type: 'boolean', default: false, help: 'serve /debug/informers on the health probe address (loopback peers only)' },
      'drain-timeout': { type: 'string', default: runDefaults['drain-timeout'], value: 'DURATION', help: 'how long shutdown waits for reconciles' },
      'usage-source': {
        type: 'string',
        default: runDefaults['usage-source'],
        value: 'SOURCE',
        choices: ['kubelet', 'prometheus', 'none'],
        help: 'where usage comes from',
      },
      ...kubeletOptions,
      'kubelet-identity': { type: 'string', value: 'NAME', help: 'the ServiceAccount pvx reads the kubelets as (nodes/stats only)' },
      'policy-interval': { type: 'string', default: runDefaults['policy-interval'], value: 'DURATION', help: 'longest wait between policy passes' },
      'audit-interval': { type: 'string', default: runDefaults['audit-interval'], value: 'DURATION', help: 'how often the audit runs' },
      'audit-stuck-after': { type: 'string', default: runDefaults['audit-stuck-after'], value: 'DURATION', help: 'a resize stage longer than this is stuck' },
      'prometheus-url': prometheusUrl,
      'prometheus-matchers': prometheusMatchers,
      'kube-api-qps': { type: 'string', default: runDefaults['kube-api-qps'], value: 'N', help: 'API requests per second, sustained' },
      'kube-api-burst': { type: 'string', default: runDefaults['kube-api-burst'], value: 'N', help: 'API requests at once above that' },
      'modification-budget': modificationBudget,
      'max-volume-size': maxVolumeSize,
    },
  },
  'install-crds': {
    summary: 'create or update pvx’s CustomResourceDefinitions [--kubeconfig PATH]',
    readOnly: false,
    synopsis: '[--kubeconfig PATH]',
    args: [],
    flags: { kubeconfig },
  },
  approve: {
    summary: 'approve a request a policy created in Approval mode: pvx approve ver/NAME -n NS',
    readOnly: false,
    synopsis: 'ver/NAME [-n NS]',
    args: [verArg],
    flags: { namespace, kubeconfig },
  },
  audit: {
    summary: 'read-only check of the cluster’s claims for expansion problems: pvx audit [-n NS | -A] (see --help)',
    readOnly: true,
    synopsis: '[-n NS | -A] [flags]',
    args: [],
    flags: {
      ...listingOptions,
      'fail-on': { type: 'string', value: 'SEVERITY', choices: ['info', 'warning', 'critical'], help: 'exit 3 on a finding this severe' },
      usage: { type: 'string', default: 'kubelet', value: 'SOURCE', choices: ['kubelet', 'none'], help: 'where usage comes from' },
      ...commandKubeletOptions,
      'stuck-after': { type: 'string', value: 'DURATION', help: 'a resize stage longer than this is stuck' },
      'modification-budget': modificationBudget,
      'max-volume-size': maxVolumeSize,
      rules: { type: 'boolean', default: false, help: 'list the rules' },
      help: { type: 'boolean', short: 'h', default: false, help: 'show help' },
    },
  },
  status: {
    summary: 'list VolumeExpansionRequests, active first: pvx status [-n NS | -A] [-o table|json|yaml]',
    readOnly: true,
    synopsis: '[-n NS | -A] [-l SELECTOR] [-o table|json|yaml]',
    args: [],
    flags: { ...listingOptions, selector },
  },
  wait: {
    summary: 'follow requests until they finish: pvx wait ver/NAME | -l SELECTOR | --all [-n NS | -A] [--timeout 10m] (see --help)',
    readOnly: true,
    synopsis: 'ver/NAME... | -l SELECTOR | --all [-n NS | -A] [--timeout DURATION]',
    args: [{ ...verArg, repeat: true }],
    flags: {
      namespace,
      'all-namespaces': allNamespaces,
      selector,
      all: { type: 'boolean', default: false, help: 'every request of the namespace(s)' },
      timeout: { type: 'string', default: '10m', value: 'DURATION', help: 'give up after this long' },
      quiet: { type: 'boolean', short: 'q', default: false, help: 'print only what went wrong' },
      kubeconfig,
    },
  },
  plan: {
    summary: 'what the policies would do now, read-only: pvx plan [-n NS | -A] (see --help)',
    readOnly: true,
    synopsis: '[-n NS | -A] [flags]',
    args: [],
    flags: { ...listingOptions, ...usageReadingOptions },
  },
  why: {
    summary: 'which gate holds a claim from growing, and the next step: pvx why pvc/NAME | ver/NAME [-n NS] (see --help)',
    readOnly: true,
    synopsis: 'pvc/NAME | ver/NAME [-n NS] [-o table|json|yaml] [flags]',
    // One object: a claim (completed from the cluster) or a request (ver/NAME, typed).
    args: [{ name: 'pvc/NAME', resource: 'pvc' }],
    flags: { namespace, output, kubeconfig, ...usageReadingOptions },
  },
  df: {
    summary: 'every claim’s size, use, time to full, policy and room to grow: pvx df [-n NS | -A] (see --help)',
    readOnly: true,
    synopsis: '[-n NS | -A] [-l SELECTOR] [--sort used|free|ttf] [--inodes] [-o wide|json]',
    args: [],
    flags: {
      ...listingOptions,
      output: { ...output, choices: dfOutputs },
      selector,
      sort: { type: 'string', value: 'KEY', choices: dfSorts, help: 'order: most used, least free, soonest full' },
      inodes: { type: 'boolean', default: false, help: 'show inode use' },
      ...usageReadingOptions,
    },
  },
  completion: {
    summary: 'print a shell completion script: pvx completion bash|zsh|fish|kubectl-plugin',
    readOnly: true,
    synopsis: 'bash|zsh|fish|kubectl-plugin',
    args: [{ name: 'SHELL', choices: shells }],
    flags: {},
  },
} as const satisfies Record<string, CommandSpec>;

export type CommandName = keyof typeof commands;

export const commandNames = Object.keys(commands) as CommandName[];

export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(commands, name);
}

/** The top-level help: every command of the table with its summary. */
export function topLevelHelp(): string {
  const width = Math.max(...commandNames.map((n) => n.length)) + 3;
  const lines = commandNames.map((name) => `  ${name.padEnd(width)}${commands[name].summary}`);
  return `usage: pvx <command> [flags]

Commands:
${lines.join('\n')}

pvx audits and orchestrates PersistentVolumeClaim expansion.`;
}
