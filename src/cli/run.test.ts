import { describe, expect, it } from 'vitest';
import { parseRunArgs } from './run.ts';
import { UsageError } from './usage.ts';

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

  it('reads a namespace selector as label pairs, and refuses it beside --namespace', () => {
    expect(parse('--namespace-selector', 'pvx.dev/shard=a,tier=db')).toMatchObject({ namespaceSelector: { 'pvx.dev/shard': 'a', tier: 'db' } });
    expect(parse('--namespace-selector', 'empty=')).toMatchObject({ namespaceSelector: { empty: '' } });
    expect(parse()).not.toHaveProperty('namespaceSelector');
    expect(refusal(['--namespace', 'db', '--namespace-selector', 'a=b'])).toBe('--namespace and --namespace-selector exclude each other: give one');
  });

  it('keeps the defaults', () => {
    expect(parse()).toMatchObject({ drainTimeoutMs: 30_000, policyIntervalMs: 30_000, auditIntervalMs: 60_000, auditStuckAfterMs: 900_000, kubeApiQps: 50, kubeApiBurst: 100 });
  });

  it('says what it wants', () => {
    expect(refusal(['--drain-timeout', 'Infinity'])).toBe('--drain-timeout must be seconds (e.g. 30) or a duration (e.g. 1m), got "Infinity"');
    expect(refusal(['--policy-interval', '500ms'])).toBe('--policy-interval must be a duration of at least 1s (e.g. 30s), got "500ms"');
    expect(refusal(['--audit-stuck-after', '0s'])).toBe('--audit-stuck-after must be a positive duration (e.g. 15m), got "0s"');
  });
});
