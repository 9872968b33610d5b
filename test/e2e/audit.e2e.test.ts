// `pvx audit` against the real cluster, run as the CLI users run it (no operator): each finding
// comes from objects the cluster's own controllers, resizer and kubelet put into that state.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditReport } from '../../src/cli/audit.ts';
import type { PolicySpec } from '../../src/crds/volume-expansion-policy.ts';
import type { RuleId } from '../../src/policies/audit/rules.ts';
import { runPvx, type CliResult } from './support/cli.ts';
import { e2eEnv } from './support/env.ts';
import { freePort } from './support/ports.ts';
import { startPvx, stopPvx, waitReady } from './support/pvx-process.ts';
import {
  bindPVC,
  core,
  createNamespace,
  createPod,
  createPVC,
  deleteNamespace,
  kc,
  patchPVCSize,
  readPVC,
  waitFor,
  waitForPodRunning,
} from './support/kube.ts';

const custom = kc.makeApiClient(CustomObjectsApi);

let ns: string;
let emptyNs: string;
let scratch: string;

beforeAll(async () => {
  [ns, emptyNs] = await Promise.all([createNamespace('pvx-e2e-audit'), createNamespace('pvx-e2e-audit-empty')]);
  scratch = mkdtempSync(join(tmpdir(), 'pvx-audit-e2e-'));
});

