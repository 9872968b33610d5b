import { describe, expect, it } from 'vitest';
import { ApiError } from '../k8s/errors.ts';
import type { Finding } from '../policies/audit/rules.ts';
import { formatFindingsTable, formatReport, parseAuditArgs, summarize, summaryLine } from './audit.ts';
import { explainClusterError } from './cluster-error.ts';
import { UsageError } from './errors.ts';

describe('parseAuditArgs', () => {
  it('defaults to a table, kubelet usage, 15m and no --fail-on', () => {
    expect(parseAuditArgs([])).toMatchObject({ allNamespaces: false, output: 'table', usage: 'kubelet', stuckAfterMs: 15 * 60_000, failOn: undefined });
  });

  it('reads every flag', () => {
    expect(
      parseAuditArgs([
        '-A',
        '-o',
        'yaml',
        '--fail-on=critical',
        '--usage',
        'none',
        '--stuck-after',
        '1h30m',
        '--modification-budget',
        'ebs.csi.aws.com=2/6h',
        '--kubeconfig',
        'k',
      ]),
    ).toMatchObject({
      modificationBudgets: { 'ebs.csi.aws.com': { count: 2, windowMs: 6 * 3_600_000 } },
      allNamespaces: true,
      output: 'yaml',
      failOn: 'critical',
      usage: 'none',
      stuckAfterMs: 90 * 60_000,
      kubeconfig: 'k',
    });
  });

  it.each([
    [['-n', 'a', '-A'], /either -n NAMESPACE or -A/],
    [['-o', 'wide'], /--output must be one of table, json, yaml, got "wide"/],
    [['--fail-on', 'error'], /--fail-on must be one of info, warning, critical/],
    [['--usage', 'prometheus'], /--usage must be one of kubelet, none/],
    [['--stuck-after', '15'], /--stuck-after must be a positive duration/],
    [['--modification-budget', 'ebs.csi.aws.com=4'], /--modification-budget takes DRIVER=COUNT\/DURATION/],
    [['extra'], /unexpected argument "extra"/],
  ])('%o is a usage error', (argv, message) => {
    expect(() => parseAuditArgs(argv)).toThrow(UsageError);
    expect(() => parseAuditArgs(argv)).toThrow(message);
  });
});

const findings: Finding[] = [
  {
    rule: 'resize-infeasible',
    severity: 'critical',
    namespace: 'db',
    kind: 'PersistentVolumeClaim',
    name: 'data',
    message: 'data: the resize is\nControllerResizeInfeasible',
    remedy: 'Lower it.',
  },
  { rule: 'statefulset-size-drift', severity: 'info', namespace: 'web', kind: 'StatefulSet', name: 'web', message: 'drift', remedy: 'Re-create it.' },
];

describe('formatFindingsTable', () => {
  it('aligns the columns, puts each remedy under its row and ends with the counts', () => {
    expect(formatFindingsTable(findings, undefined)).toBe(
      [
        'SEVERITY   RULE                     NAMESPACE   NAME              MESSAGE',
        'critical   resize-infeasible        db          pvc/data          data: the resize is ControllerResizeInfeasible',
        '           ↳ Lower it.',
        'info       statefulset-size-drift   web         statefulset/web   drift',
        '           ↳ Re-create it.',
        '',
        '2 findings in any namespace: 1 critical, 0 warning, 1 info',
      ].join('\n'),
    );
  });

  it('is one line when there is nothing to report', () => {
    expect(formatFindingsTable([], 'db')).toBe('no findings in namespace db');
  });
});

describe('summaries', () => {
  it('counts per severity', () => {
    expect(summarize(findings)).toEqual({ total: 2, critical: 1, warning: 0, info: 1 });
    expect(summaryLine(summarize(findings.slice(0, 1)), 'db')).toBe('1 finding in namespace db: 1 critical, 0 warning, 0 info');
  });

  it('are machine-readable in JSON and YAML, long messages unfolded', () => {
    const report = {
      generatedAt: '2026-11-29T12:00:00.000Z',
      findings: [{ ...(findings[1] as Finding), message: 'x'.repeat(200) }],
      summary: summarize(findings),
      warnings: [],
      skippedRules: [],
    };
    expect(JSON.parse(formatReport(report, 'json'))).toEqual(report);
    expect(formatReport(report, 'yaml')).toContain(`message: ${'x'.repeat(200)}\n`);
  });
});

describe('explainClusterError', () => {
  const server = 'https://10.0.0.1:6443';

  it.each([
    [new ApiError(401, 'Unauthorized', 'Unauthorized'), `the API server at ${server} refused the kubeconfig's credentials (401 Unauthorized): Unauthorized`],
    [
      new Error('listing persistentvolumeclaims in namespace db: forbidden', { cause: new ApiError(403, 'Forbidden', 'forbidden') }),
      `the API server at ${server} answered 403 Forbidden: listing persistentvolumeclaims in namespace db: forbidden`,
    ],
    [
      new Error('listing nodes: fetch failed', { cause: new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 10.0.0.1:6443') }) }),
      `cannot read the cluster at ${server}: listing nodes: fetch failed (connect ECONNREFUSED 10.0.0.1:6443)`,
    ],
  ])('%s', (err, message) => {
    expect(explainClusterError(err, server).message).toBe(message);
  });
});
