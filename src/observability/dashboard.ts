// The Grafana dashboard for pvx, as data: config/grafana/pvx-dashboard.json is its generated form
// (`npm run observability`; a unit test compares them and checks every query against the metrics
// pvx exports and against promtool's PromQL parser). Written here rather than exported from
// Grafana so that panels share one layout and one set of selectors.

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

interface Query {
  expr: string;
  legend?: string;
  /** Tables and bar gauges show the latest value, not a range. */
  instant?: boolean;
}

interface PanelSpec {
  title: string;
  description: string;
  type: 'timeseries' | 'stat' | 'bargauge' | 'table' | 'state-timeline';
  queries: Query[];
  unit?: string;
  width?: number;
  height?: number;
  stacked?: boolean;
  /** Value → text, for gauges that encode a state (leader 1/0). */
  valueText?: Record<string, string>;
}

interface RowSpec {
  title: string;
  panels: PanelSpec[];
}

// Controller-runtime and client-go names are shared with other operators in the same Prometheus:
// the job variable (listing only jobs that export pvx's own informer metrics) keeps them apart.
const job = 'job=~"$job"';
const volumes = 'namespace=~"$namespace"';
const quantiles = [0.5, 0.9, 0.99];

function percentiles(metric: string, by: string, selector: string): Query[] {
  return quantiles.map((q) => ({
    expr: `histogram_quantile(${q}, sum by (${by}, le) (rate(${metric}_bucket{${selector}}[$__rate_interval])))`,
    legend: `p${Math.round(q * 100)} {{${by}}}`,
  }));
}

