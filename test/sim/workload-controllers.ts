// Kubernetes' own controllers around the workloads the opt-ins act on, as the simulation plays
// them in workload mode (workloads.ts draws the world and the person; these are the cluster):
//   - the StatefulSet controller: revisions (a hash of the pod template) with RollingUpdate — a
//     partition holds pods back, a pod of the new revision that never becomes Ready stalls the
//     rollout — or OnDelete; status (observedGeneration, currentRevision, updateRevision) written
//     a step after a change; scale up and down; pods of missing ordinals created (and their claims
//     from the template, owned by the StatefulSet when persistentVolumeClaimRetentionPolicy says
//     Delete); orphans its selector matches adopted, so a StatefulSet deleted with propagation
//     Orphan and created again takes its pods back without restarting one;
//   - the kubelet's side of pods: a pod starts Pending, runs, becomes Ready (or crash-loops: Running,
//     never Ready — its template's image "broken", or a database whose disk is full); a pod being
//     deleted terminates for a grace period (a finalizer the simulation holds), then goes; a Job's
//     pod runs, then Succeeds;
//   - the garbage collector (FakeKubeClient.collectGarbage: orphan, foreground and background
//     cascades), a while after each change, and another controller that holds its own finalizer
//     on a StatefulSet for a while after it is deleted;
//   - the disruption controller: each PodDisruptionBudget's allowance from the Ready pods it selects;
//   - the namespace controller: a namespace being deleted has every object in it deleted (pods
//     first), and goes once nothing is left — whatever finalizer holds an object holds the namespace;
//   - OwnerReferencesPermissionEnforcement, in some seeds: pvx may not set blockOwnerDeletion.
import type { KubernetesObject, V1Namespace, V1PersistentVolumeClaim, V1Pod, V1PodDisruptionBudget, V1StatefulSet } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { ApiError } from '../../src/k8s/errors.ts';
import { podDisruptionBudgets, type FakeKubeClient } from '../../src/k8s/testing/fake-client.ts';
import { namespaces, resources, volumeExpansionPolicies, volumeExpansionRequests, type ResourceType } from '../../src/k8s/resources.ts';
import type { Trace } from './trace.ts';
import { SimActor } from './actors.ts';

/** The finalizer the simulation's kubelet holds on a pod while it terminates (a grace period). */
export const gracefulFinalizer = 'sim.pvx.dev/graceful';
/** Another controller's finalizer on a StatefulSet (a backup operator's, say): it lets go a while after the deletion. */
export const protectFinalizer = 'example.com/protect';
/** An image whose pods never become Ready (a rollout to it stalls). */
export const brokenImage = 'app:broken';

const delay = {
  podStartMs: [500, 15_000],
  readyMs: [200, 10_000],
  graceMs: [200, 8_000],
  gcMs: [200, 20_000],
  protectMs: [1000, 60_000],
  jobMs: [5000, 120_000],
} as const;

export const isReady = (p: V1Pod): boolean =>
  p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp && (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
export const claimsOf = (p: V1Pod): string[] => (p.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : []));
const matches = (labels: Record<string, string> | undefined, selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels?.[k] === v);
const fresh = <T extends KubernetesObject>(o: T): T => ({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });

/** A StatefulSet's revision: its name and a hash of its pod template, as the controller names ControllerRevisions. */
export function revisionOf(sts: V1StatefulSet): string {
  const hash = createHash('sha256')
    .update(JSON.stringify(sts.spec?.template ?? {}))
    .digest('hex')
    .slice(0, 10);
  return `${sts.metadata?.name}-${hash}`;
}

/** The StatefulSet controller (pkg/controller/statefulset), for the parts pvx's opt-ins meet. */
export class StatefulSetController extends SimActor {
  private readonly due = new Map<string, number>();

  step(now: number): void {
    for (const sts of this.api.peek<V1StatefulSet>(resources.statefulSets)) {
      if (sts.metadata?.deletionTimestamp || this.api.get(namespaces, undefined, sts.metadata?.namespace as string)?.metadata?.deletionTimestamp) continue;
      this.api.asActor('statefulset-controller', () => {
        this.adopt(sts);
        this.claimRetained(sts);
        this.scaleDown(sts);
        this.createMissing(sts, now);
        this.roll(sts);
        this.writeStatus(sts);
      });
    }
  }

