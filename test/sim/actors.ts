// Models of the other actors that write the claims pvx watches, after Kubernetes' documented
// behaviour (the resize chain docs/requests.md follows a claim through: the external-resizer's
// ControllerExpandVolume, allocatedResourceStatuses, the kubelet's NodeExpandVolume), driven by the
// same seed: the CSI external-resizer (controller step, and its modify controller for
// VolumeAttributesClasses), the kubelet (node step), the ResourceQuota controller (status.used),
// and a second replica that takes the leader lease once it has lapsed. Each acts between scheduler
// steps, through the fake API server's admin writes, under its own name in the write log.
import type {
  V1Lease,
  V1PersistentVolumeClaim,
  V1PersistentVolumeClaimCondition,
  V1Pod,
  V1ResourceQuota,
  V1VolumeAttributesClass,
} from '@kubernetes/client-node';
import { V1MicroTime } from '@kubernetes/client-node';
import type { FakeKubeClient } from '../../src/k8s/testing/fake-client.ts';
import { formatBytes } from '../../src/k8s/quantity.ts';
import { leaseType, resources } from '../../src/k8s/resources.ts';
import { renewMs } from '../../src/operator/runtime/leader.ts';
import type { Random } from './random.ts';
import type { Trace } from './trace.ts';
import { attributesClassModels, bytes, classModels, className, nodeName } from './world.ts';

const bytesOf = (q: string | undefined): bigint | undefined => (q === undefined ? undefined : bytes(q));
const claimKey = (pvc: V1PersistentVolumeClaim) => `${pvc.metadata?.namespace}/${pvc.metadata?.name}`;

function condition(type: string, message = '', reason = type): V1PersistentVolumeClaimCondition {
  return { type, status: 'True', reason, message, lastTransitionTime: new Date() };
}

/** The conditions of a claim's class change: the resizer's resize steps and the kubelet leave them be, and the other way round. */
const modifyConditionTypes = new Set(['ModifyingVolume', 'ModifyVolumeError']);
const modifyConditions = (p: V1PersistentVolumeClaim) => (p.status?.conditions ?? []).filter((c) => modifyConditionTypes.has(c.type));
const resizeConditions = (p: V1PersistentVolumeClaim) => (p.status?.conditions ?? []).filter((c) => !modifyConditionTypes.has(c.type));

/** Every claim in the store, read synchronously (the admin view, not a client call). */
export function allClaims(api: FakeKubeClient): readonly V1PersistentVolumeClaim[] {
  return api.peek<V1PersistentVolumeClaim>(resources.persistentVolumeClaims);
}

/** How a driver call ends: done, a transient error, a size out of range (infeasible), or a refusal no retry gets past until the size is lowered. */
type Outcome = 'ok' | 'error' | 'infeasible' | 'refused';

/** An operation of the driver on a claim's volume (by claim UID), done at doneAt with its outcome. */
interface Operation {
  uid: string;
  doneAt: number;
  outcome: Outcome;
}

/** What every simulated actor holds: the API server it acts on, its own random stream, the trace it writes to. */
export abstract class SimActor {
  protected readonly api: FakeKubeClient;
  protected readonly rng: Random;
  protected readonly trace: Trace;

  constructor(api: FakeKubeClient, rng: Random, trace: Trace) {
    this.api = api;
    this.rng = rng;
    this.trace = trace;
  }
}

/**
 * A controller of the external-resizer as the simulation plays it: per claim (by UID) at most one
 * operation with the driver, done at its time; a time to retry after a failure; failures the
 * "resizer-error" fault injects. Each controller says when an operation starts and how it ends.
 */
abstract class ResizerController<Op extends Operation> extends SimActor {
  protected readonly inFlight = new Map<string, Op>();
  protected readonly retryAt = new Map<string, number>();
  /** Operations that will fail (the "resizer-error" fault). */
  private failing = 0;
  private seen = '';

  /** An operation under way or waiting to be retried. */
  get busy(): boolean {
    return this.inFlight.size > 0 || this.retryAt.size > 0;
  }

