// Leader election on a coordination.k8s.io Lease, after client-go's leaderelection:
//
//   - a candidate takes the lease when it is free, released, or not renewed for leaseDuration
//     as measured on *our* clock since we last saw it change (no trust in other clocks) — since
//     the read that showed the change returned, not since it was sent;
//   - the leader renews every renewPeriod (5 s) and, after a failed attempt, every retryPeriod
//     (2 s, as client-go renews always); if it cannot renew for renewDeadline it steps down. A
//     lease of 15 s renewed every 5 s still changes three times per lease, so a standby's view of
//     it is unchanged, at 12 requests a minute at rest instead of 30;
//   - isLeader() is a fence: true only while the last successful renewal is younger than
//     renewDeadline. renewDeadline < leaseDuration, so a leader that cannot reach the API server
//     stops writing before any other replica can take the lease;
//   - every duration (the fence, a lease's expiry as we observed it) is measured on the monotonic
//     clock: a wall-clock step back would otherwise keep the fence open for as long as the step.
//     The wall clock only stamps the Lease's renewTime/acquireTime, which other tools read;
//   - release() (on SIGTERM) empties the holder, so a standby takes over at its next retry.
//
//   - a leader renews with an optimistic update of the lease as it last wrote it, without reading
//     it first (as client-go does): one request per renewal. Only when that fails (409: someone
//     else wrote; any other error) does the next attempt read the lease again.
//
// Every lease write carries a resourceVersion as precondition (409 → someone else won).
import type { V1Lease, V1MicroTime } from '@kubernetes/client-node';
import type { Gauge } from 'prom-client';
import type { Logger } from 'pino';
import { Pause } from '../../k8s/pause.ts';
import type { KubeClient } from '../../k8s/client.ts';
import { isAlreadyExists, isConflict } from '../../k8s/errors.ts';

export interface LeaderElectionOptions {
  client: KubeClient;
  namespace: string;
  name: string;
  /** Unique per process: hostname/pod name plus a random suffix. */
  identity: string;
  logger: Logger;
  metric?: Gauge<'name'>;
  /** Default 15,000 ms. */
  leaseDurationMs?: number;
  /** Default 10,000 ms; must be below leaseDurationMs. */
  renewDeadlineMs?: number;
  /** How long a leader waits after a failed renewal, and a candidate between attempts. Default 2,000 ms; must be below renewDeadlineMs. */
  retryPeriodMs?: number;
  /**
   * How long a leader waits after a renewal that succeeded: at least retryPeriodMs, below
   * renewDeadlineMs. Default 5,000 ms, or less where renewDeadlineMs is shorter, so that two retries
   * still fit between a missed renewal and the fence closing.
   */
  renewPeriodMs?: number;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  /** Clock for every duration, ms; never steps. Default performance.now. */
  monotonicNow?: () => number;
  /** Clock for the times written into the Lease, ms since the epoch. Default Date.now. */
  wallNow?: () => number;
}

/**
 * Lease times are MicroTime: the API server wants six fractional digits. A Date that writes them
 * (as client-node's V1MicroTime does, without loading the library's generated models for it).
 */
class MicroTime extends Date {
  override toISOString(): string {
    return `${super.toISOString().slice(0, -1)}000Z`;
  }
}
const microTime = (ms: number): V1MicroTime => new MicroTime(ms);

/**
 * A lease's renewTime to the millisecond, however it was read (an RFC 3339 text with microseconds,
 * or a Date): String() of a Date keeps whole seconds only, and two renewals within one second
 * (after the wall clock stepped back) would read as none.
 */
export function renewMs(renewTime: unknown): string {
  if (renewTime === undefined || renewTime === null) return '';
  const ms = new Date(renewTime as string | Date).getTime();
  return Number.isNaN(ms) ? JSON.stringify(renewTime) : String(ms);
}

export class LeaderElector {
  private readonly o: Required<Omit<LeaderElectionOptions, 'metric'>> & Pick<LeaderElectionOptions, 'metric'>;
  private leading = false;
  private lastRenew = 0;
  /** The last renewTime this process wrote (wall-clock ms). */
  private lastStamp = 0;
  private observedRecord = '';
  private observedAt = 0;
  /** The lease as this leader last wrote it: the next renewal updates it without reading first. */
  private held: V1Lease | undefined;
  private stopped = false;
  private readonly sleeper = new Pause();
  private running: Promise<void> | undefined;

