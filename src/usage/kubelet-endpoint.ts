// Where a node's kubelet listens, read from its Node object the way metrics-server reads it: the
// first address of the most preferred type (--kubelet-preferred-address-types), and the port the
// kubelet itself reports in status.daemonEndpoints. Pure: the Node in, an endpoint or a reason out.
import type { V1Node } from '@kubernetes/client-node';

/** The address types a Node reports (core/v1 NodeAddressType). */
export const nodeAddressTypes = ['InternalIP', 'InternalDNS', 'Hostname', 'ExternalIP', 'ExternalDNS'] as const;
export type NodeAddressType = (typeof nodeAddressTypes)[number];

/**
 * InternalIP first: it is what kubelet serving certificates name on nearly every distribution
 * (serverTLSBootstrap puts the node's IPs and hostname in the SANs) and it needs no DNS that a
 * pod may not have for node names. External addresses come last: reaching a kubelet through them
 * usually leaves the cluster network.
 */
export const defaultAddressTypes: readonly NodeAddressType[] = ['InternalIP', 'InternalDNS', 'Hostname', 'ExternalIP', 'ExternalDNS'];

/** The kubelet's default port, used when a Node does not report one (status.daemonEndpoints unset or 0). */
export const defaultKubeletPort = 10250;

export interface KubeletEndpoint {
  /** An IP address or a DNS name, as the Node reports it (an IPv6 address without brackets). */
  host: string;
  port: number;
  /** Which of the preferred types gave the host, for messages. */
  addressType: NodeAddressType;
}

/** The kubelet's endpoint of a node, or why there is none (no address of any preferred type). */
export function kubeletEndpoint(node: V1Node, preferred: readonly NodeAddressType[] = defaultAddressTypes): KubeletEndpoint | { error: string } {
  const addresses = node.status?.addresses ?? [];
  const reported = node.status?.daemonEndpoints?.kubeletEndpoint?.Port;
  const port = Number.isInteger(reported) && (reported as number) > 0 && (reported as number) < 65536 ? (reported as number) : defaultKubeletPort;
  for (const type of preferred) {
    const found = addresses.find((a) => a.type === type && a.address);
    if (found) return { host: found.address, port, addressType: type };
  }
  const has = addresses.map((a) => a.type).join(', ') || 'none';
  return { error: `node ${node.metadata?.name ?? '(unnamed)'} has no address of the preferred types ${preferred.join(', ')} (it has: ${has})` };
}

/**
 * A comma-separated list of address types, as --kubelet-preferred-address-types takes it; a
 * TypeError naming the bad entry otherwise.
 */
export function parseAddressTypes(text: string): NodeAddressType[] {
  const types = text.split(',').map((t) => t.trim());
  for (const t of types) {
    if (!(nodeAddressTypes as readonly string[]).includes(t)) throw new TypeError(`"${t}" is not a node address type (one of ${nodeAddressTypes.join(', ')})`);
  }
  if (new Set(types).size !== types.length) throw new TypeError(`an address type is listed twice in "${text}"`);
  return types as NodeAddressType[];
}
