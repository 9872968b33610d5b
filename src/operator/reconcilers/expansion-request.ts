// The VolumeExpansionRequest reconciler, a thin executor: it reads the caches into the inputs of
// decideRequest (src/policies/request.ts, where every rule lives), and carries out the decision —
// a status write (only when a reader would see a change), the claim's one size patch, the child
// requests of a StatefulSet request, or the deletion of a finished request after its TTL. Phase
// changes become Events, conditions and metrics here.
import type { V1Namespace, V1PersistentVolumeClaim, V1Pod, V1ResourceQuota, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import { requestClaimKey, requestLabels } from '../../crds/keys.ts';
import type { Phase, RequestStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { KubeClient } from '../../k8s/client.ts';
import type { RequestMetrics } from '../../metrics/expansion.ts';
import { ApiError } from '../../k8s/errors.ts';
import { parseBytes } from '../../k8s/quantity.ts';
import { groupBy } from '../../policies/collections.ts';
import { matchesLabels } from '../../policies/labels.ts';
import { finishedPhases } from '../../policies/phase.ts';
import { runningPodClaims } from '../../policies/pods.ts';
import { decideRequest, type ClaimContext, type RequestDecision } from '../../policies/request.ts';
import { nextStatus } from '../../policies/request-status.ts';
import type { Guardrail } from '../../policies/validation.ts';
import type { ReconcileResult } from '../controller.ts';
import { ConflictError, RetryAfterError } from '../errors.ts';
import type { Informer } from '../informer.ts';

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
  /** A driver error (not a rate limit) lasting this long ends a request. Default 1 h. */
  driverErrorTimeoutMs?: number;
}

export class ExpansionRequestReconciler {
  private readonly d: RequestReconcilerDeps;
  private readonly now: () => Date;

  constructor(deps: RequestReconcilerDeps) {
    this.d = deps;
    this.now = deps.now ?? (() => new Date());
  }

  /** Every request that targets a claim. */
  private onClaim(namespace: string, pvcName: string): VolumeExpansionRequest[] {
    return this.d.requests.list().filter((r) => r.metadata.namespace === namespace && r.spec?.target?.pvcName === pvcName);
  }

  /** Keys of unfinished requests that target a claim (for claim and pod events). */
  requestsFor(namespace: string, pvcName: string): string[] {
    return this.onClaim(namespace, pvcName)
      .filter((r) => !finishedPhases.has(r.status?.phase as Phase))
      .map((r) => `${namespace}/${r.metadata.name}`);
  }

  reconcile = async (key: string): Promise<ReconcileResult> => {
    const req = this.d.requests.get(key);
    if (!req) return {};
    const ns = req.metadata.namespace as string;
    const now = this.now();
    const isStatefulSet = Boolean(req.spec.target?.statefulSetName);
    // The claims of this namespace's requests, grouped once rather than scanned per claim.
    const byClaim = groupBy(
      this.d.requests.list().filter((r) => r.metadata.namespace === ns),
      requestClaimKey,
    );
    const decision = decideRequest({
      request: req,
      claim: (name) => this.claimContext(ns, name, req, byClaim.get(`${ns}/${name}`) ?? []),
      ...(isStatefulSet
        ? {
            statefulSet: this.d.statefulSets.get(`${ns}/${req.spec.target.statefulSetName}`),
            children: this.d.requests
              .list()
              .filter((r) => r.metadata.namespace === ns && r.metadata.labels?.[requestLabels.parent] === req.metadata.name && r.metadata.ownerReferences?.some((o) => o.uid === req.metadata.uid)),
            requestNamed: (name: string) => this.d.requests.get(`${ns}/${name}`),
          }
        : {}),
      now,
      driverErrorTimeoutMs: this.d.driverErrorTimeoutMs,
    });
    const log = this.d.logger.child({ controller: 'expansion-request', namespace: ns, name: req.metadata.name });
    return this.execute(req, decision, log);
  };

  private claimContext(ns: string, name: string, req: VolumeExpansionRequest, requests: VolumeExpansionRequest[]): ClaimContext {
    const claim = this.d.pvcs.get(`${ns}/${name}`);
    return {
      claim,
      storageClass: claim?.spec?.storageClassName ? this.d.storageClasses.get(claim.spec.storageClassName) : undefined,
      quotas: this.d.quotas.list().filter((q) => q.metadata?.namespace === ns),
      otherRequests: requests.filter((r) => r.metadata.uid !== req.metadata.uid),
      guardrails: this.guardrails(ns),
      mountedByRunningPod: this.d.pods.list().some((p) => p.metadata?.namespace === ns && runningPodClaims(p).includes(name)),
    };
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

  private async execute(req: VolumeExpansionRequest, d: RequestDecision, log: Logger): Promise<ReconcileResult> {
    const ns = req.metadata.namespace as string;
    switch (d.kind) {
      case 'wait':
        return d.requeueAfterMs !== undefined ? { requeueAfterMs: d.requeueAfterMs } : {};
      case 'status':
        await this.writeStatus(req, d.status);
        return d.requeueAfterMs !== undefined ? { requeueAfterMs: d.requeueAfterMs } : {};
      case 'finish': {
        const completedAt = d.status.phase === 'Completed' ? { completedAt: this.now().toISOString() } : {};
        const { wrote } = await this.writeStatus(req, { ...d.status, timeline: { ...req.status?.timeline, ...d.status.timeline, ...completedAt } });
        if (wrote) this.d.metrics?.requests.inc({ result: d.result });
        return {};
      }
      case 'patch': {
        this.fence('patching the claim');
        // The intent first, conditional on the request as it was read: a decision made from a stale
        // copy ends here with a 409, before the claim is touched.
        ({ req } = await this.writeStatus(req, d.record, { always: true }));
        try {
          await this.d.client.patchPvcSize(ns, d.patch.claimName, d.patch);
        } catch (err) {
          if (err instanceof ApiError && err.code === 409) throw new ConflictError(`claim ${d.patch.claimName} changed meanwhile: ${err.message}`);
          if (err instanceof ApiError && (err.code === 403 || err.code === 422)) return this.execute(req, d.onRefused(err.code, err.message), log);
          throw err;
        }
        const patchedAt = this.now();
        log.info({ pvc: d.patch.claimName, storage: d.patch.storage }, 'patched the claim');
        if (d.event) await this.event(req, d.event.reason === 'Patched' ? 'Normal' : 'Warning', d.event.reason, d.event.message);
        return this.execute(req, d.onPatched(patchedAt), log);
      }
      case 'createChildren':
        this.fence('creating requests');
        for (const child of d.children) {
          try {
            await this.d.client.createRequest(ns, child);
          } catch (err) {
            // Ours from a create whose answer was lost, or someone else's: the next reconcile reads
            // it from the cache and decides which — never taken for success here.
            if (err instanceof ApiError && err.reason === 'AlreadyExists') throw new ConflictError(`request ${child.metadata.name} already exists; looking again`);
            throw err;
          }
        }
        return this.execute(req, d.then, log);
      case 'delete':
        this.fence('deleting the request');
        try {
          await this.d.client.deleteRequest(ns, req.metadata.name as string, req.metadata.uid as string);
        } catch (err) {
          if (!(err instanceof ApiError && (err.code === 404 || err.code === 409))) throw err;
        }
        log.info({ ttlSeconds: req.spec.ttlSecondsAfterFinished }, 'deleted a finished request after its TTL');
        return {};
    }
  }

  private fence(what: string): void {
    if (!this.d.canWrite()) throw new RetryAfterError(`not the leader (or the lease is not renewed): not ${what}`, 2000);
  }

  /**
   * Writes status when something a reader sees changed (or always, to check that the request was
   * read as it is); records a phase transition as an Event, a condition and a duration. Returns
   * whether it wrote, and the request as written (for a second write in the same reconcile).
   */
  private async writeStatus(req: VolumeExpansionRequest, next: RequestStatus, opts: { always?: boolean } = {}): Promise<{ wrote: boolean; req: VolumeExpansionRequest }> {
    const cur = req.status ?? {};
    const now = this.now();
    const update = nextStatus(cur, next, now, req.metadata.generation);
    if (!update.changed && !opts.always) return { wrote: false, req };
    this.fence('writing status');
    let resourceVersion: string;
    try {
      resourceVersion = await this.d.client.patchRequestStatus(req.metadata.namespace as string, req.metadata.name as string, update.status, req.metadata.resourceVersion ?? '');
    } catch (err) {
      // Decided from a stale copy (the cache had not seen a newer status yet): decide again from the new one.
      if (err instanceof ApiError && err.code === 409) throw new ConflictError(`request ${req.metadata.name} changed meanwhile: ${err.message}`);
      throw err;
    }
    const merged = update.status;
    if (update.phaseChanged) {
      if (cur.phase && cur.phaseSince) this.d.metrics?.phaseDuration.observe({ phase: cur.phase }, (now.getTime() - new Date(cur.phaseSince).getTime()) / 1000);
      const warning = merged.phase === 'Rejected' || merged.phase === 'Failed' || merged.phase === 'WaitingForPod';
      await this.event(req, warning ? 'Warning' : 'Normal', merged.reason ?? merged.phase ?? 'Unknown', `${merged.phase}: ${merged.message ?? ''}`);
    }
    return { wrote: true, req: { ...req, metadata: { ...req.metadata, resourceVersion }, status: merged } };
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
