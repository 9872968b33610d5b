// Shipping: the Helm chart and the kustomize install render the same objects, the chart lints,
// the operator's pod meets Pod Security "restricted" on paper and before the real API server's
// admission, both renders pass a server-side dry-run apply, and `kubectl pvx` runs the CLI.
// These live in the e2e project because they need helm and kubectl, which the e2e global setup
// builds on a fresh machine; they need no pvx process.
import { ApiException, type V1Deployment, type V1PodSpec } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { repoRoot } from '../cluster/layout.ts';
import { e2eEnv } from './support/env.ts';
import { core, deleteNamespace } from './support/kube.ts';
import {
  byKey,
  cachedBinary,
  chartDir,
  differences,
  exec,
  execOK,
  find,
  helmKeepAnnotation,
  helmLabels,
  helmTemplate,
  installNamespace,
  kustomizeAt,
  kustomizeDefault,
  kustomizeWith,
  objectKey,
  parseManifests,
  placeholderImage,
  podFromDeployment,
  releaseName,
  withoutHelmBookkeeping,
  type Manifest,
} from './support/manifests.ts';

let helmDefault: Manifest[];
let kustomized: Manifest[];

beforeAll(async () => {
  helmDefault = await helmTemplate();
  kustomized = await kustomizeDefault();
});

type Labels = Record<string, string>;
interface PodDisruptionBudget {
  spec: { minAvailable: number; selector: { matchLabels: Labels } };
}
interface MetricsService {
  metadata: { labels: Labels };
  spec: { selector: Labels; ports: { name: string }[] };
}
interface ScrapeEndpoint {
  port: string;
  path: string;
  honorLabels: boolean;
}
interface ServiceMonitor {
  metadata: { labels: Labels };
  spec: { selector: { matchLabels: Labels }; namespaceSelector: { matchNames: string[] }; endpoints: ScrapeEndpoint[] };
}
interface PodMonitor {
  spec: { selector: { matchLabels: Labels }; podMetricsEndpoints: ScrapeEndpoint[] };
}

const podSpec = (d: V1Deployment): V1PodSpec => d.spec?.template.spec as V1PodSpec;

/** What differs between a helm render (by key, its bookkeeping removed) and a kustomize one, apart from the Namespace only kustomize ships: one line each. */
function helmAgainstKustomize(fromHelm: Map<string, Manifest>, kustomizeRender: Manifest[]): string[] {
  const fromKustomize = byKey(kustomizeRender);
  fromKustomize.delete(`v1 Namespace ${installNamespace}`);
  return [
    ...[...fromHelm.keys()].filter((k) => !fromKustomize.has(k)).map((k) => `only in helm: ${k}`),
    ...[...fromKustomize.keys()].filter((k) => !fromHelm.has(k)).map((k) => `only in kustomize: ${k}`),
    ...[...fromHelm.keys()].filter((k) => fromKustomize.has(k)).flatMap((k) => differences(fromHelm.get(k), fromKustomize.get(k)).map((d) => `${k}: ${d}`)),
  ];
}
const kinds = (ms: Manifest[]) => ms.map((m) => `${m.kind}/${m.metadata.name}`);

