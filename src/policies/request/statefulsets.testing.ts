// A StatefulSet and the record of one, as the table tests of the template step (template.ts) and
// the record keeper (record-keeper.ts) read them: one fixture, one clock.
import type { V1StatefulSet } from '@kubernetes/client-node';
import { recordOf, type StatefulSetRecord } from './statefulset-record.ts';

export const now = new Date('2026-11-29T12:00:00.000Z');

export interface StatefulSetOptions {
  uid?: string;
  rv?: string;
  /** The template's storage request (default 1Gi). */
  size?: string;
  image?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Owned by another controller (a database operator's Cluster). */
  owner?: boolean;
  status?: V1StatefulSet['status'];
  /** Being deleted, with these finalizers (true: an orphaning delete's). */
  deleting?: boolean | string[];
  strategy?: string;
}

/** StatefulSet db/web of two replicas, steady, its template `data` at 1Gi. */
export function statefulSet(over: StatefulSetOptions = {}): V1StatefulSet {
  const deleting = over.deleting === true ? ['orphan'] : over.deleting || undefined;
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: {
      name: 'web',
      namespace: 'db',
      uid: over.uid ?? 'sts-1',
      resourceVersion: over.rv ?? '21',
      generation: 3,
      creationTimestamp: new Date('2026-11-01T00:00:00Z'),
      managedFields: [{ manager: 'kubectl', operation: 'Update' }],
      ...(over.labels ? { labels: over.labels } : {}),
      ...(over.annotations ? { annotations: over.annotations } : {}),
      ...(over.owner ? { ownerReferences: [{ apiVersion: 'db.example/v1', kind: 'Cluster', name: 'main', uid: 'c1', controller: true }] } : {}),
      ...(deleting ? { deletionTimestamp: now, finalizers: deleting } : {}),
    },
    spec: {
      replicas: 2,
      serviceName: 'web',
      selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: over.image ?? 'busybox' }] } },
      ...(over.strategy ? { updateStrategy: { type: over.strategy } } : {}),
      volumeClaimTemplates: [
        { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: over.size ?? '1Gi' } } } },
      ],
    },
    status: over.status ?? { observedGeneration: 3, replicas: 2, currentRevision: 'web-abc', updateRevision: 'web-abc' },
  };
}

/** The record of request db/grow (UID req-1) carrying StatefulSet db/web's template `data` from 1Gi to 2Gi, Recorded. */
export const statefulSetRecord = (over: Partial<StatefulSetRecord> = {}): StatefulSetRecord => ({
  name: 'pvx-sts-req-1',
  namespace: 'pvx-system',
  request: { namespace: 'db', name: 'grow', uid: 'req-1' },
  statefulSet: { name: 'web', uid: 'sts-1', resourceVersion: '21' },
  template: 'data',
  fromSize: '1Gi',
  toSize: '2Gi',
  evenIfManaged: false,
  phase: 'Recorded',
  reason: 'Recorded',
  message: 'recorded',
  object: recordOf(statefulSet()),
  ...over,
});
