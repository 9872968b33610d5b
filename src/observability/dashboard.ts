// The Grafana dashboard for pvx, built with Grafana's own typed builders
// (@grafana/grafana-foundation-sdk), so that its shape is Grafana's dashboard schema rather than
// JSON assembled by hand: config/grafana/pvx-dashboard.json is its generated form
// (`npm run observability`; a unit test compares them and checks every query against the metrics
// pvx exports and against promtool's PromQL parser). Written here rather than exported from
// Grafana so that panels share one set of defaults and one set of selectors.
//
// The builders are the classic dashboard model (schema v1), which the SDK marks deprecated in
// favour of its v2 resources: v1 is what Grafana's import screen, file provisioning and the
// dashboard sidecar's ConfigMaps take on every Grafana version in use, v2 only the newest
// Grafana's dashboards API.
import * as bargauge from '@grafana/grafana-foundation-sdk/bargauge';
import type * as cog from '@grafana/grafana-foundation-sdk/cog';
import * as common from '@grafana/grafana-foundation-sdk/common';
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import * as prometheus from '@grafana/grafana-foundation-sdk/prometheus';
import * as stat from '@grafana/grafana-foundation-sdk/stat';
import * as statetimeline from '@grafana/grafana-foundation-sdk/statetimeline';
import * as table from '@grafana/grafana-foundation-sdk/table';
import * as timeseries from '@grafana/grafana-foundation-sdk/timeseries';
import * as units from '@grafana/grafana-foundation-sdk/units';

// Controller-runtime and client-go names are shared with other operators in the same Prometheus:
// the job variable (listing only jobs that export pvx's own informer metrics) keeps them apart.
const job = 'job=~"$job"';
const volumes = 'namespace=~"$namespace"';
const source: common.DataSourceRef = { type: 'prometheus', uid: '${datasource}' };

/** What every kind of panel builder offers that the shared defaults below set. */
interface PanelBuilder extends cog.Builder<dashboard.Panel> {
  id(id: number): this;
  title(title: string): this;
  description(description: string): this;
  datasource(datasource: common.DataSourceRef): this;
  span(w: number): this;
  height(h: number): this;
  unit(unit: string): this;
}

/** A third of the grid's 24 columns unless a panel asks for more; the dashboard lays panels out left to right. */
function panel<P extends PanelBuilder>(builder: P, title: string, description: string): P {
  return builder.title(title).description(description).datasource(source).span(8).height(8).unit(units.Short);
}

// The SDK's defaults hide the legend and sort tooltips, where Grafana's own (which a panel saved
// without options gets) show the legend and keep the series order: set them as Grafana would.
const legend = () => new common.VizLegendOptionsBuilder().displayMode(common.LegendDisplayMode.List).placement(common.LegendPlacement.Bottom).showLegend(true);
const tooltip = () => new common.VizTooltipOptionsBuilder().mode(common.TooltipDisplayMode.Single).sort(common.SortOrder.None);
/** Stats and bar gauges show each series' latest value (the SDK leaves the reducer empty). */
const latestValue = () => new common.ReduceDataOptionsBuilder().calcs(['lastNotNull']).values(false).fields('');

function graph(title: string, description: string): timeseries.PanelBuilder {
  return panel(new timeseries.PanelBuilder(), title, description)
    .legend(legend())
    .tooltip(tooltip())
    .fillOpacity(10)
    .stacking(new common.StackingConfigBuilder().mode(common.StackingMode.None).group('A'));
}

/** Series that add up to a whole (results, triggers, findings): stacked, so the top line is the total. */
function stackedGraph(title: string, description: string): timeseries.PanelBuilder {
  return graph(title, description).fillOpacity(30).stacking(new common.StackingConfigBuilder().mode(common.StackingMode.Normal).group('A'));
}

function single(title: string, description: string): stat.PanelBuilder {
  return panel(new stat.PanelBuilder(), title, description).reduceOptions(latestValue());
}

