// `pvx run`: the command that starts the operator — its flags, read into a RunConfig, then the
// connection and the start. What it starts is built in src/operator/wiring.ts.
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { isForbidden, isNotServed } from '../k8s/errors.ts';
import { clusterVolumeExpansionPolicies, volumeExpansionPolicies, volumeExpansionRequests } from '../k8s/resources.ts';
import { parseListenAddress } from '../operator/endpoints/http-endpoint.ts';
import { buildManager, keepsStatefulSetRecords, readsVolumeAttributesClasses, type OperatorConfig } from '../operator/wiring.ts';
import { insecureKubeletWarning, kubeletClient, kubeletFlags, kubeletHelp, type KubeletFlags } from './kubelet.ts';
import { MintedKubeletCredentials, type KubeletIdentity } from '../usage/kubelet-identity.ts';
import { kubeletReader } from '../k8s/rbac.ts';
import { maxVolumeSizesFlag, modificationBudgetsFlag } from './options.ts';
import { profiledBudgets, profiledDrivers } from '../policies/budget/drivers.ts';
import { commands, logLevels } from './commands.ts';
import { runDefaults } from '../crds/defaults.ts';
import { humanDuration, maxDurationMs, parseDuration } from '../policies/shared/duration.ts';
import type { KubeClient } from '../k8s/client.ts';
import { CommandFailure, UsageError } from './errors.ts';
import { explainClusterError } from './cluster-error.ts';
import { connect, kubeClients, type KubeClientChoice } from './connect.ts';

const d = runDefaults;

export const runHelp = `usage: pvx run [flags]

Runs the operator against the cluster of --kubeconfig ($KUBECONFIG, ~/.kube/config, or the
in-cluster service account).

  --kubeconfig PATH                   kubeconfig file (env KUBECONFIG)
  --kube-client auto|http|client-node how to talk to the API server (env PVX_KUBE_CLIENT; default ${d['kube-client']}: pvx's
                                      own HTTP client for static credentials — service account, certificates,
                                      token — and client-node for the rest: exec plugins, auth-providers, SOCKS)
  --namespace NS                      watch only this namespace (env PVX_NAMESPACE; default: all)
  --namespace-selector KEY=VALUE,...  handle only namespaces with these labels (env PVX_NAMESPACE_SELECTOR):
                                      instances with disjoint selectors, each with its own
                                      --leader-election-id, split a cluster between them
  --metrics-bind-address HOST:PORT    /metrics (env PVX_METRICS_BIND_ADDRESS; default ${d['metrics-bind-address']}): HTTPS, each
                                      scraper's bearer token checked by TokenReview and SubjectAccessReview
                                      (get on the non-resource URL /metrics, ClusterRole pvx-metrics-reader)
  --metrics-secure=false              serve /metrics over plain HTTP, with no authentication
                                      (env PVX_METRICS_SECURE; default ${d['metrics-secure']})
  --metrics-cert-dir DIR              tls.crt and tls.key for /metrics, read again when they change
                                      (env PVX_METRICS_CERT_DIR; default: a self-signed certificate made at start)
  --health-probe-bind-address HOST:PORT
                                      /healthz, /readyz over plain HTTP (env PVX_HEALTH_PROBE_BIND_ADDRESS;
                                      default ${d['health-probe-bind-address']})
  --leader-elect=false                disable leader election (single replica only)
  --leader-election-id NAME           Lease name (env PVX_LEADER_ELECTION_ID; default ${d['leader-election-id']})
  --leader-election-namespace NS      Lease namespace (env PVX_LEADER_ELECTION_NAMESPACE; default: the pod's
                                      namespace in a cluster, else "default")
  --identity ID                       this replica's name in the Lease (env POD_NAME; default host-random)
  --log-level LEVEL                   trace|debug|info|warn|error (env PVX_LOG_LEVEL; default ${d['log-level']})
  --enable-debug-endpoints            serve /debug/informers on the health probe address (loopback peers only)
  --drain-timeout SECONDS|DURATION    how long shutdown waits for reconciles in flight (default ${d['drain-timeout']})
  --usage-source kubelet|prometheus|none
                                      where volume usage comes from for policies (default ${d['usage-source']}: read
                                      from each kubelet as --kubelet-identity, see
                                      config/rbac/kubelet_usage_role.yaml)
  --kubelet-identity [NAMESPACE/]NAME the ServiceAccount pvx reads the kubelets as: it may get
                                      nodes/stats only, and pvx sends the kubelets only tokens
                                      minted for it, never its own (env PVX_KUBELET_IDENTITY;
                                      default ${kubeletReader} in pvx's namespace)
${kubeletHelp(38)}
  --prometheus-url URL                with --usage-source prometheus (env PVX_PROMETHEUS_URL)
  --prometheus-matchers MATCHERS      extra label matchers, e.g. 'cluster="prod"' (env PVX_PROMETHEUS_MATCHERS)
  --kube-api-qps N                    API requests per second pvx sends at most, sustained (default ${d['kube-api-qps']})
  --kube-api-burst N                  API requests pvx may send at once above that (default ${d['kube-api-burst']})
  --policy-interval DURATION          the longest wait between two readings of usage and policy passes
                                      (default ${d['policy-interval']}); sooner just after the source's next measurement of a
                                      volume whose decision it may change
  --audit-interval DURATION           how often the audit rules run over the cluster (default ${d['audit-interval']})
  --audit-stuck-after DURATION        a resize stage lasting longer is reported stuck (default ${d['audit-stuck-after']})
  --modification-budget DRIVER=COUNT/DURATION[:performance]|DRIVER=none
                                      a CSI driver's modification budget per volume, in place of
                                      pvx's profile (${profiledBudgets}); :performance counts
                                      VolumeAttributesClass changes only; none: no budget.
                                      Repeatable or comma-separated (env PVX_MODIFICATION_BUDGET)
  --max-volume-size DRIVER=SIZE|DRIVER=class-parameter:NAME
                                      the largest volume a CSI driver makes, for every class or as
                                      each class's parameter NAME says; a request above it is
                                      refused before anything is written (built in: ${profiledDrivers.join(', ')}
                                      by volume type or SKU). Repeatable or comma-separated (env
                                      PVX_MAX_VOLUME_SIZE)`;

