// pvx as its users run it: the image built from the Dockerfile, installed into the cluster by
// `kubectl apply -k` and by `helm install`, running as two pods in a namespace that enforces Pod
// Security "restricted", with the standard in-cluster configuration (the `kubernetes` Service
// through kube-proxy, the projected ServiceAccount token). The suite needs the embedded cluster:
// it builds and imports the image there.
import { AppsV1Api, CoordinationV1Api, CustomObjectsApi, DiscoveryV1Api, type V1Pod } from '@kubernetes/client-node';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { adoptCRDs, crdNames, restrictedLabels as restricted } from '../cluster/install-pvx.ts';
import { importOperatorImage, operatorImage } from '../cluster/operator-image.ts';
import { auditLogEnd, readAuditEvents } from './support/audit-log.ts';
import { e2eEnv } from './support/env.ts';
import { bindPVC, core, createNamespace, createPod, createPVC, deleteNamespace, kc, readPVC, waitFor, waitForPodRunning } from './support/kube.ts';
import { cachedBinary, chartDir, execOK, exec, helmTemplate, kustomizeDir, parseManifests } from './support/manifests.ts';
import { startPrometheus, stopPrometheus, type PrometheusServer } from './support/prometheus.ts';
import { e2eLogDir, httpsGet } from './support/pvx-process.ts';
import { scrapeToken } from './support/scraper.ts';
import { requestsIn } from './support/requests.ts';

const apps = kc.makeApiClient(AppsV1Api);
const coordination = kc.makeApiClient(CoordinationV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const discovery = kc.makeApiClient(DiscoveryV1Api);
const expandable = e2eEnv.expandableClass as string;

let kubectl: string;
let helm: string;
/** Where the workloads live: claims and pods the installed pvx grows. */
let work: string;
const requests = () => requestsIn(work);
const log = (line: string) => process.stdout.write(`in-cluster: ${line}\n`);
const seconds = (sinceMs: number) => `${((Date.now() - sinceMs) / 1000).toFixed(1)}s`;
const kube = (args: string[], input?: string) => execOK(kubectl, ['--kubeconfig', e2eEnv.kubeconfig, ...args], input === undefined ? {} : { input });
const helmCmd = (...args: string[]) => execOK(helm, ['--kubeconfig', e2eEnv.kubeconfig, ...args]);

beforeAll(async () => {
  kubectl = await cachedBinary('kubectl');
  helm = await cachedBinary('helm');
  const started = Date.now();
  await importOperatorImage(log);
  log(`image built (or found in the cache) and imported in ${seconds(started)}`);
  work = await createNamespace('pvx-e2e-inc');
}, 600_000);

afterAll(async () => {
  if (work) await deleteNamespace(work);
});

/** A bound claim of the expandable class, mounted by a running pod when `mounted`. */
async function claim(name: string, mounted = true): Promise<void> {
  await createPVC(work, name, expandable, '1Gi');
  await bindPVC(work, name);
  if (mounted) await mount(name);
}

async function mount(name: string): Promise<void> {
  await createPod(work, name, name);
  await waitForPodRunning(work, name);
}

/** A request applied with kubectl, as a user would. */
function applyRequest(name: string, pvcName: string, size: string): void {
  const manifest = { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionRequest', metadata: { name, namespace: work }, spec: { target: { pvcName }, size } };
  kube(['apply', '-f', '-'], stringify(manifest));
}

async function operatorPods(namespace: string): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace, labelSelector: 'app.kubernetes.io/name=pvx' })).items;
}
const isReady = (p: V1Pod) => !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** Waits until exactly `count` pvx pods are Ready and no other pvx pod is left. */
async function waitForReadyReplicas(namespace: string, count: number, timeoutMs = 180_000): Promise<V1Pod[]> {
  let pods: V1Pod[] = [];
  await waitFor(
    `${count} Ready pvx pods (and no others) in ${namespace}`,
    timeoutMs,
    async () => {
      pods = await operatorPods(namespace);
      return pods.length === count && pods.every(isReady);
    },
    500,
  );
  return pods;
}

/** The pod that holds pvx's Lease, once one does. */
async function leader(namespace: string, among: V1Pod[], timeoutMs = 60_000): Promise<string> {
  let holder: string | undefined;
  const names = among.map((p) => p.metadata?.name);
  await waitFor(
    `one of ${names.join(', ')} to lead`,
    timeoutMs,
    async () => {
      holder = (await coordination.readNamespacedLease({ namespace, name: 'pvx-leader' }).catch(() => undefined))?.spec?.holderIdentity ?? undefined;
      return holder !== undefined && names.includes(holder);
    },
    500,
  );
  return holder as string;
}

