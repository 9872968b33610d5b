// `pvx audit` (also `kubectl pvx audit`): reads the cluster and reports what is wrong, or about to
// go wrong, with PersistentVolumeClaim expansion — the rules of src/policies/audit/rules.ts over a
// snapshot from src/cli/read-cluster.ts. Read-only: it never writes to the cluster. The formatting is
// pure (findings in, text out); the command around it reads and chooses the exit code.
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { collectSnapshot, kubeletUsage, type Collected } from './read-cluster.ts';
import { runDefaults } from '../crds/defaults.ts';
import { parseDuration } from '../policies/shared/duration.ts';
import { atOrAbove, audit as runAudit, auditRules, defaultStuckAfterMs, severities, type Finding, type Severity } from '../policies/audit/rules.ts';
import { explainClusterError } from './cluster-error.ts';
import { connect, namespaceOf, type Connected } from './connect.ts';
import { formatTable } from './table.ts';
import { driverProfiles, type MaxVolumeSize, type ModificationBudget } from '../policies/budget/drivers.ts';
import { commands } from './commands.ts';
import { listingFlags, maxVolumeSizesFlag, modificationBudgetsFlag, oneOf, type ListingFlags } from './options.ts';
import { commandKubeletReader, kubeletFlags, kubeletHelp, kubeletWarnings, type KubeletFlags } from './kubelet.ts';
import { CommandFailure, UsageError } from './errors.ts';

/** Exit code when a finding is at or above --fail-on. */
export const findingsExitCode = 3;

export const auditHelp = `usage: pvx audit [-n NAMESPACE | -A] [-o table|json|yaml] [--fail-on SEVERITY] [--usage kubelet|none]
                 [--stuck-after DURATION] [--modification-budget DRIVER=COUNT/DURATION]
                 [--max-volume-size DRIVER=SIZE] [--kubeconfig PATH]
       pvx audit --rules

Reads the cluster (never writes) and reports problems with PersistentVolumeClaim expansion: claims
that cannot grow, resizes that are stuck, failing, infeasible or waiting for a pod, volumes and
claims that disagree, nearly full volumes no policy grows, quotas the next policy step would exceed,
exhausted driver budgets, StatefulSet claims of drifting sizes, and claims resized outside pvx.
Works on any cluster, with or without pvx's operator and CRDs.

  -n, --namespace NS        the namespace (default: the kubeconfig context's, else "default")
  -A, --all-namespaces      every namespace
  -o, --output FORMAT       table (default: one row per finding, its remedy below it), json or
                            yaml ({findings, summary, warnings, skippedRules})
  --fail-on SEVERITY        exit ${findingsExitCode} when any finding is at least this severe: info, warning or
                            critical (default: exit 0 whatever is found)
  --usage SOURCE            kubelet (default: volume usage from each node's kubelet, through the API
                            server; needs list nodes and pods, and get nodes/proxy) or none
${kubeletHelp(28, true)}
  --stuck-after DURATION    a resize stage lasting longer than this is stuck (default ${runDefaults['audit-stuck-after']})
  --modification-budget DRIVER=COUNT/DURATION|DRIVER=none
                            a CSI driver's modification budget per volume, as the operator
                            was given it (default: pvx's profiles, ebs.csi.aws.com=4/24h);
                            repeatable or comma-separated (env PVX_MODIFICATION_BUDGET)
  --max-volume-size DRIVER=SIZE|DRIVER=class-parameter:NAME
                            the largest volume a CSI driver makes, as the operator was given
                            it; repeatable or comma-separated (env PVX_MAX_VOLUME_SIZE)
  --rules                   list the rules, their severity and remedy
  --kubeconfig PATH         kubeconfig file (env KUBECONFIG)

Exit codes:
  0  the audit ran (no finding at or above --fail-on)
  ${findingsExitCode}  a finding at or above --fail-on
  2  usage error (unknown flag or value)
  1  the cluster could not be read (bad kubeconfig, unreachable API server, an API error)`;

