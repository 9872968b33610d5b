import type { KubernetesObject, V1PersistentVolumeClaim, V1StorageClass } from '@kubernetes/client-node';
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { FakeKubeClient } from '../../k8s/testing/fake-client.ts';
import {
  clusterVolumeExpansionPolicies,
  namespaces,
  resources,
  volumeExpansionPolicies,
  volumeExpansionRequests,
  type ResourceType,
} from '../../k8s/resources.ts';
import { createAuditMetrics, type AuditMetrics } from '../../metrics/audit.ts';
import type { Finding } from '../../policies/audit/rules.ts';
import { Informer } from '../../k8s/informer.ts';
import { AuditController, findingsToAnnounce, findingKey } from './audit.ts';

const logger = pino({ level: 'silent' });

const finding = (name: string, severity: Finding['severity'] = 'warning'): Finding => ({
  rule: 'class-not-expandable',
  severity,
  namespace: 'db',
  kind: 'PersistentVolumeClaim',
  name,
  message: `${name} cannot grow.`,
  remedy: 'Use an expandable class.',
});

describe('findingsToAnnounce', () => {
  const limits = { minIntervalMs: 60_000, perPass: 2 };

  it('announces new findings once, not again while they persist', () => {
    const first = findingsToAnnounce([finding('a')], new Map(), 0, limits);
    expect(first.announce.map((f) => f.name)).toEqual(['a']);
    const second = findingsToAnnounce([finding('a')], first.announced, 10_000, limits);
    expect(second.announce).toEqual([]);
  });

  it('does not announce a flapping finding again within the minimum interval', () => {
    const first = findingsToAnnounce([finding('a')], new Map(), 0, limits);
    const gone = findingsToAnnounce([], first.announced, 10_000, limits);
    const back = findingsToAnnounce([finding('a')], gone.announced, 20_000, limits);
    expect(back.announce).toEqual([]);
  });

  it('announces a finding again after it was gone for longer than the minimum interval', () => {
    const first = findingsToAnnounce([finding('a')], new Map(), 0, limits);
    const gone = findingsToAnnounce([], first.announced, 70_000, limits);
    expect(gone.announced.has(findingKey(finding('a')))).toBe(false);
    const back = findingsToAnnounce([finding('a')], gone.announced, 80_000, limits);
    expect(back.announce.map((f) => f.name)).toEqual(['a']);
  });

  it('announces at most perPass per pass, the rest in later passes', () => {
    const all = ['a', 'b', 'c', 'd', 'e'].map((n) => finding(n));
    const p1 = findingsToAnnounce(all, new Map(), 0, limits);
    const p2 = findingsToAnnounce(all, p1.announced, 1000, limits);
    const p3 = findingsToAnnounce(all, p2.announced, 2000, limits);
    expect([p1, p2, p3].map((p) => p.announce.map((f) => f.name))).toEqual([['a', 'b'], ['c', 'd'], ['e']]);
  });
});

