// The VolumeExpansionRequest reconciler: read the caches → decide with the pure functions in
// src/policies → write. One PVC patch per request, carrying the request's UID in an annotation
// in the same write as the size: after a crash the annotation says the patch happened, so no
// restart can expand twice. Everything after the patch is derived from the PVC's state.
import type { V1Namespace, V1PersistentVolumeClaim, V1Pod, V1ResourceQuota, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import type { Logger } from 'pino';
import type { Counter, Histogram } from 'prom-client';
import { requestAnnotations, requestLabels } from '../../crds/keys.ts';
import { pvcAnnotations, type Condition, type Phase, type RequestStatus, type VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { KubeClient } from '../../k8s/client.ts';
import { ApiError } from '../../k8s/errors.ts';
import { MiB, formatBytes, parseBytes, roundUp } from '../../k8s/quantity.ts';
import { driverProfile } from '../../policies/drivers.ts';
import { parseDuration } from '../../policies/duration.ts';
import { modificationTimes } from '../../policies/history.ts';
import { matchesLabels } from '../../policies/labels.ts';
import { derivePhase, finishedPhases } from '../../policies/phase.ts';
import { runningPodClaims } from '../../policies/pods.ts';
import { statefulSetClaimName } from '../../policies/selection.ts';
import { validateRequest, type Guardrail, type Validation } from '../../policies/validation.ts';
import type { ReconcileResult } from '../controller.ts';
import { ConflictError, RetryAfterError } from '../errors.ts';
import type { Informer } from '../informer.ts';



export interface RequestMetrics {
  requests: Counter<'result'>;
  phaseDuration: Histogram<'phase'>;
}

export interface RequestReconcilerDeps {
  client: KubeClient;
  requests: Informer<VolumeExpansionRequest>;
  pvcs: Informer<V1PersistentVolumeClaim>;
  storageClasses: Informer<V1StorageClass>;
  pods: Informer<V1Pod>;
  quotas: Informer<V1ResourceQuota>;
  statefulSets: Informer<V1StatefulSet>;
  /** Cluster guardrails and the namespace labels they select by (optional: no guardrails without them). */
  clusterPolicies?: Informer<ClusterVolumeExpansionPolicy>;
  namespaces?: Informer<V1Namespace>;
  logger: Logger;
  metrics?: RequestMetrics;
  /** The leader-election fence: writes only while this is true. */
  canWrite: () => boolean;
  now?: () => Date;
}

const trackEveryMs = 30_000;

export class ExpansionRequestReconciler {
  private readonly d: RequestReconcilerDeps;
  private readonly now: () => Date;

  constructor(deps: RequestReconcilerDeps) {
    this.d = deps;
    this.now = deps.now ?? (() => new Date());
  }

  /** Every request that targets a claim. */
  private onPVC(namespace: string, pvcName: string): VolumeExpansionRequest[] {
    return this.d.requests.list().filter((r) => r.metadata.namespace === namespace && r.spec?.target?.pvcName === pvcName);
  }

  /** Keys of unfinished requests that target a claim (for PVC and pod events). */
  requestsFor(namespace: string, pvcName: string): string[] {
    return this.onPVC(namespace, pvcName)
      .filter((r) => !finishedPhases.has(r.status?.phase as Phase))
      .map((r) => `${namespace}/${r.metadata.name}`);
  }

  reconcile = async (key: string): Promise<ReconcileResult> => {
    const req = this.d.requests.get(key);
    if (!req) return {};
    const status = req.status ?? {};
    if (finishedPhases.has(status.phase as Phase)) return this.expire(req);
    const ns = req.metadata.namespace as string;
    const log = this.d.logger.child({ controller: 'expansion-request', namespace: ns, name: req.metadata.name });

    if (req.spec.target.statefulSetName) return this.reconcileStatefulSet(req);
    const pvcName = req.spec.target.pvcName as string;
    const pvc = this.d.pvcs.get(`${ns}/${pvcName}`);
    const patchedByUs = pvc?.metadata?.annotations?.[pvcAnnotations.requestUID] === req.metadata.uid;
    if (!status.timeline?.patchedAt && !patchedByUs) return this.validateAndPatch(req, pvc, log);
    return this.track(req, pvc, patchedByUs);
  };

  /** The pure validation, fed from the caches: the claim, its class, quotas, other requests for it. */
  private validate(req: VolumeExpansionRequest, pvcName: string, now: Date): Validation {
    const ns = req.metadata.namespace as string;
    const pvc = this.d.pvcs.get(`${ns}/${pvcName}`);
    const created = (r: VolumeExpansionRequest) => `${new Date(r.metadata.creationTimestamp ?? 0).toISOString()}/${r.metadata.name}`;
    const samePVC = this.onPVC(ns, pvcName).filter((r) => r.metadata.uid !== req.metadata.uid);
    return validateRequest({
      spec: req.spec,
      pvcName,
      pvc,
      storageClass: pvc?.spec?.storageClassName ? this.d.storageClasses.get(pvc.spec.storageClassName) : undefined,
      quotas: this.d.quotas.list().filter((q) => q.metadata?.namespace === ns),
      earlierActiveRequests: samePVC.filter((r) => !finishedPhases.has(r.status?.phase as Phase) && created(r) < created(req)).map((r) => r.metadata.name as string),
      previousModifications: modificationTimes(samePVC),
      guardrails: this.guardrails(ns),
      now,
    });
  }

  /** The guardrails of every ClusterVolumeExpansionPolicy whose namespace selector takes this namespace. */
  private guardrails(namespace: string): Guardrail[] {
    const labels = this.d.namespaces?.get(namespace)?.metadata?.labels;
    return (this.d.clusterPolicies?.list() ?? [])
      .filter((p) => p.spec.guardrails && matchesLabels(p.spec.namespaceSelector?.matchLabels, labels))
      .map((p) => {
        const g = p.spec.guardrails ?? {};
        return {
          policy: p.metadata.name as string,
          maxBytes: g.maxSize ? parseBytes(g.maxSize) : undefined,
          maxStepBytes: g.maxStep ? parseBytes(g.maxStep) : undefined,
          allowedStorageClasses: g.allowedStorageClasses,
        };
      });
  }

  private async validateAndPatch(req: VolumeExpansionRequest, pvc: V1PersistentVolumeClaim | undefined, log: Logger): Promise<ReconcileResult> {
    const ns = req.metadata.namespace as string;
    const pvcName = req.spec.target.pvcName as string;
    const now = this.now();
    const v = this.validate(req, pvcName, now);
    const accepted = { acceptedAt: req.status?.timeline?.acceptedAt ?? now.toISOString() };
    if (v.kind === 'reject') return this.finish(req, 'Rejected', v.reason, v.message, 'rejected', { timeline: accepted, pvcName });
    if (v.kind === 'wait') {
      await this.writeStatus(req, { phase: 'Pending', reason: v.reason, message: v.message, pvcName, timeline: accepted });
      return { requeueAfterMs: v.retryAfterMs };
    }
    const sizes = { pvcName, fromCapacity: formatBytes(v.fromBytes), targetSize: formatBytes(v.targetBytes) };
    if (req.spec.dryRun) {
      return this.finish(req, 'Completed', 'DryRun', `dry run: would grow ${pvcName} from ${sizes.fromCapacity} to ${sizes.targetSize}; nothing was changed`, 'dry_run', {
        ...sizes,
        timeline: accepted,
      });
    }
    const anns = req.metadata.annotations ?? {};
    if (anns[requestAnnotations.approval] === 'required' && anns[requestAnnotations.approved] !== 'true') {
      await this.writeStatus(req, {
        ...sizes,
        phase: 'Pending',
        reason: 'AwaitingApproval',
        message: `would grow ${pvcName} from ${sizes.fromCapacity} to ${sizes.targetSize}; approve with: kubectl annotate ver ${req.metadata.name} ${requestAnnotations.approved}=true`,
        timeline: accepted,
      });
      return {};
    }
    if (!this.d.canWrite()) throw new RetryAfterError('not the leader (or the lease is not renewed): not patching', 2000);
    const claim = pvc as V1PersistentVolumeClaim;
    try {
      await this.d.client.patchPvcSize(ns, pvcName, {
        resourceVersion: claim.metadata?.resourceVersion ?? '',
        uid: claim.metadata?.uid ?? '',
        storage: sizes.targetSize,
        annotations: {
          [pvcAnnotations.request]: req.metadata.name as string,
          [pvcAnnotations.requestUID]: req.metadata.uid as string,
          [pvcAnnotations.previousCapacity]: sizes.fromCapacity,
          [pvcAnnotations.targetSize]: sizes.targetSize,
        },
      });
    } catch (err) {
      if (err instanceof ApiError && err.code === 409) throw new ConflictError(`PVC ${pvcName} changed meanwhile: ${err.message}`);
      if (err instanceof ApiError && (err.code === 403 || err.code === 422)) {
        return this.finish(req, 'Rejected', err.code === 403 ? 'AdmissionDenied' : 'Invalid', `the API server refused the change: ${err.message}`, 'rejected', { ...sizes, timeline: accepted });
      }
      throw err;
    }
    log.info({ pvc: pvcName, from: sizes.fromCapacity, to: sizes.targetSize }, 'patched the claim');
    await this.event(req, 'Normal', 'Patched', `raised ${pvcName}'s request from ${sizes.fromCapacity} to ${sizes.targetSize}`);
    await this.writeStatus(req, {
      ...sizes,
      pvcUID: claim.metadata?.uid,
      phase: 'Expanding',
      reason: 'WaitingForResizer',
      message: 'the claim was patched; waiting for the external resizer',
      capacity: claim.status?.capacity?.storage,
      timeline: { ...accepted, patchedAt: now.toISOString() },
    });
    return { requeueAfterMs: trackEveryMs };
  }

  private async track(req: VolumeExpansionRequest, pvc: V1PersistentVolumeClaim | undefined, patchedByUs: boolean): Promise<ReconcileResult> {
    const ns = req.metadata.namespace as string;
    const status = req.status ?? {};
    const now = this.now();
    const pvcName = req.spec.target.pvcName as string;
    // After a crash between the PVC patch and the status write, the annotations carry the plan.
    const anns = pvc?.metadata?.annotations ?? {};
    const targetSize = status.targetSize ?? (patchedByUs ? anns[pvcAnnotations.targetSize] : undefined);
    if (!targetSize) return this.finish(req, 'Failed', 'TargetUnknown', 'the request was patched but its target size is not recorded', 'failed');
    const pvcUID = status.pvcUID ?? (patchedByUs ? pvc?.metadata?.uid : undefined) ?? '';
    const sc = pvc?.spec?.storageClassName ? this.d.storageClasses.get(pvc.spec.storageClassName) : undefined;
    const acceptedAt = status.timeline?.acceptedAt ? new Date(status.timeline.acceptedAt) : now;
    const deadlineMs = req.spec.deadline ? parseDuration(req.spec.deadline) : undefined;
    // After a recovery the claim aims at the size it was lowered to.
    const attempted = status.recovery?.attemptedSizes ?? [];
    const effectiveTarget = attempted[attempted.length - 1] ?? targetSize;
    const progress = derivePhase({
      pvc,
      pvcUID,
      targetBytes: parseBytes(effectiveTarget),
      mountedByRunningPod: this.mountedByRunningPod(ns, pvcName),
      provisioner: sc?.provisioner,
      deadline: deadlineMs !== undefined ? new Date(acceptedAt.getTime() + deadlineMs) : undefined,
      modifications: modificationTimes(this.onPVC(ns, pvcName)),
      now,
    });
    const timeline = {
      ...status.timeline,
      acceptedAt: acceptedAt.toISOString(),
      patchedAt: status.timeline?.patchedAt ?? now.toISOString(),
    };
    const pastController = ['NodeExpansionPending', 'WaitingForPod', 'Completed'].includes(progress.phase);
    if (pastController && !timeline.controllerExpandedAt) timeline.controllerExpandedAt = now.toISOString();
    const base: RequestStatus = {
      pvcName,
      pvcUID,
      targetSize,
      fromCapacity: status.fromCapacity ?? anns[pvcAnnotations.previousCapacity],
      capacity: pvc?.status?.capacity?.storage,
      timeline,
    };
    const infeasible = progress.phase === 'Failed' && (progress.reason === 'ControllerResizeInfeasible' || progress.reason === 'NodeResizeInfeasible');
    const allocated = pvc?.status?.allocatedResources?.storage;
    if (infeasible && attempted.length > 0 && (!allocated || parseBytes(allocated) !== parseBytes(effectiveTarget))) {
      // The infeasible status is the old one: the resizer has not acted on the lowered request yet.
      await this.writeStatus(req, { ...base, phase: 'Recovering', reason: 'LoweredRequest', message: `waiting for the resizer to act on the lowered request ${effectiveTarget}` });
      return { requeueAfterMs: 2000 };
    }
    if (infeasible && req.spec.recovery === 'Auto' && pvc) {
      const recovered = await this.recover(req, pvc, base, sc, progress.message);
      if (recovered) return recovered;
    }
    if (progress.phase === 'Completed' && attempted.length > 0) {
      return this.finish(req, 'Failed', 'RecoveredAtLowerSize', `${targetSize} could not be reached (${status.recovery?.reason ?? 'infeasible'}); the claim was lowered to ${effectiveTarget} and grew to it`, 'failed', base);
    }
    if (progress.phase === 'Completed' || progress.phase === 'Failed') {
      return this.finish(req, progress.phase, progress.reason, progress.message, progress.phase === 'Completed' ? 'completed' : 'failed', base);
    }
    await this.writeStatus(req, { ...base, ...progress, ...(attempted.length ? { phase: 'Recovering' as Phase } : {}) });
    return { requeueAfterMs: trackEveryMs };
  }

  /**
   * spec.recovery Auto after an infeasible target (KEP-1790): lower the claim's request to the
   * largest size the driver profile allows, else to the smallest Kubernetes permits (just above
   * status.capacity), so the claim is not left stuck. Each size is tried once; the API server has
   * the last word. Returns undefined when there is nothing left to try.
   */
  private async recover(req: VolumeExpansionRequest, pvc: V1PersistentVolumeClaim, base: RequestStatus, sc: V1StorageClass | undefined, why: string): Promise<ReconcileResult | undefined> {
    const ns = req.metadata.namespace as string;
    const name = pvc.metadata?.name as string;
    const capacity = parseBytes(pvc.status?.capacity?.storage ?? '0');
    const requested = parseBytes(pvc.spec?.resources?.requests?.storage ?? '0');
    const profile = driverProfile(sc?.provisioner);
    const unit = profile.granularity > MiB ? profile.granularity : MiB;
    const max = profile.maxBytes(sc?.parameters ?? {});
    const attempted = req.status?.recovery?.attemptedSizes ?? [];
    const candidates = [max, roundUp(capacity + 1n, unit)].filter((b): b is bigint => b !== undefined && b > capacity && b < requested).map(formatBytes);
    const next = candidates.find((c) => !attempted.includes(c));
    if (!next) return undefined;
    if (!this.d.canWrite()) throw new RetryAfterError('not the leader: not recovering', 2000);
    try {
      await this.d.client.patchPvcSize(ns, name, {
        resourceVersion: pvc.metadata?.resourceVersion ?? '',
        uid: pvc.metadata?.uid ?? '',
        storage: next,
        annotations: { [pvcAnnotations.recoveredTo]: next },
      });
    } catch (err) {
      if (err instanceof ApiError && err.code === 409) throw new ConflictError(`PVC ${name} changed meanwhile: ${err.message}`);
      if (err instanceof ApiError && (err.code === 403 || err.code === 422)) {
        // Refused: remember it as tried and let the next reconcile try the next candidate.
        await this.writeStatus(req, { ...base, recovery: { attemptedSizes: [...attempted, next], reason: why }, phase: 'Recovering', reason: 'RecoveryRefused', message: `the API server refused lowering the claim to ${next}: ${err.message}` });
        return { requeueAfterMs: 1000 };
      }
      throw err;
    }
    await this.event(req, 'Warning', 'Recovering', `${base.targetSize} is infeasible; lowered ${name}'s request to ${next}`);
    await this.writeStatus(req, {
      ...base,
      recovery: { attemptedSizes: [...attempted, next], reason: why },
      phase: 'Recovering',
      reason: 'LoweredRequest',
      message: `${base.targetSize} is infeasible (${why}); lowered the claim's request to ${next}`,
    });
    return { requeueAfterMs: trackEveryMs };
  }

  /**
   * A StatefulSet target fans out: every PVC of the volumeClaimTemplate is validated first (all or
   * nothing: one refusal rejects the request and nothing is patched); then one child request per
   * PVC, owned by this one and labelled with it, does the work through the single-PVC path, and
   * this request sums up their phases.
   */
  private async reconcileStatefulSet(req: VolumeExpansionRequest): Promise<ReconcileResult> {
    const ns = req.metadata.namespace as string;
    const stsName = req.spec.target.statefulSetName as string;
    const template = req.spec.target.volumeClaimTemplate as string;
    const sts = this.d.statefulSets.get(`${ns}/${stsName}`);
    if (!sts) return this.finish(req, 'Rejected', 'StatefulSetNotFound', `StatefulSet ${stsName} does not exist in this namespace`, 'rejected');
    const tpl = sts.spec?.volumeClaimTemplates?.find((t) => t.metadata?.name === template);
    if (!tpl) return this.finish(req, 'Rejected', 'TemplateNotFound', `StatefulSet ${stsName} has no volumeClaimTemplate named ${template}`, 'rejected');
    const replicas = sts.spec?.replicas ?? 1;
    const pvcNames = Array.from({ length: replicas }, (_, i) => statefulSetClaimName(template, stsName, i));
    const note = `new replicas are still created at the template size ${tpl.spec?.resources?.requests?.storage ?? '?'} (volumeClaimTemplates cannot change)`;
    const children = this.d.requests.list().filter((r) => r.metadata.namespace === ns && r.metadata.labels?.[requestLabels.parent] === req.metadata.name);

    if (children.length === 0) {
      const now = this.now();
      const refusals: string[] = [];
      for (const pvcName of pvcNames) {
        const v = this.validate(req, pvcName, now);
        if (v.kind === 'reject') refusals.push(`${pvcName}: ${v.message} (${v.reason})`);
      }
      if (refusals.length > 0) return this.finish(req, 'Rejected', 'TargetRejected', `nothing was changed: ${refusals.join('; ')}`, 'rejected');
      if (!this.d.canWrite()) throw new RetryAfterError('not the leader: not creating requests', 2000);
      for (const [i, pvcName] of pvcNames.entries()) {
        const { target: _t, ...rest } = req.spec;
        await this.d.client
          .createRequest(ns, {
            apiVersion: req.apiVersion,
            kind: req.kind,
            metadata: {
              name: `${req.metadata.name}-${i}`.slice(0, 253),
              labels: { [requestLabels.parent]: req.metadata.name as string },
              ownerReferences: [{ apiVersion: req.apiVersion, kind: req.kind, name: req.metadata.name as string, uid: req.metadata.uid as string, controller: true, blockOwnerDeletion: true }],
            },
            spec: { ...rest, target: { pvcName } },
          } as VolumeExpansionRequest)
          .catch((err: unknown) => {
            if (!(err instanceof ApiError && err.reason === 'AlreadyExists')) throw err;
          });
      }
      await this.writeStatus(req, {
        phase: 'Expanding',
        reason: 'RequestsCreated',
        message: `created ${pvcNames.length} requests, one per PVC; ${note}`,
        timeline: { acceptedAt: now.toISOString() },
        targets: pvcNames.map((pvcName) => ({ pvcName, phase: 'Pending' })),
      });
      return { requeueAfterMs: trackEveryMs };
    }

    const targets = children
      .map((c) => ({ pvcName: c.spec.target.pvcName as string, phase: c.status?.phase, reason: c.status?.reason, message: c.status?.message, fromCapacity: c.status?.fromCapacity, targetSize: c.status?.targetSize, capacity: c.status?.capacity }))
      .sort((a, b) => a.pvcName.localeCompare(b.pvcName, undefined, { numeric: true }));
    const finished = targets.filter((t) => finishedPhases.has(t.phase as Phase));
    const done = targets.filter((t) => t.phase === 'Completed').length;
    const summary = `${done}/${targets.length} PVCs completed; ${note}`;
    if (finished.length === targets.length) {
      const failed = targets.filter((t) => t.phase !== 'Completed');
      if (failed.length === 0) return this.finish(req, 'Completed', 'Completed', summary, 'completed', { targets });
      return this.finish(req, 'Failed', 'TargetFailed', `${summary}; ${failed.map((t) => `${t.pvcName}: ${t.phase} (${t.reason})`).join('; ')}`, 'failed', { targets });
    }
    // The least advanced unfinished child speaks for the request.
    const order: Phase[] = ['Pending', 'Expanding', 'ControllerExpanding', 'Recovering', 'WaitingForPod', 'NodeExpansionPending'];
    const slowest = targets.filter((t) => !finishedPhases.has(t.phase as Phase)).sort((a, b) => order.indexOf(a.phase as Phase) - order.indexOf(b.phase as Phase))[0];
    await this.writeStatus(req, { phase: (slowest?.phase as Phase) ?? 'Expanding', reason: slowest?.reason ?? 'Expanding', message: `${summary}; ${slowest?.pvcName}: ${slowest?.message ?? ''}`, targets });
    return { requeueAfterMs: trackEveryMs };
  }

  /** Finished requests are the audit trail; with ttlSecondsAfterFinished they go after that long. */
  private async expire(req: VolumeExpansionRequest): Promise<ReconcileResult> {
    const ttl = req.spec.ttlSecondsAfterFinished;
    const finishedAt = req.status?.phaseSince;
    if (ttl === undefined || !finishedAt) return {};
    const remainingMs = Date.parse(finishedAt) + ttl * 1000 - this.now().getTime();
    if (remainingMs > 0) return { requeueAfterMs: remainingMs };
    if (!this.d.canWrite()) throw new RetryAfterError('not the leader: not deleting', 2000);
    try {
      await this.d.client.deleteRequest(req.metadata.namespace as string, req.metadata.name as string, req.metadata.uid as string);
    } catch (err) {
      if (!(err instanceof ApiError && (err.code === 404 || err.code === 409))) throw err;
    }
    this.d.logger.info({ namespace: req.metadata.namespace, name: req.metadata.name, ttlSeconds: ttl }, 'deleted a finished request after its TTL');
    return {};
  }

  private mountedByRunningPod(namespace: string, claimName: string): boolean {
    return this.d.pods.list().some((p) => p.metadata?.namespace === namespace && runningPodClaims(p).includes(claimName));
  }

  private async finish(req: VolumeExpansionRequest, phase: Phase, reason: string, message: string, result: string, extra: RequestStatus = {}): Promise<ReconcileResult> {
    const now = this.now().toISOString();
    const timeline = { ...req.status?.timeline, ...extra.timeline, ...(phase === 'Completed' ? { completedAt: now } : {}) };
    await this.writeStatus(req, { ...extra, phase, reason, message, timeline });
    this.d.metrics?.requests.inc({ result });
    return {};
  }

  /** Writes status when something a reader sees changed; records the phase transition as Event, condition and metric. */
  private async writeStatus(req: VolumeExpansionRequest, next: RequestStatus): Promise<void> {
    const cur = req.status ?? {};
    const now = this.now();
    const phaseChanged = next.phase !== undefined && next.phase !== cur.phase;
    const merged: RequestStatus = {
      ...cur,
      ...next,
      observedGeneration: req.metadata.generation,
      phaseSince: phaseChanged ? now.toISOString() : cur.phaseSince,
    };
    merged.conditions = conditionsFor(merged, cur.conditions ?? [], now, req.metadata.generation);
    const visible = (s: RequestStatus) => JSON.stringify({ ...s, conditions: (s.conditions ?? []).map(({ lastTransitionTime: _t, ...c }) => c) });
    if (visible(merged) === visible(cur)) return;
    if (!this.d.canWrite()) throw new RetryAfterError('not the leader (or the lease is not renewed): not writing status', 2000);
    await this.d.client.patchRequestStatus(req.metadata.namespace as string, req.metadata.name as string, merged);
    if (phaseChanged) {
      if (cur.phase && cur.phaseSince) this.d.metrics?.phaseDuration.observe({ phase: cur.phase }, (now.getTime() - new Date(cur.phaseSince).getTime()) / 1000);
      const warning = merged.phase === 'Rejected' || merged.phase === 'Failed' || merged.phase === 'WaitingForPod';
      await this.event(req, warning ? 'Warning' : 'Normal', merged.reason ?? merged.phase ?? 'Unknown', `${merged.phase}: ${merged.message ?? ''}`);
    }
  }

  private async event(req: VolumeExpansionRequest, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    await this.d.client
      .emitEvent({
        regarding: { apiVersion: req.apiVersion, kind: req.kind, namespace: req.metadata.namespace as string, name: req.metadata.name as string, uid: req.metadata.uid },
        type,
        reason,
        message,
      })
      .catch((err: unknown) => this.d.logger.warn({ err: (err as Error).message, reason }, 'could not record an Event'));
  }
}

/** Accepted: validation passed. Complete: the expansion finished (True), failed or is running (False). */
function conditionsFor(s: RequestStatus, previous: Condition[], now: Date, generation?: number): Condition[] {
  const accepted = s.phase !== 'Rejected' && s.phase !== 'Pending';
  const wanted: Omit<Condition, 'lastTransitionTime'>[] = [
    { type: 'Accepted', status: accepted ? 'True' : 'False', reason: accepted ? 'Validated' : (s.reason ?? 'Pending'), message: accepted ? 'validation passed' : (s.message ?? '') },
    {
      type: 'Complete',
      status: s.phase === 'Completed' ? 'True' : 'False',
      reason: s.reason ?? s.phase ?? 'Unknown',
      message: s.message ?? '',
    },
  ];
  return wanted.map((c) => {
    const old = previous.find((p) => p.type === c.type);
    const lastTransitionTime = old && old.status === c.status ? old.lastTransitionTime : now.toISOString();
    return { ...c, lastTransitionTime, ...(generation !== undefined ? { observedGeneration: generation } : {}) };
  });
}
