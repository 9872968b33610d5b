// `pvx df`: every claim as `df -h` shows a file system — size, used, available, use % (and inode
// use %), a bar — with what pvx knows beyond it: the time to full by the forecast the policies
// judge on, the policy that grows the claim, its largest size and the headroom left, and whether
// the claim can grow now — the gates of `pvx why`'s chain that say so (its class, its binding, the
// largest size, the driver's modification budget, the namespace's quota, a resize under way).
// Read-only. The rows are pure (the snapshot `pvx audit` and `pvx why` read, usage readings and the
// clock in; rows out), made of the policies' own rules (src/policies: selection, forecast, growth
// limit, driver profiles, the why chain); the command around them reads, as `pvx why` does.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { parseArgs } from 'node:util';
import { collectSnapshot } from './read-cluster.ts';
import type { KubeClient, KubeletClient } from '../k8s/client.ts';
import { humanBytes } from '../k8s/quantity.ts';
import { objectKey, resources } from '../k8s/resources.ts';
import { autoscaleSpec, measuresAnotherFileSystem, growthLimit, stepSpec, usageForecast, usedRatio, type AutoscaleSpec } from '../policies/autoscale/decide.ts';
import { auditContext, type AuditSnapshot } from '../policies/audit/rules.ts';
import { defaultDriverProfiles, driverProfiles, type DriverProfiles, type MaxVolumeSize, type ModificationBudget } from '../policies/budget/drivers.ts';
import { humanDuration } from '../policies/shared/duration.ts';
import { claimSizes, driverMaxBytes } from '../policies/autoscale/policy-pass.ts';
import { runningPodClaims } from '../policies/claim/pods.ts';
import { distinctMeasurements, type UsageSample } from '../policies/autoscale/sampling.ts';
import { growthChain, type Gate, type GateId } from '../policies/why/gates.ts';
import { commands, dfOutputs, dfSorts } from './commands.ts';
import { connect, namespaceOf } from './connect.ts';
import { listingFlags, maxVolumeSizesFlag, modificationBudgetsFlag, oneOf, type ListingFlags } from './options.ts';
import { policyName } from './plan.ts';
import { formatTable } from './table.ts';
import { commandKubeletReader } from './kubelet.ts';
import { readUsage, usageReadingFlags, usageReadingHelp, type UsageReading } from './usage-reading.ts';

export const dfHelp = `usage: pvx df [-n NAMESPACE | -A] [-l SELECTOR] [--sort used|free|ttf] [--inodes] [-o wide|json]
              [--usage kubelet|prometheus|none] [--prometheus-url URL] [--prometheus-matchers M]
              [--samples N] [--sample-interval DURATION] [--modification-budget DRIVER=COUNT/DURATION]
              [--max-volume-size DRIVER=SIZE]
              [--kubeconfig PATH]

Every PersistentVolumeClaim as df -h shows a file system: its size, used, available, use % and a
bar; the time until it is full by pvx's forecast (the one the policies judge on: it needs 3
distinct measurements, so take --samples 3 or more); the policy that grows it (namespaced, else
cluster), the largest size it may grow to (the policy's maximum or the driver's largest volume,
whichever is smaller) and the headroom left; and whether it can grow now, by the gates pvx why
shows: no (its StorageClass does not allow expansion, it is not bound, the volume is at the largest
size, or a ResourceQuota has no room for the next step), resizing (a resize is under way), the
time until the driver's modification budget allows the next change (counted from the claim's
ledger, pvx.dev/modifications, and pvx's requests), unknown (pvx may not read what decides it), or
yes; -o wide says why (pvx why PVC shows the whole chain). A claim no running pod mounts has no
usage (the kubelet measures mounted volumes only): its figures show "-" and -o wide or json say why.
The last line names the usage source and how old its readings are. Read-only.

  -n, --namespace NS          the namespace (default: the kubeconfig context's, else "default")
  -A, --all-namespaces        every namespace (adds a NAMESPACE column)
  -l, --selector SEL          only the claims with these labels, e.g. app=db
  --sort KEY                  used (most used first), free (least available first) or ttf (soonest
                              full first); default: by namespace and name
  --inodes                    add the inodes' use % (always in -o wide and json)
  -o, --output FORMAT         table (default), wide (adds class, inode use and why) or json
${usageReadingHelp}
  --kubeconfig PATH           kubeconfig file (env KUBECONFIG)`;

