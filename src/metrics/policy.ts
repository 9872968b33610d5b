// Metrics of expansion policies and volume usage. Per-PVC series are removed when the PVC goes,
// per-policy series when the policy goes.
import { Counter, Gauge, type Registry } from 'prom-client';

export interface PolicyMetrics {
  evaluations: Counter<'policy'>;
  /** When a policy was last evaluated: its status is written only when its content changes. */
  lastEvaluation: Gauge<'policy'>;
  triggers: Counter<'policy' | 'trigger'>;
  usedRatio: Gauge<'namespace' | 'persistentvolumeclaim'>;
  timeToFull: Gauge<'namespace' | 'persistentvolumeclaim'>;
  sourceErrors: Counter<'source'>;
  atMax: Gauge<'namespace' | 'persistentvolumeclaim'>;
}

export function createPolicyMetrics(registry: Registry): PolicyMetrics {
  const registers = [registry];
  const perPVC = ['namespace', 'persistentvolumeclaim'] as const;
  return {
    evaluations: new Counter({ name: 'pvx_policy_evaluations_total', help: 'Policy evaluation passes', labelNames: ['policy'], registers }),
    lastEvaluation: new Gauge({
      name: 'pvx_policy_last_evaluation_timestamp_seconds',
      help: 'Unix time a policy was last evaluated',
      labelNames: ['policy'],
      registers,
    }),
    triggers: new Counter({
      name: 'pvx_policy_triggers_total',
      help: 'Expansions a policy decided on, by trigger',
      labelNames: ['policy', 'trigger'],
      registers,
    }),
    usedRatio: new Gauge({ name: 'pvx_volume_used_ratio', help: 'Used bytes / capacity of a PVC from the latest fresh sample', labelNames: perPVC, registers }),
    timeToFull: new Gauge({
      name: 'pvx_volume_time_to_full_seconds',
      help: 'Forecast seconds until a PVC is full at its current rate',
      labelNames: perPVC,
      registers,
    }),
    atMax: new Gauge({
      name: 'pvx_volume_at_max_size',
      help: '1 while a policy wants to grow a PVC already at its maximum size',
      labelNames: perPVC,
      registers,
    }),
    sourceErrors: new Counter({
      name: 'pvx_usage_source_errors_total',
      help: 'Failed reads of a usage source (per node for the kubelet source)',
      labelNames: ['source'],
      registers,
    }),
  };
}
