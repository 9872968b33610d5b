// Where a policy pass over many Bound claims spends its time, in-process and on loopback only, so
// that each part is measured alone: reading usage from Prometheus (pvx's side: the HTTP answers,
// their JSON, the samples), the whole pass of the policy evaluator with that source (informers on
// the in-memory client, every claim selected by one policy, none over its threshold), and the same
// pass with the usage handed over in memory (the decisions alone).
//
//   node --expose-gc bench/policy-pass.ts [--claims 10000] [--runs 5] [--prometheus URL]
//       [--policies 1] [--windows 0] [--used-percent 50]
//
// --policies N puts N policies in the claims' namespace, each selecting every claim (one governs
// each claim, the others see it too: the costliest overlap); --windows M gives each M maintenance
// windows in a named time zone, all closed at the time of the run; --used-percent sets what the
// stand-in reports for every claim: over the policies' trigger (90 %, one measurement), each claim
// is one the pass must hold for its windows rather than one it passes over.
//
// The stand-in Prometheus answers each instant query with one series per claim, labelled as
// Prometheus labels a kubelet's `kubelet_volume_stats_*` (namespace, persistentvolumeclaim,
// instance, job, node), and counts the queries and the bytes it sent. With --prometheus the reads go
// to that server instead (which must hold the claims' series: bench/peers.ts's exporter, e.g.), to
// see what Prometheus itself adds.
import type { V1Namespace, V1PersistentVolumeClaim, V1StatefulSet, V1StorageClass, KubernetesObject } from '@kubernetes/client-node';
import { createServer } from 'node:http';
import { cpus, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pino from 'pino';
import type { ClusterVolumeExpansionPolicy } from '../src/crds/cluster-volume-expansion-policy.ts';
import type { VolumeExpansionPolicy } from '../src/crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../src/crds/volume-expansion-request.ts';
import { Informer } from '../src/k8s/informer.ts';
import { clusterVolumeExpansionPolicies, namespaces, resources, volumeExpansionPolicies, volumeExpansionRequests } from '../src/k8s/resources.ts';
import { FakeKubeClient } from '../src/k8s/testing/fake-client.ts';
import { PolicyEvaluator } from '../src/operator/reconcilers/expansion-policy.ts';
import { PrometheusSource } from '../src/usage/prometheus.ts';
import { SampleStore } from '../src/usage/samples.ts';
import type { UsageReport, UsageSource } from '../src/usage/source.ts';

const { values } = parseArgs({
  options: {
    claims: { type: 'string', default: '10000' },
    runs: { type: 'string', default: '5' },
    prometheus: { type: 'string' },
    policies: { type: 'string', default: '1' },
    windows: { type: 'string', default: '0' },
    'used-percent': { type: 'string', default: '50' },
  },
});
const count = Number(values.claims);
const runs = Number(values.runs);
const policyCount = Number(values.policies);
const windowCount = Number(values.windows);
const usedPercent = Number(values['used-percent']);
if (!(policyCount >= 1 && windowCount >= 0 && windowCount <= 16 && usedPercent >= 0 && usedPercent <= 100)) {
  throw new Error('--policies must be at least 1, --windows 0 to 16 (the CRD allows 16), --used-percent 0 to 100');
}
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc, so heap figures are measured after a collection');

const namespace = 'pvx-bench-policy';
const capacity = 1024 ** 3;
const names = Array.from({ length: count }, (_, i) => `claim-${String(i).padStart(6, '0')}`);
const logger = pino({ level: 'silent' });

/** A stand-in Prometheus: every instant query answered with one series per claim at --used-percent used. */
function standIn(): Promise<{ url: string; queries: () => number; bytes: () => number; close: () => void }> {
  let queries = 0;
  let bytes = 0;
  const server = createServer((req, res) => {
    const query = new URL(req.url ?? '/', 'http://x').searchParams.get('query') ?? '';
    queries++;
    const metric = /kubelet_volume_stats_\w+/.exec(query)?.[0] ?? '';
    const timestamp = query.includes('timestamp(');
    // An aggregation by the claim keeps only its labels, as Prometheus answers it.
    const perClaim = query.startsWith('max by (namespace, persistentvolumeclaim) (');
    const at = Date.now() / 1000;
    const value = metric.endsWith('used_bytes')
      ? Math.round((capacity * usedPercent) / 100)
      : metric.endsWith('capacity_bytes')
        ? capacity
        : metric.endsWith('inodes_used')
          ? 100
          : 65536;
    const result = names.map((n) => ({
      metric: perClaim
        ? { namespace, persistentvolumeclaim: n }
        : { ...(timestamp ? {} : { __name__: metric }), instance: '10.0.0.1:10250', job: 'kubelet', node: 'node-1', namespace, persistentvolumeclaim: n },
      value: [at, String(timestamp ? at : value)],
    }));
    const body = JSON.stringify({ status: 'success', data: { resultType: 'vector', result } });
    bytes += Buffer.byteLength(body);
    res.setHeader('content-type', 'application/json');
    res.end(body);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      resolve({ url: `http://127.0.0.1:${port}`, queries: () => queries, bytes: () => bytes, close: () => server.close() });
    }),
  );
}