  private pods(sts: V1StatefulSet): V1Pod[] {
    return this.api.peek<V1Pod>(resources.pods).filter((p) => p.metadata?.namespace === sts.metadata?.namespace && ownerUID(p) === sts.metadata?.uid);
  }

  private ordinals(sts: V1StatefulSet): number[] {
    const start = sts.spec?.ordinals?.start ?? 0;
    return Array.from({ length: Math.max(0, sts.spec?.replicas ?? 1) }, (_, i) => start + i);
  }

  /** Pods its selector matches that no controller owns: taken as its own (their revision label kept). */
  private adopt(sts: V1StatefulSet): void {
    const selector = sts.spec?.selector?.matchLabels ?? {};
    for (const pod of this.api.peek<V1Pod>(resources.pods)) {
      if (pod.metadata?.namespace !== sts.metadata?.namespace || pod.metadata?.deletionTimestamp) continue;
      if (pod.metadata?.ownerReferences?.some((o) => o.controller) || !matches(pod.metadata?.labels, selector)) continue;
      if (!pod.metadata?.name?.startsWith(`${sts.metadata?.name}-`)) continue;
      this.api.update(resources.pods, fresh({ ...pod, metadata: { ...pod.metadata, ownerReferences: [ownerRef(sts)] } }));
      this.trace.add('actor', `statefulset controller adopts pod ${pod.metadata.name} into ${sts.metadata?.name}`);
    }
  }

