// The writers of the StatefulSet-template opt-in's decisions (src/policies/request/template.ts): the
// StatefulSet read from the API server, its record created in pvx's namespace, the record read, the
// request's finalizers set. The StatefulSet's deletion and creation are the record keeper's
// (src/operator/reconcilers/statefulset-records.ts).
import type { V1ConfigMap } from '@kubernetes/client-node';
import { isAlreadyExists } from '../../../k8s/errors.ts';
import { readLive } from '../../../k8s/list.ts';
import { resources } from '../../../k8s/resources.ts';
import type { TemplateDecision } from '../../../policies/request/decision.ts';
import { readRecord, recordConfigMap } from '../../../policies/request/statefulset-record.ts';
import type { ReconcileResult } from '../../runtime/controller.ts';
import { ConflictError } from '../../runtime/errors.ts';
import { attempt, tryWrite, type DecisionOf, type Reading, type RequestWriting, type Writers } from './writing.ts';

export const templateWriters: Writers<TemplateDecision['kind']> = {
  readStatefulSet: async (w, r, d) => {
    const read = await attempt(() => w.client.getStatefulSet(r.req.metadata.namespace as string, d.name), { answered: [403] });
    return w.carryOn(r, read.refused ? d.onRefused(read.refused.code, read.refused.message) : d.onRead(read.value));
  },
  recordStatefulSet,
  readRecord: async (w, r, d) => {
    const cm = await readLive<V1ConfigMap>(w.client, resources.statefulSetRecords, d.namespace, d.name);
    const record = cm ? readRecord(cm) : undefined;
    return w.carryOn(r, d.onRead(record && !('unreadable' in record) ? record : undefined));
  },
  setFinalizers: async (w, r, d) => {
    w.fence('changing the request’s finalizers');
    return w.carryOn(await setFinalizers(w, r, d.finalizers), d.then);
  },
};

/**
 * Creates the request's StatefulSet record in pvx's namespace (the record keeper takes it from
 * there): one of the name this request made already — a create whose answer was lost — is taken
 * as made; one of another request's is a conflict, looked at again.
 */
async function recordStatefulSet(w: RequestWriting, r: Reading, d: DecisionOf<'recordStatefulSet'>): Promise<ReconcileResult> {
  w.fence('recording a StatefulSet');
  const { namespace, name } = d.record;
  const refusal = (await attempt(() => w.client.createRecord(namespace, recordConfigMap(d.record)), { answered: [403, 422, 409] })).refused;
  if (refusal?.code === 403 || refusal?.code === 422) return w.carryOn(r, d.onRefused(refusal.code, refusal.message));
  if (refusal && !isAlreadyExists(refusal)) throw refusal;
  if (refusal) {
    const existing = await readLive<V1ConfigMap>(w.client, resources.statefulSetRecords, namespace, name);
    const made = existing ? readRecord(existing) : undefined;
    if (!made || 'unreadable' in made || made.request.uid !== d.record.request.uid)
      throw new ConflictError(`StatefulSet record ${namespace}/${name} exists and is not this request's`);
  }
  w.log.info({ statefulSet: d.record.statefulSet.name, record: `${namespace}/${name}` }, 'recorded the StatefulSet, to delete it and create it again');
  return w.carryOn(r, d.onRecorded());
}

/** Sets the request's finalizers, on the version read; the reading as written, for the writes that follow. */
async function setFinalizers(w: RequestWriting, r: Reading, finalizers: string[]): Promise<Reading> {
  const { req, key } = r;
  const resourceVersion = req.metadata.resourceVersion ?? '';
  const written = await tryWrite(
    () => w.client.patchRequestFinalizers(req.metadata.namespace as string, req.metadata.name as string, finalizers, resourceVersion),
    (err) => {
      // As for a status write: the cache's copy is behind the API server's.
      w.unseenStatus.wrote(key, resourceVersion);
      return new ConflictError(`request ${req.metadata.name} changed meanwhile: ${err.message}`);
    },
  );
  if (written !== resourceVersion) w.unseenStatus.wrote(key, resourceVersion);
  return { ...r, req: { ...req, metadata: { ...req.metadata, resourceVersion: written, finalizers } } };
}
