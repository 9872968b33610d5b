// One seed, one run: the real operator over the in-memory API server, in virtual time, with the
// user, the resizer (and its modify controller), the kubelet and the faults all drawn from the seed.
//
//   chaos   (default 5 simulated minutes): steps of 20 ms–20 s; each step may bring a user action
//           and a fault; API calls fail, lag and lose answers at the seed's rates.
//   quiet   (default 10 simulated minutes, ended early once all is settled): no faults, no new
//           actions, usage frozen; dead processes restart; everything must settle. A request
//           created late in it gets five minutes more (to twice the quiet period at most).
//   checks  after every step (checkStep and the per-write ones) and at the end (checkSettled).
//
// Determinism: timers, Date and performance.now are @sinonjs/fake-timers', advanced only by this
// loop; Math.random is a seeded stream; the fake API server's UIDs and resourceVersions are
// counters. The only real I/O is each process's health and metrics servers binding 127.0.0.1:0, awaited
// between steps, when no virtual time passes.
import type { V1ConfigMap, V1StatefulSet } from '@kubernetes/client-node';
import FakeTimers from '@sinonjs/fake-timers';
import perfHooks from 'node:perf_hooks';
import { FakeKubeClient } from '../../src/k8s/testing/fake-client.ts';
import { leaseType, namespaces, resources, volumeExpansionRequests, type ResourceType } from '../../src/k8s/resources.ts';
import { Kubelet, Modifier, QuotaController, Resizer, Standby, Usage } from './actors.ts';
import type { ApiFaultRates, FaultSwitch } from './faulty-client.ts';
import { stepFaults, type FaultTarget } from './faults.ts';
import { Invariants, type Violation } from './invariants.ts';
import { PvxProcess, lease } from './process.ts';
import { Random } from './random.ts';
import { Trace } from './trace.ts';
import { User } from './user.ts';
import type { VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import { classModels, createWorld, namespace, namespaceObject } from './world.ts';
import { embeddedDriverProfiles } from '../../src/policies/budget/drivers.testing.ts';
import type { ModificationBudget } from '../../src/policies/budget/drivers.ts';
import type { Mutant } from './mutants.ts';
import type { Decisions } from '../../src/operator/wiring.ts';
import { OfflineDriver, WorkloadUser, createWorkloads } from './workloads.ts';
import {
  DisruptionController,
  GarbageCollector,
  NamespaceController,
  PodLifecycle,
  StatefulSetController,
  namespaceLifecycle,
  ownerReferencesPermissionEnforcement,
  requestCountQuota,
  statefulSetWebhookOutage,
} from './workload-controllers.ts';
import { WorkloadInvariants } from './workload-invariants.ts';

export interface SeedOptions {
  /** Simulated ms of chaos. Default 5 min (the CI batch's). */
  chaosMs?: number;
  /** Simulated ms of quiet at the end. Default 10 min (the CI batch's). */
  quietMs?: number;
  /** Keep the whole trace (replays and the determinism test). */
  keepTrace?: boolean;
  /** Fault kinds left out (see faultKinds), to tell which fault a failure needs. */
  without?: readonly string[];
  /** Run a deliberately broken pvx (mutants.ts): its invariants must catch it. */
  mutant?: Mutant;
  /** Wraps the decisions each pvx process carries out (after the mutant's), to watch them: coverage.ts. */
  observe?: (pvx: Decisions) => Partial<Decisions>;
  /**
   * Workload mode (test/sim/workloads.ts: a StatefulSet controller, the garbage collector, budgets,
   * an offline driver and the opt-ins asked for): drawn per seed by default, or always, or never.
   */
  workloads?: 'drawn' | 'always' | 'never';
}

/** Every fault kind --without accepts: the per-call ones of the FaultyClient and the step faults. */
export const faultKinds: readonly string[] = ['api-delay', 'api-fail', 'lost-response', 'watch-lag', 'watch-drop', ...stepFaults.map((f) => f.name)];

export interface SeedResult {
  seed: number;
  without: readonly string[];
  chaosMs: number;
  quietMs: number;
  steps: number;
  simulatedMs: number;
  faults: Map<string, number>;
  violations: Violation[];
  /** Fingerprint of the full trace: equal for two runs of one seed. */
  digest: string;
  trace: Trace;
  requests: number;
  processes: number;
  /** Final phase of every request, for the summary. */
  phases: Map<string, number>;
}

/** Short enough that the CI batch runs 2,000 seeds in about two minutes; --chaos/--quiet go longer. */
export const defaultPeriods = { chaosMs: 5 * 60_000, quietMs: 10 * 60_000 };

/** How long everything must stay settled before the quiet period may end early. */
const settleForMs = 3 * 60_000;
/** The quiet time a request gets to end (or wait on a person) before it is judged: five minutes. */
const requestTimeMs = 5 * 60_000;

/** A kind pvx does not watch, for the write that makes every informer relist. */
const configMaps: ResourceType = { resource: 'configmaps', group: '', version: 'v1', kind: 'ConfigMap', namespaced: true };

const epoch = Date.UTC(2026, 0, 5, 9, 0, 0);

/**
 * prom-client's default process metrics (which buildManager registers for every process) start
 * an event-loop delay monitor — a real libuv timer every 10 ms, never stopped — and a GC
 * observer. Thousands of simulated processes would leave thousands of them running. They read
 * nothing the simulation checks, so during a run they are inert stand-ins.
 */
function withInertProcessMetrics(): () => void {
  const hooks = perfHooks as unknown as Record<string, unknown>;
  const saved = { monitorEventLoopDelay: hooks.monitorEventLoopDelay, PerformanceObserver: hooks.PerformanceObserver };
  hooks.monitorEventLoopDelay = () => ({
    enable() {},
    disable() {},
    reset() {},
    percentile: () => 0,
    min: 0,
    max: 0,
    mean: 0,
    stddev: 0,
    percentiles: new Map(),
    exceeds: 0,
    count: 0,
  });
  hooks.PerformanceObserver = class {
    observe(): void {}
    disconnect(): void {}
  };
  return () => Object.assign(hooks, saved);
}

/**
 * --modification-budget for the world's EBS driver: none given (its profile's, 4 per 24 h), or in
 * some seeds one performance change per 24 h, or one change of any kind (a budget a policy meets
 * within a seed's minutes: its Budget hold is reached by chance alone otherwise).
 */
function drawBudgets(rng: Random): Record<string, ModificationBudget | null> {
  const ebs = classModels.ebs?.provisioner as string;
  if (rng.chance(0.15)) return { [ebs]: { count: 1, windowMs: 24 * 3_600_000, counts: 'performance' } };
  return rng.chance(0.12) ? { [ebs]: { count: 1, windowMs: 24 * 3_600_000 } } : {};
}

function drawRates(rng: Random, without: ReadonlySet<string>): ApiFaultRates {
  const stormy = rng.chance(0.3);
  const rates = {
    delay: stormy ? 0.4 : rng.chance(0.5) ? 0.1 : 0,
    maxDelayMs: rng.pick([50, 500, 5000, 20_000]),
    fail: stormy ? 0.05 : rng.pick([0, 0.005, 0.02]),
    lostResponse: stormy ? 0.03 : rng.pick([0, 0.005, 0.01]),
    watchLag: stormy ? 0.3 : rng.pick([0, 0.05]),
    watchDrop: stormy ? 0.05 : rng.pick([0, 0.01]),
  };
  // Drawn first and zeroed after, so leaving a fault out changes as little else of the seed as it can.
  if (without.has('api-delay')) rates.delay = 0;
  if (without.has('api-fail')) rates.fail = 0;
  if (without.has('lost-response')) rates.lostResponse = 0;
  if (without.has('watch-lag')) rates.watchLag = 0;
  if (without.has('watch-drop')) rates.watchDrop = 0;
  return rates;
}

export async function runSeed(seed: number, opts: SeedOptions = {}): Promise<SeedResult> {
  const without = [...(opts.without ?? [])].sort();
  for (const kind of without) if (!faultKinds.includes(kind)) throw new TypeError(`unknown fault kind "${kind}"; known: ${faultKinds.join(', ')}`);
  const leftOut = new Set(without);
  const chaosMs = opts.chaosMs ?? defaultPeriods.chaosMs;
  const quietMs = opts.quietMs ?? defaultPeriods.quietMs;
  const rng = new Random(seed);
  // Separate streams: the operator's jitter, the faults, the actors and the user do not shift each other.
  const operatorRng = rng.fork(1);
  const faultRng = rng.fork(2);
  const actorRng = rng.fork(3);
  const userRng = rng.fork(4);

  const restoreMetrics = withInertProcessMetrics();
  const realRandom = Math.random;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- process.exit is only restored below (process.exit = realExit), never called through this name
  const realExit = process.exit;
  const clock = FakeTimers.withGlobal(globalThis).install({
    now: epoch,
    toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'Date', 'performance', 'hrtime'],
    loopLimit: 1_000_000,
  });
  Math.random = () => operatorRng.next();
  const undoMutant = opts.mutant?.install?.();
  // A process that loses its lease stops and calls process.exit (src/operator/runtime/manager.ts); here the
  // sim sees it stopping and restarts it, so exit itself does nothing.
  process.exit = (() => undefined) as typeof process.exit;

  let wallShift = 0;
  const now = () => clock.now - epoch - wallShift;
  const trace = new Trace(now, opts.keepTrace);
  const api = new FakeKubeClient();
  const invariants = new Invariants(api, trace, now);
  api.observeWrites((w) => invariants.onWrite(w));
  // Now and then someone changes the claim in the instant between pvx's accepted plan and its patch.
  let user: User | undefined;
  api.observeWrites((w) => {
    const r = w.after as VolumeExpansionRequest;
    if (
      !faults.enabled ||
      !user ||
      w.resource !== volumeExpansionRequests.resource ||
      !w.actor?.startsWith('pvx-') ||
      r.status?.reason !== 'Accepted' ||
      !r.spec?.target?.pvcName
    )
      return;
    if ((w.before as VolumeExpansionRequest | undefined)?.status?.reason === 'Accepted' || !userRng.chance(0.1)) return;
    user.raceClaim(r.spec.target.pvcName, r);
  });
  const faults: FaultSwitch = { enabled: true, rates: drawRates(faultRng, leftOut), rng: faultRng };
  trace.add('note', `seed ${seed}: API fault rates ${JSON.stringify(faults.rates)}`);

  const world = createWorld(api, userRng);
  // A namespace seen late is created at some point of the chaos period (or by the user before).
  const namespaceAt = world.namespaceLate ? faultRng.duration(1000, chaosMs) : undefined;
  const createNamespaceIfDue = () => {
    if (namespaceAt === undefined || now() < namespaceAt || api.get(namespaces, undefined, namespace)) return;
    api.asActor('admin', () => api.create(namespaces, namespaceObject()));
    trace.add('action', `create namespace ${namespace}`);
  };
  trace.add(
    'note',
    `claims ${world.claims.join(', ')}${world.statefulSet ? `; StatefulSet ${JSON.stringify(world.statefulSet)}` : ''}${world.namespaceLate ? '; namespace created late' : ''}`,
  );
  for (const p of [...world.policies, ...world.clusterPolicies]) trace.add('note', `${p.kind} ${p.metadata.name} ${JSON.stringify(p.spec)}`);
  // The EBS driver's budget pvx is given, from a stream of its own: its profile's (every change
  // counted), or one that counts performance changes alone (VolumeAttributesClass changes).
  const modificationBudgets = drawBudgets(rng.fork(7));
  const ebs = classModels.ebs?.provisioner as string;
  invariants.budget = { driver: ebs, budget: modificationBudgets[ebs] ?? embeddedDriverProfiles(ebs).modificationBudget };
  if (Object.keys(modificationBudgets).length > 0) trace.add('note', `--modification-budget ${JSON.stringify(modificationBudgets)}`);
  // Workload mode, from a stream of its own: a seed that does not draw it runs as it always did.
  const workloadRng = rng.fork(5);
  const drawnWorkloads = workloadRng.chance(0.3);
  const workloads =
    (opts.workloads ?? 'drawn') === 'always' || ((opts.workloads ?? 'drawn') === 'drawn' && drawnWorkloads)
      ? workloadActors(api, workloadRng, trace, invariants, now)
      : undefined;
  user = new User(api, userRng, trace, world);
  if (invariants.budget?.budget?.counts === 'performance') user.performanceBudget = rng.fork(8);
  const resizer = new Resizer(api, actorRng, trace);
  const kubelet = new Kubelet(api, actorRng, trace);
  const modifier = new Modifier(api, actorRng, trace);
  const quotas = new QuotaController(api);
  const usage = new Usage(api, actorRng);
  invariants.fillRate = (uid) => usage.rateOf(uid);
  invariants.usedBytes = (uid) => usage.usedOf(uid);
  if (workloads) workloads.invariants.usedBytes = (uid) => usage.usedOf(uid);
  const standby = new Standby(api, trace, lease);
  invariants.pvxIdentities.add(standby.identity);
  quotas.step();

  const processes: PvxProcess[] = [];
  const restarts: number[] = [];
  let started = 0;
  const startProcess = async () => {
    const identity = `pvx-${started++}`;
    invariants.pvxIdentities.add(identity);
    const p = new PvxProcess(
      identity,
      api,
      faults,
      trace,
      {
        now,
        writeLanded: (id, method, what, issuedAt) => invariants.onWriteLanded(id, method, what, issuedAt),
        answerLost: (what) => invariants.onAnswerLost(what),
        listed: (id, resource, rv, opts) => workloads?.invariants.onList(id, resource, rv, opts),
      },
      (controller, key) => {
        invariants.onReconcile(identity, controller, key);
        // Stuck at one instant: every process dies, so the loop's pending turns hang and the
        // tick that runs it can end; the run stops after it with the violation.
        if (invariants.stuck) for (const other of processes) other.crash();
      },
      // Policies may be created during the run: usage is read whenever one may need it.
      { readUsage: true, modificationBudgets },
      opts.mutant,
      opts.observe,
    );
    processes.push(p);
    trace.add('process', `${identity} starts`);
    await p.start();
  };
  const leaseHolder = () => (api.get(leaseType, lease.namespace, lease.name) as { spec?: { holderIdentity?: string } } | undefined)?.spec?.holderIdentity;
  const alive = () => processes.filter((p) => p.alive);

  const target: FaultTarget = {
    rng: faultRng,
    now,
    leader: () => alive().find((p) => p.identity === leaseHolder()),
    alive,
    scheduleRestart: (at) => restarts.push(at),
    standbyCampaign: (until, holdMs) => standby.campaign(until, holdMs),
    shiftWallClock: (ms) => {
      wallShift += ms;
      invariants.wallClockDrift += Math.abs(ms);
      clock.setSystemTime(clock.now + ms);
    },
    breakWatches: (err) => api.breakWatches(err),
    forceRelist: () => forceRelist(),
    resizerFails: (n) => {
      resizer.failNext(n);
      modifier.failNext(n);
    },
    resizerDown: (until) => {
      resizer.stopUntil(until);
      modifier.stopUntil(until);
    },
    fault: (kind, text) => trace.fault(kind, text),
  };

  // A watch resumed from the latest version it saw would not be refused, and an informer that
  // missed an event would never list again: a write no one watches first puts every informer
  // behind the compaction, so each stream resumes into 410 Gone and relists.
  let relists = 0;
  const forceRelist = () => {
    api.asActor('admin', () =>
      api.create(configMaps, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `relist-${relists++}`, namespace: 'kube-system' } }),
    );
    api.compact();
    api.breakWatches();
  };

  // The standby's retry period: its lease checks run on the virtual clock like pvx's own.
  const standbyTimer = setInterval(() => standby.tick(now()), 2000);

  let steps = 0;
  const step = async (dt: number) => {
    await clock.tickAsync(dt);
    steps++;
    if (invariants.stuck) return;
    resizer.step(now());
    modifier.step(now());
    kubelet.step(now());
    usage.step(now());
    quotas.step();
    workloads?.step(now());
    // A process that lost its lease shuts down and exits; its pod restarts it.
    for (const p of processes) {
      if (p.alive && p.stopping) {
        p.exited = true;
        trace.add('process', `${p.identity} exits after losing the lease`);
        restarts.push(now() + faultRng.duration(100, 10_000));
      }
    }
    for (let i = restarts.length - 1; i >= 0; i--) {
      if ((restarts[i] as number) <= now()) {
        restarts.splice(i, 1);
        await startProcess();
      }
    }
    invariants.checkStep();
    workloads?.invariants.checkStep();
  };

  // No faults, no new actions: everything must settle.
  const quietPeriod = async () => {
    faults.enabled = false;
    usage.frozen = true;
    workloads?.quiet();
    resizer.stopFailing();
    modifier.stopFailing();
    // A namespace due late in the chaos period, past its last step, is there before the quiet
    // period (seed 2335138: due in the last step, never created, every request waited on it).
    createNamespaceIfDue();
    trace.add('note', 'quiet period: no more faults or actions');
    const quietStart = now();
    for (const p of alive()) p.client.partition(-1);
    // Dropped watch events are lost only until a relist: the quiet period starts with one.
    forceRelist();
    if (alive().length === 0 && restarts.length === 0) restarts.push(now());
    // The quiet period ends early once every request has been finished (or waiting for a person)
    // for a while with no claim mid-resize: most seeds settle in a minute or two, and the
    // simulated time saved goes to more seeds.
    // A request created late in it (a policy acting again after its cooldown) gets the time any
    // request gets, to twice the quiet period at most; one younger than that then is not judged.
    const quietEnd = now() + quietMs;
    const lastEnd = quietEnd + quietMs;
    const young = () => invariants.unsettled().some((r) => invariants.isYoung(r, requestTimeMs));
    let settledSince: number | undefined;
    while ((now() < quietEnd || (now() < lastEnd && young())) && !invariants.stuck) {
      await step(Math.min((now() < quietEnd ? quietEnd : lastEnd) - now(), faultRng.duration(1000, 30_000)));
      workloads?.invariants.checkLiveness(quietStart);
      const calm =
        invariants.unsettled().length === 0 &&
        (workloads?.invariants.unsettled().length ?? 0) === 0 &&
        (workloads?.invariants.starving() ?? 0) === 0 &&
        !resizer.busy &&
        !modifier.busy &&
        alive().length > 0;
      settledSince = calm ? (settledSince ?? now()) : undefined;
      if (settledSince !== undefined && now() - settledSince >= settleForMs) break;
    }
    if (!invariants.stuck) {
      invariants.checkSettled(quietStart, requestTimeMs);
      workloads?.invariants.checkSettled();
    }
  };

  let result: SeedResult | undefined;
  let namespaceDeletedUnderPvx = false;
  try {
    await startProcess();
    while (now() < chaosMs && !invariants.stuck) {
      createNamespaceIfDue();
      if (userRng.chance(0.25)) user.act();
      if (workloads) workloads.user.namespaceDeletable = now() > chaosMs - 60_000;
      if (workloads && workloads.rng.chance(0.1)) workloads.user.act();
      // pvx down while the namespace of a StatefulSet it is re-creating is deleted (and perhaps
      // created again under the name): it learns of that only from what it finds when it is back.
      // (Late in the run, as the user's own namespace deletions; back before the quiet period's compaction, mostly.)
      if (workloads && !namespaceDeletedUnderPvx && now() > chaosMs - 150_000 && workloads.midStep() && workloads.rng.chance(0.2)) {
        namespaceDeletedUnderPvx = true;
        const after = faultRng.duration(5000, 40_000);
        for (const p of alive()) p.crash();
        restarts.push(now() + after);
        trace.fault('crash', `every pvx process down for ${after} ms while its namespace is deleted`);
        workloads.user.deleteNamespaceNow();
      }
      if (faultRng.chance(0.03) && alive().length > 0) {
        const fault = faultRng.weighted(stepFaults.map((f) => [f, f.weight] as const));
        if (!leftOut.has(fault.name)) fault.apply(target);
      }
      await step(faultRng.duration(20, 20_000));
    }
    // A run stuck at one instant has nothing left to settle: every process is dead.
    if (!invariants.stuck) await quietPeriod();
    result = {
      seed,
      without,
      chaosMs,
      quietMs,
      steps,
      simulatedMs: now(),
      faults: trace.faults,
      violations: invariants.violations,
      digest: trace.digest,
      trace,
      requests: user.requestsCreated,
      processes: started,
      phases: new Map(),
    };
    for (const r of api.snapshot<{ metadata: object; status?: { phase?: string } }>(volumeExpansionRequests)) {
      const phase = r.status?.phase ?? '(none)';
      result.phases.set(phase, (result.phases.get(phase) ?? 0) + 1);
    }
  } finally {
    undoMutant?.();
    clearInterval(standbyTimer);
    for (const p of processes) p.crash();
    clock.uninstall();
    Math.random = realRandom;
    process.exit = realExit;
    restoreMetrics();
    await Promise.all(processes.map((p) => p.release()));
    trace.end();
  }
  return result;
}

