// `pvx run`: the operator process.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import pino, { type Logger } from 'pino';
import { isForbidden, isNotServed } from '../k8s/errors.ts';
import type { KubernetesObject, V1Namespace, V1Node, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1ResourceQuota, V1StatefulSet, V1StorageClass, V1VolumeAttributesClass } from '@kubernetes/client-node';
import type { ClusterVolumeExpansionPolicy } from '../crds/cluster-volume-expansion-policy.ts';
import type { VolumeExpansionPolicy } from '../crds/volume-expansion-policy.ts';
import { PolicyEvaluator, evaluateKey } from '../operator/reconcilers/expansion-policy.ts';
import { createAuditMetrics } from '../metrics/audit.ts';
import { createPolicyMetrics } from '../metrics/policy.ts';
import { AuditController, auditKey } from '../operator/reconcilers/audit.ts';
import { KubeletSummarySource, readyNodes } from '../usage/kubelet.ts';
import type { KubeletClient } from '../usage/kubelet-client.ts';
import { PrometheusSource } from '../usage/prometheus.ts';
import { SampleStore } from '../usage/samples.ts';
import type { Phase, VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import { clusterVolumeExpansionPolicies, namespaces, objectKey, resources, volumeExpansionPolicies, volumeExpansionRequests } from '../k8s/resources.ts';
import { createExpansionMetrics } from '../metrics/expansion.ts';
import { createRuntimeMetrics } from '../metrics/runtime.ts';
import { finishedPhases } from '../policies/request/phase.ts';
import { Controller, type Reconcile } from '../operator/controller.ts';
import { Manager } from '../operator/manager.ts';
import { parseListenAddress } from '../operator/http-endpoint.ts';
import { MetricsAuthorizer } from '../operator/metrics-auth.ts';
import { certificateDirectory, selfSignedSource } from '../operator/metrics-certs.ts';
import { requestLabels } from '../crds/keys.ts';
import { ClaimLedgerRecorder } from '../operator/reconcilers/claim-ledger.ts';
import { ExpansionRequestReconciler } from '../operator/reconcilers/expansion-request.ts';
import { driverProfiles, type DriverProfiles, type ModificationBudget } from '../policies/budget/drivers.ts';
import { insecureKubeletWarning, kubeletClient, kubeletFlags, kubeletHelp, type KubeletFlags } from './kubelet.ts';
import { modificationBudgetsFlag } from './options.ts';
import { commands, logLevels } from './commands.ts';
import { humanDuration, maxDurationMs, parseDuration } from '../policies/shared/duration.ts';
import type { KubeClient } from '../k8s/client.ts';
import { FencedKubeClient } from '../k8s/fenced-client.ts';
import { ThrottledKubeClient } from '../k8s/throttled-client.ts';
import { WorkQueue } from '../operator/workqueue.ts';
import { CommandFailure, UsageError } from './usage.ts';
import { explainClusterError } from './cluster-error.ts';
import { connect, kubeClients, type KubeClientChoice } from './connect.ts';

export const runHelp = `usage: pvx run [flags]

Runs the operator against the cluster of --kubeconfig ($KUBECONFIG, ~/.kube/config, or the
in-cluster service account).

  --kubeconfig PATH                   kubeconfig file (env KUBECONFIG)
  --kube-client auto|http|client-node how to talk to the API server (env PVX_KUBE_CLIENT; default auto: pvx's
                                      own HTTP client for static credentials — service account, certificates,
                                      token — and client-node for the rest: exec plugins, auth-providers, proxies)
  --namespace NS                      watch only this namespace (env PVX_NAMESPACE; default: all)
  --namespace-selector KEY=VALUE,...  handle only namespaces with these labels (env PVX_NAMESPACE_SELECTOR):
                                      instances with disjoint selectors, each with its own
                                      --leader-election-id, split a cluster between them
  --metrics-bind-address HOST:PORT    /metrics (env PVX_METRICS_BIND_ADDRESS; default :8443): HTTPS, each
                                      scraper's bearer token checked by TokenReview and SubjectAccessReview
                                      (get on the non-resource URL /metrics, ClusterRole pvx-metrics-reader)
  --metrics-secure=false              serve /metrics over plain HTTP, with no authentication
                                      (env PVX_METRICS_SECURE; default true)
  --metrics-cert-dir DIR              tls.crt and tls.key for /metrics, read again when they change
                                      (env PVX_METRICS_CERT_DIR; default: a self-signed certificate made at start)
  --health-probe-bind-address HOST:PORT
                                      /healthz, /readyz over plain HTTP (env PVX_HEALTH_PROBE_BIND_ADDRESS;
                                      default :8081)
  --leader-elect=false                disable leader election (single replica only)
  --leader-election-id NAME           Lease name (env PVX_LEADER_ELECTION_ID; default pvx-leader)
  --leader-election-namespace NS      Lease namespace (env PVX_LEADER_ELECTION_NAMESPACE; default: the pod's
                                      namespace in a cluster, else "default")
  --identity ID                       this replica's name in the Lease (env POD_NAME; default host-random)
  --log-level LEVEL                   trace|debug|info|warn|error (env PVX_LOG_LEVEL; default info)
  --enable-debug-endpoints            serve /debug/informers on the health probe address
  --drain-timeout SECONDS|DURATION    how long shutdown waits for reconciles in flight (default 30)
  --usage-source kubelet|prometheus|none
                                      where volume usage comes from for policies (default kubelet: read
                                      from each kubelet, needs nodes/stats get, see
                                      config/rbac/kubelet_usage_role.yaml)
${kubeletHelp(38)}
  --prometheus-url URL                with --usage-source prometheus (env PVX_PROMETHEUS_URL)
  --prometheus-matchers MATCHERS      extra label matchers, e.g. 'cluster="prod"' (env PVX_PROMETHEUS_MATCHERS)
  --kube-api-qps N                    API requests per second pvx sends at most, sustained (default 50)
  --kube-api-burst N                  API requests pvx may send at once above that (default 100)
  --policy-interval DURATION          the longest wait between two readings of usage and policy passes
                                      (default 30s); sooner just after the source's next measurement of a
                                      volume whose decision it may change
  --audit-interval DURATION           how often the audit rules run over the cluster (default 1m)
  --audit-stuck-after DURATION        a resize stage lasting longer is reported stuck (default 15m)
  --modification-budget DRIVER=COUNT/DURATION|DRIVER=none
                                      a CSI driver's modification budget per volume, in place of
                                      pvx's profile (ebs.csi.aws.com: 4/24h); none: no budget.
                                      Repeatable or comma-separated (env PVX_MODIFICATION_BUDGET)`;

export interface RunConfig {
  kubeconfig?: string;
  kubeClient: KubeClientChoice;
  namespace?: string;
  namespaceSelector?: Record<string, string>;
  /** --metrics-bind-address. */
  metricsListen: string;
  /** --metrics-secure: HTTPS and token review (true), or plain HTTP open to all (false). */
  metricsSecure: boolean;
  /** --metrics-cert-dir: tls.crt and tls.key; absent: self-signed at start. */
  metricsCertDir?: string;
  /** --health-probe-bind-address. */
  healthListen: string;
  leaderElect: boolean;
  leaderElectionId: string;
  leaderElectionNamespace: string;
  identity: string;
  logLevel: string;
  debugEndpoints: boolean;
  drainTimeoutMs: number;
  usageSource: 'kubelet' | 'prometheus' | 'none';
  prometheusUrl?: string;
  prometheusMatchers?: string;
  /** How the kubelet source reaches the kubelets. */
  kubelet?: KubeletFlags;
  policyIntervalMs: number;
  auditIntervalMs: number;
  auditStuckAfterMs: number;
  kubeApiQps: number;
  kubeApiBurst: number;
  /** --modification-budget: budgets by driver replacing the profiles' (null: none). */
  modificationBudgets: Record<string, ModificationBudget | null>;
}

const serviceAccountNamespace = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export function parseRunArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): RunConfig {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: commands.run.flags,
  });
  const kubeClient = values['kube-client'] ?? env.PVX_KUBE_CLIENT ?? 'auto';
  if (!(kubeClients as readonly string[]).includes(kubeClient)) throw new UsageError(`--kube-client must be one of ${kubeClients.join(', ')}, got "${kubeClient}"`);
  const leaderElect = values['leader-elect'];
  if (leaderElect !== 'true' && leaderElect !== 'false') throw new UsageError(`--leader-elect must be true or false, got "${leaderElect}"`);
  const metricsSecure = values['metrics-secure'] ?? env.PVX_METRICS_SECURE ?? 'true';
  if (metricsSecure !== 'true' && metricsSecure !== 'false') throw new UsageError(`--metrics-secure must be true or false, got "${metricsSecure}"`);
  const metricsCertDir = values['metrics-cert-dir'] ?? env.PVX_METRICS_CERT_DIR ?? undefined;
  if (metricsCertDir !== undefined && metricsSecure === 'false') throw new UsageError('--metrics-cert-dir is for HTTPS: it cannot go with --metrics-secure=false');
  const metricsListen = listenFlag('--metrics-bind-address', values['metrics-bind-address'] ?? env.PVX_METRICS_BIND_ADDRESS ?? ':8443');
  const healthListen = listenFlag('--health-probe-bind-address', values['health-probe-bind-address'] ?? env.PVX_HEALTH_PROBE_BIND_ADDRESS ?? ':8081');
  const logLevel = values['log-level'] ?? env.PVX_LOG_LEVEL ?? 'info';
  if (!(logLevels as readonly string[]).includes(logLevel)) throw new UsageError(`--log-level must be one of ${logLevels.join(', ')}, got "${logLevel}"`);
  const drainTimeoutMs = drainTimeoutFlag(values['drain-timeout']);
  const usageSource = values['usage-source'];
  if (usageSource !== 'kubelet' && usageSource !== 'prometheus' && usageSource !== 'none') {
    throw new UsageError(`--usage-source must be kubelet, prometheus or none, got "${usageSource}"`);
  }
  const prometheusUrl = values['prometheus-url'] ?? env.PVX_PROMETHEUS_URL;
  if (usageSource === 'prometheus' && !prometheusUrl) throw new UsageError('--usage-source prometheus needs --prometheus-url (or PVX_PROMETHEUS_URL)');
  const policyIntervalMs = durationFlag('--policy-interval', values['policy-interval'], { minMs: 1000, example: '30s' });
  const auditIntervalMs = durationFlag('--audit-interval', values['audit-interval'], { minMs: 1000, example: '1m' });
  const auditStuckAfterMs = durationFlag('--audit-stuck-after', values['audit-stuck-after'], { example: '15m' });
  const kubeApiQps = /^\d{1,6}(\.\d{1,3})?$/.test(values['kube-api-qps']) ? Number(values['kube-api-qps']) : NaN;
  if (!(kubeApiQps > 0)) throw new UsageError(`--kube-api-qps must be a number above 0 (e.g. 50), got "${values['kube-api-qps']}"`);
  const kubeApiBurst = /^\d{1,6}$/.test(values['kube-api-burst']) ? Number(values['kube-api-burst']) : NaN;
  if (!(kubeApiBurst >= 1)) throw new UsageError(`--kube-api-burst must be a whole number ≥ 1 (e.g. 100), got "${values['kube-api-burst']}"`);
  const namespaceSelector = selectorFlag(values['namespace-selector'] ?? env.PVX_NAMESPACE_SELECTOR);
  const namespace = values.namespace ?? env.PVX_NAMESPACE ?? undefined;
  if (namespace && namespaceSelector) throw new UsageError('--namespace and --namespace-selector exclude each other: give one');
  const inClusterNamespace = existsSync(serviceAccountNamespace) ? readFileSync(serviceAccountNamespace, 'utf8').trim() : undefined;
  return {
    kubeconfig: values.kubeconfig ?? env.KUBECONFIG,
    kubeClient: kubeClient as KubeClientChoice,
    namespace,
    ...(namespaceSelector ? { namespaceSelector } : {}),
    metricsListen,
    metricsSecure: metricsSecure === 'true',
    ...(metricsCertDir !== undefined ? { metricsCertDir } : {}),
    healthListen,
    leaderElect: leaderElect === 'true',
    leaderElectionId: values['leader-election-id'] ?? env.PVX_LEADER_ELECTION_ID ?? 'pvx-leader',
    leaderElectionNamespace: values['leader-election-namespace'] ?? env.PVX_LEADER_ELECTION_NAMESPACE ?? env.POD_NAMESPACE ?? inClusterNamespace ?? 'default',
    identity: values.identity ?? env.POD_NAME ?? `${hostname()}-${randomBytes(4).toString('hex')}`,
    logLevel,
    debugEndpoints: values['enable-debug-endpoints'] ?? false,
    drainTimeoutMs,
    usageSource,
    prometheusUrl,
    prometheusMatchers: values['prometheus-matchers'] ?? env.PVX_PROMETHEUS_MATCHERS,
    ...(usageSource === 'kubelet' ? { kubelet: kubeletFlags(values, env) } : {}),
    policyIntervalMs,
    auditIntervalMs,
    auditStuckAfterMs,
    kubeApiQps,
    kubeApiBurst,
    modificationBudgets: modificationBudgetsFlag(values['modification-budget'], env.PVX_MODIFICATION_BUDGET),
  };
}

