// A namespace editor does their worst while another namespace expects its expansion on time. One
// pvx, as its ServiceAccount, handles the whole cluster. The tenant — a ServiceAccount granted in
// their namespace what pvx-edit grants, StatefulSets, and requests' status (the status writer of
// docs/security.md's threat model) — makes a StatefulSet of 5,000 replicas and asks
// pvx to grow it, creates hundreds of policies of 16 maintenance windows each, asks for an
// expansion the cluster's guardrail holds for approval, and forges that request's status as
// accepted. Meanwhile a request in a quiet namespace must grow its claim within a minute, and
// /metrics must answer. The tenant's namespace has a quota of no pods and no claims beyond the
// one it starts with: the StatefulSet controller makes nothing of the 5,000.
//
// Not 20 million, as bench/tenant-attacks.ts has pvx meet: a real cluster's own
// kube-controller-manager cannot hold that StatefulSet (it grew past 22 GiB here before it was
// stopped) — a cluster's limit on replicas is the cluster's to set (admission). 5,000 is past the
// 500 claims one request may grow, which is what pvx must refuse before it builds a name.
import { AppsV1Api, CustomObjectsApi, KubeConfig, PatchStrategy, RbacAuthorizationV1Api, setHeaderOptions, type V1StatefulSet } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import { e2eEnv } from './support/env.ts';
import { pvxNamespace, serviceAccountKubeconfig, tokenKubeconfig } from './support/identity.ts';
import { bindPVC, core, createNamespace, createPVC, deleteNamespace, guardNamespace, kc, readPVC, waitFor } from './support/kube.ts';
import { startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';

const expandable = e2eEnv.expandableClass as string;
const custom = kc.makeApiClient(CustomObjectsApi);
const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
const group = { group: 'pvx.dev', version: 'v1alpha1' };
/** How many policies the tenant makes: enough that parsing their windows per claim and pass (as pvx once did) stalled a pass for seconds. */
const policyCount = 300;

let hostile: string;
let quiet: string;
let pvx: PvxProcess | undefined;
let tenant: { custom: CustomObjectsApi; apps: AppsV1Api };
const guardrail = `pvx-e2e-tenant-${process.pid}`;

const request = (namespace: string, name: string, spec: object) => ({
  apiVersion: 'pvx.dev/v1alpha1',
  kind: 'VolumeExpansionRequest',
  metadata: { name, namespace },
  spec,
});
const readRequest = async (namespace: string, name: string) =>
  (await custom.getNamespacedCustomObject({ ...group, plural: 'volumeexpansionrequests', namespace, name })) as VolumeExpansionRequest;

/** The RSS of the pvx process, MiB (Linux). */
const rssMiB = (p: PvxProcess) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.child.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

beforeAll(async () => {
  hostile = await createNamespace('pvx-e2e-tenant');
  quiet = await createNamespace('pvx-e2e-quiet');
  await core.createNamespacedServiceAccount({ namespace: hostile, body: { metadata: { name: 'tenant' } } });
  // What pvx-edit grants (config/rbac/user_roles.yaml, aggregated into edit), StatefulSets as edit
  // has them, and requests' status: as a Role of the namespace, so no cluster-scoped role of the
  // product's name is left for a later helm install to meet.
  await rbac.createNamespacedRole({
    namespace: hostile,
    body: {
      metadata: { name: 'tenant' },
      rules: [
        {
          apiGroups: ['pvx.dev'],
          resources: ['volumeexpansionrequests', 'volumeexpansionpolicies'],
          verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
        },
        { apiGroups: ['pvx.dev'], resources: ['volumeexpansionrequests/status'], verbs: ['patch', 'update'] },
        { apiGroups: ['apps'], resources: ['statefulsets'], verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] },
      ],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: hostile,
    body: {
      metadata: { name: 'tenant' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tenant' },
      subjects: [{ kind: 'ServiceAccount', name: 'tenant', namespace: hostile }],
    },
  });
  const as = new KubeConfig();
  as.loadFromFile(await tokenKubeconfig(hostile, 'tenant', 'tenant.kubeconfig'));
  tenant = { custom: as.makeApiClient(CustomObjectsApi), apps: as.makeApiClient(AppsV1Api) };

  // The claim the tenant will ask to grow, then a quota that makes no pod and no other claim.
  await createPVC(hostile, 'data', expandable, '1Gi');
  await bindPVC(hostile, 'data');
  await core.createNamespacedResourceQuota({
    namespace: hostile,
    body: { metadata: { name: 'nothing-more' }, spec: { hard: { pods: '0', persistentvolumeclaims: '1' } } },
  });
  // The cluster's guardrail over the tenant's namespace: every expansion there waits for an approver.
  await guardNamespace(hostile, 'pvx.dev/e2e-tenant', guardrail, { requireApproval: true });
  await createPVC(quiet, 'data', expandable, '1Gi');
  await bindPVC(quiet, 'data');

  pvx = startPvx(
    'tenant',
    ['--leader-election-namespace', pvxNamespace, '--leader-election-id', 'pvx-e2e-tenant', '--usage-source', 'none', '--policy-interval', '2s'],
    await serviceAccountKubeconfig(),
  );
  await waitReady(pvx);
}, 180_000);

afterAll(async () => {
  if (pvx) await stopPvx(pvx);
  await custom.deleteClusterCustomObject({ ...group, plural: 'clustervolumeexpansionpolicies', name: guardrail }).catch(() => undefined);
  if (hostile) await deleteNamespace(hostile);
  if (quiet) await deleteNamespace(quiet);
});

describe.skipIf(!e2eEnv.expandableClass)('a namespace editor does their worst', () => {
  it('the tenant’s worst is refused or held, and another namespace’s expansion completes on time, its metrics scraped', async () => {
    const p = pvx as PvxProcess;
    // Past the claims one request may grow: refused before a claim name is built (20 million once cost pvx's leader and its standby their memory).
    const big: V1StatefulSet = {
      metadata: { name: 'big' },
      spec: {
        replicas: 5000,
        serviceName: 'big',
        selector: { matchLabels: { app: 'big' } },
        template: { metadata: { labels: { app: 'big' } }, spec: { containers: [{ name: 'c', image: 'registry.example/none' }] } },
        volumeClaimTemplates: [
          { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: expandable, resources: { requests: { storage: '1Gi' } } } },
        ],
      },
    };
    await tenant.apps.createNamespacedStatefulSet({ namespace: hostile, body: big });
    await tenant.custom.createNamespacedCustomObject({
      ...group,
      plural: 'volumeexpansionrequests',
      namespace: hostile,
      body: request(hostile, 'grow-big', { target: { statefulSetName: 'big', volumeClaimTemplate: 'data' }, size: '2Gi' }),
    });
    // Hundreds of policies of 16 windows each, created while the quiet namespace's request runs.
    const windows = Array.from({ length: 16 }, (_, i) => ({ schedule: `${i * 3} ${i % 24} * * *`, duration: '30m', timeZone: 'Europe/Berlin' }));
    const flood = (async () => {
      for (let i = 0; i < policyCount; i++) {
        await tenant.custom.createNamespacedCustomObject({
          ...group,
          plural: 'volumeexpansionpolicies',
          namespace: hostile,
          body: {
            apiVersion: 'pvx.dev/v1alpha1',
            kind: 'VolumeExpansionPolicy',
            metadata: { name: `p-${i}` },
            spec: { triggers: { usedPercent: 80 }, windows },
          },
        });
      }
    })();
    // A request of their own, unmarked, to dodge the approval; then its status forged as accepted.
    await tenant.custom.createNamespacedCustomObject({
      ...group,
      plural: 'volumeexpansionrequests',
      namespace: hostile,
      body: request(hostile, 'dodge', { target: { pvcName: 'data' }, size: '5Gi' }),
    });

    const started = Date.now();
    await custom.createNamespacedCustomObject({
      ...group,
      plural: 'volumeexpansionrequests',
      namespace: quiet,
      body: request(quiet, 'grow', { target: { pvcName: 'data' }, size: '2Gi' }),
    });
    let scrapes = 0;
    await waitFor(
      'the quiet namespace’s claim to grow',
      60_000,
      async () => {
        expect((await p.get('/metrics')).status).toBe(200);
        scrapes += 1;
        // The volume grown by its driver (the filesystem grows when a pod mounts it: there is none).
        return ['WaitingForPod', 'Completed'].includes((await readRequest(quiet, 'grow')).status?.phase ?? '');
      },
      1000,
    );
    const tookS = (Date.now() - started) / 1000;
    await flood;
    process.stderr.write(
      `tenant: the quiet namespace's volume grew in ${tookS.toFixed(1)} s beside ${policyCount} policies of 16 windows; ${scrapes} scrapes answered; pvx RSS ${rssMiB(p).toFixed(0)} MiB\n`,
    );
    expect(scrapes).toBeGreaterThan(0);

    await waitFor('the StatefulSet request to be refused', 30_000, async () => (await readRequest(hostile, 'grow-big')).status?.phase === 'Rejected');
    expect((await readRequest(hostile, 'grow-big')).status).toMatchObject({ reason: 'TooManyClaims' });
    await waitFor('the dodging request to await approval', 30_000, async () => (await readRequest(hostile, 'dodge')).status?.reason === 'AwaitingApproval');
    await tenant.custom.patchNamespacedCustomObjectStatus(
      {
        ...group,
        plural: 'volumeexpansionrequests',
        namespace: hostile,
        name: 'dodge',
        body: {
          status: {
            phase: 'Expanding',
            reason: 'Accepted',
            pvcName: 'data',
            acceptedPlan: { pvcUID: (await readPVC(hostile, 'data')).metadata?.uid, fromCapacity: '1Gi', targetSize: '5Gi' },
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    // The forged acceptance approves nothing: the claim stays, and the request waits for an approver again.
    await waitFor('pvx to look at the forged request', 30_000, async () => (await readRequest(hostile, 'dodge')).status?.reason !== 'Accepted', 1000);
    expect((await readRequest(hostile, 'dodge')).status?.phase).toBe('Pending');
    expect((await readPVC(hostile, 'data')).spec?.resources?.requests?.storage).toBe('1Gi');
    expect((await p.get('/healthz')).status).toBe(200);
    // The leader lived through it all: no out-of-memory exit, no restart.
    expect(p.child.exitCode).toBeNull();
  });
});
