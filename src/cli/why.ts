// `pvx why pvc/NAME` (also `ver/NAME`, `kubectl pvx why …`): which gate holds a claim on its way
// to a bigger volume, and the one next step. Read-only, with or without the operator: it reads
// the namespace as `pvx audit` does (src/cli/read-cluster.ts), the claim's Events, and usage as
// `pvx plan` does (usage-reading.ts), then runs the pure chain of src/policies/why/gates.ts — the
// operator's own checks — on them. The formatting is pure (report in, text out).
import type { CoreV1Event, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { collectSnapshot, readKind } from './read-cluster.ts';
import type { VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import type { KubeClient, KubeletClient } from '../k8s/client.ts';
import { resources } from '../k8s/resources.ts';
import { driverProfiles, type MaxVolumeSize, type ModificationBudget } from '../policies/budget/drivers.ts';
import { isFinishedPhase } from '../policies/request/phase.ts';
import { why as explain, type WhyReport } from '../policies/why/gates.ts';
import { connectOrFail, findingsExitCode } from './audit.ts';
import { explainClusterError } from './cluster-error.ts';
import { namespaceOf } from './connect.ts';
import { commands, outputFormats } from './commands.ts';
import { commandKubeletReader } from './kubelet.ts';
import { maxVolumeSizesFlag, modificationBudgetsFlag, oneOf, type OutputFormat } from './options.ts';
import { formatTable } from './table.ts';
import { readUsage, usageReadingFlags, usageReadingHelp, type UsageReading } from './usage-reading.ts';
import { CommandFailure, UsageError } from './errors.ts';

/** Exit code when a gate holds the claim (or cannot be judged): the one `pvx audit --fail-on` uses for findings, so scripts read both alike. */
export const heldExitCode = findingsExitCode;

export const whyHelp = `usage: pvx why pvc/NAME | ver/NAME [-n NAMESPACE] [-o table|json|yaml] [--usage kubelet|prometheus|none]
               [--samples N] [--sample-interval DURATION] [--modification-budget DRIVER=COUNT/DURATION]
               [--max-volume-size DRIVER=SIZE]
               [--kubeconfig PATH]

Says which gate holds a PersistentVolumeClaim on its way to a bigger volume — storage-class,
binding, policy, usage, threshold, cooldown, window, max-size, budget, quota, request, resizer,
node-stage — one line per gate (passed, holding, not-applicable or unknown) with the evidence,
then the one next step. ver/NAME explains a VolumeExpansionRequest's phase and reason the same
way: its claim's chain, seen from the request. The gates are judged by the operator's own
checks; read-only, with or without the operator running.

  -n, --namespace NS          the namespace (default: the kubeconfig context's, else "default")
  -o, --output FORMAT         table (default), json or yaml ({namespace, pvc, request, policy,
                              gates: [{gate, state, evidence, next, since, until}], heldBy, next})
${usageReadingHelp}
  --kubeconfig PATH           kubeconfig file (env KUBECONFIG)

Thresholds are judged on the readings taken (--samples), as pvx plan does.

Exit codes:
  0  nothing holds the claim (every gate passed or does not apply)
  ${heldExitCode}  a gate holds the claim, or cannot be judged (unknown)
  2  usage error (unknown flag or value)
  1  the claim or request does not exist, or the cluster could not be read`;

export interface WhyOptions extends UsageReading {
  kind: 'pvc' | 'ver';
  name: string;
  namespace?: string;
  output: OutputFormat;
  kubeconfig?: string;
  modificationBudgets: Record<string, ModificationBudget | null>;
  /** --max-volume-size: the largest volume of some drivers (pvx's profiles' otherwise). */
  maxVolumeSizes?: Record<string, MaxVolumeSize>;
}

const kinds: Record<string, 'pvc' | 'ver'> = {
  pvc: 'pvc',
  persistentvolumeclaim: 'pvc',
  persistentvolumeclaims: 'pvc',
  ver: 'ver',
  volumeexpansionrequest: 'ver',
  volumeexpansionrequests: 'ver',
};

export function parseWhyArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): WhyOptions {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: commands.why.flags });
  if (positionals.length !== 1)
    throw new UsageError(`${positionals.length === 0 ? 'name a claim or a request' : `one object at a time, got ${positionals.join(' ')}`}\n\n${whyHelp}`);
  const [ref] = positionals as [string];
  const slash = ref.indexOf('/');
  const kind = slash < 0 ? 'pvc' : kinds[ref.slice(0, slash).toLowerCase()];
  const name = slash < 0 ? ref : ref.slice(slash + 1);
  if (!kind || !name) throw new UsageError(`"${ref}" is not pvc/NAME or ver/NAME`);
  return {
    kind,
    name,
    namespace: values.namespace,
    output: oneOf('--output', values.output ?? 'table', outputFormats),
    kubeconfig: values.kubeconfig,
    ...usageReadingFlags(values, env),
    modificationBudgets: modificationBudgetsFlag(values['modification-budget'], env.PVX_MODIFICATION_BUDGET),
    maxVolumeSizes: maxVolumeSizesFlag(values['max-volume-size'], env.PVX_MAX_VOLUME_SIZE),
  };
}