const labelKey = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const labelValue = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** --namespace-selector: comma-separated key=value pairs, each a valid label; undefined when not given. */
function selectorFlag(text: string | undefined): Record<string, string> | undefined {
  if (text === undefined) return undefined;
  const pairs = text.split(',').map((p) => p.trim().split('='));
  const bad = pairs.find((p) => p.length !== 2 || !labelKey.test(p[0] as string) || !labelValue.test(p[1] as string));
  if (!text.trim() || bad) throw new UsageError(`--namespace-selector must be label pairs such as pvx.dev/shard=a,tier=db, got "${text}"`);
  return Object.fromEntries(pairs as [string, string][]);
}

/** A listen address flag, checked at parse time so a typo is a usage error, not a failed start. */
function listenFlag(flag: string, text: string): string {
  try {
    parseListenAddress(text);
  } catch {
    throw new UsageError(`${flag} must be host:port or :port (e.g. 127.0.0.1:8443 or :8443), got "${text}"`);
  }
  return text;
}

/**
 * A duration flag in ms: a duration such as 30s or 1h30m, positive, at least minMs when given.
 * Anything else (a number without a unit, a sign, a fraction, Infinity) is refused in one line.
 */
function durationFlag(flag: string, text: string | undefined, opts: { minMs?: number; example: string }): number {
  const ms = parseDuration(text ?? '');
  const atLeast = opts.minMs === undefined ? 'a positive duration' : `a duration of at least ${humanDuration(opts.minMs)}`;
  if (ms === undefined || ms <= 0 || ms < (opts.minMs ?? 0)) throw new UsageError(`${flag} must be ${atLeast} (e.g. ${opts.example}), got "${text}"`);
  return ms;
}