export interface DfOptions extends ListingFlags<(typeof dfOutputs)[number]>, UsageReading {
  selector?: string;
  sort?: (typeof dfSorts)[number];
  inodes: boolean;
  modificationBudgets: Record<string, ModificationBudget | null>;
  /** --max-volume-size: the largest volume of some drivers (pvx's profiles' otherwise). */
  maxVolumeSizes?: Record<string, MaxVolumeSize>;
}

export function parseDfArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): DfOptions {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: commands.df.flags });
  return {
    ...listingFlags(values, positionals, dfHelp, dfOutputs),
    ...usageReadingFlags(values, env),
    selector: values.selector,
    ...(values.sort === undefined ? {} : { sort: oneOf('--sort', values.sort, dfSorts) }),
    inodes: values.inodes ?? false,
    modificationBudgets: modificationBudgetsFlag(values['modification-budget'], env.PVX_MODIFICATION_BUDGET),
    maxVolumeSizes: maxVolumeSizesFlag(values['max-volume-size'], env.PVX_MAX_VOLUME_SIZE),
  };
}

/** Whether a claim can grow now: the column's word, the gate of the why chain that holds it, and the sentence saying why. */
export type CanGrow = { grow: 'yes' | 'no' | 'resizing' | 'later' | 'unknown'; gate?: GateId; why: string; nextAt?: Date };

export interface DfRow {
  namespace: string;
  name: string;
  storageClass: string;
  /** status.capacity; undefined for a claim not bound (or of an unreadable size). */
  sizeBytes?: bigint;
  /** The newest reading, when it is the volume's own. */
  usage?: { usedBytes: bigint; availableBytes: bigint; usedRatio: number; inodesRatio?: number; measuredAt: Date };
  /** Why there is no usage. */
  noUsage?: string;
  timeToFullMs?: number;
  /** Why there is no time to full (not filling, too few measurements). */
  noForecast?: string;
  /** vep/NAME or cvep/NAME; undefined when no policy grows it. */
  policy?: string;
  maxBytes?: bigint;
  maxFrom?: 'policy' | 'driver';
  headroomBytes?: bigint;
  canGrow: CanGrow;
}

export interface DfInput {
  /** What `pvx why` reads: the claims, their classes, volumes, pods, requests, policies and quotas. */
  snapshot: AuditSnapshot;
  /** Kinds (plural resource names) the reader may not list: their absence proves nothing. */
  unreadable?: ReadonlySet<string>;
  /** The readings of a claim ("namespace/name"), oldest first; undefined when usage was not read. */
  samples?: (key: string) => readonly UsageSample[];
  profiles?: DriverProfiles;
  now: Date;
}

/** The gates of the why chain that say whether a claim can grow now, and the GROW column's word for each when it holds. */
const growGates: Partial<Record<GateId, CanGrow['grow']>> = {
  'storage-class': 'no',
  binding: 'no',
  'max-size': 'no',
  budget: 'later',
  quota: 'no',
  resizer: 'resizing',
  'node-stage': 'resizing',
};

/** Whether the claim can grow now: the first of growGates that holds it in its why chain (unknown: pvx cannot tell). */
export function canGrowOf(gates: readonly Gate[]): CanGrow {
  for (const g of gates) {
    const word = growGates[g.gate];
    if (!word || g.state === 'passed' || g.state === 'not-applicable') continue;
    if (g.state === 'unknown') return { grow: 'unknown', gate: g.gate, why: g.evidence };
    return { grow: word, gate: g.gate, why: g.evidence, ...(word === 'later' && g.until ? { nextAt: new Date(g.until) } : {}) };
  }
  return { grow: 'yes', why: 'its class, binding, the largest size, the driver’s budget and the quota allow the next step, and no resize is under way' };
}

