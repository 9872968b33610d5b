// The cluster a seed starts from, and the small vocabulary of objects the actors and the user
// write. Kept small on purpose (one namespace, a few claims): a seed must run in tens of
// milliseconds, and the bugs live in interleavings, not in numbers of objects. What is drawn
// reaches every field the decisions read: every spec field of the three CRDs (odd values among
// them), StatefulSets of every shape, overlapping policies, guardrails, a namespace seen late.
import type {
  V1Namespace,
  V1Node,
  V1PersistentVolumeClaim,
  V1Pod,
  V1ResourceQuota,
  V1StatefulSet,
  V1StorageClass,
  V1VolumeAttributesClass,
} from '@kubernetes/client-node';
import type { FakeKubeClient } from '../../src/k8s/testing/fake-client.ts';
import { GiB, parseBytes } from '../../src/k8s/quantity.ts';
import { clusterVolumeExpansionPolicies, namespaces, resources, volumeExpansionPolicies } from '../../src/k8s/resources.ts';
import type { PolicySpec, VolumeExpansionPolicy } from '../../src/crds/volume-expansion-policy.ts';
import type { ClusterVolumeExpansionPolicy } from '../../src/crds/cluster-volume-expansion-policy.ts';
import type { Random } from './random.ts';

export const namespace = 'db';

/**
 * The storage classes and what their drivers do, which pvx only partly knows:
 *   - fast: the embedded cluster's hostpath driver; its maximum is the class parameter pvx reads,
 *     and it needs the node step (the kubelet grows the filesystem);
 *   - block: a driver pvx has no profile for, with a maximum pvx cannot see (so a too-large
 *     target is accepted and ends ControllerResizeInfeasible), growing without a node step;
 *   - ebs: AWS EBS gp3, whose errors (the rate limit among them) are all ControllerResizeError;
 *   - lvm: TopoLVM, whose node has room for 30Gi: above it every attempt is refused "not enough
 *     space" (a refusal pvx's profile knows no retry gets past), which the resizer retries for ever.
 */
export interface ClassModel {
  provisioner: string;
  parameters: Record<string, string>;
  /** Largest size the driver accepts (bytes); above it the resize is infeasible. */
  driverMaxBytes: bigint;
  nodeStep: boolean;
  /** The text of the driver's transient errors. */
  errorText: string;
  /** Above this size the driver refuses every attempt, in refusalText's words, until the request is lowered (the resizer retries for ever). */
  refusesAboveBytes?: bigint;
  refusalText?: string;
}

export const classModels: Record<string, ClassModel> = {
  fast: {
    provisioner: 'hostpath.pvx.dev',
    parameters: { maxVolumeSize: '60Gi' },
    driverMaxBytes: 60n * GiB,
    nodeStep: true,
    errorText: 'rpc error: code = Internal desc = hostpath: resize of the backing file failed: no space left on device',
  },
  block: {
    provisioner: 'block.sim.pvx.dev',
    parameters: {},
    driverMaxBytes: 40n * GiB,
    nodeStep: false,
    errorText: 'rpc error: code = Unavailable desc = backend busy',
  },
  ebs: {
    provisioner: 'ebs.csi.aws.com',
    parameters: { type: 'gp3' },
    driverMaxBytes: 16n * 1024n * GiB,
    nodeStep: true,
    errorText:
      'rpc error: code = Internal desc = Could not resize volume "vol-0abc": operation error EC2: ModifyVolume, https response error StatusCode: 400, api error VolumeModificationRateExceeded: You\'ve reached the maximum modification rate per volume limit. Wait at least 6 hours between modifications per EBS volume.',
  },
  lvm: {
    provisioner: 'topolvm.io',
    parameters: {},
    driverMaxBytes: 1024n * GiB,
    nodeStep: true,
    errorText: 'rpc error: code = DeadlineExceeded desc = context deadline exceeded',
    refusesAboveBytes: 30n * GiB,
    refusalText: 'rpc error: code = Internal desc = not enough space',
  },
};

/**
 * The VolumeAttributesClasses: per driver a good one and, for the drivers with a modify step, one
 * its driver refuses (Infeasible); one of another driver than any claim's; one that does not exist
 * until the user creates it (a request may name it first).
 */
export interface AttributesClassModel {
  driverName: string;
  /** The driver refuses it (InvalidArgument: modifyVolumeStatus Infeasible). */
  infeasible: boolean;
  /** Created by the user during the run, not at the start. */
  late?: boolean;
}

