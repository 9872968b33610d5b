// Runs pvx as its own ServiceAccount: applies config/rbac/, mints a token for the ServiceAccount
// (TokenRequest) and writes a kubeconfig with it, so the real API server's RBAC decides whether
// pvx's permissions are enough.
import { KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { applyObject, core, kc } from './kube.ts';
import { e2eLogDir } from './pvx-process.ts';

const rbacDir = resolve(import.meta.dirname, '..', '..', '..', 'config', 'rbac');
export const pvxNamespace = 'pvx-system';

/** Applies config/rbac/kubelet_usage_role.yaml: the kubelet reader, its nodes/stats, and pvx's right to mint its tokens. */
export async function ensureKubeletReader(): Promise<void> {
  await core.createNamespace({ body: { metadata: { name: pvxNamespace } } }).catch(() => undefined);
  for (const doc of parseAllDocuments(readFileSync(join(rbacDir, 'kubelet_usage_role.yaml'), 'utf8'))) await applyObject(doc.toJS() as KubernetesObject);
}

export async function serviceAccountKubeconfig(): Promise<string> {
  await core.createNamespace({ body: { metadata: { name: pvxNamespace } } }).catch(() => undefined);
  // pvx's own roles; the roles for people (user_roles.yaml) are no business of pvx's identity.
  for (const file of readdirSync(rbacDir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml' && f !== 'user_roles.yaml')) {
    for (const doc of parseAllDocuments(readFileSync(join(rbacDir, file), 'utf8'))) await applyObject(doc.toJS() as KubernetesObject);
  }
  return tokenKubeconfig(pvxNamespace, 'pvx', 'pvx-serviceaccount.kubeconfig', 3600);
}

/**
 * A kubeconfig for the ServiceAccount namespace/name, with a token minted for it (TokenRequest),
 * written under .e2e-logs as `file`: to act as that identity, whose RBAC the real API server
 * decides on.
 */
export async function tokenKubeconfig(namespace: string, name: string, file: string, expirationSeconds = 600): Promise<string> {
  const token = await core.createNamespacedServiceAccountToken({ namespace, name, body: { spec: { audiences: [], expirationSeconds } } });
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no cluster in the kubeconfig');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'c',
        cluster: {
          server: cluster.server,
          'certificate-authority-data': cluster.caData ?? (cluster.caFile ? readFileSync(cluster.caFile).toString('base64') : undefined),
        },
      },
    ],
    users: [{ name, user: { token: token.status?.token } }],
    contexts: [{ name, context: { cluster: 'c', user: name, namespace } }],
    'current-context': name,
  };
  mkdirSync(e2eLogDir, { recursive: true });
  const path = join(e2eLogDir, file);
  writeFileSync(path, stringify(config), { mode: 0o600 });
  return path;
}

interface RoleManifest extends KubernetesObject {
  rules?: { apiGroups?: string[]; resources?: string[]; verbs?: string[] }[];
  roleRef?: { name: string };
}

/**
 * Grants pvx's ServiceAccount one opt-in of config/components/<component>/ (its role.yaml), under
 * names of the suite's own (`<name>-<suffix>`), so no install of the chart meets them; `without`
 * leaves verbs out (e.g. create of statefulsets). Returns what revokes it.
 */
export async function grantOptIn(component: string, suffix: string, without: { resource: string; verb: string }[] = []): Promise<() => Promise<void>> {
  const file = resolve(import.meta.dirname, '..', '..', '..', 'config', 'components', component, 'role.yaml');
  const objects = parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as RoleManifest);
  const renamed = objects.map((o) => {
    const name = `${o.metadata?.name}-${suffix}`;
    const rules = o.rules?.map((r) => ({
      ...r,
      verbs: (r.verbs ?? []).filter((v) => !without.some((w) => r.resources?.includes(w.resource) && w.verb === v)),
    }));
    return {
      ...o,
      metadata: { ...o.metadata, name },
      ...(rules ? { rules } : {}),
      ...(o.roleRef ? { roleRef: { ...o.roleRef, name: `${o.roleRef.name}-${suffix}` } } : {}),
    } as RoleManifest;
  });
  for (const o of renamed) await applyObject(o);
  return async () => {
    const api = KubernetesObjectApi.makeApiClient(kc);
    for (const o of renamed) await api.delete(o as KubernetesObject & { metadata: { name: string } }).catch(() => undefined);
  };
}
