// The dashboard, the alert rules and the docs against what pvx really exports: every metric they
// name must come out of the registries `pvx run` builds, every query must parse and return data
// from series of every exported metric with its labels (promtool evaluates them), every alert must
// have a promtool test that fires it and one that does not, and the generated files must match
// their sources.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, relative, resolve } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { metricCatalog, type MetricDescription } from '../../src/metrics/catalog.ts';
import { observabilityFiles, readRuleGroups, renderAll } from '../../src/observability/generate.ts';
import { requestResults } from '../../src/policies/request/decision.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..');
const promtoolTests = join(repoRoot, 'config', 'prometheus', 'tests', 'alerts.test.yaml');

/** Series pvx's rules and dashboard may name without exporting them: Prometheus's own, the kubelet's, kube-state-metrics'. */
const externalMetrics = new Set([
  'up',
  'kubelet_volume_stats_used_bytes',
  'kubelet_volume_stats_capacity_bytes',
  'kubelet_volume_stats_available_bytes',
  'kube_persistentvolumeclaim_info',
  'kube_persistentvolumeclaim_resource_requests_storage_bytes',
  'kube_persistentvolumeclaim_status_phase',
]);

function promtoolPath(): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter).concat('/usr/bin')) {
    const candidate = join(dir, 'promtool');
    if (dir && existsSync(candidate)) return candidate;
  }
  throw new Error(
    "promtool is not installed: install Debian's `prometheus` package (apt-get install prometheus), which provides it; `npm run cluster:up` and `bash scripts/test` install it with the embedded cluster's packages",
  );
}

function promtool(args: string[]): { ok: boolean; output: string } {
  const r = spawnSync(promtoolPath(), args, { encoding: 'utf8', timeout: 60_000 });
  if (r.error) throw r.error;
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}

function tempFile(name: string, content: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'pvx-observability-')), name);
  writeFileSync(file, content);
  return file;
}

/**
 * Metric names a PromQL expression selects. Strings, label matchers, ranges and label lists are
 * cut out first; what remains that looks like an identifier and is neither a function call nor a
 * keyword is a metric name.
 */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const keywords = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);
  const names = [...stripped.matchAll(/(?<![\w:.$])[a-zA-Z_:][\w:]*(?![\w:]|\s*\()/g)].map((m) => m[0]).filter((n) => !keywords.has(n.toLowerCase()));
  return [...new Set(names)];
}

// Grafana's variables, replaced by values of the same kind so that the query is plain PromQL.
const grafanaValues: Record<string, string> = {
  job: 'pvx',
  namespace: 'default',
  __rate_interval: '1m',
  __interval: '1m',
  __range: '6h',
};

function withoutGrafanaVariables(query: string): string {
  return query.replace(/\$\{?(\w+)(?::\w+)?\}?/g, (_, name: string) => {
    const value = grafanaValues[name];
    if (value === undefined) throw new Error(`dashboard query uses Grafana variable $${name}, which this test does not know how to substitute: ${query}`);
    return value;
  });
}

interface DashboardQuery {
  where: string;
  expr: string;
}

type GridPos = { x: number; y: number; w: number; h: number };
type Panel = {
  id?: number;
  title?: string;
  type?: string;
  datasource?: { uid?: string };
  gridPos?: GridPos;
  targets?: { expr?: string; refId?: string }[];
  panels?: Panel[];
};
type Dashboard = { panels: Panel[]; templating: { list: { name: string; type: string; query?: string | { query: string } }[] } };

const dashboard = JSON.parse(readFileSync(observabilityFiles.dashboard, 'utf8')) as Dashboard;

/** Every PromQL query of the dashboard, variables substituted; label_values(m, l) becomes the query Grafana runs for it. */
function dashboardQueries(): DashboardQuery[] {
  const out: DashboardQuery[] = [];
  const walk = (panels: Panel[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) if (t.expr) out.push({ where: `panel "${p.title}"`, expr: withoutGrafanaVariables(t.expr) });
      walk(p.panels ?? []);
    }
  };
  walk(dashboard.panels);
  for (const v of dashboard.templating.list) {
    if (v.type !== 'query') continue;
    const query = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
    const labelValues = /^label_values\(\s*(.+?)\s*,\s*(\w+)\s*\)$/.exec(query);
    if (!labelValues) throw new Error(`variable ${v.name}: expected label_values(metric, label), got ${query}`);
    out.push({ where: `variable $${v.name}`, expr: `count by (${labelValues[2]}) (${withoutGrafanaVariables(labelValues[1] as string)})` });
  }
  return out;
}

const ruleGroups = readRuleGroups();
const alerts = ruleGroups.flatMap((g) => g.rules);

async function exportedSeries(): Promise<Set<string>> {
  return new Set((await metricCatalog()).flatMap((m) => m.series));
}