/**
 * What runs is the image built from the Dockerfile, as the non-root user the manifests ask for, on
 * the pod network: it reaches the API server through the `kubernetes` Service (kube-proxy), with
 * the in-cluster configuration and no kubeconfig.
 */
function expectOurImage(pods: V1Pod[]): void {
  for (const p of pods) {
    expect(p.spec?.containers[0]?.image).toBe(`${operatorImage.repository}:${operatorImage.tag}`);
    expect(p.spec?.securityContext).toMatchObject({ runAsNonRoot: true });
    expect(p.spec?.hostNetwork).toBeFalsy();
    expect(p.status?.podIP).toMatch(/^10\.244\.0\./);
    expect(p.spec?.containers[0]?.args?.some((a) => a.includes('kubeconfig'))).toBe(false);
  }
}

/** The claim patches the installed pvx made (its ServiceAccount's successful PATCHes of the claim) since `from`. */
const claimPatchesBy = (namespace: string, from: number, claimName: string) =>
  readAuditEvents(from).filter(
    (e) =>
      e.stage === 'ResponseComplete' &&
      e.verb === 'patch' &&
      e.user.username === `system:serviceaccount:${namespace}:pvx` &&
      e.objectRef?.resource === 'persistentvolumeclaims' &&
      e.objectRef.subresource === undefined &&
      e.objectRef.name === claimName &&
      e.objectRef.namespace === work &&
      e.responseStatus?.code === 200,
  );

/** The fields of a Prometheus Operator ServiceMonitor the scrape job is made from. */
interface ServiceMonitor {
  metadata: { name: string };
  spec: {
    namespaceSelector: { matchNames: string[] };
    selector: { matchLabels: Record<string, string> };
    endpoints: { port: string; path?: string; scheme: string; bearerTokenFile?: string; honorLabels?: boolean; tlsConfig?: { insecureSkipVerify?: boolean } }[];
  };
}

/**
 * The addresses a ServiceMonitor endpoint scrapes: the ready endpoints, on the named port, of the
 * Services its selector picks in its namespaces (what Prometheus's `endpoints` discovery yields).
 */
