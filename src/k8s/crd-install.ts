// Installs (creates or replaces) pvx's CRDs from config/crd/, as `kubectl apply` would: used by
// `pvx install-crds`, the demo and the e2e suites. The manifests are sent as raw JSON:
// client-node's typed serializer knows the schema's `x-kubernetes-validations` only by its
// camel-case model name and would silently drop the CEL rules.
import { readdirSync, readFileSync } from 'node:fs';
import { request, type RequestOptions } from 'node:https';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import type { KubeConfig } from '@kubernetes/client-node';

export const crdDir = resolve(import.meta.dirname, '..', '..', 'config', 'crd');
const base = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** One request to the API server and its answer, whatever its status. */
export type Exchange = (method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown) => Promise<{ status: number; json: Record<string, unknown> }>;

/** An Exchange through client-node's KubeConfig (its credentials applied to node:https). */
export const kubeConfigExchange =
  (kc: KubeConfig): Exchange =>
  (method, path, body) =>
    call(kc, method, path, body);

async function call(kc: KubeConfig, method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const server = new URL(kc.getCurrentCluster()?.server ?? '');
  const opts: RequestOptions = {
    method,
    hostname: server.hostname,
    port: server.port,
    path,
    headers: { 'content-type': 'application/json', accept: 'application/json' },
  };
  await kc.applyToHTTPSOptions(opts);
  return new Promise((resolvePromise, reject) => {
    const req = request(opts, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolvePromise({ status: res.statusCode ?? 0, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} }));
    });
    req.on('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** Installs every CRD of config/crd through `to`: a KubeConfig, or an Exchange (pvx's own client's). */
export async function installCRDs(to: KubeConfig | Exchange, log: (line: string) => void = () => undefined): Promise<void> {
  const exchange = typeof to === 'function' ? to : kubeConfigExchange(to);
  for (const file of readdirSync(crdDir).filter((f) => f.endsWith('.yaml'))) {
    const crd = parse(readFileSync(join(crdDir, file), 'utf8')) as { metadata: { name: string; resourceVersion?: string } };
    const name = crd.metadata.name;
    const existing = await exchange('GET', `${base}/${name}`);
    const res =
      existing.status === 200
        ? await exchange('PUT', `${base}/${name}`, {
            ...crd,
            metadata: { ...crd.metadata, resourceVersion: (existing.json.metadata as { resourceVersion: string }).resourceVersion },
          })
        : await exchange('POST', base, crd);
    if (res.status >= 300) throw new Error(`installing CRD ${name} from ${file}: HTTP ${res.status} ${JSON.stringify(res.json)}`);
    log(`${existing.status === 200 ? 'updated' : 'created'} CustomResourceDefinition ${name}`);
    for (let i = 0; i < 100; i++) {
      const cur = await exchange('GET', `${base}/${name}`);
      const conditions = (cur.json.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
      if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) break;
      await sleep(100);
    }
  }
}