/** One line per cell: evidence may quote a driver's error with newlines. */
const oneLine = (text: string) => text.replace(/\s*\n\s*/g, ' ');

/** The chain as a table, one row per gate, then what holds the claim and the next step. */
export function formatWhy(report: WhyReport): string {
  const subject = `pvc/${report.pvc} in namespace ${report.namespace}${report.request ? `, request ver/${report.request}` : ''}${report.policy ? `, policy ${report.policy}` : ''}`;
  const table = formatTable(
    ['GATE', 'STATE', 'EVIDENCE'],
    report.gates.map((g) => [g.gate, g.state, oneLine(g.evidence)]),
  );
  const verdict = report.heldBy ? `held by: ${report.heldBy}` : 'held by: nothing';
  const template = report.template ? `\ntemplate: ${oneLine(report.template)}` : '';
  return `${subject}\n${table}\n\n${verdict}\nnext: ${oneLine(report.next)}${template}`;
}

export function formatWhyDocument(report: WhyReport & { generatedAt: string; warnings: string[] }, output: 'json' | 'yaml'): string {
  return output === 'json' ? JSON.stringify(report, null, 2) : stringify(report, { lineWidth: 0 }).trimEnd();
}

/** The claim's Events (the resizer's and the kubelet's words); none when they may not be read. */
async function claimEvents(client: KubeClient, namespace: string, name: string, warnings: string[]): Promise<CoreV1Event[]> {
  const read = await readKind<CoreV1Event>(
    client,
    { ...resources.events, fieldSelector: `involvedObject.kind=PersistentVolumeClaim,involvedObject.name=${name}` },
    namespace,
  );
  if (read.warning) warnings.push(read.warning);
  return read.items.filter((e) => e.involvedObject?.kind === 'PersistentVolumeClaim' && e.involvedObject.name === name);
}

/** The claim a request is about: its own, or a StatefulSet request's first unfinished one. */
function requestClaim(request: VolumeExpansionRequest): string | undefined {
  if (request.spec.target.pvcName) return request.spec.target.pvcName;
  const targets = request.status?.targets ?? [];
  return (targets.find((t) => !isFinishedPhase(t.phase)) ?? targets[0])?.pvcName;
}

/**
 * The report of one claim or request in `namespace`, read through `client`: the namespace as the
 * audit reads it, the claim's Events, usage as the flags say (the kubelets through `kubelet`). A
 * claim or request that does not exist is a CommandFailure naming it.
 */
export async function whyReport(
  client: KubeClient,
  opts: WhyOptions,
  namespace: string,
  kubelet: () => KubeletClient,
  now: Date,
): Promise<{ report: WhyReport; warnings: string[] }> {
  const warnings: string[] = [];
  const collected = await collectSnapshot(client, { namespace });
  warnings.push(...collected.warnings);
  let request: VolumeExpansionRequest | undefined;
  let claimName = opts.name;
  if (opts.kind === 'ver') {
    request = collected.snapshot.requests.find((r) => r.metadata.name === opts.name);
    if (!request) throw new CommandFailure(`VolumeExpansionRequest ${opts.name} not found in namespace ${namespace}`);
    const target = requestClaim(request);
    if (!target)
      throw new CommandFailure(
        `VolumeExpansionRequest ${opts.name} names no claim yet (a StatefulSet request before it is accepted): pvx why its claims instead`,
      );
    claimName = target;
  }
  const claim: V1PersistentVolumeClaim | undefined = collected.snapshot.pvcs.find((p) => p.metadata?.name === claimName);
  if (!claim)
    throw new CommandFailure(`PersistentVolumeClaim ${claimName} not found in namespace ${namespace}${request ? ` (the claim of ver/${opts.name})` : ''}`);
  const [events, usage] = await Promise.all([claimEvents(client, namespace, claimName, warnings), readUsage(client, opts, kubelet, warnings)]);
  const report = explain({
    snapshot: collected.snapshot,
    claim,
    ...(request ? { request } : {}),
    events,
    samples: (key) => usage.samples.get(key),
    ...(usage.source ? { usageSource: usage.source } : {}),
    sustainedSamples: opts.samples,
    unreadable: new Set(collected.unreadable),
    now,
    profiles: driverProfiles(opts.modificationBudgets, opts.maxVolumeSizes),
  });
  return { report, warnings: [...new Set(warnings)] };
}

export async function why(argv: string[]): Promise<number> {
  const opts = parseWhyArgs(argv);
  const connected = await connectOrFail(opts.kubeconfig);
  const namespace = namespaceOf(connected, opts.namespace);
  const server = connected.server;
  const now = new Date();
  const { report, warnings } = await whyReport(connected.client, opts, namespace, () => commandKubeletReader(opts.kubelet, connected), now).catch(
    (err: unknown) => {
      if (err instanceof CommandFailure) throw err;
      throw explainClusterError(err, server);
    },
  );
  for (const w of warnings) process.stderr.write(`warning: ${w}\n`);
  process.stdout.write(
    `${opts.output === 'table' ? formatWhy(report) : formatWhyDocument({ generatedAt: now.toISOString(), ...report, warnings }, opts.output)}\n`,
  );
  return report.heldBy ? heldExitCode : 0;
}
