import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, writeEndlessly } from '../k8s/testing/peers.ts';
import { PrometheusSource } from './prometheus.ts';

// A stand-in Prometheus HTTP API on loopback, answering instant queries from a table.
let server: Server;
let base = '';
const queries: string[] = [];
const vector = (value: number, at = 1795900000) => [
  { metric: { namespace: 'db', persistentvolumeclaim: 'data-0', cluster: 'prod' }, value: [at, String(value)] },
];
const answers: Record<string, unknown> = {};
/** A hostile Prometheus: an answer that never ends (writeEndlessly bounds it for the test). */
let endless = false;
let endlessClosed = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams.get('query') ?? '';
    queries.push(q);
    if (endless) {
      const state = writeEndlessly(res, '{"status":"success","data":{"resultType":"vector","result":[', 'flood');
      return void res.on('close', () => state.closed && endlessClosed++);
    }
    // Every query asks for one series per claim; what it aggregates is inside.
    const inner = /^max by \(namespace, persistentvolumeclaim\) \((.*)\)$/.exec(q)?.[1] ?? '';
    const metric = /^(?:timestamp\()?(\w+)/.exec(inner)?.[1] ?? '';
    const result = inner.startsWith('timestamp(')
      ? [{ metric: { namespace: 'db', persistentvolumeclaim: 'data-0' }, value: [1795900000, '1795899990'] }]
      : answers[metric];
    if (result === 'error') {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'error', error: 'parse error' }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result: result ?? [] } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('PrometheusSource', () => {
  it('joins the kubelet volume metrics per PVC, with the scrape time and the extra matchers', async () => {
    Object.assign(answers, {
      kubelet_volume_stats_used_bytes: vector(800),
      kubelet_volume_stats_capacity_bytes: vector(1000),
      kubelet_volume_stats_inodes_used: vector(5),
      kubelet_volume_stats_inodes: vector(100),
    });
    const report = await new PrometheusSource({ url: `${base}/`, matchers: 'cluster="prod"' }).collect(new Date('2026-11-29T12:00:00Z'));
    expect(report.errors).toEqual([]);
    expect(report.samples.get('db/data-0')).toEqual({ at: new Date(1795899990 * 1000), usedBytes: 800n, capacityBytes: 1000n, inodesUsed: 5, inodes: 100 });
    expect(queries).toContain('max by (namespace, persistentvolumeclaim) (kubelet_volume_stats_used_bytes{persistentvolumeclaim!="",cluster="prod"})');
    expect(queries).toContain(
      'max by (namespace, persistentvolumeclaim) (timestamp(kubelet_volume_stats_used_bytes{persistentvolumeclaim!="",cluster="prod"}))',
    );
  });

  it('asks for no inode counts when none is wanted: three queries, samples without inodes', async () => {
    Object.assign(answers, {
      kubelet_volume_stats_used_bytes: vector(800),
      kubelet_volume_stats_capacity_bytes: vector(1000),
      kubelet_volume_stats_inodes_used: vector(5),
      kubelet_volume_stats_inodes: vector(100),
    });
    const from = queries.length;
    const report = await new PrometheusSource({ url: base }).collect(new Date('2026-11-29T12:00:00Z'), { inodes: false });
    expect(report.samples.get('db/data-0')).toEqual({ at: new Date(1795899990 * 1000), usedBytes: 800n, capacityBytes: 1000n });
    expect(queries.slice(from)).toHaveLength(3);
    expect(queries.slice(from).some((q) => q.includes('inodes'))).toBe(false);
  });

  it('reports a failing Prometheus as an error, with no samples (unknown, not empty)', async () => {
    answers.kubelet_volume_stats_capacity_bytes = 'error';
    const report = await new PrometheusSource({ url: base }).collect(new Date());
    expect(report.samples.size).toBe(0);
    expect(report.errors[0]?.message).toMatch(/HTTP 400: parse error/);
  });

  it('refuses an answer that never ends once it passes maxBodyBytes, and closes the connections', async () => {
    endless = true;
    try {
      const report = await new PrometheusSource({ url: base, maxBodyBytes: 1024 * 1024 }).collect(new Date());
      expect(report.samples.size).toBe(0);
      expect(report.errors[0]?.message).toMatch(/^Prometheus query .*: the answer is larger than 1 MiB; not read further$/);
      // All five queries were cut, not left streaming.
      await eventually(() => endlessClosed === 5);
    } finally {
      endless = false;
    }
  });

  it('rejects a URL that is not one', () => {
    expect(() => new PrometheusSource({ url: 'prometheus:9090/x y' })).toThrow(/is not a URL|must be http/);
  });
});
