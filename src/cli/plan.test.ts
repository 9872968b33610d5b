import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { GiB } from '../k8s/quantity.ts';
import { formatPlanTable, parsePlanArgs, planRows, type PlannedPolicy } from './plan.ts';

const pvc = (name: string) => ({ metadata: { name, namespace: 'db' } }) as V1PersistentVolumeClaim;

function decisions(mode: 'Auto' | 'DryRun', kind: 'VolumeExpansionPolicy' | 'ClusterVolumeExpansionPolicy' = 'VolumeExpansionPolicy'): PlannedPolicy[] {
  return [
    {
      mode,
      policy: {
        ref: kind === 'VolumeExpansionPolicy' ? { kind, namespace: 'db', name: 'grow' } : { kind, name: 'fleet' },
        apiVersion: 'pvx.dev/v1alpha1',
        uid: 'u',
        spec: { triggers: { usedPercent: 80 }, mode },
      },
      volumes: [
        {
          pvc: pvc('data'),
          newest: { at: new Date(), usedBytes: 9n * GiB, capacityBytes: 10n * GiB },
          decision: {
            kind: 'expand',
            trigger: 'UsedRatio',
            fromBytes: 10n * GiB,
            targetBytes: 12n * GiB,
            message: 'used ≥ 80% in each of the last 3 measurements: grow 10Gi → 12Gi',
            detail: '90.0% used, 1 GiB free',
          },
        },
        {
          pvc: pvc('logs'),
          decision: { kind: 'blocked', reason: 'Cooldown', trigger: 'UsedRatio', message: 'cooling down', detail: '85.0% used, 1.5 GiB free' },
        },
        { pvc: pvc('new'), decision: { kind: 'unknown', reason: 'NoSamples', message: 'no usage samples' } },
      ],
    },
  ];
}

describe('planRows', () => {
  it('shows what an Auto policy would do per PVC, with the target of an expansion and the reason of the rest', () => {
    expect(planRows(decisions('Auto'))).toEqual([
      {
        policy: 'vep/grow',
        mode: 'Auto',
        namespace: 'db',
        pvc: 'data',
        used: '9 GiB/10 GiB',
        decision: 'expand',
        target: '12 GiB',
        reason: 'UsedRatio',
        message: 'used ≥ 80% in each of the last 3 measurements: grow 10Gi → 12Gi (90.0% used, 1 GiB free)',
      },
      {
        policy: 'vep/grow',
        mode: 'Auto',
        namespace: 'db',
        pvc: 'logs',
        used: '-',
        decision: 'blocked',
        reason: 'Cooldown',
        message: 'cooling down (85.0% used, 1.5 GiB free)',
      },
      { policy: 'vep/grow', mode: 'Auto', namespace: 'db', pvc: 'new', used: '-', decision: 'unknown', reason: 'NoSamples', message: 'no usage samples' },
    ]);
  });

  it('reports a DryRun policy’s expansion as dryRun, and names cluster policies cvep/', () => {
    const [row] = planRows(decisions('DryRun', 'ClusterVolumeExpansionPolicy'));
    expect(row).toMatchObject({ policy: 'cvep/fleet', decision: 'dryRun', target: '12 GiB' });
  });

  it('shows a policy whose spec cannot be read as one row saying why, not as nothing', () => {
    const [broken] = decisions('Auto');
    const rows = planRows([{ ...(broken as PlannedPolicy), volumes: [], error: 'cannot read spec.windows: unknown time zone "Mars/Olympus_Mons"' }]);
    expect(rows).toEqual([
      expect.objectContaining({
        policy: 'vep/grow',
        pvc: '-',
        decision: 'invalid',
        reason: 'InvalidSpec',
        message: expect.stringContaining('Mars/Olympus_Mons'),
      }),
    ]);
  });

  it('formats a table with a header and one line per PVC', () => {
    const lines = formatPlanTable(planRows(decisions('Auto'))).split('\n');
    expect(lines[0]).toMatch(/^POLICY\s+MODE\s+NAMESPACE\s+PVC\s+USED\s+DECISION\s+TARGET\s+WHY$/);
    expect(lines).toHaveLength(4);
  });
});

describe('parsePlanArgs', () => {
  it('defaults to one kubelet reading, as a table', () => {
    expect(parsePlanArgs([], {})).toMatchObject({
      usage: 'kubelet',
      samples: 1,
      sampleIntervalMs: 10_000,
      output: 'table',
      allNamespaces: false,
      modificationBudgets: {},
    });
  });

  it('takes the driver budgets the operator was given', () => {
    expect(parsePlanArgs(['--modification-budget', 'ebs.csi.aws.com=none'], {}).modificationBudgets).toEqual({ 'ebs.csi.aws.com': null });
    expect(parsePlanArgs([], { PVX_MODIFICATION_BUDGET: 'ebs.csi.aws.com=1/6h' }).modificationBudgets).toEqual({
      'ebs.csi.aws.com': { count: 1, windowMs: 6 * 3_600_000 },
    });
  });

  it.each([
    [['-n', 'a', '-A'], /either -n NAMESPACE or -A/],
    [['--samples', '0'], /--samples must be a whole number from 1 to 30/],
    [['--samples', '2.5'], /--samples must be a whole number/],
    [['--usage', 'prometheus'], /needs --prometheus-url/],
    [['--usage', 'df'], /--usage must be one of kubelet, prometheus, none/],
    [['-o', 'wide'], /--output must be one of table, json, yaml, got "wide"/],
    [['--sample-interval', 'soon'], /--sample-interval must be a positive duration/],
    [['--modification-budget', 'ebs.csi.aws.com=4/24h,ebs.csi.aws.com=2/1h'], /names ebs\.csi\.aws\.com twice/],
    [['extra'], /unexpected argument "extra"/],
  ])('refuses %j with a clear message', (argv, message) => {
    expect(() => parsePlanArgs(argv, {})).toThrow(message);
  });
});