describe('AuditController', () => {
  let fake: FakeKubeClient;
  let informers: Informer[];
  let metrics: AuditMetrics;
  let registry: Registry;

  const informer = <T extends KubernetesObject>(type: ResourceType): Informer<T> => {
    const i = new Informer<T>({ type, client: fake, logger });
    informers.push(i as unknown as Informer);
    i.start();
    return i;
  };

  async function controller(): Promise<AuditController> {
    const c = new AuditController({
      client: fake,
      pvcs: informer(resources.persistentVolumeClaims),
      pvs: informer(resources.persistentVolumes),
      storageClasses: informer(resources.storageClasses),
      statefulSets: informer(resources.statefulSets),
      quotas: informer(resources.resourceQuotas),
      pods: informer(resources.pods),
      requests: informer(volumeExpansionRequests),
      policies: informer(volumeExpansionPolicies),
      clusterPolicies: informer(clusterVolumeExpansionPolicies),
      namespaces: informer(namespaces),
      metrics,
      logger,
      canWrite: () => true,
      intervalMs: 60_000,
    });
    await Promise.all(informers.map((i) => i.waitForSync()));
    return c;
  }

  const value = async (name: string, labels: Record<string, string>) =>
    (await registry.getSingleMetric(name)?.get())?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value;

  beforeEach(() => {
    fake = new FakeKubeClient();
    informers = [];
    registry = new Registry();
    metrics = createAuditMetrics(registry);
    fake.create(resources.storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'fixed' },
      provisioner: 'x',
      allowVolumeExpansion: false,
    } as V1StorageClass);
    fake.create(resources.persistentVolumeClaims, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: 'db', uid: 'uid-data' },
      spec: { storageClassName: 'fixed', volumeName: 'pv-data', resources: { requests: { storage: '10Gi' } } },
      status: { phase: 'Bound', capacity: { storage: '10Gi' } },
    } as V1PersistentVolumeClaim);
  });

  afterEach(async () => {
    await Promise.all(informers.map((i) => i.stop()));
  });

  it('publishes findings by rule (0 for clean rules) and per namespace, and one Event on the PVC', async () => {
    const c = await controller();
    await c.reconcile();
    expect(await value('pvx_audit_findings', { rule: 'class-not-expandable', severity: 'warning' })).toBe(1);
    expect(await value('pvx_audit_findings', { rule: 'resize-stuck' })).toBe(0);
    expect(await value('pvx_audit_namespace_findings', { namespace: 'db', severity: 'warning' })).toBe(1);
    expect(await value('pvx_audit_runs_total', {})).toBe(1);
    // pvx why's chain: the class holds the claim.
    expect(await value('pvx_claims_held', { namespace: 'db', gate: 'storage-class' })).toBe(1);
    const events = fake.events.filter((e) => e.reason === 'AuditClassNotExpandable');
    expect(events).toHaveLength(1);
    expect(events[0]?.regarding).toMatchObject({ kind: 'PersistentVolumeClaim', namespace: 'db', name: 'data', uid: 'uid-data' });
    expect(events[0]?.message).toMatch(/Remedy: /);

    await c.reconcile();
    expect(fake.events.filter((e) => e.reason === 'AuditClassNotExpandable')).toHaveLength(1);
  });

  it('tries an Event again at the next pass when recording it failed', async () => {
    const c = await controller();
    const emit = fake.emitEvent.bind(fake);
    let fail = true;
    fake.emitEvent = async (e) => {
      if (fail) throw new Error('throttled');
      return emit(e);
    };
    await c.reconcile();
    expect(fake.events).toHaveLength(0);
    fail = false;
    await c.reconcile();
    expect(fake.events.filter((e) => e.reason === 'AuditClassNotExpandable')).toHaveLength(1);
  });

  it('audits every other claim when one has a size it cannot read, and reports that one as a finding', async () => {
    fake.create(resources.storageClasses, {
      apiVersion: 'storage.k8s.io/v1',
      kind: 'StorageClass',
      metadata: { name: 'fast' },
      provisioner: 'x',
      allowVolumeExpansion: true,
    } as V1StorageClass);
    fake.create(resources.persistentVolumeClaims, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'odd', namespace: 'db', uid: 'uid-odd' },
      spec: { storageClassName: 'fast', resources: { requests: { storage: '12 Gi' } } },
      status: { phase: 'Bound', capacity: { storage: '10Gi' } },
    } as V1PersistentVolumeClaim);
    // A quota and a policy: the quota-headroom rule validates the policy's next step for each claim.
    fake.create(resources.resourceQuotas, {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'q', namespace: 'db' },
      spec: { hard: { 'requests.storage': '100Gi' } },
    } as KubernetesObject);
    fake.create(volumeExpansionPolicies, {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionPolicy',
      metadata: { name: 'grow', namespace: 'db' },
      spec: { triggers: { usedPercent: 80 } },
    } as KubernetesObject);
    const c = await controller();
    await c.reconcile();
    expect(await value('pvx_audit_runs_total', {})).toBe(1);
    expect(await value('pvx_audit_findings', { rule: 'class-not-expandable' })).toBe(1);
    expect(await value('pvx_audit_findings', { rule: 'claim-unreadable', severity: 'warning' })).toBe(1);
    // The unreadable claim is held where its size is needed; the other by its class.
    expect(await value('pvx_claims_held', { namespace: 'db', gate: 'binding' })).toBe(1);
    expect(await value('pvx_claims_held', { namespace: 'db', gate: 'storage-class' })).toBe(1);
    expect(c.findings.find((f) => f.rule === 'claim-unreadable')).toMatchObject({
      name: 'odd',
      message: expect.stringContaining('spec.resources.requests.storage "12 Gi"'),
    });
    expect(fake.events.filter((e) => e.reason === 'AuditClaimUnreadable').map((e) => e.regarding.name)).toEqual(['odd']);
  });

  it('drops a namespace’s series once its findings are gone', async () => {
    const c = await controller();
    await c.reconcile();
    fake.delete(resources.persistentVolumeClaims, 'db', 'data');
    await vi.waitFor(() => expect(informers[0]?.size).toBe(0));
    await c.reconcile();
    expect(await value('pvx_audit_findings', { rule: 'class-not-expandable' })).toBe(0);
    expect(await value('pvx_audit_namespace_findings', { namespace: 'db' })).toBeUndefined();
    expect(await value('pvx_claims_held', { namespace: 'db' })).toBeUndefined();
  });
});
