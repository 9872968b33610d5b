// The cluster a seed starts from, and the small vocabulary of objects the actors and the user
// write. Kept small on purpose (one namespace, two to four claims): a seed must run in tens of
// milliseconds, and the bugs live in interleavings, not in numbers of objects.
import type { V1Namespace, V1Node, V1PersistentVolumeClaim, V1Pod, V1ResourceQuota, V1StatefulSet, V1StorageClass, V1VolumeAttributesClass } from '@kubernetes/client-node';
import type { FakeKubeClient } from '../../src/k8s/testing/fake-client.ts';
import { GiB, parseBytes } from '../../src/k8s/quantity.ts';
import { namespaces, resources, volumeExpansionPolicies } from '../../src/k8s/resources.ts';
import type { VolumeExpansionPolicy } from '../../src/crds/volume-expansion-policy.ts';
import type { Random } from './random.ts';

export const namespace = 'db';

/**
 * The storage classes and what their drivers do, which pvx only partly knows:
 *   - fast: the embedded cluster's hostpath driver; its maximum is the class parameter pvx reads,
 *     and it needs the node step (the kubelet grows the filesystem);
 *   - block: a driver pvx has no profile for, with a maximum pvx cannot see (so a too-large
 *     target is accepted and ends ControllerResizeInfeasible), growing without a node step;
 *   - ebs: AWS EBS gp3, whose errors (the rate limit among them) are all ControllerResizeError.
 */
export interface ClassModel {
  provisioner: string;
  parameters: Record<string, string>;
  /** Largest size the driver accepts (bytes); above it the resize is infeasible. */
  driverMaxBytes: bigint;
  nodeStep: boolean;
  /** The text of the driver's transient errors. */
  errorText: string;
}

export const classModels: Record<string, ClassModel> = {
  fast: { provisioner: 'hostpath.pvx.dev', parameters: { maxVolumeSize: '60Gi' }, driverMaxBytes: 60n * GiB, nodeStep: true, errorText: 'rpc error: code = Internal desc = hostpath: resize of the backing file failed: no space left on device' },
  block: { provisioner: 'block.sim.pvx.dev', parameters: {}, driverMaxBytes: 40n * GiB, nodeStep: false, errorText: 'rpc error: code = Unavailable desc = backend busy' },
  ebs: {
    provisioner: 'ebs.csi.aws.com',
    parameters: { type: 'gp3' },
    driverMaxBytes: 16n * 1024n * GiB,
    nodeStep: true,
    errorText: 'rpc error: code = Internal desc = Could not resize volume "vol-0abc": operation error EC2: ModifyVolume, https response error StatusCode: 400, api error VolumeModificationRateExceeded: You\'ve reached the maximum modification rate per volume limit. Wait at least 6 hours between modifications per EBS volume.',
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
  return { apiVersion: 'storage.k8s.io/v1', kind: 'VolumeAttributesClass', metadata: { name }, driverName: m.driverName, parameters: m.infeasible ? { iops: '999999' } : { iops: '4000' } };
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
  return { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name }, provisioner: m.provisioner, parameters: m.parameters, allowVolumeExpansion };
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
    spec: { storageClassName: cls, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: `${sizeGi}Gi` } }, volumeName: `pv-${name}`, ...(vac ? { volumeAttributesClassName: vac } : {}) },
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

export interface World {
  /** Claims a request may name (the StatefulSet's among them). */
  claims: string[];
  statefulSetReplicas: number;
  /** The VolumeExpansionPolicy of this seed, if any: it grows claims as the usage model fills them. */
  policy?: VolumeExpansionPolicy;
}

export const nodeName = 'node-1';

/** A policy over every claim of the namespace, in one of its modes, with a maximum below some class maxima. */
export function policy(rng: Random): VolumeExpansionPolicy {
  return {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionPolicy',
    metadata: { name: 'grow', namespace },
    spec: {
      triggers: { usedPercent: rng.pick([70, 80, 90]), sustainedSamples: rng.int(1, 3) },
      step: { percent: rng.pick([20, 50, 100]) },
      maxSize: `${rng.int(20, 70)}Gi`,
      cooldown: rng.pick(['1m', '5m', '30m']),
      mode: rng.weighted<'Auto' | 'DryRun' | 'Approval'>([
        ['Auto', 6],
        ['Approval', 2],
        ['DryRun', 1],
      ]),
    },
  };
}

/** Creates the starting cluster: classes, 2–3 claims (maybe a StatefulSet's), pods for some, maybe a quota. */
export function createWorld(api: FakeKubeClient, rng: Random): World {
  api.asActor('admin', () => {
    api.create(namespaces, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels: { team: 'db' } } } as V1Namespace);
    for (const name of Object.keys(classModels)) api.create(resources.storageClasses, storageClass(name));
    for (const [name, m] of Object.entries(attributesClassModels)) if (!m.late) api.create(resources.volumeAttributesClasses, attributesClass(name));
  });
  const claims: string[] = [];
  const clsNames = Object.keys(classModels);
  const singles = rng.int(1, 2);
  for (let i = 0; i < singles; i++) claims.push(`claim-${i}`);
  const replicas = rng.chance(0.3) ? 2 : 0;
  api.asActor('admin', () => {
    for (const name of claims) {
      const cls = rng.pick(clsNames);
      const good = attributesClassesOf(cls).filter((v) => !attributesClassModels[v]?.infeasible);
      api.create(resources.persistentVolumeClaims, claim(name, cls, rng.int(5, 20), undefined, rng.chance(0.3) ? good[0] : undefined));
    }
    if (replicas > 0) {
      const sts: V1StatefulSet = {
        apiVersion: 'apps/v1',
        kind: 'StatefulSet',
        metadata: { name: statefulSetName, namespace },
        spec: {
          replicas,
          serviceName: statefulSetName,
          selector: { matchLabels: { app: statefulSetName } },
          template: { metadata: { labels: { app: statefulSetName } } },
          volumeClaimTemplates: [{ metadata: { name: templateName }, spec: { storageClassName: 'fast', resources: { requests: { storage: '10Gi' } } } }],
        },
      };
      api.create(resources.statefulSets, sts);
      for (let i = 0; i < replicas; i++) {
        const name = `${templateName}-${statefulSetName}-${i}`;
        api.create(resources.persistentVolumeClaims, claim(name, 'fast', 10, { app: statefulSetName }));
        claims.push(name);
      }
    }
    for (const name of claims) if (rng.chance(0.7)) api.create(resources.pods, pod(name));
    if (rng.chance(0.4)) api.create(resources.resourceQuotas, quota(rng.int(40, 200)));
    api.create(resources.nodes, { apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName }, status: { conditions: [{ type: 'Ready', status: 'True' }] } } as V1Node);
  });
  const p = rng.chance(0.5) ? policy(rng) : undefined;
  if (p) api.asActor('admin', () => api.create(volumeExpansionPolicies, p));
  return { claims, statefulSetReplicas: replicas, policy: p };
}
