// The policy evaluator: on the leader, every interval, read usage once for the whole cluster,
// then for each VolumeExpansionPolicy and each ClusterVolumeExpansionPolicy with triggers decide
// per matched PVC (src/policies/autoscale.ts) and act — create a VolumeExpansionRequest (Auto),
// one awaiting approval (Approval), or only report (DryRun). It never patches a PVC itself.
//
// Which policy grows a PVC: every namespaced policy that selects it; a cluster policy only takes
// the PVCs no namespaced policy selects (the namespace's owners know their volumes better), and of
// several cluster policies the first by name — so two cluster policies never race for one PVC.
import type { V1Namespace, V1PersistentVolumeClaim, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Counter, Gauge } from 'prom-client';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import type { PolicySpec, PolicyStatus, VolumeExpansionPolicy, VolumeStatus } from '../../crds/volume-expansion-policy.ts';
import { requestClaimKey, type Phase, type VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { requestAnnotations, requestLabels } from '../../crds/keys.ts';
import type { KubeClient, PolicyRef } from '../../k8s/client.ts';
import { ApiError } from '../../k8s/errors.ts';
import { formatBytes, humanBytes, parseBytes } from '../../k8s/quantity.ts';
import { objectKey } from '../../k8s/resources.ts';
import { autoscaleSpec, decideAutoscale, usedRatio, type AutoscaleDecision, type AutoscaleSpec } from '../../policies/autoscale.ts';
import { modificationTimes } from '../../policies/history.ts';
import { groupBy } from '../../policies/collections.ts';
import { finishedPhases } from '../../policies/phase.ts';
import { resizeUnderway } from '../../policies/resize.ts';
import { governingPolicies, type GoverningPolicy, type SelectionLookups } from '../../policies/selection.ts';
import type { SampleStore } from '../../usage/samples.ts';
import type { UsageSource } from '../../usage/source.ts';
import type { ReconcileResult } from '../controller.ts';
import { RetryAfterError } from '../errors.ts';
import type { Informer } from '../informer.ts';


export interface PolicyMetrics {
  evaluations: Counter<'policy'>;
  triggers: Counter<'policy' | 'trigger'>;
  usedRatio: Gauge<'namespace' | 'persistentvolumeclaim'>;
  timeToFull: Gauge<'namespace' | 'persistentvolumeclaim'>;
  sourceErrors: Counter<'source'>;
  atMax: Gauge<'namespace' | 'persistentvolumeclaim'>;
}

export interface PolicyEvaluatorDeps {
  client: KubeClient;
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
  intervalMs: number;
  now?: () => Date;
}

export interface PolicyDecisions {
  policy: EvaluatedPolicy;
  volumes: { pvc: V1PersistentVolumeClaim; decision: AutoscaleDecision }[];
}

/** The evaluator's single work-queue key: one pass covers every policy. */
export const evaluateKey = 'policies';

/**
 * A policy of either kind as the evaluator sees it: its identity (for status, Events, owner
 * references and labels) and the autoscale part of its spec.
 */
export interface EvaluatedPolicy {
  ref: PolicyRef;
  apiVersion: string;
  uid: string;
  spec: Pick<PolicySpec, 'triggers' | 'step' | 'maxSize' | 'cooldown' | 'windows' | 'mode'>;
}


/**
 * When a request last did something to its claim. Any request starts the cooldown, a rejected one
 * too (its creation): otherwise a refused expansion (a guardrail, a quota) would be requested again
 * at every pass.
 */
function activityTimes(r: VolumeExpansionRequest): Date[] {
  return [r.metadata.creationTimestamp as unknown as string | undefined, r.status?.timeline?.completedAt, r.status?.timeline?.patchedAt]
    .filter((t): t is string => Boolean(t))
    .map((t) => new Date(t));
}


export class PolicyEvaluator {
  private readonly d: PolicyEvaluatorDeps;
  private readonly now: () => Date;
  /** PVCs with per-volume series, from the last pass. */
  private published = new Set<string>();
  /** Last decision message per policy/PVC, so Events fire on change only. */
  private readonly lastDecision = new Map<string, string>();

  constructor(deps: PolicyEvaluatorDeps) {
    this.d = deps;
    this.now = deps.now ?? (() => new Date());
  }

  /** Both kinds as the evaluator sees them: namespaced first, then cluster policies (with triggers) by name. */
  private evaluatedPolicies(policies: VolumeExpansionPolicy[], clusterPolicies: ClusterVolumeExpansionPolicy[]): EvaluatedPolicy[] {
    const namespaced = policies.map((policy): EvaluatedPolicy => ({ ref: refOf({ kind: 'VolumeExpansionPolicy', policy }), apiVersion: policy.apiVersion, uid: policy.metadata.uid as string, spec: policy.spec }));
    const cluster = clusterPolicies
      .filter((p) => p.spec.triggers)
      .sort((a, b) => (a.metadata.name as string).localeCompare(b.metadata.name as string))
      .map(
        (policy): EvaluatedPolicy => ({
          ref: refOf({ kind: 'ClusterVolumeExpansionPolicy', policy }),
          apiVersion: policy.apiVersion,
          uid: policy.metadata.uid as string,
          spec: { ...policy.spec, triggers: policy.spec.triggers as PolicySpec['triggers'] },
        }),
      );
    return [...namespaced, ...cluster];
  }

  reconcile = async (): Promise<ReconcileResult> => {
    const now = this.now();
    // Usage is read with no policy too: the audit's nearly-full rule needs it most where none is.
    if (this.d.source) {
      const report = await this.d.source.collect(now);
      for (const [key, sample] of report.samples) this.d.samples.add(key, sample);
      for (const e of report.errors) {
        this.d.metrics?.sourceErrors.inc({ source: this.d.source.name });
        this.d.logger.warn({ source: this.d.source.name, target: e.target, err: e.message }, 'usage source failed for one target; skipped');
      }
    }
    this.d.samples.retain(new Set(this.d.pvcs.keys()));
    const decided = new Set<string>();
    for (const { policy, volumes } of this.decide(now)) {
      try {
        this.d.metrics?.evaluations.inc({ policy: policy.ref.name });
        const mode = policy.spec.mode ?? 'Auto';
        const statuses: VolumeStatus[] = [];
        for (const v of volumes) {
          decided.add(objectKey(v.pvc));
          statuses.push(await this.act(policy, mode, v.pvc, v.decision, now));
        }
        const shown = statusVolumes(statuses);
        await this.writeStatus(policy, { matchedPVCs: volumes.length, lastEvaluatedAt: now.toISOString(), volumes: shown, volumesOmitted: statuses.length - shown.length });
      } catch (err) {
        if (err instanceof RetryAfterError) throw err;
        this.d.logger.error({ policy: policyId(policy.ref), err: (err as Error).message }, 'policy evaluation failed');
      }
    }
    // A PVC no policy decided on in this pass (deleted, or no longer selected) keeps no per-volume
    // series: an alert on its time to full or its maximum must not fire on a number from the past.
    for (const key of this.published) {
      if (decided.has(key)) continue;
      const [namespace, persistentvolumeclaim] = key.split('/') as [string, string];
      for (const gauge of [this.d.metrics?.usedRatio, this.d.metrics?.timeToFull, this.d.metrics?.atMax]) gauge?.remove({ namespace, persistentvolumeclaim });
    }
    this.published = decided;
    return { requeueAfterMs: this.d.intervalMs };
  };

  /**
   * Every policy's decision for each PVC it takes, from the samples gathered so far — no writes
   * (`pvx plan` shows these). `sustainedSamples` overrides each policy's own, for a plan made from
   * fewer samples than the operator would wait for.
   */
  decide(now: Date, opts: { sustainedSamples?: number } = {}): PolicyDecisions[] {
    // Requests per claim, once for the pass rather than once per policy and claim.
    const requestsByPVC = groupBy(this.d.requests.list(), requestClaimKey);
    // Which policies take which PVC: src/policies/selection.ts, shared with the audit.
    const lookups: SelectionLookups = {
      namespaceLabels: (ns) => this.d.namespaces?.get(ns)?.metadata?.labels,
      statefulSet: (ns, name) => this.d.statefulSets?.get(`${ns}/${name}`),
    };
    const policies = this.d.policies.list();
    const clusterPolicies = this.d.clusterPolicies?.list() ?? [];
    const taken = this.d.pvcs.list().flatMap((pvc) => governingPolicies(pvc, policies, clusterPolicies, lookups).map((g) => ({ pvc, policy: policyId(refOf(g)) })));
    const claimsOf = groupBy(taken, (t) => t.policy);
    return this.evaluatedPolicies(policies, clusterPolicies).map((policy) => {
      const spec = autoscaleSpec(policy.spec);
      if (opts.sustainedSamples !== undefined) spec.sustainedSamples = Math.min(spec.sustainedSamples ?? 3, opts.sustainedSamples);
      const matched = (claimsOf.get(policyId(policy.ref)) ?? []).map((t) => t.pvc);
      return { policy, volumes: matched.map((pvc) => ({ pvc, decision: this.decideOne(spec, pvc, requestsByPVC.get(objectKey(pvc)) ?? [], now) })) };
    });
  }

  private decideOne(spec: AutoscaleSpec, pvc: V1PersistentVolumeClaim, requests: VolumeExpansionRequest[], now: Date): AutoscaleDecision {
    const key = objectKey(pvc);
    const capacityText = pvc.status?.capacity?.storage ?? '0';
    const lastCapacityChangeAt = this.d.samples.observeCapacity(key, capacityText, now);
    const active = requests.filter((r) => !finishedPhases.has(r.status?.phase as Phase));
    const requested = parseBytes(pvc.spec?.resources?.requests?.storage ?? capacityText);
    const capacity = parseBytes(capacityText);
    const lastExpansionAt = requests
      .filter((r) => !r.spec.dryRun)
      .flatMap(activityTimes)
      .sort((a, b) => b.getTime() - a.getTime())[0];
    return decideAutoscale({
      spec,
      capacityBytes: capacity,
      expansionInFlight: active.length > 0 || requested > capacity || resizeUnderway(pvc),
      lastExpansionAt,
      lastCapacityChangeAt,
      samples: this.d.samples.get(key),
      modifications: modificationTimes(requests),
      provisioner: this.d.storageClasses.get(pvc.spec?.storageClassName ?? '')?.provisioner,
      now,
    });
  }

  private async act(p: EvaluatedPolicy, mode: string, pvc: V1PersistentVolumeClaim, d: AutoscaleDecision, now: Date): Promise<VolumeStatus> {
    const ns = pvc.metadata?.namespace as string;
    const pvcName = pvc.metadata?.name as string;
    const labels = { namespace: ns, persistentvolumeclaim: pvcName };
    const samples = this.d.samples.get(`${ns}/${pvcName}`);
    const newest = samples[samples.length - 1];
    const status: VolumeStatus = {
      ...(p.ref.kind === 'ClusterVolumeExpansionPolicy' ? { namespace: ns } : {}),
      pvcName,
      decision: d.kind,
      message: d.message,
      ...(newest
        ? {
            used: humanBytes(newest.usedBytes),
            capacity: humanBytes(newest.capacityBytes),
            usedPercent: Math.round(usedRatio(newest) * 100),
            inodesUsedPercent: newest.inodes ? Math.round(((newest.inodesUsed ?? 0) / newest.inodes) * 100) : undefined,
            sampledAt: newest.at.toISOString(),
          }
        : {}),
    };
    if (d.kind !== 'unknown' && newest) this.d.metrics?.usedRatio.set(labels, usedRatio(newest));
    // Every decision that had a forecast reports it; any other drops the series, so an alert on
    // time to full never fires on a number from an earlier pass.
    if ('timeToFullMs' in d && d.timeToFullMs !== undefined) {
      status.timeToFullSeconds = Math.round(d.timeToFullMs / 1000);
      this.d.metrics?.timeToFull.set(labels, d.timeToFullMs / 1000);
    } else {
      this.d.metrics?.timeToFull.remove(labels);
    }
    if (d.kind === 'unknown' || d.kind === 'blocked') status.reason = d.reason;
    if (d.kind === 'blocked' && d.until) status.nextEligibleAt = d.until.toISOString();
    // Set by the decisions that know (a blocked or unknown one says nothing about the size).
    if (d.kind === 'atMax') this.d.metrics?.atMax.set(labels, 1);
    else if (d.kind === 'idle' || d.kind === 'expand') this.d.metrics?.atMax.set(labels, 0);
    if (d.kind === 'atMax') await this.eventOnChange(p, pvc, 'Warning', 'AtMaxSize', d.message);
    if (d.kind !== 'expand') return status;

    this.d.metrics?.triggers.inc({ policy: p.ref.name, trigger: d.trigger });
    if (mode === 'DryRun') return { ...status, decision: 'dryRun', message: `dry run: would ${d.message}` };
    if (!this.d.canWrite()) throw new RetryAfterError('not the leader: not creating requests', 2000);
    const name = `${p.ref.name}-${pvcName}-${Math.floor(now.getTime() / 1000).toString(36)}`.slice(0, 253).replace(/[^a-z0-9.-]/g, '-');
    const request: VolumeExpansionRequest = {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: {
        name,
        labels: { [p.ref.kind === 'ClusterVolumeExpansionPolicy' ? requestLabels.clusterPolicy : requestLabels.policy]: p.ref.name },
        annotations: { [requestAnnotations.trigger]: d.trigger, ...(mode === 'Approval' ? { [requestAnnotations.approval]: 'required' } : {}) },
        // A cluster-scoped owner of a namespaced request is allowed: deleting the policy deletes its requests.
        ownerReferences: [{ apiVersion: p.apiVersion, kind: p.ref.kind, name: p.ref.name, uid: p.uid, controller: true }],
      },
      spec: { target: { pvcName }, size: formatBytes(d.targetBytes) },
    };
    try {
      await this.d.client.createRequest(ns, request);
    } catch (err) {
      if (!(err instanceof ApiError && err.reason === 'AlreadyExists')) throw err;
    }
    await this.eventOnChange(p, pvc, 'Normal', 'RequestCreated', `${d.message}: created VolumeExpansionRequest ${name}${mode === 'Approval' ? ' (awaiting approval)' : ''}`);
    return { ...status, request: name };
  }

  /**
   * An Event on change only. A namespaced policy's Events are on the policy; a cluster policy's
   * are on the PVC, where the namespace's owners look (a cluster-scoped object has no namespace).
   */
  private async eventOnChange(p: EvaluatedPolicy, pvc: V1PersistentVolumeClaim, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const key = `${policyId(p.ref)}/${objectKey(pvc)}`;
    if (this.lastDecision.get(key) === `${reason}:${message}`) return;
    this.lastDecision.set(key, `${reason}:${message}`);
    const pvcName = pvc.metadata?.name as string;
    const event =
      p.ref.kind === 'VolumeExpansionPolicy'
        ? { regarding: { apiVersion: p.apiVersion, kind: p.ref.kind, namespace: p.ref.namespace as string, name: p.ref.name, uid: p.uid }, message: `${pvcName}: ${message}` }
        : {
            regarding: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: pvc.metadata?.namespace as string, name: pvcName, uid: pvc.metadata?.uid },
            message: `ClusterVolumeExpansionPolicy ${p.ref.name}: ${message}`,
          };
    await this.d.client.emitEvent({ ...event, type, reason }).catch((err: unknown) => this.d.logger.warn({ err: (err as Error).message }, 'could not record an Event'));
  }

  private async writeStatus(p: EvaluatedPolicy, status: PolicyStatus): Promise<void> {
    if (!this.d.canWrite()) throw new RetryAfterError('not the leader: not writing policy status', 2000);
    await this.d.client.patchPolicyStatus(p.ref, status);
  }
}

/**
 * A status has to stay small (an object is at most 1.5 MB in etcd, and a cluster policy may cover
 * thousands of PVCs): beyond this many, the volumes that need attention are kept and idle ones
 * left out (and counted).
 */
export const maxStatusVolumes = 200;
const attention: Record<string, number> = { expand: 0, dryRun: 0, atMax: 1, blocked: 2, unknown: 3, idle: 4 };

function statusVolumes(volumes: VolumeStatus[]): VolumeStatus[] {
  if (volumes.length <= maxStatusVolumes) return volumes;
  return [...volumes].sort((a, b) => (attention[a.decision] ?? 5) - (attention[b.decision] ?? 5)).slice(0, maxStatusVolumes);
}

const refOf = (g: GoverningPolicy): PolicyRef =>
  g.kind === 'VolumeExpansionPolicy' ? { kind: g.kind, namespace: g.policy.metadata.namespace as string, name: g.policy.metadata.name as string } : { kind: g.kind, name: g.policy.metadata.name as string };
const policyId = (ref: PolicyRef) => (ref.namespace ? `${ref.namespace}/${ref.name}` : ref.name);