/** Why a claim has no usage to show. */
function missingUsage(pvc: V1PersistentVolumeClaim, samplesRead: boolean, mounted: Set<string> | undefined): string {
  if (pvc.status?.phase !== 'Bound') return `not bound (${pvc.status?.phase ?? 'no phase'})`;
  if (!samplesRead) return 'usage not read (--usage none, or the source could not be reached)';
  if (mounted && !mounted.has(objectKey(pvc))) return 'not mounted by a running pod: the kubelet measures mounted volumes only';
  return 'no reading from the usage source (mounted just now, or not scraped)';
}

/** Pure: a row per claim. */
export function dfRows(input: DfInput): DfRow[] {
  const { snapshot, now } = input;
  const profiles = input.profiles ?? defaultDriverProfiles;
  const ctx = auditContext(snapshot, { now, profiles });
  const podsRead = !input.unreadable?.has(resources.pods.resource);
  const mounted = podsRead ? new Set(snapshot.pods.flatMap((p) => runningPodClaims(p).map((c) => `${p.metadata?.namespace}/${c}`))) : undefined;
  return snapshot.pvcs.map((pvc): DfRow => {
    const key = objectKey(pvc);
    const sc = ctx.storageClass(pvc.spec?.storageClassName);
    const sizes = claimSizes(pvc);
    const capacity = 'capacityBytes' in sizes && pvc.status?.capacity?.storage !== undefined ? sizes.capacityBytes : undefined;
    const [governing] = ctx.policiesFor(pvc);
    // The policy's spec decides the forecast and the maximum; with no policy, the defaults every policy starts from.
    let spec: AutoscaleSpec = {};
    let policyMax: bigint | undefined;
    try {
      if (governing) {
        spec = autoscaleSpec(governing.spec as Parameters<typeof autoscaleSpec>[0]);
        policyMax = stepSpec(governing.spec).maxBytes;
      }
    } catch {
      // A policy spec pvx cannot read decides nothing (pvx plan says why): shown without its figures.
    }
    const driver = profiles(sc?.provisioner);
    const driverMax = sc ? driverMaxBytes(driver, sc) : undefined;
    const limit = growthLimit(policyMax, driverMax);
    const row: DfRow = {
      namespace: pvc.metadata?.namespace ?? '',
      name: pvc.metadata?.name ?? '',
      storageClass: pvc.spec?.storageClassName ?? '',
      ...(capacity !== undefined ? { sizeBytes: capacity } : {}),
      ...(governing ? { policy: policyName(governing) } : {}),
      ...(limit.bytes !== undefined ? { maxBytes: limit.bytes, maxFrom: limit.from } : {}),
      ...(limit.bytes !== undefined && capacity !== undefined ? { headroomBytes: limit.bytes > capacity ? limit.bytes - capacity : 0n } : {}),
      canGrow: canGrowOf(growthChain({ snapshot, claim: pvc, now, profiles, unreadable: input.unreadable }, ctx)),
    };
    const measurements = distinctMeasurements([...(input.samples?.(key) ?? [])]);
    const newest = measurements.at(-1);
    if (!newest || capacity === undefined) return { ...row, noUsage: missingUsage(pvc, input.samples !== undefined, mounted) };
    if (measuresAnotherFileSystem(newest.capacityBytes, capacity)) {
      return {
        ...row,
        noUsage: `the usage source reports ${humanBytes(newest.capacityBytes)} for this ${humanBytes(capacity)} volume: another file system's, not the volume's`,
      };
    }
    const available = newest.capacityBytes > newest.usedBytes ? newest.capacityBytes - newest.usedBytes : 0n;
    const inodesRatio = newest.inodes ? (newest.inodesUsed ?? 0) / newest.inodes : undefined;
    const forecast = usageForecast(measurements, spec, input.now);
    return {
      ...row,
      usage: {
        usedBytes: newest.usedBytes,
        availableBytes: available,
        usedRatio: usedRatio(newest),
        ...(inodesRatio !== undefined ? { inodesRatio } : {}),
        measuredAt: newest.at,
      },
      ...(forecast.timeToFullMs !== undefined
        ? { timeToFullMs: forecast.timeToFullMs }
        : {
            noForecast:
              measurements.length < 3
                ? `${measurements.length} distinct measurement${measurements.length === 1 ? '' : 's'}: the forecast needs 3 (--samples)`
                : 'not filling steadily',
          }),
    };
  });
}