function bars(title: string, description: string): bargauge.PanelBuilder {
  return panel(new bargauge.PanelBuilder(), title, description)
    .orientation(common.VizOrientation.Horizontal)
    .displayMode(common.BarGaugeDisplayMode.Gradient)
    .reduceOptions(latestValue());
}

/** One colour whatever the count, for counts that are neither good nor bad by their size. */
const neutral = () => new dashboard.ThresholdsConfigBuilder().mode(dashboard.ThresholdsMode.Absolute).steps([{ value: null, color: 'blue' }]);

function grid(title: string, description: string): table.PanelBuilder {
  return panel(new table.PanelBuilder(), title, description);
}

/** A gauge that encodes a state (leader 1/0, up 1/0), shown as the state's name over time. */
function states(title: string, description: string, names: Record<string, string>): statetimeline.PanelBuilder {
  const options = Object.fromEntries(Object.entries(names).map(([value, text], index) => [value, { text, index }]));
  return panel(new statetimeline.PanelBuilder(), title, description)
    .legend(legend())
    .tooltip(tooltip())
    .mappings([{ type: dashboard.MappingType.ValueToText, options }]);
}

/** A query drawn over the time range; refIds must differ within a panel. */
function overTime(expr: string, legendFormat = '__auto', refId = 'A'): prometheus.DataqueryBuilder {
  return new prometheus.DataqueryBuilder().refId(refId).datasource(source).expr(expr).legendFormat(legendFormat).range();
}

/** Tables, bar gauges and stats show the latest value, not a range. */
function now(expr: string, legendFormat = '__auto'): prometheus.DataqueryBuilder {
  return new prometheus.DataqueryBuilder().refId('A').datasource(source).expr(expr).legendFormat(legendFormat).instant();
}

/** One row per series in a table panel. */
function nowAsTable(expr: string): prometheus.DataqueryBuilder {
  return now(expr).format(prometheus.PromQueryFormat.Table);
}

const quantiles = [0.5, 0.9, 0.99];

function percentiles(metric: string, by: string, selector: string): prometheus.DataqueryBuilder[] {
  return quantiles.map((q, i) =>
    overTime(
      `histogram_quantile(${q}, sum by (${by}, le) (rate(${metric}_bucket{${selector}}[$__rate_interval])))`,
      `p${Math.round(q * 100)} {{${by}}}`,
      String.fromCharCode(65 + i),
    ),
  );
}

const whyCounted = 'what `pvx why pvc/NAME` says for one claim, counted over all claims';

