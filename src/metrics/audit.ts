// Metrics of the cluster audit. Labels are bounded: rule ids and severities are fixed sets, and
// namespaces are the cluster's own (no per-object series: the findings themselves are in
// `pvx audit` and in Events on the objects).
import { Counter, Gauge, type Registry } from 'prom-client';

export interface AuditMetrics {
  findings: Gauge<'rule' | 'severity'>;
  namespaceFindings: Gauge<'namespace' | 'severity'>;
  runs: Counter<never>;
  lastRun: Gauge<never>;
  // MERGE: pvx_claims_held is defined here ahead of the change that sets it (`pvx why`'s gates), so
  // that the dashboard's "Why claims are not growing" row checks against the catalog; nothing sets
  // it yet, so it exports no series. When that change lands, keep its definition and delete this
  // one (the dashboard needs the name and the `gate` label, nothing else).
  /** Gate ids are a fixed set (storage-class, binding, policy, usage, threshold, cooldown, …): bounded. */
  claimsHeld: Gauge<'gate'>;
}

export function createAuditMetrics(registry: Registry): AuditMetrics {
  const registers = [registry];
  return {
    findings: new Gauge({ name: 'pvx_audit_findings', help: 'Current audit findings, by rule and severity', labelNames: ['rule', 'severity'], registers }),
    namespaceFindings: new Gauge({
      name: 'pvx_audit_namespace_findings',
      help: 'Current audit findings per namespace, by severity',
      labelNames: ['namespace', 'severity'],
      registers,
    }),
    runs: new Counter({ name: 'pvx_audit_runs_total', help: 'Audit passes over the cluster', registers }),
    lastRun: new Gauge({ name: 'pvx_audit_last_run_timestamp_seconds', help: 'Unix time of the last completed audit pass', registers }),
    // MERGE: see claimsHeld above.
    claimsHeld: new Gauge({
      name: 'pvx_claims_held',
      help: 'Claims whose expansion a gate holds now, per gate (the first holding gate of pvx why)',
      labelNames: ['gate'],
      registers,
    }),
  };
}