const compare = (a: number | undefined, b: number | undefined) => (a === undefined ? (b === undefined ? 0 : 1) : b === undefined ? -1 : a - b);
const byName = (a: DfRow, b: DfRow) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name);

/** Rows in --sort order, claims without the figure last; by namespace and name otherwise and between equals. */
export function sortRows(rows: readonly DfRow[], sort: DfOptions['sort']): DfRow[] {
  const key = (r: DfRow): number | undefined =>
    sort === 'used'
      ? r.usage
        ? -r.usage.usedRatio
        : undefined
      : sort === 'free'
        ? r.usage
          ? Number(r.usage.availableBytes)
          : undefined
        : sort === 'ttf'
          ? r.timeToFullMs
          : 0;
  return [...rows].sort((a, b) => compare(key(a), key(b)) || byName(a, b));
}

const pct = (ratio: number | undefined) => (ratio === undefined ? '-' : `${Math.round(ratio * 100)}%`);
// df -h's compact cells: 10GiB, 3.5GiB, 512MiB.
const bytes = (b: bigint | undefined) => (b === undefined ? '-' : humanBytes(b).replace(' ', ''));

/** A ten-cell bar of the used share: [######----]. */
export function usageBar(ratio: number | undefined): string {
  if (ratio === undefined) return '-';
  const filled = Math.min(10, Math.max(0, Math.round(ratio * 10)));
  return `[${'#'.repeat(filled)}${'-'.repeat(10 - filled)}]`;
}

function growCell(g: CanGrow, now: Date): string {
  return g.grow === 'later' && g.nextAt ? `in ${humanDuration(g.nextAt.getTime() - now.getTime())}` : g.grow;
}

export function formatDfTable(rows: readonly DfRow[], opts: { allNamespaces: boolean; wide: boolean; inodes: boolean; now: Date }): string {
  const inodes = opts.inodes || opts.wide;
  const headers = [
    ...(opts.allNamespaces ? ['NAMESPACE'] : []),
    'NAME',
    ...(opts.wide ? ['CLASS'] : []),
    'SIZE',
    'USED',
    'AVAIL',
    'USE%',
    ...(inodes ? ['IUSE%'] : []),
    'BAR',
    'TTF',
    'POLICY',
    'MAX',
    'HEADROOM',
    'GROW',
    ...(opts.wide ? ['WHY'] : []),
  ];
  const cells = rows.map((r) => [
    ...(opts.allNamespaces ? [r.namespace] : []),
    r.name,
    ...(opts.wide ? [r.storageClass || '-'] : []),
    bytes(r.sizeBytes),
    bytes(r.usage?.usedBytes),
    bytes(r.usage?.availableBytes),
    pct(r.usage?.usedRatio),
    ...(inodes ? [pct(r.usage?.inodesRatio)] : []),
    usageBar(r.usage?.usedRatio),
    r.timeToFullMs === undefined ? '-' : humanDuration(r.timeToFullMs),
    r.policy ?? 'none',
    bytes(r.maxBytes),
    bytes(r.headroomBytes),
    growCell(r.canGrow, opts.now),
    ...(opts.wide ? [[r.noUsage, r.canGrow.grow === 'yes' ? undefined : r.canGrow.why].filter(Boolean).join('; ') || '-'] : []),
  ]);
  return formatTable(headers, cells);
}

/** The footer: which source, how many claims it measured, and how old the readings are. */
export function dfFooter(rows: readonly DfRow[], source: string | undefined, now: Date): string {
  if (!source) return 'usage: not read';
  const ages = rows.flatMap((r) => (r.usage ? [now.getTime() - r.usage.measuredAt.getTime()] : []));
  const measured = `${ages.length} of ${rows.length} claim${rows.length === 1 ? '' : 's'} measured`;
  if (ages.length === 0) return `usage from ${source}: ${measured}`;
  const [newest, oldest] = [Math.min(...ages), Math.max(...ages)].map((ms) => humanDuration(ms));
  return `usage from ${source}: ${measured}, readings ${newest === oldest ? `${newest}` : `${newest}–${oldest}`} old`;
}

const num = (b: bigint | undefined) => (b === undefined ? null : Number(b));