const rows: RowSpec[] = [
  {
    title: 'Expansions',
    panels: [
      {
        title: 'Requests finished, by result and change',
        description:
          'VolumeExpansionRequests reaching a final phase per second: completed, failed, rejected, dry_run; by what they change: size, class (VolumeAttributesClass) or size+class.',
        type: 'timeseries',
        unit: 'ops',
        stacked: true,
        queries: [{ expr: `sum by (result, change) (rate(pvx_expansion_requests_total{${job}}[$__rate_interval]))`, legend: '{{result}} ({{change}})' }],
      },
      {
        title: 'Expansions in flight',
        description: 'Requests accepted and not finished (every replica counts them from its cache; the highest is shown).',
        type: 'timeseries',
        unit: 'short',
        queries: [{ expr: `max(pvx_expansions_in_flight{${job}})`, legend: 'in flight' }],
      },
      {
        title: 'Expansions failed in the time range',
        description: 'VolumeExpansionRequests that ended in phase Failed within the dashboard’s time range.',
        type: 'stat',
        unit: 'short',
        queries: [{ expr: `sum(increase(pvx_expansion_requests_total{${job}, result="failed"}[$__range]))`, instant: true }],
      },
      {
        title: 'Time spent in each phase (p50, p90, p99)',
        description: 'How long requests stayed in a phase before leaving it (observed when the phase ends); Modifying is a VolumeAttributesClass change after any resize.',
        type: 'timeseries',
        unit: 's',
        width: 24,
        queries: percentiles('pvx_expansion_phase_duration_seconds', 'phase', job),
      },
    ],
  },
  {
    title: 'Volumes and policies',
    panels: [
      {
        title: 'Fullest volumes',
        description: 'The ten PVCs covered by a policy with the highest used/capacity ratio (latest fresh sample).',
        type: 'bargauge',
        unit: 'percentunit',
        queries: [
          {
            expr: `topk(10, max by (namespace, persistentvolumeclaim) (pvx_volume_used_ratio{${volumes}}))`,
            legend: '{{namespace}}/{{persistentvolumeclaim}}',
            instant: true,
          },
        ],
      },
      {
        title: 'Soonest full (forecast)',
        description: 'The ten PVCs forecast to fill up first at their current rate of growth.',
        type: 'bargauge',
        unit: 's',
        queries: [
          {
            expr: `bottomk(10, min by (namespace, persistentvolumeclaim) (pvx_volume_time_to_full_seconds{${volumes}}))`,
            legend: '{{namespace}}/{{persistentvolumeclaim}}',
            instant: true,
          },
        ],
      },
      {
        title: 'Volumes at their maximum size',
        description: 'PVCs a policy wants to grow but that have reached its maxSize.',
        type: 'table',
        queries: [{ expr: `max by (namespace, persistentvolumeclaim) (pvx_volume_at_max_size{${volumes}}) == 1`, instant: true }],
      },
      {
        title: 'Policy triggers, by policy and trigger',
        description: 'Expansions policies decided on, per evaluation interval, by what triggered them.',
        type: 'timeseries',
        unit: 'short',
        stacked: true,
        queries: [{ expr: `sum by (policy, trigger) (increase(pvx_policy_triggers_total{${job}}[$__rate_interval]))`, legend: '{{policy}}: {{trigger}}' }],
      },
      {
        title: 'Policy evaluations',
        description: 'Evaluation passes per second, by policy.',
        type: 'timeseries',
        unit: 'ops',
        queries: [{ expr: `sum by (policy) (rate(pvx_policy_evaluations_total{${job}}[$__rate_interval]))`, legend: '{{policy}}' }],
      },
      {
        title: 'Usage source errors',
        description: 'Failed reads of volume usage (per node for the kubelet source); policies skip volumes without fresh samples.',
        type: 'timeseries',
        unit: 'ops',
        queries: [{ expr: `sum by (source) (rate(pvx_usage_source_errors_total{${job}}[$__rate_interval]))`, legend: '{{source}}' }],
      },
    ],
  },
  {
    title: 'Audit',
    panels: [
      {
        title: 'Audit findings, by rule and severity',
        description: 'Current findings of the cluster audit; `pvx audit` lists the objects.',
        type: 'timeseries',
        unit: 'short',
        stacked: true,
        width: 12,
        queries: [{ expr: `max by (rule, severity) (pvx_audit_findings{${job}})`, legend: '{{rule}} ({{severity}})' }],
      },
      {
        title: 'Audit findings, by namespace',
        description: 'Current findings per namespace and severity.',
        type: 'table',
        width: 12,
        queries: [{ expr: `max by (namespace, severity) (pvx_audit_namespace_findings{${volumes}}) > 0`, instant: true }],
      },
      {
        title: 'Since the last audit pass',
        description: 'Seconds since the audit last completed a pass over the cluster.',
        type: 'stat',
        unit: 's',
        queries: [{ expr: `time() - max(pvx_audit_last_run_timestamp_seconds{${job}})`, instant: true }],
      },
      {
        title: 'Audit passes',
        description: 'Audit passes per second.',
        type: 'timeseries',
        unit: 'ops',
        width: 16,
        queries: [{ expr: `sum(rate(pvx_audit_runs_total{${job}}[$__rate_interval]))`, legend: 'passes' }],
      },
    ],
  },
  {
    title: 'Operator',
    panels: [
      {
        title: 'Leader',
        description: 'Which replica holds the leader lease (only the leader reconciles); the others are standbys.',
        type: 'state-timeline',
        width: 12,
        valueText: { '1': 'leader', '0': 'standby' },
        queries: [{ expr: `max by (instance, name) (leader_election_master_status{${job}})`, legend: '{{instance}} ({{name}})' }],
      },
      {
        title: 'Scrape target up',
        description: 'Whether Prometheus reaches each pvx replica.',
        type: 'state-timeline',
        width: 12,
        valueText: { '1': 'up', '0': 'down' },
        queries: [{ expr: `up{${job}}`, legend: '{{instance}}' }],
      },
      {
        title: 'Reconciles, by controller and result',
        description: 'Reconciles per second: success, requeue, requeue_after, error.',
        type: 'timeseries',
        unit: 'ops',
        queries: [{ expr: `sum by (controller, result) (rate(controller_runtime_reconcile_total{${job}}[$__rate_interval]))`, legend: '{{controller}}: {{result}}' }],
      },
      {
        title: 'Reconcile errors, by controller',
        description: 'Reconciles per second that ended in an error (retried with backoff).',
        type: 'timeseries',
        unit: 'ops',
        queries: [{ expr: `sum by (controller) (rate(controller_runtime_reconcile_errors_total{${job}}[$__rate_interval]))`, legend: '{{controller}}' }],
      },
      {
        title: 'Reconcile duration (p50, p90, p99)',
        description: 'Time per reconcile, by controller.',
        type: 'timeseries',
        unit: 's',
        queries: percentiles('controller_runtime_reconcile_time_seconds', 'controller', job),
      },
      {
        title: 'Work queue depth',
        description: 'Keys waiting in each controller’s work queue.',
        type: 'timeseries',
        unit: 'short',
        queries: [{ expr: `sum by (name) (workqueue_depth{${job}})`, legend: '{{name}}' }],
      },
      {
        title: 'Work queue wait (p99)',
        description: 'How long a key waits in the queue before a worker takes it.',
        type: 'timeseries',
        unit: 's',
        queries: [
          {
            expr: `histogram_quantile(0.99, sum by (name, le) (rate(workqueue_queue_duration_seconds_bucket{${job}}[$__rate_interval])))`,
            legend: '{{name}}',
          },
        ],
      },
      {
        title: 'Work queue processing (p99)',
        description: 'How long processing a key takes.',
        type: 'timeseries',
        unit: 's',
        queries: [
          {
            expr: `histogram_quantile(0.99, sum by (name, le) (rate(workqueue_work_duration_seconds_bucket{${job}}[$__rate_interval])))`,
            legend: '{{name}}',
          },
        ],
      },
      {
        title: 'Work queue adds and retries',
        description: 'Keys added per second, and rate-limited retries per second.',
        type: 'timeseries',
        unit: 'ops',
        queries: [
          { expr: `sum by (name) (rate(workqueue_adds_total{${job}}[$__rate_interval]))`, legend: 'adds {{name}}' },
          { expr: `sum by (name) (rate(workqueue_retries_total{${job}}[$__rate_interval]))`, legend: 'retries {{name}}' },
        ],
      },
      {
        title: 'Active workers',
        description: 'Workers reconciling right now, by controller.',
        type: 'timeseries',
        unit: 'short',
        queries: [{ expr: `sum by (controller) (controller_runtime_active_workers{${job}})`, legend: '{{controller}}' }],
      },
    ],
  },
  {
    title: 'Caches and process',
    panels: [
      {
        title: 'Informer relists and watch restarts',
        description: 'Full lists (initial, 410 Gone) and restarted watch streams, by resource and reason; a steady rate means watches keep breaking.',
        type: 'timeseries',
        unit: 'short',
        queries: [
          { expr: `sum by (resource, reason) (increase(pvx_informer_relists_total{${job}}[$__rate_interval]))`, legend: 'relist {{resource}} ({{reason}})' },
          { expr: `sum by (resource, reason) (increase(pvx_informer_watch_restarts_total{${job}}[$__rate_interval]))`, legend: 'watch restart {{resource}} ({{reason}})' },
        ],
      },
      {
        title: 'Cached objects',
        description: 'Objects in each informer cache, and whether it has synced (0 = not yet).',
        type: 'timeseries',
        unit: 'short',
        queries: [
          { expr: `max by (resource) (pvx_informer_objects{${job}})`, legend: '{{resource}}' },
          { expr: `min by (resource) (pvx_informer_synced{${job}}) == 0`, legend: 'not synced: {{resource}}' },
        ],
      },
      {
        title: 'Watch events',
        description: 'Watch events applied to the caches per second, by resource and type.',
        type: 'timeseries',
        unit: 'ops',
        queries: [{ expr: `sum by (resource, type) (rate(pvx_informer_events_total{${job}}[$__rate_interval]))`, legend: '{{resource}} {{type}}' }],
      },
      {
        title: 'CPU',
        description: 'CPU seconds per second, by replica.',
        type: 'timeseries',
        unit: 'percentunit',
        queries: [{ expr: `rate(process_cpu_seconds_total{${job}}[$__rate_interval])`, legend: '{{instance}}' }],
      },
      {
        title: 'Resident memory',
        description: 'Resident set size, by replica.',
        type: 'timeseries',
        unit: 'bytes',
        queries: [{ expr: `process_resident_memory_bytes{${job}}`, legend: '{{instance}}' }],
      },
      {
        title: 'Event loop lag (p99)',
        description: 'Node.js event loop delay: high values delay every reconcile and lease renewal.',
        type: 'timeseries',
        unit: 's',
        queries: [{ expr: `nodejs_eventloop_lag_p99_seconds{${job}}`, legend: '{{instance}}' }],
      },
    ],
  },
];

