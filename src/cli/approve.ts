// `pvx approve [ver/]NAME -n NS`: approve a VolumeExpansionRequest a policy created in Approval
// mode. It approves the plan the request shows (which claim, from what, to what) and nothing else:
// the annotation it writes names that plan, and the write carries the resourceVersion it was read
// at, so a plan that changes meanwhile is not approved by it.
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { parseArgs } from 'node:util';
import { requestAnnotations } from '../crds/keys.ts';
import type { VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import { apiCall, isConflict, isNotFound } from '../k8s/errors.ts';
import { describePlan, planToken, shownPlan } from '../policies/request/decide.ts';
import { CommandFailure } from './usage.ts';
import { loadKubeConfig } from './kubeconfig.ts';
import { UsageError } from './usage.ts';
import { commands } from './commands.ts';

export const approveHelp = `usage: pvx approve [ver/]NAME [-n NAMESPACE] [--kubeconfig PATH]

  -n, --namespace NS    the request's namespace (default: the kubeconfig context's, else "default")
  --kubeconfig PATH     kubeconfig file (env KUBECONFIG)`;

export function parseApproveArgs(argv: string[]) {
  return parseArgs({ args: argv, allowPositionals: true, options: commands.approve.flags });
}

export async function approve(argv: string[]): Promise<number> {
  const { values, positionals } = parseApproveArgs(argv);
  const target = positionals[0];
  if (!target || positionals.length > 1) throw new UsageError(approveHelp);
  const name = target.replace(/^(ver|volumeexpansionrequests?(\.pvx\.dev)?)\//, '');
  const kc = loadKubeConfig(values.kubeconfig ?? process.env.KUBECONFIG);
  const namespace = values.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  const custom = kc.makeApiClient(CustomObjectsApi);
  const ref = { group: 'pvx.dev', version: 'v1alpha1', plural: 'volumeexpansionrequests', namespace, name };
  try {
    const req = (await apiCall(() => custom.getNamespacedCustomObject(ref))) as VolumeExpansionRequest;
    const s = req.status ?? {};
    if (s.phase !== 'Pending' || (s.reason !== 'AwaitingApproval' && s.reason !== 'PlanChanged') || !s.pvcUID || !s.fromCapacity || !(s.targetSize || s.targetVolumeAttributesClassName)) {
      throw new CommandFailure(`VolumeExpansionRequest ${name} is not awaiting approval (phase ${s.phase ?? 'not yet set'}${s.reason ? `, ${s.reason}` : ''}): nothing to approve`);
    }
    const plan = shownPlan(s, s.pvcUID);
    const token = planToken(plan);
    await apiCall(() =>
      custom.patchNamespacedCustomObject(
        { ...ref, body: { metadata: { resourceVersion: req.metadata.resourceVersion, annotations: { [requestAnnotations.approved]: token } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
    );
    process.stdout.write(`volumeexpansionrequest.pvx.dev/${name} approved: ${describePlan(s.pvcName ?? 'the claim', plan)}\n`);
    return 0;
  } catch (err) {
    if (isNotFound(err)) throw new UsageError(`no VolumeExpansionRequest ${name} in namespace ${namespace}`);
    if (isConflict(err)) throw new CommandFailure(`VolumeExpansionRequest ${name} changed while it was being approved: look at its plan again (kubectl get ver ${name} -n ${namespace} -o yaml) and approve again`);
    throw err;
  }
}