/** `pvx run`'s flags: the operator's configuration, and how it reaches the cluster and logs. */
export interface RunConfig extends OperatorConfig {
  kubeconfig?: string;
  kubeClient: KubeClientChoice;
  logLevel: string;
  /** How the kubelet source reaches the kubelets. */
  kubelet?: KubeletFlags;
  /** Who the kubelet source reads the kubelets as (with the kubelet source only). */
  kubeletIdentity?: KubeletIdentity;
}

const serviceAccountNamespace = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

export function parseRunArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): RunConfig {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: commands.run.flags,
  });
  const kubeClient = values['kube-client'] ?? env.PVX_KUBE_CLIENT ?? runDefaults['kube-client'];
  if (!(kubeClients as readonly string[]).includes(kubeClient))
    throw new UsageError(`--kube-client must be one of ${kubeClients.join(', ')}, got "${kubeClient}"`);
  const leaderElect = values['leader-elect'];
  if (leaderElect !== 'true' && leaderElect !== 'false') throw new UsageError(`--leader-elect must be true or false, got "${leaderElect}"`);
  const metricsSecure = values['metrics-secure'] ?? env.PVX_METRICS_SECURE ?? runDefaults['metrics-secure'];
  if (metricsSecure !== 'true' && metricsSecure !== 'false') throw new UsageError(`--metrics-secure must be true or false, got "${metricsSecure}"`);
  const metricsCertDir = values['metrics-cert-dir'] ?? env.PVX_METRICS_CERT_DIR ?? undefined;
  if (metricsCertDir !== undefined && metricsSecure === 'false')
    throw new UsageError('--metrics-cert-dir is for HTTPS: it cannot go with --metrics-secure=false');
  const metricsListen = listenFlag(
    '--metrics-bind-address',
    values['metrics-bind-address'] ?? env.PVX_METRICS_BIND_ADDRESS ?? runDefaults['metrics-bind-address'],
  );
  const healthListen = listenFlag(
    '--health-probe-bind-address',
    values['health-probe-bind-address'] ?? env.PVX_HEALTH_PROBE_BIND_ADDRESS ?? runDefaults['health-probe-bind-address'],
  );
  const logLevel = values['log-level'] ?? env.PVX_LOG_LEVEL ?? runDefaults['log-level'];
  if (!(logLevels as readonly string[]).includes(logLevel)) throw new UsageError(`--log-level must be one of ${logLevels.join(', ')}, got "${logLevel}"`);
  const drainTimeoutMs = drainTimeoutFlag(values['drain-timeout']);
  const usageSource = values['usage-source'];
  if (usageSource !== 'kubelet' && usageSource !== 'prometheus' && usageSource !== 'none') {
    throw new UsageError(`--usage-source must be kubelet, prometheus or none, got "${usageSource}"`);
  }
  const prometheusUrl = values['prometheus-url'] ?? env.PVX_PROMETHEUS_URL;
  if (usageSource === 'prometheus' && !prometheusUrl) throw new UsageError('--usage-source prometheus needs --prometheus-url (or PVX_PROMETHEUS_URL)');
  const policyIntervalMs = durationFlag('--policy-interval', values['policy-interval'], { minMs: 1000, example: runDefaults['policy-interval'] });
  const auditIntervalMs = durationFlag('--audit-interval', values['audit-interval'], { minMs: 1000, example: runDefaults['audit-interval'] });
  const auditStuckAfterMs = durationFlag('--audit-stuck-after', values['audit-stuck-after'], { example: runDefaults['audit-stuck-after'] });
  const kubeApiQps = /^\d{1,6}(\.\d{1,3})?$/.test(values['kube-api-qps']) ? Number(values['kube-api-qps']) : NaN;
  if (!(kubeApiQps > 0)) throw new UsageError(`--kube-api-qps must be a number above 0 (e.g. 500), got "${values['kube-api-qps']}"`);
  const kubeApiBurst = /^\d{1,6}$/.test(values['kube-api-burst']) ? Number(values['kube-api-burst']) : NaN;
  if (!(kubeApiBurst >= 1)) throw new UsageError(`--kube-api-burst must be a whole number ≥ 1 (e.g. 100), got "${values['kube-api-burst']}"`);
  const namespaceSelector = selectorFlag(values['namespace-selector'] ?? env.PVX_NAMESPACE_SELECTOR);
  const namespace = values.namespace ?? env.PVX_NAMESPACE ?? undefined;
  if (namespace && namespaceSelector) throw new UsageError('--namespace and --namespace-selector exclude each other: give one');
  const inClusterNamespace = existsSync(serviceAccountNamespace) ? readFileSync(serviceAccountNamespace, 'utf8').trim() : undefined;
  // In a pod, pvx's namespace: the chart and config/ put the Service pvx-metrics there.
  const ownNamespace = env.POD_NAMESPACE ?? inClusterNamespace;
  const leaderElectionNamespace = values['leader-election-namespace'] ?? env.PVX_LEADER_ELECTION_NAMESPACE ?? ownNamespace ?? 'default';
  return {
    kubeconfig: values.kubeconfig ?? env.KUBECONFIG,
    kubeClient: kubeClient as KubeClientChoice,
    namespace,
    ...(namespaceSelector ? { namespaceSelector } : {}),
    metricsListen,
    metricsSecure: metricsSecure === 'true',
    ...(metricsCertDir !== undefined ? { metricsCertDir } : {}),
    ...(ownNamespace ? { metricsService: { name: 'pvx-metrics', namespace: ownNamespace } } : {}),
    healthListen,
    leaderElect: leaderElect === 'true',
    leaderElectionId: values['leader-election-id'] ?? env.PVX_LEADER_ELECTION_ID ?? runDefaults['leader-election-id'],
    leaderElectionNamespace,
    identity: values.identity ?? env.POD_NAME ?? `${hostname()}-${randomBytes(4).toString('hex')}`,
    logLevel,
    debugEndpoints: values['enable-debug-endpoints'] ?? false,
    drainTimeoutMs,
    usageSource,
    prometheusUrl,
    prometheusMatchers: values['prometheus-matchers'] ?? env.PVX_PROMETHEUS_MATCHERS,
    ...(usageSource === 'kubelet'
      ? {
          kubelet: kubeletFlags(values, env),
          kubeletIdentity: kubeletIdentityFlag(values['kubelet-identity'] ?? env.PVX_KUBELET_IDENTITY, ownNamespace ?? leaderElectionNamespace),
        }
      : {}),
    policyIntervalMs,
    auditIntervalMs,
    auditStuckAfterMs,
    kubeApiQps,
    kubeApiBurst,
    modificationBudgets: modificationBudgetsFlag(values['modification-budget'], env.PVX_MODIFICATION_BUDGET),
    maxVolumeSizes: maxVolumeSizesFlag(values['max-volume-size'], env.PVX_MAX_VOLUME_SIZE),
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

/** --kubelet-identity: NAME (in pvx's namespace) or NAMESPACE/NAME, each a DNS label as ServiceAccount names and namespaces are. */
function kubeletIdentityFlag(text: string | undefined, ownNamespace: string): KubeletIdentity {
  const parts = (text || kubeletReader).split('/');
  const [namespace, name] = parts.length === 1 ? [ownNamespace, parts[0]] : parts;
  const label = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
  const subdomain = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
  if (parts.length > 2 || !label.test(namespace ?? '') || !subdomain.test(name ?? ''))
    throw new UsageError(`--kubelet-identity must be a ServiceAccount as NAME or NAMESPACE/NAME, got "${text}"`);
  return { namespace: namespace as string, name: name as string };
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
        throw new CommandFailure(
          `the ${type.kind} CRD (${type.resource}.${type.group}) is not installed in this cluster: run \`pvx install-crds\` or \`kubectl apply -f config/crd/\``,
        );
      }
      if (isForbidden(err)) {
        throw new CommandFailure(
          `not allowed to list ${type.resource}.${type.group}${where.namespace ? ` in namespace ${where.namespace}` : ''}: ${(err as Error).message}`,
        );
      }
      throw err;
    }
  }
}