  failNext(attempts: number): void {
    this.failing += attempts;
  }

  /** The quiet period: operations started from now on succeed (or are infeasible), and a stopped resizer is back. */
  stopFailing(): void {
    this.failing = 0;
    this.downUntil = -1;
  }

  /** The resizer's pod is gone until `until` (monotonic ms): nothing starts or ends meanwhile. */
  private downUntil = -1;

  stopUntil(until: number): void {
    this.downUntil = until;
  }

  /** Whether the operation starting now fails: it takes one of the injected failures, if any is left. */
  protected takeFailure(): boolean {
    if (this.failing === 0) return false;
    this.failing--;
    return true;
  }

  step(now: number): void {
    if (now < this.downUntil) return;
    // Nothing to do unless something was written or an operation (or its retry) is due.
    const due = Math.min(...[...this.inFlight.values()].map((op) => op.doneAt), ...this.retryAt.values());
    if (this.api.resourceVersion === this.seen && now < due) return;
    this.seen = this.api.resourceVersion;
    const claims = allClaims(this.api);
    // The operations of a claim deleted meanwhile end with it.
    const uids = new Set(claims.map((c) => c.metadata?.uid as string));
    for (const uid of [...this.inFlight.keys(), ...this.retryAt.keys()]) {
      if (uids.has(uid)) continue;
      this.inFlight.delete(uid);
      this.retryAt.delete(uid);
    }
    for (const pvc of claims) {
      if (pvc.status?.phase !== 'Bound') continue;
      const op = this.inFlight.get(pvc.metadata?.uid as string);
      if (!op) this.maybeStart(pvc, now);
      else if (now >= op.doneAt) {
        this.inFlight.delete(op.uid);
        this.finish(pvc, op, now);
      }
    }
  }

  /** A status patch as the resizer makes it: on the latest object (the same claim), without a resourceVersion precondition. */
  protected write(pvc: V1PersistentVolumeClaim, change: (p: V1PersistentVolumeClaim) => void): void {
    const latest = this.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, pvc.metadata?.namespace, pvc.metadata?.name as string);
    if (!latest || latest.metadata?.uid !== pvc.metadata?.uid) return;
    change(latest);
    this.api.asActor(this.actor, () =>
      this.api.update(resources.persistentVolumeClaims, { ...latest, metadata: { ...latest.metadata, resourceVersion: undefined } }),
    );
  }

  /** Its name in the write log. */
  protected abstract readonly actor: string;
  protected abstract maybeStart(pvc: V1PersistentVolumeClaim, now: number): void;
  protected abstract finish(pvc: V1PersistentVolumeClaim, op: Op, now: number): void;
}

/** A resize to this size. */
type ControllerResize = Operation & { size: string };

/**
 * The external-resizer: on spec > allocated (or > capacity with nothing allocated) it records
 * allocatedResources = spec with ControllerResizeInProgress and the Resizing condition, calls the
 * driver, then: NodeResizePending + FileSystemResizePending (a driver with a node step), or the
 * capacity directly; ControllerResizeInfeasible above the driver's maximum; or a
 * ControllerResizeError condition and a retry after a backoff. Since KEP-1790 a user may lower
 * spec after a failure, and the resizer then works on the lowered size.
 */
export class Resizer extends ResizerController<ControllerResize> {
  protected readonly actor = 'resizer';

