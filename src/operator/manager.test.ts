import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { FakeKubeClient } from '../k8s/fake-client.ts';
import { createRuntimeMetrics } from '../metrics/runtime.ts';
import { Manager } from './manager.ts';

describe('Manager', () => {
  it.each([NaN, Infinity, -1])('refuses a drain timeout of %s with a TypeError naming it', (drainTimeoutMs) => {
    const make = () =>
      new Manager({ client: new FakeKubeClient(), logger: pino({ level: 'silent' }), metrics: createRuntimeMetrics(new Registry(), { processMetrics: false }), listen: '127.0.0.1:0', drainTimeoutMs });
    expect(make).toThrow(new TypeError(`drainTimeoutMs must be a finite number of ms ≥ 0, got ${drainTimeoutMs}`));
  });
});