function cluster(): FakeKubeClient {
  const fake = new FakeKubeClient();
  fake.create(namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } } as V1Namespace);
  fake.create(resources.storageClasses, {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'static' },
    provisioner: 'static.pvx.bench',
    allowVolumeExpansion: true,
  } as V1StorageClass);
  for (const name of names)
    fake.create(resources.persistentVolumeClaims, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name, namespace, labels: { 'pvx-bench/policy': 'yes' } },
      spec: { storageClassName: 'static', accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeName: `pv-${name}` },
      status: { phase: 'Bound', capacity: { storage: '1Gi' } },
    } as V1PersistentVolumeClaim);
  for (let p = 0; p < policyCount; p++)
    fake.create(volumeExpansionPolicies, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionPolicy',
      metadata: { name: `bench-${p}`, namespace },
      spec: {
        selector: { matchLabels: { 'pvx-bench/policy': 'yes' } },
        // One measurement over the trigger fires: every claim over it reaches the windows in the
        // bench's first pass, without waiting for a second measurement a refresh period later.
        triggers: { usedPercent: 90, sustainedSamples: 1 },
        maxSize: '10Gi',
        ...(windowCount > 0 ? { windows: closedWindows() } : {}),
      },
    } as VolumeExpansionPolicy);
  return fake;
}

/**
 * --windows windows, each an hour a week in Europe/Berlin, all on the day of the week two days
 * from today there: closed at any time of the run, so every claim over its trigger is held.
 */
function closedWindows(): NonNullable<VolumeExpansionPolicy['spec']['windows']> {
  const berlinDay = new Date(new Date().toLocaleString('en-US', { timeZone: 'Europe/Berlin' })).getDay();
  const day = (berlinDay + 2) % 7;
  return Array.from({ length: windowCount }, (_, w) => ({ schedule: `0 ${w} * * ${day}`, duration: '1h', timeZone: 'Europe/Berlin' }));
}

async function evaluator(fake: FakeKubeClient, source: UsageSource): Promise<{ e: PolicyEvaluator; stop: () => Promise<void> }> {
  const informers: Informer[] = [];
  const informer = <T extends KubernetesObject>(type: Parameters<typeof fake.create>[0]): Informer<T> => {
    const i = new Informer<T>({ type, client: fake, logger });
    informers.push(i as unknown as Informer);
    i.start();
    return i;
  };
  const e = new PolicyEvaluator({
    client: fake,
    policies: informer<VolumeExpansionPolicy>(volumeExpansionPolicies),
    requests: informer<VolumeExpansionRequest>(volumeExpansionRequests),
    pvcs: informer<V1PersistentVolumeClaim>(resources.persistentVolumeClaims),
    storageClasses: informer<V1StorageClass>(resources.storageClasses),
    statefulSets: informer<V1StatefulSet>(resources.statefulSets),
    clusterPolicies: informer<ClusterVolumeExpansionPolicy>(clusterVolumeExpansionPolicies),
    namespaces: informer<V1Namespace>(namespaces),
    source,
    samples: new SampleStore(),
    logger,
    canWrite: () => true,
    intervalMs: 30_000,
  });
  await Promise.all(informers.map((i) => i.waitForSync()));
  return { e, stop: async () => void (await Promise.all(informers.map((i) => i.stop()))) };
}