/** Workload mode's world, actors, person and invariants (test/sim/workloads.ts, workload-controllers.ts, workload-invariants.ts). */
function workloadActors(api: FakeKubeClient, rng: Random, trace: Trace, invariants: Invariants, now: () => number) {
  createWorkloads(api, rng);
  trace.add(
    'note',
    'workload mode: the StatefulSet controller, pods, the garbage collector, budgets, namespaces, an offline driver, other mounters and the opt-ins',
  );
  const actorRng = rng.fork(1);
  const isPvx = (actor: string | undefined) => actor !== undefined && invariants.pvxIdentities.has(actor);
  if (rng.chance(0.3)) {
    api.admission.push(ownerReferencesPermissionEnforcement(isPvx));
    trace.add('note', 'admission: OwnerReferencesPermissionEnforcement (pvx may not set blockOwnerDeletion)');
  }

  if (rng.chance(0.2)) {
    const outageEnds = rng.duration(30_000, 6 * 60_000);
    api.admission.push(statefulSetWebhookOutage(isPvx, () => now() < outageEnds));
    trace.add('note', `admission: a webhook refuses pvx's StatefulSet creates until ${Math.round(outageEnds / 1000)} s`);
  }
  const controller = new StatefulSetController(api, actorRng, trace);
  const pods = new PodLifecycle(api, actorRng, trace);
  const gc = new GarbageCollector(api, actorRng, trace);
  const disruption = new DisruptionController(api);
  const namespaceController = new NamespaceController(api, trace);
  api.admission.push(namespaceLifecycle(api, namespaceController.gone));
  const driver = new OfflineDriver(api, actorRng, trace);
  const checks = new WorkloadInvariants(api, trace, now, invariants.violations, isPvx, lease.namespace);
  api.observeWrites((w) => checks.onWrite(w));
  if (rng.chance(0.1)) {
    const hard = rng.int(4, 8);
    api.admission.push(requestCountQuota(api, hard, isPvx));
    checks.requestQuota = hard;
    trace.add('note', `admission: an object-count quota of ${hard} VolumeExpansionRequests`);
  }
  const user = new WorkloadUser(api, rng.fork(3), trace, pods);
  // The owner replies to pvx's steps in the instants that matter (while faults run; none in the quiet period).
  let replying = true;
  api.observeWrites((w) => {
    if (replying) user.onWrite(w, now(), isPvx);
  });
  // The fake forgets its history when the simulation compacts it (a forced relist): the checker is told.
  const compact = api.compact.bind(api);
  api.compact = () => {
    compact();
    checks.onCompaction();
  };
  return {
    rng: rng.fork(2),
    user,
    invariants: checks,
    quiet(): void {
      replying = false;
    },
    /** Whether pvx has deleted a StatefulSet to create it again (it is going, or gone), and has not created it yet. */
    midStep(): boolean {
      return api.peek<V1ConfigMap>(resources.statefulSetRecords).some((cm) => {
        if (cm.metadata?.namespace !== lease.namespace) return false;
        const step = JSON.parse(cm.data?.['step.json'] ?? '{}') as { phase?: string; request?: { namespace?: string }; statefulSet?: { name?: string } };
        if (step.phase !== 'Deleting') return false;
        const sts = api.get<V1StatefulSet>(resources.statefulSets, step.request?.namespace, step.statefulSet?.name ?? '');
        return !sts || Boolean(sts.metadata?.deletionTimestamp);
      });
    },
    step(at: number): void {
      if (replying) user.step(at);
      gc.step(at);
      controller.step(at);
      pods.step(at);
      driver.step(at);
      disruption.step();
      namespaceController.step();
    },
  };
}
