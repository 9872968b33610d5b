// `pvx install-crds`: creates or updates pvx's CustomResourceDefinitions.
import { parseArgs } from 'node:util';
import { installCRDs } from '../k8s/crd-install.ts';
import { commands } from './commands.ts';
import { loadKubeConfig } from './kubeconfig.ts';

export function parseInstallCrdsArgs(argv: string[]): { kubeconfig?: string } {
  return parseArgs({ args: argv, options: commands['install-crds'].flags }).values;
}

export async function installCrds(argv: string[]): Promise<number> {
  const { kubeconfig } = parseInstallCrdsArgs(argv);
  await installCRDs(loadKubeConfig(kubeconfig ?? process.env.KUBECONFIG), (line) => process.stdout.write(`${line}\n`));
  return 0;
}