  constructor(opts: LeaderElectionOptions) {
    const retryPeriodMs = opts.retryPeriodMs ?? 2_000;
    const renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
    this.o = {
      leaseDurationMs: 15_000,
      renewDeadlineMs,
      retryPeriodMs,
      // Shorter timings given without one (tests, a tight --leader-election-*): renew as often as the deadline allows.
      renewPeriodMs: Math.max(retryPeriodMs, Math.min(5_000, renewDeadlineMs - 2 * retryPeriodMs)),
      monotonicNow: () => performance.now(),
      wallNow: Date.now,
      ...opts,
    };
    const { leaseDurationMs, renewPeriodMs } = this.o;
    if (!(retryPeriodMs > 0) || !(renewDeadlineMs > retryPeriodMs) || !(leaseDurationMs > renewDeadlineMs) || !Number.isFinite(leaseDurationMs)) {
      throw new TypeError(
        `leader election needs 0 < retryPeriod < renewDeadline < leaseDuration, got ${retryPeriodMs} / ${renewDeadlineMs} / ${leaseDurationMs} ms`,
      );
    }
    if (!(renewPeriodMs >= retryPeriodMs) || !(renewPeriodMs < renewDeadlineMs)) {
      throw new TypeError(`leader election needs retryPeriod ≤ renewPeriod < renewDeadline, got ${retryPeriodMs} / ${renewPeriodMs} / ${renewDeadlineMs} ms`);
    }
    if (!opts.identity) throw new TypeError('leader election needs a non-empty identity');
  }