export async function run(argv: string[]): Promise<number> {
  const cfg = parseRunArgs(argv);
  const logger = pino({ level: cfg.logLevel, base: { identity: cfg.identity } });
  const { client, server, adapter, fallbackReason, kubelet: kubeletAccess } = await connect(cfg.kubeconfig, cfg.kubeClient);
  if (fallbackReason) logger.info({ reason: fallbackReason }, 'talking to the API server through client-node');
  if (cfg.kubelet?.insecureTLS) logger.warn(insecureKubeletWarning);
  // The kubelets get tokens of the reader alone (kubelet-identity.ts): never the one that writes.
  const reader = cfg.kubeletIdentity ? new MintedKubeletCredentials({ client, identity: cfg.kubeletIdentity }) : undefined;
  const kubelet =
    cfg.kubelet && reader
      ? kubeletClient(cfg.kubelet, { credentials: reader.credentials, ...(kubeletAccess.clusterCa ? { clusterCa: kubeletAccess.clusterCa } : {}) })
      : undefined;
  if (cfg.kubeletIdentity)
    logger.info(
      { serviceAccount: `${cfg.kubeletIdentity.namespace}/${cfg.kubeletIdentity.name}` },
      'reading the kubelets with tokens minted for this ServiceAccount',
    );
  // Unreachable or refusing at start: one sentence naming the server (the pod restarts with backoff), not a stack.
  await checkCRDs(client, cfg.namespace).catch((err: unknown) => {
    throw err instanceof CommandFailure ? err : explainClusterError(err, server);
  });
  const features = await Promise.all([
    readsVolumeAttributesClasses(client, logger),
    keepsStatefulSetRecords(client, cfg.leaderElectionNamespace, logger),
  ]).catch((err: unknown) => {
    throw explainClusterError(err, server);
  });
  const manager = buildManager(cfg, logger, client, { volumeAttributesClasses: features[0], statefulSetRecords: features[1] }, kubelet);

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
  logger.info(
    {
      namespace: cfg.namespace ?? '(all)',
      server,
      kubeClient: adapter,
      leaderElection: cfg.leaderElect ? `${cfg.leaderElectionNamespace}/${cfg.leaderElectionId}` : 'off',
    },
    'pvx started',
  );
  return done;
}
