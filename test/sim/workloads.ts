// Workloads around the claims, for the two opt-ins that act on them (StatefulSet templates that
// follow their claims, offline node expansion): a StatefulSet controller, the garbage collector,
// the disruption controller, a driver whose filesystems grow only when a volume is mounted anew,
// and the person who asks for both. All of it only in the seeds that draw workload mode (from a
// stream of its own, so no other seed changes), playing Kubernetes' documented behaviour:
//   - the StatefulSet controller adopts the pods its selector matches that no controller owns,
//     creates the pod of a missing ordinal (and its claim, at the template's size, from a
//     template) — so pods keep running, orphaned, while their StatefulSet is deleted and created again;
//   - the garbage collector, a while after an orphaning delete, takes the ownerReferences off the
//     dependents and removes the object (FakeKubeClient.collectGarbage);
//   - the disruption controller sets each PodDisruptionBudget's disruptionsAllowed from the ready
//     pods it selects (the Eviction API spends it; FakeKubeClient.evictPod);
//   - the offline driver grows the volume in its controller step, and at the node step refuses to
//     grow a filesystem in use (NodeResizeError, FailedPrecondition: as the kubelet records a
//     driver's "volume in use") until a pod other than the one refused mounts the claim.
import type { V1PersistentVolumeClaim, V1Pod, V1PodDisruptionBudget, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import type { RequestSpec, VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import { podDisruptionBudgets, type FakeKubeClient } from '../../src/k8s/testing/fake-client.ts';
import { resources, volumeExpansionRequests } from '../../src/k8s/resources.ts';
import type { Random } from './random.ts';
import type { Trace } from './trace.ts';
import { bytes, namespace } from './world.ts';

/** The class whose driver grows filesystems only when mounted anew, and the StatefulSet that uses it. */
export const offlineClass = 'offline';
export const offlineProvisioner = 'offline.sim.pvx.dev';
export const queueName = 'queue';
const delay = { gcMs: [200, 20_000], podStartMs: [500, 15_000], resizeMs: [300, 30_000] } as const;

const isReady = (p: V1Pod) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp;
const selectorOf = (sts: V1StatefulSet) => sts.spec?.selector?.matchLabels ?? {};
const matches = (labels: Record<string, string> | undefined, selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels?.[k] === v);
const claimsOf = (p: V1Pod) => (p.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : []));

function boundClaim(name: string, cls: string, size: string, labels: Record<string, string>): V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace, labels },
    spec: { storageClassName: cls, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: size } }, volumeName: `pv-${name}` },
    status: { phase: 'Bound', capacity: { storage: size } },
  };
}

/** Sets up workload mode: the offline class, a StatefulSet of it with its claims and pods, maybe a PodDisruptionBudget. */
export function createWorkloads(api: FakeKubeClient, rng: Random): void {
  api.asActor('admin', () => {
    api.create(resources.storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: offlineClass },
      provisioner: offlineProvisioner,
      allowVolumeExpansion: true,
    } as V1StorageClass);
    const replicas = rng.int(1, 3);
    api.create(resources.statefulSets, {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: queueName, namespace },
      spec: {
        replicas,
        serviceName: queueName,
        selector: { matchLabels: { app: queueName } },
        template: { metadata: { labels: { app: queueName } }, spec: { containers: [{ name: 'app', image: 'app' }] } },
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { storageClassName: offlineClass, resources: { requests: { storage: '5Gi' } } } }],
      },
    } as V1StatefulSet);
    if (rng.chance(0.6)) {
      api.create(podDisruptionBudgets, {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: queueName, namespace },
        spec: { minAvailable: rng.int(1, replicas), selector: { matchLabels: { app: queueName } } },
      } as V1PodDisruptionBudget);
    }
  });
}