  /** True only while this process holds a lease it renewed less than renewDeadline ago. */
  isLeader(): boolean {
    return this.leading && this.o.monotonicNow() - this.lastRenew < this.o.renewDeadlineMs;
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Stops campaigning; a leader empties the lease so a standby can take it at once. */
  async release(): Promise<void> {
    this.stopped = true;
    this.sleeper.wake();
    await this.running;
    if (!this.leading) return;
    this.setLeading(false);
    try {
      const lease = await this.o.client.getLease(this.o.namespace, this.o.name);
      if (lease?.spec?.holderIdentity !== this.o.identity) return;
      await this.o.client.updateLease(this.o.namespace, {
        ...lease,
        spec: { ...lease.spec, holderIdentity: undefined, leaseDurationSeconds: 1, renewTime: microTime(this.o.wallNow()) },
      });
      this.o.logger.info({ lease: this.o.name }, 'released the leader lease');
    } catch (err) {
      this.o.logger.warn({ lease: this.o.name, err: (err as Error).message }, 'could not release the leader lease; it expires on its own');
    }
  }

  private async loop(): Promise<void> {
    const { logger, retryPeriodMs, renewPeriodMs, renewDeadlineMs } = this.o;
    // A standby shows 0 from the start, so every replica has the series: one that never led is
    // told apart from one whose metrics are missing.
    this.setLeading(false);
    while (!this.stopped) {
      const ok = await this.tryAcquireOrRenew();
      if (this.stopped) break;
      if (ok && !this.leading) {
        logger.info({ lease: this.o.name, identity: this.o.identity }, 'became leader');
        this.setLeading(true);
        this.o.onStartedLeading();
      } else if (!ok && this.leading && this.o.monotonicNow() - this.lastRenew >= renewDeadlineMs) {
        logger.error(
          { lease: this.o.name, sinceRenewMs: this.o.monotonicNow() - this.lastRenew },
          'could not renew the leader lease within the renew deadline; stepping down',
        );
        this.setLeading(false);
        this.o.onStoppedLeading();
      }
      // Candidates spread their attempts (×1–1.2) so they do not hit the API server in step.
      await this.pause(this.leading ? (ok ? renewPeriodMs : retryPeriodMs) : retryPeriodMs * (1 + Math.random() * 0.2));
    }
  }

  private setLeading(leading: boolean): void {
    this.leading = leading;
    this.o.metric?.set({ name: this.o.name }, leading ? 1 : 0);
  }

  private async pause(ms: number): Promise<void> {
    if (!this.stopped) await this.sleeper.for(ms);
  }

  /**
   * The renewTime to write: the wall clock, but always later than the last one written. A renewal
   * that wrote the renewTime the lease holds already (the wall clock stepped back by exactly the
   * renew period: seed 53204) is no change, which the API server does not store; candidates, who
   * judge a lease by seeing it change, would count the leader as gone while it still writes.
   */
  private nextStamp(): number {
    this.lastStamp = Math.max(this.o.wallNow(), this.lastStamp + 1);
    return this.lastStamp;
  }

  /** One attempt; true when we hold the lease afterwards. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { client, namespace, name, identity, logger, leaseDurationMs } = this.o;
    // Taken before the request: a renewal counts from when it was sent, not from when it returned.
    const now = this.o.monotonicNow();
    const stamp = microTime(this.nextStamp());
    const leaseDurationSeconds = Math.ceil(leaseDurationMs / 1000);
    if (this.held) {
      try {
        this.held = renewable(await client.updateLease(namespace, { ...this.held, spec: { ...this.held.spec, renewTime: stamp, leaseDurationSeconds } }));
        this.lastRenew = now;
        return true;
      } catch (err) {
        // Someone else wrote the lease (or the write failed): read it before anything else.
        this.held = undefined;
        if (!isConflict(err)) logger.warn({ lease: name, err: (err as Error).message }, 'leader lease renewal failed');
        return false;
      }
    }
    try {
      const lease = await client.getLease(namespace, name);
      if (!lease) {
        this.held = renewable(
          await client.createLease(namespace, {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name, namespace },
            spec: { holderIdentity: identity, leaseDurationSeconds, acquireTime: stamp, renewTime: stamp, leaseTransitions: 0 },
          }),
        );
        this.lastRenew = now;
        return true;
      }
      const spec = lease.spec ?? {};
      // Validity is judged by when *we* saw the record change, not by the holder's clock: when the
      // answer arrived, not when the read was sent. A read that took 15 s returns a renewal made
      // during it; dated at its sending, that renewal would look expired at once (seed 1163707).
      const record = `${spec.holderIdentity ?? ''}|${renewMs(spec.renewTime)}|${spec.leaseDurationSeconds ?? ''}`;
      const answeredAt = this.o.monotonicNow();
      if (record !== this.observedRecord) {
        this.observedRecord = record;
        this.observedAt = answeredAt;
      }
      const heldByOther = Boolean(spec.holderIdentity) && spec.holderIdentity !== identity;
      const validForMs = (spec.leaseDurationSeconds ?? leaseDurationSeconds) * 1000;
      if (heldByOther && this.observedAt + validForMs > answeredAt) return false;
      const takingOver = spec.holderIdentity !== identity;
      this.held = renewable(
        await client.updateLease(namespace, {
          ...renewable(lease),
          spec: {
            ...spec,
            holderIdentity: identity,
            leaseDurationSeconds,
            renewTime: stamp,
            acquireTime: takingOver ? stamp : spec.acquireTime,
            leaseTransitions: (spec.leaseTransitions ?? 0) + (takingOver && spec.holderIdentity ? 1 : 0),
          },
        }),
      );
      if (takingOver) logger.info({ lease: name, previousHolder: spec.holderIdentity ?? '(none)' }, 'took over the leader lease');
      this.lastRenew = now;
      return true;
    } catch (err) {
      if (isConflict(err) || isAlreadyExists(err)) return false; // another candidate wrote first
      logger.warn({ lease: name, err: (err as Error).message }, 'leader lease request failed');
      return false;
    }
  }
}

/**
 * What a renewal sends back of the lease it holds: its name and version (the precondition), what a
 * replace would otherwise drop (labels, annotations, owners), and its spec — not the managedFields
 * and timestamps the API server returned, which it keeps as they are. A renewal every 5 s is then
 * one small request on a kept-alive connection.
 */
export function renewable(lease: V1Lease): V1Lease {
  const { name, namespace, resourceVersion, uid, labels, annotations, ownerReferences } = lease.metadata ?? {};
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name, namespace, resourceVersion, uid, labels, annotations, ownerReferences },
    spec: lease.spec,
  };
}
