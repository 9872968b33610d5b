// Metrics of VolumeExpansionRequests. Labels are bounded: results, phases and changes are fixed
// sets. `change` tells what a request changes — size, class (its VolumeAttributesClass) or
// size+class — so a class change is counted and timed like an expansion, on the same series.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import { inFlight, oldestPhaseAges } from '../policies/request/phase.ts';

/** What the request reconciler records (the gauges read the cached requests at scrape time). */
export interface RequestMetrics {
  requests: Counter<'result' | 'change'>;
  phaseDuration: Histogram<'phase' | 'change'>;
  seenToPatch: Histogram;
}

/** requests: the cached requests, read at scrape time for the gauges. */
export function createExpansionMetrics(registry: Registry, requests: () => readonly VolumeExpansionRequest[], now = () => new Date()): RequestMetrics {
  const registers = [registry];
  new Gauge({
    name: 'pvx_expansions_in_flight',
    help: 'VolumeExpansionRequests accepted and not yet finished',
    registers,
    collect() {
      this.set(inFlight(requests()));
    },
  });
  new Gauge({
    name: 'pvx_expansion_oldest_phase_age_seconds',
    help: 'Per unfinished phase, how long the request longest in it has been there',
    labelNames: ['phase'],
    registers,
    collect() {
      // Phases nobody is in have no series (reset), so "stuck" alerts need no stale-series care.
      this.reset();
      for (const [phase, age] of oldestPhaseAges(requests(), now())) this.set({ phase }, age);
    },
  });
  return {
    requests: new Counter({
      name: 'pvx_expansion_requests_total',
      help: 'VolumeExpansionRequests finished, by result (completed, failed, rejected, dry_run) and change (size, class, size+class)',
      labelNames: ['result', 'change'],
      registers,
    }),
    phaseDuration: new Histogram({
      name: 'pvx_expansion_phase_duration_seconds',
      help: 'Time VolumeExpansionRequests spent in each phase, by change (size, class, size+class)',
      labelNames: ['phase', 'change'],
      buckets: [0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 4 * 3600, 24 * 3600],
      registers,
    }),
    // pvx's own part of a request's way to its patch, apart from the API server's delivery of it
    // (creation → the watch event) and the resize after it.
    seenToPatch: new Histogram({
      name: 'pvx_request_seen_to_patch_seconds',
      help: 'Time from pvx first seeing a new VolumeExpansionRequest (its watch event) to sending its claim patch',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    }),
  };
}