  /** The claims of its live replicas owned by it when its retention policy deletes them with it (and no longer when not). */
  private claimRetained(sts: V1StatefulSet): void {
    const template = sts.spec?.volumeClaimTemplates?.[0]?.metadata?.name;
    if (!template) return;
    const owned = sts.spec?.persistentVolumeClaimRetentionPolicy?.whenDeleted === 'Delete';
    for (const i of this.ordinals(sts)) {
      const claim = this.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, sts.metadata?.namespace, `${template}-${sts.metadata?.name}-${i}`);
      if (!claim || claim.metadata?.deletionTimestamp) continue;
      const refs = claim.metadata?.ownerReferences ?? [];
      const has = refs.some((r) => r.uid === sts.metadata?.uid);
      const others = refs.filter((r) => r.kind !== 'StatefulSet');
      if (owned === has && refs.length === others.length + (has ? 1 : 0)) continue;
      const ownerReferences = owned ? [...others, { ...ownerRef(sts), controller: false }] : others;
      this.api.update(
        resources.persistentVolumeClaims,
        fresh({ ...claim, metadata: { ...claim.metadata, ownerReferences: ownerReferences.length ? ownerReferences : undefined } }),
      );
    }
  }

  /** Pods of ordinals it no longer runs go, the highest first, one at a time (their claims too when whenScaled says Delete). */
  private scaleDown(sts: V1StatefulSet): void {
    const live = new Set(this.ordinals(sts));
    const extra = this.pods(sts)
      .filter((p) => !live.has(ordinalOf(p, sts)) && !p.metadata?.deletionTimestamp)
      .sort((a, b) => ordinalOf(b, sts) - ordinalOf(a, sts))[0];
    if (!extra) return;
    this.api.delete(resources.pods, extra.metadata?.namespace, extra.metadata?.name as string);
    this.trace.add('actor', `statefulset controller scales ${sts.metadata?.name} down: deletes pod ${extra.metadata?.name}`);
    if (sts.spec?.persistentVolumeClaimRetentionPolicy?.whenScaled === 'Delete') {
      for (const claim of claimsOf(extra)) {
        if (this.api.get(resources.persistentVolumeClaims, sts.metadata?.namespace, claim))
          this.api.delete(resources.persistentVolumeClaims, sts.metadata?.namespace, claim);
      }
    }
  }

  /** The pod (and claim, from the template) of each ordinal it runs without one, a while after it went. */
  private createMissing(sts: V1StatefulSet, now: number): void {
    const template = sts.spec?.volumeClaimTemplates?.[0];
    const name = sts.metadata?.name as string;
    const ns = sts.metadata?.namespace as string;
    for (const i of this.ordinals(sts)) {
      const podName = `${name}-${i}`;
      if (this.api.get(resources.pods, ns, podName)) {
        this.due.delete(`${ns}/${podName}`);
        continue;
      }
      const at = this.due.get(`${ns}/${podName}`);
      if (at === undefined) {
        this.due.set(`${ns}/${podName}`, now + this.rng.duration(...delay.podStartMs));
        continue;
      }
      if (now < at) continue;
      this.due.delete(`${ns}/${podName}`);
      const claim = template ? `${template.metadata?.name}-${name}-${i}` : undefined;
      if (claim && !this.api.get(resources.persistentVolumeClaims, ns, claim)) {
        const size = template?.spec?.resources?.requests?.storage ?? '1Gi';
        this.api.create(resources.persistentVolumeClaims, {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name: claim, namespace: ns, labels: sts.spec?.selector?.matchLabels },
          spec: {
            storageClassName: template?.spec?.storageClassName ?? 'fast',
            accessModes: ['ReadWriteOnce'],
            resources: { requests: { storage: size } },
            volumeName: `pv-${claim}`,
          },
          status: { phase: 'Bound', capacity: { storage: size } },
        } as V1PersistentVolumeClaim);
      }
      this.api.create(resources.pods, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: podName,
          namespace: ns,
          labels: { ...sts.spec?.template?.metadata?.labels, 'controller-revision-hash': revisionOf(sts) },
          ownerReferences: [ownerRef(sts)],
          finalizers: [gracefulFinalizer],
        },
        spec: {
          nodeName: 'node-1',
          containers: [{ name: 'app', image: imageOf(sts) }],
          ...(claim ? { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }] } : {}),
        },
        status: { phase: 'Pending' },
      } as V1Pod);
      this.trace.add('actor', `statefulset controller creates pod ${podName}${claim ? ` (claim ${claim})` : ''}`);
    }
  }

  /** RollingUpdate: the highest ordinal at or above the partition on an old revision goes, once every pod is Ready; OnDelete: nothing. */
  private roll(sts: V1StatefulSet): void {
    const strategy = sts.spec?.updateStrategy;
    if (strategy?.type === 'OnDelete') return;
    const pods = this.pods(sts);
    if (pods.some((p) => !isReady(p))) return;
    const partition = strategy?.rollingUpdate?.partition ?? 0;
    const update = revisionOf(sts);
    const stale = pods
      .filter((p) => ordinalOf(p, sts) >= partition && p.metadata?.labels?.['controller-revision-hash'] !== update)
      .sort((a, b) => ordinalOf(b, sts) - ordinalOf(a, sts))[0];
    if (!stale) return;
    this.api.delete(resources.pods, stale.metadata?.namespace, stale.metadata?.name as string);
    this.trace.add('actor', `statefulset controller rolls pod ${stale.metadata?.name} to revision ${update}`);
  }

  /** observedGeneration, the revisions: the current one moves once every pod runs the update revision. */
  private writeStatus(sts: V1StatefulSet): void {
    const update = revisionOf(sts);
    const pods = this.pods(sts);
    const allUpdated = pods.length === this.ordinals(sts).length && pods.every((p) => p.metadata?.labels?.['controller-revision-hash'] === update);
    const current = sts.status?.currentRevision && !allUpdated ? sts.status.currentRevision : update;
    const status = {
      observedGeneration: sts.metadata?.generation,
      replicas: pods.length,
      readyReplicas: pods.filter(isReady).length,
      currentRevision: current,
      updateRevision: update,
    };
    const s = sts.status;
    if (
      s?.observedGeneration === status.observedGeneration &&
      s?.replicas === status.replicas &&
      s?.readyReplicas === status.readyReplicas &&
      s?.currentRevision === status.currentRevision &&
      s?.updateRevision === status.updateRevision
    )
      return;
    this.api.update(resources.statefulSets, fresh({ ...sts, status }));
  }
}

