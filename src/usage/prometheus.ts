// Usage from Prometheus: the kubelet's own volume metrics (kubelet_volume_stats_*), as scraped by
// the user's Prometheus. Extra label matchers pick one cluster out of a shared Prometheus; the
// samples carry the scrape time (PromQL timestamp()), so a series that stopped updating is not
// read as current. An answer is read up to maxBodyBytes, within the query's timeout: a Prometheus
// (or whatever answers at its URL) that streams without end costs bounded memory and time.
import type { UsageSample } from '../policies/autoscale/sampling.ts';
import { readBounded } from './bounded-body.ts';
import type { UsageReport, UsageSource, UsageWanted } from './source.ts';

export interface PrometheusSourceOptions {
  /** Base URL, e.g. http://prometheus.monitoring:9090 */
  url: string;
  /** Extra matchers added to every selector, e.g. `cluster="prod"`. */
  matchers?: string;
  /** Per-query timeout, the whole answer read. Default 10 s. */
  timeoutMs?: number;
  /** An answer whose body passes this many bytes is not read further. Default 32 MiB (about 300,000 claims' series). */
  maxBodyBytes?: number;
  fetch?: typeof fetch;
}

interface VectorResult {
  metric: Record<string, string>;
  value: [number, string];
}

const metricNames = {
  used: 'kubelet_volume_stats_used_bytes',
  capacity: 'kubelet_volume_stats_capacity_bytes',
  inodesUsed: 'kubelet_volume_stats_inodes_used',
  inodes: 'kubelet_volume_stats_inodes',
} as const;

export class PrometheusSource implements UsageSource {
  readonly name = 'prometheus';
  /**
   * timestamp() is when Prometheus scraped the kubelet, which serves its latest measurement at
   * every scrape: the same measurement comes back with newer times until the kubelet measures again.
   */
  readonly sampleTimes = 'scrape';
  private readonly o: Required<Omit<PrometheusSourceOptions, 'matchers'>> & { matchers: string };

  constructor(opts: PrometheusSourceOptions) {
    let url: URL;
    try {
      url = new URL(opts.url);
    } catch {
      throw new TypeError(`Prometheus URL "${opts.url}" is not a URL (e.g. http://prometheus:9090)`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`Prometheus URL "${opts.url}" must be http or https`);
    this.o = {
      timeoutMs: 10_000,
      maxBodyBytes: 32 * 1024 * 1024,
      fetch: globalThis.fetch,
      ...opts,
      url: opts.url.replace(/\/+$/, ''),
      matchers: opts.matchers?.trim() ?? '',
    };
  }

  /**
   * One metric's series, one per claim, labelled by the claim alone: Prometheus adds the scrape's own
   * labels (instance, job, node, and whatever the user's relabelling keeps), which at 10,000 claims
   * are most of an answer's bytes and of the time pvx spends reading it. `max` keeps one value for a
   * claim two scrapes report (the same kubelet scraped by two jobs).
   */
  private perClaim(expression: string): string {
    return `max by (namespace, persistentvolumeclaim) (${expression})`;
  }

  private selector(metric: string): string {
    return `${metric}{persistentvolumeclaim!=""${this.o.matchers ? `,${this.o.matchers}` : ''}}`;
  }

  private async query(promql: string): Promise<VectorResult[]> {
    const res = await this.o.fetch(`${this.o.url}/api/v1/query?query=${encodeURIComponent(promql)}`, { signal: AbortSignal.timeout(this.o.timeoutMs) });
    let text: string;
    try {
      text = res.body ? await readBounded(res.body, this.o.maxBodyBytes) : '';
    } catch (err) {
      throw new Error(`Prometheus query ${promql}: ${(err as Error).message}`, { cause: err });
    }
    const body = parseJson(text) as { status?: string; error?: string; data?: { resultType?: string; result?: VectorResult[] } };
    if (!res.ok || body.status !== 'success') throw new Error(`Prometheus query ${promql}: HTTP ${res.status}${body.error ? `: ${body.error}` : ''}`);
    if (body.data?.resultType !== 'vector') throw new Error(`Prometheus query ${promql}: expected a vector, got ${body.data?.resultType}`);
    return body.data.result ?? [];
  }

  /**
   * Every claim's latest sample: five instant queries, each one series per claim — three without
   * inodes when they are not wanted (two of five answers, each as large as the others, that no
   * decision reads unless a policy has an inode trigger).
   */
  async collect(now: Date, wanted: UsageWanted = {}): Promise<UsageReport> {
    const report: UsageReport = { samples: new Map(), errors: [] };
    const key = (m: Record<string, string>) => `${m.namespace}/${m.persistentvolumeclaim}`;
    const byKey = async (promql: string) => new Map((await this.query(promql)).map((r) => [key(r.metric), Number(r.value[1])]));
    const none = async () => new Map<string, number>();
    const withInodes = wanted.inodes !== false;
    try {
      const [used, scrapedAt, capacity, inodesUsed, inodes] = await Promise.all([
        byKey(this.perClaim(this.selector(metricNames.used))),
        byKey(this.perClaim(`timestamp(${this.selector(metricNames.used)})`)),
        byKey(this.perClaim(this.selector(metricNames.capacity))),
        withInodes ? byKey(this.perClaim(this.selector(metricNames.inodesUsed))) : none(),
        withInodes ? byKey(this.perClaim(this.selector(metricNames.inodes))) : none(),
      ]);
      for (const [k, u] of used) {
        const cap = capacity.get(k);
        const at = scrapedAt.get(k);
        if (cap === undefined || at === undefined || !Number.isFinite(u) || !Number.isFinite(cap)) continue;
        const sample: UsageSample = {
          at: new Date(at * 1000),
          usedBytes: BigInt(Math.round(u)),
          capacityBytes: BigInt(Math.round(cap)),
          inodesUsed: inodesUsed.get(k),
          inodes: inodes.get(k),
        };
        if (sample.at.getTime() > now.getTime() + 60_000) continue; // a clock far ahead: not trusted
        report.samples.set(k, sample);
      }
    } catch (err) {
      report.errors.push({ target: this.o.url, message: err instanceof Error ? err.message : String(err) });
    }
    return report;
  }
}

/** The answer's JSON, or {} for anything else (the status check then reports the HTTP status). */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) ?? {};
  } catch {
    return {};
  }
}