async function serviceMonitorTargets(monitor: ServiceMonitor, port: string): Promise<string[]> {
  const selector = Object.entries(monitor.spec.selector.matchLabels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const targets: string[] = [];
  for (const namespace of monitor.spec.namespaceSelector.matchNames) {
    for (const service of (await core.listNamespacedService({ namespace, labelSelector: selector })).items) {
      const slices = await discovery.listNamespacedEndpointSlice({ namespace, labelSelector: `kubernetes.io/service-name=${service.metadata?.name}` });
      for (const slice of slices.items) {
        const number = slice.ports?.find((p) => p.name === port)?.port;
        if (number === undefined) continue;
        for (const e of slice.endpoints ?? []) if (e.conditions?.ready) targets.push(...e.addresses.map((a) => `${a}:${number}`));
      }
    }
  }
  return targets;
}

async function expectCompleted(name: string, timeoutMs = 180_000): Promise<void> {
  const { request } = await requests().follow(name, undefined, timeoutMs);
  expect(request.status?.phase, request.status?.message).toBe('Completed');
}

describe.runIf(e2eEnv.embedded)('installed with kubectl apply -k (the embedded cluster: the image is imported into its containerd)', () => {
  const namespace = 'pvx-system';
  /** An overlay as a user writes one: our image, never pulled (it exists only in this cluster). */
  const overlay = join(e2eLogDir, 'kustomize-in-cluster');

  beforeAll(() => {
    mkdirSync(overlay, { recursive: true });
    writeFileSync(
      join(overlay, 'kustomization.yaml'),
      stringify({
        resources: [relative(overlay, kustomizeDir)],
        images: [{ name: 'registry.example/pvx', newName: operatorImage.repository, newTag: operatorImage.tag }],
        patches: [
          {
            target: { kind: 'Deployment', name: 'pvx' },
            patch: stringify([{ op: 'replace', path: '/spec/template/spec/containers/0/imagePullPolicy', value: 'Never' }]),
          },
        ],
      }),
    );
  });

  afterAll(() => {
    // Everything the overlay made but the CRDs (the other suites' requests live in them).
    const objects = parseManifests(kube(['kustomize', overlay])).filter((m) => m.kind !== 'CustomResourceDefinition');
    exec(kubectl, ['--kubeconfig', e2eEnv.kubeconfig, 'delete', '--ignore-not-found', '--wait=true', '-f', '-'], {
      input: objects.map((o) => stringify(o)).join('---\n'),
    });
  });

  it('runs two Ready replicas under Pod Security restricted, one leading, and completes a request applied with kubectl', async () => {
    const started = Date.now();
    kube(['apply', '-k', overlay, '--server-side', '--force-conflicts']);
    const pods = await waitForReadyReplicas(namespace, 2);
    log(`kubectl apply -k → 2 Ready pods in ${seconds(started)}`);
    expectOurImage(pods);
    expect((await core.readNamespace({ name: namespace })).metadata?.labels).toMatchObject(restricted);
    await leader(namespace, pods);

    await claim('kustomized');
    const from = auditLogEnd();
    applyRequest('grow-kustomized', 'kustomized', '2Gi');
    await expectCompleted('grow-kustomized');
    expect((await readPVC(work, 'kustomized')).status?.capacity?.storage).toBe('2Gi');
    expect(claimPatchesBy(namespace, from, 'kustomized')).toHaveLength(1);
  });
});

describe.runIf(e2eEnv.embedded)('installed with helm (the embedded cluster: the image is imported into its containerd)', () => {
  const namespace = 'pvx-helm';
  const release = 'pvx';
  const image = [`image.repository=${operatorImage.repository}`, `image.tag=${operatorImage.tag}`, 'image.pullPolicy=Never'];
  const setValues = (values: string[]) => values.flatMap((v) => ['--set', v]);
  let pods: V1Pod[] = [];
  let prometheus: PrometheusServer | undefined;

  beforeAll(async () => {
    // The CRDs exist already (pvx install-crds made them for the other suites): Helm adopts them.
    await adoptCRDs(release, namespace);
    await core.createNamespace({ body: { metadata: { name: namespace, labels: restricted } } });
  });

  afterAll(async () => {
    if (prometheus) await stopPrometheus(prometheus);
    exec(helm, ['--kubeconfig', e2eEnv.kubeconfig, 'uninstall', release, '--namespace', namespace, '--wait']);
    await deleteNamespace(namespace);
  });

  it('helm install: two Ready replicas under Pod Security restricted, one leading; a request applied with kubectl completes', async () => {
    const started = Date.now();
    helmCmd('install', release, chartDir, '--namespace', namespace, ...setValues(image));
    pods = await waitForReadyReplicas(namespace, 2);
    log(`helm install → 2 Ready pods in ${seconds(started)}`);
    expectOurImage(pods);
    await leader(namespace, pods);

    await claim('helm-first');
    const from = auditLogEnd();
    applyRequest('grow-helm-first', 'helm-first', '2Gi');
    await expectCompleted('grow-helm-first');
    expect(claimPatchesBy(namespace, from, 'helm-first')).toHaveLength(1);
  });

  it('the leader pod deleted: the other replica takes over and completes the next request', async () => {
    const leading = await leader(namespace, pods);
    await claim('after-failover');
    const from = auditLogEnd();
    const deleted = Date.now();
    await core.deleteNamespacedPod({ namespace, name: leading });
    applyRequest('grow-after-failover', 'after-failover', '2Gi');
    await expectCompleted('grow-after-failover');
    log(`leader pod deleted → next request Completed in ${seconds(deleted)}`);
    const newLeader = await leader(namespace, await operatorPods(namespace));
    expect(newLeader).not.toBe(leading);
    expect(claimPatchesBy(namespace, from, 'after-failover')).toHaveLength(1);
    pods = await waitForReadyReplicas(namespace, 2); // the Deployment replaced the deleted pod
  });

  it('helm upgrade with changed values rolls the Deployment without losing or repeating an expansion in flight', async () => {
    // No pod mounts the claim: the request waits in the node stage through the whole roll.
    await claim('in-flight', false);
    const from = auditLogEnd();
    applyRequest('grow-in-flight', 'in-flight', '2Gi');
    await requests().follow('grow-in-flight', ['NodeExpansionPending', 'WaitingForPod'], 120_000);
    const before = new Set(pods.map((p) => p.metadata?.uid));
    // The embedded driver's limit, as a user gives a driver pvx has no profile of.
    const driverLimit = 'hostpath.pvx.dev=class-parameter:maxVolumeSize';
    helmCmd('upgrade', release, chartDir, '--namespace', namespace, ...setValues([...image, 'logLevel=debug', `maxVolumeSizes[0]=${driverLimit}`]));
    kube(['rollout', 'status', 'deployment/pvx', '--namespace', namespace, '--timeout=180s']);
    pods = await waitForReadyReplicas(namespace, 2);
    expect(pods.filter((p) => before.has(p.metadata?.uid))).toEqual([]);
    expect(pods.every((p) => p.spec?.containers[0]?.args?.includes('--log-level=debug'))).toBe(true);
    expect(pods.every((p) => p.spec?.containers[0]?.args?.includes(`--max-volume-size=${driverLimit}`))).toBe(true);
    await leader(namespace, pods);
    await mount('in-flight');
    await expectCompleted('grow-in-flight');
    expect(claimPatchesBy(namespace, from, 'in-flight')).toHaveLength(1);
  });

  it("Prometheus scrapes both pods through the Service with the ServiceMonitor's settings; an anonymous scrape is refused", async () => {
    // The ServiceMonitor as the chart renders it, turned into the scrape job the Prometheus
    // Operator would generate from it: the endpoints of the Service it selects, on its port, with
    // its scheme, path, TLS settings and token. Debian's Prometheus is built without Kubernetes
    // service discovery, so the test reads the Service's EndpointSlices itself, as that discovery
    // would, and gives Prometheus the targets in a file.
    const [monitor] = (await helmTemplate([...image, 'serviceMonitor.enabled=true'], namespace)).filter(
      (m) => m.kind === 'ServiceMonitor',
    ) as unknown as ServiceMonitor[];
    const endpoint = monitor?.spec.endpoints[0];
    if (!monitor || !endpoint) throw new Error('the chart rendered no ServiceMonitor endpoint');
    expect(endpoint).toMatchObject({ port: 'https', scheme: 'https', bearerTokenFile: expect.any(String), tlsConfig: { insecureSkipVerify: true } });
    const targets = await serviceMonitorTargets(monitor, endpoint.port);
    expect(targets).toHaveLength(2);
    const token = await scrapeToken();
    const job = `serviceMonitor/${namespace}/${monitor.metadata.name}/0`;
    prometheus = await startPrometheus(
      'in-cluster',
      (dir) => ({
        global: { scrape_interval: '2s' },
        scrape_configs: [
          {
            job_name: job,
            honor_labels: endpoint.honorLabels ?? false,
            scheme: endpoint.scheme,
            metrics_path: endpoint.path ?? '/metrics',
            // bearerTokenFile: the token Prometheus's ServiceAccount would have, in a file.
            authorization: { type: 'Bearer', credentials_file: join(dir, 'token') },
            tls_config: { insecure_skip_verify: endpoint.tlsConfig?.insecureSkipVerify ?? false },
            file_sd_configs: [{ files: [join(dir, 'targets.json')] }],
          },
        ],
      }),
      { token, 'targets.json': JSON.stringify([{ targets }]) },
    );
    type Targets = { activeTargets: { scrapePool: string; health: string; lastError: string; labels: Record<string, string> }[] };
    let scraped: Targets['activeTargets'] = [];
    await waitFor(
      'Prometheus to scrape both pvx pods',
      90_000,
      async () => {
        scraped = (await prometheus?.api<Targets>('/api/v1/targets'))?.activeTargets.filter((t) => t.scrapePool === job) ?? [];
        return scraped.length === 2 && scraped.every((t) => t.health === 'up');
      },
      1000,
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}; targets: ${JSON.stringify(scraped)}`);
    });
    const podIPs = pods.map((p) => p.status?.podIP);
    expect(scraped.map((t) => t.labels.instance?.split(':')[0]).sort()).toEqual([...podIPs].sort());
    // Both replicas serve metrics; one of them leads.
    await waitFor(
      "both replicas' leader gauge",
      30_000,
      async () => (await prometheus?.query(`leader_election_master_status{job="${job}"}`))?.length === 2,
      1000,
    );
    const leading = await prometheus?.query(`sum(leader_election_master_status{job="${job}"})`);
    expect(Number(leading?.[0]?.value[1])).toBe(1);

    const port = Number(pods[0]?.spec?.containers[0]?.ports?.find((p) => p.name === 'https')?.containerPort);
    const podIP = podIPs[0] as string;
    expect((await httpsGet(port, '/metrics', undefined, podIP)).status).toBe(401);
    const served = await httpsGet(port, '/metrics', token, podIP);
    expect(served.status).toBe(200);
    expect(served.body).toMatch(/^leader_election_master_status/m);
  });

  it('helm uninstall keeps the CRDs and the requests', async () => {
    helmCmd('uninstall', release, '--namespace', namespace, '--wait');
    await waitFor('the pvx pods to go', 120_000, async () => (await operatorPods(namespace)).length === 0);
    expect((await apps.listNamespacedDeployment({ namespace })).items).toEqual([]);
    for (const crd of crdNames) expect(kube(['get', 'crd', crd, '-o', 'name']).trim()).toBe(`customresourcedefinition.apiextensions.k8s.io/${crd}`);
    const left = (await custom.listNamespacedCustomObject({ group: 'pvx.dev', version: 'v1alpha1', plural: 'volumeexpansionrequests', namespace: work })) as {
      items: { metadata: { name: string } }[];
    };
    expect(left.items.map((r) => r.metadata.name).sort()).toEqual(['grow-after-failover', 'grow-helm-first', 'grow-in-flight', 'grow-kustomized']);
  });
});
