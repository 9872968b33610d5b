// The policy evaluator: on the leader, read usage once for the whole cluster, record the new
// measurements, then run one policy pass (src/policies/autoscale/policy-pass.ts — every decision, pure) and
// carry out what it says: create a VolumeExpansionRequest (Auto), one awaiting approval
// (Approval), or only report (DryRun); record Events on change and write each policy's status
// when its content changed. It never patches a PVC itself. The next pass is timed to just after
// the usage source's next refresh of the claims whose decision it may change
// (src/policies/autoscale/sampling.ts), --policy-interval at the latest.
import type { KubernetesObject, V1Namespace, V1PersistentVolumeClaim, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import type { PolicyStatus, VolumeExpansionPolicy, VolumeStatus } from '../../crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { EventRecord, KubeClient } from '../../k8s/client.ts';
import { ApiError, RetryAfterError } from '../../k8s/errors.ts';
import { listAll, readLive, readPolicyLive } from '../../k8s/list.ts';
import { objectKey, resources, volumeExpansionRequests } from '../../k8s/resources.ts';
import { requestLabels } from '../../crds/keys.ts';
import type { PolicyMetrics } from '../../metrics/policy.ts';
import { usedRatio } from '../../policies/autoscale/decide.ts';
import { isRequestAskedFor, policyId, policyPass, policyStatus, sameStatus, type PolicyPlan, type VolumePlan } from '../../policies/autoscale/policy-pass.ts';
import { nextReadDelayMs } from '../../policies/autoscale/sampling.ts';
import type { DriverProfiles } from '../../policies/budget/drivers.ts';
import type { SelectionLookups } from '../../policies/autoscale/selection.ts';
import { templateFollowRequests } from '../../policies/autoscale/template-follow.ts';
import type { SampleStore } from '../../usage/samples.ts';
import type { UsageSource } from '../../usage/source.ts';
import type { ReconcileResult, Wake } from '../runtime/controller.ts';
import type { Informer } from '../../k8s/informer.ts';
import { staleCacheMs, UnseenCreates, UnseenWrites } from './unseen-writes.ts';

export interface PolicyEvaluatorDeps {
  client: KubeClient;
  /** The decisions it carries out (default policyPass and nextReadDelayMs; the simulation's mutants swap them). */
  pass?: typeof policyPass;
  nextReadDelay?: typeof nextReadDelayMs;
  policies: Informer<VolumeExpansionPolicy>;
  /** Cluster policies with triggers grow PVCs too; their namespaceSelector needs the namespaces. */
  clusterPolicies?: Informer<ClusterVolumeExpansionPolicy>;
  namespaces?: Informer<V1Namespace>;
  requests: Informer<VolumeExpansionRequest>;
  pvcs: Informer<V1PersistentVolumeClaim>;
  storageClasses: Informer<V1StorageClass>;
  /** For policies that select a StatefulSet's claims. */
  statefulSets?: Informer<V1StatefulSet>;
  source: UsageSource | undefined;
  samples: SampleStore;
  logger: Logger;
  metrics?: PolicyMetrics;
  canWrite: () => boolean;
  /** --policy-interval: the longest wait between two passes (they come sooner for a watched claim). */
  intervalMs: number;
  now?: () => Date;
  /** A monotonic clock in ms (default performance.now), for how long a create may go unseen. */
  monotonicMs?: () => number;
  /**
   * False for an instance that handles part of the cluster (--namespace-selector): its view of a
   * ClusterVolumeExpansionPolicy's claims is partial, and instances writing their halves in turn
   * would flip its status for ever. Its decisions still show as Events, requests and metrics.
   */
  writesClusterPolicyStatus?: boolean;
  /** The driver profiles (--modification-budget); default defaultDriverProfiles. */
  profiles?: DriverProfiles;
  /**
   * The requests this process created that the requests' cache has not shown yet, shared with the
   * request reconciler (a StatefulSet request's children): a pass counts them in flight. Default:
   * the evaluator's own creates only.
   */
  ownCreates?: UnseenCreates<VolumeExpansionRequest>;
  /** The claim patches this process made that the claims' cache has not shown yet (the request reconciler records them). */
  ownClaimPatches?: UnseenWrites;
}

/** How long a request we created and the requests' cache has not shown is still counted as ours in flight. */
export const unseenCreateMs = 10 * 60_000;

/** The evaluator's single work-queue key: one pass covers every policy. */
export const evaluateKey = 'policies';

/**
 * When the claim was created: a measurement from before (or in its creation second: its volume is
 * not bound and mounted that fast) is of another volume — an older claim of the name, still mounted
 * by a pod that started before it was deleted and created again (seed 1217471: the first pass saw
 * only the new claim, and a measurement of the old one's, 5 Gi nearly full, made a forecast).
 */
function createdAt(pvc: V1PersistentVolumeClaim): Date | undefined {
  const at = pvc.metadata?.creationTimestamp ? new Date(pvc.metadata.creationTimestamp as unknown as string | Date) : undefined;
  return at && !Number.isNaN(at.getTime()) ? at : undefined;
}

const laterOf = (a: Date | undefined, b: Date | undefined): Date | undefined => (!a ? b : !b ? a : a.getTime() >= b.getTime() ? a : b);

export class PolicyEvaluator {
  private readonly d: PolicyEvaluatorDeps;
  private readonly now: () => Date;
  /** PVCs with per-volume series, from the last pass. */
  private published = new Set<string>();
  /** Policies with a last-evaluation series, from the last pass. */
  private evaluated = new Set<string>();
  /** The last error logged per policy that cannot be evaluated, so it is logged once per change. */
  private readonly loggedErrors = new Map<string, string>();
  /** Last Event per policy/PVC, so Events fire on change only. */
  private readonly lastEvent = new Map<string, string>();
  /** Our policy status writes the policies' caches have not shown yet. */
  private readonly unseenStatus = new UnseenWrites();
  /**
   * Policies whose status this process has written (or found as it would write it) since it
   * started: for the others, what the cache shows may be behind another process's last write.
   */
  private readonly statusKnown = new Set<string>();
  /** Requests we (this process) created that the requests' cache has not shown yet: each pass counts them as in flight. */
  private readonly unseenCreates: UnseenCreates<VolumeExpansionRequest>;
  /**
   * Requests for a claim found on the API server just before a create that the requests' cache
   * did not show (another process's, its ADDED event lost): counted as in flight until it does.
   */
  private readonly unseenFound = new UnseenCreates<VolumeExpansionRequest>(unseenCreateMs);
  /** The requests ("namespace/name") the current pass decided with. */
  private decidedWith = new Set<string>();
  /** Creates whose answer never came ("namespace/name"): whether they were made is read at the next pass. */
  private readonly uncertainCreates = new Set<string>();
  private readonly monotonicMs: () => number;

  constructor(deps: PolicyEvaluatorDeps) {
    this.d = deps;
    this.now = deps.now ?? (() => new Date());
    this.monotonicMs = deps.monotonicMs ?? (() => performance.now());
    this.unseenCreates = deps.ownCreates ?? new UnseenCreates<VolumeExpansionRequest>(unseenCreateMs);
  }

  /**
   * What wakes the pass, besides its own requeue every interval at the latest (sooner when a
   * watched claim's next measurement is due): a policy's spec changed, of either kind.
   */
  watch(wake: Wake): void {
    const specChanged = {
      onAdd: () => wake(evaluateKey),
      onUpdate: (o: KubernetesObject, n: KubernetesObject) => o.metadata?.generation !== n.metadata?.generation && wake(evaluateKey),
    };
    this.d.policies.on(specChanged);
    this.d.clusterPolicies?.on(specChanged);
  }

  reconcile = async (): Promise<ReconcileResult> => {
    const now = this.now();
    await this.settleUncertainCreates();
    await this.readUsage(now);
    const claims = this.d.pvcs.list();
    // State first, explicitly: the pass itself only reads.
    this.d.samples.retain(new Set(claims.map(objectKey)));
    // Only claims a pass is about to ask for are checked against this record; a cache still behind
    // a patch after an hour has long been relisted, or its claim is gone.
    this.d.ownClaimPatches?.forgetOlderThan(60 * 60_000);
    const capacityChangedAt = new Map(
      claims.map(
        (pvc) =>
          [
            objectKey(pvc),
            laterOf(this.d.samples.observeCapacity(objectKey(pvc), pvc.status?.capacity?.storage ?? '0', now, pvc.metadata?.uid), createdAt(pvc)),
          ] as const,
      ),
    );
    const lookups: SelectionLookups = {
      namespaceLabels: (ns) => this.d.namespaces?.get(ns)?.metadata?.labels,
      statefulSet: (ns, name) => this.d.statefulSets?.get(`${ns}/${name}`),
    };
    // Our own creates count before the cache shows them: a lagging cache must not make a second request for one breach.
    const requests = this.knownRequests();
    this.decidedWith = new Set(requests.map(objectKey));
    const plans = (this.d.pass ?? policyPass)({
      policies: this.d.policies.list(),
      clusterPolicies: this.d.clusterPolicies?.list() ?? [],
      claims,
      storageClasses: this.d.storageClasses.list(),
      requests,
      lookups,
      samples: (key) => this.d.samples.get(key),
      lastCapacityChangeAt: (key) => capacityChangedAt.get(key),
      now,
      ...(this.d.profiles ? { profiles: this.d.profiles } : {}),
    });

    const decided = new Set<string>();
    const evaluated = new Set<string>();
    for (const plan of plans) {
      evaluated.add(plan.policy.ref.name);
      try {
        await this.carryOut(plan, decided, now);
      } catch (err) {
        if (err instanceof RetryAfterError) throw err;
        this.d.logger.error({ policy: policyId(plan.policy.ref), err: (err as Error).message }, 'policy evaluation failed');
      }
    }
    // A PVC no policy decided on in this pass (deleted, or no longer selected) keeps no per-volume
    // series: an alert on its time to full or its maximum must not fire on a number from the past.
    for (const key of this.published) {
      if (decided.has(key)) continue;
      const [namespace, persistentvolumeclaim] = key.split('/') as [string, string];
      for (const gauge of [this.d.metrics?.usedRatio, this.d.metrics?.timeToFull, this.d.metrics?.atMax]) gauge?.remove({ namespace, persistentvolumeclaim });
    }
    for (const policy of this.evaluated) if (!evaluated.has(policy)) this.d.metrics?.lastEvaluation.remove({ policy });
    const planned = new Set(plans.map((p) => policyId(p.policy.ref)));
    for (const id of this.loggedErrors.keys()) if (!planned.has(id)) this.loggedErrors.delete(id);
    await this.followTemplates(lookups, now);
    // The last Event of a policy and claim no longer paired (either gone) is not kept for ever.
    const paired = new Set(plans.flatMap((p) => p.volumes.map((v) => `${policyId(p.policy.ref)}/${v.key}`)));
    for (const key of this.lastEvent.keys()) if (!paired.has(key)) this.lastEvent.delete(key);
    this.published = decided;
    this.evaluated = evaluated;
    return { requeueAfterMs: this.nextReadDelayMs(plans) };
  };

  /** How long until the next pass: --policy-interval, or sooner, just after a watched claim's next measurement. */
  private nextReadDelayMs(plans: readonly PolicyPlan[]): number {
    if (!this.d.source) return this.d.intervalMs;
    const watched = new Set(plans.flatMap((p) => p.volumes.filter((v) => v.watch).map((v) => v.key)));
    const delay = (this.d.nextReadDelay ?? nextReadDelayMs)({
      now: this.now(),
      watched: [...watched].map((key) => this.d.samples.get(key)),
      maxMs: this.d.intervalMs,
    });
    if (delay < this.d.intervalMs) this.d.logger.debug({ watched: watched.size, delayMs: delay }, 'next usage read timed to the source’s next refresh');
    return delay;
  }

  /** Usage is read with no policy too: the audit's nearly-full rule needs it most where none is. */
  private async readUsage(now: Date): Promise<void> {
    const source = this.d.source;
    if (!source) return;
    const report = await source.collect(now, { inodes: this.inodesWanted() });
    for (const [key, sample] of report.samples) this.d.samples.add(key, sample, source.sampleTimes);
    for (const e of report.errors) {
      this.d.metrics?.sourceErrors.inc({ source: source.name });
      this.d.logger.warn({ source: source.name, target: e.target, err: e.message }, 'usage source failed for one target; skipped');
    }
  }

  /** Whether a policy of either kind has an inode trigger: only then are inode counts read. */
  private inodesWanted(): boolean {
    const policies = [...this.d.policies.list(), ...(this.d.clusterPolicies?.list() ?? [])];
    return policies.some((p) => p.spec?.triggers?.inodesUsedPercent !== undefined);
  }

  private async carryOut(plan: PolicyPlan, decided: Set<string>, now: Date): Promise<void> {
    const { policy } = plan;
    const id = policyId(policy.ref);
    if (plan.error) {
      // Its own status says why; every other policy goes on. Logged once per change, not per pass.
      if (this.loggedErrors.get(id) !== plan.error) this.d.logger.error({ policy: id, err: plan.error }, 'policy not evaluated');
      this.loggedErrors.set(id, plan.error);
      await this.writeStatus(plan, plan.status);
      return;
    }
    this.loggedErrors.delete(id);
    this.d.metrics?.evaluations.inc({ policy: policy.ref.name });
    this.d.metrics?.lastEvaluation.set({ policy: policy.ref.name }, now.getTime() / 1000);
    const statuses: VolumeStatus[] = [];
    for (const v of plan.volumes) {
      decided.add(v.key);
      this.publish(v);
      if (v.decision.kind === 'expand') this.d.metrics?.triggers.inc({ policy: policy.ref.name, trigger: v.decision.trigger });
      statuses.push(await this.act(plan, v));
    }
    await this.writeStatus(plan, policyStatus(statuses, plan.ready));
  }

  /** Writes the policy's status when what it says changed. */
  private async writeStatus(plan: PolicyPlan, status: PolicyStatus): Promise<void> {
    const { policy } = plan;
    if (policy.ref.kind === 'ClusterVolumeExpansionPolicy' && this.d.writesClusterPolicyStatus === false) return;
    const id = policyId(policy.ref);
    const cached = policy.ref.kind === 'VolumeExpansionPolicy' ? this.d.policies.get(id) : this.d.clusterPolicies?.get(policy.ref.name);
    const cachedVersion = cached?.metadata.resourceVersion ?? '';
    // The cache has not shown our last write yet: what it holds is older than what we wrote, and
    // a status decided against it would only be written again. The next pass decides from the
    // status as written.
    if (this.unseenStatus.behind(id, cachedVersion)) return;
    if (sameStatus(cached?.status, status)) return;
    if (!this.d.canWrite()) throw new RetryAfterError('not the leader: not writing policy status', 2000);
    // Before its first write of a policy's status, a process reads the status the API server has:
    // a cache that missed the last leader's write would have it write the same status again
    // (seed 1751291: a watch lost the old leader's status write; the new leader's first pass wrote
    // it again, changing nothing). After that, its own writes are what the cache waits for.
    if (!this.statusKnown.has(id)) {
      // A read that fails costs nothing but this check: the write goes on as it would have.
      const live = await readPolicyLive(this.d.client, policy.ref).catch(() => undefined);
      this.statusKnown.add(id);
      if (live && live.metadata.uid === cached?.metadata.uid && sameStatus(live.status, status)) {
        // The cache is behind the API server: what it shows is not decided from until it catches up.
        if (live.metadata.resourceVersion !== cachedVersion) this.unseenStatus.wrote(id, cachedVersion);
        return;
      }
    }
    const written = await this.d.client.patchPolicyStatus(policy.ref, status);
    if (written !== cachedVersion) this.unseenStatus.wrote(id, cachedVersion);
  }

  /** The per-volume series. */
  private publish(v: VolumePlan): void {
    const m = this.d.metrics;
    if (!m) return;
    const [namespace, persistentvolumeclaim] = v.key.split('/') as [string, string];
    const labels = { namespace, persistentvolumeclaim };
    const d = v.decision;
    if (d.kind !== 'unknown' && v.newest) m.usedRatio.set(labels, usedRatio(v.newest));
    // Every decision that had a forecast reports it; any other drops the series, so an alert on
    // time to full never fires on a number from an earlier pass.
    if ('timeToFullMs' in d && d.timeToFullMs !== undefined) m.timeToFull.set(labels, d.timeToFullMs / 1000);
    else m.timeToFull.remove(labels);
    // Set by the decisions that know (a blocked or unknown one says nothing about the size).
    if (d.kind === 'atMax') m.atMax.set(labels, 1);
    else if (d.kind === 'idle' || d.kind === 'expand') m.atMax.set(labels, 0);
  }

  /** Carries out one claim's action; returns what the status says of the claim afterwards. */
  private async act(plan: PolicyPlan, v: VolumePlan): Promise<VolumeStatus> {
    const eventKey = `${policyId(plan.policy.ref)}/${v.key}`;
    const action = v.action;
    if (action.kind === 'none') return v.status;
    if (action.kind === 'event') {
      await this.eventOnChange(eventKey, action.event);
      return v.status;
    }
    if (!this.d.canWrite()) throw new RetryAfterError('not the leader: not creating requests', 2000);
    const name = action.request.metadata.name as string;
    const moved = this.movedSinceDecided(v) ?? (await this.askedOnServer(v)) ?? (await this.replacedOnServer(v));
    if (moved) {
      this.d.logger.info({ policy: policyId(plan.policy.ref), pvc: v.key, why: moved }, 'not creating the request: the claim moved since the pass decided');
      return {
        ...v.status,
        decision: 'blocked',
        reason: 'InFlight',
        message: `${moved} since this pass decided; deciding again at the next pass`,
        request: undefined,
      };
    }
    const refused = await this.create(action.namespace, action.request);
    if (refused) {
      this.d.logger.error(
        { policy: policyId(plan.policy.ref), namespace: action.namespace, request: name, err: refused.message },
        'could not create the expansion request',
      );
      return { ...v.status, decision: 'error', reason: refused.reason, message: refused.message, request: undefined };
    }
    if (action.event) await this.eventOnChange(eventKey, action.event);
    return v.status;
  }

  /**
   * The requests as the cache has them, with those it does not show yet: ours (this process's, a
   * StatefulSet request's children too) and others found on the API server before a create.
   */
  private knownRequests(): VolumeExpansionRequest[] {
    const cached = (key: string) => this.d.requests.get(key) !== undefined;
    const nowMs = this.monotonicMs();
    return [...this.d.requests.list(), ...this.unseenCreates.unseen(cached, nowMs), ...this.unseenFound.unseen(cached, nowMs)];
  }

  /**
   * Whether the API server holds a request for the claim that the pass did not decide with, in
   * words, or undefined; such a request counts as in flight from now on (unseenFound). Read just
   * before the create, because a cache may never show a request another process made: seed
   * 2289932, a previous leader's create answered after its lease had passed, its ADDED event lost,
   * and the new leader asked a second time for the same breach.
   */
  private async askedOnServer(v: VolumePlan): Promise<string | undefined> {
    const [namespace, name] = v.key.split('/') as [string, string];
    const { items } = await listAll<VolumeExpansionRequest>(this.d.client, volumeExpansionRequests, { namespace });
    const unknown = items.find((r) => r.spec?.target?.pvcName === name && !this.decidedWith.has(objectKey(r)));
    if (!unknown) return undefined;
    this.unseenFound.created(objectKey(unknown), unknown, this.monotonicMs());
    return `request ${unknown.metadata.name} for ${v.key} is on the API server and the requests' cache does not show it yet`;
  }

  /**
   * Whether the claim the pass decided on is gone from the API server, or another of its name
   * stands there now, in words, or undefined. Read just before the create: usage sources name
   * claims, not volumes, so a claims cache behind a claim deleted and created again under its
   * name mixes two volumes' measurements into one line (seed 2957629: the new volume's first
   * reading after the old one's made a forecast of a fill that never was, and the pass asked to
   * grow a claim that only spiked).
   */
  private async replacedOnServer(v: VolumePlan): Promise<string | undefined> {
    const [namespace, name] = v.key.split('/') as [string, string];
    const live = await readLive<V1PersistentVolumeClaim>(this.d.client, resources.persistentVolumeClaims, namespace, name);
    if (live?.metadata?.uid === v.pvc.metadata?.uid) return undefined;
    return live ? `${v.key} was deleted and created again (another volume of its name)` : `${v.key} was deleted`;
  }

  /**
   * Whether the claim moved between the pass's decision and its create — the claim's copy changed,
   * or a request for it appeared (another controller of this process, or the cache caught up) —
   * in words, or undefined. A pass carries out its creates one after another, each an API call:
   * seconds may pass, and a create on the old reading would ask again for what is already asked.
   */
  private movedSinceDecided(v: VolumePlan): string | undefined {
    const now = this.d.pvcs.get(v.key);
    if (now && now.metadata?.resourceVersion !== v.pvc.metadata?.resourceVersion) return `${v.key} changed`;
    // A copy from before this process's own patch of the claim (its watch event late, or lost until
    // a relist) shows neither the raise nor when it was made: a pass deciding from it would ask
    // again within the cooldown (seed 41955: the raising request deleted, three events of the claim
    // lost, the policy asked again 134 s later). It waits until the cache shows the patch.
    if (this.d.ownClaimPatches?.behind(v.key, v.pvc.metadata?.resourceVersion)) return `pvx patched ${v.key} and the claims' cache does not show it yet`;
    const [namespace, name] = v.key.split('/');
    const appeared = this.knownRequests().find(
      (r) => r.metadata.namespace === namespace && r.spec.target.pvcName === name && !this.decidedWith.has(objectKey(r)),
    );
    return appeared ? `request ${appeared.metadata.name} for ${v.key} appeared` : undefined;
  }

  /**
   * Policies over a StatefulSet with spec.statefulSetTemplate.update: a request that carries the
   * size its claims have all grown to into the template (src/policies/autoscale/template-follow.ts).
   */
  private async followTemplates(lookups: SelectionLookups, now: Date): Promise<void> {
    // Our own creates count before the cache shows them (the pass's, a StatefulSet request's children): busy.
    const wanted = templateFollowRequests({
      policies: this.d.policies.list(),
      clusterPolicies: this.d.clusterPolicies?.list() ?? [],
      lookups,
      claim: (ns, name) => this.d.pvcs.get(`${ns}/${name}`),
      requests: this.knownRequests(),
      now,
    });
    for (const request of wanted) {
      if (!this.d.canWrite()) throw new RetryAfterError('not the leader: not creating requests', 2000);
      const namespace = request.metadata.namespace as string;
      const policy = request.metadata.labels?.[requestLabels.policy] as string;
      const refused = await this.create(namespace, request);
      if (refused) {
        this.d.logger.error(
          { policy: `${namespace}/${policy}`, request: request.metadata.name, err: refused.message },
          'could not create the template request',
        );
        continue;
      }
      const { statefulSetName, volumeClaimTemplate } = request.spec.target;
      await this.eventOnChange(`${namespace}/${policy}/template/${statefulSetName}/${volumeClaimTemplate}`, {
        regarding: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionPolicy', namespace, name: policy, uid: request.metadata.ownerReferences?.[0]?.uid },
        type: 'Normal',
        reason: 'TemplateRequestCreated',
        message: `every claim of StatefulSet ${statefulSetName} template ${volumeClaimTemplate} has grown to ${request.spec.size} or more: created ${request.metadata.name} to carry it into the template`,
      });
    }
  }

  /**
   * Creates whose answer never came, and creates the requests' cache has not shown for
   * staleCacheMs: the cache shows those that exist; each other is read from the API server, and
   * forgotten if it does not exist (never made, or deleted before the cache saw it: seed 700662, a
   * request deleted two seconds after its create counted in flight for ten minutes, and the
   * policy asked for its claim no more).
   */
  private async settleUncertainCreates(): Promise<void> {
    const longUnseen = this.unseenCreates.longUnseen((key) => this.d.requests.get(key) !== undefined, this.monotonicMs(), staleCacheMs);
    for (const key of new Set([...this.uncertainCreates, ...longUnseen])) {
      if (this.d.requests.get(key)) {
        this.uncertainCreates.delete(key);
        continue;
      }
      const [namespace, name] = key.split('/') as [string, string];
      if (!(await readLive<VolumeExpansionRequest>(this.d.client, volumeExpansionRequests, namespace, name))) this.unseenCreates.forget(key);
      this.uncertainCreates.delete(key);
    }
  }

  /**
   * Creates the request. AlreadyExists is success only when the existing request is the one asked
   * for (our own earlier create, whose response was lost); otherwise the clash is returned as the
   * message to report (RequestNameTaken), as is the API server's refusal (RequestRefused, a 4xx).
   * Any other failure — no answer, a server error — is thrown, the create counted in flight.
   */
  private async create(
    namespace: string,
    request: VolumeExpansionRequest,
  ): Promise<{ reason: 'RequestNameTaken' | 'RequestRefused'; message: string } | undefined> {
    const name = request.metadata.name as string;
    // Read as ours in flight until the requests' cache shows it (created now, as the API server stamps it).
    const ours = () =>
      this.unseenCreates.created(
        `${namespace}/${name}`,
        { ...request, metadata: { ...request.metadata, namespace, creationTimestamp: this.now() } },
        this.monotonicMs(),
      );
    try {
      await this.d.client.createRequest(namespace, request);
      ours();
      return undefined;
    } catch (err) {
      if (!(err instanceof ApiError && err.reason === 'AlreadyExists')) {
        // No answer, or a server error: the create may have been made. It counts as ours in flight
        // until the next pass has read whether it exists (asking again would be a second request
        // for one breach); an API server's refusal (4xx) made nothing.
        if (!(err instanceof ApiError && err.code >= 400 && err.code < 500)) {
          ours();
          this.uncertainCreates.add(`${namespace}/${name}`);
          throw err;
        }
        // Refused (an object-count quota, an admission policy): the policy says so in its status,
        // and every other claim and policy is still decided and written.
        return {
          reason: 'RequestRefused',
          message: `the API server refused to create VolumeExpansionRequest ${namespace}/${name} (${err.code}: ${err.message}): not expanding for now`,
        };
      }
    }
    // Read from the API server, not the cache: an object created moments ago may not be cached yet.
    const existing = await readLive<VolumeExpansionRequest>(this.d.client, volumeExpansionRequests, namespace, name);
    if (existing && isRequestAskedFor(existing, request)) {
      ours();
      return undefined;
    }
    return {
      reason: 'RequestNameTaken',
      message: `VolumeExpansionRequest ${namespace}/${name} already exists and is not the one this policy asked for (${existing ? 'other labels, owner or spec' : 'it could not be read back'}): not expanding`,
    };
  }

  private async eventOnChange(key: string, event: EventRecord): Promise<void> {
    const said = `${event.reason}:${event.message}`;
    if (this.lastEvent.get(key) === said) return;
    this.lastEvent.set(key, said);
    await this.d.client.emitEvent(event).catch((err: unknown) => this.d.logger.warn({ err: (err as Error).message }, 'could not record an Event'));
  }
}