const datasource = { type: 'prometheus', uid: '${datasource}' };

function panelJson(p: PanelSpec, id: number, gridPos: { x: number; y: number; w: number; h: number }): Json {
  const custom: { [k: string]: Json } = p.type === 'timeseries' ? { fillOpacity: p.stacked ? 30 : 10, stacking: { mode: p.stacked ? 'normal' : 'none', group: 'A' } } : {};
  const mappings: Json[] = p.valueText
    ? [{ type: 'value', options: Object.fromEntries(Object.entries(p.valueText).map(([v, text], i) => [v, { text, index: i }])) }]
    : [];
  return {
    id,
    type: p.type,
    title: p.title,
    description: p.description,
    datasource,
    gridPos,
    fieldConfig: { defaults: { unit: p.unit ?? 'short', mappings, custom }, overrides: [] },
    options: p.type === 'bargauge' ? { orientation: 'horizontal', displayMode: 'gradient', reduceOptions: { calcs: ['lastNotNull'], values: false } } : {},
    targets: p.queries.map((q, i) => ({
      refId: String.fromCharCode(65 + i),
      datasource,
      expr: q.expr,
      legendFormat: q.legend ?? '__auto',
      range: !q.instant,
      instant: q.instant ?? false,
      ...(p.type === 'table' ? { format: 'table' } : {}),
    })),
  };
}

