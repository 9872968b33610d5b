// Workloads around the claims, for the two opt-ins that act on them (StatefulSet templates that
// follow their claims, offline node expansion): the world they start from, a driver whose
// filesystems grow only when a volume is mounted anew, and the person who asks for both and does
// what people do to workloads. All of it only in the seeds that draw workload mode (from a stream of
// its own, so no other seed changes); Kubernetes' own controllers around them are in
// workload-controllers.ts. The offline driver grows the volume in its controller step, and at the
// node step refuses to grow a filesystem in use (NodeResizeError, FailedPrecondition: as the
// kubelet records a driver's "volume in use") until a pod other than the one refused mounts the
// claim — and, for some claims, refuses at every mount.
import type {
  V1PersistentVolumeClaim,
  V1PersistentVolumeClaimCondition,
  V1Pod,
  V1PodDisruptionBudget,
  V1StatefulSet,
  V1StorageClass,
} from '@kubernetes/client-node';
import type { RequestSpec, RequestStatus, VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import { orphanFinalizer, podDisruptionBudgets, type FakeKubeClient } from '../../src/k8s/testing/fake-client.ts';
import { namespaces, resources, volumeExpansionPolicies, volumeExpansionRequests } from '../../src/k8s/resources.ts';
import type { VolumeExpansionPolicy } from '../../src/crds/volume-expansion-policy.ts';
import type { Random } from './random.ts';
import type { Trace } from './trace.ts';
import { SimActor } from './actors.ts';
import { bytes, namespace, namespaceObject } from './world.ts';
import { brokenImage, claimsOf, gracefulFinalizer, protectFinalizer, refusedInGoneNamespace, type PodLifecycle } from './workload-controllers.ts';

/** The class whose driver grows filesystems only when mounted anew, and the StatefulSet that uses it. */
export const offlineClass = 'offline';
export const offlineProvisioner = 'offline.sim.pvx.dev';
export const queueName = 'queue';
const delay = { resizeMs: [300, 30_000] } as const;
const fresh = <T extends { metadata?: object }>(o: T): T => ({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });

/** Sets up workload mode: the offline class, a StatefulSet of it with its claims and pods, maybe a PodDisruptionBudget. */
/** A claim's status once the kubelet grew its filesystem: the allocated size is its capacity, nothing pending. */
function grownStatus(pvc: V1PersistentVolumeClaim, spec: string): V1PersistentVolumeClaim['status'] {
  return {
    ...pvc.status,
    capacity: { storage: pvc.status?.allocatedResources?.storage ?? spec },
    allocatedResources: undefined,
    allocatedResourceStatuses: undefined,
    conditions: [],
  };
}

/** The condition the kubelet records when the driver refuses to grow a mounted volume. */
function refusedInUse(): V1PersistentVolumeClaimCondition {
  return {
    type: 'NodeResizeError',
    status: 'True',
    lastTransitionTime: new Date(),
    message: 'failed to expand pvc with Expander.NodeExpand failed to expand the volume : rpc error: code = FailedPrecondition desc = volume in use',
  };
}

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
    const strategy = rng.weighted<NonNullable<V1StatefulSet['spec']>['updateStrategy']>([
      [undefined, 4],
      [{ type: 'RollingUpdate', rollingUpdate: { partition: rng.int(1, 2) } }, 1],
      [{ type: 'OnDelete' }, 1],
    ]);
    const retention = rng.chance(0.3) ? { whenDeleted: rng.pick(['Retain', 'Delete']), whenScaled: rng.pick(['Retain', 'Delete']) } : undefined;
    api.create(resources.statefulSets, {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: queueName, namespace, ...(rng.chance(0.2) ? { finalizers: [protectFinalizer] } : {}) },
      spec: {
        replicas,
        serviceName: queueName,
        selector: { matchLabels: { app: queueName } },
        template: { metadata: { labels: { app: queueName } }, spec: { containers: [{ name: 'app', image: 'app:1' }] } },
        ...(strategy ? { updateStrategy: strategy } : {}),
        ...(retention ? { persistentVolumeClaimRetentionPolicy: retention } : {}),
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
    // A policy over the StatefulSet's claims, at times asking its template to follow them and its
    // pods to be evicted when the driver grows only at mount: the policy side of both opt-ins.
    if (rng.chance(0.6)) {
      api.create(volumeExpansionPolicies, {
        apiVersion: 'pvx.dev/v1alpha1',
        kind: 'VolumeExpansionPolicy',
        // Named to come first of the policies created in the same second: it governs the claims it selects.
        metadata: { name: 'a-grow-queue', namespace },
        spec: {
          statefulSetName: queueName,
          triggers: { usedPercent: rng.pick([60, 70, 80]), sustainedSamples: rng.int(1, 2) },
          step: { percent: rng.pick([20, 50]) },
          cooldown: rng.pick(['30s', '1m']),
          ...(rng.chance(0.5) ? { statefulSetTemplate: { update: true, evenIfManaged: rng.chance(0.3) } } : {}),
          ...(rng.chance(0.4) ? { offlineNodeExpansion: 'EvictPod' as const } : {}),
        },
      } as VolumeExpansionPolicy);
    }
  });
}

