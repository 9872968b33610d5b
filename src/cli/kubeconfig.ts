// Which cluster and namespace a command talks to, from --kubeconfig, KUBECONFIG or the in-cluster
// account — kept apart from the operator's wiring (src/operator/wiring.ts), so that the read-only commands reach
// the cluster without importing the operator.
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
  if (!kc.getCurrentCluster()) throw new UsageError('no cluster configured: pass --kubeconfig, set KUBECONFIG, or run in a cluster');
  return kc;
}

/** The namespace -n names, else the kubeconfig context's, else "default" — what a Kubernetes user expects. */
export function namespaceOf(kc: KubeConfig, flag: string | undefined): string {
  return flag ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
}