/** --drain-timeout in ms: whole or decimal seconds (30, 2.5), as it always took, or a duration (1m). 0 means do not wait. */
function drainTimeoutFlag(text: string | undefined): number {
  const ms = /^\d+(\.\d+)?$/.test(text ?? '') ? Number(text) * 1000 : parseDuration(text ?? '');
  if (ms === undefined || !(ms <= maxDurationMs)) throw new UsageError(`--drain-timeout must be seconds (e.g. 30) or a duration (e.g. 1m), got "${text}"`);
  return ms;
}

/** pvx's kinds must be served before its caches can sync; say so plainly when they are not. */
export async function checkCRDs(client: KubeClient, namespace?: string): Promise<void> {
  for (const type of [volumeExpansionRequests, volumeExpansionPolicies, clusterVolumeExpansionPolicies]) {
    const where = type.namespaced && namespace ? { namespace } : {};
    try {
      await client.list(type, { limit: 1, ...where });
    } catch (err) {
      if (isNotServed(err)) {
        throw new CommandFailure(`the ${type.kind} CRD (${type.resource}.${type.group}) is not installed in this cluster: run \`pvx install-crds\` or \`kubectl apply -f config/crd/\``);
      }
      if (isForbidden(err)) {
        throw new CommandFailure(`not allowed to list ${type.resource}.${type.group}${where.namespace ? ` in namespace ${where.namespace}` : ''}: ${(err as Error).message}`);
      }
      throw err;
    }
  }
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
    logger.warn({ err: (err as Error).message }, 'cannot list VolumeAttributesClasses (not served before Kubernetes 1.34, or not allowed): requests that name one are rejected');
    return false;
  }
}