/** The StatefulSet controller: adopts matching orphans, and creates the pod (and claim) of a missing ordinal. */
export class StatefulSetController {
  private readonly due = new Map<string, number>();
  private readonly api: FakeKubeClient;
  private readonly rng: Random;
  private readonly trace: Trace;

  constructor(api: FakeKubeClient, rng: Random, trace: Trace) {
    this.api = api;
    this.rng = rng;
    this.trace = trace;
  }

  step(now: number): void {
    const pods = this.api.peek<V1Pod>(resources.pods);
    for (const sts of this.api.peek<V1StatefulSet>(resources.statefulSets)) {
      if (sts.metadata?.deletionTimestamp) continue;
      const name = sts.metadata?.name as string;
      const uid = sts.metadata?.uid as string;
      const selector = selectorOf(sts);
      const template = sts.spec?.volumeClaimTemplates?.[0];
      for (const pod of pods) {
        if (pod.metadata?.namespace !== namespace || pod.metadata.deletionTimestamp || pod.metadata.ownerReferences?.some((o) => o.controller)) continue;
        const own = matches(pod.metadata.labels, selector) || claimsOf(pod).some((c) => template && c.startsWith(`${template.metadata?.name}-${name}-`));
        if (!own) continue;
        this.api.asActor('statefulset-controller', () =>
          this.api.update(resources.pods, {
            ...pod,
            metadata: {
              ...pod.metadata,
              resourceVersion: undefined,
              ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name, uid, controller: true }],
            },
          }),
        );
        this.trace.add('actor', `statefulset controller adopts pod ${pod.metadata.name} into ${name}`);
      }
      if (!template) continue;
      const start = sts.spec?.ordinals?.start ?? 0;
      for (let i = start; i < start + (sts.spec?.replicas ?? 1); i++) {
        const claim = `${template.metadata?.name}-${name}-${i}`;
        if (pods.some((p) => !p.metadata?.deletionTimestamp && claimsOf(p).includes(claim))) {
          this.due.delete(claim);
          continue;
        }
        const at = this.due.get(claim);
        if (at === undefined) {
          this.due.set(claim, now + this.rng.duration(...delay.podStartMs));
          continue;
        }
        if (now < at) continue;
        this.due.delete(claim);
        this.api.asActor('statefulset-controller', () => {
          if (!this.api.get(resources.persistentVolumeClaims, namespace, claim)) {
            this.api.create(
              resources.persistentVolumeClaims,
              boundClaim(claim, template.spec?.storageClassName ?? 'fast', template.spec?.resources?.requests?.storage ?? '1Gi', selector),
            );
          }
          const podName = `${name}-${i}`;
          if (this.api.get(resources.pods, namespace, podName)) return;
          this.api.create(resources.pods, {
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: {
              name: podName,
              namespace,
              labels: selector,
              ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name, uid, controller: true }],
            },
            spec: { nodeName: 'node-1', containers: [{ name: 'app', image: 'app' }], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }] },
            status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
          } as V1Pod);
        });
        this.trace.add('actor', `statefulset controller creates pod ${name}-${i} (claim ${claim})`);
      }
    }
  }
}

/** The garbage collector, a while after each orphaning delete. */
export class GarbageCollector {
  private readonly due = new Map<string, number>();
  private readonly api: FakeKubeClient;
  private readonly rng: Random;
  private readonly trace: Trace;

  constructor(api: FakeKubeClient, rng: Random, trace: Trace) {
    this.api = api;
    this.rng = rng;
    this.trace = trace;
  }

  step(now: number): void {
    const deleting = this.api.peek<V1StatefulSet>(resources.statefulSets).filter((s) => s.metadata?.deletionTimestamp);
    if (deleting.length === 0) return;
    let ready = false;
    for (const s of deleting) {
      const uid = s.metadata?.uid as string;
      const at = this.due.get(uid) ?? now + this.rng.duration(...delay.gcMs);
      this.due.set(uid, at);
      if (now >= at) ready = true;
    }
    if (!ready) return;
    const done = this.api.asActor('garbage-collector', () => this.api.collectGarbage());
    for (const key of done) this.trace.add('actor', `garbage collector orphans the pods of ${key} and removes it`);
  }
}

