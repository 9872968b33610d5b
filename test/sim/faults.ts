// Faults the scheduler injects between steps (per-call API faults live in the FaultyClient).
// Adding one: a name, a weight, and what it does to the run; the trace and the summary count it.
import type { Random } from './random.ts';

export interface FaultTarget {
  rng: Random;
  now(): number;
  /** The process holding the lease, if any is alive. */
  leader(): { identity: string; crash(): void; client: { partition(until: number): void } } | undefined;
  alive(): { identity: string; crash(): void }[];
  scheduleRestart(at: number): void;
  /** A standby replica takes the lease once it lapses; it holds it for holdMs. */
  standbyCampaign(until: number, holdMs: number): void;
  shiftWallClock(ms: number): void;
  breakWatches(err?: unknown): void;
  /** Compacts the watch history past every informer and ends the streams: each relists. */
  forceRelist(): void;
  resizerFails(attempts: number): void;
  /** The external-resizer is stopped until `until` (monotonic ms), then starts again. */
  resizerDown(until: number): void;
  fault(kind: string, text: string): void;
}

export interface StepFault {
  name: string;
  weight: number;
  apply(t: FaultTarget): void;
}

export const stepFaults: StepFault[] = [
  {
    // The process dies wherever it is (any await point): writes in flight may or may not have landed.
    name: 'crash',
    weight: 3,
    apply(t) {
      const victim = t.rng.chance(0.7) ? (t.leader() ?? t.rng.pick(t.alive())) : t.rng.pick(t.alive());
      if (!victim) return;
      victim.crash();
      const after = t.rng.duration(100, 30_000);
      t.scheduleRestart(t.now() + after);
      t.fault('crash', `${victim.identity} crashed; a new process starts in ${after} ms`);
    },
  },
  {
    // Cut off from the API server longer than the lease: the standby takes the lease.
    name: 'lease-lost',
    weight: 2,
    apply(t) {
      const leader = t.leader();
      if (!leader) return;
      const forMs = t.rng.int(12_000, 60_000);
      leader.client.partition(t.now() + forMs);
      t.standbyCampaign(t.now() + forMs + 20_000, t.rng.duration(1000, 60_000));
      t.fault('lease-lost', `${leader.identity} cannot reach the API server for ${forMs} ms; the standby campaigns`);
    },
  },
  {
    // NTP steps the wall clock; monotonic time goes on.
    name: 'wall-clock-step',
    weight: 1,
    apply(t) {
      const ms = t.rng.int(-120, 120) * 1000;
      t.shiftWallClock(ms);
      t.fault('wall-clock-step', `Date moves ${ms > 0 ? '+' : ''}${ms} ms`);
    },
  },
  {
    name: 'watch-break',
    weight: 2,
    apply(t) {
      const withError = t.rng.chance(0.5);
      t.breakWatches(withError ? new Error('unexpected EOF') : undefined);
      t.fault('watch-break', `every watch stream ends${withError ? ' with an error' : ''}`);
    },
  },
  {
    // History compacted while streams are down: they resume with 410 Gone and relist.
    name: 'compaction',
    weight: 1.5,
    apply(t) {
      t.forceRelist();
      t.fault('compaction', 'watch history compacted; streams end and resume into 410 Gone (a relist)');
    },
  },
  {
    // The external-resizer's pod is gone for a while (evicted, crash-looping), then back.
    name: 'resizer-down',
    weight: 1,
    apply(t) {
      const forMs = t.rng.duration(30_000, 10 * 60_000);
      t.resizerDown(t.now() + forMs);
      t.fault('resizer-down', `the external-resizer is stopped for ${forMs} ms`);
    },
  },
  {
    name: 'resizer-error',
    weight: 2,
    apply(t) {
      const n = t.rng.int(1, 4);
      t.resizerFails(n);
      t.fault('resizer-error', `the next ${n} resize attempts fail with ControllerResizeError`);
    },
  },
];