/** What the cluster offers that pvx adapts to (see readsVolumeAttributesClasses). */
export interface ClusterFeatures {
  volumeAttributesClasses: boolean;
}

/**
 * Builds the operator; the caller starts it. Reconcilers register here as they are added. The
 * kubelet usage source reads the kubelets through `kubelet` (not the API server, so neither the
 * client's rate limit nor the lease fence applies to it).
 */
export function buildManager(cfg: RunConfig, logger: Logger, api: KubeClient, features: ClusterFeatures = { volumeAttributesClasses: true }, kubelet?: KubeletClient): Manager {
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
              certificates: cfg.metricsCertDir ? certificateDirectory(cfg.metricsCertDir) : selfSignedSource(),
              authorizer: new MetricsAuthorizer({ client, logger: logger.child({ component: 'metrics-auth' }) }),
            },
          }
        : {}),
    },
    debugEndpoints: cfg.debugEndpoints,
    drainTimeoutMs: cfg.drainTimeoutMs,
    leaderElection: cfg.leaderElect ? { namespace: cfg.leaderElectionNamespace, name: cfg.leaderElectionId, identity: cfg.identity } : undefined,
  });
  const caches = sharedCaches(manager, features);
  // The controllers write through the lease fence, checked at each write; the manager and its
  // leader election keep the raw client (the lease calls are how the fence opens).
  const fenced = new FencedKubeClient(client, { canWrite: () => manager.isLeader() });
  // One set of driver profiles for every decision: the request's validation and phase, the
  // policies, the audit and the claim ledger all count a budget the same way.
  const profiles = driverProfiles(cfg.modificationBudgets);
  const wiring: Wiring = { manager, caches, client: fenced, metrics, logger, profiles, kubelet };
  addExpansionRequestController(wiring);
  addClaimLedgerController(wiring);
  // The evaluator's usage samples also tell the audit which volumes are nearly full.
  const samples = new SampleStore();
  addPolicyEvaluator(wiring, cfg, samples);
  addAuditController(wiring, cfg, cfg.usageSource === 'none' ? undefined : samples);
  return manager;
}

