// Owns the runtime's moving parts and their order: caches start on every replica (a standby is
// warm), controllers only on the leader; shutdown stops intake, drains reconciles in flight,
// releases the lease (so a standby takes over at once), then stops the caches and the server.
//
// A leader that loses its lease exits (as controller-runtime does): writes are already fenced at
// the renew deadline, and a fresh process rejoins as a standby with fresh state.
import type { KubernetesObject, V1Namespace } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeClient } from '../../k8s/client.ts';
import { namespaces, type ResourceType } from '../../k8s/resources.ts';
import { matchesLabels } from '../../policies/shared/labels.ts';
import type { RuntimeMetrics } from '../../metrics/runtime.ts';
import type { Controller } from './controller.ts';
import { startHealthServer } from '../endpoints/health.ts';
import type { Endpoint } from '../endpoints/http-endpoint.ts';
import { startMetricsServer, type MetricsEndpointOptions } from '../endpoints/metrics-server.ts';
import { Informer, type InformerOptions } from '../../k8s/informer.ts';
import { LeaderElector } from './leader.ts';

export interface ManagerOptions {
  client: KubeClient;
  logger: Logger;
  metrics: RuntimeMetrics;
  /** Watch only this namespace (namespaced kinds); default all. */
  namespace?: string;
  /**
   * Handle only the namespaces whose labels match (matchLabels semantics): several instances, each
   * with its own Lease, split a cluster between them. Namespaced objects of other namespaces are
   * never cached; a namespace that gains or loses the labels is taken up or dropped as it happens.
   */
  namespaceSelector?: Record<string, string>;
  /** host:port for /healthz, /readyz (and /debug/informers), plain HTTP for the kubelet's probes. */
  healthListen: string;
  /** Where and how /metrics is served: HTTPS behind token review, or (secure absent) plain HTTP. */
  metricsEndpoint: Pick<MetricsEndpointOptions, 'listen' | 'secure'>;
  debugEndpoints?: boolean;
  leaderElection?: { namespace: string; name: string; identity: string };
  /** How long shutdown waits for reconciles in flight. Default 30 s. */
  drainTimeoutMs?: number;
  /** Called when leadership is lost; default exits the process with code 1. */
  onLeadershipLost?: () => void;
  informerDefaults?: Partial<InformerOptions>;
}

export class Manager {
  private readonly o: ManagerOptions;
  private readonly informers = new Map<string, Informer>();
  private readonly controllers: Controller[] = [];
  private elector: LeaderElector | undefined;
  private health: Endpoint | undefined;
  private metricsEndpoint: Endpoint | undefined;
  private leading = false;
  private stopping: Promise<void> | undefined;

  constructor(opts: ManagerOptions) {
    const drain = opts.drainTimeoutMs;
    if (drain !== undefined && !(Number.isFinite(drain) && drain >= 0)) throw new TypeError(`drainTimeoutMs must be a finite number of ms ≥ 0, got ${drain}`);
    this.o = opts;
  }

  /** The shared cache of a kind (created on first use). */
  /**
   * The cache of one kind, shared by the controllers that read it: of the namespaces pvx handles
   * (--namespace, --namespace-selector), or — `own` — of one namespace of pvx's own (its records),
   * with a label selector, whatever namespaces it handles.
   */
  informer<T extends KubernetesObject = KubernetesObject>(type: ResourceType, own?: { namespace: string; labelSelector: string }): Informer<T> {
    let inf = this.informers.get(type.resource);
    if (!inf) {
      const selecting = type.namespaced && this.o.namespaceSelector !== undefined && !own;
      inf = new Informer({
        type,
        client: this.o.client,
        logger: this.o.logger.child({ informer: type.resource }),
        metrics: this.o.metrics.informer,
        namespace: own ? own.namespace : type.namespaced ? this.o.namespace : undefined,
        ...(own ? { labelSelector: own.labelSelector } : {}),
        ...(selecting ? { accept: (obj: KubernetesObject) => this.selectedNamespaces.has(obj.metadata?.namespace ?? '') } : {}),
        ...this.o.informerDefaults,
      });
      this.informers.set(type.resource, inf);
      if (selecting) {
        this.selecting.add(inf);
        this.followNamespaceSelection();
      }
    }
    return inf as unknown as Informer<T>;
  }

  /** The namespaces --namespace-selector picks, kept current from the namespaces' cache. */
  private readonly selectedNamespaces = new Set<string>();
  /** The caches that keep the selected namespaces' objects only. */
  private readonly selecting = new Set<Informer>();
  private followingSelection = false;

