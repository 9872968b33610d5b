import pino from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { FakeKubeClient } from '../../k8s/testing/fake-client.ts';
import { namespaces, resources } from '../../k8s/resources.ts';
import { createRuntimeMetrics } from '../../metrics/runtime.ts';
import { Manager } from './manager.ts';

describe('Manager', () => {
  it.each([NaN, Infinity, -1])('refuses a drain timeout of %s with a TypeError naming it', (drainTimeoutMs) => {
    const make = () =>
      new Manager({
        client: new FakeKubeClient(),
        logger: pino({ level: 'silent' }),
        metrics: createRuntimeMetrics(new Registry(), { processMetrics: false }),
        healthListen: '127.0.0.1:0',
        metricsEndpoint: { listen: '127.0.0.1:0' },
        drainTimeoutMs,
      });
    expect(make).toThrow(new TypeError(`drainTimeoutMs must be a finite number of ms ≥ 0, got ${drainTimeoutMs}`));
  });
});

describe('Manager with a namespace selector', () => {
  const ns = (name: string, shard: string) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'pvx.dev/shard': shard } } });
  const claim = (namespace: string, name: string) => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace }, spec: {} });
  const shard = (fake: FakeKubeClient, value: string) =>
    new Manager({
      client: fake,
      logger: pino({ level: 'silent' }),
      metrics: createRuntimeMetrics(new Registry(), { processMetrics: false }),
      healthListen: '127.0.0.1:0',
      metricsEndpoint: { listen: '127.0.0.1:0' },
      namespaceSelector: { 'pvx.dev/shard': value },
    });
  const names = (m: Manager) =>
    m
      .informer(resources.persistentVolumeClaims)
      .list()
      .map((c) => `${c.metadata?.namespace}/${c.metadata?.name}`)
      .sort();

  it('two instances over disjoint selectors cache disjoint halves, and a namespace that changes shard moves from one to the other', async () => {
    const fake = new FakeKubeClient();
    for (const [name, s] of [
      ['a1', 'a'],
      ['a2', 'a'],
      ['b1', 'b'],
    ] as const) {
      fake.create(namespaces, ns(name, s));
      fake.create(resources.persistentVolumeClaims, claim(name, 'data'));
    }
    const a = shard(fake, 'a');
    const b = shard(fake, 'b');
    const caches = [a, b].map((m) => m.informer(resources.persistentVolumeClaims));
    const nsCaches = [a, b].map((m) => m.informer(namespaces));
    for (const c of [...nsCaches, ...caches]) c.start();
    await Promise.all(caches.map((c) => c.waitForSync()));
    await vi.waitFor(() => expect(names(a)).toEqual(['a1/data', 'a2/data']));
    expect(names(b)).toEqual(['b1/data']);
    // A claim created in b's namespace reaches b only.
    fake.create(resources.persistentVolumeClaims, claim('b1', 'logs'));
    await vi.waitFor(() => expect(names(b)).toEqual(['b1/data', 'b1/logs']));
    expect(names(a)).toEqual(['a1/data', 'a2/data']);
    // a2 is relabelled to shard b: a drops its claims, b lists them.
    const a2 = fake.get(namespaces, undefined, 'a2')!;
    fake.update(namespaces, { ...a2, metadata: { ...a2.metadata, resourceVersion: undefined, labels: { 'pvx.dev/shard': 'b' } } });
    await vi.waitFor(() => expect(names(b)).toEqual(['a2/data', 'b1/data', 'b1/logs']));
    expect(names(a)).toEqual(['a1/data']);
    await Promise.all([...caches, ...nsCaches].map((c) => c.stop()));
  });
});
