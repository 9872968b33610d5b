// `pvx status` and `pvx wait` run as child processes, as a user or a script would run them, against
// a real cluster with a pvx operator handling the requests.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RequestSpec, VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import { e2eEnv } from './support/env.ts';
import { bindPVC, createNamespace, createPod, createPVC, deleteNamespace, kc, waitFor, waitForPodRunning } from './support/kube.ts';
import { runPvx, startCli, type CliResult, type CliRun } from './support/cli.ts';
import { startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';

const custom = kc.makeApiClient(CustomObjectsApi);
const crd = { group: 'pvx.dev', version: 'v1alpha1', plural: 'volumeexpansionrequests' };
let ns: string;
let pvx: PvxProcess;

// The operator handles this test's namespace only, so other suites' operators and requests stay apart.
beforeAll(async () => {
  ns = await createNamespace('pvx-e2e-cli');
  pvx = startPvx('cli', ['--namespace', ns, '--leader-elect=false']);
  await waitReady(pvx);
});

afterAll(async () => {
  if (pvx) await stopPvx(pvx);
  if (ns) await deleteNamespace(ns);
});

/** `pvx ARGS` against the test cluster, its output read while it runs. */
const startPvxCli = (args: string[]): CliRun => startCli([...args, '--kubeconfig', e2eEnv.kubeconfig], 280_000);

/** `pvx ARGS` against the test cluster, to its end. */
const cli = (args: string[]): Promise<CliResult> => runPvx([...args, '--kubeconfig', e2eEnv.kubeconfig], 280_000);

async function createRequest(name: string, spec: RequestSpec, annotations?: Record<string, string>): Promise<void> {
  await custom.createNamespacedCustomObject({
    ...crd,
    namespace: ns,
    body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionRequest', metadata: { name, annotations }, spec },
  });
}

/** The phases of `pvx wait`'s progress lines ("  12s  Expanding  reason: message"), in order. */
function progressPhases(stdout: string): string[] {
  return stdout.split('\n').flatMap((line) => {
    const m = /^\s*\d+(?:s|m\d\ds|h\d\dm)\s{2}(\w+)/.exec(line);
    return m ? [m[1] as string] : [];
  });
}

// The order a request moves in when a running pod mounts its claim.
const phaseOrder = ['Created', 'Pending', 'Expanding', 'ControllerExpanding', 'WaitingForPod', 'NodeExpansionPending', 'Completed'];
const growable = e2eEnv.usageClass as string;

describe.skipIf(!e2eEnv.usageClass)('pvx wait and pvx status on a request that completes', () => {
  it('wait, started before the request exists, prints each phase in order and exits 0 on Completed; status shows it Completed', async () => {
    await createPVC(ns, 'data', growable, '1Gi');
    await bindPVC(ns, 'data');
    await createPod(ns, 'app', 'data');
    await waitForPodRunning(ns, 'app');

    // As a script would: wait at once, the request arriving just after.
    const waiting = startPvxCli(['wait', 'ver/grow', '-n', ns, '--timeout', '3m']);
    await waitFor('pvx wait to follow the request', 20_000, async () => waiting.stdout.includes('following ver/grow'), 100);
    // "following" is printed before wait's first list (one request, milliseconds): give that list
    // time to find nothing, so that the request's creation is seen as it happens.
    await new Promise((r) => setTimeout(r, 2000));
    await createRequest('grow', { target: { pvcName: 'data' }, size: '2Gi' });
    const { code, ms } = await waiting.exited;
    console.log(`pvx wait ver/grow: exit ${code} after ${ms} ms\n${waiting.stdout}${waiting.stderr}`);

    expect(code, waiting.stderr).toBe(0);
    const phases = progressPhases(waiting.stdout);
    expect(phases[0]).toBe('Created');
    expect(phases).toContain('Expanding');
    expect(phases[phases.length - 1]).toBe('Completed');
    const positions = phases.map((p) => phaseOrder.indexOf(p));
    expect(
      positions.every((pos) => pos >= 0),
      phases.join(' → '),
    ).toBe(true);
    expect(positions, `phases in order: ${phases.join(' → ')}`).toEqual([...positions].sort((a, b) => a - b));
    expect(waiting.stdout).toMatch(/^ver\/grow completed in \d+\S*: capacity 2Gi$/m);

    const asJson = await cli(['status', '-n', ns, '-o', 'json']);
    expect(asJson.code, asJson.stderr).toBe(0);
    const list = JSON.parse(asJson.stdout) as { kind: string; items: VolumeExpansionRequest[] };
    expect(list.kind).toBe('List');
    expect(list.items.find((r) => r.metadata.name === 'grow')?.status).toMatchObject({ phase: 'Completed', fromCapacity: '1Gi', targetSize: '2Gi' });

    const table = await cli(['status', '-n', ns]);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME\s+TARGET\s+FROM\s+TO\s+CLASS\s+PHASE\s+REASON\s+AGE\s+IN PHASE\s+MESSAGE$/);
    expect(table.stdout).toMatch(/^grow\s+pvc\/data\s+1Gi\s+2Gi\s+-\s+Completed\s+Completed\s+\S+\s+\S+$/m);
  });

  it('wait exits 1 when the request it follows is deleted, and status lists active requests first', async () => {
    await createPVC(ns, 'held', growable, '1Gi');
    await bindPVC(ns, 'held');
    // Awaiting approval keeps the request Pending for as long as the test needs.
    await createRequest('held', { target: { pvcName: 'held' }, size: '3Gi' }, { 'pvx.dev/approval': 'required' });
    const waiting = startPvxCli(['wait', 'held', '-n', ns, '--timeout', '2m']);
    await waitFor('pvx wait to show the request Pending', 60_000, async () => progressPhases(waiting.stdout).includes('Pending'), 100);

    const table = await cli(['status', '-n', ns]);
    const rows = table.stdout.trimEnd().split('\n').slice(1);
    expect(rows[0]).toMatch(/^held\s+pvc\/held\s+1Gi\s+3Gi\s+-\s+Pending\s+AwaitingApproval\s+\S+\s+\S+\s+would grow held from 1Gi to 3Gi/);
    // Whatever else the namespace holds is finished, so it comes after.
    for (const row of rows.slice(1)) expect(row).toMatch(/\s(Completed|Failed|Rejected)\s/);

    await custom.deleteNamespacedCustomObject({ ...crd, namespace: ns, name: 'held' });
    const { code } = await waiting.exited;
    expect(code).toBe(1);
    expect(waiting.stderr).toMatch(/ver\/held was deleted while waiting for it \(its last phase: Pending\)/);
  });
});