  protected maybeStart(pvc: V1PersistentVolumeClaim, now: number): void {
    const uid = pvc.metadata?.uid as string;
    const spec = bytesOf(pvc.spec?.resources?.requests?.storage) ?? 0n;
    const capacity = bytesOf(pvc.status?.capacity?.storage) ?? 0n;
    const allocated = bytesOf(pvc.status?.allocatedResources?.storage);
    const state = pvc.status?.allocatedResourceStatuses?.storage;
    if (spec <= capacity) return;
    if (allocated === spec && (state === 'NodeResizePending' || state === 'ControllerResizeInfeasible')) return;
    if (allocated === spec && state === 'ControllerResizeInProgress' && (this.retryAt.get(uid) ?? 0) > now) return;
    const model = classModels[className(pvc)];
    if (!model) return;
    const outcome: Outcome =
      spec > model.driverMaxBytes
        ? 'infeasible'
        : model.refusesAboveBytes !== undefined && spec > model.refusesAboveBytes
          ? 'refused'
          : this.takeFailure()
            ? 'error'
            : 'ok';
    const size = pvc.spec?.resources?.requests?.storage as string;
    const op = { uid, size, outcome, doneAt: now + this.rng.duration(300, 60_000) };
    this.inFlight.set(uid, op);
    this.write(pvc, (p) => {
      p.status = {
        ...p.status,
        allocatedResources: { ...p.status?.allocatedResources, storage: size },
        allocatedResourceStatuses: { ...p.status?.allocatedResourceStatuses, storage: 'ControllerResizeInProgress' },
        conditions: [
          ...(p.status?.conditions ?? []).filter((c) => c.type === 'ControllerResizeError' || modifyConditionTypes.has(c.type)),
          condition('Resizing', 'the external resizer is expanding the volume', 'ControllerResizeInProgress'),
        ],
      };
    });
    this.trace.add('actor', `resizer starts ${claimKey(pvc)} → ${size} (${outcome === 'ok' ? 'will succeed' : `will end ${outcome}`})`);
  }

  protected finish(pvc: V1PersistentVolumeClaim, op: ControllerResize, now: number): void {
    const model = classModels[className(pvc)];
    if (!model) return;
    const key = claimKey(pvc);
    if (op.outcome === 'ok') {
      this.retryAt.delete(op.uid);
      if (model.nodeStep) {
        this.write(pvc, (p) => {
          p.status = {
            ...p.status,
            allocatedResourceStatuses: { storage: 'NodeResizePending' },
            conditions: [
              ...modifyConditions(p),
              condition('FileSystemResizePending', 'Waiting for user to (re-)start a pod to finish file system resize of volume on node.'),
            ],
          };
        });
        this.trace.add('actor', `resizer expanded ${key} to ${op.size}; node step pending`);
      } else {
        this.write(pvc, (p) => {
          p.status = { ...p.status, capacity: { storage: op.size }, allocatedResourceStatuses: undefined, conditions: modifyConditions(p) };
        });
        this.trace.add('actor', `resizer expanded ${key} to ${op.size}; done (no node step)`);
      }
    } else if (op.outcome === 'infeasible') {
      this.write(pvc, (p) => {
        p.status = {
          ...p.status,
          allocatedResourceStatuses: { storage: 'ControllerResizeInfeasible' },
          conditions: [
            ...modifyConditions(p),
            condition(
              'ControllerResizeError',
              `rpc error: code = OutOfRange desc = requested size ${op.size} exceeds the maximum ${formatBytes(model.driverMaxBytes)}`,
            ),
          ],
        };
      });
      this.trace.add('actor', `resizer: ${key} → ${op.size} is infeasible`);
    } else {
      const backoff = this.rng.duration(1000, 300_000);
      const text = op.outcome === 'refused' ? (model.refusalText ?? model.errorText) : model.errorText;
      this.retryAt.set(op.uid, now + backoff);
      this.write(pvc, (p) => {
        p.status = {
          ...p.status,
          conditions: [...modifyConditions(p), condition('Resizing', '', 'ControllerResizeInProgress'), condition('ControllerResizeError', text)],
        };
      });
      this.trace.add('actor', `resizer: ${key} → ${op.size} failed (${text.slice(0, 60)}…); retry in ${backoff} ms`);
    }
  }
}

/** A change to this VolumeAttributesClass. */
type ClassChange = Operation & { target: string };

