// Which claims a pod holds mounted — what node expansion waits for (the kubelet grows a file
// system only while a running pod mounts it) — and which pods hold a claim's volume at all. One
// reading for the request reconciler, the eviction step and the audit.
import type { V1Pod } from '@kubernetes/client-node';

/** The claims a pod's volumes name, whatever its state. */
export const podClaims = (pod: V1Pod): string[] =>
  (pod.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : []));

/** The claims a running pod mounts; none for a pod that is not running or is terminating. */
export function runningPodClaims(pod: V1Pod): string[] {
  if (pod.status?.phase !== 'Running' || pod.metadata?.deletionTimestamp) return [];
  return podClaims(pod);
}

/**
 * Whether the pod holds the claim's volume, or will: it names the claim and has not finished. A
 * pending pod mounts it once it starts; a terminating one holds it until its containers stop.
 */
export function holdsClaim(pod: V1Pod, claim: string): boolean {
  const phase = pod.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed' && podClaims(pod).includes(claim);
}