/**
 * The offline driver (its resizer and its node plugin, as the kubelet reports them): the
 * controller step, then at the node step a refusal in use, and growth when another pod mounts.
 */
export class OfflineDriver extends SimActor {
  private readonly controllerDone = new Map<string, number>();
  /** Per claim (UID), the pod whose mount the kubelet refused to grow it under. */
  private readonly refusedUnder = new Map<string, string>();
  /** Claims (UIDs) whose driver refuses at every mount, anew ones too (a driver that cannot grow them at all). */
  private readonly stubborn = new Set<string>();
  /** Per claim (UID), whether its driver grows it in use after all (drawn once). */
  private readonly grows = new Map<string, boolean>();

  private online(uid: string): boolean {
    if (!this.grows.has(uid)) this.grows.set(uid, this.rng.chance(0.5));
    return this.grows.get(uid) as boolean;
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
      // Half the volumes grow in use after all (the driver refuses only some: a busy filesystem, say).
      if (refused === undefined && this.online(uid)) {
        write(grownStatus(pvc, spec), `grew in use under pod ${mounting.metadata?.name}`);
        continue;
      }
      if (refused === undefined) {
        if (this.rng.chance(0.5)) this.stubborn.add(uid);
        this.refusedUnder.set(uid, mounting.metadata?.uid as string);
        write(
          {
            ...pvc.status,
            allocatedResourceStatuses: { storage: 'NodeResizeInProgress' },
            conditions: [{ type: 'FileSystemResizePending', status: 'True', lastTransitionTime: new Date() }, refusedInUse()],
          },
          `the kubelet cannot grow it in use under pod ${mounting.metadata?.name}`,
        );
      } else if (refused !== mounting.metadata?.uid && this.stubborn.has(uid)) {
        // Mounted anew, and the driver refuses again: the kubelet records it once more.
        this.refusedUnder.set(uid, mounting.metadata?.uid as string);
        write(
          {
            ...pvc.status,
            conditions: [...(pvc.status?.conditions ?? []).filter((c) => c.type !== 'NodeResizeError'), refusedInUse()],
          },
          `the kubelet cannot grow it under pod ${mounting.metadata?.name} either (the driver refuses at every mount)`,
        );
      } else if (refused !== mounting.metadata?.uid) {
        this.refusedUnder.delete(uid);
        write(grownStatus(pvc, spec), `grew as pod ${mounting.metadata?.name} mounted it anew`);
      }
    }
  }
}

type WorkloadAction =
  | 'template'
  | 'evict'
  | 'scale'
  | 'budget'
  | 'manage'
  | 'deleteRequest'
  | 'editStatefulSet'
  | 'deleteStatefulSet'
  | 'reapplyStatefulSet'
  | 'forgeStatus'
  | 'otherMounter'
  | 'crashLoop'
  | 'editWhileDeleting'
  | 'deleteNamespace';

