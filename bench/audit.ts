// Time and memory of one audit pass (every rule over a cluster snapshot), for clusters of several
// sizes side by side in one run — what the operator spends every --audit-interval and `pvx audit`
// once. Pure and in-process: the snapshot is synthetic, shaped like a real cluster's (StatefulSets
// of 3, a pod per claim, policies, a quota per namespace, some claims mid-resize or refused).
//
//   node --expose-gc bench/audit.ts [--sizes 1000,10000,50000] [--runs 7]
import type { V1Namespace, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1ResourceQuota, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import { cpus, totalmem } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { VolumeExpansionPolicy } from '../src/crds/volume-expansion-policy.ts';
import { audit, type AuditSnapshot } from '../src/policies/audit/rules.ts';

const { values } = parseArgs({ options: { sizes: { type: 'string', default: '1000,10000,50000' }, runs: { type: 'string', default: '7' } } });
const sizes = (values.sizes ?? '').split(',').map(Number);
const runs = Number(values.runs);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc, so heap figures are measured after a collection');

const GiB = 1024 ** 3;
const now = new Date('2026-11-30T12:00:00Z');
const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000).toISOString();

/** n claims in namespaces of 100, as StatefulSets of 3 (a template and ordinals), each mounted by a running pod. */
function snapshot(n: number): AuditSnapshot {
  const storageClasses: V1StorageClass[] = [
    { metadata: { name: 'gp3' }, provisioner: 'ebs.csi.aws.com', allowVolumeExpansion: true, parameters: { type: 'gp3' } },
    { metadata: { name: 'fixed' }, provisioner: 'ebs.csi.aws.com', allowVolumeExpansion: false },
  ];
  const pvcs: V1PersistentVolumeClaim[] = [];
  const pvs: V1PersistentVolume[] = [];
  const pods: V1Pod[] = [];
  const statefulSets: V1StatefulSet[] = [];
  const namespaces: V1Namespace[] = [];
  const resourceQuotas: V1ResourceQuota[] = [];
  const policies: VolumeExpansionPolicy[] = [];
  for (let i = 0; i < n; i++) {
    const namespace = `ns-${Math.floor(i / 100)}`;
    const sts = `db-${Math.floor(i / 3)}`;
    const name = `data-${sts}-${i % 3}`;
    if (i % 100 === 0) {
      namespaces.push({ metadata: { name: namespace, labels: { team: `t${i % 7}` } } });
      resourceQuotas.push({
        metadata: { name: 'storage', namespace },
        spec: { hard: { 'requests.storage': '2000Gi' } },
        status: { hard: { 'requests.storage': '2000Gi' }, used: { 'requests.storage': `${100 * 10}Gi` } },
      });
      policies.push({
        apiVersion: 'pvx.dev/v1alpha1',
        kind: 'VolumeExpansionPolicy',
        metadata: { name: 'grow', namespace },
        spec: { selector: { matchLabels: { app: 'db' } }, triggers: { usedPercent: 80 } },
      });
    }
    if (i % 3 === 0)
      statefulSets.push({
        metadata: { name: sts, namespace },
        spec: {
          selector: {},
          serviceName: sts,
          template: {},
          volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '10Gi' } } } }],
        },
      });
    // Every 50th claim is mid-resize on the node, every 97th refused, every 211th on a fixed class.
    const resizing = i % 50 === 0;
    const infeasible = i % 97 === 0;
    pvcs.push({
      metadata: { name, namespace, labels: { app: 'db' }, uid: `uid-${i}` },
      spec: {
        storageClassName: i % 211 === 0 ? 'fixed' : 'gp3',
        volumeName: `pv-${i}`,
        resources: { requests: { storage: resizing || infeasible ? '20Gi' : '10Gi' } },
      },
      status: {
        phase: 'Bound',
        capacity: { storage: '10Gi' },
        ...(resizing
          ? {
              allocatedResources: { storage: '20Gi' },
              allocatedResourceStatuses: { storage: 'NodeResizePending' },
              conditions: [{ type: 'FileSystemResizePending', status: 'True', lastTransitionTime: ago(30) as unknown as Date }],
            }
          : {}),
        ...(infeasible ? { allocatedResourceStatuses: { storage: 'ControllerResizeInfeasible' } } : {}),
      },
    });
    pvs.push({ metadata: { name: `pv-${i}` }, spec: { capacity: { storage: '10Gi' }, claimRef: { namespace, name } } });
    pods.push({
      metadata: { name: `${sts}-${i % 3}`, namespace },
      spec: { containers: [], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: name } }] },
      status: { phase: 'Running' },
    });
  }
  const usage = new Map(
    pvcs.map((p, i) => [
      `${p.metadata?.namespace}/${p.metadata?.name}`,
      { at: new Date(now.getTime() - 30_000), usedBytes: BigInt(Math.round(((i % 10) / 10) * 10 * GiB)), capacityBytes: BigInt(10 * GiB) },
    ]),
  );
  return { pvcs, pvs, storageClasses, statefulSets, resourceQuotas, pods, requests: [], policies, clusterPolicies: [], namespaces, usage };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const mib = (b: number) => (b / 1024 ** 2).toFixed(1);

console.log(
  `# audit pass — ${new Date().toISOString().slice(0, 10)}, ${cpus().length} × ${cpus()[0]?.model.trim()}, ${Math.round(totalmem() / 1024 ** 3)} GiB, Node ${process.version}, ${runs} runs each\n`,
);
console.log('| PVCs | findings | median pass | min pass | per PVC | heap held by the snapshot | heap growth during a pass |');
console.log('|---|---|---|---|---|---|---|');
for (const n of sizes) {
  gc();
  const before = process.memoryUsage().heapUsed;
  const snap = snapshot(n);
  gc();
  const held = process.memoryUsage().heapUsed - before;
  const times: number[] = [];
  let findings = 0;
  let growth = 0;
  for (let r = 0; r < runs; r++) {
    gc();
    const start = process.memoryUsage().heapUsed;
    const t0 = performance.now();
    findings = audit(snap, { now }).length;
    times.push(performance.now() - t0);
    growth = Math.max(growth, process.memoryUsage().heapUsed - start);
  }
  const med = median(times);
  console.log(
    `| ${n} | ${findings} | ${med.toFixed(0)} ms | ${Math.min(...times).toFixed(0)} ms | ${((med * 1000) / n).toFixed(1)} µs | ${mib(held)} MiB | ${mib(growth)} MiB |`,
  );
}
