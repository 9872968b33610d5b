// The Prometheus usage source against a real Prometheus server (Debian's prometheus package)
// scraping the embedded cluster's kubelet through the API server's node proxy, all on loopback.
import { CustomObjectsApi, Exec } from '@kubernetes/client-node';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import { nodeName, ports } from '../cluster/layout.ts';
import { identities, pki } from '../cluster/pki.ts';
import { e2eEnv } from './support/env.ts';
import { bindPVC, core, createNamespace, createPod, deleteNamespace, kc, readPVC, waitFor, waitForPodRunning } from './support/kube.ts';
import { startPrometheus, stopPrometheus, type PrometheusServer } from './support/prometheus.ts';
import { startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';

let prometheus: PrometheusServer | undefined;
let pvx: PvxProcess | undefined;
let ns: string;

describe.skipIf(!e2eEnv.embedded || !e2eEnv.usageClass)('usage from a real Prometheus (embedded cluster: scrapes its kubelet)', () => {
  beforeAll(async () => {
    prometheus = await startPrometheus('kubelet', () => ({
      global: { scrape_interval: '5s', evaluation_interval: '5s' },
      scrape_configs: [
        {
          job_name: 'kubelet',
          scheme: 'https',
          metrics_path: `/api/v1/nodes/${nodeName}/proxy/metrics`,
          tls_config: { ca_file: pki.caCert, cert_file: pki.cert(identities.admin), key_file: pki.key(identities.admin) },
          static_configs: [{ targets: [`127.0.0.1:${ports.apiserver}`], labels: { cluster: 'pvx-e2e' } }],
        },
      ],
    }));
    ns = await createNamespace('pvx-e2e-prom');
    pvx = startPvx('prom', [
      '--leader-elect=false',
      '--namespace',
      ns,
      '--policy-interval',
      '2s',
      '--usage-source',
      'prometheus',
      '--prometheus-url',
      prometheus.url,
      '--prometheus-matchers',
      'cluster="pvx-e2e"',
    ]);
    await waitReady(pvx);
  });

  afterAll(async () => {
    if (pvx) await stopPvx(pvx);
    if (prometheus) await stopPrometheus(prometheus);
    if (ns) await deleteNamespace(ns);
  });

  it('drives a policy: the volume a pod fills is grown through a request', async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const group = { group: 'pvx.dev', version: 'v1alpha1', namespace: ns };
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: 'fill', labels: { mode: 'prom' } },
        spec: { accessModes: ['ReadWriteOnce'], storageClassName: e2eEnv.usageClass, resources: { requests: { storage: '1Gi' } } },
      },
    });
    await bindPVC(ns, 'fill');
    await createPod(ns, 'fill', 'fill', 'until [ -e /data/go ]; do sleep 1; done; dd if=/dev/zero of=/data/fill bs=1M count=800 && sync; sleep 3600');
    await waitForPodRunning(ns, 'fill');
    await custom.createNamespacedCustomObject({
      ...group,
      plural: 'volumeexpansionpolicies',
      body: {
        apiVersion: 'pvx.dev/v1alpha1',
        kind: 'VolumeExpansionPolicy',
        metadata: { name: 'prom' },
        spec: { selector: { matchLabels: { mode: 'prom' } }, triggers: { usedPercent: 75, sustainedSamples: 2 }, step: { percent: 100 } },
      },
    });
    // Prometheus has the kubelet's series for the claim before anything is written.
    await waitFor(
      'kubelet_volume_stats_used_bytes in Prometheus',
      90_000,
      async () => {
        const result = await prometheus?.query(`kubelet_volume_stats_used_bytes{namespace="${ns}",persistentvolumeclaim="fill",cluster="pvx-e2e"}`);
        return result?.length === 1;
      },
      2000,
    );
    const sink = () => new Writable({ write: (_c, _e, cb) => cb() });
    await new Promise<void>((resolve, reject) => {
      new Exec(kc)
        .exec(ns, 'fill', 'main', ['touch', '/data/go'], sink(), sink(), null, false, (s) =>
          s.status === 'Success' ? resolve() : reject(new Error(JSON.stringify(s))),
        )
        .catch(reject);
    });
    let request: VolumeExpansionRequest | undefined;
    await waitFor(
      'the policy to create a request from Prometheus data',
      150_000,
      async () => {
        const list = (await custom.listNamespacedCustomObject({ ...group, plural: 'volumeexpansionrequests', labelSelector: 'pvx.dev/policy=prom' })) as {
          items: VolumeExpansionRequest[];
        };
        request = list.items[0];
        return request !== undefined;
      },
      2000,
    );
    expect(request?.spec.size).toBe('2Gi');
    await waitFor('capacity 2Gi', 120_000, async () => (await readPVC(ns, 'fill')).status?.capacity?.storage === '2Gi', 1000);
    expect((await pvx?.metric('pvx_usage_source_errors_total', { source: 'prometheus' })) ?? 0).toBe(0);
  });
});