/**
 * The people around the workloads: who asks for the opt-ins (template updates, evictions), and who
 * does what people do — scale, edit and delete StatefulSets (any propagation) and apply them again
 * from their source, change budgets, let a GitOps tool take a StatefulSet over, run a Job or a
 * debug pod on a claim, delete requests (their finalizers removed first), write a request's status
 * where their role allows, and, once in a while, delete the namespace.
 */
export class WorkloadUser {
  /** The simulated time of the last step (monotonic ms): when a reply looks again. */
  private at = 0;
  private created = 0;
  /** The StatefulSets as their owner last applied them (their source): what a GitOps tool applies again. */
  private readonly source = new Map<string, V1StatefulSet>();
  private readonly api: FakeKubeClient;
  private readonly rng: Random;
  private readonly trace: Trace;
  private readonly pods: PodLifecycle;
  /** Whether the namespace may be deleted now (late in the run: nothing is created in it after). */
  namespaceDeletable = false;
  /** The user deleted the namespace, and has not created one of the name again. */
  private namespaceDeleted = false;
  /** What the owner does in reply to pvx's steps, when (simulated ms): the races the opt-ins must survive. */
  private readonly replies: { at: number; what: string; act: () => void }[] = [];

  constructor(api: FakeKubeClient, rng: Random, trace: Trace, pods: PodLifecycle) {
    this.api = api;
    this.rng = rng;
    this.trace = trace;
    this.pods = pods;
    for (const sts of api.peek<V1StatefulSet>(resources.statefulSets)) this.source.set(sts.metadata?.name as string, sts);
  }

  /**
   * The owner's replies to pvx's steps, in the instants that matter: an edit, or a cascading delete,
   * while pvx's orphaning delete is under way (the StatefulSet lives on until the garbage collector
   * lets it go); a delete while pvx holds a record it has not acted on; a rollout that stalls (a
   * broken image, or a partitioned canary) as a template step begins.
   */
  onWrite(
    w: {
      resource: string;
      verb: string;
      actor: string | undefined;
      before?: { metadata?: { deletionTimestamp?: unknown } };
      after: { metadata?: { name?: string; namespace?: string; deletionTimestamp?: unknown }; status?: unknown; spec?: unknown };
    },
    now: number,
    isPvx: (actor: string | undefined) => boolean,
  ): void {
    if (!isPvx(w.actor) || this.namespaceGoing()) return;
    const name = w.after.metadata?.name as string;
    if (
      w.resource === resources.statefulSets.resource &&
      w.after.metadata?.deletionTimestamp &&
      !w.before?.metadata?.deletionTimestamp &&
      this.rng.chance(0.4)
    ) {
      const at = now + this.rng.duration(50, 4000);
      if (this.rng.chance(0.35))
        this.replies.push({
          at,
          what: `delete StatefulSet ${name} again, with its pods, while pvx's delete is under way`,
          // Gone by now (the garbage collector let it go): nothing to delete, as kubectl would find.
          act: () => {
            if (this.deletingNamed(name).length > 0) this.api.delete(resources.statefulSets, namespace, name, 'Foreground');
          },
        });
      else
        this.replies.push({
          at,
          what: `edit StatefulSet ${name} while pvx's delete is under way`,
          act: () => this.editWhileDeleting(this.deletingNamed(name)),
        });
    }
    if (w.resource === resources.statefulSetRecords.resource && w.verb === 'create' && this.rng.chance(0.15)) {
      const step = JSON.parse((w.after as { data?: Record<string, string> }).data?.['step.json'] ?? '{}') as { statefulSet?: { name?: string } };
      const sts = step.statefulSet?.name;
      if (sts)
        this.replies.push({
          at: now + this.rng.duration(1, 500),
          what: `delete StatefulSet ${sts} while pvx holds its record`,
          act: () => this.deleteStatefulSet(this.live().filter((s) => s.metadata?.name === sts)),
        });
    }
    const req = w.after as VolumeExpansionRequest;
    // A status writer's answer to an eviction pvx made: the record rewritten, a while later, for
    // the pod that mounts the claim then (the next one, which a driver refusing at mount makes
    // pvx's rules choose too).
    if (
      w.resource === volumeExpansionRequests.resource &&
      req.status?.eviction?.phase === 'Evicted' &&
      (w.before as VolumeExpansionRequest | undefined)?.status?.eviction?.phase !== 'Evicted' &&
      this.rng.chance(0.8)
    ) {
      this.replies.push({
        at: now + this.rng.duration(5_000, 30_000),
        what: `rewrite request ${name}'s eviction record for the pod that mounts its claim now`,
        act: () => this.forgeEvictionOf(name, now + 120_000),
      });
    }
    if (w.resource === volumeExpansionRequests.resource && req.spec?.statefulSetTemplate?.update && req.status?.reason === 'Accepted' && this.rng.chance(0.3)) {
      const sts = req.spec.target.statefulSetName as string;
      this.replies.push({ at: now + this.rng.duration(100, 20_000), what: `start a rollout of ${sts} that stalls`, act: () => this.stallRollout(sts) });
    }
  }