export interface AuditCommandOptions extends ListingFlags {
  failOn?: Severity;
  usage: 'kubelet' | 'none';
  kubelet: KubeletFlags;
  stuckAfterMs: number;
  /** --modification-budget: budgets by driver replacing the profiles' (null: none). */
  modificationBudgets: Record<string, ModificationBudget | null>;
  /** --max-volume-size: the largest volume of some drivers (pvx's profiles' otherwise). */
  maxVolumeSizes?: Record<string, MaxVolumeSize>;
  listRules: boolean;
  help: boolean;
}

export function parseAuditArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): AuditCommandOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: commands.audit.flags,
  });
  const listing = listingFlags(values, positionals, auditHelp);
  let stuckAfterMs = defaultStuckAfterMs;
  if (values['stuck-after'] !== undefined) {
    const ms = parseDuration(values['stuck-after']);
    if (!ms) throw new UsageError(`--stuck-after must be a positive duration such as 15m or 1h30m, got "${values['stuck-after']}"`);
    stuckAfterMs = ms;
  }
  return {
    ...listing,
    failOn: values['fail-on'] === undefined ? undefined : oneOf('--fail-on', values['fail-on'], commands.audit.flags['fail-on'].choices),
    usage: oneOf('--usage', values.usage ?? 'kubelet', commands.audit.flags.usage.choices),
    kubelet: kubeletFlags(values, env, 'api-server-unless-direct'),
    stuckAfterMs,
    modificationBudgets: modificationBudgetsFlag(values['modification-budget'], env.PVX_MODIFICATION_BUDGET),
    maxVolumeSizes: maxVolumeSizesFlag(values['max-volume-size'], env.PVX_MAX_VOLUME_SIZE),
    listRules: values.rules ?? false,
    help: values.help ?? false,
  };
}

export type Summary = Record<Severity, number> & { total: number };

export function summarize(findings: readonly Finding[]): Summary {
  const summary: Summary = { total: findings.length, critical: 0, warning: 0, info: 0 };
  for (const f of findings) summary[f.severity]++;
  return summary;
}

const shortKind: Record<string, string> = { PersistentVolumeClaim: 'pvc', StatefulSet: 'statefulset' };

/** pvc/data, statefulset/web: kind/name, the form users type. */
const objectName = (f: Finding) => `${shortKind[f.kind] ?? f.kind.toLowerCase()}/${f.name}`;

/** One line per cell: messages are prose and may wrap an error text with newlines. */
const oneLine = (text: string) => text.replace(/\s*\n\s*/g, ' ');

const severityOrder = [...severities].reverse();

export function summaryLine(summary: Summary, namespace: string | undefined): string {
  const where = namespace === undefined ? 'in any namespace' : `in namespace ${namespace}`;
  if (summary.total === 0) return `no findings ${where}`;
  const counts = severityOrder.map((s) => `${summary[s]} ${s}`).join(', ');
  return `${summary.total} finding${summary.total === 1 ? '' : 's'} ${where}: ${counts}`;
}

/**
 * The findings as an aligned table, each row followed by its remedy (indented under RULE, so the
 * rows still grep by severity), then the summary line.
 */
export function formatFindingsTable(findings: readonly Finding[], namespace: string | undefined): string {
  const summary = summaryLine(summarize(findings), namespace);
  if (findings.length === 0) return summary;
  const headers = ['SEVERITY', 'RULE', 'NAMESPACE', 'NAME', 'MESSAGE'];
  const [header, ...rows] = formatTable(
    headers,
    findings.map((f) => [f.severity, f.rule, f.namespace || '-', objectName(f), oneLine(f.message)]),
  ).split('\n');
  const indent = ' '.repeat(Math.max(...[...severities, headers[0] as string].map((s) => s.length)) + 3);
  const lines = [header, ...rows.flatMap((row, i) => [row, `${indent}↳ ${oneLine((findings[i] as Finding).remedy)}`])];
  return `${lines.join('\n')}\n\n${summary}`;
}

