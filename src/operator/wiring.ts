// The operator `pvx run` starts: the manager, the shared caches, and each controller wired to its
// reconciler and its queue (what wakes each is its reconciler's `watch`, beside its reconcile). The command (src/cli/run.ts) parses the flags
// and connects; everything it starts is built here.
import type { Logger } from 'pino';
import { isForbidden, isNotServed } from '../k8s/errors.ts';
import type {
  V1ConfigMap,
  V1Namespace,
  V1Node,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1ResourceQuota,
  V1StatefulSet,
  V1StorageClass,
  V1VolumeAttributesClass,
} from '@kubernetes/client-node';
import type { ClusterVolumeExpansionPolicy } from '../crds/cluster-volume-expansion-policy.ts';
import type { VolumeExpansionPolicy } from '../crds/volume-expansion-policy.ts';
import { PolicyEvaluator, evaluateKey, unseenCreateMs } from './reconcilers/expansion-policy.ts';
import { UnseenCreates, UnseenWrites } from './reconcilers/unseen-writes.ts';
import { createAuditMetrics } from '../metrics/audit.ts';
import { createPolicyMetrics } from '../metrics/policy.ts';
import { AuditController, auditKey } from './reconcilers/audit.ts';
import { KubeletSummarySource, readyNodes } from '../usage/kubelet.ts';
import { PrometheusSource } from '../usage/prometheus.ts';
import { SampleStore } from '../usage/samples.ts';
import type { VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import { clusterVolumeExpansionPolicies, namespaces, resources, volumeExpansionPolicies, volumeExpansionRequests } from '../k8s/resources.ts';
import { createExpansionMetrics } from '../metrics/expansion.ts';
import { createRuntimeMetrics } from '../metrics/runtime.ts';
import { Controller, type Reconcile, type Wake } from './runtime/controller.ts';
import { Manager } from './runtime/manager.ts';
import { ClusterSigningKeys } from './endpoints/signing-keys.ts';
import { MetricsAuthorizer } from './endpoints/metrics-auth.ts';
import { certificateDirectory, selfSignedSource, type MetricsService } from './endpoints/metrics-certs.ts';
import { ClaimLedgerRecorder } from './reconcilers/claim-ledger.ts';
import { decideRequest } from '../policies/request/decide.ts';
import { policyPass } from '../policies/autoscale/policy-pass.ts';
import { nextReadDelayMs } from '../policies/autoscale/sampling.ts';
import { ExpansionRequestReconciler } from './reconcilers/expansion-request.ts';
import { StatefulSetRecordKeeper } from './reconcilers/statefulset-records.ts';
import { decideRecord } from '../policies/request/record-keeper.ts';
import { recordLabel } from '../policies/request/statefulset-record.ts';
import { driverProfiles, type DriverProfiles, type MaxVolumeSize, type ModificationBudget } from '../policies/budget/drivers.ts';
import type { KubeClient, KubeletClient } from '../k8s/client.ts';
import { FencedKubeClient } from '../k8s/fenced-client.ts';
import { ThrottledKubeClient } from '../k8s/throttled-client.ts';
import { WorkQueue } from './runtime/workqueue.ts';

/** What the operator is built from: `pvx run`'s flags, less how it reaches the cluster (src/cli/run.ts). */
export interface OperatorConfig {
  namespace?: string;
  namespaceSelector?: Record<string, string>;
  /** --metrics-bind-address. */
  metricsListen: string;
  /** --metrics-secure: HTTPS and token review (true), or plain HTTP open to all (false). */
  metricsSecure: boolean;
  /** --metrics-cert-dir: tls.crt and tls.key; absent: self-signed at start. */
  metricsCertDir?: string;
  /** The Service in front of /metrics (in a cluster): the self-signed certificate names it. */
  metricsService?: MetricsService;
  /** --health-probe-bind-address. */
  healthListen: string;
  leaderElect: boolean;
  leaderElectionId: string;
  leaderElectionNamespace: string;
  identity: string;
  debugEndpoints: boolean;
  drainTimeoutMs: number;
  usageSource: 'kubelet' | 'prometheus' | 'none';
  prometheusUrl?: string;
  prometheusMatchers?: string;
  policyIntervalMs: number;
  auditIntervalMs: number;
  auditStuckAfterMs: number;
  kubeApiQps: number;
  kubeApiBurst: number;
  /** --modification-budget: budgets by driver replacing the profiles' (null: none). */
  modificationBudgets: Record<string, ModificationBudget | null>;
  /** --max-volume-size: the largest volume of some drivers (pvx's profiles' otherwise). */
  maxVolumeSizes?: Record<string, MaxVolumeSize>;
}

/**
 * Whether pvx can read VolumeAttributesClasses (storage.k8s.io/v1: Kubernetes 1.34 or later, and
 * pvx's RBAC to list them). Where it cannot, pvx runs as before and rejects the requests that name
 * one: a cache of a kind that cannot be listed never syncs, and readiness waits for every cache.
 * Asked once at start (a cluster upgrade restarts pvx's pods anyway).
 */
export async function readsVolumeAttributesClasses(client: KubeClient, logger: Logger): Promise<boolean> {
  try {
    await client.list(resources.volumeAttributesClasses, { limit: 1 });
    return true;
  } catch (err) {
    if (!isNotServed(err) && !isForbidden(err)) throw err;
    logger.warn(
      { err: (err as Error).message },
      'cannot list VolumeAttributesClasses (not served before Kubernetes 1.34, or not allowed): requests that name one are rejected',
    );
    return false;
  }
}

/**
 * Whether pvx may keep StatefulSet records in its own namespace (the Role of the StatefulSet
 * template opt-in): without it, a request asking for its template to follow is skipped, saying
 * how to grant it. Asked once at start, as readsVolumeAttributesClasses is.
 */
export async function keepsStatefulSetRecords(client: KubeClient, namespace: string, logger: Logger): Promise<boolean> {
  try {
    await client.list(resources.statefulSetRecords, { namespace, labelSelector: `${recordLabel}=true`, limit: 1 });
    return true;
  } catch (err) {
    if (!isForbidden(err)) throw err;
    logger.info(
      { namespace },
      'cannot list ConfigMaps in pvx’s namespace (the StatefulSet template opt-in is not granted): requests that ask a StatefulSet’s template to follow are skipped',
    );
    return false;
  }
}

/** What the cluster offers that pvx adapts to (see readsVolumeAttributesClasses, keepsStatefulSetRecords). */
export interface ClusterFeatures {
  volumeAttributesClasses: boolean;
  /** Default false: no StatefulSet records, so no template step. */
  statefulSetRecords?: boolean;
}

/**
 * The pure decisions the reconcilers carry out. `pvx run` uses pvx's own; the deterministic
 * simulation swaps in broken variants of them (mutants) to show that each of its invariants
 * catches the failure it is about.
 */
export interface Decisions {
  decideRequest: typeof decideRequest;
  policyPass: typeof policyPass;
  nextReadDelayMs: typeof nextReadDelayMs;
  decideRecord: typeof decideRecord;
}

export const pvxDecisions: Decisions = { decideRequest, policyPass, nextReadDelayMs, decideRecord };

/** Who may scrape /metrics, asked of the API server; tokens the cluster signed are reviewed first. */
function metricsAuthorizer(client: KubeClient, logger: Logger): MetricsAuthorizer {
  const signingKeys = new ClusterSigningKeys({ read: () => client.getServiceAccountKeys(), logger });
  return new MetricsAuthorizer({ client, logger, signingKeys });
}

/**
 * Builds the operator; the caller starts it. Reconcilers register here as they are added. The
 * kubelet usage source reads the kubelets through `kubelet` (not the API server, so neither the
 * client's rate limit nor the lease fence applies to it).
 */
export function buildManager(
  cfg: OperatorConfig,
  logger: Logger,
  api: KubeClient,
  features: ClusterFeatures = { volumeAttributesClasses: true },
  kubelet?: KubeletClient,
  decisions: Decisions = pvxDecisions,
): Manager {
  if (cfg.usageSource === 'kubelet' && !kubelet) throw new TypeError('usage source kubelet needs a KubeletClient');
  const metrics = createRuntimeMetrics();
  metrics.client.rateLimit.set({ setting: 'qps' }, cfg.kubeApiQps);
  metrics.client.rateLimit.set({ setting: 'burst' }, cfg.kubeApiBurst);
  const client = new ThrottledKubeClient(api, { qps: cfg.kubeApiQps, burst: cfg.kubeApiBurst, observeWait: (s) => metrics.client.rateLimiterWait.observe(s) });
  const manager = new Manager({
    client,
    logger,
    metrics,
    namespace: cfg.namespace,
    namespaceSelector: cfg.namespaceSelector,
    healthListen: cfg.healthListen,
    metricsEndpoint: {
      listen: cfg.metricsListen,
      // The reviews go through the throttled client unfenced: a standby is scraped too.
      ...(cfg.metricsSecure
        ? {
            secure: {
              certificates: cfg.metricsCertDir
                ? certificateDirectory(cfg.metricsCertDir)
                : selfSignedSource(cfg.metricsService ? { service: cfg.metricsService } : {}),
              authorizer: metricsAuthorizer(client, logger.child({ component: 'metrics-auth' })),
            },
          }
        : {}),
    },
    debugEndpoints: cfg.debugEndpoints,
    drainTimeoutMs: cfg.drainTimeoutMs,
    leaderElection: cfg.leaderElect ? { namespace: cfg.leaderElectionNamespace, name: cfg.leaderElectionId, identity: cfg.identity } : undefined,
  });
  const recordNamespace = features.statefulSetRecords ? cfg.leaderElectionNamespace : undefined;
  const caches = sharedCaches(manager, features, recordNamespace);
  // The controllers write through the lease fence, checked at each write; the manager and its
  // leader election keep the raw client (the lease calls are how the fence opens).
  const fenced = new FencedKubeClient(client, { canWrite: () => manager.isLeader() });
  // One set of driver profiles for every decision: the request's validation and phase, the
  // policies, the audit and the claim ledger all count a budget the same way.
  const profiles = driverProfiles(cfg.modificationBudgets, cfg.maxVolumeSizes);
  // The requests this process created that the requests' cache has not shown yet — the policies'
  // and the StatefulSet requests' children alike: the policy pass counts them all in flight.
  const ownCreates = new UnseenCreates<VolumeExpansionRequest>(unseenCreateMs);
  // The claim patches this process made that the claims' cache has not shown yet: the request
  // reconciler records them, and the policy pass does not ask for a claim from a copy older than one.
  const ownClaimPatches = new UnseenWrites();
  const wiring: Wiring = { manager, caches, client: fenced, metrics, logger, profiles, kubelet, decisions, ownCreates, ownClaimPatches, recordNamespace };
  addExpansionRequestController(wiring);
  addRecordKeeper(wiring);
  addClaimLedgerController(wiring);
  // The evaluator's usage samples also tell the audit which volumes are nearly full.
  const samples = new SampleStore();
  addPolicyEvaluator(wiring, cfg, samples);
  addAuditController(wiring, cfg, cfg.usageSource === 'none' ? undefined : samples);
  return manager;
}

/** Every kind pvx reads, one cache each, shared by the controllers (each takes the ones it needs). */
function sharedCaches(manager: Manager, features: ClusterFeatures, recordNamespace: string | undefined) {
  return {
    records: recordNamespace
      ? manager.informer<V1ConfigMap>(resources.statefulSetRecords, { namespace: recordNamespace, labelSelector: `${recordLabel}=true` })
      : undefined,
    pvcs: manager.informer<V1PersistentVolumeClaim>(resources.persistentVolumeClaims),
    pvs: manager.informer<V1PersistentVolume>(resources.persistentVolumes),
    storageClasses: manager.informer<V1StorageClass>(resources.storageClasses),
    volumeAttributesClasses: features.volumeAttributesClasses ? manager.informer<V1VolumeAttributesClass>(resources.volumeAttributesClasses) : undefined,
    pods: manager.informer<V1Pod>(resources.pods),
    statefulSets: manager.informer<V1StatefulSet>(resources.statefulSets),
    quotas: manager.informer<V1ResourceQuota>(resources.resourceQuotas),
    nodes: manager.informer<V1Node>(resources.nodes),
    requests: manager.informer<VolumeExpansionRequest>(volumeExpansionRequests),
    policies: manager.informer<VolumeExpansionPolicy>(volumeExpansionPolicies),
    clusterPolicies: manager.informer<ClusterVolumeExpansionPolicy>(clusterVolumeExpansionPolicies),
    namespaces: manager.informer<V1Namespace>(namespaces),
  };
}

type Caches = ReturnType<typeof sharedCaches>;

/** What each controller is built from: the manager it joins, the shared caches, the fenced client, the metrics, the logger and the driver profiles. */
interface Wiring {
  manager: Manager;
  caches: Caches;
  client: KubeClient;
  metrics: ReturnType<typeof createRuntimeMetrics>;
  logger: Logger;
  profiles: DriverProfiles;
  kubelet: KubeletClient | undefined;
  decisions: Decisions;
  ownCreates: UnseenCreates<VolumeExpansionRequest>;
  ownClaimPatches: UnseenWrites;
  /** Where pvx keeps StatefulSet records (its own namespace), when it may. */
  recordNamespace: string | undefined;
}

function addAuditController(w: Wiring, cfg: OperatorConfig, samples: SampleStore | undefined): void {
  const { manager, caches, client, metrics, logger, profiles } = w;
  const auditor = new AuditController({
    ...caches,
    client,
    profiles,
    samples,
    ...(samples ? { usageSource: cfg.usageSource } : {}),
    metrics: createAuditMetrics(metrics.registry),
    logger: logger.child({ controller: 'audit' }),
    canWrite: () => manager.isLeader(),
    intervalMs: cfg.auditIntervalMs,
    stuckAfterMs: cfg.auditStuckAfterMs,
  });
  // Requeued every interval: findings are about durations (stuck for 15 min), which pass without
  // any object changing.
  addPassController(manager, metrics, logger, { name: 'audit', key: auditKey, reconcile: auditor.reconcile, intervalMs: cfg.auditIntervalMs });
}

/**
 * A controller whose one key is a pass over the whole cluster: it requeues itself every interval
 * (the resync only recovers a lost requeue). Returns its queue, for events that should wake it.
 */
function addPassController(
  manager: Manager,
  metrics: ReturnType<typeof createRuntimeMetrics>,
  logger: Logger,
  pass: { name: string; key: string; reconcile: Reconcile; intervalMs: number },
): WorkQueue {
  const queue = new WorkQueue({ name: pass.name, metrics: metrics.workqueue });
  manager.addController(
    new Controller({
      name: pass.name,
      queue,
      reconcile: pass.reconcile,
      logger,
      metrics: metrics.controller,
      workers: 1,
      resyncPeriodMs: pass.intervalMs * 4,
      listKeys: () => [pass.key],
    }),
  );
  queue.add(pass.key);
  return queue;
}

function addPolicyEvaluator(w: Wiring, cfg: OperatorConfig, samples: SampleStore): void {
  const { manager, caches, client, metrics, logger, profiles, kubelet, decisions, ownCreates, ownClaimPatches } = w;
  const evaluator = new PolicyEvaluator({
    ownCreates,
    ownClaimPatches,
    pass: decisions.policyPass,
    nextReadDelay: decisions.nextReadDelayMs,
    ...caches,
    client,
    profiles,
    source:
      cfg.usageSource === 'kubelet'
        ? new KubeletSummarySource({ kubelet: kubelet as KubeletClient, nodes: () => readyNodes(caches.nodes.list()), pods: () => caches.pods.list() })
        : cfg.usageSource === 'prometheus'
          ? new PrometheusSource({ url: cfg.prometheusUrl as string, matchers: cfg.prometheusMatchers })
          : undefined,
    samples,
    logger: logger.child({ controller: 'expansion-policy' }),
    metrics: createPolicyMetrics(metrics.registry),
    canWrite: () => manager.isLeader(),
    intervalMs: cfg.policyIntervalMs,
    writesClusterPolicyStatus: cfg.namespaceSelector === undefined,
  });
  // Every interval at the latest (sooner when a watched claim's next measurement is due: the
  // evaluator's requeueAfter), and when its watch says.
  const queue = addPassController(manager, metrics, logger, {
    name: 'expansion-policy',
    key: evaluateKey,
    reconcile: evaluator.reconcile,
    intervalMs: cfg.policyIntervalMs,
  });
  evaluator.watch((key) => queue.add(key));
}

/** The claim-ledger controller: one key per claim, every 10 min for all besides what wakes it (ClaimLedgerRecorder.watch). */
function addClaimLedgerController(w: Wiring): void {
  const { manager, caches, client, logger, profiles } = w;
  const { pvcs } = caches;
  const recorder = new ClaimLedgerRecorder({ client, pvcs, storageClasses: caches.storageClasses, logger, canWrite: () => manager.isLeader(), profiles });
  addKeyedController(w, workQueue(w, 'claim-ledger'), { reconciler: recorder, workers: 2, resyncPeriodMs: 10 * 60_000, listKeys: () => pvcs.keys() });
}

/**
 * A controller of one key per object: its reconciler, its workers, and a resync of every key it
 * lists; what wakes it besides is the reconciler's to say (its watch), given the queue.
 */
function addKeyedController(
  w: Wiring,
  queue: WorkQueue,
  c: { reconciler: { reconcile: Reconcile; watch: (wake: Wake) => void }; workers: number; resyncPeriodMs: number; listKeys: () => string[] },
): void {
  const { manager, metrics, logger } = w;
  const { reconciler, ...rest } = c;
  manager.addController(new Controller({ name: queue.name, queue, reconcile: reconciler.reconcile, logger, metrics: metrics.controller, ...rest }));
  reconciler.watch((key) => queue.add(key));
}

/** A controller's work queue, named as the controller is. */
const workQueue = (w: Wiring, name: string) => new WorkQueue({ name, metrics: w.metrics.workqueue });

/**
 * Request reconciles at once. Each mostly waits on the API server (a request's first one: its
 * status, its claim's patch, an Event, one after the other), so a burst of new requests is held by
 * how many wait at once, not by pvx's CPU (half a core through the burst): with 16, 1,000 requests
 * created at once queued up to 753 deep and were patched 3.4 s after pvx saw them on average; with
 * 64, 0.27 s, the queue 33 deep at most (bench/README.md, "2026-12-06: 64 request workers"). The
 * client's rate limit and the API server's priority and fairness still bound what reaches it.
 */
const requestWorkers = 64;

/** The request controller: one key per request, every 5 min for all besides what wakes it (ExpansionRequestReconciler.watch). */
function addExpansionRequestController(w: Wiring): void {
  const { manager, caches, client, metrics, logger, profiles, decisions, ownCreates, ownClaimPatches, recordNamespace } = w;
  const { requests } = caches;
  const queue = workQueue(w, 'expansion-request');
  const reconciler = new ExpansionRequestReconciler({
    ownCreates,
    ownClaimPatches,
    wakeAfter: (key, delayMs) => queue.addAfter(key, delayMs),
    decide: decisions.decideRequest,
    ...caches,
    ...(recordNamespace ? { recordNamespace } : {}),
    client,
    profiles,
    logger,
    canWrite: () => manager.isLeader(),
    metrics: createExpansionMetrics(metrics.registry, () => requests.list()),
  });
  addKeyedController(w, queue, { reconciler, workers: requestWorkers, resyncPeriodMs: 5 * 60_000, listKeys: () => requests.keys() });
}

/**
 * The record keeper: one key per StatefulSet record, every 10 min for all besides what wakes it
 * (StatefulSetRecordKeeper.watch). Only where pvx keeps records (the StatefulSet template opt-in).
 */
function addRecordKeeper(w: Wiring): void {
  const { manager, caches, client, logger, decisions } = w;
  const { records } = caches;
  if (!records) return;
  const keeper = new StatefulSetRecordKeeper({
    client,
    records,
    statefulSets: caches.statefulSets,
    requests: caches.requests,
    namespaces: caches.namespaces,
    logger,
    canWrite: () => manager.isLeader(),
    decide: decisions.decideRecord,
  });
  addKeyedController(w, workQueue(w, 'statefulset-records'), { reconciler: keeper, workers: 2, resyncPeriodMs: 10 * 60_000, listKeys: () => records.keys() });
}
