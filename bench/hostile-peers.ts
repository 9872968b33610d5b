// pvx facing hostile peers on loopback, measured: what a broken or malicious API server or scraper
// costs pvx. Every peer is a fake server or client on 127.0.0.1 in this process; nothing leaves the
// machine, and every flood is bounded in count and time.
//
//   watch-line   CPU pvx's API client spends on one watch line of --mib MiB that arrives in TLS
//                records of --chunk-kib KiB (a large Pod, an annotation up to the object limit).
//                The client runs in a child process, alone, so its CPU is its own; a run past
//                --limit-s seconds is stopped and reported as such.
//
//   node bench/hostile-peers.ts watch-line [--mib 1,4,16] [--chunk-kib 16] [--limit-s 300]
//       [--client DIR]
//
//   scrape-flood /metrics as `pvx run` serves it (HTTPS, TokenReview + SubjectAccessReview through
//                pvx's API client and its review rate limit, 50/s burst 100) against a stand-in API
//                server on loopback that answers each review after --review-ms: a flood of
//                --rate requests a second with new random tokens from 127.0.0.2 for --seconds,
//                while a real scraper on 127.0.0.3 scrapes once a second with a valid token it has
//                not used before. Reports the real scrapes' latency, the bogus answers, and the
//                TokenReviews sent per bogus request.
//
//   node bench/hostile-peers.ts scrape-flood [--rate 100] [--seconds 10] [--review-ms 5] [--client DIR]
//
//   With --cluster, the same flood against `pvx run` (DIR's) on the embedded cluster (npm run
//   cluster:up; or $KUBECONFIG), as pvx's ServiceAccount, its tokens reviewed by the real
//   kube-apiserver and the TokenReviews counted from its audit log:
//
//   node bench/hostile-peers.ts scrape-flood --cluster [--rate 100] [--seconds 10] [--from N] [--client DIR]
//
//   --from N spreads the flood over N loopback addresses (127.0.1.1 on), as N pods would: each
//   address holds a place of its own in the review queue (one per address), so past its 32 places
//   only a token the cluster signed still goes first (token-signature.ts).
//
// --client DIR measures another checkout's client (DIR/src/k8s/http-client.ts), to compare before
// and after side by side, e.g.:
//   mkdir /tmp/before && git archive f8cdd96 src | tar -x -C /tmp/before && ln -s "$PWD/node_modules" /tmp/before/
//   node bench/hostile-peers.ts watch-line --client /tmp/before
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { writeInChunks } from '../src/k8s/testing/peers.ts';
import { floodAddresses, percentile, scrapeFlood, type ScrapeFloodResult } from '../src/operator/endpoints/scrape-flood.testing.ts';
import { loopbackCertificate } from './loopback-api.ts';

const repoRoot = resolve(import.meta.dirname, '..');

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    mib: { type: 'string', default: '1,4,16' },
    'chunk-kib': { type: 'string', default: '16' },
    'limit-s': { type: 'string', default: '300' },
    client: { type: 'string', default: repoRoot },
    rate: { type: 'string', default: '100' },
    seconds: { type: 'string', default: '10' },
    from: { type: 'string', default: '1' },
    'review-ms': { type: 'string', default: '5' },
    cluster: { type: 'boolean', default: false },
    // internal: the child's side of watch-line
    child: { type: 'string' },
    ca: { type: 'string' },
  },
});

// --- the child: one watch through the client under test, its CPU --------------------------------

if (values.child) {
  const { HttpKubeClient } = (await import(join(values.client, 'src', 'k8s', 'http-client.ts'))) as typeof import('../src/k8s/http-client.ts');
  const { resources } = (await import(join(values.client, 'src', 'k8s', 'resources.ts'))) as typeof import('../src/k8s/resources.ts');
  const client = new HttpKubeClient({ server: values.child, ca: readFileSync(values.ca ?? ''), token: 'bench', source: 'bench' });
  const wall = performance.now();
  const cpu = process.cpuUsage();
  const outcome = await new Promise<string>((done) => {
    let events = 0;
    void client.watch(
      resources.pods,
      { resourceVersion: '1' },
      () => events++,
      (err) => done(err ? `ended: ${err instanceof Error ? err.message : JSON.stringify(err)}` : `${events} event(s)`),
    );
  });
  const used = process.cpuUsage(cpu);
  process.stdout.write(JSON.stringify({ cpuMs: (used.user + used.system) / 1000, wallMs: performance.now() - wall, outcome }));
  process.exit(0);
}

// --- watch-line -----------------------------------------------------------------------------