function unknownMetrics(exprs: { where: string; expr: string }[], known: Set<string>): string[] {
  return exprs.flatMap(({ where, expr }) =>
    metricNames(expr)
      .filter((n) => !known.has(n) && !externalMetrics.has(n))
      .map((n) => `${where}: ${n}`),
  );
}

describe('metricNames (PromQL → metric names)', () => {
  it('finds selected metrics and skips functions, keywords, labels, strings and durations', () => {
    expect(
      metricNames(
        'histogram_quantile(0.9, sum by (phase, le) (rate(a_bucket{phase="x", job=~"$job"}[5m]))) / on (x) group_left (y) b offset 1h > bool 1e3 and c unless absent(d{e="f"}) or time() - e:rec',
      ),
    ).toEqual(['a_bucket', 'b', 'c', 'd', 'e:rec']);
  });
});

describe('alert rules', () => {
  it('config/prometheus/rules.yaml passes `promtool check rules`', () => {
    const r = promtool(['check', 'rules', observabilityFiles.rules]);
    expect(r.ok, r.output).toBe(true);
  });

  it("the PrometheusRule's spec (config/prometheus/alerts.yaml) passes `promtool check rules`", () => {
    const rule = parse(readFileSync(observabilityFiles.prometheusRule, 'utf8')) as { kind: string; spec: unknown };
    expect(rule.kind).toBe('PrometheusRule');
    const r = promtool(['check', 'rules', tempFile('rules.yaml', stringify(rule.spec))]);
    expect(r.ok, r.output).toBe(true);
  });

  it('config/prometheus/tests/alerts.test.yaml passes `promtool test rules`', () => {
    const r = promtool(['test', 'rules', promtoolTests]);
    expect(r.ok, r.output).toBe(true);
  });

  it('every alert has a promtool test where it fires and one where it does not', () => {
    type AlertTest = { alertname: string; exp_alerts?: unknown[] };
    const tests = parse(readFileSync(promtoolTests, 'utf8')) as { rule_files: string[]; tests: { alert_rule_test?: AlertTest[] }[] };
    expect(tests.rule_files).toEqual(['../rules.yaml']);
    const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
    const missing = alerts.flatMap((a) => {
      const own = cases.filter((c) => c.alertname === a.alert);
      return [
        ...(own.some((c) => (c.exp_alerts ?? []).length > 0) ? [] : [`${a.alert}: no test where it fires`]),
        ...(own.some((c) => (c.exp_alerts ?? []).length === 0) ? [] : [`${a.alert}: no test where it does not fire`]),
      ];
    });
    expect(missing).toEqual([]);
    const unknown = cases.map((c) => c.alertname).filter((n) => !alerts.some((a) => a.alert === n));
    expect(unknown, 'tests of alerts that do not exist').toEqual([]);
  });

  it('every alert has a severity label and summary, description and runbook annotations', () => {
    const incomplete = alerts.filter(
      (a) => !['critical', 'warning', 'info'].includes(a.labels?.severity) || !a.annotations?.summary || !a.annotations?.description || !a.annotations?.runbook,
    );
    expect(incomplete.map((a) => a.alert)).toEqual([]);
  });

  it('every metric an alert names is exported by pvx or a standard external series', async () => {
    expect(alerts.length).toBeGreaterThan(0);
    expect(
      unknownMetrics(
        alerts.map((a) => ({ where: `alert ${a.alert}`, expr: a.expr })),
        await exportedSeries(),
      ),
    ).toEqual([]);
  });
});

/** Label values pvx fixes in its code: a query that selects another selects nothing. */
const knownLabelValues: Readonly<Record<string, readonly string[]>> = { result: requestResults };

/**
 * A series of every metric pvx exports, and of the external ones its dashboard reads, with every
 * label the metric has, for promtool: counters and histograms rising, gauges at 0 on one instance
 * and 1 on another (a panel that shows only the full volumes, or only the unsynced caches, has
 * something to show). Labels take the values the dashboard's variables are given (grafanaValues).
 */
