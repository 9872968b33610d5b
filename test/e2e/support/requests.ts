// VolumeExpansionRequests in one namespace, as the suites create, read and follow them.
import { CustomObjectsApi } from '@kubernetes/client-node';
import type { RequestSpec, VolumeExpansionRequest } from '../../../src/crds/volume-expansion-request.ts';
import { kc, waitFor, WatchRecorder } from './kube.ts';

const custom = kc.makeApiClient(CustomObjectsApi);
const crd = { group: 'pvx.dev', version: 'v1alpha1', plural: 'volumeexpansionrequests' };

export const finalPhases = ['Completed', 'Failed', 'Rejected'];

export interface Followed {
  phases: string[];
  reasons: string[];
  /** The message shown with each reason, as last seen. */
  messages: Map<string, string>;
  request: VolumeExpansionRequest;
}

export interface Requests {
  create(name: string, spec: RequestSpec, annotations?: Record<string, string>): Promise<void>;
  read(name: string): Promise<VolumeExpansionRequest>;
  /**
   * Follows the request until one of `until`, recording each phase (and reason) it shows: every
   * version of it a watch delivers, so a step that lasts less than a poll is seen too, and what the
   * polls read besides (the watch starts a moment after the call).
   */
  follow(name: string, until?: string[], timeoutMs?: number): Promise<Followed>;
}

export function requestsIn(namespace: string): Requests {
  const read = async (name: string) => (await custom.getNamespacedCustomObject({ ...crd, namespace, name })) as VolumeExpansionRequest;
  return {
    async create(name, spec, annotations) {
      const created = (await custom.createNamespacedCustomObject({
        ...crd,
        namespace,
        body: { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionRequest', metadata: { name, annotations }, spec },
      })) as VolumeExpansionRequest;
      // The cluster is shared: CRDs another checkout installed prune the fields they do not know.
      const pruned = Object.entries(spec)
        .filter(([k, v]) => v !== undefined && (created.spec as unknown as Record<string, unknown>)[k] === undefined)
        .map(([k]) => k);
      if (pruned.length > 0)
        throw new Error(
          `the installed VolumeExpansionRequest CRD dropped spec.${pruned.join(', spec.')} of request ${name}: CRDs older than this checkout's are installed (the e2e global setup installs this checkout's)`,
        );
    },
    read,
    async follow(name, until = finalPhases, timeoutMs = 180_000) {
      const versions = new WatchRecorder<VolumeExpansionRequest>(
        `/apis/${crd.group}/${crd.version}/namespaces/${namespace}/${crd.plural}`,
        `metadata.name=${name}`,
      );
      await versions.start();
      const polled: VolumeExpansionRequest[] = [];
      let request: VolumeExpansionRequest | undefined;
      try {
        await waitFor(
          `request ${name} to reach ${until.join('/')}`,
          timeoutMs,
          async () => {
            request = await read(name);
            polled.push(request);
            const phase = request.status?.phase;
            return phase !== undefined && until.includes(phase);
          },
          100,
        );
        // The watch delivers what the last poll read a moment later, at most.
        const last = request?.metadata.resourceVersion;
        await waitFor(
          'the watch to deliver the version polled last',
          10_000,
          async () => versions.events.some((e) => e.object.metadata.resourceVersion === last),
          100,
        ).catch(() => undefined);
      } finally {
        versions.stop();
      }
      // Every version the watch delivered, in the order the API server made them (a step shorter
      // than a poll included); the polls' reads only if the watch delivered nothing.
      const watched = versions.events.filter((e) => e.type !== 'DELETED').map((e) => e.object);
      const phases: string[] = [];
      const reasons: string[] = [];
      const messages = new Map<string, string>();
      for (const r of watched.length > 0 ? watched : polled) {
        const { phase, reason, message } = r.status ?? {};
        if (phase && phases[phases.length - 1] !== phase) phases.push(phase);
        if (reason && reasons[reasons.length - 1] !== reason) reasons.push(reason);
        if (reason && message) messages.set(reason, message);
      }
      return { phases, reasons, messages, request: request as VolumeExpansionRequest };
    },
  };
}