const ownerUID = (p: V1Pod) => p.metadata?.ownerReferences?.find((o) => o.controller)?.uid;
const ownerRef = (sts: V1StatefulSet) => ({
  apiVersion: 'apps/v1',
  kind: 'StatefulSet',
  name: sts.metadata?.name as string,
  uid: sts.metadata?.uid as string,
  controller: true,
  blockOwnerDeletion: true,
});
const ordinalOf = (p: V1Pod, sts: V1StatefulSet) => Number((p.metadata?.name ?? '').slice((sts.metadata?.name?.length ?? 0) + 1));
const imageOf = (sts: V1StatefulSet) => sts.spec?.template?.spec?.containers?.[0]?.image ?? 'app';

/** The kubelet's side of pods: start, readiness, crash loops, graceful termination; a Job's pod succeeds. */
export class PodLifecycle extends SimActor {
  private readonly due = new Map<string, number>();
  /** Pods (UIDs) that crash-loop until they are deleted (a database whose disk is full). */
  readonly crashing = new Set<string>();

  private after(key: string, now: number, range: readonly [number, number]): boolean {
    const at = this.due.get(key);
    if (at === undefined) {
      this.due.set(key, now + this.rng.duration(...range));
      return false;
    }
    if (now < at) return false;
    this.due.delete(key);
    return true;
  }

  step(now: number): void {
    this.api.asActor('kubelet', () => {
      for (const pod of this.api.peek<V1Pod>(resources.pods)) {
        const uid = pod.metadata?.uid as string;
        if (pod.metadata?.deletionTimestamp) {
          if (pod.metadata.finalizers?.includes(gracefulFinalizer) && this.after(`grace/${uid}`, now, delay.graceMs)) {
            this.api.update(
              resources.pods,
              fresh({ ...pod, metadata: { ...pod.metadata, finalizers: pod.metadata.finalizers.filter((f) => f !== gracefulFinalizer) } }),
            );
            this.trace.add('actor', `kubelet: pod ${pod.metadata.name} terminated`);
          }
          continue;
        }
        const job = pod.metadata?.ownerReferences?.some((o) => o.kind === 'Job');
        if (pod.status?.phase === 'Pending' && this.after(`start/${uid}`, now, delay.podStartMs)) {
          this.api.update(resources.pods, fresh({ ...pod, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] } }));
        } else if (pod.status?.phase === 'Running' && job && this.after(`job/${uid}`, now, delay.jobMs)) {
          this.api.update(resources.pods, fresh({ ...pod, status: { phase: 'Succeeded', conditions: [{ type: 'Ready', status: 'False' }] } }));
          this.trace.add('actor', `kubelet: job pod ${pod.metadata?.name} succeeded`);
        } else if (pod.status?.phase === 'Running' && !isReady(pod) && !this.crashing.has(uid) && pod.spec?.containers?.[0]?.image !== brokenImage) {
          if (this.after(`ready/${uid}`, now, delay.readyMs))
            this.api.update(resources.pods, fresh({ ...pod, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] } }));
        } else if (isReady(pod) && this.crashing.has(uid)) {
          this.api.update(resources.pods, fresh({ ...pod, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] } }));
          this.trace.add('actor', `kubelet: pod ${pod.metadata?.name} crash-loops (not Ready)`);
        }
      }
    });
  }
}

/** The garbage collector, a while after objects start being deleted or lose their owners; and another controller's finalizer on StatefulSets. */
export class GarbageCollector extends SimActor {
  private due: number | undefined;
  private readonly protectDue = new Map<string, number>();
  private seen = '';

  step(now: number): void {
    this.releaseProtection(now);
    if (this.api.resourceVersion !== this.seen && this.due === undefined) this.due = now + this.rng.duration(...delay.gcMs);
    if (this.due === undefined || now < this.due) return;
    this.due = undefined;
    this.seen = this.api.resourceVersion;
    const done = this.api.asActor('garbage-collector', () => this.api.collectGarbage());
    for (const key of done) this.trace.add('actor', `garbage collector: ${key}`);
  }