/**
 * The external-resizer's modify controller (v2.3.0): a Bound claim whose spec.volumeAttributesClassName
 * differs from status.currentVolumeAttributesClassName is marked Pending (no target) while the class
 * does not exist, else InProgress for that class with the condition ModifyingVolume, and the driver
 * is called: on success the status goes, the class is current and the conditions are cleared; an
 * infeasible class (InvalidArgument) ends Infeasible with ModifyVolumeError, retried only once the
 * claim asks for another class; any other error adds ModifyVolumeError and is retried after a
 * backoff, InProgress all along.
 */
export class Modifier extends ResizerController<ClassChange> {
  protected readonly actor = 'modifier';

  protected maybeStart(pvc: V1PersistentVolumeClaim, now: number): void {
    const uid = pvc.metadata?.uid as string;
    const wanted = pvc.spec?.volumeAttributesClassName;
    const status = pvc.status?.modifyVolumeStatus;
    if (!wanted || (wanted === pvc.status?.currentVolumeAttributesClassName && !status)) return;
    if (status?.status === 'Infeasible' && status.targetVolumeAttributesClassName === wanted) return;
    if ((this.retryAt.get(uid) ?? 0) > now) return;
    const vac = this.api.get<V1VolumeAttributesClass>(resources.volumeAttributesClasses, undefined, wanted);
    if (!vac) {
      if (status?.status === 'Pending') return;
      this.write(pvc, (p) => {
        p.status = { ...p.status, modifyVolumeStatus: { ...p.status?.modifyVolumeStatus, status: 'Pending' } };
      });
      this.trace.add('actor', `modifier: ${claimKey(pvc)} asks for VolumeAttributesClass ${wanted}, which does not exist: Pending`);
      return;
    }
    const outcome: Outcome = attributesClassModels[wanted]?.infeasible ? 'infeasible' : this.takeFailure() ? 'error' : 'ok';
    this.inFlight.set(uid, { uid, target: wanted, outcome, doneAt: now + this.rng.duration(300, 60_000) });
    this.write(pvc, (p) => {
      const modifying =
        modifyConditions(p).find((c) => c.type === 'ModifyingVolume') ?? condition('ModifyingVolume', `Modifying volume to "${wanted}" is in progress.`, '');
      p.status = {
        ...p.status,
        modifyVolumeStatus: { targetVolumeAttributesClassName: wanted, status: 'InProgress' },
        conditions: [...resizeConditions(p), ...modifyConditions(p).filter((c) => c.type !== 'ModifyingVolume'), modifying],
      };
    });
    this.trace.add(
      'actor',
      `modifier starts ${claimKey(pvc)} → VolumeAttributesClass ${wanted} (${outcome === 'ok' ? 'will succeed' : `will end ${outcome}`})`,
    );
  }

  protected finish(pvc: V1PersistentVolumeClaim, op: ClassChange, now: number): void {
    const key = claimKey(pvc);
    if (op.outcome === 'ok') {
      this.retryAt.delete(op.uid);
      this.write(pvc, (p) => {
        p.status = { ...p.status, modifyVolumeStatus: undefined, currentVolumeAttributesClassName: op.target, conditions: resizeConditions(p) };
      });
      this.trace.add('actor', `modifier: ${key} now has VolumeAttributesClass ${op.target}`);
    } else if (op.outcome === 'infeasible') {
      this.retryAt.delete(op.uid);
      this.write(pvc, (p) => {
        p.status = {
          ...p.status,
          modifyVolumeStatus: { targetVolumeAttributesClassName: op.target, status: 'Infeasible' },
          conditions: [
            ...resizeConditions(p),
            condition('ModifyingVolume', `Modifying volume to "${op.target}" failed. Waiting for retry.`, ''),
            condition('ModifyVolumeError', 'parameter iops 999999 is out of range', 'InvalidArgument'),
          ],
        };
      });
      this.trace.add('actor', `modifier: ${key} → VolumeAttributesClass ${op.target} is infeasible`);
    } else {
      const backoff = this.rng.duration(1000, 300_000);
      this.retryAt.set(op.uid, now + backoff);
      const model = classModels[className(pvc)];
      this.write(pvc, (p) => {
        const modifying = modifyConditions(p).filter((c) => c.type === 'ModifyingVolume');
        p.status = {
          ...p.status,
          conditions: [...resizeConditions(p), ...modifying, condition('ModifyVolumeError', model?.errorText ?? 'rpc error: code = Internal', 'Internal')],
        };
      });
      this.trace.add('actor', `modifier: ${key} → VolumeAttributesClass ${op.target} failed; retry in ${backoff} ms`);
    }
  }
}

