// The node's network namespace (see nodeNetwork in layout.ts): created on `up`, deleted on
// `down`, which also removes the veth pair and the pod bridge inside it.
import { existsSync } from 'node:fs';
import { nodeNetwork as net, podCIDR } from './layout.ts';
import { run } from './processes.ts';

export const netnsPath = `/run/netns/${net.netns}`;

export async function ensureNodeNetwork(): Promise<void> {
  if (!existsSync(netnsPath)) await run('ip', ['netns', 'add', net.netns]);
  const inNode = (...args: string[]) => run('ip', ['-n', net.netns, ...args]);
  const links = await run('ip', ['-o', 'link', 'show']);
  if (!links.includes(` ${net.hostInterface}@`)) {
    await run('ip', ['link', 'add', net.hostInterface, 'type', 'veth', 'peer', 'name', net.nodeInterface, 'netns', net.netns]);
  }
  const hostAddrs = await run('ip', ['-o', 'addr', 'show', 'dev', net.hostInterface]);
  if (!hostAddrs.includes(`${net.hostIP}/`)) await run('ip', ['addr', 'add', `${net.hostIP}/${net.prefixLength}`, 'dev', net.hostInterface]);
  await run('ip', ['link', 'set', net.hostInterface, 'up']);
  const nodeAddrs = await inNode('-o', 'addr', 'show', 'dev', net.nodeInterface);
  if (!nodeAddrs.includes(`${net.nodeIP}/`)) await inNode('addr', 'add', `${net.nodeIP}/${net.prefixLength}`, 'dev', net.nodeInterface);
  await inNode('link', 'set', net.nodeInterface, 'up');
  await inNode('link', 'set', 'lo', 'up');
  // The host reaches pod IPs through the node (a Prometheus on the host scrapes pods as it would
  // in a cluster), and the node forwards between its veth and the pod bridge. Both stay inside
  // the cluster's own namespace and addresses.
  await run('ip', ['netns', 'exec', net.netns, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
  await run('ip', ['route', 'replace', podCIDR, 'via', net.nodeIP, 'dev', net.hostInterface]);
}

export async function deleteNodeNetwork(): Promise<void> {
  if (existsSync(netnsPath)) await run('ip', ['netns', 'delete', net.netns]);
  // The host end of the pair goes with its peer; remove it should it have outlived the namespace.
  await run('ip', ['link', 'delete', net.hostInterface]).catch(() => '');
}
