// Who may approve, decided by the real API server: the shipped roles for people
// (config/rbac/user_roles.yaml) and the ValidatingAdmissionPolicy pvx-approval
// (config/admission/), applied as shipped. A namespace user (bound to Kubernetes' `edit`, into
// which pvx-edit is aggregated) runs `pvx approve` and is refused with the policy's reason; an
// approver (also bound to pvx-approve) runs it and the approval is accepted, naming who approved;
// a running pvx then patches the claim. Every user is a ServiceAccount of the test's namespace with
// a minted token, so RBAC and admission judge them as they would a person.
//
// The policy pvx-request-origin is applied too: only pvx labels a request as a policy's or a
// StatefulSet request's, so the Event on a claim names who really grew it.
//
// The policy and the roles are cluster-scoped and named as the product names them: they are
// deleted afterwards, so a later `helm install` on this cluster does not find them.
import {
  AdmissionregistrationV1Api,
  ApiException,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { requestAnnotations, requestLabels } from '../../src/crds/keys.ts';
import type { VolumeExpansionRequest } from '../../src/crds/volume-expansion-request.ts';
import { runPvx } from './support/cli.ts';
import { e2eEnv } from './support/env.ts';
import { pvxNamespace, serviceAccountKubeconfig, tokenKubeconfig } from './support/identity.ts';
import { applyObject, bindPVC, core, createNamespace, createPVC, deleteNamespace, kc, readPVC, waitFor } from './support/kube.ts';
import { startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';

const repoRoot = resolve(import.meta.dirname, '..', '..');
const shipped = (file: string) => parseAllDocuments(readFileSync(join(repoRoot, file), 'utf8')).map((d) => d.toJS() as KubernetesObject);
const clusterObjects = [
  ...shipped('config/rbac/user_roles.yaml'),
  ...shipped('config/admission/approval_policy.yaml'),
  ...shipped('config/admission/request_origin_policy.yaml'),
];

const custom = kc.makeApiClient(CustomObjectsApi);
const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
const admission = kc.makeApiClient(AdmissionregistrationV1Api);
const crd = { group: 'pvx.dev', version: 'v1alpha1', plural: 'volumeexpansionrequests' };
const expandable = e2eEnv.expandableClass as string;

let ns: string;
let pvx: PvxProcess | undefined;
let userKubeconfig: string;
let approverKubeconfig: string;

const readRequest = async (name: string) => (await custom.getNamespacedCustomObject({ ...crd, namespace: ns, name })) as VolumeExpansionRequest;

/** Merge-patches the request's annotations as the user of `kubeconfig`; the API server's refusal, if any. */
async function annotateAs(
  kubeconfig: string,
  name: string,
  annotations: Record<string, string | null>,
  dryRun = false,
): Promise<ApiException<unknown> | undefined> {
  const as = new KubeConfig();
  as.loadFromFile(kubeconfig);
  try {
    await as
      .makeApiClient(CustomObjectsApi)
      .patchNamespacedCustomObject(
        { ...crd, namespace: ns, name, body: { metadata: { annotations } }, ...(dryRun ? { dryRun: 'All' } : {}) },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    return undefined;
  } catch (err) {
    if (err instanceof ApiException) return err;
    throw err;
  }
}

async function bind(name: string, clusterRole: string, serviceAccount: string): Promise<void> {
  await rbac.createNamespacedRoleBinding({
    namespace: ns,
    body: {
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
      subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace: ns }],
    },
  });
}

beforeAll(async () => {
  for (const obj of clusterObjects) await applyObject(obj);
  ns = await createNamespace('pvx-e2e-approval');
  for (const name of ['user', 'approver']) await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
  await bind('user-edit', 'edit', 'user');
  await bind('approver-edit', 'edit', 'approver');
  await bind('approver-approve', 'pvx-approve', 'approver');
  userKubeconfig = await tokenKubeconfig(ns, 'user', 'approval-user.kubeconfig');
  approverKubeconfig = await tokenKubeconfig(ns, 'approver', 'approval-approver.kubeconfig');

  pvx = startPvx(
    'approval',
    ['--leader-election-namespace', pvxNamespace, '--leader-election-id', 'pvx-e2e-approval', '--namespace', ns, '--usage-source', 'none'],
    await serviceAccountKubeconfig(),
  );
  await waitReady(pvx);
  await createPVC(ns, 'data', expandable, '1Gi');
  await bindPVC(ns, 'data');
  // As a policy in Approval mode creates it: marked required, waiting for an approval of its plan.
  await custom.createNamespacedCustomObject({
    ...crd,
    namespace: ns,
    body: {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: 'grow', annotations: { [requestAnnotations.approval]: 'required' } },
      spec: { target: { pvcName: 'data' }, size: '2Gi' },
    },
  });
  await waitFor('the request to await approval', 60_000, async () => (await readRequest('grow')).status?.reason === 'AwaitingApproval');
  // The API server takes a moment to load a new policy: wait until it refuses the user's approval (a dry run, which admission judges too).
  await waitFor(
    'the approval policy to be in force',
    60_000,
    async () => (await annotateAs(userKubeconfig, 'grow', { [requestAnnotations.approved]: 'x' }, true))?.code === 403,
  );
  await waitFor(
    'the request-origin policy to be in force',
    60_000,
    async () => (await createAs(userKubeconfig, 'forged', { [requestLabels.clusterPolicy]: 'fleet' }, true))?.code === 403,
  );
}, 240_000);