/** The kubelet: a claim waiting for the node step, mounted by a running pod, grows to its allocated size after a while. */
export class Kubelet extends SimActor {
  private readonly readyAt = new Map<string, number>();
  private seen = '';

  step(now: number): void {
    // Nothing to do unless something was written or a filesystem resize is due.
    if (this.api.resourceVersion === this.seen && now < Math.min(...this.readyAt.values())) return;
    this.seen = this.api.resourceVersion;
    const mounted = new Set(
      this.api
        .peek<V1Pod>(resources.pods)
        .filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp)
        .flatMap((p) => (p.spec?.volumes ?? []).map((v) => `${p.metadata?.namespace}/${v.persistentVolumeClaim?.claimName}`)),
    );
    for (const pvc of allClaims(this.api)) {
      const uid = pvc.metadata?.uid as string;
      const waiting = pvc.status?.allocatedResourceStatuses?.storage === 'NodeResizePending';
      if (!waiting || !mounted.has(claimKey(pvc))) {
        this.readyAt.delete(uid);
        continue;
      }
      const at = this.readyAt.get(uid);
      if (at === undefined) {
        this.readyAt.set(uid, now + this.rng.duration(200, 30_000));
        continue;
      }
      if (now < at) continue;
      this.readyAt.delete(uid);
      const size = pvc.status?.allocatedResources?.storage;
      this.api.asActor('kubelet', () =>
        this.api.update(resources.persistentVolumeClaims, {
          ...pvc,
          metadata: { ...pvc.metadata, resourceVersion: undefined },
          status: { ...pvc.status, capacity: { storage: size as string }, allocatedResourceStatuses: undefined, conditions: modifyConditions(pvc) },
        }),
      );
      this.trace.add('actor', `kubelet grew the filesystem of ${claimKey(pvc)} to ${size}`);
    }
  }
}

/** The ResourceQuota controller: status.used is what admission reads, so it follows the claims. */
export class QuotaController {
  private readonly api: FakeKubeClient;

  constructor(api: FakeKubeClient) {
    this.api = api;
  }

  private seen = '';

  step(): void {
    // Usage changes only when something was written.
    if (this.api.resourceVersion === this.seen) return;
    this.seen = this.api.resourceVersion;
    for (const q of this.api.peek<V1ResourceQuota>(resources.resourceQuotas)) {
      const used: Record<string, string> = {};
      for (const key of Object.keys(q.spec?.hard ?? {})) {
        let total = 0n;
        for (const pvc of allClaims(this.api)) {
          if (pvc.metadata?.namespace !== q.metadata?.namespace) continue;
          if (key !== 'requests.storage' && key !== `${className(pvc)}.storageclass.storage.k8s.io/requests.storage`) continue;
          const spec = bytesOf(pvc.spec?.resources?.requests?.storage) ?? 0n;
          const allocated = bytesOf(pvc.status?.allocatedResources?.storage) ?? 0n;
          total += spec > allocated ? spec : allocated;
        }
        used[key] = formatBytes(total);
      }
      if (JSON.stringify(q.status?.used) === JSON.stringify(used) && JSON.stringify(q.status?.hard) === JSON.stringify(q.spec?.hard)) continue;
      this.api.asActor('quota-controller', () =>
        this.api.update(resources.resourceQuotas, { ...q, metadata: { ...q.metadata, resourceVersion: undefined }, status: { hard: q.spec?.hard, used } }),
      );
    }
  }
}

