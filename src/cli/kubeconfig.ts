// The kubeconfig as client-node loads it: only for the connections pvx's own client cannot serve
// (exec plugins, auth-providers, a KUBECONFIG of several files …), imported by connect.ts when one
// needs it.
import { KubeConfig } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { proxyFor } from '../k8s/proxy.ts';
import { UsageError } from './errors.ts';

export function loadKubeConfig(path?: string, env: NodeJS.ProcessEnv = process.env): KubeConfig {
  const kc = new KubeConfig();
  if (path) {
    if (!existsSync(path)) throw new UsageError(`kubeconfig ${path} does not exist`);
    kc.loadFromFile(path);
  } else {
    kc.loadFromDefault();
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new UsageError('no cluster configured: pass --kubeconfig, set KUBECONFIG, or run in a cluster');
  // As for a single file (connection.ts): client-node would skip verification and ignore the CA.
  if (cluster.skipTLSVerify && (cluster.caData || cluster.caFile))
    throw new UsageError(
      `kubeconfig ${path ?? process.env.KUBECONFIG ?? '(default)'}: cluster ${cluster.name}: insecure-skip-tls-verify and a certificate authority together are not allowed (client-go refuses them too): remove one`,
    );
  withEnvironmentProxy(kc, cluster.name, env);
  return kc;
}

/**
 * client-node connects directly unless the kubeconfig names a proxy-url: HTTPS_PROXY and NO_PROXY
 * apply to it here by client-go's rules (proxy.ts), as they do to pvx's own client — an EKS or GKE
 * kubeconfig (an exec plugin, so client-node's) behind a corporate proxy reaches its API server
 * through it. A kubeconfig's own proxy-url wins.
 */
function withEnvironmentProxy(kc: KubeConfig, clusterName: string, env: NodeJS.ProcessEnv): void {
  const cluster = kc.clusters.find((c) => c.name === clusterName);
  if (!cluster || cluster.proxyUrl) return;
  let proxy: URL | undefined;
  try {
    proxy = proxyFor(new URL(cluster.server), env);
  } catch (err) {
    throw new UsageError(`cluster ${cluster.name}: ${(err as Error).message}`);
  }
  if (proxy) kc.clusters = kc.clusters.map((c) => (c === cluster ? { ...c, proxyUrl: proxy.href } : c));
}