async function watchLine(): Promise<void> {
  const sizes = values.mib.split(',').map(Number);
  const chunk = Number(values['chunk-kib']) * 1024;
  const limitMs = Number(values['limit-s']) * 1000;
  const dir = mkdtempSync(join(tmpdir(), 'pvx-hostile-'));
  try {
    // A throwaway certificate for 127.0.0.1: TLS is what cuts the stream into 16 KiB records.
    const { cert, key } = loopbackCertificate(dir);
    let line: Buffer = Buffer.alloc(0);
    const server = createHttpsServer({ cert, key }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      writeInChunks(res, line, chunk);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const rows: string[] = [];
    for (const mib of sizes) {
      line = eventLine(mib * 1024 * 1024);
      const result = await child(['--child', url, '--ca', join(dir, 'cert.pem'), '--client', values.client], limitMs);
      const cell =
        'stopped' in result
          ? `> ${(limitMs / 1000).toFixed(0)} s (stopped)`
          : `${(result.cpuMs / 1000).toFixed(3)} s CPU, ${(result.wallMs / 1000).toFixed(3)} s wall, ${result.outcome}`;
      rows.push(`| ${mib} MiB | ${cell} |`);
      process.stderr.write(`${mib} MiB: ${cell}\n`);
    }
    server.closeAllConnections();
    server.close();
    print([`client: ${values.client}; one line, ${values['chunk-kib']} KiB TLS records`, '', '| line | client |', '|---|---|', ...rows]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One ADDED event line of exactly `bytes` bytes, its newline included. */
function eventLine(bytes: number): Buffer {
  const shell = JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'big', namespace: 'bench', resourceVersion: '2', annotations: { a: '' } } } });
  return Buffer.from(`${shell.replace('"a":""', `"a":"${'x'.repeat(bytes - shell.length - 1)}"`)}\n`);
}

// --- scrape-flood ---------------------------------------------------------------------------

async function scrapeFloodBench(): Promise<void> {
  const reviewMs = Number(values['review-ms']);
  const seconds = Number(values.seconds);
  const rate = Number(values.rate);
  const reviews = { token: 0, access: 0 };
  // The stand-in API server: tokens "real-N" belong to Prometheus' service account, which may get /metrics.
  const api = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { spec?: { token?: string; user?: string } };
      const answer = (status: object) => setTimeout(() => res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ status })), reviewMs);
      if (req.url?.startsWith('/apis/authentication.k8s.io/v1/tokenreviews')) {
        reviews.token++;
        const real = body.spec?.token?.startsWith('real-');
        return answer(
          real
            ? { authenticated: true, user: { username: 'system:serviceaccount:monitoring:prometheus' } }
            : { authenticated: false, error: 'invalid bearer token' },
        );
      }
      if (req.url?.startsWith('/apis/authorization.k8s.io/v1/subjectaccessreviews')) {
        reviews.access++;
        return answer({ allowed: body.spec?.user === 'system:serviceaccount:monitoring:prometheus' });
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  const apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;

  const from = (...candidates: string[]) => candidates.map((c) => join(values.client, 'src', c)).find((p) => existsSync(p)) as string;
  const { HttpKubeClient } = (await import(join(values.client, 'src', 'k8s', 'http-client.ts'))) as typeof import('../src/k8s/http-client.ts');
  const { ThrottledKubeClient } = (await import(join(values.client, 'src', 'k8s', 'throttled-client.ts'))) as typeof import('../src/k8s/throttled-client.ts');
  const { MetricsAuthorizer } = (await import(
    from('operator/endpoints/metrics-auth.ts', 'operator/metrics-auth.ts')
  )) as typeof import('../src/operator/endpoints/metrics-auth.ts');
  const { startMetricsServer } = (await import(
    from('operator/endpoints/metrics-server.ts', 'operator/metrics-server.ts')
  )) as typeof import('../src/operator/endpoints/metrics-server.ts');
  const { selfSignedSource } = (await import(
    from('operator/endpoints/metrics-certs.ts', 'operator/metrics-certs.ts')
  )) as typeof import('../src/operator/endpoints/metrics-certs.ts');
  const logger = (await import('pino')).default({ level: 'silent' });
  const { Registry } = await import('prom-client');

  const client = new ThrottledKubeClient(new HttpKubeClient({ server: apiUrl, rejectUnauthorized: false, token: 'pvx', source: 'bench' }), {
    qps: 50,
    burst: 100,
  });
  const endpoint = await startMetricsServer({
    listen: '127.0.0.1:0',
    registry: new Registry(),
    logger,
    secure: { certificates: selfSignedSource(), authorizer: new MetricsAuthorizer({ client, logger }) },
  });
  const realTokens = Array.from({ length: Math.max(1, Math.floor(seconds - 0.5)) }, (_, i) => `real-${i}`);
  const cpu = process.cpuUsage();
  const { real, bogus } = await scrapeFlood({ port: endpoint.address.port, bogusPerSecond: rate, seconds, realTokens, bogusFrom: floodSources() });
  const used = process.cpuUsage(cpu);
  await endpoint.close();
  api.close();

  const bogusReviews = reviews.token - real.length;
  print([
    `client: ${values.client}; ${rate} bogus requests/s for ${seconds} s (${bogus.length} in all), reviews answered after ${reviewMs} ms`,
    '',
    ...floodRows({ real, bogus }, `| TokenReviews for bogus tokens | ${bogusReviews} (${(bogusReviews / bogus.length).toFixed(3)} per bogus request) |`),
    `| CPU of this process (pvx's endpoint, the flooder and the stand-in API server together) | ${((used.user + used.system) / 1000 / seconds).toFixed(0)} ms per second |`,
  ]);
}

