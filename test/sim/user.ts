// The people around pvx, as the scheduler plays them: they create requests (absolute or
// increment, a VolumeAttributesClass with or without a size, deadlines, recovery Auto, dry runs,
// approval mode, StatefulSet targets), approve some of them late or never, delete a claim and
// create it again under the same name, grow a claim with kubectl (outside pvx), flip a class's
// allowVolumeExpansion, change the quota, change a claim's VolumeAttributesClass themselves,
// create a class a request named first, start
// and stop the pods that mount claims.
// Each action is one admin write (kubectl), recorded in the trace.
import type {
  V1PersistentVolumeClaim,
  V1Pod,
  V1ResourceQuota,
  V1StatefulSet,
  V1StatefulSetSpec,
  V1StorageClass,
  V1VolumeAttributesClass,
} from '@kubernetes/client-node';
import type { VolumeExpansionPolicy } from '../../src/crds/volume-expansion-policy.ts';
import { requestAnnotations } from '../../src/crds/keys.ts';
import type { RequestSpec, VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import type { FakeKubeClient } from '../../src/k8s/testing/fake-client.ts';
import { parseBytes, GiB } from '../../src/k8s/quantity.ts';
import { namespaces, ownsStorageRequest, resources, storageRequestFields, volumeExpansionPolicies, volumeExpansionRequests } from '../../src/k8s/resources.ts';
import type { Random } from './random.ts';
import type { Trace } from './trace.ts';
import { planToken, shownPlan } from '../../src/policies/request/plan.ts';
import { refusedInGoneNamespace } from './workload-controllers.ts';

/** The reasons a request shows while it waits for a person's approval. */
export const approvalReasons: ReadonlySet<string> = new Set(['AwaitingApproval', 'PlanChanged']);
import {
  attributesClass,
  attributesClassModels,
  claim,
  namespace,
  namespaceObject,
  pod,
  policy,
  policyName,
  quota,
  replicaClaim,
  statefulSetName,
  storageClass,
  templateName,
  type World,
} from './world.ts';

/** Enough requests to make claims contend, few enough to keep a seed fast. */
const maxRequests = 5;

type Action =
  | 'createRequest'
  | 'approve'
  | 'recreateClaim'
  | 'resizeClaim'
  | 'flipClass'
  | 'changeQuota'
  | 'togglePod'
  | 'setClassByHand'
  | 'createLateClass'
  | 'deleteRequest'
  | 'scaleStatefulSet'
  | 'deleteClass'
  | 'createNamespace'
  | 'createPolicy'
  | 'deletePolicy';

/** At most this many namespaced policies at once. */
const maxPolicies = 3;

export class User {
  private created = 0;
  /** The plans the person has seen, by request: a late approval names one of these. */
  private readonly seenPlans = new Map<string, string>();

  private readonly api: FakeKubeClient;
  private readonly rng: Random;
  private readonly trace: Trace;
  private readonly world: World;

  /**
   * Where pvx is given a budget of performance changes: a stream of its own that turns requests
   * into class changes of a claim of the budgeted driver, so that one is spent and the next held
   * within a seed (the user's own stream draws as in any other seed).
   */
  performanceBudget: Random | undefined;

  constructor(api: FakeKubeClient, rng: Random, trace: Trace, world: World) {
    this.api = api;
    this.rng = rng;
    this.trace = trace;
    this.world = world;
  }

  /** The world's claims of the class `cls` now, by name. */
  private claimsOf(cls: string): string[] {
    return this.world.claims.filter(
      (name) => this.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, namespace, name)?.spec?.storageClassName === cls,
    );
  }

  get requestsCreated(): number {
    return this.created;
  }

  act(): void {
    // A namespace being deleted takes no new content (workload mode deletes it at times): nobody acts in it.
    if (this.api.get(namespaces, undefined, namespace)?.metadata?.deletionTimestamp) return;
    const action = this.rng.weighted<Action>([
      ['createRequest', this.created < maxRequests ? 6 : 0],
      ['approve', this.awaitingApproval().length > 0 ? 3 : 0],
      ['recreateClaim', 0.6],
      ['resizeClaim', 0.5],
      ['flipClass', 0.6],
      ['changeQuota', 0.6],
      ['togglePod', 2],
      ['setClassByHand', 0.4],
      ['createLateClass', 0.3],
      ['deleteRequest', this.created > 0 ? 0.5 : 0],
      ['scaleStatefulSet', this.world.statefulSet ? 0.6 : 0],
      ['deleteClass', 0.25],
      ['createNamespace', this.api.get(namespaces, undefined, namespace) ? 0 : 2],
      ['createPolicy', this.policies().length < maxPolicies ? 0.25 : 0],
      ['deletePolicy', this.policies().length > 0 ? 0.15 : 0],
    ]);
    this.api.asActor('user', () => refusedInGoneNamespace(() => this[action](), this.trace, action));
  }

  private createRequest(): void {
    const rng = this.rng;
    const name = `req-${this.created++}`;
    const sts = this.world.statefulSet !== undefined && rng.chance(0.3);
    const drawnClaim = rng.pick(this.world.claims);
    // Under a budget of performance changes, half the requests change the class of a claim of the budgeted driver.
    const budgeted = this.performanceBudget?.chance(0.5) ? this.claimsOf('ebs') : [];
    const claimName = budgeted.length > 0 ? (this.performanceBudget as Random).pick(budgeted) : drawnClaim;
    const current = this.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, namespace, claimName);
    const capacityGi = current?.status?.capacity?.storage ? Number(parseBytes(current.status.capacity.storage) / GiB) : 10;
    const spec: RequestSpec = { target: sts ? { statefulSetName, volumeClaimTemplate: templateName } : { pvcName: claimName } };
    // A VolumeAttributesClass now and then: alone or with a size; mostly one of the claim's
    // driver, at times one it refuses, one of another driver, one not created yet or never.
    const drawn = rng.chance(0.3) ? rng.pick([...Object.keys(attributesClassModels), 'no-such-class']) : undefined;
    const vac = budgeted.length > 0 ? (this.performanceBudget as Random).pick(['ebs-io2', 'ebs-bad']) : drawn;
    if (vac) spec.volumeAttributesClassName = vac;
    // Absolute sizes reach past every class maximum now and then (60Gi fast, 40Gi block).
    if (drawn && rng.chance(0.5)) {
      // The class alone.
    } else if (rng.chance(0.6))
      spec.size = rng.chance(0.8) ? `${capacityGi + rng.int(1, 45)}Gi` : rng.pick(['1500Mi', '12.5Gi', `${capacityGi}Gi`, '3Gi', '70Gi', '200Gi', '20Ti']);
    else spec.increment = rng.pick(['2Gi', '10Gi', '20%', '100%', '12.5%', '700Mi']);
    // Odd roundings: none (1Gi), finer, coarser.
    if (rng.chance(0.3)) spec.roundUpTo = rng.pick(['1Mi', '512Mi', '1Gi', '3Gi', '10Gi']);
    if (rng.chance(0.25)) spec.deadline = rng.pick(['1m', '2m', '5m', '15m', '1h']);
    if (rng.chance(0.3)) spec.ttlSecondsAfterFinished = rng.pick([0, 0, 30, 86_400]);
    if (rng.chance(0.3)) spec.recovery = 'Auto';
    if (rng.chance(0.08)) spec.dryRun = true;
    const approval = rng.chance(0.2);
    const req: VolumeExpansionRequest = {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name, namespace, ...(approval ? { annotations: { [requestAnnotations.approval]: 'required' } } : {}) },
      spec,
    };
    this.api.create(volumeExpansionRequests, req);
    this.trace.add('action', `create ${name} ${JSON.stringify(spec)}${approval ? ' (approval required)' : ''}`);
  }

  /**
   * Someone changes a claim in the instant between pvx recording the plan it accepted and its
   * patch of the claim: grows it with kubectl, or deletes and creates it again. The patch must
   * then be refused (its preconditions), never made over the change.
   */
  raceClaim(claimName: string, request?: VolumeExpansionRequest): void {
    this.api.asActor('user', () => (this.rng.chance(0.5) ? this.resizeClaim(claimName) : this.recreateClaim(claimName)));
    this.trace.add('action', `(the change above came between pvx's accepted plan and its patch)`);
    // And at times the approver takes the approval back in that instant: the patch tried again must not go ahead.
    const current = request && this.api.get<VolumeExpansionRequest>(volumeExpansionRequests, request.metadata.namespace, request.metadata.name as string);
    if (current?.metadata.annotations?.[requestAnnotations.approved] && this.rng.chance(0.5)) {
      const annotations = { ...current.metadata.annotations };
      delete annotations[requestAnnotations.approved];
      this.api.asActor('user', () =>
        this.api.update(volumeExpansionRequests, { ...current, metadata: { ...current.metadata, resourceVersion: undefined, annotations } }),
      );
      this.trace.add('action', `take the approval of ${current.metadata.name} back`);
    }
  }

  /** Requests that show a plan awaiting approval: marked for one, or held by a guardrail that requires one. */
  private awaitingApproval(): VolumeExpansionRequest[] {
    return this.api.peek<VolumeExpansionRequest>(volumeExpansionRequests).filter((r) => approvalReasons.has(r.status?.reason ?? ''));
  }

  /**
   * Approves the plan a request shows, as `pvx approve` does (the plan's token, with the
   * resourceVersion read); or, a third of the time, a plan the person read earlier, with
   * `kubectl annotate --overwrite` (no precondition): an approval that arrives late, maybe for a
   * plan that no longer holds.
   */
  private approve(): void {
    const req = this.rng.pick(this.awaitingApproval());
    const s = req.status ?? {};
    const name = req.metadata.name as string;
    const shown =
      s.pvcUID && s.fromCapacity && (s.targetSize || s.targetVolumeAttributesClassName) && approvalReasons.has(s.reason ?? '')
        ? planToken(shownPlan(s, s.pvcUID))
        : undefined;
    const remembered = this.seenPlans.get(name);
    if (shown) this.seenPlans.set(name, shown);
    const late = remembered !== undefined && this.rng.chance(0.33);
    const token = late ? remembered : shown;
    if (!token) return;
    this.api.update(volumeExpansionRequests, {
      ...req,
      metadata: {
        ...req.metadata,
        resourceVersion: late ? undefined : req.metadata.resourceVersion,
        annotations: { ...req.metadata.annotations, [requestAnnotations.approved]: token },
      },
    });
    this.trace.add('action', `approve ${name} plan ${token}${late ? ' (read earlier, annotated late)' : ''} (phase ${s.phase ?? 'none'}, ${s.reason ?? ''})`);
  }

  /** Delete a claim and create another under the same name: a new UID, maybe another size and class. */
  private recreateClaim(name = this.rng.pick(this.world.claims)): void {
    const old = this.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, namespace, name);
    if (old) this.api.delete(resources.persistentVolumeClaims, namespace, name);
    const cls = name.startsWith(`${templateName}-`) ? 'fast' : this.rng.pick(this.world.classes);
    const created = this.api.create(resources.persistentVolumeClaims, claim(name, cls, this.rng.int(5, 20), old?.metadata?.labels));
    this.trace.add(
      'action',
      `recreate claim ${name}: uid ${old?.metadata?.uid ?? '(none)'} → ${created.metadata?.uid}, ${created.status?.capacity?.storage} ${cls}`,
    );
  }

  /**
   * Grow a claim with kubectl, outside pvx: a few Gi more than it asks for now. The API server
   * names kubectl-patch, now, as the writer of the size (the field moves to it from any other).
   */
  private resizeClaim(name = this.rng.pick(this.world.claims)): void {
    const pvc = this.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, namespace, name);
    if (!pvc) return;
    const size = `${Number(parseBytes(pvc.spec?.resources?.requests?.storage ?? '0') / GiB) + this.rng.int(1, 5)}Gi`;
    const writers = (pvc.metadata?.managedFields ?? [])
      .filter((f) => f.manager !== 'kubectl-patch')
      .map((f) => (ownsStorageRequest(f) ? { ...f, fieldsV1: undefined } : f));
    this.api.update(resources.persistentVolumeClaims, {
      ...pvc,
      metadata: {
        ...pvc.metadata,
        resourceVersion: undefined,
        managedFields: [...writers, { manager: 'kubectl-patch', operation: 'Update', time: new Date(), fieldsV1: storageRequestFields }],
      },
      spec: { ...pvc.spec, resources: { ...pvc.spec?.resources, requests: { storage: size } } },
    });
    this.trace.add('action', `kubectl grows ${name} (uid ${pvc.metadata?.uid}) ${pvc.spec?.resources?.requests?.storage} → ${size}`);
  }

  private flipClass(): void {
    const name = this.rng.pick(this.world.classes);
    const sc = this.api.get<V1StorageClass>(resources.storageClasses, undefined, name);
    if (!sc) return;
    this.api.update(resources.storageClasses, {
      ...sc,
      metadata: { ...sc.metadata, resourceVersion: undefined },
      allowVolumeExpansion: !sc.allowVolumeExpansion,
    });
    this.trace.add('action', `class ${name} allowVolumeExpansion → ${!sc.allowVolumeExpansion}`);
  }

  private changeQuota(): void {
    const existing = this.api.get<V1ResourceQuota>(resources.resourceQuotas, namespace, 'storage');
    if (existing && this.rng.chance(0.3)) {
      this.api.delete(resources.resourceQuotas, namespace, 'storage');
      this.trace.add('action', 'delete quota storage');
      return;
    }
    const hard = this.rng.int(30, 200);
    if (existing)
      this.api.update(resources.resourceQuotas, {
        ...existing,
        metadata: { ...existing.metadata, resourceVersion: undefined },
        spec: { hard: { 'requests.storage': `${hard}Gi` } },
      });
    else this.api.create(resources.resourceQuotas, quota(hard));
    this.trace.add('action', `quota storage requests.storage → ${hard}Gi`);
  }

  /** Someone sets a claim's VolumeAttributesClass with kubectl: another change of the volume pvx must not overlap. */
  private setClassByHand(): void {
    const name = this.rng.pick(this.world.claims);
    const c = this.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, namespace, name);
    if (!c) return;
    const vac = this.rng.pick(Object.keys(attributesClassModels));
    this.api.update(resources.persistentVolumeClaims, {
      ...c,
      metadata: { ...c.metadata, resourceVersion: undefined },
      spec: { ...c.spec, volumeAttributesClassName: vac },
    });
    this.trace.add('action', `kubectl patch pvc ${name}: volumeAttributesClassName ${c.spec?.volumeAttributesClassName ?? '(none)'} → ${vac}`);
  }

  /** The classes created late: a request may have named one before it existed. */
  private createLateClass(): void {
    const late = Object.entries(attributesClassModels).filter(
      ([name, m]) => m.late && !this.api.get<V1VolumeAttributesClass>(resources.volumeAttributesClasses, undefined, name),
    );
    if (late.length === 0) return;
    const [name] = this.rng.pick(late);
    this.api.create(resources.volumeAttributesClasses, attributesClass(name));
    this.trace.add('action', `create VolumeAttributesClass ${name}`);
  }

  /** kubectl delete ver: any request, a StatefulSet request's child among them, finished or not. */
  private deleteRequest(): void {
    const all = this.api.peek<VolumeExpansionRequest>(volumeExpansionRequests);
    if (all.length === 0) return;
    const r = this.rng.pick(all);
    this.api.delete(volumeExpansionRequests, namespace, r.metadata.name as string);
    this.trace.add('action', `delete request ${r.metadata.name} (${r.status?.phase ?? 'no status'})`);
  }

  /**
   * kubectl scale: one replica more or fewer. The StatefulSet controller creates a new replica's
   * claim at the template size (unless one is retained from before) and its pod; a removed
   * replica's pod goes and its claim stays.
   */
  private scaleStatefulSet(): void {
    const sts = this.api.get<V1StatefulSet>(resources.statefulSets, namespace, statefulSetName);
    if (!sts) return;
    const replicas = sts.spec?.replicas ?? 1;
    const start = sts.spec?.ordinals?.start ?? 0;
    const next = Math.max(0, Math.min(4, replicas + (replicas === 0 || this.rng.chance(0.5) ? 1 : -1)));
    this.api.update(resources.statefulSets, {
      ...sts,
      metadata: { ...sts.metadata, resourceVersion: undefined },
      spec: { ...(sts.spec as V1StatefulSetSpec), replicas: next },
    });
    if (next > replicas) {
      const name = replicaClaim(start + replicas);
      if (!this.api.get(resources.persistentVolumeClaims, namespace, name))
        this.api.create(resources.persistentVolumeClaims, claim(name, 'fast', 10, { app: statefulSetName }));
      if (!this.world.claims.includes(name)) this.world.claims.push(name);
      if (!this.api.get(resources.pods, namespace, `pod-${name}`)) this.api.create(resources.pods, pod(name));
    } else if (next < replicas && this.api.get(resources.pods, namespace, `pod-${replicaClaim(start + next)}`)) {
      this.api.delete(resources.pods, namespace, `pod-${replicaClaim(start + next)}`);
    }
    this.trace.add('action', `scale StatefulSet ${statefulSetName} ${replicas} → ${next}`);
  }

  /** A StorageClass deleted (claims keep it by name), or one deleted before created again. */
  private deleteClass(): void {
    const name = this.rng.pick(this.world.classes);
    if (this.api.get(resources.storageClasses, undefined, name)) {
      this.api.delete(resources.storageClasses, undefined, name);
      this.trace.add('action', `delete StorageClass ${name}`);
    } else {
      this.api.create(resources.storageClasses, storageClass(name));
      this.trace.add('action', `create StorageClass ${name} again`);
    }
  }

  /** The namespace object, created after its claims (pvx's cache learns of it late). */
  private createNamespace(): void {
    this.api.create(namespaces, namespaceObject());
    this.trace.add('action', `create namespace ${namespace}`);
  }

  /** A policy created during the run: younger than those before it, maybe over the same claims. */
  private createPolicy(): void {
    const taken = new Set(this.policies().map((p) => p.metadata.name));
    const index = [0, 1, 2, 3].find((i) => !taken.has(policyName(i))) as number;
    const p = policy(this.rng, index, this.world.statefulSet !== undefined);
    this.api.create(volumeExpansionPolicies, p);
    this.trace.add('action', `create policy ${p.metadata.name} ${JSON.stringify(p.spec)}`);
  }

  /** A policy deleted (its requests stay, as in a cluster whose garbage collector has not run yet). */
  private deletePolicy(): void {
    const p = this.rng.pick(this.policies());
    this.api.delete(volumeExpansionPolicies, namespace, p.metadata.name as string);
    this.trace.add('action', `delete policy ${p.metadata.name}`);
  }

  private policies(): readonly VolumeExpansionPolicy[] {
    return this.api.peek<VolumeExpansionPolicy>(volumeExpansionPolicies);
  }

  private togglePod(): void {
    const claimName = this.rng.pick(this.world.claims);
    const existing = this.api.get<V1Pod>(resources.pods, namespace, `pod-${claimName}`);
    if (existing) this.api.delete(resources.pods, namespace, `pod-${claimName}`);
    else this.api.create(resources.pods, pod(claimName));
    this.trace.add('action', `${existing ? 'stop' : 'start'} pod-${claimName}`);
  }
}
