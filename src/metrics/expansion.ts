// Metrics of VolumeExpansionRequests. Labels are bounded: results and phases are fixed sets.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { RequestMetrics } from '../operator/reconcilers/expansion-request.ts';

export function createExpansionMetrics(registry: Registry, inFlight: () => number): RequestMetrics {
  const registers = [registry];
  new Gauge({
    name: 'pvx_expansions_in_flight',
    help: 'VolumeExpansionRequests accepted and not yet finished',
    registers,
    collect() {
      this.set(inFlight());
    },
  });
  return {
    requests: new Counter({
      name: 'pvx_expansion_requests_total',
      help: 'VolumeExpansionRequests finished, by result (completed, failed, rejected, dry_run)',
      labelNames: ['result'],
      registers,
    }),
    phaseDuration: new Histogram({
      name: 'pvx_expansion_phase_duration_seconds',
      help: 'Time VolumeExpansionRequests spent in each phase',
      labelNames: ['phase'],
      buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600],
      registers,
    }),
  };
}
