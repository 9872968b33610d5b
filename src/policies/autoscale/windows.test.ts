import type { V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import { describe, expect, it, vi } from 'vitest';
import type { VolumeExpansionPolicy } from '../../crds/volume-expansion-policy.ts';
import { policyPass } from './policy-pass.ts';
import { selectionLookups } from './selection.ts';
import { windowState, windowsProblem } from './windows.ts';

// Every schedule croner parses, counted: the cost a namespace's windows put on the pass.
const parses = vi.hoisted(() => ({ count: 0 }));
vi.mock('croner', async (original) => {
  const { Cron } = await original<typeof import('croner')>();
  class CountedCron extends Cron {
    constructor(pattern: string, options?: object) {
      super(pattern, options as never);
      parses.count++;
    }
  }
  return { Cron: CountedCron };
});

const now = new Date('2026-12-05T12:00:00Z');

describe('maintenance windows', () => {
  it('open within a window’s duration after an opening; otherwise closed until the next one', () => {
    const daily = [{ schedule: '0 11 * * *', durationMs: 2 * 3600_000 }];
    expect(windowState(daily, now)).toEqual({ open: true });
    const later = [{ schedule: '0 13 * * *', durationMs: 3600_000, timeZone: 'UTC' }];
    expect(windowState(later, now)).toEqual({ open: false, nextOpen: new Date('2026-12-05T13:00:00Z') });
  });

  it('says which window cannot be read, every time it is asked', () => {
    const bad = [{ schedule: '0 2 * * *', durationMs: 1, timeZone: 'Mars/Olympus' }];
    expect(windowsProblem(bad)).toMatch(/unknown time zone "Mars\/Olympus"/);
    expect(windowsProblem(bad)).toMatch(/unknown time zone "Mars\/Olympus"/);
    expect(() => windowState(bad, now)).toThrow(/unknown time zone/);
  });

  // Review, 2026-12-05: a namespace editor's 4,000 policies of 16 windows each stalled every pass
  // for 283 s (each window parsed again per claim, per policy, per pass), for every namespace.
  it('parses each schedule once, however many policies and claims read it, pass after pass', () => {
    const schedules = Array.from({ length: 16 }, (_, i) => `${i} 3 * * ${i % 7}`);
    const policies = Array.from({ length: 40 }, (_, i): VolumeExpansionPolicy => ({
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionPolicy',
      metadata: { name: `windowed-${i}`, namespace: 'tenant', uid: `uid-${i}`, creationTimestamp: new Date(now.getTime() - i * 1000) },
      spec: { triggers: { usedPercent: 80 }, windows: schedules.map((schedule) => ({ schedule, duration: '1h' })) },
    }));
    const claims = Array.from({ length: 20 }, (_, i): V1PersistentVolumeClaim => ({
      metadata: { name: `data-${i}`, namespace: 'tenant', uid: `uid-data-${i}` },
      spec: { storageClassName: 'fast', resources: { requests: { storage: '10Gi' } } },
      status: { phase: 'Bound', capacity: { storage: '10Gi' } },
    }));
    const fast: V1StorageClass = { metadata: { name: 'fast' }, provisioner: 'csi.example.com', allowVolumeExpansion: true };
    parses.count = 0;
    for (let pass = 0; pass < 3; pass++) {
      const plans = policyPass({
        policies,
        clusterPolicies: [],
        claims,
        storageClasses: [fast],
        requests: [],
        lookups: selectionLookups([{ metadata: { name: 'tenant' } }], []),
        samples: () => [],
        lastCapacityChangeAt: () => undefined,
        now: new Date(now.getTime() + pass * 60_000),
      });
      expect(plans).toHaveLength(40);
    }
    expect(parses.count).toBeLessThanOrEqual(schedules.length);
  });
});
