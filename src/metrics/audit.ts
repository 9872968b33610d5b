// Metrics of the cluster audit. Labels are bounded: rule ids, severities and gates are fixed sets, and
// namespaces are the cluster's own (no per-object series: the findings themselves are in
// `pvx audit` and in Events on the objects).
import { Counter, Gauge, type Registry } from 'prom-client';

export interface AuditMetrics {
  findings: Gauge<'rule' | 'severity'>;
  namespaceFindings: Gauge<'namespace' | 'severity'>;
  /** Claims per namespace held by each gate of the expansion chain (src/policies/why/gates.ts). */
  claimsHeld: Gauge<'namespace' | 'gate'>;
  runs: Counter<never>;
  lastRun: Gauge<never>;
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
    // A claim counts under the first gate that holds it, as `pvx why` names it; claims nothing holds
    // are not counted. Series exist per namespace and gate while their count is not zero: at most
    // namespaces × the gates of gateTable, and no more series than claims.
    claimsHeld: new Gauge({
      name: 'pvx_claims_held',
      help: 'Claims held from growing, by the first gate that holds them (pvx why) and namespace',
      labelNames: ['namespace', 'gate'],
      registers,
    }),
    runs: new Counter({ name: 'pvx_audit_runs_total', help: 'Audit passes over the cluster', registers }),
    lastRun: new Gauge({ name: 'pvx_audit_last_run_timestamp_seconds', help: 'Unix time of the last completed audit pass', registers }),
  };
}