export const attributesClassModels: Record<string, AttributesClassModel> = {
  'fast-iops': { driverName: 'hostpath.pvx.dev', infeasible: false },
  'fast-turbo': { driverName: 'hostpath.pvx.dev', infeasible: false, late: true },
  'block-gold': { driverName: 'block.sim.pvx.dev', infeasible: false },
  'block-bad': { driverName: 'block.sim.pvx.dev', infeasible: true },
  'ebs-io2': { driverName: 'ebs.csi.aws.com', infeasible: false },
  'ebs-bad': { driverName: 'ebs.csi.aws.com', infeasible: true },
  'gke-balanced': { driverName: 'pd.csi.storage.gke.io', infeasible: false },
};

export function attributesClass(name: string): V1VolumeAttributesClass {
  const m = attributesClassModels[name] as AttributesClassModel;
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'VolumeAttributesClass',
    metadata: { name },
    driverName: m.driverName,
    parameters: m.infeasible ? { iops: '999999' } : { iops: '4000' },
  };
}

const parsed = new Map<string, bigint>();
/** parseBytes, remembered: the actors and invariants read the same few sizes after every step. */
export function bytes(quantity: string): bigint {
  let b = parsed.get(quantity);
  if (b === undefined) {
    b = parseBytes(quantity);
    parsed.set(quantity, b);
  }
  return b;
}

export const className = (pvc: V1PersistentVolumeClaim): string => pvc.spec?.storageClassName ?? '';

export function storageClass(name: string, allowVolumeExpansion = true): V1StorageClass {
  const m = classModels[name] as ClassModel;
  return {
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name },
    provisioner: m.provisioner,
    parameters: m.parameters,
    allowVolumeExpansion,
  };
}

/** The VolumeAttributesClasses of a StorageClass's driver that exist from the start. */
export function attributesClassesOf(cls: string): string[] {
  const driver = classModels[cls]?.provisioner;
  return Object.entries(attributesClassModels)
    .filter(([, m]) => m.driverName === driver && !m.late)
    .map(([name]) => name);
}

/** A bound claim; with `vac`, provisioned with that VolumeAttributesClass (asked for and applied). */
export function claim(name: string, cls: string, sizeGi: number, labels?: Record<string, string>, vac?: string): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace, labels },
    spec: {
      storageClassName: cls,
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: `${sizeGi}Gi` } },
      volumeName: `pv-${name}`,
      ...(vac ? { volumeAttributesClassName: vac } : {}),
    },
    status: { phase: 'Bound', capacity: { storage: `${sizeGi}Gi` }, ...(vac ? { currentVolumeAttributesClassName: vac } : {}) },
  };
}

export function pod(claimName: string): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `pod-${claimName}`, namespace },
    spec: { nodeName: 'node-1', containers: [{ name: 'app', image: 'app' }], volumes: [{ name: 'data', persistentVolumeClaim: { claimName } }] },
    status: { phase: 'Running' },
  };
}

export function quota(hardGi: number): V1ResourceQuota {
  return { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'storage', namespace }, spec: { hard: { 'requests.storage': `${hardGi}Gi` } } };
}

export const statefulSetName = 'web';
export const templateName = 'data';
export const nodeName = 'node-1';
/** The labels of the namespace (cluster guardrails and cluster policies select it by them). */
export const namespaceLabels = { team: 'db' };

export interface World {
  /** Claims a request may name (the StatefulSet's among them, retained ones too). */
  claims: string[];
  /** The StatefulSet as created, if any. */
  statefulSet?: { replicas: number; start: number };
  /** Whether the namespace object is created later than its claims (pvx's cache learns of it late). */
  namespaceLate: boolean;
  /** The policies as created at the start (more may be created during the run). */
  policies: VolumeExpansionPolicy[];
  clusterPolicies: ClusterVolumeExpansionPolicy[];
  /** The StorageClasses of this world (classModels' names): the TopoLVM class in about a fifth of seeds. */
  classes: string[];
}

/** A namespaced policy's name by its index: grow, grow-b, grow-c … (the same second: the first by name governs). */
export const policyName = (i: number): string => (i === 0 ? 'grow' : `grow-${String.fromCharCode(97 + i)}`);

/**
 * A maintenance window: mostly none; one open often enough to matter; one pvx cannot read (not
 * cron, which admission refuses since the CRD's pattern — a policy created before it still exists —
 * or a time zone the runtime does not know, which only pvx can refuse).
 */
