// Where the read-only commands that decide as the operator does (`pvx plan`, `pvx why`) read
// volume usage from, and how often: one spelling of the flags, one validation, one reading loop.
import { setTimeout as sleep } from 'node:timers/promises';
import { kubeletUsage } from '../audit/collect.ts';
import type { KubeClient } from '../k8s/client.ts';
import { parseDuration } from '../policies/duration.ts';
import { PrometheusSource } from '../usage/prometheus.ts';
import { SampleStore } from '../usage/samples.ts';
import type { UsageSource } from '../usage/source.ts';
import { oneOf } from './options.ts';
import { UsageError } from './usage.ts';

/** parseArgs options: --usage, --prometheus-url, --prometheus-matchers, --samples, --sample-interval. */
export const usageOptions = {
  usage: { type: 'string', default: 'kubelet' },
  'prometheus-url': { type: 'string' },
  'prometheus-matchers': { type: 'string' },
  samples: { type: 'string', default: '1' },
  'sample-interval': { type: 'string', default: '10s' },
} as const;

export interface UsageFlags {
  usage: 'kubelet' | 'prometheus' | 'none';
  prometheusUrl?: string;
  prometheusMatchers?: string;
  samples: number;
  sampleIntervalMs: number;
}

export function usageFlags(values: { usage?: string; 'prometheus-url'?: string; 'prometheus-matchers'?: string; samples?: string; 'sample-interval'?: string }, env: NodeJS.ProcessEnv): UsageFlags {
  const usage = oneOf('--usage', values.usage ?? 'kubelet', ['kubelet', 'prometheus', 'none'] as const);
  const prometheusUrl = values['prometheus-url'] ?? env.PVX_PROMETHEUS_URL;
  if (usage === 'prometheus' && !prometheusUrl) throw new UsageError('--usage prometheus needs --prometheus-url (or PVX_PROMETHEUS_URL)');
  const samples = Number(values.samples ?? '1');
  if (!Number.isInteger(samples) || samples < 1 || samples > 30) throw new UsageError(`--samples must be a whole number from 1 to 30, got "${values.samples}"`);
  const sampleIntervalMs = parseDuration(values['sample-interval'] ?? '10s');
  if (!sampleIntervalMs) throw new UsageError(`--sample-interval must be a positive duration such as 10s, got "${values['sample-interval']}"`);
  return { usage, prometheusUrl, prometheusMatchers: values['prometheus-matchers'], samples, sampleIntervalMs };
}

/**
 * The usage source the flags name — nodes are listed only for the kubelet source, so a user who
 * may not list them can still read Prometheus — read `samples` times, `sampleIntervalMs` apart.
 * What could not be read is added to `warnings`.
 */
export async function readUsage(client: KubeClient, flags: UsageFlags, warnings: string[]): Promise<{ source?: UsageSource; samples: SampleStore }> {
  let source: UsageSource | undefined;
  if (flags.usage === 'kubelet') {
    const kubelet = await kubeletUsage(client);
    source = kubelet.source;
    warnings.push(...kubelet.warnings);
  } else if (flags.usage === 'prometheus') {
    source = new PrometheusSource({ url: flags.prometheusUrl as string, matchers: flags.prometheusMatchers });
  }
  const samples = new SampleStore();
  for (let i = 0; source && i < flags.samples; i++) {
    if (i > 0) await sleep(flags.sampleIntervalMs);
    const report = await source.collect(new Date());
    for (const [key, sample] of report.samples) samples.add(key, sample, source.sampleTimes);
    for (const e of report.errors) warnings.push(`usage from ${source.name}: ${e.target}: ${e.message}`);
  }
  return { source, samples };
}