/** The rows, top to bottom; made anew on each call because builders are mutable. */
function rows(): [title: string, panels: PanelBuilder[]][] {
  return [
    [
      'Expansions',
      [
        stackedGraph(
          'Requests finished, by result and change',
          'VolumeExpansionRequests reaching a final phase per second: completed, failed, rejected, dry_run; by what they change: size, class (VolumeAttributesClass) or size+class.',
        )
          .unit(units.OpsPerSecond)
          .withTarget(overTime(`sum by (result, change) (rate(pvx_expansion_requests_total{${job}}[$__rate_interval]))`, '{{result}} ({{change}})')),
        graph('Expansions in flight', 'Requests accepted and not finished (every replica counts them from its cache; the highest is shown).').withTarget(
          overTime(`max(pvx_expansions_in_flight{${job}})`, 'in flight'),
        ),
        single('Expansions failed in the time range', 'VolumeExpansionRequests that ended in phase Failed within the dashboard’s time range.').withTarget(
          now(`sum(increase(pvx_expansion_requests_total{${job}, result="failed"}[$__range]))`),
        ),
        graph(
          'Time spent in each phase (p50, p90, p99)',
          'How long requests stayed in a phase before leaving it (observed when the phase ends); Modifying is a VolumeAttributesClass change after any resize.',
        )
          .unit(units.Seconds)
          .span(24)
          .targets(percentiles('pvx_expansion_phase_duration_seconds', 'phase', job)),
      ],
    ],
    [
      'Volumes and policies',
      [
        bars('Fullest volumes', 'The ten PVCs covered by a policy with the highest used/capacity ratio (latest fresh sample).')
          .unit(units.PercentUnit)
          .withTarget(
            now(`topk(10, max by (namespace, persistentvolumeclaim) (pvx_volume_used_ratio{${volumes}}))`, '{{namespace}}/{{persistentvolumeclaim}}'),
          ),
        bars('Soonest full (forecast)', 'The ten PVCs forecast to fill up first at their current rate of growth.')
          .unit(units.Seconds)
          .withTarget(
            now(
              `bottomk(10, min by (namespace, persistentvolumeclaim) (pvx_volume_time_to_full_seconds{${volumes}}))`,
              '{{namespace}}/{{persistentvolumeclaim}}',
            ),
          ),
        grid('Volumes at their maximum size', 'PVCs a policy wants to grow but that have reached its maxSize.').withTarget(
          nowAsTable(`max by (namespace, persistentvolumeclaim) (pvx_volume_at_max_size{${volumes}}) == 1`),
        ),
        stackedGraph('Policy triggers, by policy and trigger', 'Expansions policies decided on, per evaluation interval, by what triggered them.').withTarget(
          overTime(`sum by (policy, trigger) (increase(pvx_policy_triggers_total{${job}}[$__rate_interval]))`, '{{policy}}: {{trigger}}'),
        ),
        graph('Policy evaluations', 'Evaluation passes per second, by policy.')
          .unit(units.OpsPerSecond)
          .withTarget(overTime(`sum by (policy) (rate(pvx_policy_evaluations_total{${job}}[$__rate_interval]))`, '{{policy}}')),
        graph('Usage source errors', 'Failed reads of volume usage (per node for the kubelet source); policies skip volumes without fresh samples.')
          .unit(units.OpsPerSecond)
          .withTarget(overTime(`sum by (source) (rate(pvx_usage_source_errors_total{${job}}[$__rate_interval]))`, '{{source}}')),
      ],
    ],
    [
      'Why claims are not growing',
      // pvx_claims_held{namespace, gate} is set by the audit pass, which runs on the leader only (a
      // standby runs no controller and exports no series). The claims of a gate are the sum over
      // namespaces; the max per namespace and gate first keeps a handover from counting twice (for a
      // scrape or so, the old leader's last values and the new leader's can both be in range).
      [
        stackedGraph(
          'Claims held, by gate',
          `Claims held at each gate over time: ${whyCounted}. A claim counts once, at the first gate that holds it (storage-class, binding, policy, usage, threshold, cooldown, window, max-size, budget, quota, request, resizer, node-stage). Held is not wrong in itself: a claim with no need to grow yet is held too.`,
        )
          .span(12)
          .thresholds(neutral())
          .withTarget(overTime(`sum by (gate) (max by (namespace, gate) (pvx_claims_held{${job}, ${volumes}}))`, '{{gate}}')),
        bars('Claims held now, by gate', `Claims held at each gate now: ${whyCounted}. The longest bar is the gate most claims wait at.`)
          .span(6)
          .thresholds(neutral())
          .withTarget(now(`sort_desc(sum by (gate) (max by (namespace, gate) (pvx_claims_held{${job}, ${volumes}})))`, '{{gate}}')),
        single('Claims held now', `Claims held now, all gates together: ${whyCounted}.`)
          .span(6)
          .thresholds(neutral())
          .withTarget(now(`sum(max by (namespace, gate) (pvx_claims_held{${job}, ${volumes}}))`)),
      ],
    ],
    [
      'Audit',
      [
        stackedGraph('Audit findings, by rule and severity', 'Current findings of the cluster audit; `pvx audit` lists the objects.')
          .span(12)
          .withTarget(overTime(`max by (rule, severity) (pvx_audit_findings{${job}})`, '{{rule}} ({{severity}})')),
        grid('Audit findings, by namespace', 'Current findings per namespace and severity.')
          .span(12)
          .withTarget(nowAsTable(`max by (namespace, severity) (pvx_audit_namespace_findings{${volumes}}) > 0`)),
        single('Since the last audit pass', 'Seconds since the audit last completed a pass over the cluster.')
          .unit(units.Seconds)
          .withTarget(now(`time() - max(pvx_audit_last_run_timestamp_seconds{${job}})`)),
        graph('Audit passes', 'Audit passes per second.')
          .unit(units.OpsPerSecond)
          .span(16)
          .withTarget(overTime(`sum(rate(pvx_audit_runs_total{${job}}[$__rate_interval]))`, 'passes')),
      ],
    ],
    [
      'Operator',
      [
        states('Leader', 'Which replica holds the leader lease (only the leader reconciles); the others are standbys.', { '1': 'leader', '0': 'standby' })
          .span(12)
          .withTarget(overTime(`max by (instance, name) (leader_election_master_status{${job}})`, '{{instance}} ({{name}})')),
        states('Scrape target up', 'Whether Prometheus reaches each pvx replica.', { '1': 'up', '0': 'down' })
          .span(12)
          .withTarget(overTime(`up{${job}}`, '{{instance}}')),
        graph('Reconciles, by controller and result', 'Reconciles per second: success, requeue, requeue_after, error.')
          .unit(units.OpsPerSecond)
          .withTarget(
            overTime(`sum by (controller, result) (rate(controller_runtime_reconcile_total{${job}}[$__rate_interval]))`, '{{controller}}: {{result}}'),
          ),
        graph('Reconcile errors, by controller', 'Reconciles per second that ended in an error (retried with backoff).')
          .unit(units.OpsPerSecond)
          .withTarget(overTime(`sum by (controller) (rate(controller_runtime_reconcile_errors_total{${job}}[$__rate_interval]))`, '{{controller}}')),
        graph('Reconcile duration (p50, p90, p99)', 'Time per reconcile, by controller.')
          .unit(units.Seconds)
          .targets(percentiles('controller_runtime_reconcile_time_seconds', 'controller', job)),
        graph('Work queue depth', 'Keys waiting in each controller’s work queue.').withTarget(overTime(`sum by (name) (workqueue_depth{${job}})`, '{{name}}')),
        graph('Work queue wait (p99)', 'How long a key waits in the queue before a worker takes it.')
          .unit(units.Seconds)
          .withTarget(
            overTime(`histogram_quantile(0.99, sum by (name, le) (rate(workqueue_queue_duration_seconds_bucket{${job}}[$__rate_interval])))`, '{{name}}'),
          ),
        graph('Work queue processing (p99)', 'How long processing a key takes.')
          .unit(units.Seconds)
          .withTarget(
            overTime(`histogram_quantile(0.99, sum by (name, le) (rate(workqueue_work_duration_seconds_bucket{${job}}[$__rate_interval])))`, '{{name}}'),
          ),
        graph('Work queue adds and retries', 'Keys added per second, and rate-limited retries per second.')
          .unit(units.OpsPerSecond)
          .targets([
            overTime(`sum by (name) (rate(workqueue_adds_total{${job}}[$__rate_interval]))`, 'adds {{name}}'),
            overTime(`sum by (name) (rate(workqueue_retries_total{${job}}[$__rate_interval]))`, 'retries {{name}}', 'B'),
          ]),
        graph('Active workers', 'Workers reconciling right now, by controller.').withTarget(
          overTime(`sum by (controller) (controller_runtime_active_workers{${job}})`, '{{controller}}'),
        ),
      ],
    ],
    [
      'Caches and process',
      [
        graph(
          'Informer relists and watch restarts',
          'Full lists (initial, 410 Gone) and restarted watch streams, by resource and reason; a steady rate means watches keep breaking.',
        ).targets([
          overTime(`sum by (resource, reason) (increase(pvx_informer_relists_total{${job}}[$__rate_interval]))`, 'relist {{resource}} ({{reason}})'),
          overTime(
            `sum by (resource, reason) (increase(pvx_informer_watch_restarts_total{${job}}[$__rate_interval]))`,
            'watch restart {{resource}} ({{reason}})',
            'B',
          ),
        ]),
        graph('Cached objects', 'Objects in each informer cache, and whether it has synced (0 = not yet).').targets([
          overTime(`max by (resource) (pvx_informer_objects{${job}})`, '{{resource}}'),
          overTime(`min by (resource) (pvx_informer_synced{${job}}) == 0`, 'not synced: {{resource}}', 'B'),
        ]),
        graph('Watch events', 'Watch events applied to the caches per second, by resource and type.')
          .unit(units.OpsPerSecond)
          .withTarget(overTime(`sum by (resource, type) (rate(pvx_informer_events_total{${job}}[$__rate_interval]))`, '{{resource}} {{type}}')),
        graph('CPU', 'CPU seconds per second, by replica.')
          .unit(units.PercentUnit)
          .withTarget(overTime(`rate(process_cpu_seconds_total{${job}}[$__rate_interval])`, '{{instance}}')),
        graph('Resident memory', 'Resident set size, by replica.')
          .unit(units.BytesIEC)
          .withTarget(overTime(`process_resident_memory_bytes{${job}}`, '{{instance}}')),
        graph('Event loop lag (p99)', 'Node.js event loop delay: high values delay every reconcile and lease renewal.')
          .unit(units.Seconds)
          .withTarget(overTime(`nodejs_eventloop_lag_p99_seconds{${job}}`, '{{instance}}')),
      ],
    ],
  ];
}

