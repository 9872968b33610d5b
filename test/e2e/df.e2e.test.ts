// `pvx df` runs as a child process against a real cluster: a claim of the usage class (whose
// volumes report their own usage in the kubelet's volume stats) with bytes written shows its size
// and use as df would, -o json parses, and --sort orders the claims.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPvx, type CliResult } from './support/cli.ts';
import { e2eEnv } from './support/env.ts';
import { bindPVC, createNamespace, createPod, createPVC, deleteNamespace, waitFor, waitForPodRunning } from './support/kube.ts';

const MiB = 2 ** 20;
let ns: string;

beforeAll(async () => {
  ns = await createNamespace('pvx-e2e-df');
});

afterAll(async () => {
  if (ns) await deleteNamespace(ns);
});

/** `pvx ARGS` against the test cluster. */
const cli = (args: string[]): Promise<CliResult> => runPvx([...args, '--kubeconfig', e2eEnv.kubeconfig], 120_000);

interface DfClaim {
  name: string;
  sizeBytes: number | null;
  usedBytes: number | null;
  availableBytes: number | null;
  usedPercent: number | null;
  measuredAt: string | null;
  noUsage: string | null;
  canGrow: string;
}

const dfJson = async (): Promise<{ usageSource: string | null; claims: DfClaim[] }> => {
  const { code, stdout, stderr } = await cli(['df', '-n', ns, '-o', 'json']);
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as { usageSource: string | null; claims: DfClaim[] };
};

describe.skipIf(!e2eEnv.usageClass)('pvx df on mounted claims with bytes written', () => {
  it('shows each claim’s size and use within tolerance, -o json parses, --sort orders', async () => {
    const usageClass = e2eEnv.usageClass as string;
    // Two mounted claims, one fuller than the other, and one no pod mounts.
    for (const [claim, mib] of [
      ['fuller', 600],
      ['emptier', 100],
    ] as const) {
      await createPVC(ns, claim, usageClass, '1Gi');
      await bindPVC(ns, claim);
      await createPod(ns, claim, claim, `dd if=/dev/zero of=/data/fill bs=1M count=${mib} && sync && touch /data/done; sleep 3600`);
    }
    await createPVC(ns, 'idle', usageClass, '1Gi');
    await bindPVC(ns, 'idle');
    await waitForPodRunning(ns, 'fuller');
    await waitForPodRunning(ns, 'emptier');

    // The kubelet measures a volume every 1–2 minutes: wait until both readings show the bytes.
    let doc = await dfJson();
    await waitFor(
      'the kubelet to measure the written bytes',
      240_000,
      async () => {
        doc = await dfJson();
        const used = (name: string) => doc.claims.find((c) => c.name === name)?.usedBytes ?? 0;
        return used('fuller') >= 590 * MiB && used('emptier') >= 95 * MiB;
      },
      5000,
    );

    expect(doc.usageSource).toBe('kubelet');
    const fuller = doc.claims.find((c) => c.name === 'fuller') as DfClaim;
    expect(fuller.sizeBytes).toBe(1024 * MiB);
    // XFS keeps some of the volume for itself: used is the bytes written and a little more.
    expect(fuller.usedBytes).toBeGreaterThanOrEqual(600 * MiB);
    expect(fuller.usedBytes).toBeLessThan(700 * MiB);
    expect(fuller.availableBytes).toBeGreaterThan(250 * MiB);
    expect(fuller.availableBytes).toBeLessThan(430 * MiB);
    expect(fuller.usedPercent).toBeGreaterThan(55);
    expect(fuller.usedPercent).toBeLessThan(70);
    expect(Date.parse(fuller.measuredAt as string)).toBeGreaterThan(Date.now() - 5 * 60_000);
    expect(fuller.canGrow).toBe('yes');
    const idle = doc.claims.find((c) => c.name === 'idle') as DfClaim;
    expect(idle.usedBytes).toBeNull();
    expect(idle.noUsage).toMatch(/not mounted by a running pod/);

    const table = await cli(['df', '-n', ns]);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+SIZE\s+USED\s+AVAIL\s+USE%\s+BAR\s+TTF\s+POLICY\s+MAX\s+HEADROOM\s+GROW$/);
    expect(table.stdout).toMatch(/^fuller\s+1GiB\s+6\d\d(\.\d+)?MiB\s+\S+\s+(5[5-9]|6\d)%\s+\[#+-*\]\s/m);
    expect(table.stdout).toMatch(/^idle\s+1GiB\s+-\s+-\s+-\s+-\s/m);
    expect(lines.at(-1)).toMatch(/^usage from kubelet: 2 of 3 claims measured, readings \S+( ?– ?\S+)? old$/);

    const byUse = await cli(['df', '-n', ns, '--sort', 'used']);
    expect(byUse.code, byUse.stderr).toBe(0);
    const order = byUse.stdout
      .split('\n')
      .slice(1)
      .map((l) => l.split(/\s+/)[0])
      .filter((n) => n && ['fuller', 'emptier', 'idle'].includes(n));
    expect(order).toEqual(['fuller', 'emptier', 'idle']);
    const byFree = await cli(['df', '-n', ns, '--sort', 'free']);
    const freeOrder = byFree.stdout
      .split('\n')
      .slice(1)
      .map((l) => l.split(/\s+/)[0])
      .filter((n) => n && ['fuller', 'emptier', 'idle'].includes(n));
    expect(freeOrder).toEqual(['fuller', 'emptier', 'idle']);
  });
});