function windows(rng: Random): PolicySpec['windows'] {
  return rng.weighted<PolicySpec['windows']>([
    [undefined, 14],
    [[{ schedule: '*/10 * * * *', duration: '5m' }], 2],
    [[{ schedule: '0 * * * *', duration: '20m', timeZone: 'Europe/Berlin' }], 1],
    [[{ schedule: 'every night', duration: '1h' }], 1],
    [[{ schedule: '0 2 * * *', duration: '1h', timeZone: 'Mars/Olympus_Mons' }], 1],
  ]);
}

/** What a policy's rules may say: every field of the spec, with odd values among them. */
export function policySpec(rng: Random, statefulSet: boolean): PolicySpec {
  const triggers: PolicySpec['triggers'] = {};
  const kind = rng.weighted<'used' | 'free' | 'forecast' | 'several'>([
    ['used', 6],
    ['free', 1],
    ['forecast', 1],
    ['several', 2],
  ]);
  if (kind === 'used' || kind === 'several') triggers.usedPercent = rng.pick([60, 70, 80, 90, 95]);
  if (kind === 'free' || kind === 'several') triggers.minFree = rng.pick(['1Gi', '3Gi', '1500Mi']);
  if (kind === 'forecast' || (kind === 'several' && rng.chance(0.5))) triggers.forecast = { horizon: rng.pick(['10m', '1h']), window: rng.pick(['2m', '10m']) };
  if (rng.chance(0.2)) triggers.inodesUsedPercent = 90;
  if (rng.chance(0.7)) triggers.sustainedSamples = rng.int(1, 3);
  const spec: PolicySpec = { triggers };
  if (rng.chance(0.8)) spec.step = { percent: rng.pick([10, 20, 50, 100, 300]), ...(rng.chance(0.3) ? { minimum: rng.pick(['1Gi', '5Gi', '512Mi']) } : {}) };
  if (rng.chance(0.6)) spec.maxSize = `${rng.int(15, 80)}Gi`;
  if (rng.chance(0.9)) spec.cooldown = rng.pick(['30s', '1m', '5m', '30m']);
  const w = windows(rng);
  if (w) spec.windows = w;
  spec.mode = rng.weighted<'Auto' | 'DryRun' | 'Approval'>([
    ['Auto', 6],
    ['Approval', 2],
    ['DryRun', 1],
  ]);
  if (rng.chance(0.3)) spec.selector = { matchLabels: rng.pick<Record<string, string>>([{ app: statefulSetName }, { tier: 'cache' }]) };
  if (rng.chance(0.25)) spec.storageClassNames = rng.pick([['fast'], ['fast', 'ebs'], ['block']]);
  if (statefulSet && rng.chance(0.2)) spec.statefulSetName = statefulSetName;
  return spec;
}

export function policy(rng: Random, index: number, statefulSet: boolean): VolumeExpansionPolicy {
  return {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionPolicy',
    metadata: { name: policyName(index), namespace },
    spec: policySpec(rng, statefulSet),
  };
}

/**
 * A cluster policy: guardrails over every request of the namespaces it selects (by label, or all),
 * maybe with triggers of its own (it then grows the claims no namespaced policy takes).
 */
export function clusterPolicy(rng: Random, name: string, statefulSet: boolean): ClusterVolumeExpansionPolicy {
  const guardrails: NonNullable<ClusterVolumeExpansionPolicy['spec']['guardrails']> = {};
  if (rng.chance(0.6)) guardrails.maxSize = `${rng.int(12, 60)}Gi`;
  if (rng.chance(0.4)) guardrails.maxStep = rng.pick(['2Gi', '5Gi', '10Gi']);
  if (rng.chance(0.3) || Object.keys(guardrails).length === 0)
    guardrails.allowedStorageClasses = rng.pick([['fast', 'ebs'], ['fast', 'block', 'ebs'], ['block']]);
  // Every expansion of the namespaces it selects waits for a person's approval, whoever asked.
  // Drawn from a stream of its own: the seeds' worlds and runs stay what they were before it.
  if (rng.fork(0x61707072).chance(0.15)) guardrails.requireApproval = true;
  const grows = rng.chance(0.35) ? policySpec(rng, statefulSet) : undefined;
  const { statefulSetName: _namespacedOnly, ...triggers } = grows ?? {};
  return {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'ClusterVolumeExpansionPolicy',
    metadata: { name },
    spec: {
      ...(rng.chance(0.6) ? { namespaceSelector: { matchLabels: namespaceLabels } } : {}),
      guardrails,
      ...(grows ? triggers : {}),
    } as ClusterVolumeExpansionPolicy['spec'],
  };
}

