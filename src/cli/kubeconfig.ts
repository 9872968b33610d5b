// The kubeconfig as client-node loads it: only for the connections pvx's own client cannot serve
// (exec plugins, auth-providers, a KUBECONFIG of several files …), imported by connect.ts when one
// needs it.
import { KubeConfig } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { UsageError } from './usage.ts';

export function loadKubeConfig(path?: string): KubeConfig {
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
  return kc;
}