  /** Carries out the owner's replies that are due. */
  step(now: number): void {
    this.at = now;
    for (let i = 0; i < this.replies.length;) {
      const r = this.replies[i] as { at: number; what: string; act: () => void };
      if (r.at > now) {
        i++;
        continue;
      }
      this.replies.splice(i, 1);
      if (this.namespaceGoing()) continue;
      this.trace.add('action', r.what);
      this.api.asActor('user', () => refusedInGoneNamespace(r.act, this.trace, r.what));
    }
  }

  private live(): V1StatefulSet[] {
    return this.api.peek<V1StatefulSet>(resources.statefulSets).filter((s) => !s.metadata?.deletionTimestamp);
  }

  private deletingNamed(name: string): V1StatefulSet[] {
    return this.api.peek<V1StatefulSet>(resources.statefulSets).filter((s) => s.metadata?.name === name && s.metadata.deletionTimestamp);
  }

  /** A rollout that does not finish by itself: a broken image, or a new one behind a partition (a canary). */
  private stallRollout(name: string): void {
    const sts = structuredClone(this.live().find((s) => s.metadata?.name === name));
    const container = sts?.spec?.template.spec?.containers?.[0];
    if (!sts?.spec || !container) return;
    if (this.rng.chance(0.5)) container.image = brokenImage;
    else {
      container.image = `app:${this.rng.int(20, 29)}`;
      sts.spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { partition: Math.max(1, (sts.spec.replicas ?? 1) - 1) } };
    }
    this.apply(sts, 'a stalling rollout of');
  }

  /** Whether the namespace is being deleted: then nobody acts in it any more. */
  namespaceGoing(): boolean {
    return Boolean(this.api.get(namespaces, undefined, namespace)?.metadata?.deletionTimestamp);
  }

  act(): void {
    if (this.namespaceGoing()) return;
    if (this.namespaceDeleted) {
      // Gone: nothing is done in it until an admin creates a namespace of the name again — another
      // namespace (a new UID), in which nothing pvx deleted in the old one may be created.
      if (!this.api.get(namespaces, undefined, namespace) && this.rng.chance(0.5)) {
        this.api.asActor('admin', () => this.api.create(namespaces, namespaceObject()));
        this.namespaceDeleted = false;
        this.trace.add('action', `create namespace ${namespace} again (a new namespace of the old name)`);
      }
      return;
    }
    const all = this.api.peek<V1StatefulSet>(resources.statefulSets);
    const sets = all.filter((s) => !s.metadata?.deletionTimestamp);
    const orphaning = all.filter((s) => s.metadata?.deletionTimestamp && s.metadata.finalizers?.includes(orphanFinalizer));
    // While a template step holds a StatefulSet, its owner deletes or edits it now and then: what pvx must never undo.
    const stepping = this.api.peek<VolumeExpansionRequest>(volumeExpansionRequests).some((r) => r.status?.phase === 'UpdatingTemplate');
    const action = this.rng.weighted<WorkloadAction>([
      ['template', this.created < 4 && sets.length > 0 ? 4 : 0],
      ['evict', this.created < 4 ? 4 : 0],
      ['scale', sets.length > 0 ? 1 : 0],
      ['budget', 1],
      ['manage', sets.length > 0 ? 0.5 : 0],
      ['deleteRequest', 0.5],
      ['editStatefulSet', sets.length > 0 ? 1.5 : 0],
      ['deleteStatefulSet', sets.length > 0 ? (stepping ? 3 : 0.4) : 0],
      ['editWhileDeleting', orphaning.length > 0 ? 6 : 0],
      ['reapplyStatefulSet', sets.length === 0 ? 1 : 0],
      ['forgeStatus', 0.4],
      ['otherMounter', 1],
      ['crashLoop', 0.7],
      ['deleteNamespace', this.namespaceDeletable ? 0.15 : 0],
    ]);
    this.api.asActor('user', () =>
      refusedInGoneNamespace(() => (action === 'editWhileDeleting' ? this.editWhileDeleting(orphaning) : this[action](sets)), this.trace, action),
    );
  }

  /**
   * An edit of a StatefulSet being deleted with propagation Orphan (it lives on until the garbage
   * collector lets it go) — or a second delete of it, with its pods (kubectl delete --cascade=foreground).
   */
  private editWhileDeleting(orphaning: V1StatefulSet[]): void {
    if (orphaning.length === 0) return;
    const sts = structuredClone(this.rng.pick(orphaning));
    if (this.rng.chance(0.3)) {
      this.api.delete(resources.statefulSets, namespace, sts.metadata?.name as string, 'Foreground');
      this.trace.add('action', `delete StatefulSet ${sts.metadata?.name} again, while it is being deleted (propagation Foreground)`);
      return;
    }
    const container = sts.spec?.template.spec?.containers?.[0];
    if (container) container.image = `app:${this.rng.int(10, 19)}`;
    sts.metadata = { ...sts.metadata, labels: { ...sts.metadata?.labels, edited: 'while-deleting' } };
    this.apply(sts, 'edit, while it is being deleted,');
  }

  /** Creates a request; `legacy`: as an earlier pvx left it, holding the finalizer it kept a StatefulSet's record under. */
  private create(name: string, spec: RequestSpec, legacy = false): void {
    this.api.create(volumeExpansionRequests, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name, namespace, ...(legacy ? { finalizers: ['pvx.dev/statefulset-record'] } : {}) },
      spec,
    } as VolumeExpansionRequest);
    this.trace.add('action', `create ${name} ${JSON.stringify(spec)}${legacy ? ' (with the finalizer an earlier pvx held)' : ''}`);
  }

  private template(sets: V1StatefulSet[]): void {
    const sts = this.rng.pick(sets);
    const vct = sts.spec?.volumeClaimTemplates?.[0];
    const template = vct?.metadata?.name as string;
    // At times the size every claim has already (grown by earlier requests or a policy): the request only carries it into the template.
    const claims = this.api
      .peek<V1PersistentVolumeClaim>(resources.persistentVolumeClaims)
      .filter((c) => c.metadata?.name?.startsWith(`${template}-${sts.metadata?.name}-`))
      .map((c) => Number(bytes(c.status?.capacity?.storage ?? '0') / 1024n ** 3n));
    const smallest = claims.length > 0 ? Math.min(...claims) : 0;
    const templateGi = Number(bytes(vct?.spec?.resources?.requests?.storage ?? '0') / 1024n ** 3n);
    const sizing =
      this.rng.chance(0.35) && smallest > templateGi
        ? { size: `${smallest}Gi` }
        : this.rng.chance(0.5)
          ? { size: `${this.rng.int(6, 30)}Gi` }
          : { increment: this.rng.pick(['1Gi', '50%']) };
    this.create(
      `tpl-${this.created++}`,
      {
        target: { statefulSetName: sts.metadata?.name as string, volumeClaimTemplate: template },
        ...sizing,
        statefulSetTemplate: { update: true, evenIfManaged: this.rng.chance(0.3) },
        ...(this.rng.chance(0.6) ? { offlineNodeExpansion: 'EvictPod' as const } : {}),
        ...(this.rng.chance(0.2) ? { deadline: this.rng.pick(['2m', '10m']) } : {}),
      },
      this.rng.chance(0.15),
    );
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
      ...(this.rng.chance(0.2) ? { recovery: 'Auto' as const } : {}),
    });
  }

  /** Applies a StatefulSet as its owner writes it, and remembers it as its source. */
  private apply(sts: V1StatefulSet, what: string): void {
    const written = this.api.update(resources.statefulSets, fresh(sts));
    this.source.set(sts.metadata?.name as string, written);
    this.trace.add('action', `${what} StatefulSet ${sts.metadata?.name}`);
  }

  private scale(sets: V1StatefulSet[]): void {
    const sts = this.rng.pick(sets);
    const replicas = this.rng.int(1, 3);
    this.apply({ ...sts, spec: { ...sts.spec, replicas } } as V1StatefulSet, `scale to ${replicas}:`);
  }

  /** An edit of its spec or labels: a new image (a rollout; a broken one stalls it), a partition, a strategy, a label. */
  private editStatefulSet(sets: V1StatefulSet[]): void {
    const sts = structuredClone(this.rng.pick(sets));
    const spec = sts.spec as NonNullable<V1StatefulSet['spec']>;
    const edit = this.rng.weighted<'image' | 'broken' | 'partition' | 'strategy' | 'label'>([
      ['image', 3],
      ['broken', 1],
      ['partition', 1],
      ['strategy', 1],
      ['label', 1],
    ]);
    const container = spec.template.spec?.containers?.[0];
    if (edit === 'image' && container) container.image = `app:${this.rng.int(2, 9)}`;
    if (edit === 'broken' && container) container.image = brokenImage;
    if (edit === 'partition') spec.updateStrategy = { type: 'RollingUpdate', rollingUpdate: { partition: this.rng.int(0, 2) } };
    if (edit === 'strategy') spec.updateStrategy = this.rng.chance(0.5) ? { type: 'OnDelete' } : { type: 'RollingUpdate' };
    if (edit === 'label') sts.metadata = { ...sts.metadata, labels: { ...sts.metadata?.labels, tier: this.rng.pick(['gold', 'silver']) } };
    this.apply(sts, `edit (${edit})`);
  }

  /** kubectl delete of a StatefulSet, with any propagation: its owner's deletion, which pvx must never undo. */
  private deleteStatefulSet(sets: V1StatefulSet[]): void {
    if (sets.length === 0) return;
    const sts = this.rng.pick(sets);
    const propagation = this.rng.pick(['Background', 'Foreground', 'Orphan'] as const);
    this.api.delete(resources.statefulSets, namespace, sts.metadata?.name as string, propagation);
    this.trace.add('action', `delete StatefulSet ${sts.metadata?.name} (propagation ${propagation})`);
  }

  /** A GitOps tool applies a deleted StatefulSet again from its source. */
  private reapplyStatefulSet(): void {
    const [name, last] = this.rng.pick([...this.source]) ?? [];
    if (!name || !last || this.api.get(resources.statefulSets, namespace, name)) return;
    const { uid: _uid, resourceVersion: _rv, creationTimestamp: _c, deletionTimestamp: _d, generation: _g, annotations: _a, ...metadata } = last.metadata ?? {};
    const created = this.api.create(resources.statefulSets, {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { ...metadata, finalizers: (metadata.finalizers ?? []).filter((f) => f === protectFinalizer) },
      spec: last.spec,
    } as V1StatefulSet);
    this.source.set(name, created);
    this.trace.add('action', `apply StatefulSet ${name} again from its source`);
  }

  private budget(): void {
    // At times a second budget over the same pods (a misconfiguration the Eviction API refuses with 500), or it goes again.
    if (this.rng.chance(0.2)) {
      const extra = this.api.get<V1PodDisruptionBudget>(podDisruptionBudgets, namespace, `${queueName}-extra`);
      if (extra) this.api.delete(podDisruptionBudgets, namespace, `${queueName}-extra`);
      else
        this.api.create(podDisruptionBudgets, {
          apiVersion: 'policy/v1',
          kind: 'PodDisruptionBudget',
          metadata: { name: `${queueName}-extra`, namespace },
          spec: { maxUnavailable: 1, selector: { matchLabels: { app: queueName } } },
        } as V1PodDisruptionBudget);
      this.trace.add('action', `${extra ? 'delete' : 'create'} a second PodDisruptionBudget over the pods of ${queueName}`);
      return;
    }
    const pdb = this.api.get<V1PodDisruptionBudget>(podDisruptionBudgets, namespace, queueName);
    if (!pdb) return;
    const minAvailable = this.rng.int(0, 2);
    this.api.update(podDisruptionBudgets, fresh({ ...pdb, spec: { ...pdb.spec, minAvailable } }) as V1PodDisruptionBudget);
    this.trace.add('action', `PodDisruptionBudget ${queueName} minAvailable ${minAvailable}`);
  }

  /** A GitOps tool takes the StatefulSet over (its label), or lets it go. */
  private manage(sets: V1StatefulSet[]): void {
    const sts = this.rng.pick(sets);
    const labels = { ...sts.metadata?.labels };
    const managed = labels['kustomize.toolkit.fluxcd.io/name'] !== undefined;
    if (managed) delete labels['kustomize.toolkit.fluxcd.io/name'];
    else labels['kustomize.toolkit.fluxcd.io/name'] = 'apps';
    this.apply({ ...sts, metadata: { ...sts.metadata, labels } } as V1StatefulSet, managed ? 'Flux lets go of' : 'Flux takes over');
  }

  /** kubectl delete of a request — at times with its finalizers removed first (kubectl patch). */
  private deleteRequest(): void {
    const requests = this.api
      .peek<VolumeExpansionRequest>(volumeExpansionRequests)
      .filter((r) => !r.metadata.deletionTimestamp && (r.spec.statefulSetTemplate || r.spec.offlineNodeExpansion));
    if (requests.length === 0) return;
    const r = this.rng.pick(requests);
    if (r.metadata.finalizers?.length && this.rng.chance(0.5)) {
      this.api.update(volumeExpansionRequests, fresh({ ...r, metadata: { ...r.metadata, finalizers: undefined } }));
      this.trace.add('action', `remove the finalizers of request ${r.metadata.name}`);
    }
    this.api.delete(volumeExpansionRequests, namespace, r.metadata.name as string);
    this.trace.add('action', `delete request ${r.metadata.name}`);
  }

  /**
   * Someone who may write volumeexpansionrequests/status writes a template step or an eviction
   * into a request: pvx must neither create a StatefulSet from it nor evict the pod it names.
   */
  private forgeStatus(): void {
    const requests = this.api.peek<VolumeExpansionRequest>(volumeExpansionRequests).filter((r) => !r.metadata.deletionTimestamp && r.status?.phase);
    const pods = this.api.peek<V1Pod>(resources.pods).filter((p) => !p.metadata?.deletionTimestamp);
    if (requests.length === 0) return;
    const r = this.rng.pick(requests);
    const forged: RequestStatus =
      this.rng.chance(0.5) || pods.length === 0
        ? {
            statefulSetTemplate: {
              statefulSetName: queueName,
              volumeClaimTemplate: 'data',
              phase: 'Deleted',
              toSize: '99Gi',
              statefulSetUID: 'forged',
            },
          }
        : (() => {
            const p = this.rng.pick(pods);
            return {
              eviction: {
                phase: 'Requested' as const,
                podName: p.metadata?.name as string,
                podUID: p.metadata?.uid as string,
                owner: `StatefulSet/${queueName}`,
              },
            };
          })();
    this.api.update(volumeExpansionRequests, fresh({ ...r, status: { ...r.status, ...forged } }));
    this.trace.add('action', `write request ${r.metadata.name}'s status: ${JSON.stringify(forged)}`);
  }

  /**
   * The request's eviction record rewritten as Requested for the pod that mounts its claim now —
   * once one does and the kubelet refuses to grow the claim under it (until `until`; looked at
   * every 5 s): the forgery a second eviction would follow.
   */
  private forgeEvictionOf(name: string, until: number): void {
    const r = this.api.get<VolumeExpansionRequest>(volumeExpansionRequests, namespace, name);
    const claim = r && this.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, namespace, r.spec.target.pvcName ?? '');
    const p = this.api.peek<V1Pod>(resources.pods).find((q) => !q.metadata?.deletionTimestamp && claimsOf(q).includes(r?.spec.target.pvcName ?? ''));
    if (!r?.status?.eviction || ['Completed', 'Failed', 'Rejected'].includes(r.status.phase ?? '')) return;
    const refused = claim?.status?.conditions?.some((c) => c.type === 'NodeResizeError');
    if (!p || !refused) {
      const at = this.at + 5_000;
      if (at <= until)
        this.replies.push({ at, what: `rewrite request ${name}'s eviction record, looked at again`, act: () => this.forgeEvictionOf(name, until) });
      return;
    }
    const eviction = { ...r.status.eviction, phase: 'Requested' as const, podName: p.metadata?.name as string, podUID: p.metadata?.uid as string };
    this.api.update(volumeExpansionRequests, fresh({ ...r, status: { ...r.status, eviction } }));
    this.trace.add('action', `write request ${name}'s eviction record for pod ${eviction.podName}`);
  }

  /** Another pod on a workload claim: a Job's (a backup), a bare debug pod, or another workload's; or one of them taken away. */
  private otherMounter(): void {
    const claims = this.api.peek<V1PersistentVolumeClaim>(resources.persistentVolumeClaims).filter((c) => c.spec?.storageClassName === offlineClass);
    const extra = this.api.peek<V1Pod>(resources.pods).filter((p) => p.metadata?.labels?.['sim.pvx.dev/extra'] && !p.metadata.deletionTimestamp);
    if (extra.length > 0 && this.rng.chance(0.4)) {
      const p = this.rng.pick(extra);
      this.api.delete(resources.pods, namespace, p.metadata?.name as string);
      this.trace.add('action', `delete pod ${p.metadata?.name}`);
      return;
    }
    if (claims.length === 0) return;
    const claim = this.rng.pick(claims).metadata?.name as string;
    const kind = this.rng.pick(['Job', 'bare', 'ReplicaSet'] as const);
    const name = `${kind === 'Job' ? 'backup' : kind === 'bare' ? 'debug' : 'reader'}-${this.created++}`;
    this.api.create(resources.pods, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name,
        namespace,
        labels: { 'sim.pvx.dev/extra': kind },
        finalizers: [gracefulFinalizer],
        ...(kind === 'bare'
          ? {}
          : {
              ownerReferences: [
                { apiVersion: kind === 'Job' ? 'batch/v1' : 'apps/v1', kind, name: kind === 'Job' ? 'backup' : 'reader', uid: `uid-${kind}`, controller: true },
              ],
            }),
      },
      spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'busybox' }], volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }] },
      status: { phase: 'Pending' },
    } as V1Pod);
    this.trace.add('action', `create ${kind === 'bare' ? 'a bare' : `a ${kind}'s`} pod ${name} mounting ${claim}`);
  }

  /** A workload pod starts crash-looping (its disk full, say), or one doing so is restarted by a person. */
  private crashLoop(): void {
    const pods = this.api.peek<V1Pod>(resources.pods).filter((p) => p.metadata?.name?.startsWith(`${queueName}-`) && !p.metadata.deletionTimestamp);
    if (pods.length === 0) return;
    const p = this.rng.pick(pods);
    this.pods.crashing.add(p.metadata?.uid as string);
    this.trace.add('action', `pod ${p.metadata?.name} crash-loops from now on`);
  }

  /** The namespace deleted now (the simulation's fault: while pvx is down). */
  deleteNamespaceNow(): void {
    this.deleteNamespace();
  }

  /** kubectl delete namespace: everything in it goes, pvx's records of it must not hold it. */
  private deleteNamespace(): void {
    if (!this.api.get(namespaces, undefined, namespace)) return;
    this.api.asActor('admin', () => this.api.delete(namespaces, undefined, namespace, { finalizer: 'kubernetes' }));
    this.namespaceDeleted = true;
    this.trace.add('action', `delete namespace ${namespace}`);
  }
}