  /** The other controller lets its StatefulSet go a while after the StatefulSet's deletion began. */
  private releaseProtection(now: number): void {
    for (const sts of this.api.peek<V1StatefulSet>(resources.statefulSets)) {
      if (!sts.metadata?.deletionTimestamp || !sts.metadata.finalizers?.includes(protectFinalizer)) continue;
      const uid = sts.metadata.uid as string;
      const at = this.protectDue.get(uid) ?? now + this.rng.duration(...delay.protectMs);
      this.protectDue.set(uid, at);
      if (now < at) continue;
      this.protectDue.delete(uid);
      this.api.asActor('backup-controller', () =>
        this.api.update(
          resources.statefulSets,
          fresh({ ...sts, metadata: { ...sts.metadata, finalizers: sts.metadata?.finalizers?.filter((f) => f !== protectFinalizer) } }),
        ),
      );
      this.trace.add('actor', `backup controller lets StatefulSet ${sts.metadata.name} go`);
    }
  }
}

/** The disruption controller: each budget's disruptionsAllowed from the Ready pods it selects. */
export class DisruptionController {
  private readonly api: FakeKubeClient;

  constructor(api: FakeKubeClient) {
    this.api = api;
  }

  step(): void {
    const pods = this.api.peek<V1Pod>(resources.pods);
    for (const pdb of this.api.peek<V1PodDisruptionBudget>(podDisruptionBudgets)) {
      if (pdb.metadata?.deletionTimestamp) continue;
      const selected = pods.filter(
        (p) =>
          p.metadata?.namespace === pdb.metadata?.namespace &&
          !p.metadata?.deletionTimestamp &&
          matches(p.metadata?.labels, pdb.spec?.selector?.matchLabels ?? {}),
      );
      const healthy = selected.filter(isReady).length;
      const desired =
        pdb.spec?.maxUnavailable !== undefined ? Math.max(0, selected.length - Number(pdb.spec.maxUnavailable)) : Number(pdb.spec?.minAvailable ?? 0);
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
      this.api.asActor('disruption-controller', () => this.api.update(podDisruptionBudgets, fresh({ ...pdb, status }) as V1PodDisruptionBudget));
    }
  }
}

/** The kinds the namespace controller deletes, pods first (KEP-5080), then everything else namespaced. */
const namespacedKinds: ResourceType[] = [
  resources.pods,
  resources.statefulSets,
  resources.persistentVolumeClaims,
  resources.resourceQuotas,
  volumeExpansionRequests,
  volumeExpansionPolicies,
  podDisruptionBudgets,
];

/** The namespace controller: a namespace being deleted is emptied, and goes once nothing is left in it. */
export class NamespaceController {
  private readonly api: FakeKubeClient;
  private readonly trace: Trace;
  /** The namespaces it emptied and let go: nothing is created in them until one of the name is created again (namespaceLifecycle). */
  readonly gone = new Set<string>();

  constructor(api: FakeKubeClient, trace: Trace) {
    this.api = api;
    this.trace = trace;
  }

  step(): void {
    for (const ns of this.api.peek<V1Namespace>(namespaces)) {
      if (!ns.metadata?.deletionTimestamp) continue;
      const name = ns.metadata.name as string;
      this.api.asActor('namespace-controller', () => {
        let left = 0;
        for (const type of namespacedKinds) {
          for (const o of this.api.peek(type).filter((x) => x.metadata?.namespace === name)) {
            left++;
            if (!o.metadata?.deletionTimestamp) this.api.delete(type, name, o.metadata?.name as string);
          }
          // Pods first: nothing else is deleted while a pod of the namespace remains.
          if (type === resources.pods && left > 0) return;
        }
        if (left > 0) return;
        const current = this.api.get<V1Namespace>(namespaces, undefined, name);
        if (!current?.metadata?.finalizers?.length) return;
        this.api.update(namespaces, fresh({ ...current, metadata: { ...current.metadata, finalizers: [] } }));
        this.gone.add(name);
        this.trace.add('actor', `namespace controller: namespace ${name} is empty and goes`);
      });
    }
  }
}

/**
 * The API server's NamespaceLifecycle admission for a namespace that is gone: a create in it is
 * refused, NotFound, until one of the name exists again (seed 2415654: a person's request created
 * in a namespace deleted a minute before waited for that namespace for good). The fake refuses
 * creates in a namespace being deleted itself; one never created is left to the simulation's
 * namespace created late, which stands for pvx's cache learning of it late.
 */