export function statefulSet(replicas: number, start: number): V1StatefulSet {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: statefulSetName, namespace },
    spec: {
      replicas,
      ...(start > 0 ? { ordinals: { start } } : {}),
      serviceName: statefulSetName,
      selector: { matchLabels: { app: statefulSetName } },
      template: { metadata: { labels: { app: statefulSetName } } },
      volumeClaimTemplates: [{ metadata: { name: templateName }, spec: { storageClassName: 'fast', resources: { requests: { storage: '10Gi' } } } }],
    },
  };
}

export const replicaClaim = (ordinal: number): string => `${templateName}-${statefulSetName}-${ordinal}`;

export function namespaceObject(): V1Namespace {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: namespaceLabels } };
}

/**
 * Creates the starting cluster: classes, 1–2 claims, maybe a StatefulSet (replicas 0–3, ordinals
 * from 0 or 2, claims retained from an earlier life at other ordinals), pods for some, maybe a
 * quota, 0–3 namespaced policies (overlapping when they select the same claims) and 0–2 cluster
 * policies; the namespace object now, or later in the run.
 */
export function createWorld(api: FakeKubeClient, rng: Random): World {
  // Drawn from a stream of its own, so that a world without it is the world its seed made before
  // the class was added (the CI batch's rare decisions stay where they were reached).
  const classes = Object.keys(classModels).filter((c) => c !== 'lvm' || rng.fork(0x70a1).chance(0.2));
  const namespaceLate = rng.chance(0.2);
  api.asActor('admin', () => {
    if (!namespaceLate) api.create(namespaces, namespaceObject());
    for (const name of classes) api.create(resources.storageClasses, storageClass(name));
    for (const [name, m] of Object.entries(attributesClassModels)) if (!m.late) api.create(resources.volumeAttributesClasses, attributesClass(name));
  });
  const claims: string[] = [];
  const clsNames = classes;
  const singles = rng.int(1, 2);
  for (let i = 0; i < singles; i++) claims.push(`claim-${i}`);
  const sts = rng.chance(0.35)
    ? {
        replicas: rng.weighted([
          [0, 1],
          [1, 2],
          [2, 4],
          [3, 2],
        ] as const),
        start: rng.chance(0.3) ? 2 : 0,
      }
    : undefined;
  api.asActor('admin', () => {
    for (const name of claims) {
      const cls = rng.pick(clsNames);
      const good = attributesClassesOf(cls).filter((v) => !attributesClassModels[v]?.infeasible);
      api.create(
        resources.persistentVolumeClaims,
        claim(name, cls, rng.int(5, 20), rng.chance(0.3) ? { tier: 'cache' } : undefined, rng.chance(0.3) ? good[0] : undefined),
      );
    }
    if (sts) {
      api.create(resources.statefulSets, statefulSet(sts.replicas, sts.start));
      const live = Array.from({ length: sts.replicas }, (_, i) => sts.start + i);
      // Claims retained from an earlier life: below a raised ordinals.start, or past a scale-down.
      const retained = [
        ...(sts.start > 0 && rng.chance(0.6) ? Array.from({ length: sts.start }, (_, i) => i) : []),
        ...(rng.chance(0.2) ? [sts.start + sts.replicas] : []),
      ];
      for (const ordinal of [...live, ...retained]) {
        const name = replicaClaim(ordinal);
        api.create(resources.persistentVolumeClaims, claim(name, 'fast', 10, { app: statefulSetName }));
        claims.push(name);
        if (live.includes(ordinal) && rng.chance(0.7)) api.create(resources.pods, pod(name));
      }
    }
    for (const name of claims.filter((c) => c.startsWith('claim-'))) if (rng.chance(0.7)) api.create(resources.pods, pod(name));
    if (rng.chance(0.4)) api.create(resources.resourceQuotas, quota(rng.int(40, 200)));
    api.create(resources.nodes, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: nodeName },
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    } as V1Node);
  });
  const policies = Array.from(
    {
      length: rng.weighted([
        [0, 5],
        [1, 5],
        [2, 2],
        [3, 1],
      ] as const),
    },
    (_, i) => policy(rng, i, sts !== undefined),
  );
  const clusterPolicies = Array.from(
    {
      length: rng.weighted([
        [0, 5],
        [1, 3],
        [2, 1],
      ] as const),
    },
    (_, i) => clusterPolicy(rng, i === 0 ? 'fleet' : 'fleet-b', sts !== undefined),
  );
  api.asActor('admin', () => {
    for (const p of policies) api.create(volumeExpansionPolicies, p);
    for (const p of clusterPolicies) api.create(clusterVolumeExpansionPolicies, p);
  });
  return { claims, ...(sts ? { statefulSet: sts } : {}), namespaceLate, policies, clusterPolicies, classes };
}
