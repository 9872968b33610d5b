import type { V1Node, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1ResourceQuota, V1StorageClass } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { VolumeExpansionPolicy } from '../crds/volume-expansion-policy.ts';
import { FakeKubeClient } from '../k8s/testing/fake-client.ts';
import { GiB } from '../k8s/quantity.ts';
import { resources, volumeExpansionPolicies } from '../k8s/resources.ts';
import type { UsageSample } from '../policies/autoscale/sampling.ts';
import { dfReport, dfRows, parseDfArgs, renderDf, sortRows, usageBar, type DfInput } from './df.ts';

const now = new Date('2026-03-01T12:00:00Z');
const ago = (s: number) => new Date(now.getTime() - s * 1000);

function claim(
  name: string,
  opts: { size?: string; className?: string; phase?: string; annotations?: Record<string, string>; labels?: Record<string, string> } = {},
): V1PersistentVolumeClaim {
  const size = opts.size ?? '10Gi';
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'db', uid: `uid-${name}`, labels: opts.labels ?? { app: 'db' }, annotations: opts.annotations },
    spec: { storageClassName: opts.className ?? 'fast', volumeName: `pv-${name}`, resources: { requests: { storage: size } } },
    status: { phase: opts.phase ?? 'Bound', capacity: { storage: size } },
  };
}

const classes: V1StorageClass[] = [
  {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name: 'fast' },
    provisioner: 'ebs.csi.aws.com',
    parameters: { type: 'gp2' },
    allowVolumeExpansion: true,
  },
  { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'fixed' }, provisioner: 'hostpath.pvx.dev', allowVolumeExpansion: false },
];

const policy: VolumeExpansionPolicy = {
  apiVersion: 'pvx.dev/v1alpha1',
  kind: 'VolumeExpansionPolicy',
  metadata: { name: 'grow', namespace: 'db', uid: 'p1' },
  spec: { selector: { matchLabels: { app: 'db' } }, triggers: { usedPercent: 80 }, maxSize: '50Gi' },
};

const sample = (secondsAgo: number, usedGi: number, capacityGi = 10): UsageSample => ({
  at: ago(secondsAgo),
  usedBytes: BigInt(Math.round(usedGi * 1024)) * (GiB / 1024n),
  capacityBytes: BigInt(capacityGi) * GiB,
  inodes: 1000,
  inodesUsed: 250,
});

const running = (claimName: string): V1Pod => ({
  metadata: { name: `pod-${claimName}`, namespace: 'db' },
  spec: { containers: [], volumes: [{ name: 'v', persistentVolumeClaim: { claimName } }] },
  status: { phase: 'Running' },
});

/** The claim's PersistentVolume, of the claim's capacity. */
const volumeOf = (c: V1PersistentVolumeClaim): V1PersistentVolume => ({
  metadata: { name: c.spec?.volumeName },
  spec: { capacity: { storage: c.status?.capacity?.storage ?? '0' } },
});

function input(
  claims: V1PersistentVolumeClaim[],
  samples: Record<string, UsageSample[]>,
  extra: { pods?: V1Pod[]; policies?: VolumeExpansionPolicy[]; quotas?: V1ResourceQuota[] } = {},
): DfInput {
  return {
    snapshot: {
      pvcs: claims,
      pvs: claims.map(volumeOf),
      storageClasses: classes,
      statefulSets: [],
      resourceQuotas: extra.quotas ?? [],
      pods: extra.pods ?? claims.map((c) => running(c.metadata?.name ?? '')),
      requests: [],
      policies: extra.policies ?? [policy],
      clusterPolicies: [],
    },
    samples: (key) => samples[key] ?? [],
    now,
  };
}