describe('the Helm chart', () => {
  it('passes helm lint --strict with its defaults and with every optional part switched on', async () => {
    const helm = await cachedBinary('helm');
    execOK(helm, ['lint', '--strict', chartDir, '--set', placeholderImage]);
    execOK(helm, [
      'lint',
      '--strict',
      chartDir,
      '--set',
      placeholderImage,
      '--set',
      'serviceMonitor.enabled=true,podMonitor.enabled=true,prometheusRule.enabled=true,grafanaDashboard.enabled=true,usageSource=prometheus,prometheus.url=http://prometheus:9090,crds.install=false,networkPolicy.enabled=true,statefulSetTemplates.enabled=true,offlineExpansion.enabled=true',
    ]);
    execOK(helm, [
      'lint',
      '--strict',
      chartDir,
      '--set',
      placeholderImage,
      '--set',
      'networkPolicy.enabled=true,kubelet.caConfigMap=kubelet-ca,kubelet.preferredAddressTypes={Hostname,InternalIP}',
    ]);
  });

  it('passes the kubelet source its CA, address types or the unsafe opt-out, and refuses both at once', async () => {
    const args = async (values: string[]) => podSpec(find<V1Deployment>(await helmTemplate(values), 'Deployment', 'pvx')).containers[0]?.args ?? [];
    expect((podSpec(find<V1Deployment>(helmDefault, 'Deployment', 'pvx')).containers[0]?.args ?? []).filter((a) => a.startsWith('--kubelet'))).toEqual([]);
    expect(await args(['kubelet.caFile=/etc/ssl/kubelet-ca.crt', 'kubelet.preferredAddressTypes={Hostname,InternalIP}'])).toEqual(
      expect.arrayContaining(['--kubelet-ca-file=/etc/ssl/kubelet-ca.crt', '--kubelet-preferred-address-types=Hostname,InternalIP']),
    );
    const mounted = await helmTemplate(['kubelet.caConfigMap=kubelet-ca']);
    const spec = podSpec(find<V1Deployment>(mounted, 'Deployment', 'pvx'));
    expect(spec.containers[0]?.args).toContain('--kubelet-ca-file=/etc/pvx/kubelet-ca/ca.crt');
    expect(spec.volumes).toEqual([{ name: 'kubelet-ca', configMap: { name: 'kubelet-ca' } }]);
    expect(spec.containers[0]?.volumeMounts).toEqual([{ name: 'kubelet-ca', mountPath: '/etc/pvx/kubelet-ca', readOnly: true }]);
    expect(await args(['kubelet.insecureTLS=true'])).toContain('--kubelet-insecure-tls');
    await expect(helmTemplate(['kubelet.insecureTLS=true', 'kubelet.caFile=/ca.crt'])).rejects.toThrow(/kubelet.insecureTLS turns off the check/);
    await expect(helmTemplate(['kubelet.preferredAddressTypes={PodIP}'])).rejects.toThrow(/\/kubelet\/preferredAddressTypes\/0': value must be one of/);
  });

  it('renders a NetworkPolicy only when asked: egress to the API server, DNS and the usage source, ingress to https (from the monitoring namespace) and health', async () => {
    interface Port {
      port: number | string;
      protocol: string;
    }
    interface NetworkPolicy {
      spec: { podSelector: { matchLabels: Labels }; ingress: { ports: Port[]; from?: unknown[] }[]; egress: { ports: Port[]; to?: unknown[] }[] };
    }
    expect(helmDefault.filter((m) => m.kind === 'NetworkPolicy')).toEqual([]);
    const ports = (p: NetworkPolicy, dir: 'ingress' | 'egress') => p.spec[dir].map((r) => r.ports.map((x) => `${x.port}/${x.protocol}`).join(','));
    const kubelet = find<NetworkPolicy>(await helmTemplate(['networkPolicy.enabled=true']), 'NetworkPolicy', 'pvx');
    expect(kubelet.spec.podSelector.matchLabels).toEqual(find<V1Deployment>(helmDefault, 'Deployment', 'pvx').spec?.selector.matchLabels);
    expect(ports(kubelet, 'ingress')).toEqual(['https/TCP', 'health/TCP']);
    expect(ports(kubelet, 'egress')).toEqual(['443/TCP,6443/TCP', '53/UDP,53/TCP', '10250/TCP']);
    expect(kubelet.spec.egress.map((r) => r.to)).toEqual([undefined, undefined, undefined]);
    // Scrapes only from the monitoring namespace by default; another namespace, or peers, in its place.
    expect(kubelet.spec.ingress[0]?.from).toEqual([{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }]);
    const observability = find<NetworkPolicy>(
      await helmTemplate(['networkPolicy.enabled=true', 'networkPolicy.metrics.namespace=observability']),
      'NetworkPolicy',
      'pvx',
    );
    expect(observability.spec.ingress[0]?.from).toEqual([{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'observability' } } }]);
    await expect(helmTemplate(['networkPolicy.enabled=true', 'networkPolicy.metrics.namespace='])).rejects.toThrow(
      /networkPolicy.metrics needs the namespace Prometheus runs in/,
    );
    const prometheus = find<NetworkPolicy>(
      await helmTemplate([
        'networkPolicy.enabled=true',
        'usageSource=prometheus',
        'prometheus.url=http://prometheus.monitoring:9090',
        'networkPolicy.apiServer.cidrs={10.0.0.0/24}',
        'networkPolicy.metrics.from[0].namespaceSelector.matchLabels.team=monitoring',
      ]),
      'NetworkPolicy',
      'pvx',
    );
    expect(ports(prometheus, 'egress')).toEqual(['443/TCP,6443/TCP', '53/UDP,53/TCP', '9090/TCP']);
    expect(prometheus.spec.egress[0]?.to).toEqual([{ ipBlock: { cidr: '10.0.0.0/24' } }]);
    expect(prometheus.spec.ingress[0]?.from).toEqual([{ namespaceSelector: { matchLabels: { team: 'monitoring' } } }]);
  });

  it('renders the approval and request-origin policies unless approvalPolicy.enabled is false; the origin is pvx of the release’s namespace', async () => {
    expect(
      kinds(helmDefault)
        .filter((k) => k.startsWith('ValidatingAdmissionPolicy'))
        .sort(),
    ).toEqual([
      'ValidatingAdmissionPolicy/pvx-approval',
      'ValidatingAdmissionPolicy/pvx-request-origin',
      'ValidatingAdmissionPolicyBinding/pvx-approval',
      'ValidatingAdmissionPolicyBinding/pvx-request-origin',
    ]);
    const elsewhere = await helmTemplate([], 'storage-ops');
    expect(JSON.stringify(find(elsewhere, 'ValidatingAdmissionPolicy', 'pvx-request-origin'))).toContain("'system:serviceaccount:storage-ops:pvx'");
    expect(kinds(await helmTemplate(['approvalPolicy.enabled=false'])).filter((k) => k.startsWith('ValidatingAdmissionPolicy'))).toEqual([]);
  });

  it('renders the same objects as kubectl kustomize config/default, apart from Helm bookkeeping and the Namespace', () => {
    for (const m of helmDefault) {
      // The normalisation below only removes these, so they must really be there.
      expect(m.metadata.labels, objectKey(m)).toMatchObject(helmLabels);
      if (m.kind === 'CustomResourceDefinition') expect(m.metadata.annotations, objectKey(m)).toMatchObject(helmKeepAnnotation);
    }
    const fromHelm = byKey(helmDefault.map(withoutHelmBookkeeping));
    const fromKustomize = byKey(kustomized);
    // Helm installs into a namespace that exists (or that --create-namespace makes), so only
    // kustomize ships it; docs/install.md has Helm users label it the same way.
    const namespaceKey = `v1 Namespace ${installNamespace}`;
    expect(fromKustomize.get(namespaceKey)?.metadata.labels).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'restricted' });
    fromKustomize.delete(namespaceKey);

    const onlyHelm = [...fromHelm.keys()].filter((k) => !fromKustomize.has(k));
    const onlyKustomize = [...fromKustomize.keys()].filter((k) => !fromHelm.has(k));
    const changed = [...fromHelm.keys()]
      .filter((k) => fromKustomize.has(k))
      .flatMap((k) => differences(fromHelm.get(k), fromKustomize.get(k)).map((d) => `${k}: ${d}   (helm ≠ kustomize)`));
    const report = [...onlyHelm.map((k) => `only in helm: ${k}`), ...onlyKustomize.map((k) => `only in kustomize: ${k}`), ...changed];
    expect(report, `charts/pvx and config/default differ:\n${report.join('\n')}`).toEqual([]);
    // Not vacuous: the comparison covered the whole install.
    expect(kinds(kustomized).sort()).toEqual(
      [
        'ClusterRole/pvx-kubelet-usage',
        'ClusterRole/pvx-manager',
        'ClusterRole/pvx-metrics-auth',
        'ClusterRole/pvx-metrics-reader',
        'ClusterRole/pvx-view',
        'ClusterRole/pvx-edit',
        'ClusterRole/pvx-approve',
        'ClusterRoleBinding/pvx-kubelet-usage',
        'ClusterRoleBinding/pvx-manager',
        'ClusterRoleBinding/pvx-metrics-auth',
        'CustomResourceDefinition/clustervolumeexpansionpolicies.pvx.dev',
        'CustomResourceDefinition/volumeexpansionpolicies.pvx.dev',
        'CustomResourceDefinition/volumeexpansionrequests.pvx.dev',
        'Deployment/pvx',
        'Namespace/pvx-system',
        'PodDisruptionBudget/pvx',
        'Role/pvx-kubelet-identity',
        'Role/pvx-leader-election',
        'RoleBinding/pvx-kubelet-identity',
        'RoleBinding/pvx-leader-election',
        'Service/pvx-metrics',
        'ServiceAccount/pvx',
        'ServiceAccount/pvx-usage-reader',
        'ValidatingAdmissionPolicy/pvx-approval',
        'ValidatingAdmissionPolicyBinding/pvx-approval',
        'ValidatingAdmissionPolicy/pvx-request-origin',
        'ValidatingAdmissionPolicyBinding/pvx-request-origin',
      ].sort(),
    );
  });

  it('with both opt-ins on, renders the same objects as config/default with their kustomize components; off (the default), neither role', async () => {
    const optIns = ['pvx-statefulset-templates', 'pvx-pod-eviction'];
    expect([...helmDefault, ...kustomized].filter((m) => optIns.includes(m.metadata.name))).toEqual([]);
    const fromHelm = byKey((await helmTemplate(['statefulSetTemplates.enabled=true', 'offlineExpansion.enabled=true'])).map(withoutHelmBookkeeping));
    expect(helmAgainstKustomize(fromHelm, await kustomizeWith(['statefulset-templates', 'offline-expansion']))).toEqual([]);
    expect([...fromHelm.keys()].filter((k) => optIns.some((n) => k.endsWith(` ${n}`))).sort()).toEqual([
      'rbac.authorization.k8s.io/v1 ClusterRole pvx-pod-eviction',
      'rbac.authorization.k8s.io/v1 ClusterRole pvx-statefulset-templates',
      'rbac.authorization.k8s.io/v1 ClusterRoleBinding pvx-pod-eviction',
      'rbac.authorization.k8s.io/v1 ClusterRoleBinding pvx-statefulset-templates',
    ]);
  });

  it('binds the opt-ins in listed namespaces only (RoleBindings to their ClusterRoles), as the kustomize example does', async () => {
    const listed = [
      'statefulSetTemplates.enabled=true',
      'offlineExpansion.enabled=true',
      'statefulSetTemplates.namespaces={team-a,team-b}',
      'offlineExpansion.namespaces={team-a,team-b}',
    ];
    const fromHelm = byKey((await helmTemplate(listed)).map(withoutHelmBookkeeping));
    expect(helmAgainstKustomize(fromHelm, await kustomizeAt('config/examples/opt-ins-per-namespace'))).toEqual([]);
    const bindings = [...fromHelm.values()]
      .filter((m) => ['pvx-statefulset-templates', 'pvx-pod-eviction'].includes(m.metadata.name) && m.kind.endsWith('Binding'))
      .map((m) => `${m.kind} ${m.metadata.namespace ?? '-'}/${m.metadata.name}`)
      .sort();
    expect(bindings).toEqual([
      'RoleBinding team-a/pvx-pod-eviction',
      'RoleBinding team-a/pvx-statefulset-templates',
      'RoleBinding team-b/pvx-pod-eviction',
      'RoleBinding team-b/pvx-statefulset-templates',
    ]);
  });

  it('runs two replicas with leader election, metrics over HTTPS, health probes on their own port and a PodDisruptionBudget', () => {
    const deployment = find<V1Deployment>(helmDefault, 'Deployment', 'pvx');
    expect(deployment.spec?.replicas).toBe(2);
    const container = podSpec(deployment).containers[0];
    expect(container?.args).toEqual(
      expect.arrayContaining(['run', '--leader-elect=true', '--usage-source=kubelet', '--metrics-bind-address=:8443', '--health-probe-bind-address=:8081']),
    );
    expect(container?.args?.some((a) => a.startsWith('--metrics-secure'))).toBe(false);
    expect(container?.ports).toEqual([
      { name: 'https', containerPort: 8443, protocol: 'TCP' },
      { name: 'health', containerPort: 8081, protocol: 'TCP' },
    ]);
    expect(container?.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'health' });
    expect(container?.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'health' });
    expect(container?.resources?.requests).toBeDefined();
    expect(container?.resources?.limits).toBeDefined();
    const pdb = find<PodDisruptionBudget>(helmDefault, 'PodDisruptionBudget', 'pvx');
    expect(pdb.spec.minAvailable).toBe(1);
    expect(deployment.spec?.template.metadata?.labels).toMatchObject(pdb.spec.selector.matchLabels);
  });

  it('gives the operator a pod that meets Pod Security "restricted" field by field', () => {
    const spec = podSpec(find<V1Deployment>(helmDefault, 'Deployment', 'pvx'));
    expect(spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65534, seccompProfile: { type: 'RuntimeDefault' } });
    expect(spec.hostNetwork ?? false).toBe(false);
    expect(spec.hostPID ?? false).toBe(false);
    expect(spec.volumes ?? []).toEqual([]);
    for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
      expect(c.securityContext, c.name).toMatchObject({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      expect(c.securityContext?.privileged ?? false).toBe(false);
      expect(c.securityContext?.capabilities?.add ?? []).toEqual([]);
    }
  });

  it('grants nodes/stats get (never nodes/proxy) only with the kubelet usage source', async () => {
    const kubeletRole = (ms: Manifest[]) => ms.filter((m) => m.metadata.name === 'pvx-kubelet-usage').map((m) => m.kind);
    expect(kubeletRole(helmDefault).sort()).toEqual(['ClusterRole', 'ClusterRoleBinding']);
    expect((find(helmDefault, 'ClusterRole', 'pvx-kubelet-usage') as Manifest & { rules: unknown[] }).rules).toEqual([
      { apiGroups: [''], resources: ['nodes/stats'], verbs: ['get'] },
    ]);
    expect(JSON.stringify([...helmDefault, ...kustomized])).not.toContain('nodes/proxy');
    const none = await helmTemplate(['usageSource=none']);
    expect(kubeletRole(none)).toEqual([]);
    expect(podSpec(find<V1Deployment>(none, 'Deployment', 'pvx')).containers[0]?.args).toContain('--usage-source=none');
    const prometheus = await helmTemplate(['usageSource=prometheus', 'prometheus.url=http://prometheus.monitoring:9090']);
    expect(kubeletRole(prometheus)).toEqual([]);
    expect(podSpec(find<V1Deployment>(prometheus, 'Deployment', 'pvx')).containers[0]?.args).toEqual(
      expect.arrayContaining(['--usage-source=prometheus', '--prometheus-url=http://prometheus.monitoring:9090']),
    );
  });

  it('refuses to install without an image, saying how to build and push one (none is published)', async () => {
    const res = exec(await cachedBinary('helm'), ['template', releaseName, chartDir, '--namespace', installNamespace]);
    expect(res.status).not.toBe(0);
    expect(res.stderr).toMatch(
      /image.repository is not set: no pvx image is published yet\. Build it from the pvx repository's Dockerfile .* --set image.repository=REGISTRY\/pvx/,
    );
  });

  it('refuses values that would run two writers, an unknown usage source, a malformed duration or a misspelt key', async () => {
    await expect(helmTemplate(['leaderElection.enabled=false'])).rejects.toThrow(/only replicaCount: 1/);
    await expect(helmTemplate(['usageSource=prometheus'])).rejects.toThrow(/needs prometheus.url/);
    // values.schema.json: each mistake named at its path.
    await expect(helmTemplate(['usageSource=cadvisor'])).rejects.toThrow(/\/usageSource': value must be one of 'kubelet', 'prometheus', 'none'/);
    await expect(helmTemplate(['audit.interval=often'])).rejects.toThrow(/\/audit\/interval': 'often' does not match pattern/);
    await expect(helmTemplate(['replicaCount=two'])).rejects.toThrow(/\/replicaCount': got string, want integer/);
    await expect(helmTemplate(['replicaCont=3'])).rejects.toThrow(/additional properties 'replicaCont' not allowed/);
    const single = await helmTemplate(['leaderElection.enabled=false', 'replicaCount=1']);
    expect(podSpec(find<V1Deployment>(single, 'Deployment', 'pvx')).containers[0]?.args).toContain('--leader-elect=false');
    // One replica with minAvailable 1 would block every node drain.
    expect(single.filter((m) => m.kind === 'PodDisruptionBudget')).toEqual([]);
  });

  it('scrapes through a ServiceMonitor or PodMonitor that select the metrics Service and pods on port "https", with a bearer token', async () => {
    expect(helmDefault.filter((m) => m.apiVersion === 'monitoring.coreos.com/v1')).toEqual([]);
    const rendered = await helmTemplate(['serviceMonitor.enabled=true', 'podMonitor.enabled=true', 'serviceMonitor.labels.release=kube-prometheus']);
    const service = find<MetricsService>(rendered, 'Service', 'pvx-metrics');
    const deployment = find<V1Deployment>(rendered, 'Deployment', 'pvx');
    const serviceMonitor = find<ServiceMonitor>(rendered, 'ServiceMonitor', 'pvx');
    const podMonitor = find<PodMonitor>(rendered, 'PodMonitor', 'pvx');

    expect(serviceMonitor.metadata.labels.release).toBe('kube-prometheus');
    expect(service.metadata.labels).toMatchObject(serviceMonitor.spec.selector.matchLabels);
    expect(serviceMonitor.spec.namespaceSelector.matchNames).toEqual([installNamespace]);
    expect(serviceMonitor.spec.endpoints).toEqual([
      expect.objectContaining({
        port: 'https',
        scheme: 'https',
        path: '/metrics',
        honorLabels: true,
        bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
        tlsConfig: { insecureSkipVerify: true },
      }),
    ]);
    expect(service.spec.ports.map((p) => p.name)).toContain('https');
    expect(deployment.spec?.template.metadata?.labels).toMatchObject(service.spec.selector);

    expect(deployment.spec?.template.metadata?.labels).toMatchObject(podMonitor.spec.selector.matchLabels);
    expect(podMonitor.spec.podMetricsEndpoints).toEqual([
      expect.objectContaining({
        port: 'https',
        scheme: 'https',
        path: '/metrics',
        honorLabels: true,
        authorization: { type: 'Bearer', credentials: { name: 'pvx-metrics-token', key: 'token' } },
      }),
    ]);
    expect(podSpec(deployment).containers[0]?.ports?.map((p) => p.name)).toContain('https');
  });

  it('serves a certificate Secret, checks it with a given CA, or opts out of HTTPS', async () => {
    const withCert = await helmTemplate([
      'serviceMonitor.enabled=true',
      'metrics.certSecretName=pvx-metrics-cert',
      'metrics.scrapeTLS.insecureSkipVerify=false',
      'metrics.scrapeTLS.ca.secret.name=pvx-metrics-cert',
      'metrics.scrapeTLS.ca.secret.key=ca.crt',
      'metrics.scrapeTLS.serverName=pvx-metrics.pvx-system.svc',
    ]);
    const spec = podSpec(find<V1Deployment>(withCert, 'Deployment', 'pvx'));
    expect(spec.containers[0]?.args).toContain('--metrics-cert-dir=/tmp/k8s-metrics-server/metrics-certs');
    expect(spec.containers[0]?.volumeMounts).toEqual([{ name: 'metrics-certs', mountPath: '/tmp/k8s-metrics-server/metrics-certs', readOnly: true }]);
    expect(spec.volumes).toEqual([{ name: 'metrics-certs', secret: { secretName: 'pvx-metrics-cert' } }]);
    expect(find<ServiceMonitor>(withCert, 'ServiceMonitor', 'pvx').spec.endpoints[0]).toMatchObject({
      tlsConfig: { insecureSkipVerify: false, ca: { secret: { name: 'pvx-metrics-cert', key: 'ca.crt' } }, serverName: 'pvx-metrics.pvx-system.svc' },
    });

    const plain = await helmTemplate(['metrics.secure=false', 'serviceMonitor.enabled=true']);
    expect(podSpec(find<V1Deployment>(plain, 'Deployment', 'pvx')).containers[0]?.args).toContain('--metrics-secure=false');
    const endpoint = find<ServiceMonitor>(plain, 'ServiceMonitor', 'pvx').spec.endpoints[0] as unknown as Record<string, unknown>;
    expect(endpoint).toMatchObject({ port: 'http', scheme: 'http' });
    expect(endpoint).not.toHaveProperty('bearerTokenFile');
    // No token review, so no permission to make one.
    expect(plain.filter((m) => m.metadata.name.startsWith('pvx-metrics-') && m.kind.startsWith('ClusterRole'))).toEqual([]);
    await expect(helmTemplate(['metrics.secure=false', 'metrics.certSecretName=x'])).rejects.toThrow(/metrics.certSecretName is for HTTPS/);
  });

  it('renders the same ServiceMonitor and PodMonitor as config/prometheus/', async () => {
    const rendered = (await helmTemplate(['serviceMonitor.enabled=true', 'podMonitor.enabled=true'])).map(withoutHelmBookkeeping);
    for (const [kind, file] of [
      ['ServiceMonitor', 'servicemonitor.yaml'],
      ['PodMonitor', 'podmonitor.yaml'],
    ] as const) {
      const shipped = parseManifests(readFileSync(join(repoRoot, 'config', 'prometheus', file), 'utf8'));
      const diff = differences(find(rendered, kind, 'pvx'), find(shipped, kind, 'pvx'));
      expect(diff, `charts/pvx's ${kind} differs from config/prometheus/${file} (helm ≠ file):\n${diff.join('\n')}`).toEqual([]);
    }
  });

  it('ships the alert rules as a PrometheusRule equal to config/prometheus/alerts.yaml, and the dashboard in a ConfigMap for Grafana', async () => {
    const rendered = (await helmTemplate(['prometheusRule.enabled=true', 'grafanaDashboard.enabled=true'])).map(withoutHelmBookkeeping);
    const rule = find<{ spec: unknown }>(rendered, 'PrometheusRule', 'pvx');
    const shipped = find<{ spec: unknown }>(
      parseManifests(readFileSync(join(repoRoot, 'config', 'prometheus', 'alerts.yaml'), 'utf8')),
      'PrometheusRule',
      'pvx',
    );
    // The rules' own {{ $labels.* }} templates reach Prometheus untouched by Helm.
    expect(rule.spec).toEqual(shipped.spec);
    const dashboard = find<{ metadata: { labels: Record<string, string> }; data: Record<string, string> }>(rendered, 'ConfigMap', 'pvx-grafana-dashboard');
    expect(dashboard.metadata.labels.grafana_dashboard).toBe('1');
    expect(JSON.parse(dashboard.data['pvx-dashboard.json'] ?? '')).toEqual(
      JSON.parse(readFileSync(join(repoRoot, 'config', 'grafana', 'pvx-dashboard.json'), 'utf8')),
    );
    expect(helmDefault.filter((m) => m.kind === 'PrometheusRule' || m.metadata?.name === 'pvx-grafana-dashboard')).toEqual([]);
  });

  it('installs the CRDs unless crds.install is false', async () => {
    expect(helmDefault.filter((m) => m.kind === 'CustomResourceDefinition')).toHaveLength(3);
    const without = await helmTemplate(['crds.install=false']);
    expect(without.filter((m) => m.kind === 'CustomResourceDefinition')).toEqual([]);
    expect(without.length).toBe(helmDefault.length - 3);
  });
});

describe('on the cluster', () => {
  let kubectl: string;
  const kubectlOn = (args: string[], input?: string) => exec(kubectl, ['--kubeconfig', e2eEnv.kubeconfig, ...args], { input });
  let restricted: string;

  beforeAll(async () => {
    kubectl = await cachedBinary('kubectl');
    // Namespaced objects can only be dry-run into a namespace that exists. Other suites share
    // pvx-system (they run pvx as its ServiceAccount), so it is created if missing and kept.
    await core.createNamespace({ body: { metadata: { name: installNamespace } } }).catch((err: unknown) => {
      if (!(err instanceof ApiException && err.code === 409)) throw err;
    });
    restricted = `pvx-e2e-pss-${randomBytes(3).toString('hex')}`;
    const enforceRestricted = { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' };
    await core.createNamespace({ body: { metadata: { name: restricted, labels: { 'pvx.dev/e2e': 'true', ...enforceRestricted } } } });
    // The pod names ServiceAccount pvx, which admission requires to exist.
    await core.createNamespacedServiceAccount({ namespace: restricted, body: { metadata: { name: 'pvx' } } });
  });

  afterAll(async () => {
    if (restricted) await deleteNamespace(restricted);
  });

  it.each([
    ['helm template', () => helmDefault],
    ['kubectl kustomize', () => kustomized],
  ])('applies every object of %s with kubectl apply --dry-run=server', (_how, manifests) => {
    const objects = manifests();
    const res = kubectlOn(['apply', '--dry-run=server', '-o', 'name', '-f', '-'], objects.map((m) => `---\n${stringify(m)}`).join(''));
    expect(
      res.stderr.split('\n').filter((l) => l && !/^Warning: /.test(l)),
      `kubectl apply said:\n${res.stderr}`,
    ).toEqual([]);
    expect(res.status).toBe(0);
    expect(res.stdout.trim().split('\n').length).toBe(objects.length);
  });

  it('applies the NetworkPolicy (networkPolicy.enabled) with kubectl apply --dry-run=server', async () => {
    const policy = (await helmTemplate(['networkPolicy.enabled=true', 'networkPolicy.kubelet.cidrs={198.18.231.0/24}'])).filter(
      (m) => m.kind === 'NetworkPolicy',
    );
    expect(policy).toHaveLength(1);
    const res = kubectlOn(['apply', '--dry-run=server', '-o', 'name', '-f', '-'], stringify(policy[0]));
    expect(
      res.stderr.split('\n').filter((l) => l && !/^Warning: /.test(l)),
      `kubectl apply said:\n${res.stderr}`,
    ).toEqual([]);
    expect(res.stdout.trim()).toBe('networkpolicy.networking.k8s.io/pvx');
  });

  it.each([
    ['helm template', () => helmDefault],
    ['kubectl kustomize', () => kustomized],
  ])('admits the pod of the %s Deployment in a namespace that enforces "restricted", and refuses a weakened copy', (_how, manifests) => {
    const pod = podFromDeployment(find<V1Deployment>(manifests(), 'Deployment', 'pvx'), 'pvx-pss', restricted);
    const create = (p: Manifest) => kubectlOn(['create', '--dry-run=server', '-o', 'name', '-f', '-'], stringify(p));

    const admitted = create(pod);
    expect(admitted.stderr, 'the rendered pod is refused').toBe('');
    expect(admitted.stdout.trim()).toBe('pod/pvx-pss');

    // The same admission must be able to say no, or the admission above proves nothing.
    const escalating = structuredClone(pod) as Manifest & { spec: V1PodSpec };
    for (const c of escalating.spec.containers) c.securityContext = { ...c.securityContext, allowPrivilegeEscalation: true };
    const refusedEscalation = create(escalating);
    expect(refusedEscalation.status).not.toBe(0);
    expect(refusedEscalation.stderr).toMatch(/violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false/);

    const mayRunAsRoot = structuredClone(pod) as Manifest & { spec: V1PodSpec };
    delete mayRunAsRoot.spec.securityContext?.runAsNonRoot;
    const refusedRoot = create(mayRunAsRoot);
    expect(refusedRoot.status).not.toBe(0);
    expect(refusedRoot.stderr).toMatch(/violates PodSecurity "restricted:latest": runAsNonRoot != true/);
  });
});

describe('the kubectl plugin', () => {
  let binDir: string;

  afterAll(() => {
    if (binDir) rmSync(binDir, { recursive: true, force: true });
  });

  it('npm run build makes dist/cli/main.js, and kubectl pvx --help runs it as a plugin', async () => {
    const kubectl = await cachedBinary('kubectl');
    const path = [dirname(process.execPath), process.env.PATH ?? ''].join(delimiter);
    execOK('npm', ['run', 'build'], { env: { ...process.env, PATH: path } });
    const main = join(repoRoot, 'dist', 'cli', 'main.js');
    // kubectl runs only plugins it can execute.
    expect(statSync(main).mode & 0o111, `${main} is not executable`).not.toBe(0);

    // A PATH of this one directory: the plugin, and the node its #!/usr/bin/env line asks for.
    // Nothing else is on it, so another kubectl-pvx installed on this machine cannot answer instead.
    binDir = mkdtempSync(join(tmpdir(), 'pvx-plugin-'));
    symlinkSync(main, join(binDir, 'kubectl-pvx'));
    symlinkSync(process.execPath, join(binDir, 'node'));
    const env = { ...process.env, PATH: binDir };
    expect(execOK(kubectl, ['plugin', 'list', '--name-only'], { env })).toMatch(/^kubectl-pvx$/m);
    const help = execOK(kubectl, ['pvx', '--help'], { env });
    expect(help).toContain('usage: pvx <command> [flags]');
    expect(help).toContain('install-crds');
  });
});
