// Every metric `pvx run` exports, read from registries built by the same functions the operator
// calls. The metrics reference in docs/observability.md and the checks of the dashboard and the
// alert rules compare against this list, so renaming a metric fails them instead of leaving a
// panel or an alert silently empty.
import { Registry, collectDefaultMetrics } from 'prom-client';
import { createAuditMetrics } from './audit.ts';
import { createExpansionMetrics } from './expansion.ts';
import { createPolicyMetrics } from './policy.ts';
import { createRuntimeMetrics } from './runtime.ts';

export interface MetricDescription {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary';
  help: string;
  labels: string[];
  /** Series names a query can select: histograms and summaries add _sum and _count (histograms _bucket). */
  series: string[];
  /** prom-client's process and Node.js metrics, as opposed to pvx's own. */
  processMetric: boolean;
}

function seriesNames(name: string, type: MetricDescription['type']): string[] {
  if (type === 'histogram') return [`${name}_bucket`, `${name}_sum`, `${name}_count`];
  if (type === 'summary') return [name, `${name}_sum`, `${name}_count`];
  return [name];
}

export async function metricCatalog(): Promise<MetricDescription[]> {
  const registry = new Registry();
  createRuntimeMetrics(registry);
  createExpansionMetrics(registry, () => []);
  createPolicyMetrics(registry);
  createAuditMetrics(registry);
  const processOnly = new Registry();
  collectDefaultMetrics({ register: processOnly });
  const processNames = new Set((await processOnly.getMetricsAsJSON()).map((m) => m.name));
  return (await registry.getMetricsAsJSON())
    .map((m) => {
      const type = String(m.type) as MetricDescription['type'];
      const labels = (registry.getSingleMetric(m.name) as unknown as { labelNames?: string[] } | undefined)?.labelNames ?? [];
      return { name: m.name, type, help: m.help, labels: [...labels], series: seriesNames(m.name, type), processMetric: processNames.has(m.name) };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}