describe('dfRows', () => {
  it('shows size, use, the forecast’s time to full, the policy, its maximum and the headroom', () => {
    // 1 GiB more each minute for three minutes: 4 GiB free fill in 4 minutes.
    const [row] = dfRows(input([claim('data')], { 'db/data': [sample(180, 3), sample(120, 4), sample(60, 5), sample(0, 6)] }));
    expect(row).toMatchObject({
      name: 'data',
      sizeBytes: 10n * GiB,
      usage: { usedBytes: 6n * GiB, availableBytes: 4n * GiB, usedRatio: 0.6, inodesRatio: 0.25 },
      timeToFullMs: 240_000,
      policy: 'vep/grow',
      maxBytes: 50n * GiB,
      maxFrom: 'policy',
      headroomBytes: 40n * GiB,
      canGrow: { grow: 'yes' },
    });
  });

  it('says why a claim has no usage or no forecast', () => {
    const rows = dfRows(input([claim('idle'), claim('few'), claim('pending', { phase: 'Pending' })], { 'db/few': [sample(0, 5)] }, { pods: [running('few')] }));
    expect(rows[0]?.usage).toBeUndefined();
    expect(rows[0]?.noUsage).toMatch(/not mounted by a running pod/);
    expect(rows[1]?.timeToFullMs).toBeUndefined();
    expect(rows[1]?.noForecast).toBe('1 distinct measurement: the forecast needs 3 (--samples)');
    expect(rows[2]).toMatchObject({ noUsage: 'not bound (Pending)', canGrow: { grow: 'no' } });
    expect(dfRows({ ...input([claim('x')], {}), samples: undefined })[0]?.noUsage).toMatch(/usage not read/);
  });

  it('does not show another file system’s usage as the volume’s', () => {
    const [row] = dfRows(input([claim('host')], { 'db/host': [sample(0, 100, 500)] }));
    expect(row?.usage).toBeUndefined();
    expect(row?.noUsage).toMatch(/reports 500 GiB for this 10 GiB volume/);
  });

  it('tells whether the claim can grow: class, driver’s largest volume, budget', () => {
    const fixed = claim('fixed', { className: 'fixed' });
    // gp2 volumes stop at 16 TiB, below the policy's maximum here.
    const huge = { ...claim('huge', { size: '16Ti' }) };
    // Four modifications in the last 24 h: EBS allows the next when the oldest leaves the window.
    const ledger = JSON.stringify({
      v: 1,
      spec: { size: '10Gi' },
      mods: [1, 2, 3, 4].map((h) => ({ at: ago(h * 3600).toISOString(), by: 'observed:kubectl', size: '10Gi' })),
    });
    const spent = claim('spent', { annotations: { 'pvx.dev/modifications': ledger } });
    const rows = dfRows(input([fixed, huge, spent], {}, { policies: [{ ...policy, spec: { ...policy.spec, maxSize: '64Ti' } }] }));
    expect(rows[0]?.canGrow).toEqual({
      grow: 'no',
      gate: 'storage-class',
      why: 'StorageClass fixed does not allow volume expansion (allowVolumeExpansion is not true); the API server would refuse the change (ExpansionNotAllowed)',
    });
    expect(rows[1]).toMatchObject({
      maxBytes: 16n * 1024n * GiB,
      maxFrom: 'driver',
      headroomBytes: 0n,
      canGrow: { grow: 'no', why: expect.stringContaining('at the largest volume ebs.csi.aws.com makes') },
    });
    expect(rows[2]?.canGrow).toMatchObject({ grow: 'later', nextAt: ago(4 * 3600 - 24 * 3600) });
  });

  // "Can grow" was a hand-ordered copy of the why chain's gates, and it skipped the quota: a claim a
  // ResourceQuota had no room for showed "yes". It is the chain's verdict now.
  it('says no when a ResourceQuota has no room for the next step, as pvx why does', () => {
    const full: V1ResourceQuota = {
      metadata: { name: 'storage', namespace: 'db' },
      spec: { hard: { 'requests.storage': '10Gi' } },
      status: { hard: { 'requests.storage': '10Gi' }, used: { 'requests.storage': '10Gi' } },
    };
    const [row] = dfRows(input([claim('data')], {}, { quotas: [full] }));
    expect(row?.canGrow).toMatchObject({ grow: 'no', gate: 'quota', why: expect.stringContaining('storage') });
    // No policy: judged for the step a policy of the defaults would take.
    const [alone] = dfRows(input([claim('data')], {}, { quotas: [full], policies: [] }));
    expect(alone?.canGrow).toMatchObject({ grow: 'no', gate: 'quota' });
    expect(dfRows(input([claim('data')], {}, { policies: [] }))[0]?.canGrow.grow).toBe('yes');
  });

  it('says unknown where the reader may not list what decides it', () => {
    const hidden = { ...input([claim('data', { className: 'hidden' })], {}), unreadable: new Set(['storageclasses']) };
    expect(dfRows(hidden)[0]?.canGrow).toMatchObject({
      grow: 'unknown',
      gate: 'storage-class',
      why: expect.stringContaining('not allowed to list StorageClasses'),
    });
  });

  it('shows no policy and no maximum for a claim no policy takes', () => {
    const [row] = dfRows(input([claim('other', { labels: { app: 'web' }, className: 'fixed' })], {}));
    expect([row?.policy, row?.maxBytes, row?.headroomBytes]).toEqual([undefined, undefined, undefined]);
  });
});

describe('sortRows', () => {
  const rows = dfRows(
    input([claim('a'), claim('b'), claim('c'), claim('d')], {
      'db/a': [sample(0, 2)],
      'db/b': [sample(120, 5), sample(60, 7), sample(0, 9)],
      'db/c': [sample(120, 1), sample(60, 2), sample(0, 5)],
    }),
  );
  it.each([
    ['used', ['b', 'c', 'a', 'd']],
    ['free', ['b', 'c', 'a', 'd']],
    ['ttf', ['b', 'c', 'a', 'd']],
    [undefined, ['a', 'b', 'c', 'd']],
  ] as const)('--sort %s', (sort, names) => {
    expect(sortRows(rows, sort).map((r) => r.name)).toEqual(names);
  });
});

