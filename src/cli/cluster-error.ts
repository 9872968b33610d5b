// A failure to reach or read the cluster, said in one sentence naming the server — for every
// command, whichever KubeClient adapter it uses (so this module imports neither).
import { ApiError } from '../k8s/errors.ts';
import { CommandFailure } from './errors.ts';

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
