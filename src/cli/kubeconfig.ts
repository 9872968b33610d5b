// Which cluster and namespace a command talks to, from --kubeconfig, KUBECONFIG or the in-cluster
// account — kept apart from the operator's wiring (run.ts), so that the read-only commands reach
// the cluster without importing the operator.
import { KubeConfig } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { ApiError } from '../k8s/errors.ts';
import { CommandFailure, UsageError } from './usage.ts';

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

/**
 * The error's message with what lies beneath it: fetch reports "fetch failed" and keeps the
 * network's reason (connect ECONNREFUSED, a certificate error) in its cause.
 */
function withRootCause(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  let root = err;
  while (root instanceof Error && root.cause instanceof Error) root = root.cause;
  const reason = root instanceof Error && root !== err ? root.message : undefined;
  return reason && !message.includes(reason) ? `${message} (${reason})` : message;
}

/**
 * A failure to read the cluster as one sentence naming the server: the API server's answer (the
 * error, or the cause of one that says what was being listed), or the network's failure.
 */
export function explainClusterError(err: unknown, server: string): CommandFailure {
  const answer = err instanceof ApiError ? err : err instanceof Error && err.cause instanceof ApiError ? err.cause : undefined;
  const message = withRootCause(err);
  if (answer?.code === 401) return new CommandFailure(`the API server at ${server} refused the kubeconfig's credentials (401 Unauthorized): ${answer.message}`);
  if (answer) return new CommandFailure(`the API server at ${server} answered ${answer.code} ${answer.reason}: ${message}`);
  return new CommandFailure(`cannot read the cluster at ${server}: ${message}`);
}
