// The audit controller: on the leader, every interval, run the audit rules (src/policies/audit/rules.ts)
// over the caches — every PVC, PV, StorageClass, StatefulSet, ResourceQuota and pod pvx can see,
// not only the volumes it touched — and publish the findings as metrics and as Events on the
// objects concerned. The same rules back the read-only `pvx audit` command.
import type {
  V1Namespace,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1ResourceQuota,
  V1StatefulSet,
  V1StorageClass,
  V1VolumeAttributesClass,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import type { VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { KubeClient } from '../../k8s/client.ts';
import type { AuditMetrics } from '../../metrics/audit.ts';
import { audit, auditRules, severities, type AuditSnapshot, type Finding } from '../../policies/audit/rules.ts';
import { claimsHeld } from '../../policies/why/gates.ts';
import type { UsageSample } from '../../policies/autoscale/sampling.ts';
import type { DriverProfiles } from '../../policies/budget/drivers.ts';
import type { SampleStore } from '../../usage/samples.ts';
import type { ReconcileResult } from '../runtime/controller.ts';
import type { Informer } from '../../k8s/informer.ts';

export interface AuditControllerDeps {
  client: KubeClient;
  pvcs: Informer<V1PersistentVolumeClaim>;
  pvs: Informer<V1PersistentVolume>;
  storageClasses: Informer<V1StorageClass>;
  /** Absent where the cluster does not serve VolumeAttributesClasses to pvx. */
  volumeAttributesClasses?: Informer<V1VolumeAttributesClass>;
  statefulSets: Informer<V1StatefulSet>;
  quotas: Informer<V1ResourceQuota>;
  pods: Informer<V1Pod>;
  requests: Informer<VolumeExpansionRequest>;
  policies: Informer<VolumeExpansionPolicy>;
  clusterPolicies: Informer<ClusterVolumeExpansionPolicy>;
  namespaces: Informer<V1Namespace>;
  /** The policy evaluator's usage samples, when a usage source runs (for "nearly full", and the usage gate). */
  samples?: SampleStore;
  /** The usage source's name ('kubelet', 'prometheus'), when one runs: the usage gate's words. */
  usageSource?: string;
  metrics?: AuditMetrics;
  logger: Logger;
  canWrite: () => boolean;
  intervalMs: number;
  stuckAfterMs?: number;
  events?: Partial<EventLimits>;
  now?: () => Date;
  /** The driver profiles (--modification-budget); default defaultDriverProfiles. */
  profiles?: DriverProfiles;
}

/** The audit's single work-queue key: one pass covers the cluster. */
export const auditKey = 'audit';

/** A sample older than this says nothing about "nearly full" now. */
const freshSampleMs = 5 * 60_000;

export interface EventLimits {
  /** One Event per finding (rule and object) at most this often, however it comes and goes. */
  minIntervalMs: number;
  /** At most this many Events per pass; the rest follow in later passes (a first pass over a big cluster must not flood). */
  perPass: number;
}

const defaultEventLimits: EventLimits = { minIntervalMs: 60 * 60_000, perPass: 20 };

export const findingKey = (f: Pick<Finding, 'rule' | 'kind' | 'namespace' | 'name'>) => `${f.rule}/${f.kind}/${f.namespace}/${f.name}`;

/**
 * Which findings to announce with an Event now: those new since they were last announced, not
 * announced within minIntervalMs (a flapping condition does not spam), up to perPass, most severe
 * first. Pure: returns the new announcement times (announced findings keep theirs until they have
 * been gone for minIntervalMs).
 */
export function findingsToAnnounce(
  findings: readonly Finding[],
  announced: ReadonlyMap<string, number>,
  nowMs: number,
  limits: EventLimits,
): { announce: Finding[]; announced: Map<string, number> } {
  const current = new Set(findings.map(findingKey));
  const next = new Map([...announced].filter(([key, at]) => current.has(key) || nowMs - at < limits.minIntervalMs));
  const announce = findings.filter((f) => !next.has(findingKey(f))).slice(0, limits.perPass);
  for (const f of announce) next.set(findingKey(f), nowMs);
  return { announce, announced: next };
}

const apiVersions: Record<string, string> = { PersistentVolumeClaim: 'v1', StatefulSet: 'apps/v1', ResourceQuota: 'v1', Pod: 'v1' };

export class AuditController {
  private readonly d: AuditControllerDeps;
  private readonly now: () => Date;
  private readonly limits: EventLimits;
  private announced = new Map<string, number>();
  /** Namespaces with findings at the last pass, whose series are zeroed when they have none. */
  private namespacesWithFindings = new Set<string>();
  private lastFindings: Finding[] = [];
  /** The namespace/gate series of pvx_claims_held set at the last pass. */
  private heldSeries = new Set<string>();

  constructor(deps: AuditControllerDeps) {
    this.d = deps;
    this.now = deps.now ?? (() => new Date());
    this.limits = { ...defaultEventLimits, ...deps.events };
  }

  /** The findings of the last pass (for /debug and tests). */
  get findings(): readonly Finding[] {
    return this.lastFindings;
  }

  reconcile = async (): Promise<ReconcileResult> => {
    const now = this.now();
    const snapshot: AuditSnapshot = {
      pvcs: this.d.pvcs.list(),
      pvs: this.d.pvs.list(),
      storageClasses: this.d.storageClasses.list(),
      statefulSets: this.d.statefulSets.list(),
      resourceQuotas: this.d.quotas.list(),
      pods: this.d.pods.list(),
      volumeAttributesClasses: this.d.volumeAttributesClasses?.list(),
      requests: this.d.requests.list(),
      policies: this.d.policies.list(),
      clusterPolicies: this.d.clusterPolicies.list(),
      namespaces: this.d.namespaces.list(),
      usage: this.usage(now),
    };
    const findings = audit(snapshot, { now, stuckAfterMs: this.d.stuckAfterMs, ...(this.d.profiles ? { profiles: this.d.profiles } : {}) });
    this.lastFindings = findings;
    this.publish(findings);
    this.publishHeld(snapshot, now);
    if (this.d.canWrite()) await this.announce(findings, now);
    this.d.metrics?.runs.inc();
    this.d.metrics?.lastRun.set(now.getTime() / 1000);
    this.d.logger.debug({ findings: findings.length }, 'audit pass');
    return { requeueAfterMs: this.d.intervalMs };
  };

  /** The newest sample of each PVC, if fresh: a stale one would claim a fullness that may be gone. */
  private usage(now: Date): Map<string, UsageSample> | undefined {
    if (!this.d.samples) return undefined;
    const usage = new Map<string, UsageSample>();
    for (const key of this.d.pvcs.keys()) {
      const samples = this.d.samples.get(key);
      const newest = samples[samples.length - 1];
      if (newest && now.getTime() - newest.at.getTime() <= freshSampleMs) usage.set(key, newest);
    }
    return usage;
  }

  /**
   * Every rule's series is set (0 when clean), so an alert on a rule sees 0 rather than nothing;
   * a namespace's series exist while it has findings and are removed when it has none.
   */
  private publish(findings: readonly Finding[]): void {
    const m = this.d.metrics;
    if (!m) return;
    for (const r of auditRules) m.findings.set({ rule: r.id, severity: r.severity }, findings.filter((f) => f.rule === r.id).length);
    const byNamespace = new Map<string, Map<string, number>>();
    for (const f of findings) {
      if (!f.namespace) continue;
      const counts = byNamespace.get(f.namespace) ?? new Map<string, number>();
      counts.set(f.severity, (counts.get(f.severity) ?? 0) + 1);
      byNamespace.set(f.namespace, counts);
    }
    for (const ns of this.namespacesWithFindings)
      if (!byNamespace.has(ns)) for (const severity of severities) m.namespaceFindings.remove({ namespace: ns, severity });
    for (const [namespace, counts] of byNamespace)
      for (const severity of severities) m.namespaceFindings.set({ namespace, severity }, counts.get(severity) ?? 0);
    this.namespacesWithFindings = new Set(byNamespace.keys());
  }

  /**
   * pvx_claims_held: which gate holds each claim, by `pvx why`'s own chain over the audit's
   * snapshot and the evaluator's samples (no Events: they are not cached; no capacity change
   * dates: a claim just grown is held by its cooldown anyway). A namespace's series for a gate go
   * when no claim there is held by it.
   */
  private publishHeld(snapshot: AuditSnapshot, now: Date): void {
    const m = this.d.metrics;
    if (!m) return;
    const samples = this.d.samples;
    const held = claimsHeld(snapshot, {
      now,
      ...(this.d.profiles ? { profiles: this.d.profiles } : {}),
      ...(samples ? { samples: (key: string) => samples.get(key), usageSource: this.d.usageSource ?? 'the usage source' } : {}),
    });
    const counts = new Map<string, number>();
    for (const c of held) if (c.gate) counts.set(`${c.namespace}\u0000${c.gate}`, (counts.get(`${c.namespace}\u0000${c.gate}`) ?? 0) + 1);
    for (const key of this.heldSeries) {
      if (counts.has(key)) continue;
      const [namespace, gate] = key.split('\u0000') as [string, string];
      m.claimsHeld.remove({ namespace, gate });
    }
    for (const [key, count] of counts) {
      const [namespace, gate] = key.split('\u0000') as [string, string];
      m.claimsHeld.set({ namespace, gate }, count);
    }
    this.heldSeries = new Set(counts.keys());
  }

  private async announce(findings: readonly Finding[], now: Date): Promise<void> {
    const namespaced = findings.filter((f) => f.namespace && apiVersions[f.kind]);
    const { announce, announced } = findingsToAnnounce(namespaced, this.announced, now.getTime(), this.limits);
    this.announced = announced;
    for (const f of announce) {
      const uid = f.kind === 'PersistentVolumeClaim' ? this.d.pvcs.get(`${f.namespace}/${f.name}`)?.metadata?.uid : undefined;
      await this.d.client
        .emitEvent({
          regarding: { apiVersion: apiVersions[f.kind] as string, kind: f.kind, namespace: f.namespace, name: f.name, uid },
          type: f.severity === 'info' ? 'Normal' : 'Warning',
          reason: `Audit${f.rule.replace(/(^|-)([a-z])/g, (_m, _d, c: string) => c.toUpperCase())}`,
          message: `${f.message} Remedy: ${f.remedy}`,
        })
        .catch((err: unknown) => {
          // Not announced after all: the next pass tries again.
          this.announced.delete(findingKey(f));
          this.d.logger.warn({ err: (err as Error).message, finding: findingKey(f) }, 'could not record an audit Event');
        });
    }
  }
}
