// `pvx plan`: what the expansion policies would do now — read-only, with the operator's own
// decision path (PolicyEvaluator.decide over the same caches and usage sources), so the plan and
// the operator cannot disagree about a rule. It writes nothing: no request, no status, no Event.
import type { KubernetesObject, V1Namespace, V1Node, V1PersistentVolumeClaim, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { stringify } from 'yaml';
import type { ClusterVolumeExpansionPolicy } from '../crds/cluster-volume-expansion-policy.ts';
import type { VolumeExpansionPolicy } from '../crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import { NodeKubeClient } from '../k8s/node-client.ts';
import { humanBytes } from '../k8s/quantity.ts';
import { clusterVolumeExpansionPolicies, namespaces, resources, volumeExpansionPolicies, volumeExpansionRequests, type ResourceType } from '../k8s/resources.ts';
import { Informer } from '../operator/informer.ts';
import { PolicyEvaluator, type PolicyDecisions } from '../operator/reconcilers/expansion-policy.ts';
import { parseDuration } from '../policies/duration.ts';
import { KubeletSummarySource, readyNodeNames } from '../usage/kubelet.ts';
import { PrometheusSource } from '../usage/prometheus.ts';
import { SampleStore } from '../usage/samples.ts';
import type { UsageSource } from '../usage/source.ts';
import { checkCRDs, loadKubeConfig } from './run.ts';
import { namespaceOf } from './status.ts';
import { formatTable } from './table.ts';
import { listingFlags, listingOptions, oneOf, type ListingFlags } from './options.ts';
import { CommandFailure, UsageError } from './usage.ts';

export const planHelp = `usage: pvx plan [-n NAMESPACE | -A] [-o table|json|yaml] [--usage kubelet|prometheus|none]
                [--samples N] [--sample-interval DURATION] [--kubeconfig PATH]

Shows what each VolumeExpansionPolicy and ClusterVolumeExpansionPolicy would do now for every PVC it
takes: expand (from → to, and why), or why not (in flight, cooldown, maintenance window, driver
budget, at its maximum size, usage unknown). Read-only: nothing is created or changed.

It reads usage the way the operator does, --samples times (default 1), --sample-interval apart
(default 10s, the kubelet's stats period). The operator waits for a policy's sustainedSamples
breaches in a row; a plan made from fewer samples judges thresholds on those it has, and a
forecast needs at least 5 samples.

  -n, --namespace NS          PVCs and policies of this namespace (default: the context's)
  -A, --all-namespaces        every namespace
  -o, --output FORMAT         table (default), json or yaml
  --usage SOURCE              kubelet (default; needs nodes/proxy get), prometheus, or none
  --prometheus-url URL        with --usage prometheus (env PVX_PROMETHEUS_URL)
  --prometheus-matchers M     extra label matchers, e.g. 'cluster="prod"'
  --samples N                 usage readings to take (1–30, default 1)
  --sample-interval DURATION  time between readings (default 10s)
  --kubeconfig PATH           kubeconfig file (env KUBECONFIG)`;

export interface PlanOptions extends ListingFlags {
  usage: 'kubelet' | 'prometheus' | 'none';
  prometheusUrl?: string;
  prometheusMatchers?: string;
  samples: number;
  sampleIntervalMs: number;
}

export function parsePlanArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): PlanOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...listingOptions,
      usage: { type: 'string', default: 'kubelet' },
      'prometheus-url': { type: 'string' },
      'prometheus-matchers': { type: 'string' },
      samples: { type: 'string', default: '1' },
      'sample-interval': { type: 'string', default: '10s' },
    },
  });
  const listing = listingFlags(values, positionals, planHelp);
  const usage = oneOf('--usage', values.usage ?? 'kubelet', ['kubelet', 'prometheus', 'none'] as const);
  const prometheusUrl = values['prometheus-url'] ?? env.PVX_PROMETHEUS_URL;
  if (usage === 'prometheus' && !prometheusUrl) throw new UsageError('--usage prometheus needs --prometheus-url (or PVX_PROMETHEUS_URL)');
  const samples = Number(values.samples);
  if (!Number.isInteger(samples) || samples < 1 || samples > 30) throw new UsageError(`--samples must be a whole number from 1 to 30, got "${values.samples}"`);
  const sampleIntervalMs = parseDuration(values['sample-interval'] ?? '');
  if (!sampleIntervalMs) throw new UsageError(`--sample-interval must be a positive duration such as 10s, got "${values['sample-interval']}"`);
  return {
    ...listing,
    usage,
    prometheusUrl,
    prometheusMatchers: values['prometheus-matchers'],
    samples,
    sampleIntervalMs,
  };
}

export interface PlanRow {
  policy: string;
  mode: string;
  namespace: string;
  pvc: string;
  used: string;
  decision: string;
  /** The size it would grow to, for an expansion. */
  target?: string;
  reason?: string;
  message: string;
}

const policyName = (p: PolicyDecisions['policy']) => (p.ref.kind === 'VolumeExpansionPolicy' ? `vep/${p.ref.name}` : `cvep/${p.ref.name}`);