function syntheticSeries(catalog: readonly MetricDescription[]): { series: string; values: string }[] {
  const labelValue = (label: string) => (label === 'namespace' ? grafanaValues.namespace : label === 'job' ? grafanaValues.job : 'x');
  const selector = (name: string, labels: readonly string[], extra: Record<string, string>) => {
    const all = { ...Object.fromEntries(labels.map((l) => [l, labelValue(l)])), job: grafanaValues.job as string, ...extra };
    return `${name}{${Object.entries(all)
      .map(([k, v]) => `${k}="${v}"`)
      .join(', ')}}`;
  };
  const rising = '0+1x40';
  // A label whose values pvx fixes carries each of them (a query may select one); any other, one value.
  const variants = (labels: readonly string[]): Record<string, string>[] => [
    {},
    ...labels.flatMap((l) => (knownLabelValues[l] ?? []).map((value) => ({ [l]: value }))),
  ];
  const external = [...externalMetrics].map((name) => ({ name, type: 'gauge' as const, labels: ['namespace', 'persistentvolumeclaim'] }));
  return [...catalog, ...external].flatMap((m) => {
    if (m.type === 'counter') return variants(m.labels).map((v) => ({ series: selector(m.name, m.labels, { instance: 'a', ...v }), values: rising }));
    if (m.type === 'histogram')
      return [
        ...['0.5', '5', '+Inf'].map((le, i) => ({ series: selector(`${m.name}_bucket`, m.labels, { instance: 'a', le }), values: `0+${i + 1}x40` })),
        { series: selector(`${m.name}_sum`, m.labels, { instance: 'a' }), values: '0+10x40' },
        { series: selector(`${m.name}_count`, m.labels, { instance: 'a' }), values: '0+3x40' },
      ];
    const gauges = [
      { series: selector(m.name, m.labels, { instance: 'a' }), values: '0x40' },
      { series: selector(m.name, m.labels, { instance: 'b' }), values: '1x40' },
    ];
    if (m.type !== 'summary') return gauges;
    return [...gauges, ...['_sum', '_count'].map((suffix) => ({ series: selector(`${m.name}${suffix}`, m.labels, { instance: 'a' }), values: rising }))];
  });
}

