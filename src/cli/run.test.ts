import https from 'node:https';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { importsOf, loadedWithIt, reachable } from '../import-graph.testing.ts';
import pino from 'pino';
import { FakeKubeClient } from '../k8s/testing/fake-client.ts';
import { buildManager } from '../operator/wiring.ts';
import { parseRunArgs } from './run.ts';
import { UsageError } from './errors.ts';

const parse = (...argv: string[]) => parseRunArgs(argv, {});

/** The usage error a command line gets, or 'accepted'. */
function refusal(argv: string[]): string {
  try {
    parse(...argv);
    return 'accepted';
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
}

const hugeDigits = '9'.repeat(400);

describe('parseRunArgs', () => {
  it.each([
    // --drain-timeout: seconds or a duration, finite, ≥ 0
    ['--drain-timeout', 'Infinity'],
    ['--drain-timeout', '-Infinity'],
    ['--drain-timeout', 'NaN'],
    ['--drain-timeout', '1e999'],
    ['--drain-timeout', '1e3'],
    ['--drain-timeout', hugeDigits],
    ['--drain-timeout', '-1'],
    ['--drain-timeout', ''],
    ['--drain-timeout', ' '],
    ['--drain-timeout', '0x10'],
    ['--drain-timeout', '30 s'],
    // the interval and threshold flags: a positive duration, the intervals at least 1s
    ...['--policy-interval', '--audit-interval', '--audit-stuck-after'].flatMap((flag) =>
      ['Infinity', 'NaN', '1e400', `${hugeDigits}h`, '2562048h', '-5m', '', ' ', '0', '0s', '30', '1.5h', 'soon'].map((value) => [flag, value]),
    ),
    ['--policy-interval', '999ms'],
    ['--audit-interval', '500ms'],
    // the client's rate limit: a plain positive number (qps), a whole number ≥ 1 (burst)
    ...['Infinity', 'NaN', '1e3', '0x10', '-5', '0', '', ' ', 'fast'].map((value) => ['--kube-api-qps', value]),
    ...['Infinity', '1.5', '1e3', '0', '-1', '', 'many'].map((value) => ['--kube-api-burst', value]),
    ...['', ' ', 'shard', '=a', 'a=b=c', 'a b=c', 'x=y,', '-bad=1', 'k=v v'].map((value) => ['--namespace-selector', value]),
    // the driver budgets: DRIVER=COUNT/DURATION or DRIVER=none
    ...[
      '',
      'ebs.csi.aws.com',
      'ebs.csi.aws.com=',
      'ebs.csi.aws.com=4',
      'ebs.csi.aws.com=4/',
      'ebs.csi.aws.com=/24h',
      'ebs.csi.aws.com=0/24h',
      'ebs.csi.aws.com=-1/24h',
      'ebs.csi.aws.com=1.5/24h',
    ]
      .concat([
        'ebs.csi.aws.com=4/24',
        'ebs.csi.aws.com=4/0s',
        'ebs.csi.aws.com=4/1d',
        'ebs.csi.aws.com=4/Infinity',
        `ebs.csi.aws.com=4/${hugeDigits}h`,
        '=4/24h',
        '-ebs=4/24h',
        'ebs csi=4/24h',
        'ebs.csi.aws.com=NONE',
      ])
      .map((value) => ['--modification-budget', value]),
    // the endpoints: host:port, and HTTPS on or off
    ...['--metrics-bind-address', '--health-probe-bind-address'].flatMap((flag) =>
      ['', 'localhost', ':http', ':65536', '127.0.0.1:-1'].map((value) => [flag, value]),
    ),
    ...['', 'yes', 'TRUE', '0'].map((value) => ['--metrics-secure', value]),
  ])('refuses %s "%s" in one line naming the flag and the value', (flag, value) => {
    const message = refusal([`${flag}=${value}`]); // with '=': parseArgs itself refuses '--flag -5m'
    expect(message).not.toBe('accepted');
    expect(message).not.toContain('\n');
    expect(message).toContain(flag);
    expect(message).toContain(`"${value}"`);
  });

  it.each([
    ['--drain-timeout', '30', { drainTimeoutMs: 30_000 }],
    ['--drain-timeout', '2.5', { drainTimeoutMs: 2_500 }],
    ['--drain-timeout', '0', { drainTimeoutMs: 0 }],
    ['--drain-timeout', '1m', { drainTimeoutMs: 60_000 }],
    ['--policy-interval', '1s', { policyIntervalMs: 1000 }],
    ['--audit-interval', '168h', { auditIntervalMs: 168 * 3_600_000 }], // timers wait any finite length
    ['--audit-interval', '8760h', { auditIntervalMs: 8760 * 3_600_000 }],
    ['--audit-stuck-after', '1ms', { auditStuckAfterMs: 1 }],
    ['--kube-api-qps', '2.5', { kubeApiQps: 2.5 }],
    ['--kube-api-burst', '1', { kubeApiBurst: 1 }],
  ])('accepts %s %s', (flag, value, expected) => {
    expect(parse(flag, value)).toMatchObject(expected);
  });

  it('reads driver budgets from the flag (repeated, or comma-separated), else from the environment; none removes one', () => {
    expect(parse()).toMatchObject({ modificationBudgets: {} });
    expect(parse('--modification-budget', 'ebs.csi.aws.com=4/24h')).toMatchObject({
      modificationBudgets: { 'ebs.csi.aws.com': { count: 4, windowMs: 86_400_000 } },
    });
    expect(
      parse('--modification-budget', 'ebs.csi.aws.com=2/10m,hostpath.pvx.dev=1/30s', '--modification-budget', 'pd.csi.storage.gke.io=none').modificationBudgets,
    ).toEqual({
      'ebs.csi.aws.com': { count: 2, windowMs: 600_000 },
      'hostpath.pvx.dev': { count: 1, windowMs: 30_000 },
      'pd.csi.storage.gke.io': null,
    });
    expect(parse('--modification-budget', 'disk.csi.azure.com=3/24h:performance').modificationBudgets).toEqual({
      'disk.csi.azure.com': { count: 3, windowMs: 86_400_000, counts: 'performance' },
    });
    expect(parseRunArgs([], { PVX_MODIFICATION_BUDGET: 'ebs.csi.aws.com=none' }).modificationBudgets).toEqual({ 'ebs.csi.aws.com': null });
    expect(parseRunArgs(['--modification-budget=ebs.csi.aws.com=1/6h'], { PVX_MODIFICATION_BUDGET: 'ebs.csi.aws.com=none' }).modificationBudgets).toEqual({
      'ebs.csi.aws.com': { count: 1, windowMs: 21_600_000 },
    });
    expect(refusal(['--modification-budget', 'ebs.csi.aws.com=4/24h', '--modification-budget', 'ebs.csi.aws.com=none'])).toBe(
      '--modification-budget names ebs.csi.aws.com twice ("ebs.csi.aws.com=none"): give one budget per driver',
    );
  });

  it('says what a driver budget must be', () => {
    expect(refusal(['--modification-budget', 'ebs.csi.aws.com=4'])).toBe(
      '--modification-budget takes DRIVER=COUNT/DURATION[:performance] (e.g. ebs.csi.aws.com=4/24h, pd.csi.storage.gke.io=1/4h:performance) or DRIVER=none, got "ebs.csi.aws.com=4"',
    );
    expect(refusal(['--modification-budget', 'ebs.csi.aws.com=0/24h'])).toBe(
      '--modification-budget: the count must be a whole number from 1, got "ebs.csi.aws.com=0/24h" (DRIVER=none for no budget)',
    );
    expect(refusal(['--modification-budget', 'ebs.csi.aws.com=4/1d'])).toBe(
      '--modification-budget: the window must be a positive duration such as 24h or 10m, got "ebs.csi.aws.com=4/1d"',
    );
    expect(refusal(['--modification-budget', 'ebs csi=4/24h'])).toBe(
      '--modification-budget: "ebs csi" is not a CSI driver name (e.g. ebs.csi.aws.com), in "ebs csi=4/24h"',
    );
  });

  it('reads the largest volume of drivers from the flag (a size, or a class parameter), else from the environment', () => {
    expect(parse().maxVolumeSizes).toEqual({});
    expect(parse('--max-volume-size', 'csi.example.com=16Ti,hostpath.pvx.dev=class-parameter:maxVolumeSize').maxVolumeSizes).toEqual({
      'csi.example.com': { bytes: 16n * 2n ** 40n },
      'hostpath.pvx.dev': { classParameter: 'maxVolumeSize' },
    });
    expect(parseRunArgs([], { PVX_MAX_VOLUME_SIZE: 'csi.example.com=500Gi' }).maxVolumeSizes).toEqual({ 'csi.example.com': { bytes: 500n * 2n ** 30n } });
    expect(refusal(['--max-volume-size', 'csi.example.com=lots'])).toBe(
      '--max-volume-size: the size must be a positive quantity such as 16Ti, got "csi.example.com=lots"',
    );
    expect(refusal(['--max-volume-size', 'csi.example.com'])).toBe(
      '--max-volume-size takes DRIVER=SIZE (e.g. csi.example.com=16Ti) or DRIVER=class-parameter:NAME, got "csi.example.com"',
    );
    expect(refusal(['--max-volume-size', 'a.b=1Ti,a.b=2Ti'])).toBe('--max-volume-size names a.b twice ("a.b=2Ti"): give one limit per driver');
  });

  it('reads a namespace selector as label pairs, and refuses it beside --namespace', () => {
    expect(parse('--namespace-selector', 'pvx.dev/shard=a,tier=db')).toMatchObject({ namespaceSelector: { 'pvx.dev/shard': 'a', tier: 'db' } });
    expect(parse('--namespace-selector', 'empty=')).toMatchObject({ namespaceSelector: { empty: '' } });
    expect(parse()).not.toHaveProperty('namespaceSelector');
    expect(refusal(['--namespace', 'db', '--namespace-selector', 'a=b'])).toBe('--namespace and --namespace-selector exclude each other: give one');
  });

  it('serves metrics over HTTPS on :8443 and health over HTTP on :8081 by default; flags, else the environment, change that', () => {
    expect(parse()).toMatchObject({ metricsListen: ':8443', metricsSecure: true, healthListen: ':8081' });
    expect(parse()).not.toHaveProperty('metricsCertDir');
    expect(parse('--metrics-bind-address', '127.0.0.1:9443', '--health-probe-bind-address=:9081', '--metrics-cert-dir', '/certs')).toMatchObject({
      metricsListen: '127.0.0.1:9443',
      healthListen: ':9081',
      metricsCertDir: '/certs',
    });
    expect(parse('--metrics-secure=false', '--metrics-bind-address', ':8080')).toMatchObject({ metricsSecure: false, metricsListen: ':8080' });
    const env = { PVX_METRICS_BIND_ADDRESS: ':1', PVX_HEALTH_PROBE_BIND_ADDRESS: ':2', PVX_METRICS_SECURE: 'false' };
    expect(parseRunArgs([], env)).toMatchObject({ metricsListen: ':1', healthListen: ':2', metricsSecure: false });
    expect(parseRunArgs(['--metrics-secure=true'], env)).toMatchObject({ metricsSecure: true });
    expect(parseRunArgs([], { PVX_METRICS_CERT_DIR: '/certs' })).toMatchObject({ metricsCertDir: '/certs' });
    expect(refusal(['--metrics-secure=false', '--metrics-cert-dir', '/certs'])).toBe(
      '--metrics-cert-dir is for HTTPS: it cannot go with --metrics-secure=false',
    );
  });

  it('in a pod, names the metrics Service of its own namespace (the self-signed certificate carries its DNS names)', () => {
    expect(parseRunArgs([], { POD_NAMESPACE: 'pvx-system' })).toMatchObject({ metricsService: { name: 'pvx-metrics', namespace: 'pvx-system' } });
  });

  it('reads the kubelets as the ServiceAccount pvx-usage-reader of its own namespace, or the one --kubelet-identity names; with that source only', () => {
    expect(parseRunArgs([], { POD_NAMESPACE: 'pvx-system' }).kubeletIdentity).toEqual({ namespace: 'pvx-system', name: 'pvx-usage-reader' });
    expect(parseRunArgs(['--leader-election-namespace', 'ops'], {}).kubeletIdentity).toEqual({ namespace: 'ops', name: 'pvx-usage-reader' });
    expect(parseRunArgs(['--kubelet-identity', 'stats/reader'], { POD_NAMESPACE: 'pvx-system' }).kubeletIdentity).toEqual({
      namespace: 'stats',
      name: 'reader',
    });
    expect(parseRunArgs([], { POD_NAMESPACE: 'pvx-system', PVX_KUBELET_IDENTITY: 'reader' }).kubeletIdentity).toEqual({
      namespace: 'pvx-system',
      name: 'reader',
    });
    expect(parseRunArgs(['--usage-source', 'none'], {}).kubeletIdentity).toBeUndefined();
    expect(refusal(['--kubelet-identity', 'a/b/c'])).toBe('--kubelet-identity must be a ServiceAccount as NAME or NAMESPACE/NAME, got "a/b/c"');
    expect(refusal(['--kubelet-identity', 'Reader'])).toMatch(/^--kubelet-identity must be/);
  });

  it('keeps the defaults', () => {
    expect(parse()).toMatchObject({
      drainTimeoutMs: 30_000,
      policyIntervalMs: 30_000,
      auditIntervalMs: 60_000,
      auditStuckAfterMs: 900_000,
      kubeApiQps: 500,
      kubeApiBurst: 1000,
    });
  });

  it('says what it wants', () => {
    expect(refusal(['--drain-timeout', 'Infinity'])).toBe('--drain-timeout must be seconds (e.g. 30) or a duration (e.g. 1m), got "Infinity"');
    expect(refusal(['--policy-interval', '500ms'])).toBe('--policy-interval must be a duration of at least 1s (e.g. 30s), got "500ms"');
    expect(refusal(['--audit-stuck-after', '0s'])).toBe('--audit-stuck-after must be a positive duration (e.g. 15m), got "0s"');
  });
});

describe('buildManager', () => {
  it('serves /metrics over HTTPS behind the token review by default, reviewing through the API client, and health over HTTP', async () => {
    const fake = new FakeKubeClient();
    fake.tokens.set('scraper', { username: 'prometheus' });
    fake.authorize = (r) => ({ allowed: r.user.username === 'prometheus' });
    const manager = buildManager(
      parseRunArgs(['--metrics-bind-address=127.0.0.1:0', '--health-probe-bind-address=127.0.0.1:0', '--leader-elect=false', '--usage-source=none'], {}),
      pino({ level: 'silent' }),
      fake,
    );
    await manager.start();
    try {
      const port = Number(manager.metricsAddress.split(':').at(-1));
      const scrape = (token?: string) =>
        new Promise<number>((resolve, reject) => {
          https
            .get(
              { host: '127.0.0.1', port, path: '/metrics', rejectUnauthorized: false, headers: token ? { authorization: `Bearer ${token}` } : {} },
              (res) => {
                res.resume();
                resolve(res.statusCode ?? 0);
              },
            )
            .on('error', reject);
        });
      expect([await scrape(), await scrape('scraper')]).toEqual([401, 200]);
      expect(fake.calls).toEqual(expect.arrayContaining(['createTokenReview ', 'createSubjectAccessReview prometheus get /metrics']));
      expect((await fetch(`http://${manager.healthAddress}/healthz`)).status).toBe(200);
    } finally {
      await manager.stop();
    }
  });
});

describe('pvx run loads no value of client-node', () => {
  const src = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const at = (file: string) => resolve(src, file);
  /** What loading `pvx run` loads: main.ts, then run.ts (main imports each command when it runs), and what they import statically. */
  const loaded = new Map([...reachable(at('cli/main.ts'), loadedWithIt), ...reachable(at('cli/run.ts'), loadedWithIt)]);

  /** Every loaded module with a value import of '@kubernetes/client-node', as the path of imports leading to it. */
  const clientNodeImports = (modules: Map<string, string[]>) =>
    [...modules]
      .filter(([file]) => importsOf(file).some((i) => i.specifier === '@kubernetes/client-node' && loadedWithIt(i)))
      .map(([, path]) => path.map((f) => relative(src, f)).join(' → '));

  it('the walk sees the run path, its own HTTP client, and client-node behind the dynamic import only', () => {
    for (const file of ['cli/run.ts', 'operator/wiring.ts', 'cli/connect.ts', 'k8s/http-client.ts', 'operator/runtime/manager.ts', 'policies/audit/rules.ts'])
      expect(loaded.has(at(file)), file).toBe(true);
    expect(loaded.has(at('k8s/node-client.ts'))).toBe(false);
    expect(loaded.has(at('cli/kubeconfig.ts'))).toBe(false);
    expect(
      importsOf(at('cli/connect.ts'))
        .filter((i) => i.dynamic)
        .map((i) => i.specifier),
    ).toEqual(['../k8s/node-client.ts', './kubeconfig.ts']);
    // and it finds such an import where there is one
    expect(clientNodeImports(reachable(at('k8s/node-client.ts'), loadedWithIt))).toContain('k8s/node-client.ts');
  });

  it('of the packages, loads only pino, prom-client and croner (yaml for a kubeconfig and client-node for other credentials are imported when needed)', () => {
    const packages = [...loaded].flatMap(([file]) =>
      importsOf(file)
        .filter((i) => loadedWithIt(i) && !i.file && !i.specifier.startsWith('node:'))
        .map((i) => i.specifier.replace(/^((@[^/]+\/)?[^/]+).*$/, '$1')),
    );
    expect([...new Set(packages)].sort()).toEqual(['croner', 'pino', 'prom-client']);
  });

  it('takes node:http with process.getBuiltinModule: importing it loads Node’s bundled undici (~13 MiB) for its lazy WebSocket and fetch exports', () => {
    const importers = [...loaded]
      .filter(([file]) => importsOf(file).some((i) => i.specifier === 'node:http' && loadedWithIt(i)))
      .map(([file]) => relative(src, file));
    expect(importers).toEqual([]);
  });

  it('no module pvx run loads imports a value of client-node (its types are free)', () => {
    expect(clientNodeImports(loaded)).toEqual([]);
  });
});