afterAll(async () => {
  await Promise.all([ns && deleteNamespace(ns), emptyNs && deleteNamespace(emptyNs)]);
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** Runs `pvx audit` as a process. */
const pvxAudit = (args: string[], kubeconfig = e2eEnv.kubeconfig): Promise<CliResult> => runPvx(['audit', '--kubeconfig', kubeconfig, ...args]);

async function report(namespace: string, ...args: string[]): Promise<AuditReport> {
  const r = await pvxAudit(['-n', namespace, '-o', 'json', ...args]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as AuditReport;
}

const findingsOf = (r: AuditReport, name: string) => r.findings.filter((f) => f.name === name).map((f) => f.rule);

/** Waits until the audit reports the rule for the claim (the cluster gets there on its own time). */
async function waitForFinding(name: string, rule: RuleId, timeoutMs = 120_000): Promise<AuditReport> {
  let last: AuditReport | undefined;
  await waitFor(
    `pvx audit to report ${rule} for ${ns}/${name}`,
    timeoutMs,
    async () => {
      last = await report(ns, '--usage', 'none');
      return findingsOf(last, name).includes(rule);
    },
    2000,
  );
  return last as AuditReport;
}

describe('pvx audit on a namespace without claims', () => {
  it('reports no findings and exits 0, in every output format', async () => {
    const json = await report(emptyNs);
    expect(json).toMatchObject({ namespace: emptyNs, findings: [], summary: { total: 0, critical: 0, warning: 0, info: 0 } });
    const table = await pvxAudit(['-n', emptyNs, '--fail-on', 'info']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout.trim()).toBe(`no findings in namespace ${emptyNs}`);
  });
});

describe.skipIf(!e2eEnv.fixedClass)('a Bound claim of a class that does not allow expansion', () => {
  it('is class-not-expandable, and nothing else', async () => {
    await createPVC(ns, 'fixed', e2eEnv.fixedClass as string, '1Gi');
    await bindPVC(ns, 'fixed');
    const r = await report(ns, '--usage', 'none');
    const [finding, ...others] = r.findings.filter((f) => f.name === 'fixed');
    expect(others).toEqual([]);
    expect(finding).toMatchObject({ rule: 'class-not-expandable', severity: 'warning', namespace: ns, kind: 'PersistentVolumeClaim' });
    expect(finding?.message).toContain(`StorageClass ${e2eEnv.fixedClass} of fixed (1Gi) has allowVolumeExpansion false`);
  });
});

describe.skipIf(!e2eEnv.expandableClass)('a claim resized with a plain merge patch', () => {
  it('is resized-outside-pvx, naming the field manager that wrote the size', async () => {
    await createPVC(ns, 'patched', e2eEnv.expandableClass as string, '1Gi');
    await bindPVC(ns, 'patched');
    expect(findingsOf(await report(ns, '--usage', 'none'), 'patched')).not.toContain('resized-outside-pvx');

    await patchPVCSize(ns, 'patched', '2Gi');
    const r = await waitForFinding('patched', 'resized-outside-pvx');
    // The manager the API server recorded for the test's patch (not pvx), read back from the claim.
    const pvc = await readPVC(ns, 'patched');
    const writer = pvc.metadata?.managedFields?.find((m) => JSON.stringify(m.fieldsV1).includes('"f:storage"') && !m.subresource)?.manager;
    expect(writer).toBeDefined();
    expect(writer).not.toBe('pvx');
    const finding = r.findings.find((f) => f.name === 'patched' && f.rule === 'resized-outside-pvx');
    expect(finding).toMatchObject({ severity: 'info', kind: 'PersistentVolumeClaim' });
    expect(finding?.message).toContain(`patched's size 2Gi was last set by ${writer} (Update at `);
  });
});

describe.skipIf(!e2eEnv.usageClass)('a claim expanded while no pod mounts it', () => {
  it('is waiting-for-pod once FileSystemResizePending appears, and clears once a pod runs', async () => {
    const usageClass = e2eEnv.usageClass as string;
    await createPVC(ns, 'idle', usageClass, '1Gi');
    await bindPVC(ns, 'idle');
    await patchPVCSize(ns, 'idle', '2Gi');
    await waitFor('FileSystemResizePending on idle', 120_000, async () =>
      ((await readPVC(ns, 'idle')).status?.conditions ?? []).some((c) => c.type === 'FileSystemResizePending' && c.status === 'True'),
    );
    const r = await waitForFinding('idle', 'waiting-for-pod', 30_000);
    const finding = r.findings.find((f) => f.name === 'idle' && f.rule === 'waiting-for-pod');
    expect(finding).toMatchObject({ severity: 'info' });
    expect(finding?.message).toMatch(/the volume grew to 2Gi but its filesystem \(capacity 1Gi\) grows only when a pod mounts the claim/);
    expect(finding?.remedy).toMatch(/Start a pod that mounts idle/);
    expect(finding?.since).toMatch(/^\d{4}-\d\d-\d\dT/);
    // Not stuck: the node stage waits for a pod, which is not a failure.
    expect(findingsOf(r, 'idle')).not.toContain('resize-stuck');

    await createPod(ns, 'idle', 'idle');
    await waitForPodRunning(ns, 'idle');
    await waitFor('idle to reach 2Gi', 120_000, async () => (await readPVC(ns, 'idle')).status?.capacity?.storage === '2Gi');
    expect(findingsOf(await report(ns, '--usage', 'none'), 'idle')).not.toContain('waiting-for-pod');
  });
});

describe.skipIf(!e2eEnv.usageClass)('a nearly full volume', () => {
  it("is nearly-full-uncovered by the kubelet's usage until a policy selects it", async () => {
    const usageClass = e2eEnv.usageClass as string;
    await createPVC(ns, 'full', usageClass, '1Gi');
    await bindPVC(ns, 'full');
    // 900 MiB into a 1Gi XFS filesystem (about 1 GiB usable): over 85 %.
    await createPod(ns, 'full', 'full', 'dd if=/dev/zero of=/data/fill bs=1M count=900 && sync && touch /data/done; sleep 3600');
    await waitForPodRunning(ns, 'full');
    let finding: AuditReport['findings'][number] | undefined;
    await waitFor(
      'the kubelet to report full as nearly full',
      120_000,
      async () => {
        finding = (await report(ns)).findings.find((f) => f.name === 'full' && f.rule === 'nearly-full-uncovered');
        return finding !== undefined;
      },
      3000,
    );
    expect(finding?.severity).toBe('warning');
    expect(finding?.message).toMatch(/^full is (8[5-9]|9\d)\.\d% full \(.+ of .+ used, .+ free\) and no VolumeExpansionPolicy/);

    // A policy in DryRun selects it but would not grow it: still uncovered.
    const create = (name: string, spec: PolicySpec) =>
      custom.createNamespacedCustomObject({
        group: 'pvx.dev',
        version: 'v1alpha1',
        plural: 'volumeexpansionpolicies',
        namespace: ns,
        body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionPolicy', metadata: { name }, spec },
      });
    await create('report-full', { storageClassNames: [usageClass], triggers: { usedPercent: 90 }, mode: 'DryRun' });
    expect(findingsOf(await report(ns), 'full')).toContain('nearly-full-uncovered');
    // One in Approval mode grows it once approved (no operator runs here, so nothing acts on it): covered.
    const spec: PolicySpec = { storageClassNames: [usageClass], triggers: { usedPercent: 90 }, mode: 'Approval' };
    await create('cover-full', spec);
    expect(findingsOf(await report(ns), 'full')).not.toContain('nearly-full-uncovered');
  });
});

describe.skipIf(!e2eEnv.fixedClass)('output formats and --fail-on', () => {
  it('-o json and -o yaml carry the findings and a summary; --fail-on warning exits 3, --fail-on critical exits 0', async () => {
    await createPVC(ns, 'fixed-exit', e2eEnv.fixedClass as string, '1Gi');
    await bindPVC(ns, 'fixed-exit');
    const json = await report(ns, '--usage', 'none');
    expect(json.findings.some((f) => f.name === 'fixed-exit' && f.rule === 'class-not-expandable')).toBe(true);
    expect(json.summary.total).toBe(json.findings.length);
    expect(json.summary.warning).toBeGreaterThanOrEqual(1);
    expect(json.summary.critical).toBe(0);

    const yaml = await pvxAudit(['-n', ns, '-o', 'yaml', '--usage', 'none']);
    expect(yaml.code, yaml.stderr).toBe(0);
    expect(yaml.stdout).toMatch(/^generatedAt: /);
    expect(yaml.stdout).toContain('rule: class-not-expandable');

    const failOnWarning = await pvxAudit(['-n', ns, '--usage', 'none', '--fail-on', 'warning']);
    expect(failOnWarning.code, failOnWarning.stderr).toBe(3);
    expect(failOnWarning.stdout).toMatch(/^SEVERITY +RULE +NAMESPACE +NAME +MESSAGE$/m);
    expect(failOnWarning.stdout).toMatch(new RegExp(`^warning +class-not-expandable +${ns} +pvc/fixed-exit +StorageClass`, 'm'));
    expect(failOnWarning.stdout).toMatch(/^ +↳ The API server refuses any size increase/m);
    expect(failOnWarning.stdout).toMatch(new RegExp(`^\\d+ findings? in namespace ${ns}: 0 critical, \\d+ warning, \\d+ info$`, 'm'));

    const failOnCritical = await pvxAudit(['-n', ns, '--usage', 'none', '--fail-on=critical']);
    expect(failOnCritical.code, failOnCritical.stderr).toBe(0);
  });
});

describe('exit codes of failures', () => {
  it('exits 2 on a usage error and 1, with a sentence naming the server, when the cluster cannot be reached', async () => {
    const usage = await pvxAudit(['-n', ns, '--fail-on', 'severe']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--fail-on must be one of info, warning, critical, got "severe"');

    // The admin kubeconfig, pointed at a port nothing listens on (one just free).
    const port = await freePort();
    const unreachable = join(scratch, 'unreachable.kubeconfig');
    writeFileSync(unreachable, readFileSync(e2eEnv.kubeconfig, 'utf8').replace(/server: https:\/\/[^\s]+/, `server: https://127.0.0.1:${port}`));
    const down = await pvxAudit(['-n', ns], unreachable);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(new RegExp(`^pvx: cannot read the cluster at https://127\\.0\\.0\\.1:${port}: listing .*ECONNREFUSED`, 'm'));
    expect(down.stderr).not.toMatch(/\n\s+at /); // no stack trace

    const missing = await pvxAudit(['-n', ns], join(scratch, 'missing.kubeconfig'));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(`kubeconfig ${join(scratch, 'missing.kubeconfig')} does not exist`);
  });
});

describe.skipIf(!e2eEnv.fixedClass)('the audit inside the operator', () => {
  it('publishes the finding as pvx_audit_findings and as one Event on the claim, not repeated at the next passes', async () => {
    await createPVC(ns, 'fixed-operator', e2eEnv.fixedClass as string, '1Gi');
    await bindPVC(ns, 'fixed-operator');
    const pvx = startPvx('audit', ['--leader-elect=false', '--namespace', ns, '--audit-interval', '2s', '--usage-source', 'none']);
    try {
      await waitReady(pvx);
      const events = async () =>
        (await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.name=fixed-operator,reason=AuditClassNotExpandable' })).items;
      await waitFor('the AuditClassNotExpandable Event on the claim', 60_000, async () => (await events()).length > 0, 1000);
      expect(await pvx.metric('pvx_audit_findings', { rule: 'class-not-expandable', severity: 'warning' })).toBeGreaterThanOrEqual(1);
      expect(await pvx.metric('pvx_audit_namespace_findings', { namespace: ns, severity: 'warning' })).toBeGreaterThanOrEqual(1);
      expect(await pvx.metric('pvx_audit_findings', { rule: 'resize-infeasible', severity: 'critical' })).toBe(0);
      const [event] = await events();
      expect(event?.type).toBe('Warning');
      expect(event?.message).toMatch(/allowVolumeExpansion false.*Remedy: /);
      // Several more passes (every 2 s): still one Event (a count of 1, no new one).
      await new Promise((r) => setTimeout(r, 8000));
      const after = await events();
      expect(after).toHaveLength(1);
      expect(after[0]?.count ?? 1).toBe(1);
    } finally {
      await stopPvx(pvx);
    }
  });
});
