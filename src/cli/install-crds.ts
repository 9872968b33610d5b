// `pvx install-crds`: creates or updates pvx's CustomResourceDefinitions.
import { parseArgs } from 'node:util';
import { installCRDs } from '../k8s/crd-install.ts';
import { commands } from './commands.ts';
import { HttpKubeClient } from '../k8s/http-client.ts';
import type { NodeKubeClient } from '../k8s/node-client.ts';
import { connect } from './connect.ts';

export function parseInstallCrdsArgs(argv: string[]): { kubeconfig?: string } {
  return parseArgs({ args: argv, options: commands['install-crds'].flags }).values;
}

export async function installCrds(argv: string[]): Promise<number> {
  const { kubeconfig } = parseInstallCrdsArgs(argv);
  const { client } = await connect(kubeconfig);
  // pvx's own client, or client-node's KubeConfig where the credentials need it.
  const to = client instanceof HttpKubeClient ? client.exchange.bind(client) : (client as NodeKubeClient).kubeConfig;
  await installCRDs(to, (line) => process.stdout.write(`${line}\n`));
  return 0;
}
