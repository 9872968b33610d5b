// Which KubeClient adapter `pvx run` talks through. pvx's own HTTP client serves static credentials
// — the pod's service account, a kubeconfig with certificates or a token — and keeps client-node
// out of the process: its generated models and APIs take ~75 MiB of memory, more than the rest of
// the operator. Anything else (exec credential plugins, auth-providers, basic auth, impersonation,
// a SOCKS proxy, a KUBECONFIG of several files) goes through client-node, imported only then.
import type { CommandClient } from '../k8s/client.ts';
import { resolveConnection } from '../k8s/connection.ts';
import { HttpKubeClient } from '../k8s/http-client.ts';
import { kubeConfigAccess, type KubeletAccess } from './kubelet.ts';
import { kubeClients } from './commands.ts';
import { UsageError } from './errors.ts';

export { kubeClients };
export type KubeClientChoice = (typeof kubeClients)[number];

export interface Connected {
  client: CommandClient;
  /** The API server's URL, for messages. */
  server: string;
  /** The namespace of the kubeconfig's current context (in a pod, its own): what -n defaults to. */
  namespace: string | undefined;
  adapter: 'http' | 'client-node';
  /** Why client-node serves this connection (auto only). */
  fallbackReason?: string;
  /** The same identity, and the cluster CA, for reading the kubelets directly. */
  kubelet: KubeletAccess;
}

/** The namespace -n names, else the kubeconfig context's, else "default" — what a Kubernetes user expects. */
export function namespaceOf(connected: Pick<Connected, 'namespace'>, flag: string | undefined): string {
  return flag ?? connected.namespace ?? 'default';
}

/**
 * The client for the kubeconfig at `path` (else KUBECONFIG, ~/.kube/config or the service
 * account): `http` insists on pvx's own (a usage error says why it cannot), `client-node` on
 * client-node's, `auto` takes pvx's own when it can serve the credentials.
 */
export async function connect(path: string | undefined, choice: KubeClientChoice = 'auto'): Promise<Connected> {
  let fallbackReason: string | undefined;
  // Read whichever client is chosen: a kubeconfig pvx refuses (TLS verification off and a CA) is
  // refused for client-node too, which would not verify.
  const resolved = await refusedAsUsage(() => resolveConnection(path));
  if (choice !== 'client-node') {
    if ('connection' in resolved) {
      const { connection } = resolved;
      const client = await refusedAsUsage(async () => new HttpKubeClient(connection));
      const kubelet: KubeletAccess = {
        credentials: () => ({ token: client.bearerToken(), ...(connection.cert && connection.key ? { cert: connection.cert, key: connection.key } : {}) }),
        ...(connection.ca ? { clusterCa: { pem: connection.ca, source: connection.caSource ?? connection.source } } : {}),
      };
      return { client, server: connection.server, namespace: connection.namespace, adapter: 'http', kubelet };
    }
    if (choice === 'http') throw new UsageError(`--kube-client http cannot serve this connection: ${resolved.unsupported}`);
    fallbackReason = resolved.unsupported;
  }
  // client-node reports a missing or empty kubeconfig in its own words (loadKubeConfig's usage errors).
  const [{ NodeKubeClient }, { loadKubeConfig }] = await Promise.all([import('../k8s/node-client.ts'), import('./kubeconfig.ts')]);
  const kc = loadKubeConfig(path);
  return {
    client: new NodeKubeClient(kc),
    server: kc.getCurrentCluster()?.server ?? '(no server)',
    namespace: kc.getContextObject(kc.getCurrentContext())?.namespace,
    adapter: 'client-node',
    ...(fallbackReason ? { fallbackReason } : {}),
    kubelet: kubeConfigAccess(kc),
  };
}

/** A TypeError from reading the connection (a contradictory kubeconfig, a proxy pvx cannot use) is the user's to fix. */
async function refusedAsUsage<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof TypeError) throw new UsageError(err.message);
    throw err;
  }
}