/** Median and range of `runs` timings of fn, in ms, with a collection before each. */
async function timed(fn: () => Promise<unknown>): Promise<{ median: number; min: number; max: number }> {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    gc?.();
    const t = performance.now();
    await fn();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(ms.length / 2)] as number, min: ms[0] as number, max: ms[ms.length - 1] as number };
}

const fmt = (t: { median: number; min: number; max: number }) =>
  `${(t.median / 1000).toFixed(2)} s (${(t.min / 1000).toFixed(2)}–${(t.max / 1000).toFixed(2)}); ${((t.median * 1000) / count).toFixed(1)} µs a claim`;

const server = values.prometheus ? undefined : await standIn();
const url = values.prometheus ?? (server?.url as string);
const prometheus = new PrometheusSource({ url, timeoutMs: 120_000 });

// The usage read alone, as a pass starts it.
let report: UsageReport = { samples: new Map(), errors: [] };
const read = await timed(async () => {
  report = await prometheus.collect(new Date());
});
if (report.errors.length > 0) throw new Error(`reading usage: ${report.errors.map((e) => e.message).join('; ')}`);
if (report.samples.size !== count) console.warn(`the source answered ${report.samples.size} claims, not ${count}`);
const perRead = server ? { queries: server.queries() / runs, bytes: server.bytes() / runs } : undefined;

// Whole passes: usage from Prometheus, then from memory (the same samples, re-stamped now).
const fake = cluster();
const withPrometheus = await evaluator(fake, prometheus);
// The first pass takes the claims (each one new to the policy); those after it are the steady state.
const firstStarted = performance.now();
await withPrometheus.e.reconcile();
const first = performance.now() - firstStarted;
// What the first pass decided, to show what was measured: with claims over the trigger, requests
// made (no windows) or none (every claim held for its closed windows).
const madeRequests = (await fake.list(volumeExpansionRequests, {})).items.length;
const policyStatus = ((await fake.list(volumeExpansionPolicies, {})).items[0] as VolumeExpansionPolicy | undefined)?.status;
const pass = await timed(() => withPrometheus.e.reconcile());
await withPrometheus.stop();
const inMemory: UsageSource = {
  name: 'memory',
  collect: async (now) => ({ samples: new Map([...report.samples].map(([k, s]) => [k, { ...s, at: now }])), errors: [] }),
};
const memoryFake = cluster();
const withMemory = await evaluator(memoryFake, inMemory);
await withMemory.e.reconcile();
const decide = await timed(() => withMemory.e.reconcile());
gc();
const heap = process.memoryUsage();
await withMemory.stop();
server?.close();

console.log(
  `${cpus().length} × ${cpus()[0]?.model ?? '?'}, ${Math.round(totalmem() / 2 ** 20)} MiB; Node ${process.version}; ${count} Bound claims at ${usedPercent} % used, ${policyCount} ${policyCount === 1 ? 'policy' : 'policies'} over all of them with ${windowCount} closed windows each; median of ${runs} (range)`,
);
console.log(`| | time |`);
console.log(`|---|---|`);
console.log(
  `| usage read (${values.prometheus ? url : 'stand-in'}${perRead ? `: ${perRead.queries} queries, ${(perRead.bytes / 2 ** 20).toFixed(1)} MiB of JSON` : ''}) | ${fmt(read)} |`,
);
console.log(`| the first policy pass, usage from it | ${(first / 1000).toFixed(2)} s |`);
console.log(`| a policy pass after it, usage from it | ${fmt(pass)} |`);
console.log(`| a policy pass, usage in memory (the decisions and the status) | ${fmt(decide)} |`);
const held = (policyStatus?.volumes ?? []).map((v) => v.reason ?? v.decision);
console.log(
  `the first pass made ${madeRequests} requests; the first policy's status lists ${held.length} claims (${[...new Set(held)].join(', ') || 'none'}), ${policyStatus?.volumesOmitted ?? 0} more omitted`,
);
console.log(`heap after: used ${Math.round(heap.heapUsed / 2 ** 20)} MiB, RSS ${Math.round(heap.rss / 2 ** 20)} MiB`);
