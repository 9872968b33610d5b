// `pvx approve [ver/]NAME -n NS`: approve a VolumeExpansionRequest a policy created in Approval
// mode (sets the pvx.dev/approved annotation; the request then proceeds through validation).
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { parseArgs } from 'node:util';
import { requestAnnotations } from '../crds/keys.ts';
import { apiCall, isNotFound } from '../k8s/errors.ts';
import { loadKubeConfig } from './run.ts';
import { UsageError } from './usage.ts';

export const approveHelp = `usage: pvx approve [ver/]NAME [-n NAMESPACE] [--kubeconfig PATH]`;

export async function approve(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { namespace: { type: 'string', short: 'n' }, kubeconfig: { type: 'string' } },
  });
  const target = positionals[0];
  if (!target || positionals.length > 1) throw new UsageError(approveHelp);
  const name = target.replace(/^(ver|volumeexpansionrequests?(\.pvx\.dev)?)\//, '');
  const kc = loadKubeConfig(values.kubeconfig ?? process.env.KUBECONFIG);
  const namespace = values.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  const custom = kc.makeApiClient(CustomObjectsApi);
  try {
    await apiCall(() =>
      custom.patchNamespacedCustomObject(
        { group: 'pvx.dev', version: 'v1alpha1', plural: 'volumeexpansionrequests', namespace, name, body: { metadata: { annotations: { [requestAnnotations.approved]: 'true' } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
  } catch (err) {
    if (isNotFound(err)) throw new UsageError(`no VolumeExpansionRequest ${name} in namespace ${namespace}`);
    throw err;
  }
  process.stdout.write(`volumeexpansionrequest.pvx.dev/${name} approved\n`);
  return 0;
}