export interface AuditReport {
  generatedAt: string;
  /** The namespace audited; absent for all namespaces. */
  namespace?: string;
  findings: Finding[];
  summary: Summary;
  /** What could not be read. */
  warnings: string[];
  /** Rules not run for lack of permission to read what they need. */
  skippedRules: string[];
}

export function formatReport(report: AuditReport, output: 'json' | 'yaml'): string {
  // No folding of long lines: the output is for programs.
  return output === 'json' ? JSON.stringify(report, null, 2) : stringify(report, { lineWidth: 0 }).trimEnd();
}

export function formatRules(): string {
  return formatTable(
    ['RULE', 'SEVERITY', 'WHAT', 'REMEDY'],
    auditRules.map((r) => [r.id, r.severity, r.title, r.remedy]),
  );
}

/** The connection, or a failure to read the cluster in one sentence: exit code 1 (`pvx audit`, `pvx why`). */
export async function connectOrFail(path: string | undefined): Promise<Connected> {
  try {
    return await connect(path);
  } catch (err) {
    // A kubeconfig that is missing or unreadable leaves the cluster unreachable: exit 1, not 2.
    if (err instanceof UsageError) throw new CommandFailure(err.message);
    throw new CommandFailure(`cannot load the kubeconfig${path ? ` ${path}` : ''}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The snapshot, with usage from the kubelets unless --usage none; their warnings joined. */
async function readCluster(
  connected: Connected,
  opts: { namespace?: string; usage: AuditCommandOptions['usage']; kubelet: KubeletFlags; now: Date },
): Promise<Collected> {
  const { client } = connected;
  const usage = opts.usage === 'kubelet' ? await kubeletUsage(client, commandKubeletReader(opts.kubelet, connected)) : { source: undefined, warnings: [] };
  if (opts.usage === 'kubelet') usage.warnings.unshift(...kubeletWarnings(opts.kubelet));
  const collected = await collectSnapshot(client, { namespace: opts.namespace, usage: usage.source, now: opts.now });
  return { ...collected, warnings: [...usage.warnings, ...collected.warnings] };
}

export async function audit(argv: string[]): Promise<number> {
  const opts = parseAuditArgs(argv);
  if (opts.help) {
    process.stdout.write(`${auditHelp}\n`);
    return 0;
  }
  if (opts.listRules) {
    process.stdout.write(`${formatRules()}\n`);
    return 0;
  }
  const connected = await connectOrFail(opts.kubeconfig);
  const namespace = opts.allNamespaces ? undefined : namespaceOf(connected, opts.namespace);
  const server = connected.server;
  const now = new Date();
  const collected = await readCluster(connected, { namespace, usage: opts.usage, kubelet: opts.kubelet, now }).catch((err: unknown) => {
    throw explainClusterError(err, server);
  });
  const warnings = collected.warnings;
  const skipped = new Set<string>(collected.unreliableRules);
  const findings = runAudit(collected.snapshot, {
    now,
    stuckAfterMs: opts.stuckAfterMs,
    profiles: driverProfiles(opts.modificationBudgets, opts.maxVolumeSizes),
  }).filter((f) => !skipped.has(f.rule));
  const report: AuditReport = {
    generatedAt: now.toISOString(),
    ...(namespace === undefined ? {} : { namespace }),
    findings,
    summary: summarize(findings),
    warnings,
    skippedRules: [...skipped],
  };
  for (const w of warnings) process.stderr.write(`warning: ${w}\n`);
  process.stdout.write(`${opts.output === 'table' ? formatFindingsTable(findings, namespace) : formatReport(report, opts.output)}\n`);
  return opts.failOn && atOrAbove(findings, opts.failOn).length > 0 ? findingsExitCode : 0;
}