/** Creates a request for the claim data labelled `labels`, as the user of `kubeconfig`; the API server's refusal, if any. */
async function createAs(kubeconfig: string, name: string, labels: Record<string, string>, dryRun = false): Promise<ApiException<unknown> | undefined> {
  const as = new KubeConfig();
  as.loadFromFile(kubeconfig);
  try {
    await as.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      ...crd,
      namespace: ns,
      body: {
        apiVersion: 'pvx.dev/v1alpha1',
        kind: 'VolumeExpansionRequest',
        metadata: { name, labels },
        spec: { target: { pvcName: 'data' }, size: '2Gi', dryRun: true },
      },
      ...(dryRun ? { dryRun: 'All' } : {}),
    });
    return undefined;
  } catch (err) {
    if (err instanceof ApiException) return err;
    throw err;
  }
}

afterAll(async () => {
  if (pvx) await stopPvx(pvx);
  if (ns) await deleteNamespace(ns);
  const ignoreMissing = (err: unknown) => {
    if (!(err instanceof ApiException && err.code === 404)) throw err;
  };
  for (const obj of clusterObjects) {
    const name = obj.metadata?.name as string;
    if (obj.kind === 'ClusterRole') await rbac.deleteClusterRole({ name }).catch(ignoreMissing);
    else if (obj.kind === 'ValidatingAdmissionPolicyBinding') await admission.deleteValidatingAdmissionPolicyBinding({ name }).catch(ignoreMissing);
    else if (obj.kind === 'ValidatingAdmissionPolicy') await admission.deleteValidatingAdmissionPolicy({ name }).catch(ignoreMissing);
    else throw new Error(`no delete for ${obj.kind}`);
  }
});