/** A multi-value variable listed from `label_values(…)`, all values selected at first. */
function listVariable(name: string, label: string, query: string): dashboard.QueryVariableBuilder {
  return (
    new dashboard.QueryVariableBuilder(name)
      .label(label)
      .datasource(source)
      // A plain string: Grafana's Prometheus source reads label_values(…) from it, and Grafana's dashboard
      // schema (test/unit/schemas/grafana-dashboard.schema.json) admits an object query only of objects.
      .query(query)
      .definition(query)
      .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
      .multi(true)
      .includeAll(true)
      .current({ selected: true, text: ['All'], value: ['$__all'] })
      .sort(dashboard.VariableSort.AlphabeticalAsc)
  );
}

export function pvxDashboard(): dashboard.Dashboard {
  const builder = new dashboard.DashboardBuilder('pvx')
    .uid('pvx-overview')
    .description('pvx: PersistentVolumeClaim expansions, policies, audit findings and the operator runtime.')
    .tags(['pvx', 'kubernetes', 'storage'])
    .editable()
    .tooltip(dashboard.DashboardCursorSync.Crosshair)
    .refresh('30s')
    .time({ from: 'now-6h', to: 'now' })
    .timezone('browser')
    .withVariable(new dashboard.DatasourceVariableBuilder('datasource').label('Data source').type('prometheus'))
    // Listed from a metric only pvx exports, and "All" is the list itself (not ".*"), so other
    // operators' controller-runtime series never mix in.
    .withVariable(listVariable('job', 'Job', 'label_values(pvx_informer_synced, job)'))
    .withVariable(listVariable('namespace', 'Namespace (volumes)', 'label_values(pvx_volume_used_ratio, namespace)').allValue('.*'));
  // Grafana keeps ids unique within a dashboard (links and "view panel" name them); the builders
  // leave them to the caller. Panels follow their row rather than sit in it: a row that holds its
  // panels is a collapsed one.
  let id = 1;
  for (const [title, panels] of rows()) {
    builder.withRow(new dashboard.RowBuilder(title).id(id++));
    for (const p of panels) builder.withPanel(p.id(id++));
  }
  return builder.build();
}
