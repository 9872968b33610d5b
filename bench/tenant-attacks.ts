// What a namespace editor, or anyone who reaches pvx's ports, could cost pvx for everyone: each attack
// run against a checkout's code in a child process of its own, so its time and memory are its own.
// Everything stays in this machine's processes and on 127.0.0.1; every attack is bounded in count.
//
//   replicas     a StatefulSet of --replicas replicas (a namespace editor's spec.replicas) asked what
//                a request over it would grow: the claim names pvx builds for it. Peak RSS and time.
//
//   windows      one policy pass over --policies policies of --windows maintenance windows each in a
//                tenant's namespace, all selecting its --claims claims, beside another namespace's one
//                policy and --other-claims claims (whose decisions the pass must still make). Time of
//                each of --passes passes, the other namespace's first decision, peak RSS. With
//                --selecting none each policy's selector names a label no claim has: it selects none.
//
//   connections  pvx's health (plain HTTP) and metrics (HTTPS) endpoints, served by the child; the
//                parent opens --connections connections to each from 127.0.0.2 and holds them without
//                a byte sent, then asks /healthz and makes a TLS handshake from 127.0.0.3. The child's
//                RSS before and while held, how many connections it kept.
//
//   node bench/tenant-attacks.ts replicas|windows|connections [--code DIR] [options]
//
// --code DIR measures another checkout (DIR/src), to compare before and after side by side, e.g.:
//   mkdir /tmp/before && git archive 1262167 src | tar -x -C /tmp/before && ln -s "$PWD/node_modules" /tmp/before/
//   node bench/tenant-attacks.ts windows --code /tmp/before
import { execFile } from 'node:child_process';
import type { V1PersistentVolumeClaim, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import { connect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { VolumeExpansionPolicy } from '../src/crds/volume-expansion-policy.ts';

const repoRoot = resolve(import.meta.dirname, '..');
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    code: { type: 'string', default: repoRoot },
    child: { type: 'boolean', default: false },
    replicas: { type: 'string', default: '20000000' },
    policies: { type: 'string', default: '4000' },
    windows: { type: 'string', default: '16' },
    claims: { type: 'string', default: '10' },
    'other-claims': { type: 'string', default: '1' },
    selecting: { type: 'string', default: 'all' },
    passes: { type: 'string', default: '2' },
    connections: { type: 'string', default: '12000' },
    'limit-s': { type: 'string', default: '600' },
  },
});
const attack = positionals[0] ?? '';
const code = resolve(values.code);
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
/** Peak RSS of this process so far (resourceUsage reports KiB). */
const peakRss = () => process.resourceUsage().maxRSS * 1024;

// --- the attacks, each in the child --------------------------------------------------------------

async function replicas(): Promise<Record<string, string>> {
  const { replicaClaimNames } = (await import(join(code, 'src/policies/claim/statefulset.ts'))) as typeof import('../src/policies/claim/statefulset.ts');
  const sts: V1StatefulSet = { metadata: { name: 'web', namespace: 'tenant' }, spec: { replicas: Number(values.replicas) } as V1StatefulSet['spec'] };
  const before = peakRss();
  const started = performance.now();
  let names: string[] | undefined;
  try {
    names = replicaClaimNames(sts, 'data');
  } catch (err) {
    return {
      outcome: `threw: ${(err as Error).message}`,
      ms: (performance.now() - started).toFixed(0),
      peakRss: mib(peakRss()),
      grew: mib(peakRss() - before),
    };
  }
  return {
    outcome: names ? `${names.length} claim names built` : 'refused before building any (more replicas than one request grows)',
    ms: (performance.now() - started).toFixed(0),
    peakRss: mib(peakRss()),
    grew: mib(peakRss() - before),
  };
}

function windowedPolicies(count: number, windows: number): VolumeExpansionPolicy[] {
  const schedules = Array.from({ length: windows }, (_, i) => `${i % 60} ${i % 24} * * ${i % 7}`);
  return Array.from({ length: count }, (_, i) => ({
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionPolicy',
    metadata: { name: `windowed-${i}`, namespace: 'tenant', uid: `uid-${i}`, creationTimestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i % 60)) },
    spec: {
      triggers: { usedPercent: 80 },
      windows: schedules.map((schedule) => ({ schedule, duration: '1h', timeZone: 'Europe/Berlin' })),
      ...(values.selecting === 'none' ? { selector: { matchLabels: { app: `none-${i}` } } } : {}),
    },
  }));
}

