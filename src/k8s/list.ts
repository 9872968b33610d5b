// A whole collection, read page by page: what the informer's (re)list, the audit's snapshot and the
// CLI's reads of requests all need. Pages of different versions do not mix, so a continue token
// that expired meanwhile (410) starts the list over.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ClusterVolumeExpansionPolicy } from '../crds/cluster-volume-expansion-policy.ts';
import type { VolumeExpansionPolicy } from '../crds/volume-expansion-policy.ts';
import type { KubeClient, PolicyRef } from './client.ts';
import { isGone } from './errors.ts';
import { clusterVolumeExpansionPolicies, volumeExpansionPolicies, type ResourceType } from './resources.ts';

export interface ListAllOptions {
  namespace?: string;
  labelSelector?: string;
  /** In addition to the kind's own field selector (pods: not finished). */
  fieldSelector?: string;
  /** Default 500. */
  pageSize?: number;
  /** Checked between pages: a reader shutting down stops listing (the result is then partial). */
  stopped?: () => boolean;
}

export interface ListAll<T> {
  /** With the kind's transform applied. */
  items: T[];
  /** The list's version, to watch from. */
  resourceVersion: string;
}

const attempts = 3;

export async function listAll<T extends KubernetesObject>(
  client: Pick<KubeClient, 'list'>,
  type: ResourceType,
  opts: ListAllOptions = {},
): Promise<ListAll<T>> {
  const fieldSelector = [type.fieldSelector, opts.fieldSelector].filter(Boolean).join(',') || undefined;
  const namespace = type.namespaced ? opts.namespace : undefined;
  for (let attempt = 1; ; attempt++) {
    const items: KubernetesObject[] = [];
    let resourceVersion: string;
    let cont: string | undefined;
    try {
      do {
        const page = await client.list(type, { namespace, labelSelector: opts.labelSelector, fieldSelector, limit: opts.pageSize ?? 500, continue: cont });
        items.push(...(type.transform ? page.items.map(type.transform) : page.items));
        resourceVersion = page.resourceVersion;
        cont = page.continue;
      } while (cont && !opts.stopped?.());
      return { items: items as T[], resourceVersion };
    } catch (err) {
      if (isGone(err) && cont && attempt < attempts) continue;
      throw err;
    }
  }
}

/**
 * One object as the API server has it now, not a cache's copy (undefined: none of that name): a
 * list on its name, which the RBAC that lets pvx watch a kind grants, where a get may not be.
 */
export async function readLive<T extends KubernetesObject>(client: KubeClient, type: ResourceType, namespace: string, name: string): Promise<T | undefined> {
  return (await readLiveListed<T>(client, type, namespace, name)).object;
}

/** readLive, with the version of the list it was read in (where a watch of what follows may start). */
export async function readLiveListed<T extends KubernetesObject>(
  client: KubeClient,
  type: ResourceType,
  namespace: string,
  name: string,
): Promise<{ object: T | undefined; resourceVersion: string }> {
  const { items, resourceVersion } = await listAll<T>(client, type, { namespace, fieldSelector: `metadata.name=${name}` });
  return { object: items.find((o) => o.metadata?.name === name), resourceVersion };
}

/** A policy of either kind, by its ref, as the API server has it now; undefined when there is none of the name. */
export function readPolicyLive(client: KubeClient, ref: PolicyRef): Promise<VolumeExpansionPolicy | ClusterVolumeExpansionPolicy | undefined> {
  return ref.kind === 'VolumeExpansionPolicy'
    ? readLive<VolumeExpansionPolicy>(client, volumeExpansionPolicies, ref.namespace, ref.name)
    : readLive<ClusterVolumeExpansionPolicy>(client, clusterVolumeExpansionPolicies, '', ref.name);
}