export function pvxDashboard(): Json {
  const panels: Json[] = [];
  let id = 1;
  let y = 0;
  for (const row of rows) {
    panels.push({ id: id++, type: 'row', title: row.title, collapsed: false, gridPos: { x: 0, y, w: 24, h: 1 }, panels: [] });
    y += 1;
    let x = 0;
    let rowHeight = 0;
    for (const p of row.panels) {
      const w = p.width ?? 8;
      const h = p.height ?? 8;
      if (x + w > 24) {
        y += rowHeight;
        x = 0;
        rowHeight = 0;
      }
      panels.push(panelJson(p, id++, { x, y, w, h }));
      x += w;
      rowHeight = Math.max(rowHeight, h);
    }
    y += rowHeight;
  }
  const variable = (name: string, label: string, query: string, allValue?: string): Json => ({
    name,
    label,
    type: 'query',
    datasource,
    query: { query, refId: `${name}-variable` },
    definition: query,
    refresh: 2,
    multi: true,
    includeAll: true,
    ...(allValue === undefined ? {} : { allValue }),
    current: { selected: true, text: ['All'], value: ['$__all'] },
    sort: 1,
  });
  return {
    title: 'pvx',
    uid: 'pvx-overview',
    description: 'pvx: PersistentVolumeClaim expansions, policies, audit findings and the operator runtime.',
    tags: ['pvx', 'kubernetes', 'storage'],
    editable: true,
    graphTooltip: 1,
    refresh: '30s',
    schemaVersion: 39,
    time: { from: 'now-6h', to: 'now' },
    timezone: 'browser',
    annotations: { list: [] },
    links: [],
    templating: {
      list: [
        { name: 'datasource', label: 'Data source', type: 'datasource', query: 'prometheus', current: {}, hide: 0, refresh: 1, regex: '' },
        // Listed from a metric only pvx exports, and "All" is the list itself (not ".*"), so other
        // operators' controller-runtime series never mix in.
        variable('job', 'Job', 'label_values(pvx_informer_synced, job)'),
        variable('namespace', 'Namespace (volumes)', 'label_values(pvx_volume_used_ratio, namespace)', '.*'),
      ],
    },
    panels,
  };
}