const claim = (namespace: string, name: string): V1PersistentVolumeClaim => ({
  metadata: { name, namespace, uid: `uid-${namespace}-${name}` },
  spec: { storageClassName: 'fast', resources: { requests: { storage: '10Gi' } } },
  status: { phase: 'Bound', capacity: { storage: '10Gi' } },
});

async function windows(): Promise<Record<string, string>> {
  const { policyPass } = (await import(join(code, 'src/policies/autoscale/policy-pass.ts'))) as typeof import('../src/policies/autoscale/policy-pass.ts');
  const { selectionLookups } = (await import(join(code, 'src/policies/autoscale/selection.ts'))) as typeof import('../src/policies/autoscale/selection.ts');
  const other: VolumeExpansionPolicy = {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionPolicy',
    metadata: { name: 'grow', namespace: 'other', uid: 'uid-other' },
    spec: { triggers: { usedPercent: 80, sustainedSamples: 1 } },
  };
  const policies = [...windowedPolicies(Number(values.policies), Number(values.windows)), other];
  const claims = [
    ...Array.from({ length: Number(values.claims) }, (_, i) => claim('tenant', `data-${i}`)),
    ...Array.from({ length: Number(values['other-claims']) }, (_, i) => claim('other', i === 0 ? 'data' : `data-${i}`)),
  ];
  const fast: V1StorageClass = { metadata: { name: 'fast' }, provisioner: 'csi.example.com', allowVolumeExpansion: true };
  const lookups = selectionLookups([{ metadata: { name: 'tenant' } }, { metadata: { name: 'other' } }], []);
  const full = (at: Date) => [{ at, usedBytes: 9n * 1024n ** 3n, capacityBytes: 10n * 1024n ** 3n }];
  const times: string[] = [];
  let otherDecision = '';
  for (let pass = 0; pass < Number(values.passes); pass++) {
    const now = new Date(Date.UTC(2026, 11, 5, 12, pass));
    const started = performance.now();
    const plans = policyPass({
      policies,
      clusterPolicies: [],
      claims,
      storageClasses: [fast],
      requests: [],
      lookups,
      samples: (key) => (key.startsWith('other/') ? full(new Date(now.getTime() - 60_000)) : []),
      lastCapacityChangeAt: () => undefined,
      now,
    });
    times.push(`${((performance.now() - started) / 1000).toFixed(2)} s`);
    otherDecision = plans.find((p) => p.policy.ref.namespace === 'other')?.volumes[0]?.decision.kind ?? 'none';
  }
  return { passes: times.join(', '), otherNamespace: otherDecision, peakRss: mib(peakRss()) };
}

async function connections(): Promise<Record<string, string>> {
  const { startHealthServer } = (await import(join(code, 'src/operator/endpoints/health.ts'))) as typeof import('../src/operator/endpoints/health.ts');
  const { startMetricsServer } = (await import(
    join(code, 'src/operator/endpoints/metrics-server.ts')
  )) as typeof import('../src/operator/endpoints/metrics-server.ts');
  const { selfSignedSource } = (await import(
    join(code, 'src/operator/endpoints/metrics-certs.ts')
  )) as typeof import('../src/operator/endpoints/metrics-certs.ts');
  const { Registry } = await import('prom-client');
  const pino = (await import('pino')).default;
  const health = await startHealthServer('127.0.0.1:0', { caches: () => [], isLeader: () => true });
  const metrics = await startMetricsServer({
    listen: '127.0.0.1:0',
    registry: new Registry(),
    logger: pino({ level: 'silent' }),
    secure: { certificates: selfSignedSource(), authorizer: { check: async () => ({ kind: 'allowed', user: 'bench' }) as const } },
  });
  const count = (s: import('node:net').Server) => new Promise<number>((done) => s.getConnections((_e, n) => done(n)));
  // The parent asks over stdin/stdout: "ports", then "measure" while it holds its connections.
  process.stdout.write(`${JSON.stringify({ health: health.address.port, metrics: metrics.address.port, rss: process.memoryUsage().rss })}\n`);
  for await (const line of process.stdin) {
    if (String(line).trim() !== 'measure') continue;
    process.stdout.write(
      `${JSON.stringify({ rss: process.memoryUsage().rss, peak: peakRss(), health: await count(health.server), metrics: await count(metrics.server) })}\n`,
    );
    break;
  }
  process.exit(0);
}

// --- the parent ----------------------------------------------------------------------------------

function child(args: string[], limitMs: number): Promise<Record<string, string>> {
  return new Promise((done, fail) => {
    execFile(process.execPath, [import.meta.filename, ...args, '--child'], { timeout: limitMs, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      if (err)
        return (err as { killed?: boolean }).killed ? done({ outcome: `stopped after ${limitMs / 1000} s` }) : fail(new Error(`${err.message}\n${stderr}`));
      done(JSON.parse(stdout.trim().split('\n').at(-1) as string) as Record<string, string>);
    });
  });
}

