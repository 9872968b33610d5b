// Each default of pvx has one home, src/crds/defaults.ts; what says it again — the chart's
// values.yaml, the kustomize Deployment's args, the docs — is held to it here, so changing a default
// there fails until every place that states it agrees.
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { policyDefaults, runDefaults } from '../../src/crds/defaults.ts';
import { GiB } from '../../src/k8s/quantity.ts';
import { parseDuration } from '../../src/policies/shared/duration.ts';
import { defaultAddressTypes } from '../../src/usage/kubelet-endpoint.ts';

const root = resolve(import.meta.dirname, '..', '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');
type Flag = keyof typeof runDefaults;
const flags = Object.keys(runDefaults) as Flag[];
const port = (address: string) => Number(address.slice(address.lastIndexOf(':') + 1));
const seconds = (duration: string) => (parseDuration(duration) as number) / 1000;

/** A chart value the way the docs write it: `30s`, `8443`, `false`, `""`, `[]`, `{}`, `[443, 6443]`, `grafana_dashboard: "1"`. */
function shown(value: unknown): string {
  if (value === '') return '""';
  if (Array.isArray(value)) return `[${value.map(shown).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value);
    return entries.length === 0 ? '{}' : entries.map(([k, v]) => `${k}: ${JSON.stringify(v)}`).join(', ');
  }
  return String(value);
}

const values = parse(read('charts/pvx/values.yaml')) as Record<string, unknown>;
const valueAt = (path: string): unknown => path.split('.').reduce<unknown>((v, k) => (v as Record<string, unknown> | undefined)?.[k], values);

describe("pvx run's defaults", () => {
  it('are what `pvx run` parses with no flag and no environment, and what its help says', async () => {
    const { parseRunArgs, runHelp } = await import('../../src/cli/run.ts');
    const cfg = parseRunArgs([], {});
    expect(cfg).toMatchObject({
      kubeClient: runDefaults['kube-client'],
      metricsListen: runDefaults['metrics-bind-address'],
      metricsSecure: runDefaults['metrics-secure'] === 'true',
      healthListen: runDefaults['health-probe-bind-address'],
      leaderElect: runDefaults['leader-elect'] === 'true',
      leaderElectionId: runDefaults['leader-election-id'],
      logLevel: runDefaults['log-level'],
      drainTimeoutMs: parseDuration(runDefaults['drain-timeout']),
      usageSource: runDefaults['usage-source'],
      policyIntervalMs: parseDuration(runDefaults['policy-interval']),
      auditIntervalMs: parseDuration(runDefaults['audit-interval']),
      auditStuckAfterMs: parseDuration(runDefaults['audit-stuck-after']),
      kubeApiQps: Number(runDefaults['kube-api-qps']),
      kubeApiBurst: Number(runDefaults['kube-api-burst']),
    });
    for (const flag of flags.filter((f) => !['leader-elect'].includes(f))) expect(runHelp, flag).toContain(`default ${runDefaults[flag]}`);
  });

  it("are the chart's default values", () => {
    expect({
      policyInterval: values.policyInterval,
      audit: values.audit,
      logLevel: values.logLevel,
      usageSource: values.usageSource,
      leaderElection: values.leaderElection,
      metricsSecure: valueAt('metrics.secure'),
      metricsPort: valueAt('metrics.port'),
      healthProbePort: values.healthProbePort,
    }).toEqual({
      policyInterval: runDefaults['policy-interval'],
      audit: { interval: runDefaults['audit-interval'], stuckAfter: runDefaults['audit-stuck-after'] },
      logLevel: runDefaults['log-level'],
      usageSource: runDefaults['usage-source'],
      leaderElection: { enabled: runDefaults['leader-elect'] === 'true', leaseName: runDefaults['leader-election-id'] },
      metricsSecure: runDefaults['metrics-secure'] === 'true',
      metricsPort: port(runDefaults['metrics-bind-address']),
      healthProbePort: port(runDefaults['health-probe-bind-address']),
    });
  });

  const deployment = parse(read('config/manager/deployment.yaml')) as {
    spec: { template: { spec: { terminationGracePeriodSeconds: number; containers: { args: string[]; ports: { name: string; containerPort: number }[] }[] } } };
  };
  const pod = deployment.spec.template.spec;

  it('are the flags the kustomize Deployment passes, on the ports it names', () => {
    const given = Object.fromEntries((pod.containers[0]?.args ?? []).filter((a) => a.startsWith('--')).map((a) => a.slice(2).split('=') as [string, string]));
    const stated = Object.fromEntries(Object.entries(given).filter(([flag]) => flag in runDefaults));
    expect(Object.keys(stated).length).toBeGreaterThanOrEqual(8);
    expect(stated).toEqual(Object.fromEntries(Object.keys(stated).map((flag) => [flag, runDefaults[flag as Flag]])));
    const ports = Object.fromEntries((pod.containers[0]?.ports ?? []).map((p) => [p.name, p.containerPort]));
    expect(ports).toEqual({ https: port(runDefaults['metrics-bind-address']), health: port(runDefaults['health-probe-bind-address']) });
  });

  it('leave a pod time to drain: the grace period of both installs is longer than --drain-timeout', () => {
    const chartTemplate = read('charts/pvx/templates/deployment.yaml');
    for (const grace of [pod.terminationGracePeriodSeconds, Number(chartTemplate.match(/terminationGracePeriodSeconds: (\d+)/)?.[1])]) {
      expect(grace).toBeGreaterThan(seconds(runDefaults['drain-timeout']));
    }
  });

  it("are the defaults docs/operator.md's flag table gives", () => {
    const rows = read('docs/operator.md')
      .split('\n')
      .filter((l) => l.startsWith('| `--'))
      .map((l) => l.split(/(?<!\\)\|/).map((c) => c.trim()));
    const said = new Map<string, string>();
    for (const [, names = '', , defaults = ''] of rows) {
      const spans = (text: string) => [...text.matchAll(/`([^`]*)`/g)].map((m) => m[1] as string);
      const shownDefaults = spans(defaults);
      spans(names).forEach((name, i) => said.set(name.slice(2), shownDefaults[i] ?? defaults));
    }
    expect(Object.fromEntries(flags.map((f) => [f, said.get(f)]))).toEqual(runDefaults);
    expect(said.get('kubelet-preferred-address-types')).toBe(defaultAddressTypes.join(','));
  });

  it('are the defaults every page says in passing, as `--flag` (default X)', () => {
    const docs = ['README.md', 'ARCHITECTURE.md', 'CONTRIBUTING.md', ...readdirSync(join(root, 'docs')).map((f) => `docs/${f}`)].filter((f) =>
      f.endsWith('.md'),
    );
    const said = docs.flatMap((file) =>
      [...read(file).matchAll(/`--([a-z-]+)`\s*\((?:default\s+)?([\w:.]+(?: s)?)\)/g)]
        .filter((m) => (m[1] as string) in runDefaults)
        .map((m) => ({ file, flag: m[1] as Flag, value: (m[2] as string).replace(' ', '') })),
    );
    expect(said.length).toBeGreaterThanOrEqual(3);
    expect(
      said.filter((s) => s.value !== runDefaults[s.flag]).map((s) => `${s.file}: --${s.flag} (${s.value}), the default is ${runDefaults[s.flag]}`),
    ).toEqual([]);
  });
});

describe("the chart's values", () => {
  it("are what docs/install.md's values table says they are", () => {
    const text = read('docs/install.md');
    const checked: string[] = [];
    const wrong: string[] = [];
    for (const line of text.split('\n').filter((l) => l.startsWith('| `'))) {
      const [, keysCell = '', defaultsCell = ''] = line.split(/(?<!\\)\|/).map((c) => c.trim());
      const keys = keysCell.split(' / ').map((k) => k.replace(/^`|`$/g, ''));
      const defaults = defaultsCell.split(' / ');
      // Only rows whose defaults are one code span per key, as the values file has them.
      if (keys.length !== defaults.length || !defaults.every((d) => /^`[^`]*`$/.test(d)) || keys.some((k) => !/^\.?[\w.]+$/.test(k))) continue;
      const parent = (keys[0] as string).slice(0, (keys[0] as string).lastIndexOf('.') + 1);
      keys.forEach((key, i) => {
        const path = key.startsWith('.') ? parent + key.slice(1) : key;
        const expected = (defaults[i] as string).slice(1, -1);
        checked.push(path);
        if (shown(valueAt(path)) !== expected) wrong.push(`${path}: docs say ${expected}, values.yaml has ${shown(valueAt(path))}`);
      });
    }
    expect(wrong).toEqual([]);
    expect(checked).toEqual(
      expect.arrayContaining([
        'policyInterval',
        'audit.interval',
        'audit.stuckAfter',
        'logLevel',
        'usageSource',
        'leaderElection.leaseName',
        'metrics.port',
        'healthProbePort',
      ]),
    );
  });
});

describe("the policies' defaults", () => {
  const policies = read('docs/policies.md');

  it('are the ones docs/policies.md gives', () => {
    expect(Number(policies.match(/sustainedSamples: \d+ +# .*\(default (\d+)\)/)?.[1])).toBe(policyDefaults.sustainedSamples);
    expect(parseDuration(policies.match(/cooldown: \S+ +# default (\S+)/)?.[1] ?? '')).toBe(policyDefaults.cooldownMs);
    const step = policies.match(/# default (\d+) %, at least (\d+)Gi,/);
    expect([Number(step?.[1]), BigInt(step?.[2] ?? 0) * GiB]).toEqual([policyDefaults.stepPercent, policyDefaults.minStepBytes]);
    expect(Number(policies.match(/a newest sample older than (\d+) min/)?.[1]) * 60_000).toBe(policyDefaults.staleAfterMs);
    expect(Number(policies.match(/(\d+) min for an expansion to be usable/)?.[1]) * 60_000).toBe(policyDefaults.expansionMs);
  });
});
