// How the read-only commands that judge usage (`pvx plan`, `pvx df`, `pvx why`) read it: the flags
// of commands.ts's usageReadingOptions checked once, and the readings taken --samples times,
// --sample-interval apart, from each node's kubelet (nodes/stats) or Prometheus.
import { setTimeout as sleep } from 'node:timers/promises';
import { kubeletUsage } from './read-cluster.ts';
import type { KubeClient, KubeletClient } from '../k8s/client.ts';
import { parseDuration } from '../policies/shared/duration.ts';
import { profiledBudgets } from '../policies/budget/drivers.ts';
import { PrometheusSource } from '../usage/prometheus.ts';
import { SampleStore } from '../usage/samples.ts';
import type { UsageSource } from '../usage/source.ts';
import { usageReadingOptions } from './commands.ts';
import { kubeletFlags, kubeletHelp, kubeletWarnings, type KubeletFlags } from './kubelet.ts';
import { oneOf } from './options.ts';
import { UsageError } from './errors.ts';

/** The flags' lines of --help, the same for every command that takes them. */
export const usageReadingHelp = `  --usage SOURCE              kubelet (default: each node's kubelet, through the API server; needs
                              list nodes and pods, and get nodes/proxy), prometheus, or none
${kubeletHelp(30, true)}
  --prometheus-url URL        with --usage prometheus (env PVX_PROMETHEUS_URL)
  --prometheus-matchers M     extra label matchers, e.g. 'cluster="prod"'
  --samples N                 usage readings to take (1–30, default 1)
  --sample-interval DURATION  time between readings (default 10s)
  --modification-budget DRIVER=COUNT/DURATION|DRIVER=none
                              a CSI driver's modification budget per volume, as the operator
                              was given it (default: pvx's profiles, ${profiledBudgets});
                              repeatable or comma-separated (env PVX_MODIFICATION_BUDGET)
  --max-volume-size DRIVER=SIZE|DRIVER=class-parameter:NAME
                              the largest volume a CSI driver makes, as the operator was given
                              it; repeatable or comma-separated (env PVX_MAX_VOLUME_SIZE)`;

export interface UsageReading {
  usage: (typeof usageReadingOptions.usage.choices)[number];
  prometheusUrl?: string;
  prometheusMatchers?: string;
  /** How the kubelet source reaches the kubelets. */
  kubelet: KubeletFlags;
  samples: number;
  sampleIntervalMs: number;
}

export function usageReadingFlags(
  values: {
    usage?: string;
    'prometheus-url'?: string;
    'prometheus-matchers'?: string;
    'kubelet-ca-file'?: string;
    'kubelet-insecure-tls'?: boolean;
    'kubelet-preferred-address-types'?: string;
    samples?: string;
    'sample-interval'?: string;
  },
  env: NodeJS.ProcessEnv,
): UsageReading {
  const usage = oneOf('--usage', values.usage ?? 'kubelet', usageReadingOptions.usage.choices);
  const prometheusUrl = values['prometheus-url'] ?? env.PVX_PROMETHEUS_URL;
  if (usage === 'prometheus' && !prometheusUrl) throw new UsageError('--usage prometheus needs --prometheus-url (or PVX_PROMETHEUS_URL)');
  const samples = Number(values.samples);
  if (!Number.isInteger(samples) || samples < 1 || samples > 30) throw new UsageError(`--samples must be a whole number from 1 to 30, got "${values.samples}"`);
  const sampleIntervalMs = parseDuration(values['sample-interval'] ?? '');
  if (!sampleIntervalMs) throw new UsageError(`--sample-interval must be a positive duration such as 10s, got "${values['sample-interval']}"`);
  return {
    usage,
    prometheusUrl,
    prometheusMatchers: values['prometheus-matchers'],
    kubelet: kubeletFlags(values, env, 'api-server-unless-direct'),
    samples,
    sampleIntervalMs,
  };
}

/** What was read: the measurements by claim, and where from (undefined: --usage none, or no source could be made). */
export interface UsageRead {
  samples: SampleStore;
  /** "kubelet", or "prometheus http://…". */
  source?: string;
  /** When the last reading was taken. */
  readAt?: Date;
}

/**
 * Reads usage as the flags say; what failed is added to `warnings`, never thrown. `kubelet` makes
 * the client that reads the kubelets (kubelet.ts's kubeletClient over the kubeconfig's identity),
 * called for the kubelet source only.
 */
export async function readUsage(client: KubeClient, opts: UsageReading, kubelet: () => KubeletClient, warnings: string[]): Promise<UsageRead> {
  // Nodes only for the kubelet source: a user who may not list them can still read Prometheus.
  let source: UsageSource | undefined;
  if (opts.usage === 'kubelet') {
    warnings.push(...kubeletWarnings(opts.kubelet));
    const kubeletRead = await kubeletUsage(client, kubelet());
    source = kubeletRead.source;
    warnings.push(...kubeletRead.warnings);
  } else if (opts.usage === 'prometheus') {
    source = new PrometheusSource({ url: opts.prometheusUrl as string, matchers: opts.prometheusMatchers });
  }
  const samples = new SampleStore();
  let readAt: Date | undefined;
  for (let i = 0; source && i < opts.samples; i++) {
    if (i > 0) await sleep(opts.sampleIntervalMs);
    readAt = new Date();
    const report = await source.collect(readAt);
    for (const [key, sample] of report.samples) samples.add(key, sample, source.sampleTimes);
    for (const e of report.errors) warnings.push(`usage from ${source.name}: ${e.target}: ${e.message}`);
  }
  const name = source === undefined ? undefined : source.name === 'prometheus' ? `prometheus ${opts.prometheusUrl}` : source.name;
  return { samples, ...(name ? { source: name } : {}), ...(readAt ? { readAt } : {}) };
}
