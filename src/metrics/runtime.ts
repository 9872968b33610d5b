// Metrics of the operator runtime, registered on an injected registry (never prom-client's global
// default, so tests and several operators in one process do not collide). Names follow
// controller-runtime and client-go, so existing dashboards and alerts apply.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { InformerMetrics } from '../k8s/informer.ts';

const workBuckets = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** What a work queue (src/operator/runtime/workqueue.ts) records. */
export interface WorkQueueMetrics {
  depth: Gauge<'name'>;
  adds: Counter<'name'>;
  retries: Counter<'name'>;
  queueDuration: Histogram<'name'>;
  workDuration: Histogram<'name'>;
}

export interface ControllerMetrics {
  reconcileTotal: Counter<'controller' | 'result'>;
  reconcileErrors: Counter<'controller'>;
  reconcileTime: Histogram<'controller'>;
  activeWorkers: Gauge<'controller'>;
}

export interface ClientMetrics {
  /** The client-side rate limit in force: setting="qps" and setting="burst". */
  rateLimit: Gauge<'setting'>;
  /** How long calls waited for the rate limit. */
  rateLimiterWait: Histogram;
}

export interface RuntimeMetrics {
  registry: Registry;
  client: ClientMetrics;
  workqueue: WorkQueueMetrics;
  controller: ControllerMetrics;
  informer: InformerMetrics;
  leader: Gauge<'name'>;
}

/**
 * How often the event loop's delay is sampled for nodejs_eventloop_lag_* (ms). prom-client's
 * default, 10 ms, is a timer waking the process 100 times a second: at rest that alone cost about
 * 1 s of CPU every 2 minutes, more than all of pvx's own work (bench/README.md). Once a second
 * still sees every stall that matters to an operator (a pass, a list, a GC pause of 100s of ms).
 */
export const eventLoopSampleMs = 1000;

export function createRuntimeMetrics(registry = new Registry(), opts: { processMetrics?: boolean } = {}): RuntimeMetrics {
  if (opts.processMetrics ?? true) collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: eventLoopSampleMs });
  const registers = [registry];
  return {
    registry,
    workqueue: {
      depth: new Gauge({ name: 'workqueue_depth', help: 'Current depth of workqueue', labelNames: ['name'], registers }),
      adds: new Counter({ name: 'workqueue_adds_total', help: 'Total number of adds handled by workqueue', labelNames: ['name'], registers }),
      retries: new Counter({ name: 'workqueue_retries_total', help: 'Total number of retries handled by workqueue', labelNames: ['name'], registers }),
      queueDuration: new Histogram({
        name: 'workqueue_queue_duration_seconds',
        help: 'How long in seconds an item stays in workqueue before being requested',
        labelNames: ['name'],
        buckets: workBuckets,
        registers,
      }),
      workDuration: new Histogram({
        name: 'workqueue_work_duration_seconds',
        help: 'How long in seconds processing an item from workqueue takes',
        labelNames: ['name'],
        buckets: workBuckets,
        registers,
      }),
    },
    controller: {
      reconcileTotal: new Counter({
        name: 'controller_runtime_reconcile_total',
        help: 'Total number of reconciliations per controller',
        labelNames: ['controller', 'result'],
        registers,
      }),
      reconcileErrors: new Counter({
        name: 'controller_runtime_reconcile_errors_total',
        help: 'Total number of reconciliation errors per controller',
        labelNames: ['controller'],
        registers,
      }),
      reconcileTime: new Histogram({
        name: 'controller_runtime_reconcile_time_seconds',
        help: 'Length of time per reconciliation per controller',
        labelNames: ['controller'],
        buckets: workBuckets,
        registers,
      }),
      activeWorkers: new Gauge({
        name: 'controller_runtime_active_workers',
        help: 'Number of currently used workers per controller',
        labelNames: ['controller'],
        registers,
      }),
    },
    informer: {
      objects: new Gauge({ name: 'pvx_informer_objects', help: 'Objects in the informer cache', labelNames: ['resource'], registers }),
      events: new Counter({ name: 'pvx_informer_events_total', help: 'Watch events applied to the cache', labelNames: ['resource', 'type'], registers }),
      relists: new Counter({
        name: 'pvx_informer_relists_total',
        help: 'Full lists of a resource (initial, 410 Gone, …)',
        labelNames: ['resource', 'reason'],
        registers,
      }),
      watchRestarts: new Counter({
        name: 'pvx_informer_watch_restarts_total',
        help: 'Watch streams restarted (error, stream end, watchdog)',
        labelNames: ['resource', 'reason'],
        registers,
      }),
      synced: new Gauge({ name: 'pvx_informer_synced', help: '1 once the cache has completed its first list', labelNames: ['resource'], registers }),
    },
    client: {
      rateLimit: new Gauge({
        name: 'pvx_client_rate_limit',
        help: 'Client-side rate limit of API requests (--kube-api-qps, --kube-api-burst)',
        labelNames: ['setting'],
        registers,
      }),
      rateLimiterWait: new Histogram({
        name: 'pvx_client_rate_limiter_wait_seconds',
        help: 'Time API requests waited for the client-side rate limit',
        buckets: [0, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers,
      }),
    },
    leader: new Gauge({ name: 'leader_election_master_status', help: '1 while this process holds the leader lease', labelNames: ['name'], registers }),
  };
}
