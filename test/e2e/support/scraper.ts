// A scraper's credentials for pvx's /metrics, as a cluster gives them to Prometheus: a
// ServiceAccount bound to the ClusterRole pvx-metrics-reader (applied from
// config/rbac/metrics_reader_role.yaml as shipped) and a token of it (TokenRequest). pvx reviews
// that token with the real API server, as it would Prometheus's.
import type { KubernetesObject } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { applyObject, core } from './kube.ts';

const namespace = 'pvx-system';
const name = 'pvx-e2e-scraper';
const readerRole = resolve(import.meta.dirname, '..', '..', '..', 'config', 'rbac', 'metrics_reader_role.yaml');

let token: Promise<string> | undefined;

/** A bearer token allowed get on /metrics, minted once per test file (valid 24 h). */
export function scrapeToken(): Promise<string> {
  token ??= mint();
  return token;
}

async function mint(): Promise<string> {
  await core.createNamespace({ body: { metadata: { name: namespace } } }).catch(() => undefined);
  await applyObject({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } });
  for (const doc of parseAllDocuments(readFileSync(readerRole, 'utf8'))) await applyObject(doc.toJS() as KubernetesObject);
  await applyObject({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'pvx-metrics-reader' },
    subjects: [{ kind: 'ServiceAccount', name, namespace }],
  } as KubernetesObject);
  return mintScrapeToken(86_400);
}

/** Another token of the same scraper (a TokenRequest each time: a token pvx has never seen). */
export async function mintScrapeToken(expirationSeconds = 600): Promise<string> {
  const minted = await core.createNamespacedServiceAccountToken({ namespace, name, body: { spec: { audiences: [], expirationSeconds } } });
  const value = minted.status?.token;
  if (!value) throw new Error(`no token minted for ServiceAccount ${namespace}/${name}`);
  return value;
}
