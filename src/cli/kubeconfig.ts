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
  if (!kc.getCurrentCluster()) throw new UsageError('no cluster configured: pass --kubeconfig, set KUBECONFIG, or run in a cluster');
  return kc;
}