/** -o json: the rows with sizes in bytes and times in seconds, and the source. */
export function dfDocument(rows: readonly DfRow[], source: string | undefined, now: Date): object {
  return {
    generatedAt: now.toISOString(),
    usageSource: source ?? null,
    claims: rows.map((r) => ({
      namespace: r.namespace,
      name: r.name,
      storageClass: r.storageClass || null,
      sizeBytes: num(r.sizeBytes),
      usedBytes: num(r.usage?.usedBytes),
      availableBytes: num(r.usage?.availableBytes),
      usedPercent: r.usage ? Math.round(r.usage.usedRatio * 1000) / 10 : null,
      inodesUsedPercent: r.usage?.inodesRatio === undefined ? null : Math.round(r.usage.inodesRatio * 1000) / 10,
      measuredAt: r.usage?.measuredAt.toISOString() ?? null,
      noUsage: r.noUsage ?? null,
      timeToFullSeconds: r.timeToFullMs === undefined ? null : Math.round(r.timeToFullMs / 1000),
      noForecast: r.noForecast ?? null,
      policy: r.policy ?? null,
      maxBytes: num(r.maxBytes),
      maxFrom: r.maxFrom ?? null,
      headroomBytes: num(r.headroomBytes),
      canGrow: r.canGrow.grow,
      canGrowReason: r.canGrow.why,
      canGrowGate: r.canGrow.gate ?? null,
      nextModificationAt: r.canGrow.nextAt?.toISOString() ?? null,
    })),
  };
}

export interface DfReport {
  /** The namespace read; undefined for all. */
  namespace?: string;
  rows: DfRow[];
  /** The usage source ("kubelet", "prometheus URL"); undefined when usage was not read. */
  source?: string;
  /** What could not be read. */
  warnings: string[];
}

/** Reads what the rows need (read-only), usage as the flags say, and makes the rows in --sort order. */
export async function dfReport(
  client: KubeClient,
  opts: DfOptions,
  namespace: string | undefined,
  kubelet: () => KubeletClient,
  now: () => Date = () => new Date(),
): Promise<DfReport> {
  // What pvx why reads, so that "can grow" is its chain's verdict.
  const collected = await collectSnapshot(client, { namespace, claimSelector: opts.selector });
  const warnings = [...collected.warnings];
  const usage = opts.usage === 'none' ? undefined : await readUsage(client, opts, kubelet, warnings);
  const rows = dfRows({
    snapshot: collected.snapshot,
    unreadable: new Set(collected.unreadable),
    ...(usage?.source ? { samples: (key: string) => usage.samples.get(key) } : {}),
    profiles: driverProfiles(opts.modificationBudgets, opts.maxVolumeSizes),
    now: now(),
  });
  return {
    ...(namespace === undefined ? {} : { namespace }),
    rows: sortRows(rows, opts.sort),
    ...(usage?.source ? { source: usage.source } : {}),
    warnings: [...new Set(warnings)],
  };
}

/** What the command prints of a report: -o json, or the table and its footer (a line instead of an empty table). */
export function renderDf(report: DfReport, opts: Pick<DfOptions, 'output' | 'allNamespaces' | 'inodes' | 'selector'>, now: Date): string {
  if (opts.output === 'json') return `${JSON.stringify(dfDocument(report.rows, report.source, now), null, 2)}\n`;
  if (report.rows.length === 0)
    return `no PersistentVolumeClaims ${report.namespace ? `in namespace ${report.namespace}` : 'in any namespace'}${opts.selector ? ` matching ${opts.selector}` : ''}\n`;
  return `${formatDfTable(report.rows, { allNamespaces: opts.allNamespaces, wide: opts.output === 'wide', inodes: opts.inodes, now })}\n\n${dfFooter(report.rows, report.source, now)}\n`;
}

export async function df(argv: string[]): Promise<number> {
  const opts = parseDfArgs(argv);
  const connected = await connect(opts.kubeconfig);
  const namespace = opts.allNamespaces ? undefined : namespaceOf(connected, opts.namespace);
  const report = await dfReport(connected.client, opts, namespace, () => commandKubeletReader(opts.kubelet, connected));
  for (const w of report.warnings) process.stderr.write(`warning: ${w}\n`);
  process.stdout.write(renderDf(report, opts, new Date()));
  return 0;
}