/** The rows both floods report: the real scrapes, the bogus answers, and how many reviews they cost (`reviews`, a row). */
function floodRows({ real, bogus }: ScrapeFloodResult, reviews: string): string[] {
  const statuses = new Map<number, number>();
  for (const b of bogus) statuses.set(b.status, (statuses.get(b.status) ?? 0) + 1);
  const ms = (n: number) => `${Math.round(n)} ms`;
  return [
    '| | |',
    '|---|---|',
    `| real scrapes (new valid token each, no verdict cached) | ${real.map((r) => `${r.status} in ${ms(r.ms)}`).join(', ')} |`,
    `| real scrape latency, max | ${ms(Math.max(...real.map((r) => r.ms)))} |`,
    `| bogus answers | ${[...statuses]
      .sort(([a], [b]) => a - b)
      .map(([code, n]) => `${n} × ${code || 'no answer'}`)
      .join(', ')} |`,
    `| bogus answer latency, p50 / p99 / max | ${ms(
      percentile(
        bogus.map((b) => b.ms),
        0.5,
      ),
    )} / ${ms(
      percentile(
        bogus.map((b) => b.ms),
        0.99,
      ),
    )} / ${ms(Math.max(...bogus.map((b) => b.ms)))} |`,
    reviews,
  ];
}

/** Where the flood comes from: 127.0.0.2, or --from N addresses. */
function floodSources(): string | string[] {
  const n = Number(values.from);
  if (!(Number.isInteger(n) && n >= 1 && n <= 4096)) throw new Error(`--from takes a whole number of addresses, 1 to 4096, got ${values.from}`);
  return n === 1 ? '127.0.0.2' : floodAddresses(n);
}

async function scrapeFloodOnCluster(): Promise<void> {
  const seconds = Number(values.seconds);
  const rate = Number(values.rate);
  const { createNamespace, deleteNamespace } = await import('../test/e2e/support/kube.ts');
  const { pvxNamespace, serviceAccountKubeconfig } = await import('../test/e2e/support/identity.ts');
  const { mintScrapeToken, scrapeToken } = await import('../test/e2e/support/scraper.ts');
  const { startPvx, stopPvx, waitReady } = await import('../test/e2e/support/pvx-process.ts');
  const { auditLogEnd, readAuditEvents } = await import('../test/e2e/support/audit-log.ts');
  const ns = await createNamespace('pvx-bench-flood');
  const pvx = startPvx('bench-flood', ['--leader-elect=false', '--namespace', ns, '--usage-source', 'none'], await serviceAccountKubeconfig(), {
    main: join(values.client, 'src', 'cli', 'main.ts'),
  });
  try {
    await waitReady(pvx);
    await scrapeToken();
    const realTokens = await Promise.all(Array.from({ length: Math.max(1, Math.floor(seconds - 0.5)) }, () => mintScrapeToken()));
    const from = auditLogEnd();
    const { real, bogus } = await scrapeFlood({ port: pvx.port, bogusPerSecond: rate, seconds, realTokens, bogusFrom: floodSources() });
    const reviews = readAuditEvents(from).filter(
      (e) => e.objectRef?.resource === 'tokenreviews' && e.user.username === `system:serviceaccount:${pvxNamespace}:pvx`,
    ).length;
    print([
      `pvx run of ${values.client} on the embedded cluster; ${rate} bogus requests/s from ${values.from} address(es) for ${seconds} s (${bogus.length} in all), reviewed by kube-apiserver`,
      '',
      ...floodRows(
        { real, bogus },
        `| TokenReviews sent by pvx (audit log) | ${reviews} (${((reviews - real.length) / bogus.length).toFixed(3)} per bogus request) |`,
      ),
    ]);
  } finally {
    await stopPvx(pvx);
    await deleteNamespace(ns);
  }
}

function child(args: string[], limitMs: number): Promise<{ cpuMs: number; wallMs: number; outcome: string } | { stopped: true }> {
  return new Promise((done, fail) => {
    const proc = execFile(
      process.execPath,
      [import.meta.filename, ...args],
      { timeout: limitMs, killSignal: 'SIGKILL', maxBuffer: 1024 * 1024 },
      (err, stdout) => {
        if (err && (err as { killed?: boolean }).killed) return done({ stopped: true });
        // An Error at run time; its type (ExecFileException, an Omit<> of ErrnoException) hides that.
        if (err) return fail(err as Error);
        done(JSON.parse(stdout) as { cpuMs: number; wallMs: number; outcome: string });
      },
    );
    proc.stdin?.end();
  });
}

function print(lines: string[]): void {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  process.stdout.write(
    `${new Date().toISOString().slice(0, 10)}, ${cpus().length} × ${cpu}, ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}\n\n${lines.join('\n')}\n`,
  );
}

switch (positionals[0]) {
  case 'watch-line':
    await watchLine();
    break;
  case 'scrape-flood':
    await (values.cluster ? scrapeFloodOnCluster() : scrapeFloodBench());
    break;
  default:
    process.stderr.write('usage: node bench/hostile-peers.ts watch-line|scrape-flood [options] (see the comment at the top)\n');
    process.exitCode = 2;
}
