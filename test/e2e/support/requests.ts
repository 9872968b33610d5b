// VolumeExpansionRequests in one namespace, as the suites create, read and follow them.
import { CustomObjectsApi } from '@kubernetes/client-node';
import type { RequestSpec, VolumeExpansionRequest } from '../../../src/crds/volume-expansion-request.ts';
import { kc, waitFor } from './kube.ts';

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
  /** Polls the request, recording each phase (and reason) it shows, until one of `until`. */
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
      const phases: string[] = [];
      const reasons: string[] = [];
      const messages = new Map<string, string>();
      let request: VolumeExpansionRequest | undefined;
      await waitFor(
        `request ${name} to reach ${until.join('/')}`,
        timeoutMs,
        async () => {
          request = await read(name);
          const { phase, reason, message } = request.status ?? {};
          if (phase && phases[phases.length - 1] !== phase) phases.push(phase);
          if (reason && reasons[reasons.length - 1] !== reason) reasons.push(reason);
          if (reason && message) messages.set(reason, message);
          return phase !== undefined && until.includes(phase);
        },
        100,
      );
      return { phases, reasons, messages, request: request as VolumeExpansionRequest };
    },
  };
}
