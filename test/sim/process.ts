// A pvx process in the simulation: the real operator, built the way `pvx run` builds it
// (buildManager with leader election on), talking through its own FaultyClient. Crashing one
// kills its client (nothing it sends arrives, nothing it waits for answers); its timers run on
// but every loop soon blocks on a call that never returns, like a frozen or dead pod.
import pino from 'pino';
import { buildManager, pvxDecisions, type Decisions, type OperatorConfig } from '../../src/operator/wiring.ts';
import type { FakeKubeClient } from '../../src/k8s/testing/fake-client.ts';
import type { Manager } from '../../src/operator/runtime/manager.ts';
import type { Reconcile } from '../../src/operator/runtime/controller.ts';
import { FaultyClient, type ClientHooks, type FaultSwitch } from './faulty-client.ts';
import type { Trace } from './trace.ts';
import type { Mutant } from './mutants.ts';
import { embeddedMaxVolumeSizes } from '../../src/policies/budget/drivers.testing.ts';
import type { ModificationBudget } from '../../src/policies/budget/drivers.ts';

export const lease = { namespace: 'pvx-system', name: 'pvx-leader' };

// PVX_SIM_LOG=info (or debug) prints every process's log to stderr, to follow a seed's decisions.
const logger = pino({ level: process.env.PVX_SIM_LOG ?? 'silent' }, pino.destination(2));

/** What a seed chooses of how pvx runs. */
export interface RunChoices {
  /** Read usage from the kubelets (only when a policy may need it: it costs every seed time). */
  readUsage: boolean;
  /** --modification-budget: the drawn budget of the world's EBS driver, or none given (the profile's). */
  modificationBudgets: Record<string, ModificationBudget | null>;
}

/** The operator's configuration, as `pvx run` gives it. */
export function runConfig(identity: string, { readUsage, modificationBudgets }: RunChoices): OperatorConfig {
  return {
    // Plain HTTP: the simulation is not about scrapes, and a key pair per process costs every seed time.
    metricsListen: '127.0.0.1:0',
    metricsSecure: false,
    healthListen: '127.0.0.1:0',
    leaderElect: true,
    leaderElectionId: lease.name,
    leaderElectionNamespace: lease.namespace,
    identity,
    debugEndpoints: false,
    drainTimeoutMs: 30_000,
    usageSource: readUsage ? 'kubelet' : 'none',
    policyIntervalMs: 30_000,
    auditIntervalMs: 60_000,
    auditStuckAfterMs: 15 * 60_000,
    kubeApiQps: 50,
    kubeApiBurst: 100,
    modificationBudgets,
    // The world's driver (world.ts) as the e2e suites tell pvx of it: its limit is a class parameter.
    maxVolumeSizes: embeddedMaxVolumeSizes,
  };
}

/** The runtime's private parts the simulation reaches into; named here so a rename breaks one place. */
interface ManagerInternals {
  controllers: { name: string; opts: { reconcile: Reconcile } }[];
  stopping: Promise<void> | undefined;
  health: { close(): Promise<void> } | undefined;
  metricsEndpoint: { close(): Promise<void> } | undefined;
}

export class PvxProcess {
  readonly client: FaultyClient;
  readonly manager: Manager;
  exited = false;

  readonly identity: string;

  constructor(
    identity: string,
    api: FakeKubeClient,
    faults: FaultSwitch,
    trace: Trace,
    hooks: ClientHooks,
    onReconcile: (controller: string, key: string) => void,
    run: RunChoices,
    mutant?: Mutant,
    observe?: (pvx: Decisions) => Partial<Decisions>,
  ) {
    this.identity = identity;
    this.client = new FaultyClient(api, identity, faults, trace, hooks);
    const carried = { ...pvxDecisions, ...mutant?.decisions?.(pvxDecisions) };
    const decisions = { ...carried, ...observe?.(carried) };
    this.manager = buildManager(
      runConfig(identity, run),
      logger,
      this.client,
      { volumeAttributesClasses: true, statefulSetRecords: true },
      this.client,
      decisions,
    );
    mutant?.process?.(this.internals.controllers);
    // Count every reconcile (the "no hot loop" invariant) by wrapping each controller's function.
    // A crashed process reconciles no more: its workers block as its calls do (its timers still
    // fire, but nothing they start gets anywhere).
    for (const c of this.internals.controllers) {
      const inner = c.opts.reconcile;
      c.opts.reconcile = (key) => {
        if (!this.client.alive) return new Promise(() => undefined);
        onReconcile(c.name, key);
        // The count may have stopped the run (a loop at one instant), which kills every process.
        if (!this.client.alive) return new Promise(() => undefined);
        return inner(key);
      };
    }
  }

  private get internals(): ManagerInternals {
    return this.manager as unknown as ManagerInternals;
  }

  /** Starts the caches and the election; the health and metrics servers bind real ports (127.0.0.1:0), the only real I/O. */
  start(): Promise<void> {
    return this.manager.start();
  }

  get alive(): boolean {
    return this.client.alive && !this.exited;
  }

  /** True once the manager began its shutdown (it lost the lease): the process is on its way out. */
  get stopping(): boolean {
    return this.internals.stopping !== undefined;
  }

  crash(): void {
    this.client.kill();
  }

  /**
   * Frees the real ports at the end of a run: a listening server is a GC root, and everything its
   * handlers reach (the whole process: caches, queues, metrics) would outlive the seed.
   */
  async release(): Promise<void> {
    await Promise.all([this.internals.health?.close().catch(() => undefined), this.internals.metricsEndpoint?.close().catch(() => undefined)]);
  }
}