/** Opens `n` connections from `from` that send nothing; resolves once each is open or refused. */
async function hold(port: number, n: number, from: string): Promise<{ sockets: import('node:net').Socket[]; closedByServer: () => number }> {
  let closed = 0;
  const sockets: import('node:net').Socket[] = [];
  for (let i = 0; i < n; i += 500) {
    const batch = Array.from({ length: Math.min(500, n - i) }, () => {
      const s = connect({ port, host: '127.0.0.1', localAddress: from });
      s.on('error', () => undefined);
      s.once('close', () => closed++);
      sockets.push(s);
      return new Promise<void>((r) => {
        s.once('connect', () => r());
        s.once('close', () => r());
      });
    });
    await Promise.all(batch);
  }
  return { sockets, closedByServer: () => closed };
}

async function connectionsAttack(): Promise<void> {
  const { spawn } = await import('node:child_process');
  const server = spawn(process.execPath, [import.meta.filename, 'connections', '--child', '--code', code], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = server.stdout.setEncoding('utf8')[Symbol.asyncIterator]();
  const first = JSON.parse((await lines.next()).value as string) as { health: number; metrics: number; rss: number };
  const n = Number(values.connections);
  const started = performance.now();
  const held = [await hold(first.health, n, '127.0.0.2'), await hold(first.metrics, n, '127.0.0.2')];
  const openMs = performance.now() - started;
  await new Promise((r) => setTimeout(r, 2000));
  const healthz = await new Promise<string>((done) => {
    const s = connect({ port: first.health, host: '127.0.0.1', localAddress: '127.0.0.3' }, () => s.end('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'));
    let text = '';
    s.setTimeout(10_000, () => s.destroy());
    s.on('data', (c) => (text += String(c)));
    s.on('close', () => done(text.split('\r\n')[0] || 'no answer'));
    s.on('error', () => undefined);
  });
  const handshake = await new Promise<string>((done) => {
    const raw = connect({ port: first.metrics, host: '127.0.0.1', localAddress: '127.0.0.3' });
    const s = tlsConnect({ socket: raw, rejectUnauthorized: false }, () => {
      done('completed');
      s.destroy();
    });
    s.setTimeout(10_000, () => s.destroy());
    s.on('error', (e: Error) => done(`failed: ${e.message}`));
    s.on('close', () => done('closed'));
  });
  server.stdin.write('measure\n');
  const m = JSON.parse((await lines.next()).value as string) as { rss: number; peak: number; health: number; metrics: number };
  for (const h of held) for (const s of h.sockets) s.destroy();
  server.kill();
  print([
    `code: ${code}; ${n} connections held open to each endpoint from 127.0.0.2 (opened in ${(openMs / 1000).toFixed(1)} s)`,
    '',
    '| | health (HTTP) | metrics (HTTPS) |',
    '|---|---|---|',
    `| kept by the server after 2 s | ${m.health - 0} | ${m.metrics} |`,
    `| closed by the server | ${held[0]?.closedByServer()} | ${held[1]?.closedByServer()} |`,
    `| another address meanwhile | ${healthz} | TLS handshake ${handshake} |`,
    '',
    `server RSS: ${mib(first.rss)} before, ${mib(m.rss)} while held (peak ${mib(m.peak)})`,
  ]);
}

function print(lines: string[]): void {
  process.stdout.write(
    [`${new Date().toISOString()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${mib(totalmem())}, Node ${process.version}`, ...lines, ''].join('\n'),
  );
}

const attacks: Record<string, () => Promise<Record<string, string>>> = { replicas, windows };
if (values.child) {
  if (attack === 'connections') await connections();
  else process.stdout.write(`${JSON.stringify(await (attacks[attack] as () => Promise<Record<string, string>>)())}\n`);
} else if (attack === 'connections') {
  await connectionsAttack();
} else if (attacks[attack]) {
  const args = [attack, '--code', code, ...Object.entries(values).flatMap(([k, v]) => (['code', 'child', 'limit-s'].includes(k) ? [] : [`--${k}`, String(v)]))];
  const result = await child(args, Number(values['limit-s']) * 1000);
  print([`code: ${code}; ${attack}`, '', ...Object.entries(result).map(([k, v]) => `- ${k}: ${v}`)]);
} else {
  process.stderr.write('usage: node bench/tenant-attacks.ts replicas|windows|connections [--code DIR] (see the header)\n');
  process.exit(2);
}
