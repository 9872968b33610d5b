// A real Prometheus (Debian's package) scraping a running `pvx run` on loopback as the shipped
// ServiceMonitor does — HTTPS, pvx's self-signed certificate unverified, a bearer token of a
// ServiceAccount bound to pvx-metrics-reader — with the alert rules of
// config/prometheus/alerts.yaml loaded: the target is up, pvx's series arrive with the
// values the operator's state implies, every alert rule loads and evaluates, and the operator-down
// alert goes pending once pvx stops.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { resources } from '../../src/k8s/resources.ts';
import { auditRules } from '../../src/policies/audit/rules.ts';
import { core, createNamespace, deleteNamespace, waitFor } from './support/kube.ts';
import { startPrometheus, stopPrometheus, type PrometheusServer } from './support/prometheus.ts';
import { httpsGet, startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';
import { scrapeToken } from './support/scraper.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..');
// The deployed artifact, not its source: what the Prometheus Operator would load.
const prometheusRule = parse(readFileSync(join(repoRoot, 'config', 'prometheus', 'alerts.yaml'), 'utf8')) as {
  spec: { groups: { name: string; rules: { alert: string }[] }[] };
};
const job = 'pvx';
// pvx's default lease name, which the PvxNoLeader rule selects.
const leaseName = 'pvx-leader';

interface RuleStatus {
  name: string;
  health: string;
  lastError?: string;
  lastEvaluation: string;
}

let prometheus: PrometheusServer | undefined;
let pvx: PvxProcess | undefined;
let ns: string | undefined;

async function instantValue(promql: string): Promise<number | undefined> {
  const result = (await prometheus?.query(promql)) ?? [];
  if (result.length > 1) throw new Error(`${promql}: ${result.length} series, expected one`);
  return result[0] ? Number(result[0].value[1]) : undefined;
}