describe.skipIf(!e2eEnv.expandableClass)('who may approve a VolumeExpansionRequest', () => {
  it('a namespace user may edit requests but not approve them: pvx approve is refused, saying why and who can', async () => {
    const refused = await runPvx(['approve', 'ver/grow', '-n', ns, '--kubeconfig', userKubeconfig]);
    process.stderr.write(`pvx approve as a namespace user: exit ${refused.code}\n${refused.stderr}`);
    expect(refused.code, refused.stdout).toBe(1);
    const user = `system:serviceaccount:${ns}:user`;
    expect(refused.stderr).toContain(
      `pvx: ${user} may not approve VolumeExpansionRequest grow in namespace ${ns} — the API server refused: only an approver may set pvx.dev/approved`,
    );
    expect(refused.stderr).toContain('Nothing was approved.');
    expect(refused.stderr).toContain(`--clusterrole=pvx-approve --serviceaccount=${ns}:user -n ${ns}`);
    expect((await readRequest('grow')).metadata.annotations?.[requestAnnotations.approved]).toBeUndefined();
    // …nor lift the mark that makes the request wait, nor sign as someone else.
    expect((await annotateAs(userKubeconfig, 'grow', { [requestAnnotations.approval]: null }))?.body).toMatch(
      /only an approver may lift pvx.dev\/approval=required/,
    );
    expect((await annotateAs(userKubeconfig, 'grow', { [requestAnnotations.approvedBy]: 'someone-else' }))?.body).toMatch(
      /pvx.dev\/approved-by must name the user who approves/,
    );
    // Not even with their own name: only an approver writes it (review, 2026-12-04).
    expect((await annotateAs(userKubeconfig, 'grow', { [requestAnnotations.approvedBy]: `system:serviceaccount:${ns}:user` }))?.body).toMatch(
      /pvx.dev\/approved-by must name the user who approves, written by them/,
    );
    // Editing is allowed (pvx-edit aggregated into edit): an annotation of the user's own.
    expect(await annotateAs(userKubeconfig, 'grow', { 'example.com/note': 'please approve' })).toBeUndefined();
    expect((await readPVC(ns, 'data')).spec?.resources?.requests?.storage).toBe('1Gi');
  });

  it('an approver’s pvx approve is accepted, names who approved, and pvx then grows the claim', async () => {
    const approver = `system:serviceaccount:${ns}:approver`;
    const approved = await runPvx(['approve', 'ver/grow', '-n', ns, '--kubeconfig', approverKubeconfig]);
    process.stderr.write(`pvx approve as an approver: exit ${approved.code}\n${approved.stdout}`);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toMatch(new RegExp(`^volumeexpansionrequest.pvx.dev/grow approved by ${approver}: `));
    const request = await readRequest('grow');
    expect(request.metadata.annotations?.[requestAnnotations.approvedBy]).toBe(approver);
    expect(request.metadata.annotations?.[requestAnnotations.approved]).toMatch(/-to-/);
    // Kept as the approver wrote it: a namespace user may neither rewrite nor remove it.
    expect((await annotateAs(userKubeconfig, 'grow', { [requestAnnotations.approvedBy]: `system:serviceaccount:${ns}:user` }))?.code).toBe(403);
    expect((await annotateAs(userKubeconfig, 'grow', { [requestAnnotations.approvedBy]: null }))?.code).toBe(403);
    await waitFor('the claim to be patched to 2Gi', 60_000, async () => (await readPVC(ns, 'data')).spec?.resources?.requests?.storage === '2Gi');
  });
});

// A request labelled as a ClusterVolumeExpansionPolicy's by a namespace editor would have the
// Event on its claim say the cluster's policy grew it.
describe('who may say a request comes from pvx', () => {
  it('a namespace user may not label a request as a policy’s or a StatefulSet request’s, on create or after', async () => {
    for (const label of [requestLabels.policy, requestLabels.clusterPolicy, requestLabels.parent]) {
      const refused = await createAs(userKubeconfig, `forged-${label.split('/')[1]}`, { [label]: 'fleet' }, true);
      expect(refused?.code, label).toBe(403);
      expect(String(refused?.body)).toMatch(
        new RegExp(`only pvx sets ${label} \\(they say which policy or request made this one\\): system:serviceaccount:${ns}:user may not`),
      );
    }
    // Unlabelled, the user's own request is theirs to make; labelled afterwards, refused too.
    expect(await createAs(userKubeconfig, 'mine', {})).toBeUndefined();
    const as = new KubeConfig();
    as.loadFromFile(userKubeconfig);
    const relabel = await as
      .makeApiClient(CustomObjectsApi)
      .patchNamespacedCustomObject(
        { ...crd, namespace: ns, name: 'mine', body: { metadata: { labels: { [requestLabels.clusterPolicy]: 'fleet' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )
      .then(
        () => undefined,
        (err: unknown) => err as ApiException<unknown>,
      );
    expect(relabel?.code).toBe(403);
  });

  it('pvx’s ServiceAccount may, and an editor may still edit what pvx labelled (its labels unchanged)', async () => {
    expect(await createAs(await serviceAccountKubeconfig(), 'by-pvx', { [requestLabels.policy]: 'grow' })).toBeUndefined();
    expect(await annotateAs(userKubeconfig, 'by-pvx', { 'example.com/note': 'seen' })).toBeUndefined();
  });
});
