// `pvx plan`: what the expansion policies would do now — read-only. It reads the objects once, as
// `pvx audit` does (src/cli/read-cluster.ts), reads usage --samples times, and runs the operator's own
// policy pass (src/policies/autoscale/policy-pass.ts) on them, so the plan and the operator cannot disagree
// about a rule. It writes nothing (no request, no status, no Event) and imports nothing of the
// operator.
import type { V1Namespace, V1PersistentVolumeClaim, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { readKind } from './read-cluster.ts';
import type { ClusterVolumeExpansionPolicy } from '../crds/cluster-volume-expansion-policy.ts';
import type { VolumeExpansionPolicy } from '../crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import type { KubeClient, PolicyRef } from '../k8s/client.ts';
import { humanBytes } from '../k8s/quantity.ts';
import {
  clusterVolumeExpansionPolicies,
  namespaces,
  resources,
  volumeExpansionPolicies,
  volumeExpansionRequests,
  type ResourceType,
} from '../k8s/resources.ts';
import { policyPass, type PolicyPlan, type VolumePlan } from '../policies/autoscale/policy-pass.ts';
import { selectionLookups } from '../policies/autoscale/selection.ts';
import { connect, namespaceOf } from './connect.ts';
import { formatTable } from './table.ts';
import { driverProfiles, type MaxVolumeSize, type ModificationBudget } from '../policies/budget/drivers.ts';
import { commands } from './commands.ts';
import { commandKubeletReader } from './kubelet.ts';
import { listingFlags, maxVolumeSizesFlag, modificationBudgetsFlag, type ListingFlags } from './options.ts';
import { readUsage, usageReadingFlags, usageReadingHelp, type UsageReading } from './usage-reading.ts';
import { CommandFailure } from './errors.ts';

export const planHelp = `usage: pvx plan [-n NAMESPACE | -A] [-o table|json|yaml] [--usage kubelet|prometheus|none]
                [--samples N] [--sample-interval DURATION] [--modification-budget DRIVER=COUNT/DURATION]
                [--max-volume-size DRIVER=SIZE]
                [--kubeconfig PATH]

Shows what each VolumeExpansionPolicy and ClusterVolumeExpansionPolicy would do now for every PVC it
takes: expand (from → to, and why), or why not (in flight, cooldown, maintenance window, driver
budget, at its maximum size, usage unknown). Read-only: nothing is created or changed.

It reads usage the way the operator does, --samples times (default 1), --sample-interval apart
(default 10s, the kubelet's stats period). The operator waits for a policy's sustainedSamples
breaches in a row; a plan made from fewer samples judges thresholds on those it has. The fill-rate
forecast needs at least 3 distinct measurements (the kubelet measures each volume every 1–2
volumeStatsAggPeriods: readings closer together return the same one), a policy's own forecast 5.

  -n, --namespace NS          PVCs and policies of this namespace (default: the context's)
  -A, --all-namespaces        every namespace
  -o, --output FORMAT         table (default), json or yaml
${usageReadingHelp}
  --kubeconfig PATH           kubeconfig file (env KUBECONFIG)`;

export interface PlanOptions extends ListingFlags, UsageReading {
  /** --modification-budget: budgets by driver replacing the profiles' (null: none). */
  modificationBudgets: Record<string, ModificationBudget | null>;
  /** --max-volume-size: the largest volume of some drivers (pvx's profiles' otherwise). */
  maxVolumeSizes?: Record<string, MaxVolumeSize>;
}

export function parsePlanArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): PlanOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: commands.plan.flags,
  });
  return {
    ...listingFlags(values, positionals, planHelp),
    ...usageReadingFlags(values, env),
    modificationBudgets: modificationBudgetsFlag(values['modification-budget'], env.PVX_MODIFICATION_BUDGET),
    maxVolumeSizes: maxVolumeSizesFlag(values['max-volume-size'], env.PVX_MAX_VOLUME_SIZE),
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

/** vep/NAME or cvep/NAME: a policy as kubectl's short names write it. */
export const policyName = (ref: Pick<PolicyRef, 'kind' | 'name'>): string => (ref.kind === 'VolumeExpansionPolicy' ? `vep/${ref.name}` : `cvep/${ref.name}`);

/** What a row needs of a policy's plan. */
export type PlannedPolicy = Pick<PolicyPlan, 'policy' | 'mode' | 'error'> & { volumes: Pick<VolumePlan, 'pvc' | 'decision' | 'newest'>[] };

/** Pure: the plan's rows from the pass's decisions (with the newest sample each saw); a policy pvx cannot read is one row saying why. */
export function planRows(plans: readonly PlannedPolicy[]): PlanRow[] {
  return plans.flatMap(({ policy, mode, volumes, error }) => {
    if (error)
      return [
        {
          policy: policyName(policy.ref),
          mode,
          namespace: policy.ref.namespace ?? '-',
          pvc: '-',
          used: '-',
          decision: 'invalid',
          reason: 'InvalidSpec',
          message: error,
        },
      ];
    return volumes.map(({ pvc, decision, newest }) => ({
      policy: policyName(policy.ref),
      mode,
      namespace: pvc.metadata?.namespace ?? '',
      pvc: pvc.metadata?.name ?? '',
      used: newest ? `${humanBytes(newest.usedBytes)}/${humanBytes(newest.capacityBytes)}` : '-',
      // A DryRun policy never acts: its "expand" is a report.
      decision: decision.kind === 'expand' && mode === 'DryRun' ? 'dryRun' : decision.kind,
      ...(decision.kind === 'expand' ? { target: humanBytes(decision.targetBytes) } : {}),
      ...('reason' in decision ? { reason: decision.reason } : 'trigger' in decision ? { reason: decision.trigger } : {}),
      // The plan is read once: the measured figures (used, free, time to full, rate) with the reason.
      message: 'detail' in decision ? `${decision.message} (${decision.detail})` : decision.message,
    }));
  });
}

export function formatPlanTable(rows: readonly PlanRow[]): string {
  return formatTable(
    ['POLICY', 'MODE', 'NAMESPACE', 'PVC', 'USED', 'DECISION', 'TARGET', 'WHY'],
    rows.map((r) => [r.policy, r.mode, r.namespace, r.pvc, r.used, r.decision, r.target ?? '-', r.message]),
  );
}

/** A kind's objects for a read-only report (plan, df), its warning kept; claims the user may not list fail the report. */
export async function read<T extends object>(
  client: KubeClient,
  type: ResourceType,
  namespace: string | undefined,
  warnings: string[],
  labelSelector?: string,
): Promise<T[]> {
  const r = await readKind(client, type, namespace, labelSelector);
  if (r.forbidden && type === resources.persistentVolumeClaims) throw new CommandFailure(`${r.warning}: nothing to report`);
  if (r.warning) warnings.push(r.warning);
  return r.items as unknown as T[];
}

/** What the policies' rules read of a namespace (undefined: all): claims (those of a label selector), classes, policies, requests, and the selection's lookups. */
export async function readPolicyInputs(client: KubeClient, namespace: string | undefined, warnings: string[], claimSelector?: string) {
  const [claims, policies, clusterPolicies, nsList, requests, storageClasses, statefulSets] = await Promise.all([
    read<V1PersistentVolumeClaim>(client, resources.persistentVolumeClaims, namespace, warnings, claimSelector),
    read<VolumeExpansionPolicy>(client, volumeExpansionPolicies, namespace, warnings),
    read<ClusterVolumeExpansionPolicy>(client, clusterVolumeExpansionPolicies, namespace, warnings),
    read<V1Namespace>(client, namespaces, namespace, warnings),
    read<VolumeExpansionRequest>(client, volumeExpansionRequests, namespace, warnings),
    read<V1StorageClass>(client, resources.storageClasses, namespace, warnings),
    read<V1StatefulSet>(client, resources.statefulSets, namespace, warnings),
  ]);
  return { claims, policies, clusterPolicies, requests, storageClasses, lookups: selectionLookups(nsList, statefulSets) };
}

export async function plan(argv: string[]): Promise<number> {
  const opts = parsePlanArgs(argv);
  const connected = await connect(opts.kubeconfig);
  const namespace = opts.allNamespaces ? undefined : namespaceOf(connected, opts.namespace);
  const { client } = connected;
  const warnings: string[] = [];

  const { samples } = await readUsage(client, opts, () => commandKubeletReader(opts.kubelet, connected), warnings);
  const { claims, policies, clusterPolicies, storageClasses, requests, lookups } = await readPolicyInputs(client, namespace, warnings);
  const plans = policyPass({
    policies,
    clusterPolicies,
    claims,
    storageClasses,
    requests,
    lookups,
    samples: (key) => samples.get(key),
    // One look at the claims: no capacity change seen, as the operator after a restart.
    lastCapacityChangeAt: () => undefined,
    now: new Date(),
    sustainedSamples: opts.samples,
    profiles: driverProfiles(opts.modificationBudgets, opts.maxVolumeSizes),
  });
  const rows = planRows(plans);
  for (const w of [...new Set(warnings)]) process.stderr.write(`warning: ${w}\n`);
  if (opts.output === 'json') process.stdout.write(`${JSON.stringify({ samples: opts.samples, rows }, null, 2)}\n`);
  else if (opts.output === 'yaml') process.stdout.write(stringify({ samples: opts.samples, rows }));
  else if (rows.length === 0) process.stdout.write(`no policy takes a PVC ${namespace ? `in namespace ${namespace}` : 'in any namespace'}\n`);
  else process.stdout.write(`${formatPlanTable(rows)}\n`);
  return 0;
}
