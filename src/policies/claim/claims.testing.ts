// Claims as the API server shows them, for the table tests of the decisions that read claims
// (the audit's rules, pvx why's gates): one fixture, one clock.
import type { V1PersistentVolumeClaim, V1PersistentVolumeClaimCondition } from '@kubernetes/client-node';

export const now = new Date('2026-11-29T12:00:00Z');
export const minutesAgo = (m: number) => new Date(now.getTime() - m * 60_000).toISOString();

export interface ClaimOptions {
  name?: string;
  namespace?: string;
  storageClass?: string | null;
  request?: string;
  capacity?: string;
  allocated?: string;
  allocatedStatus?: string;
  phase?: string;
  conditions?: V1PersistentVolumeClaimCondition[];
  volumeName?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  managedFields?: object[];
}

export function claim(o: ClaimOptions = {}): V1PersistentVolumeClaim {
  return {
    metadata: {
      name: o.name ?? 'data',
      namespace: o.namespace ?? 'db',
      uid: 'u1',
      labels: o.labels,
      annotations: o.annotations,
      managedFields: o.managedFields as never,
    },
    spec: {
      storageClassName: o.storageClass === null ? undefined : (o.storageClass ?? 'fast'),
      volumeName: o.volumeName ?? 'pv-data',
      resources: { requests: { storage: o.request ?? '10Gi' } },
    },
    status: {
      phase: o.phase ?? 'Bound',
      capacity: { storage: o.capacity ?? '10Gi' },
      ...(o.allocated ? { allocatedResources: { storage: o.allocated } } : {}),
      ...(o.allocatedStatus ? { allocatedResourceStatuses: { storage: o.allocatedStatus } } : {}),
      ...(o.conditions ? { conditions: o.conditions } : {}),
    },
  };
}

export const condition = (type: string, minutes: number, message?: string): V1PersistentVolumeClaimCondition => ({
  type,
  status: 'True',
  lastTransitionTime: minutesAgo(minutes) as unknown as Date,
  ...(message ? { message } : {}),
});