describe.skipIf(!e2eEnv.fixedClass)('pvx wait on a request pvx rejects', () => {
  it('exits 1, printing Rejected and the reason', async () => {
    await createPVC(ns, 'fixed', e2eEnv.fixedClass as string, '1Gi');
    await bindPVC(ns, 'fixed');
    await createRequest('grow-fixed', { target: { pvcName: 'fixed' }, size: '2Gi' });
    const { code, stdout, stderr } = await cli(['wait', 'volumeexpansionrequests.pvx.dev/grow-fixed', '-n', ns, '--timeout', '1m']);
    expect(code, stdout + stderr).toBe(1);
    expect(progressPhases(stdout).at(-1)).toBe('Rejected');
    expect(stderr).toMatch(/^pvx: ver\/grow-fixed Rejected in \S+ \(ExpansionNotAllowed\): .*allowVolumeExpansion/m);
  });
});

describe('pvx wait on a request that never comes', () => {
  it('waits for it until the timeout, then exits 4 saying it does not exist', async () => {
    const { code, ms, stderr } = await cli(['wait', 'ver/never', '-n', ns, '--timeout', '5s']);
    expect(code).toBe(4);
    expect(stderr).toMatch(/timed out after 5s waiting for ver\/never in namespace .*: it does not exist/);
    // It waited the timeout, and not much longer (node's start-up included).
    expect(ms).toBeGreaterThanOrEqual(5000);
    expect(ms).toBeLessThan(15_000);
  });

  it('refuses a target that is not a request with exit 2', async () => {
    const { code, stderr } = await cli(['wait', 'pvc/data', '-n', ns]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/"pvc" is not one/);
  });
});

describe('pvx status on an empty namespace', () => {
  it('says there are no requests there', async () => {
    const empty = await createNamespace('pvx-e2e-cli-empty');
    try {
      const { code, stdout } = await cli(['status', '-n', empty]);
      expect(code).toBe(0);
      expect(stdout.trim()).toBe(`no VolumeExpansionRequests in namespace ${empty}`);
    } finally {
      await deleteNamespace(empty);
    }
  });
});
