// The policy evaluator: on the leader, every interval, read usage once for the whole cluster,
// then for each VolumeExpansionPolicy decide per matched PVC (src/policies/autoscale.ts) and act —
// create a VolumeExpansionRequest (Auto), one awaiting approval (Approval), or only report
// (DryRun). It never patches a PVC itself.
import type { V1PersistentVolumeClaim, V1StatefulSet, V1StorageClass } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Counter, Gauge } from 'prom-client';
import type { PolicyStatus, VolumeExpansionPolicy, VolumeStatus } from '../../crds/volume-expansion-policy.ts';
import type { Phase, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { KubeClient } from '../../k8s/client.ts';
import { ApiError } from '../../k8s/errors.ts';
import { GiB, formatBytes, humanBytes, parseBytes } from '../../k8s/quantity.ts';
import { decideAutoscale, type AutoscaleDecision, type AutoscaleSpec } from '../../policies/autoscale.ts';
import { parseDuration } from '../../policies/duration.ts';
import { modificationTimes } from '../../policies/history.ts';
import { matchesLabels } from '../../policies/labels.ts';
import { finishedPhases } from '../../policies/phase.ts';
import type { SampleStore } from '../../usage/samples.ts';
import type { UsageSource } from '../../usage/source.ts';
import type { ReconcileResult } from '../controller.ts';
import { RetryAfterError } from '../errors.ts';
import type { Informer } from '../informer.ts';

export const policyLabel = 'pvx.dev/policy';
export const approvalAnnotation = 'pvx.dev/approval';
export const approvedAnnotation = 'pvx.dev/approved';

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

/** The evaluator's single work-queue key: one pass covers every policy. */
export const evaluateKey = 'policies';

export function autoscaleSpec(p: VolumeExpansionPolicy): AutoscaleSpec {
  const t = p.spec.triggers;
  const ms = (d: string | undefined) => (d ? parseDuration(d) : undefined);
  return {
    usedRatio: t.usedPercent !== undefined ? t.usedPercent / 100 : undefined,
    inodesRatio: t.inodesUsedPercent !== undefined ? t.inodesUsedPercent / 100 : undefined,
    minFreeBytes: t.minFree ? parseBytes(t.minFree) : undefined,
    sustainedSamples: t.sustainedSamples ?? 3,
    forecast: t.forecast ? { horizonMs: ms(t.forecast.horizon) ?? 0, windowMs: ms(t.forecast.window) ?? 0 } : undefined,
    stepPercent: p.spec.step?.percent ?? 20,
    minStepBytes: p.spec.step?.minimum ? parseBytes(p.spec.step.minimum) : GiB,
    maxBytes: p.spec.maxSize ? parseBytes(p.spec.maxSize) : undefined,
    cooldownMs: ms(p.spec.cooldown) ?? 30 * 60_000,
    windows: (p.spec.windows ?? []).map((w) => ({ schedule: w.schedule, durationMs: ms(w.duration) ?? 0, timeZone: w.timeZone })),
  };
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

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export class PolicyEvaluator {
  private readonly d: PolicyEvaluatorDeps;
  private readonly now: () => Date;
  /** Last decision message per policy/PVC, so Events fire on change only. */
  private readonly lastDecision = new Map<string, string>();

  constructor(deps: PolicyEvaluatorDeps) {
    this.d = deps;
    this.now = deps.now ?? (() => new Date());
  }

  matches(p: VolumeExpansionPolicy, pvc: V1PersistentVolumeClaim): boolean {
    if (pvc.metadata?.namespace !== p.metadata.namespace || pvc.status?.phase !== 'Bound') return false;
    if (p.spec.statefulSetName) {
      // A StatefulSet's claims are named <template>-<statefulset>-<ordinal>.
      const sts = this.d.statefulSets?.get(`${p.metadata.namespace}/${p.spec.statefulSetName}`);
      const templates = (sts?.spec?.volumeClaimTemplates ?? []).map((t) => t.metadata?.name ?? '');
      const name = pvc.metadata?.name ?? '';
      if (!templates.some((t) => new RegExp(`^${escapeRegExp(t)}-${escapeRegExp(p.spec.statefulSetName as string)}-\\d+$`).test(name))) return false;
    }
    const labels = pvc.metadata?.labels ?? {};
    if (!matchesLabels(p.spec.selector?.matchLabels, labels)) return false;
    const classes = p.spec.storageClassNames;
    return !classes?.length || classes.includes(pvc.spec?.storageClassName ?? '');
  }

  reconcile = async (): Promise<ReconcileResult> => {
    const policies = this.d.policies.list();
    if (policies.length === 0) return { requeueAfterMs: this.d.intervalMs };
    const now = this.now();
    if (this.d.source) {
      const report = await this.d.source.collect(now);
      for (const [key, sample] of report.samples) this.d.samples.add(key, sample);
      for (const e of report.errors) {
        this.d.metrics?.sourceErrors.inc({ source: this.d.source.name });
        this.d.logger.warn({ source: this.d.source.name, target: e.target, err: e.message }, 'usage source failed for one target; skipped');
      }
    }
    const existing = new Set(this.d.pvcs.keys());
    for (const key of this.d.samples.retain(existing)) {
      const [namespace, persistentvolumeclaim] = key.split('/') as [string, string];
      this.d.metrics?.usedRatio.remove({ namespace, persistentvolumeclaim });
      this.d.metrics?.timeToFull.remove({ namespace, persistentvolumeclaim });
      this.d.metrics?.atMax.remove({ namespace, persistentvolumeclaim });
    }
    // Requests per claim, once for the pass rather than once per policy and claim.
    const requestsByPVC = new Map<string, VolumeExpansionRequest[]>();
    for (const r of this.d.requests.list()) {
      const key = `${r.metadata.namespace}/${r.spec?.target?.pvcName}`;
      requestsByPVC.set(key, [...(requestsByPVC.get(key) ?? []), r]);
    }
    for (const p of policies) {
      try {
        await this.evaluate(p, now, requestsByPVC);
      } catch (err) {
        if (err instanceof RetryAfterError) throw err;
        this.d.logger.error({ policy: `${p.metadata.namespace}/${p.metadata.name}`, err: (err as Error).message }, 'policy evaluation failed');
      }
    }
    return { requeueAfterMs: this.d.intervalMs };
  };

  private async evaluate(p: VolumeExpansionPolicy, now: Date, requestsByPVC: Map<string, VolumeExpansionRequest[]>): Promise<void> {
    const ns = p.metadata.namespace as string;
    const policyName = p.metadata.name as string;
    this.d.metrics?.evaluations.inc({ policy: policyName });
    const spec = autoscaleSpec(p);
    const mode = p.spec.mode ?? 'Auto';
    const volumes: VolumeStatus[] = [];
    const matched = this.d.pvcs.list().filter((pvc) => this.matches(p, pvc));
    for (const pvc of matched) {
      const pvcName = pvc.metadata?.name as string;
      const key = `${ns}/${pvcName}`;
      const capacityText = pvc.status?.capacity?.storage ?? '0';
      const lastCapacityChangeAt = this.d.samples.observeCapacity(key, capacityText, now);
      const requests = requestsByPVC.get(key) ?? [];
      const active = requests.filter((r) => !finishedPhases.has(r.status?.phase as Phase));
      const requested = parseBytes(pvc.spec?.resources?.requests?.storage ?? capacityText);
      const capacity = parseBytes(capacityText);
      const resizing = (pvc.status?.conditions ?? []).some((c) => c.status === 'True' && ['Resizing', 'FileSystemResizePending', 'ControllerResizeError', 'NodeResizeError'].includes(c.type));
      const lastExpansionAt = requests
        .filter((r) => !r.spec.dryRun)
        .flatMap(activityTimes)
        .sort((a, b) => b.getTime() - a.getTime())[0];
      const decision = decideAutoscale({
        spec,
        capacityBytes: capacity,
        expansionInFlight: active.length > 0 || requested > capacity || resizing,
        lastExpansionAt,
        lastCapacityChangeAt,
        samples: this.d.samples.get(key),
        modifications: modificationTimes(requests),
        provisioner: this.d.storageClasses.get(pvc.spec?.storageClassName ?? '')?.provisioner,
        now,
      });
      volumes.push(await this.act(p, mode, pvc, decision, now));
    }
    await this.writeStatus(p, { matchedPVCs: matched.length, lastEvaluatedAt: now.toISOString(), volumes });
  }

  private async act(p: VolumeExpansionPolicy, mode: string, pvc: V1PersistentVolumeClaim, d: AutoscaleDecision, now: Date): Promise<VolumeStatus> {
    const ns = p.metadata.namespace as string;
    const pvcName = pvc.metadata?.name as string;
    const labels = { namespace: ns, persistentvolumeclaim: pvcName };
    const samples = this.d.samples.get(`${ns}/${pvcName}`);
    const newest = samples[samples.length - 1];
    const status: VolumeStatus = {
      pvcName,
      decision: d.kind,
      message: d.message,
      ...(newest
        ? {
            used: humanBytes(newest.usedBytes),
            capacity: humanBytes(newest.capacityBytes),
            usedPercent: Math.round(Number((newest.usedBytes * 10_000n) / (newest.capacityBytes || 1n)) / 100),
            inodesUsedPercent: newest.inodes ? Math.round(((newest.inodesUsed ?? 0) / newest.inodes) * 100) : undefined,
            sampledAt: newest.at.toISOString(),
          }
        : {}),
    };
    if (d.kind !== 'unknown' && newest) this.d.metrics?.usedRatio.set(labels, Number(newest.usedBytes) / Number(newest.capacityBytes || 1n));
    if (d.kind === 'idle' && d.timeToFullMs !== undefined) {
      status.timeToFullSeconds = Math.round(d.timeToFullMs / 1000);
      this.d.metrics?.timeToFull.set(labels, d.timeToFullMs / 1000);
    }
    if (d.kind === 'unknown' || d.kind === 'blocked') status.reason = d.reason;
    if (d.kind === 'blocked' && d.until) status.nextEligibleAt = d.until.toISOString();
    // Set by the decisions that know (a blocked or unknown one says nothing about the size).
    if (d.kind === 'atMax') this.d.metrics?.atMax.set(labels, 1);
    else if (d.kind === 'idle' || d.kind === 'expand') this.d.metrics?.atMax.set(labels, 0);
    if (d.kind === 'atMax') await this.eventOnChange(p, pvcName, 'Warning', 'AtMaxSize', d.message);
    if (d.kind !== 'expand') return status;

    this.d.metrics?.triggers.inc({ policy: p.metadata.name as string, trigger: d.trigger });
    if (mode === 'DryRun') return { ...status, decision: 'dryRun', message: `dry run: would ${d.message}` };
    if (!this.d.canWrite()) throw new RetryAfterError('not the leader: not creating requests', 2000);
    const name = `${p.metadata.name}-${pvcName}-${Math.floor(now.getTime() / 1000).toString(36)}`.slice(0, 253).replace(/[^a-z0-9.-]/g, '-');
    const request: VolumeExpansionRequest = {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: {
        name,
        labels: { [policyLabel]: p.metadata.name as string },
        annotations: { 'pvx.dev/trigger': d.trigger, ...(mode === 'Approval' ? { [approvalAnnotation]: 'required' } : {}) },
        ownerReferences: [{ apiVersion: p.apiVersion, kind: p.kind, name: p.metadata.name as string, uid: p.metadata.uid as string, controller: true }],
      },
      spec: { target: { pvcName }, size: formatBytes(d.targetBytes) },
    };
    try {
      await this.d.client.createRequest(ns, request);
    } catch (err) {
      if (!(err instanceof ApiError && err.reason === 'AlreadyExists')) throw err;
    }
    await this.eventOnChange(p, pvcName, 'Normal', 'RequestCreated', `${d.message}: created VolumeExpansionRequest ${name}${mode === 'Approval' ? ' (awaiting approval)' : ''}`);
    return { ...status, request: name };
  }

  private async eventOnChange(p: VolumeExpansionPolicy, pvcName: string, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const key = `${p.metadata.namespace}/${p.metadata.name}/${pvcName}`;
    if (this.lastDecision.get(key) === `${reason}:${message}`) return;
    this.lastDecision.set(key, `${reason}:${message}`);
    await this.d.client
      .emitEvent({ regarding: { apiVersion: p.apiVersion, kind: p.kind, namespace: p.metadata.namespace as string, name: p.metadata.name as string, uid: p.metadata.uid }, type, reason, message: `${pvcName}: ${message}` })
      .catch((err: unknown) => this.d.logger.warn({ err: (err as Error).message }, 'could not record an Event'));
  }

  private async writeStatus(p: VolumeExpansionPolicy, status: PolicyStatus): Promise<void> {
    if (!this.d.canWrite()) throw new RetryAfterError('not the leader: not writing policy status', 2000);
    await this.d.client.patchPolicyStatus(p.metadata.namespace as string, p.metadata.name as string, status);
  }
}