/** The disruption controller: each budget's disruptionsAllowed from the ready pods it selects. */
export class DisruptionController {
  private readonly api: FakeKubeClient;

  constructor(api: FakeKubeClient) {
    this.api = api;
  }

  step(): void {
    const pods = this.api.peek<V1Pod>(resources.pods);
    for (const pdb of this.api.peek<V1PodDisruptionBudget>(podDisruptionBudgets)) {
      const healthy = pods.filter(
        (p) => p.metadata?.namespace === pdb.metadata?.namespace && isReady(p) && matches(p.metadata?.labels, pdb.spec?.selector?.matchLabels ?? {}),
      ).length;
      const desired = Number(pdb.spec?.minAvailable ?? 0);
      const status = {
        currentHealthy: healthy,
        desiredHealthy: desired,
        expectedPods: healthy,
        disruptionsAllowed: Math.max(0, healthy - desired),
        observedGeneration: 1,
      };
      const s = pdb.status;
      if (s && s.currentHealthy === status.currentHealthy && s.desiredHealthy === status.desiredHealthy && s.disruptionsAllowed === status.disruptionsAllowed)
        continue;
      this.api.asActor('disruption-controller', () =>
        this.api.update(podDisruptionBudgets, { ...pdb, metadata: { ...pdb.metadata, resourceVersion: undefined }, status } as V1PodDisruptionBudget),
      );
    }
  }
}

/**
 * The offline driver (its resizer and its node plugin, as the kubelet reports them): the
 * controller step, then at the node step a refusal in use, and growth when another pod mounts.
 */
export class OfflineDriver {
  private readonly controllerDone = new Map<string, number>();
  /** Per claim (UID), the pod whose mount the kubelet refused to grow it under. */
  private readonly refusedUnder = new Map<string, string>();
  /** Claims (UIDs) whose driver refuses at every mount, anew ones too (a driver that cannot grow them at all). */
  private readonly stubborn = new Set<string>();
  private readonly api: FakeKubeClient;
  private readonly rng: Random;
  private readonly trace: Trace;

  constructor(api: FakeKubeClient, rng: Random, trace: Trace) {
    this.api = api;
    this.rng = rng;
    this.trace = trace;
  }