  private followNamespaceSelection(): void {
    if (this.followingSelection) return;
    this.followingSelection = true;
    const namespacesCache = this.informer<V1Namespace>(namespaces);
    const reselect = () => {
      const now = new Set(
        namespacesCache
          .list()
          .filter((n) => matchesLabels(this.o.namespaceSelector, n.metadata?.labels))
          .map((n) => n.metadata?.name as string),
      );
      const added = [...now].some((n) => !this.selectedNamespaces.has(n));
      const removed = [...this.selectedNamespaces].some((n) => !now.has(n));
      if (!added && !removed) return;
      this.selectedNamespaces.clear();
      for (const n of now) this.selectedNamespaces.add(n);
      this.o.logger.info({ namespaces: now.size }, 'namespaces selected by --namespace-selector changed');
      for (const inf of this.selecting) inf.refilter({ relist: added });
    };
    namespacesCache.on({ onAdd: reselect, onUpdate: reselect, onDelete: reselect });
  }

  addController(controller: Controller): void {
    this.controllers.push(controller);
    if (this.leading) controller.start();
  }

  /** True while this replica may write (leader, lease renewed within the renew deadline). */
  isLeader(): boolean {
    return this.elector ? this.elector.isLeader() : this.leading;
  }

  /** host:port the health endpoint listens on, once started. */
  get healthAddress(): string {
    return addressText(this.health);
  }

  /** host:port /metrics is served on, once started. */
  get metricsAddress(): string {
    return addressText(this.metricsEndpoint);
  }

  async start(): Promise<void> {
    const { logger } = this.o;
    this.health = await startHealthServer(this.o.healthListen, {
      caches: () =>
        [...this.informers.values()].map((i) => ({ name: i.resource, synced: i.hasSynced(), objects: i.size, resourceVersion: i.lastResourceVersion })),
      isLeader: () => this.isLeader(),
      debug: this.o.debugEndpoints,
      cacheContents: (name) => {
        const inf = this.informers.get(name);
        return inf
          ? Object.fromEntries(inf.list().map((o) => [`${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`, o.metadata?.resourceVersion ?? '']))
          : undefined;
      },
    });
    logger.info({ listen: this.healthAddress }, 'serving /healthz, /readyz (HTTP)');
    const { secure } = this.o.metricsEndpoint;
    this.metricsEndpoint = await startMetricsServer({ ...this.o.metricsEndpoint, registry: this.o.metrics.registry, logger });
    if (secure)
      logger.info(
        { listen: this.metricsAddress, certificate: secure.certificates.description },
        'serving /metrics (HTTPS, to scrapers allowed get on /metrics)',
      );
    else
      logger.warn(
        { listen: this.metricsAddress },
        'serving /metrics over plain HTTP to anyone who reaches the port (--metrics-secure=false): the series name namespaces and claims',
      );
    for (const inf of this.informers.values()) inf.start();

    const le = this.o.leaderElection;
    if (!le) {
      logger.warn('leader election is disabled: run a single replica only');
      this.becomeLeader();
      return;
    }
    this.elector = new LeaderElector({
      client: this.o.client,
      ...le,
      logger: logger.child({ component: 'leader-election' }),
      metric: this.o.metrics.leader,
      onStartedLeading: () => this.becomeLeader(),
      onStoppedLeading: () => {
        logger.error('leader election lost; stopping so that a fresh process rejoins as a standby');
        this.leading = false;
        // stop() does not reject (a lease it cannot release is logged and expires on its own;
        // informers and controllers stop without throwing), and the exit follows either way.
        void this.stop().finally(() => (this.o.onLeadershipLost ?? (() => process.exit(1)))());
      },
    });
    this.elector.start();
  }

  private becomeLeader(): void {
    if (this.leading || this.stopping) return;
    this.leading = true;
    // waitForCaches() only resolves (each informer's waitForSync does, at its first list); a
    // stop or lost lease meanwhile is checked below.
    void this.waitForCaches().then(() => {
      if (!this.leading || this.stopping) return;
      this.o.logger.info({ controllers: this.controllers.map((c) => c.name) }, 'caches synced; starting controllers');
      for (const c of this.controllers) c.start();
    });
  }

  waitForCaches(): Promise<void> {
    return Promise.all([...this.informers.values()].map((i) => i.waitForSync())).then(() => undefined);
  }

  /** Graceful shutdown; safe to call more than once. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      const { logger } = this.o;
      const drainMs = this.o.drainTimeoutMs ?? 30_000;
      const drained = await Promise.all(this.controllers.map((c) => c.stop(drainMs)));
      if (drained.some((d) => !d)) logger.warn({ drainTimeoutMs: drainMs }, 'some reconciles were still running at the drain timeout');
      await this.elector?.release();
      this.leading = false;
      await Promise.all([...this.informers.values()].map((i) => i.stop()));
      await Promise.all([this.health?.close(), this.metricsEndpoint?.close()]);
      logger.info('stopped');
    })();
    return this.stopping;
  }
}

const addressText = (e: Endpoint | undefined): string => (e ? `${e.address.address}:${e.address.port}` : '');