describe('Prometheus scraping pvx with the alert rules loaded', () => {
  beforeAll(async () => {
    ns = await createNamespace('pvx-e2e-obs');
    // The lease in the test's own namespace: no other pvx of the suite competes for it.
    pvx = startPvx('obs', ['--namespace', ns, '--leader-election-namespace', ns, '--leader-election-id', leaseName, '--audit-interval', '2s']);
    await waitReady(pvx);
    const target = `127.0.0.1:${pvx.port}`;
    const token = await scrapeToken();
    prometheus = await startPrometheus(
      'pvx',
      (dir) => ({
        global: { scrape_interval: '2s', evaluation_interval: '2s' },
        rule_files: [join(dir, 'pvx-rules.yaml')],
        scrape_configs: [
          {
            job_name: job,
            honor_labels: true,
            scheme: 'https',
            tls_config: { insecure_skip_verify: true },
            authorization: { type: 'Bearer', credentials: token },
            static_configs: [{ targets: [target] }],
          },
        ],
      }),
      { 'pvx-rules.yaml': stringify(prometheusRule.spec) },
    );
  });

  afterAll(async () => {
    if (pvx) await stopPvx(pvx);
    if (prometheus) await stopPrometheus(prometheus);
    if (ns) await deleteNamespace(ns);
  });

  it('scrapes pvx: the target is up', async () => {
    type Targets = { activeTargets: { labels: Record<string, string>; health: string; lastError: string }[] };
    let targets: Targets['activeTargets'] = [];
    await waitFor('the pvx target to be scraped', 30_000, async () => {
      targets = (await prometheus?.api<Targets>('/api/v1/targets?state=active'))?.activeTargets.filter((t) => t.labels.job === job) ?? [];
      return targets.length === 1 && targets[0]?.health !== 'unknown';
    });
    expect(targets.map((t) => ({ instance: t.labels.instance, health: t.health, lastError: t.lastError }))).toEqual([
      { instance: `127.0.0.1:${pvx?.port}`, health: 'up', lastError: '' },
    ]);
    expect(await instantValue(`up{job="${job}"}`)).toBe(1);
  });

  it('refuses a scrape without a token (401) and one whose user is not bound to pvx-metrics-reader (403), as the API server reviews them', async () => {
    const port = pvx?.port as number;
    expect(await httpsGet(port, '/metrics')).toMatchObject({ status: 401, body: expect.stringContaining('no bearer token') });
    expect(await httpsGet(port, '/metrics', 'not-a-token')).toMatchObject({ status: 401 });
    const unbound = await core.createNamespacedServiceAccountToken({
      namespace: ns as string,
      name: 'default',
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
    expect(await httpsGet(port, '/metrics', unbound.status?.token)).toMatchObject({
      status: 403,
      body: expect.stringContaining(`system:serviceaccount:${ns}:default`),
    });
    expect((await httpsGet(port, '/metrics', await scrapeToken())).status).toBe(200);
  });

  it("has pvx's series: this replica leads, and every cache has synced", async () => {
    await waitFor(
      'leader_election_master_status to be 1 in Prometheus',
      60_000,
      async () => (await instantValue(`leader_election_master_status{job="${job}",name="${leaseName}"}`)) === 1,
    );
    const synced = (await prometheus?.query(`pvx_informer_synced{job="${job}"}`)) ?? [];
    expect(synced.map((s) => s.metric.resource).sort()).toEqual(expect.arrayContaining([resources.persistentVolumeClaims.resource, resources.pods.resource]));
    expect(synced.filter((s) => s.value[1] !== '1').map((s) => s.metric.resource)).toEqual([]);
    // Nothing is being expanded in the test's empty namespace.
    expect(await instantValue(`pvx_expansions_in_flight{job="${job}"}`)).toBe(0);
  });

  it("has the audit's series: a finding count for every audit rule, and a recent pass", async () => {
    await waitFor('pvx_audit_findings in Prometheus', 60_000, async () => ((await prometheus?.query(`pvx_audit_findings{job="${job}"}`)) ?? []).length > 0);
    const findings = (await prometheus?.query(`pvx_audit_findings{job="${job}"}`)) ?? [];
    expect(findings.map((f) => `${f.metric.rule}/${f.metric.severity}`).sort()).toEqual(auditRules.map((r) => `${r.id}/${r.severity}`).sort());
    const sinceLastPass = await instantValue(`time() - pvx_audit_last_run_timestamp_seconds{job="${job}"}`);
    expect(sinceLastPass).toBeLessThan(60);
  });

  it('loads and evaluates every alert group and rule of config/prometheus/alerts.yaml', async () => {
    type Rules = { groups: { name: string; rules: RuleStatus[] }[] };
    let groups: Rules['groups'] = [];
    // Evaluated at least once: lastEvaluation is Go's zero time until then.
    await waitFor('every rule to be evaluated', 30_000, async () => {
      groups = (await prometheus?.api<Rules>('/api/v1/rules?type=alert'))?.groups ?? [];
      return groups.length > 0 && groups.every((g) => g.rules.every((r) => !r.lastEvaluation.startsWith('0001-')));
    });
    const loaded = Object.fromEntries(groups.map((g) => [g.name, g.rules.map((r) => r.name)]));
    expect(loaded).toEqual(Object.fromEntries(prometheusRule.spec.groups.map((g) => [g.name, g.rules.map((r) => r.alert)])));
    const unhealthy = groups.flatMap((g) => g.rules.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.health} ${r.lastError ?? ''}`));
    expect(unhealthy).toEqual([]);
  });

  it('raises no operator alert while pvx runs and leads, and PvxDown goes pending once it stops', async () => {
    type Alerts = { alerts: { labels: Record<string, string>; state: string }[] };
    const operatorAlerts = async () =>
      ((await prometheus?.api<Alerts>('/api/v1/alerts'))?.alerts ?? []).filter((a) =>
        ['PvxDown', 'PvxAbsent', 'PvxNoLeader', 'PvxReconcileErrors'].includes(a.labels.alertname ?? ''),
      );
    // PvxAbsent may be pending from an evaluation before the first scrape: it clears at the next one.
    let active: Alerts['alerts'] = [];
    await waitFor('no operator alert while pvx runs', 20_000, async () => (active = await operatorAlerts()).length === 0).catch((err: Error) => {
      throw new Error(`${err.message}; active: ${JSON.stringify(active)}`);
    });

    if (pvx) await stopPvx(pvx);
    let pvxDown: Alerts['alerts'] = [];
    await waitFor('PvxDown to go pending', 30_000, async () => {
      pvxDown = (await operatorAlerts()).filter((a) => a.labels.alertname === 'PvxDown');
      return pvxDown.length > 0;
    });
    // Pending, not firing: the rule waits 5 minutes before paging.
    expect(pvxDown.map((a) => ({ job: a.labels.job, instance: a.labels.instance, severity: a.labels.severity, state: a.state }))).toEqual([
      { job, instance: `127.0.0.1:${pvx?.port}`, severity: 'critical', state: 'pending' },
    ]);
  });
});