/** Pure: the plan's rows from the evaluator's decisions and the newest sample of each PVC. */
export function planRows(decisions: readonly PolicyDecisions[], newest: (key: string) => { usedBytes: bigint; capacityBytes: bigint } | undefined): PlanRow[] {
  return decisions.flatMap(({ policy, volumes }) =>
    volumes.map(({ pvc, decision }) => {
      const namespace = pvc.metadata?.namespace ?? '';
      const name = pvc.metadata?.name ?? '';
      const sample = newest(`${namespace}/${name}`);
      const mode = policy.spec.mode ?? 'Auto';
      return {
        policy: policyName(policy),
        mode,
        namespace,
        pvc: name,
        used: sample ? `${humanBytes(sample.usedBytes)}/${humanBytes(sample.capacityBytes)}` : '-',
        // A DryRun policy never acts: its "expand" is a report.
        decision: decision.kind === 'expand' && mode === 'DryRun' ? 'dryRun' : decision.kind,
        ...(decision.kind === 'expand' ? { target: humanBytes(decision.targetBytes) } : {}),
        ...('reason' in decision ? { reason: decision.reason } : 'trigger' in decision ? { reason: decision.trigger } : {}),
        message: decision.message,
      };
    }),
  );
}

export function formatPlanTable(rows: readonly PlanRow[]): string {
  return formatTable(
    ['POLICY', 'MODE', 'NAMESPACE', 'PVC', 'USED', 'DECISION', 'TARGET', 'WHY'],
    rows.map((r) => [r.policy, r.mode, r.namespace, r.pvc, r.used, r.decision, r.target ?? '-', r.message]),
  );
}

export async function plan(argv: string[]): Promise<number> {
  const opts = parsePlanArgs(argv);
  const kc = loadKubeConfig(opts.kubeconfig ?? process.env.KUBECONFIG);
  const namespace = opts.allNamespaces ? undefined : namespaceOf(kc, opts.namespace);
  const client = new NodeKubeClient(kc);
  const logger = pino({ level: 'silent' });
  await checkCRDs(client, namespace);

  const informers: Informer[] = [];
  const cache = <T extends KubernetesObject>(type: ResourceType): Informer<T> => {
    const i = new Informer<T>({ type, client, logger, namespace: type.namespaced ? namespace : undefined });
    informers.push(i as unknown as Informer);
    i.start();
    return i;
  };
  try {
    // Nodes only for the kubelet source: a user who may not list them can still plan from Prometheus.
    const nodes = opts.usage === 'kubelet' ? cache<V1Node>(resources.nodes) : undefined;
    const source: UsageSource | undefined =
      nodes
        ? new KubeletSummarySource({ client, nodes: () => readyNodeNames(nodes.list()) })
        : opts.usage === 'prometheus'
          ? new PrometheusSource({ url: opts.prometheusUrl as string, matchers: opts.prometheusMatchers })
          : undefined;
    const samples = new SampleStore();
    const evaluator = new PolicyEvaluator({
      client,
      policies: cache<VolumeExpansionPolicy>(volumeExpansionPolicies),
      clusterPolicies: cache<ClusterVolumeExpansionPolicy>(clusterVolumeExpansionPolicies),
      namespaces: cache<V1Namespace>(namespaces),
      requests: cache<VolumeExpansionRequest>(volumeExpansionRequests),
      pvcs: cache<V1PersistentVolumeClaim>(resources.persistentVolumeClaims),
      storageClasses: cache<V1StorageClass>(resources.storageClasses),
      statefulSets: cache<V1StatefulSet>(resources.statefulSets),
      source: undefined, // read below, as many times as asked
      samples,
      logger,
      canWrite: () => false,
      intervalMs: opts.sampleIntervalMs,
    });
    await Promise.race([
      Promise.all(informers.map((i) => i.waitForSync())),
      sleep(30_000, undefined, { ref: false }).then(() => {
        throw new CommandFailure('could not read the cluster within 30 s (is the API server reachable, and may this user list PVCs, policies and requests?)');
      }),
    ]);
    const warnings: string[] = [];
    for (let i = 0; i < opts.samples; i++) {
      if (i > 0) await sleep(opts.sampleIntervalMs);
      if (!source) break;
      const report = await source.collect(new Date());
      for (const [key, sample] of report.samples) samples.add(key, sample);
      for (const e of report.errors) warnings.push(`usage from ${source.name}: ${e.target}: ${e.message}`);
    }
    const decisions = evaluator.decide(new Date(), { sustainedSamples: opts.samples });
    const rows = planRows(decisions, (key) => samples.get(key).at(-1));
    for (const w of [...new Set(warnings)]) process.stderr.write(`warning: ${w}\n`);
    if (opts.output === 'json') process.stdout.write(`${JSON.stringify({ samples: opts.samples, rows }, null, 2)}\n`);
    else if (opts.output === 'yaml') process.stdout.write(stringify({ samples: opts.samples, rows }));
    else if (rows.length === 0) process.stdout.write(`no policy takes a PVC ${namespace ? `in namespace ${namespace}` : 'in any namespace'}\n`);
    else process.stdout.write(`${formatPlanTable(rows)}\n`);
    return 0;
  } finally {
    await Promise.all(informers.map((i) => i.stop()));
  }
}
