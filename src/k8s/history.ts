// How an object went: its versions after one resourceVersion, read from the API server's watch
// history, up to its DELETED event — the last state it had, which a cache that lost the event (a
// relist) does not know. The record keeper reads a StatefulSet's end this way before it creates it
// again (src/policies/request/record-keeper.ts): an edit made while it was being deleted is in
// that last state, and whoever deleted it shows in the versions between.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { DeletionHistory, KubeClient } from './client.ts';

export type { DeletionHistory } from './client.ts';
import { isGone, isNamespaceGone } from './errors.ts';
import type { ResourceType } from './resources.ts';

/** What a watch's error says of the history: compacted (410), the namespace gone (404 for it), or an error. */
const ended = (err: unknown): DeletionHistory | Error =>
  isGone(err) ? { kind: 'compacted' } : isNamespaceGone(err) ? { kind: 'namespaceGone' } : (err as Error);

/**
 * Reads how the object `name` went, from its versions after `fromResourceVersion`; waits at most
 * `waitMs` for its DELETED event, then `laterMs` more for what the history holds of the name after
 * it: an object created under the name since (seed 350167: pvx's own create, its answer and its
 * event lost, then deleted by its owner — the first DELETED alone read as pvx's delete, and the
 * StatefulSet was created once more).
 */
export async function readDeletion(
  client: Pick<KubeClient, 'watch'>,
  type: ResourceType,
  namespace: string,
  name: string,
  fromResourceVersion: string,
  waitMs = 10_000,
  laterMs = 1000,
): Promise<DeletionHistory> {
  const versions: KubernetesObject[] = [];
  const abort = new AbortController();
  let gone: { last: KubernetesObject; later: { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: KubernetesObject }[] } | undefined;
  return new Promise<DeletionHistory>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const done = (h: DeletionHistory | Error) => {
      if (timer) clearTimeout(timer);
      abort.abort();
      if (h instanceof Error) reject(h);
      else resolve(h);
    };
    const deleted = (): DeletionHistory => ({
      kind: 'deleted',
      versions,
      last: gone?.last as KubernetesObject,
      ...(gone?.later.length ? { later: gone.later } : {}),
    });
    // A stream that ends after the DELETED but before its moment is up broke off (a watch is not
    // ended by the API server within seconds): what the history holds after the DELETED is not
    // known, and "nothing" would be a guess. Read again (simulation seed 2703066: the stream broke
    // before the ADDED of the StatefulSet its owner applied again and deleted, and pvx, seeing its
    // own delete alone, created it once more).
    const brokeOff = (err: unknown) =>
      new Error(
        `the watch history of ${type.resource} ${namespace}/${name} broke off within ${laterMs} ms after its DELETED event${err instanceof Error ? ` (${err.message})` : ''}: read again`,
      );
    timer = setTimeout(() => done({ kind: 'present', versions }), waitMs);
    client
      .watch(
        type,
        { namespace, fieldSelector: `metadata.name=${name}`, resourceVersion: fromResourceVersion, signal: abort.signal },
        (e) => {
          if (e.type === 'ERROR') {
            const status = e.object as unknown as { code?: number; message?: string };
            done(status.code === 410 ? { kind: 'compacted' } : new Error(`watch of ${type.resource} ${namespace}/${name}: ${status.message ?? 'error'}`));
            return;
          }
          // The field selector is the API server's; a server (or a fake) that ignores it is filtered here.
          if (e.object.metadata?.name !== name || e.object.metadata?.namespace !== namespace || e.type === 'BOOKMARK') return;
          if (gone) gone.later.push({ type: e.type, object: e.object });
          else if (e.type === 'DELETED') {
            gone = { last: e.object, later: [] };
            // What follows in the history streams at once: a moment more reads it.
            if (timer) clearTimeout(timer);
            timer = setTimeout(() => done(deleted()), laterMs);
          } else versions.push(e.object);
        },
        (err) => done(gone ? brokeOff(err) : err === undefined ? { kind: 'present', versions } : ended(err)),
      )
      .catch((err: unknown) => done(gone ? brokeOff(err) : ended(err)));
  });
}