describe('Grafana dashboard', () => {
  const queries = dashboardQueries();

  it('takes its data source and namespace from template variables', () => {
    const variables = dashboard.templating.list.map((v) => `${v.name}:${v.type}`);
    expect(variables).toEqual(expect.arrayContaining(['datasource:datasource', 'namespace:query', 'job:query']));
    const walk = (panels: Panel[]): Panel[] => panels.flatMap((p) => [p, ...walk(p.panels ?? [])]);
    const fixedSource = walk(dashboard.panels).filter((p) => p.type !== 'row' && p.datasource?.uid !== '${datasource}');
    expect(fixedSource.map((p) => p.title)).toEqual([]);
  });

  // The builders place each panel after the previous one and move to the next line only once a
  // line is full, so a width that does not divide the line would push a panel off the grid.
  it('lays every panel inside the 24 columns, overlapping none, with unique ids and refIds', () => {
    const placed = dashboard.panels.map((p) => ({ title: p.title, id: p.id, ...(p.gridPos as GridPos) }));
    expect(placed.filter((p) => p.x < 0 || p.w < 1 || p.x + p.w > 24).map((p) => p.title)).toEqual([]);
    const overlaps = placed.flatMap((a, i) =>
      placed
        .slice(i + 1)
        .filter((b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h)
        .map((b) => `${a.title} / ${b.title}`),
    );
    expect(overlaps).toEqual([]);
    expect(new Set(placed.map((p) => p.id)).size).toBe(placed.length);
    const repeatedRefIds = dashboard.panels.filter((p) => new Set((p.targets ?? []).map((t) => t.refId)).size !== (p.targets ?? []).length);
    expect(repeatedRefIds.map((p) => p.title)).toEqual([]);
  });

  it('every metric a query names is exported by pvx or a standard external series', async () => {
    expect(queries.length).toBeGreaterThan(20);
    expect(unknownMetrics(queries, await exportedSeries())).toEqual([]);
  });

  // Grafana's dashboard schema as the foundation SDK publishes it (grafana/grafana-foundation-sdk,
  // jsonschema/dashboard.jsonschema.json at b3d52a7c, checked in as data): a field Grafana does not
  // know, or of another type, fails here rather than in a user's Grafana.
  it('validates against Grafana’s dashboard schema', () => {
    const schema = JSON.parse(readFileSync(join(import.meta.dirname, 'schemas', 'grafana-dashboard.schema.json'), 'utf8')) as object;
    const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
    const valid = validate(dashboard);
    expect(valid, JSON.stringify(validate.errors?.slice(0, 10), null, 2)).toBe(true);
    // And it can fail: a panel field Grafana does not know.
    expect(validate({ ...dashboard, panels: [{ ...dashboard.panels[0], notAField: true }] })).toBe(false);
  });

  // A query that names the right metrics can still select nothing: a label the metric does not
  // have, a value no series carries, an aggregation that drops what the next step matches on. Each
  // query (as an alert that fires when it returns anything) is evaluated by promtool over series of
  // every exported metric with every label the catalog gives it: a panel that would stay blank fails.
  it('every query returns data from the series pvx exports (promtool evaluates each over them)', async () => {
    const rules = queries.map((q, i) => ({ alert: `DashboardQuery${i}`, expr: `count(${q.expr}) > 0` }));
    const rulesFile = tempFile('dashboard-queries.yaml', stringify({ groups: [{ name: 'dashboard', rules }] }));
    const tests = {
      rule_files: [rulesFile],
      evaluation_interval: '1m',
      tests: [
        {
          interval: '1m',
          input_series: syntheticSeries(await metricCatalog()),
          alert_rule_test: rules.map((r) => ({ eval_time: '30m', alertname: r.alert, exp_alerts: [{ exp_labels: {} }] })),
        },
      ],
    };
    const r = promtool(['test', 'rules', tempFile('dashboard-queries.test.yaml', stringify(tests))]);
    const legend = queries.map((q, i) => `DashboardQuery${i} = ${q.where}: ${q.expr}`).join('\n');
    expect(r.ok, `${r.output}\n${legend}`).toBe(true);
  });

  it('every query is valid PromQL (promtool parses them as recording rules)', () => {
    const records = queries.map((q, i) => ({ record: `pvx_dashboard_query_${i}`, expr: q.expr }));
    const r = promtool(['check', 'rules', tempFile('dashboard-queries.yaml', stringify({ groups: [{ name: 'dashboard', rules: records }] }))]);
    const legend = queries.map((q, i) => `pvx_dashboard_query_${i} = ${q.where}: ${q.expr}`).join('\n');
    expect(r.ok, `${r.output}\n${legend}`).toBe(true);
  });
});

describe('monitors', () => {
  type Labels = Record<string, string>;
  type Endpoint = { port: string; path: string; honorLabels: boolean; scheme: string; tlsConfig: object };
  type Monitor = {
    spec: { namespaceSelector: { matchNames: string[] }; selector: { matchLabels: Labels }; endpoints?: Endpoint[]; podMetricsEndpoints?: Endpoint[] };
  };
  type Service = { metadata: { namespace: string; labels: Labels }; spec: { ports: { name: string }[] } };
  type Deployment = {
    metadata: { namespace: string };
    spec: { template: { metadata: { labels: Labels }; spec: { containers: { ports?: { name: string }[] }[] } } };
  };
  const read = <T>(file: string) => parse(readFileSync(join(repoRoot, file), 'utf8')) as T;

  it("the ServiceMonitor selects the metrics Service of config/manager on port https with Prometheus's token, keeping pvx's namespace label", () => {
    const monitor = read<Monitor>('config/prometheus/servicemonitor.yaml');
    const service = read<Service>('config/manager/service.yaml');
    expect(monitor).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', metadata: { namespace: 'pvx-system' } });
    expect(monitor.spec.namespaceSelector.matchNames).toEqual([service.metadata.namespace]);
    expect(service.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels);
    expect(monitor.spec.selector.matchLabels['app.kubernetes.io/name']).toBe('pvx');
    expect(service.spec.ports.map((p) => p.name)).toContain('https');
    expect(monitor.spec.endpoints).toEqual([
      expect.objectContaining({
        port: 'https',
        scheme: 'https',
        path: '/metrics',
        honorLabels: true,
        bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
        tlsConfig: { insecureSkipVerify: true },
      }),
    ]);
  });

  it("the PodMonitor selects the pods of config/manager's Deployment on port https with a token from a Secret, keeping pvx's namespace label", () => {
    const monitor = read<Monitor>('config/prometheus/podmonitor.yaml');
    const deployment = read<Deployment>('config/manager/deployment.yaml');
    expect(monitor).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PodMonitor', metadata: { namespace: 'pvx-system' } });
    expect(monitor.spec.namespaceSelector.matchNames).toEqual([deployment.metadata.namespace]);
    expect(deployment.spec.template.metadata.labels).toMatchObject(monitor.spec.selector.matchLabels);
    expect(monitor.spec.selector.matchLabels['app.kubernetes.io/name']).toBe('pvx');
    const ports = deployment.spec.template.spec.containers.flatMap((c) => (c.ports ?? []).map((p) => p.name));
    expect(ports).toContain('https');
    expect(monitor.spec.podMetricsEndpoints).toEqual([
      expect.objectContaining({
        port: 'https',
        scheme: 'https',
        path: '/metrics',
        honorLabels: true,
        authorization: { type: 'Bearer', credentials: { name: 'pvx-metrics-token', key: 'token' } },
        tlsConfig: { insecureSkipVerify: true },
      }),
    ]);
  });
});

describe('generated files', () => {
  it.each(
    Object.values(observabilityFiles)
      .filter((f) => f !== observabilityFiles.rules)
      .map((f) => relative(repoRoot, f)),
  )('%s matches its sources (run `npm run observability` after changing them)', async (name) => {
    const file = join(repoRoot, name);
    const rendered = (await renderAll())[file];
    expect(rendered).toBeDefined();
    expect(readFileSync(file, 'utf8')).toBe(rendered);
  });
});
