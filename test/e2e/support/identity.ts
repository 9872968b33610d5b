// Runs pvx as its own ServiceAccount: applies config/rbac/, mints a token for the ServiceAccount
// (TokenRequest) and writes a kubeconfig with it, so the real API server's RBAC decides whether
// pvx's permissions are enough.
import type { KubernetesObject } from '@kubernetes/client-node';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { applyObject, core, kc } from './kube.ts';
import { e2eLogDir } from './pvx-process.ts';

const rbacDir = resolve(import.meta.dirname, '..', '..', '..', 'config', 'rbac');
export const pvxNamespace = 'pvx-system';

export async function serviceAccountKubeconfig(): Promise<string> {
  await core.createNamespace({ body: { metadata: { name: pvxNamespace } } }).catch(() => undefined);
  for (const file of readdirSync(rbacDir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')) {
    for (const doc of parseAllDocuments(readFileSync(join(rbacDir, file), 'utf8'))) await applyObject(doc.toJS() as KubernetesObject);
  }
  const token = await core.createNamespacedServiceAccountToken({ namespace: pvxNamespace, name: 'pvx', body: { spec: { audiences: [], expirationSeconds: 3600 } } });
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('no cluster in the kubeconfig');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster: { server: cluster.server, 'certificate-authority-data': cluster.caData ?? (cluster.caFile ? readFileSync(cluster.caFile).toString('base64') : undefined) } }],
    users: [{ name: 'pvx', user: { token: token.status?.token } }],
    contexts: [{ name: 'pvx', context: { cluster: 'c', user: 'pvx', namespace: pvxNamespace } }],
    'current-context': 'pvx',
  };
  mkdirSync(e2eLogDir, { recursive: true });
  const file = join(e2eLogDir, 'pvx-serviceaccount.kubeconfig');
  writeFileSync(file, stringify(config), { mode: 0o600 });
  return file;
}