/**
 * Another replica of pvx, reduced to its lease behaviour (a full second operator would double the
 * cost of every seed): it takes the lease only when the record has not changed for the lease
 * duration as it observed it — exactly what a correct candidate does — holds it for a while, then
 * lets it lapse. A leader cut off from the API server loses its lease to it.
 */
export class Standby {
  readonly identity = 'pvx-standby';
  private observed = '';
  private observedAt = 0;
  private holdUntil = -1;
  private activeUntil = -1;

  private readonly api: FakeKubeClient;
  private readonly trace: Trace;
  private readonly lease: { namespace: string; name: string };

  constructor(api: FakeKubeClient, trace: Trace, lease: { namespace: string; name: string }) {
    this.api = api;
    this.trace = trace;
    this.lease = lease;
  }

  /** Campaign until `until` (monotonic ms); once it has the lease, hold it for holdMs. */
  campaign(until: number, holdMs: number): void {
    this.activeUntil = until;
    this.holdFor = holdMs;
  }

  private holdFor = 0;

  /** Called every 2 s of simulated time (its retry period). */
  tick(now: number): void {
    if (now > this.activeUntil && now > this.holdUntil) return;
    const lease = this.api.get<V1Lease>(leaseType, this.lease.namespace, this.lease.name);
    if (!lease) return;
    const spec = lease.spec ?? {};
    // Compared as a candidate does, to the renewTime's last digit (not String()'s whole seconds).
    const record = `${spec.holderIdentity ?? ''}|${renewMs(spec.renewTime)}|${spec.leaseDurationSeconds ?? ''}`;
    if (record !== this.observed) {
      this.observed = record;
      this.observedAt = now;
    }
    const mine = spec.holderIdentity === this.identity;
    if (mine && now > this.holdUntil) return; // lets it lapse: no renewal, no release
    const free = !spec.holderIdentity || this.observedAt + (spec.leaseDurationSeconds ?? 15) * 1000 <= now;
    if (!mine && !free) return;
    if (!mine) {
      this.holdUntil = now + this.holdFor;
      this.trace.add('actor', `standby replica takes the lease from ${spec.holderIdentity ?? '(none)'}; holds it ${this.holdFor} ms`);
    }
    const stamp = new V1MicroTime(Date.now());
    this.api.asActor(this.identity, () =>
      this.api.update(leaseType, {
        ...lease,
        spec: { ...spec, holderIdentity: this.identity, leaseDurationSeconds: 15, renewTime: stamp, acquireTime: mine ? spec.acquireTime : stamp },
      }),
    );
  }
}

/**
 * What the applications write, and what the kubelet measures of it: each claim mounted by a
 * running pod fills at its own rate (some never, some within minutes), and the kubelet measures
 * each pod's volumes on its own schedule — the next measurement 1–2 periods after the last (its
 * wait.JitterUntil with a jitter factor of 1.0; a 10 s volumeStatsAggPeriod, as on the embedded
 * cluster) — and serves the latest, with the time it was taken, in its stats summary (what the
 * policy evaluator reads through the API server: the fake's summaries). Now and then a
 * measurement of a claim that never fills sees a file that is gone by the next one: a spike no
 * policy may grow the claim for.
 */
export class Usage {
  private readonly used = new Map<string, number>();
  private readonly rate = new Map<string, number>();
  private readonly startRatio = new Map<string, number>();
  /** The latest measurement per claim and pod, and when the next is due. */
  private readonly measured = new Map<string, { time: string; used: number; capacity: number; nextAt: number; spiked: boolean }>();
  /** Per claim (by UID), its measurements since its last spike. */
  private readonly sinceSpike = new Map<string, number>();
  private last = 0;
  private readonly api: FakeKubeClient;
  private readonly rng: Random;
  /** In the quiet period the applications stop writing, so the policies have nothing new to act on. */
  frozen = false;
  /** The kubelet's volumeStatsAggPeriod. */
  static readonly periodMs = 10_000;