describe('usageBar', () => {
  it.each([
    [0, '[----------]'],
    [0.44, '[####------]'],
    [1, '[##########]'],
    [undefined, '-'],
  ])('%s → %s', (ratio, bar) => expect(usageBar(ratio)).toBe(bar));
});

describe('parseDfArgs', () => {
  it('takes the table’s flags and checks their values', () => {
    expect(parseDfArgs(['-A', '--sort', 'ttf', '-o', 'wide', '--inodes'], {})).toMatchObject({
      allNamespaces: true,
      sort: 'ttf',
      output: 'wide',
      inodes: true,
      usage: 'kubelet',
      samples: 1,
    });
    expect(() => parseDfArgs(['--sort', 'size'], {})).toThrow(/--sort must be one of used, free, ttf/);
    expect(() => parseDfArgs(['-o', 'yaml'], {})).toThrow(/--output must be one of table, wide, json/);
    expect(() => parseDfArgs(['--usage', 'prometheus'], {})).toThrow(/needs --prometheus-url/);
  });
});

describe('pvx df against a fake cluster, usage from the kubelet', () => {
  async function dfOf(args: string[]) {
    const fake = new FakeKubeClient();
    for (const sc of classes) fake.create(resources.storageClasses, sc);
    fake.create(volumeExpansionPolicies, policy);
    for (const c of [claim('data'), claim('logs', { className: 'fixed', labels: { app: 'logs' } })]) {
      fake.create(resources.persistentVolumeClaims, c);
      fake.create(resources.persistentVolumes, volumeOf(c));
    }
    fake.create(resources.pods, {
      ...running('data'),
      metadata: { name: 'pod-data', namespace: 'db', uid: 'uid-pod-data' },
      spec: { ...running('data').spec, nodeName: 'node-1' },
    });
    fake.create(resources.nodes, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-1' },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    } as V1Node);
    fake.summaries.set('node-1', {
      pods: [
        {
          podRef: { namespace: 'db', name: 'pod-data', uid: 'uid-pod-data' },
          volume: [
            {
              pvcRef: { namespace: 'db', name: 'data' },
              time: ago(12).toISOString(),
              capacityBytes: Number(10n * GiB),
              usedBytes: Number(3n * GiB),
              inodes: 1000,
              inodesUsed: 100,
            },
          ],
        },
      ],
    });
    const opts = parseDfArgs(args, {});
    return {
      opts,
      report: await dfReport(
        fake,
        opts,
        'db',
        () => fake,
        () => now,
      ),
    };
  }

  it('prints a df table with the source and the readings’ age below', async () => {
    const { opts, report } = await dfOf([]);
    expect(renderDf(report, opts, now)).toBe(
      [
        'NAME   SIZE    USED   AVAIL   USE%   BAR            TTF   POLICY     MAX     HEADROOM   GROW',
        'data   10GiB   3GiB   7GiB    30%    [###-------]   -     vep/grow   50GiB   40GiB      yes',
        'logs   10GiB   -      -       -      -              -     none       -       -          no',
        '',
        'usage from kubelet: 1 of 2 claims measured, readings 12s old',
        '',
      ].join('\n'),
    );
  });

  it('-o wide adds the class, inode use and why; -o json parses', async () => {
    const wide = await dfOf(['-o', 'wide']);
    const lines = renderDf(wide.report, wide.opts, now).split('\n');
    expect(lines[0]).toMatch(/^NAME\s+CLASS\s+SIZE\s+USED\s+AVAIL\s+USE%\s+IUSE%\s+BAR\s+TTF\s+POLICY\s+MAX\s+HEADROOM\s+GROW\s+WHY$/);
    expect(lines[1]).toMatch(/^data\s+fast\s+10GiB\s+3GiB\s+7GiB\s+30%\s+10%\s+\[###-------\]\s+-\s+vep\/grow\s+50GiB\s+40GiB\s+yes\s+-$/);
    expect(lines[2]).toMatch(
      /^logs\s+fixed\s.*\snot mounted by a running pod: the kubelet measures mounted volumes only; StorageClass fixed does not allow volume expansion \(allowVolumeExpansion is not true\); the API server would refuse the change \(ExpansionNotAllowed\)$/,
    );
    const json = await dfOf(['-o', 'json']);
    const doc = JSON.parse(renderDf(json.report, json.opts, now)) as { usageSource: string; claims: Record<string, unknown>[] };
    expect(doc.usageSource).toBe('kubelet');
    expect(doc.claims[0]).toMatchObject({
      name: 'data',
      sizeBytes: 10 * 2 ** 30,
      usedBytes: 3 * 2 ** 30,
      usedPercent: 30,
      inodesUsedPercent: 10,
      policy: 'vep/grow',
      canGrow: 'yes',
      measuredAt: ago(12).toISOString(),
    });
    expect(doc.claims[1]).toMatchObject({ name: 'logs', usedBytes: null, noUsage: expect.stringContaining('not mounted'), canGrow: 'no' });
  });
});