export function namespaceLifecycle(api: FakeKubeClient, gone: ReadonlySet<string>) {
  return (w: { verb: 'create' | 'update'; type: { namespaced?: boolean }; obj: KubernetesObject }): ApiError | undefined => {
    const ns = w.obj.metadata?.namespace;
    if (w.verb !== 'create' || !w.type.namespaced || !ns || !gone.has(ns) || api.get(namespaces, undefined, ns)) return undefined;
    return new ApiError(404, 'NotFound', `namespaces "${ns}" not found`);
  };
}

/** A person's action whose create the API server refused because its namespace is gone (namespaceLifecycle): traced, and nothing else. */
export function refusedInGoneNamespace(act: () => void, trace: Trace, what: string): void {
  try {
    act();
  } catch (err) {
    if (!(err instanceof ApiError && err.code === 404 && /^namespaces "[^"]+" not found$/.test(err.message))) throw err;
    trace.add('action', `${what}: refused, ${err.message}`);
  }
}

/**
 * An admission webhook that refuses pvx's StatefulSet creates for a while (it is down, or its
 * policy refuses them): a StatefulSet pvx deleted must wait, never be lost, and come back once
 * the webhook lets it.
 */
export function statefulSetWebhookOutage(isPvx: (actor: string | undefined) => boolean, until: () => boolean) {
  return (w: { verb: string; type: ResourceType; actor: string | undefined; obj: KubernetesObject }): ApiError | undefined =>
    w.verb === 'create' && w.type.resource === resources.statefulSets.resource && isPvx(w.actor) && until()
      ? new ApiError(403, 'Forbidden', `admission webhook "policy.example.com" denied the request: StatefulSet ${w.obj.metadata?.name} may not be created now`)
      : undefined;
}

/**
 * An object-count quota on VolumeExpansionRequests (count/volumeexpansionrequests.pvx.dev): pvx's
 * creates past it are refused, as ResourceQuota admission refuses them (403, exceeded quota).
 */
export function requestCountQuota(api: FakeKubeClient, hard: number, isPvx: (actor: string | undefined) => boolean) {
  return (w: { verb: string; type: ResourceType; actor: string | undefined; obj: KubernetesObject }): ApiError | undefined => {
    if (w.verb !== 'create' || w.type.resource !== volumeExpansionRequests.resource || !isPvx(w.actor)) return undefined;
    const used = api.peek(volumeExpansionRequests).filter((r) => r.metadata?.namespace === w.obj.metadata?.namespace).length;
    return used >= hard
      ? new ApiError(
          403,
          'Forbidden',
          `volumeexpansionrequests.pvx.dev "${w.obj.metadata?.name}" is forbidden: exceeded quota: objects, requested: count/volumeexpansionrequests.pvx.dev=1, used: count/volumeexpansionrequests.pvx.dev=${used}, limited: count/volumeexpansionrequests.pvx.dev=${hard}`,
        )
      : undefined;
  };
}

/**
 * OwnerReferencesPermissionEnforcement (plugin/pkg/admission/gc): a write that sets
 * blockOwnerDeletion on an ownerReference — a new one, or one that did not block before — needs
 * update on the owner's finalizers subresource, which pvx's roles do not grant: such a create or
 * update by pvx is refused with the plugin's 403. A write that leaves the ownerReferences as they
 * were (a claim's size patch, on a claim a StatefulSet's retention policy owns) is not its concern.
 */
export function ownerReferencesPermissionEnforcement(isPvx: (actor: string | undefined) => boolean) {
  return (w: { obj: KubernetesObject; old?: KubernetesObject; actor: string | undefined }): ApiError | undefined => {
    if (!isPvx(w.actor)) return undefined;
    const blockedBefore = new Set((w.old?.metadata?.ownerReferences ?? []).filter((r) => r.blockOwnerDeletion).map((r) => r.uid));
    const newlyBlocking = (w.obj.metadata?.ownerReferences ?? []).some((r) => r.blockOwnerDeletion && !blockedBefore.has(r.uid));
    return newlyBlocking
      ? new ApiError(
          403,
          'Forbidden',
          `${w.obj.kind ?? 'object'} "${w.obj.metadata?.name}" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on`,
        )
      : undefined;
  };
}