  constructor(api: FakeKubeClient, rng: Random) {
    this.api = api;
    this.rng = rng;
  }

  /** Bytes per second a claim (by UID) fills at, once it has been mounted. */
  rateOf(uid: string): number | undefined {
    return this.rate.get(uid);
  }

  /** Bytes the applications have written to a claim (by UID), as of the last step. */
  usedOf(uid: string): number | undefined {
    return this.used.get(uid);
  }

  step(now: number): void {
    const elapsedS = (now - this.last) / 1000;
    this.last = now;
    const running = this.api.peek<V1Pod>(resources.pods).filter((p) => p.status?.phase === 'Running');
    const volumes = [];
    for (const pod of running) {
      for (const v of pod.spec?.volumes ?? []) {
        const claimName = v.persistentVolumeClaim?.claimName;
        const pvc = claimName ? this.api.get<V1PersistentVolumeClaim>(resources.persistentVolumeClaims, pod.metadata?.namespace, claimName) : undefined;
        if (!pvc?.metadata?.uid || !pvc.status?.capacity?.storage) continue;
        const uid = pvc.metadata.uid;
        const capacity = Number(bytes(pvc.status.capacity.storage));
        // Bytes per second: idle, slow (hours to fill) or fast (minutes).
        let rate = this.rate.get(uid);
        if (rate === undefined) {
          rate = this.rng.pick([0, capacity / 36_000, capacity / 600, capacity / 300]);
          this.rate.set(uid, rate);
        }
        // A volume found 30–95 % full: some above a policy's threshold from the first measurement.
        let start = this.startRatio.get(uid);
        if (start === undefined) {
          start = 0.3 + this.rng.next() * 0.65;
          this.startRatio.set(uid, start);
        }
        const used = Math.min(capacity, (this.used.get(uid) ?? capacity * start) + (this.frozen ? 0 : rate * elapsedS));
        this.used.set(uid, used);
        const key = `${pod.metadata?.uid ?? pod.metadata?.name}/${uid}`;
        let m = this.measured.get(key);
        if (!m || now >= m.nextAt) {
          // The first measurement at once (a pod's calculator starts with one), then each 1–2 periods
          // on; its time in whole seconds, as the kubelet's JSON has it.
          // A spike is one measurement: the one after it sees the file gone. Spikes are rare: one
          // within six measurements of the last (of any pod) is not drawn — a policy reading every
          // other measurement could see two close spikes and nothing between, a rise no trend
          // can tell from filling (seed 5227). (The draw is made all the same: the seed's stream
          // stays as it was.)
          const drawn = rate === 0 && !this.frozen && !m?.spiked && this.rng.chance(0.05) ? this.rng.pick([0.2, 0.45]) * capacity : 0;
          const since = this.sinceSpike.get(uid) ?? Infinity;
          const spike = drawn > 0 && since >= 6 ? drawn : 0;
          this.sinceSpike.set(uid, spike > 0 ? 0 : since + 1);
          m = {
            spiked: spike > 0,
            time: new Date(Math.floor(Date.now() / 1000) * 1000).toISOString(),
            used: Math.min(capacity, used + spike),
            capacity,
            nextAt: now + Usage.periodMs * (1 + this.rng.next()),
          };
          this.measured.set(key, m);
        }
        volumes.push({
          pod: { name: pod.metadata?.name, namespace: pod.metadata?.namespace, uid: pod.metadata?.uid },
          volume: {
            name: v.name,
            pvcRef: { name: claimName, namespace: pod.metadata?.namespace },
            time: m.time,
            capacityBytes: m.capacity,
            usedBytes: Math.round(m.used),
            availableBytes: Math.round(m.capacity - m.used),
            inodes: 1_000_000,
            inodesUsed: 1000,
          },
        });
      }
    }
    this.api.summaries.set(nodeName, { node: { nodeName }, pods: volumes.map((v) => ({ podRef: v.pod, volume: [v.volume] })) });
  }
}