  step(now: number): void {
    const pods = this.api.peek<V1Pod>(resources.pods).filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
    for (const pvc of this.api.peek<V1PersistentVolumeClaim>(resources.persistentVolumeClaims)) {
      if (pvc.spec?.storageClassName !== offlineClass || pvc.status?.phase !== 'Bound') continue;
      const uid = pvc.metadata?.uid as string;
      const spec = pvc.spec?.resources?.requests?.storage ?? '0';
      const capacity = pvc.status?.capacity?.storage ?? '0';
      const state = pvc.status?.allocatedResourceStatuses?.storage;
      const write = (status: V1PersistentVolumeClaim['status'], what: string) => {
        this.api.asActor('offline-driver', () =>
          this.api.update(resources.persistentVolumeClaims, { ...pvc, metadata: { ...pvc.metadata, resourceVersion: undefined }, status }),
        );
        this.trace.add('actor', `offline driver: ${pvc.metadata?.name} ${what}`);
      };
      if (!state && bytes(spec) > bytes(capacity)) {
        const at = this.controllerDone.get(uid) ?? now + this.rng.duration(...delay.resizeMs);
        this.controllerDone.set(uid, at);
        if (now < at) continue;
        this.controllerDone.delete(uid);
        write(
          {
            ...pvc.status,
            allocatedResources: { storage: spec },
            allocatedResourceStatuses: { storage: 'NodeResizePending' },
            conditions: [{ type: 'FileSystemResizePending', status: 'True', lastTransitionTime: new Date() }],
          },
          `volume grew to ${spec}; node step pending`,
        );
        continue;
      }
      if (state !== 'NodeResizePending' && state !== 'NodeResizeInProgress') continue;
      const mounting = pods.find((p) => claimsOf(p).includes(pvc.metadata?.name as string));
      if (!mounting) continue;
      const refused = this.refusedUnder.get(uid);
      if (refused === undefined) {
        if (this.rng.chance(0.25)) this.stubborn.add(uid);
        this.refusedUnder.set(uid, mounting.metadata?.uid as string);
        write(
          {
            ...pvc.status,
            allocatedResourceStatuses: { storage: 'NodeResizeInProgress' },
            conditions: [
              { type: 'FileSystemResizePending', status: 'True', lastTransitionTime: new Date() },
              {
                type: 'NodeResizeError',
                status: 'True',
                lastTransitionTime: new Date(),
                message:
                  'failed to expand pvc with Expander.NodeExpand failed to expand the volume : rpc error: code = FailedPrecondition desc = volume in use',
              },
            ],
          },
          `the kubelet cannot grow it in use under pod ${mounting.metadata?.name}`,
        );
      } else if (refused !== mounting.metadata?.uid && this.stubborn.has(uid)) {
        // Mounted anew, and the driver refuses again: the kubelet records it once more.
        this.refusedUnder.set(uid, mounting.metadata?.uid as string);
        write(
          {
            ...pvc.status,
            conditions: [
              ...(pvc.status?.conditions ?? []).filter((c) => c.type !== 'NodeResizeError'),
              {
                type: 'NodeResizeError',
                status: 'True',
                lastTransitionTime: new Date(),
                message:
                  'failed to expand pvc with Expander.NodeExpand failed to expand the volume : rpc error: code = FailedPrecondition desc = volume in use',
              },
            ],
          },
          `the kubelet cannot grow it under pod ${mounting.metadata?.name} either (the driver refuses at every mount)`,
        );
      } else if (refused !== mounting.metadata?.uid) {
        this.refusedUnder.delete(uid);
        write(
          {
            ...pvc.status,
            capacity: { storage: pvc.status?.allocatedResources?.storage ?? spec },
            allocatedResources: undefined,
            allocatedResourceStatuses: undefined,
            conditions: [],
          },
          `grew as pod ${mounting.metadata?.name} mounted it anew`,
        );
      }
    }
  }
}

/** The person who asks for the opt-ins: template updates, evictions, scaling, budgets, deleted requests. */
export class WorkloadUser {
  private created = 0;
  private readonly api: FakeKubeClient;
  private readonly rng: Random;
  private readonly trace: Trace;

  constructor(api: FakeKubeClient, rng: Random, trace: Trace) {
    this.api = api;
    this.rng = rng;
    this.trace = trace;
  }

  act(): void {
    const sets = this.api.peek<V1StatefulSet>(resources.statefulSets).filter((s) => !s.metadata?.deletionTimestamp);
    const action = this.rng.weighted<'template' | 'evict' | 'scale' | 'budget' | 'manage' | 'deleteRequest'>([
      ['template', this.created < 4 && sets.length > 0 ? 4 : 0],
      ['evict', this.created < 4 ? 4 : 0],
      ['scale', sets.length > 0 ? 1 : 0],
      ['budget', 1],
      ['manage', sets.length > 0 ? 0.5 : 0],
      ['deleteRequest', 0.5],
    ]);
    this.api.asActor('user', () => this[action](sets));
  }