/** Every kind pvx reads, one cache each, shared by the controllers (each takes the ones it needs). */
function sharedCaches(manager: Manager, features: ClusterFeatures) {
  return {
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
}

function addAuditController(w: Wiring, cfg: RunConfig, samples: SampleStore | undefined): void {
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
    new Controller({ name: pass.name, queue, reconcile: pass.reconcile, logger, metrics: metrics.controller, workers: 1, resyncPeriodMs: pass.intervalMs * 4, listKeys: () => [pass.key] }),
  );
  queue.add(pass.key);
  return queue;
}

function addPolicyEvaluator(w: Wiring, cfg: RunConfig, samples: SampleStore): void {
  const { manager, caches, client, metrics, logger, profiles, kubelet } = w;
  const evaluator = new PolicyEvaluator({
    ...caches,
    client,
    profiles,
    source:
      cfg.usageSource === 'kubelet'
        ? new KubeletSummarySource({ kubelet: kubelet as KubeletClient, nodes: () => readyNodes(caches.nodes.list()) })
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
  // evaluator's requeueAfter), and at once when a policy's spec changes.
  const queue = addPassController(manager, metrics, logger, { name: 'expansion-policy', key: evaluateKey, reconcile: evaluator.reconcile, intervalMs: cfg.policyIntervalMs });
  const specChanged = { onAdd: () => queue.add(evaluateKey), onUpdate: (o: KubernetesObject, n: KubernetesObject) => o.metadata?.generation !== n.metadata?.generation && queue.add(evaluateKey) };
  caches.policies.on(specChanged);
  caches.clusterPolicies.on(specChanged);
}

/**
 * The claim-ledger controller: one key per claim, queued when a claim's size, class, ledger or
 * binding changes (a resize's status updates are not worth a look), and every 10 min for all.
 */
function addClaimLedgerController(w: Wiring): void {
  const { manager, caches, client, metrics, logger, profiles } = w;
  const { pvcs } = caches;
  const recorder = new ClaimLedgerRecorder({ client, pvcs, storageClasses: caches.storageClasses, logger, canWrite: () => manager.isLeader(), profiles });
  const queue = new WorkQueue({ name: 'claim-ledger', metrics: metrics.workqueue });
  manager.addController(new Controller({ name: 'claim-ledger', queue, reconcile: recorder.reconcile, logger, metrics: metrics.controller, workers: 2, resyncPeriodMs: 10 * 60_000, listKeys: () => pvcs.keys() }));
  pvcs.on({
    onAdd: (pvc) => queue.add(objectKey(pvc)),
    onUpdate: (old, pvc) => ClaimLedgerRecorder.worthALook(old, pvc) && queue.add(objectKey(pvc)),
    onDelete: (pvc) => queue.add(objectKey(pvc)),
  });
}

function addExpansionRequestController(w: Wiring): void {
  const { manager, caches, client, metrics, logger, profiles } = w;
  const { requests } = caches;
  const reconciler = new ExpansionRequestReconciler({
    ...caches,
    client,
    profiles,
    logger,
    canWrite: () => manager.isLeader(),
    metrics: createExpansionMetrics(metrics.registry, () => requests.list()),
  });
  const queue = new WorkQueue({ name: 'expansion-request', metrics: metrics.workqueue });
  manager.addController(
    new Controller({
      name: 'expansion-request',
      queue,
      reconcile: reconciler.reconcile,
      logger,
      metrics: metrics.controller,
      workers: 4,
      resyncPeriodMs: 5 * 60_000,
      listKeys: () => requests.keys(),
    }),
  );
  // Level-triggered: every event only enqueues the request keys it may concern.
  const enqueue = (obj: VolumeExpansionRequest) => {
    queue.add(objectKey(obj));
    // A StatefulSet request sums up its per-PVC children.
    const parent = obj.metadata.labels?.[requestLabels.parent];
    if (parent) queue.add(`${obj.metadata.namespace}/${parent}`);
    // A finished request frees its PVC for the next one waiting its turn.
    const pvcName = obj.spec?.target?.pvcName;
    if (pvcName && finishedPhases.has(obj.status?.phase as Phase)) for (const k of reconciler.requestsFor(obj.metadata.namespace ?? '', pvcName)) queue.add(k);
  };
  requests.on({ onAdd: enqueue, onUpdate: (_o, n) => enqueue(n) });
  const claimChanged = (pvc: V1PersistentVolumeClaim) => {
    for (const k of reconciler.requestsFor(pvc.metadata?.namespace ?? '', pvc.metadata?.name ?? '')) queue.add(k);
  };
  caches.pvcs.on({ onAdd: claimChanged, onUpdate: (_o, n) => claimChanged(n), onDelete: claimChanged });
  const podChanged = (pod: V1Pod) => {
    for (const v of pod.spec?.volumes ?? []) {
      const claim = v.persistentVolumeClaim?.claimName;
      if (claim) for (const k of reconciler.requestsFor(pod.metadata?.namespace ?? '', claim)) queue.add(k);
    }
  };
  caches.pods.on({ onAdd: podChanged, onUpdate: (_o, n) => podChanged(n), onDelete: podChanged });
  // A request waiting for its VolumeAttributesClass to appear goes on as soon as it does.
  const classAdded = (vac: V1VolumeAttributesClass) => {
    for (const r of requests.list()) {
      if (r.spec?.volumeAttributesClassName === vac.metadata?.name && !finishedPhases.has(r.status?.phase as Phase)) queue.add(objectKey(r));
    }
  };
  caches.volumeAttributesClasses?.on({ onAdd: classAdded });
}

export async function run(argv: string[]): Promise<number> {
  const cfg = parseRunArgs(argv);
  const logger = pino({ level: cfg.logLevel, base: { identity: cfg.identity } });
  const { client, server, adapter, fallbackReason, kubelet: kubeletAccess } = await connect(cfg.kubeconfig, cfg.kubeClient);
  if (fallbackReason) logger.info({ reason: fallbackReason }, 'talking to the API server through client-node');
  if (cfg.kubelet?.insecureTLS) logger.warn(insecureKubeletWarning);
  const kubelet = cfg.kubelet ? kubeletClient(cfg.kubelet, kubeletAccess) : undefined;
  // Unreachable or refusing at start: one sentence naming the server (the pod restarts with backoff), not a stack.
  await checkCRDs(client, cfg.namespace).catch((err: unknown) => {
    throw err instanceof CommandFailure ? err : explainClusterError(err, server);
  });
  const volumeAttributesClasses = await readsVolumeAttributesClasses(client, logger).catch((err: unknown) => {
    throw explainClusterError(err, server);
  });
  const manager = buildManager(cfg, logger, client, { volumeAttributesClasses }, kubelet);

  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection (kept running)'));
  process.on('uncaughtException', (err) => logger.error({ err }, 'uncaught exception (kept running)'));

  let signals = 0;
  const done = new Promise<number>((resolve) => {
    const onSignal = (sig: NodeJS.Signals) => {
      signals++;
      if (signals > 1) {
        logger.warn({ signal: sig }, 'second signal: exiting now');
        process.exit(1);
      }
      logger.info({ signal: sig }, 'shutting down: draining reconciles, releasing the lease');
      manager.stop().then(
        () => {
          kubelet?.close();
          resolve(0);
        },
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  await manager.start();
  logger.info({ namespace: cfg.namespace ?? '(all)', server, kubeClient: adapter, leaderElection: cfg.leaderElect ? `${cfg.leaderElectionNamespace}/${cfg.leaderElectionId}` : 'off' }, 'pvx started');
  return done;
}
