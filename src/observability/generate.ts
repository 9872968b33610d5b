// `npm run observability`: writes the generated observability files from their sources, so that
// each idea is written down once:
//   config/prometheus/rules.yaml  →  config/prometheus/alerts.yaml (PrometheusRule) and the alerts
//                                    reference in docs/observability.md
//   src/metrics/*.ts (registries)  →  the metrics reference in docs/observability.md
//   src/observability/dashboard.ts →  config/grafana/pvx-dashboard.json
// test/unit/observability.test.ts fails when a generated file differs from what this renders.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Document, isMap, isNode, parse, parseDocument } from 'yaml';
import { metricCatalog, type MetricDescription } from '../metrics/catalog.ts';
import { pvxDashboard } from './dashboard.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..');

export const observabilityFiles = {
  rules: join(repoRoot, 'config', 'prometheus', 'rules.yaml'),
  prometheusRule: join(repoRoot, 'config', 'prometheus', 'alerts.yaml'),
  dashboard: join(repoRoot, 'config', 'grafana', 'pvx-dashboard.json'),
  docs: join(repoRoot, 'docs', 'observability.md'),
  // The Helm chart cannot read outside its directory: it ships copies.
  chartRules: join(repoRoot, 'charts', 'pvx', 'files', 'prometheus', 'rules.yaml'),
  chartDashboard: join(repoRoot, 'charts', 'pvx', 'files', 'grafana', 'pvx-dashboard.json'),
};

/** rules.yaml for the chart: its header (which calls that file the source) replaced by a pointer to it. */
export function renderChartRules(rulesText: string): string {
  const body = rulesText.replace(/^(#.*\n)+/, '');
  return `# Copy of config/prometheus/rules.yaml written by \`npm run observability\`: edit that file, not this one.\n${body}`;
}

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels: { severity: string } & Record<string, string>;
  annotations: { summary: string; description: string; runbook: string } & Record<string, string>;
}

export interface RuleGroup {
  name: string;
  rules: AlertRule[];
}

export function readRuleGroups(text = readFileSync(observabilityFiles.rules, 'utf8')): RuleGroup[] {
  return (parse(text) as { groups: RuleGroup[] }).groups;
}

/** The PrometheusRule wrapping rules.yaml, comments included. */
export function renderPrometheusRule(rulesText: string): string {
  const rules = parseDocument(rulesText);
  const doc = new Document({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: { name: 'pvx', namespace: 'pvx-system', labels: { 'app.kubernetes.io/name': 'pvx', 'app.kubernetes.io/component': 'alerting' } },
    spec: null,
  });
  // rules.yaml's header comment (which calls that file the source) would mislead here.
  const first = isMap(rules.contents) ? rules.contents.items[0]?.key : undefined;
  if (isNode(first)) first.commentBefore = null;
  doc.set('spec', rules.contents);
  doc.commentBefore = ' Generated from config/prometheus/rules.yaml by `npm run observability`: edit that file, not this one.';
  return doc.toString({ lineWidth: 0 });
}

function table(header: string[], rows: string[][]): string {
  const cell = (s: string) => s.replaceAll('|', '\\|');
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)].join('\n');
}

export function renderMetricsReference(catalog: MetricDescription[]): string {
  const row = (m: MetricDescription) => [`\`${m.name}\``, m.type, m.labels.map((l) => `\`${l}\``).join(', ') || '—', m.help];
  const own = catalog.filter((m) => !m.processMetric);
  const process = catalog.filter((m) => m.processMetric);
  return [
    table(['Metric', 'Type', 'Labels', 'Meaning'], own.map(row)),
    '',
    `Process and Node.js metrics (prom-client's defaults): ${process.map((m) => `\`${m.name}\``).join(', ')}.`,
    '',
    'Histograms are exported as `<name>_bucket` (label `le`), `<name>_sum` and `<name>_count`.',
  ].join('\n');
}

/** Grafana/Prometheus templates in annotations, shown as placeholders in the docs. */
function placeholders(text: string): string {
  // In code spans: a bare <name> would be taken for an HTML tag and not shown.
  return text.replace(/\{\{\s*\$labels\.(\w+)\s*\}\}/g, '`<$1>`').replace(/\{\{\s*\$value[^}]*\}\}/g, '`<value>`');
}

export function renderAlertsReference(groups: RuleGroup[]): string {
  const sections: string[] = [];
  for (const group of groups) {
    for (const r of group.rules) {
      sections.push(
        [
          `#### ${r.alert}`,
          '',
          `Severity **${r.labels.severity}** · fires after ${r.for ?? '0m'} · group \`${group.name}\``,
          '',
          '```promql',
          r.expr.trim(),
          '```',
          '',
          placeholders(r.annotations.description),
          '',
          `**What to do:** ${placeholders(r.annotations.runbook)}`,
        ].join('\n'),
      );
    }
  }
  return sections.join('\n\n');
}

export function renderDashboard(): string {
  return `${JSON.stringify(pvxDashboard(), null, 2)}\n`;
}

const marker = (name: string) => ({ begin: `<!-- BEGIN GENERATED ${name} (npm run observability) -->`, end: `<!-- END GENERATED ${name} -->` });

/** The docs with their generated sections replaced by `sections`. */
export function renderDocs(docs: string, sections: Record<string, string>): string {
  let out = docs;
  for (const [name, body] of Object.entries(sections)) {
    const { begin, end } = marker(name);
    const from = out.indexOf(begin);
    const to = out.indexOf(end);
    if (from < 0 || to < from) throw new Error(`${observabilityFiles.docs} lacks the markers ${begin} … ${end}`);
    out = `${out.slice(0, from + begin.length)}\n${body}\n${out.slice(to)}`;
  }
  return out;
}

export async function renderAll(): Promise<Record<string, string>> {
  const rulesText = readFileSync(observabilityFiles.rules, 'utf8');
  return {
    [observabilityFiles.prometheusRule]: renderPrometheusRule(rulesText),
    [observabilityFiles.dashboard]: renderDashboard(),
    [observabilityFiles.chartRules]: renderChartRules(rulesText),
    [observabilityFiles.chartDashboard]: renderDashboard(),
    [observabilityFiles.docs]: renderDocs(readFileSync(observabilityFiles.docs, 'utf8'), {
      metrics: renderMetricsReference(await metricCatalog()),
      alerts: renderAlertsReference(readRuleGroups(rulesText)),
    }),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { mkdirSync } = await import('node:fs');
  const path = await import('node:path');
  for (const [file, content] of Object.entries(await renderAll())) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
    process.stdout.write(`wrote ${file}\n`);
  }
}
