// Which claims a pod holds mounted — what node expansion waits for (the kubelet grows a file
// system only while a running pod mounts it). One reading for the request reconciler and the audit.
import type { V1Pod } from '@kubernetes/client-node';

/** The claims a running pod mounts; none for a pod that is not running or is terminating. */
export function runningPodClaims(pod: V1Pod): string[] {
  if (pod.status?.phase !== 'Running' || pod.metadata?.deletionTimestamp) return [];
  return (pod.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : []));
}