  private create(name: string, spec: RequestSpec): void {
    this.api.create(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name, namespace },
      spec,
    } as VolumeExpansionRequest);
    this.trace.add('action', `create ${name} ${JSON.stringify(spec)}`);
  }

  private template(sets: V1StatefulSet[]): void {
    const sts = this.rng.pick(sets);
    const template = sts.spec?.volumeClaimTemplates?.[0]?.metadata?.name as string;
    const sizing = this.rng.chance(0.5) ? { size: `${this.rng.int(6, 30)}Gi` } : { increment: this.rng.pick(['1Gi', '50%']) };
    this.create(`tpl-${this.created++}`, {
      target: { statefulSetName: sts.metadata?.name as string, volumeClaimTemplate: template },
      ...sizing,
      statefulSetTemplate: { update: true, evenIfManaged: this.rng.chance(0.3) },
      ...(this.rng.chance(0.3) ? { offlineNodeExpansion: 'EvictPod' as const } : {}),
      ...(this.rng.chance(0.2) ? { deadline: this.rng.pick(['2m', '10m']) } : {}),
    });
  }

  private evict(): void {
    const claims = this.api.peek<V1PersistentVolumeClaim>(resources.persistentVolumeClaims).filter((c) => c.spec?.storageClassName === offlineClass);
    if (claims.length === 0) return;
    const claim = this.rng.pick(claims);
    const capacity = Number(bytes(claim.status?.capacity?.storage ?? '1Gi') / 1024n ** 3n);
    this.create(`evict-${this.created++}`, {
      target: { pvcName: claim.metadata?.name as string },
      size: `${capacity + this.rng.int(1, 5)}Gi`,
      offlineNodeExpansion: this.rng.chance(0.8) ? 'EvictPod' : 'Wait',
    });
  }

  private scale(sets: V1StatefulSet[]): void {
    const sts = this.rng.pick(sets);
    const replicas = this.rng.int(1, 3);
    this.api.update(resources.statefulSets, {
      ...sts,
      metadata: { ...sts.metadata, resourceVersion: undefined },
      spec: { ...sts.spec, replicas },
    } as V1StatefulSet);
    this.trace.add('action', `scale StatefulSet ${sts.metadata?.name} to ${replicas}`);
  }

  private budget(): void {
    const pdb = this.api.get<V1PodDisruptionBudget>(podDisruptionBudgets, namespace, queueName);
    if (!pdb) return;
    const minAvailable = this.rng.int(0, 2);
    this.api.update(podDisruptionBudgets, {
      ...pdb,
      metadata: { ...pdb.metadata, resourceVersion: undefined },
      spec: { ...pdb.spec, minAvailable },
    } as V1PodDisruptionBudget);
    this.trace.add('action', `PodDisruptionBudget ${queueName} minAvailable ${minAvailable}`);
  }

  /** A GitOps tool takes the StatefulSet over (its label), or lets it go. */
  private manage(sets: V1StatefulSet[]): void {
    const sts = this.rng.pick(sets);
    const labels = { ...sts.metadata?.labels };
    const managed = labels['kustomize.toolkit.fluxcd.io/name'] !== undefined;
    if (managed) delete labels['kustomize.toolkit.fluxcd.io/name'];
    else labels['kustomize.toolkit.fluxcd.io/name'] = 'apps';
    this.api.update(resources.statefulSets, { ...sts, metadata: { ...sts.metadata, resourceVersion: undefined, labels } } as V1StatefulSet);
    this.trace.add('action', `${managed ? 'Flux lets go of' : 'Flux takes over'} StatefulSet ${sts.metadata?.name}`);
  }

  /** kubectl delete of a request: one holding a StatefulSet's record stays until pvx lets it go. */
  private deleteRequest(): void {
    const requests = this.api
      .peek<VolumeExpansionRequest>(volumeExpansionRequests)
      .filter((r) => !r.metadata.deletionTimestamp && (r.spec.statefulSetTemplate || r.spec.offlineNodeExpansion));
    if (requests.length === 0) return;
    const r = this.rng.pick(requests);
    this.api.delete(volumeExpansionRequests, namespace, r.metadata.name as string);
    this.trace.add('action', `delete request ${r.metadata.name}`);
  }
}
