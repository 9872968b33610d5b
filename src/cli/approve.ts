// `pvx approve [ver/]NAME -n NS`: approve a VolumeExpansionRequest a policy created in Approval
// mode. It approves the plan the request shows (which claim, from what, to what) and nothing else:
// the annotation it writes names that plan, and the write carries the resourceVersion it was read
// at, so a plan that changes meanwhile is not approved by it.
//
// Who may approve is the cluster's decision: the ValidatingAdmissionPolicy pvx-approval
// (config/admission/) refuses an approval from anyone not granted `approve` on
// volumeexpansionrequests/approval (the ClusterRole pvx-approve). `pvx approve` says which it was:
// refused, with the API server's reason and how to be made an approver, or approved, by whom — the
// name the API server knows the user by (SelfSubjectReview), written beside the approval as
// pvx.dev/approved-by, which the policy refuses to be any other than the requester's.
import { parseArgs } from 'node:util';
import { requestAnnotations } from '../crds/keys.ts';
import type { VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import { isConflict, isForbidden, isNotFound } from '../k8s/errors.ts';
import { volumeExpansionRequests } from '../k8s/resources.ts';
import { awaitingApproval, describePlan, planToken, shownPlan } from '../policies/request/plan.ts';
import { CommandFailure } from './errors.ts';
import { connect, namespaceOf } from './connect.ts';
import { UsageError } from './errors.ts';
import { commands } from './commands.ts';

export const approveHelp = `usage: pvx approve [ver/]NAME [-n NAMESPACE] [--kubeconfig PATH]

Approves the plan the request shows, as you: only an approver may (the ClusterRole pvx-approve, or
cluster-admin; the ValidatingAdmissionPolicy pvx-approval refuses anyone else). Prints who approved,
or why the API server refused (exit 1).

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
  const { client, ...connected } = await connect(values.kubeconfig);
  const namespace = namespaceOf(connected, values.namespace);
  let user: string | undefined;
  try {
    const req = (await client.read(volumeExpansionRequests, namespace, name)) as VolumeExpansionRequest | undefined;
    if (!req) throw new UsageError(`no VolumeExpansionRequest ${name} in namespace ${namespace}`);
    const s = req.status ?? {};
    if (!awaitingApproval(s) || !s.pvcUID || !s.fromCapacity || !(s.targetSize || s.targetVolumeAttributesClassName)) {
      throw new CommandFailure(
        `VolumeExpansionRequest ${name} is not awaiting approval (phase ${s.phase ?? 'not yet set'}${s.reason ? `, ${s.reason}` : ''}): nothing to approve`,
      );
    }
    const plan = shownPlan(s, s.pvcUID);
    const token = planToken(plan);
    user = await client.whoAmI();
    const annotations = { [requestAnnotations.approved]: token, ...(user ? { [requestAnnotations.approvedBy]: user } : {}) };
    await client.patchRequestAnnotations(namespace, name, { resourceVersion: req.metadata.resourceVersion as string, annotations });
    process.stdout.write(`${approvedLine(name, user, describePlan(s.pvcName ?? 'the claim', plan))}\n`);
    return 0;
  } catch (err) {
    if (isNotFound(err)) throw new UsageError(`no VolumeExpansionRequest ${name} in namespace ${namespace}`);
    if (isForbidden(err)) throw new CommandFailure(approvalRefused(name, namespace, user, (err as Error).message));
    if (isConflict(err))
      throw new CommandFailure(
        `VolumeExpansionRequest ${name} changed while it was being approved: look at its plan again (kubectl get ver ${name} -n ${namespace} -o yaml) and approve again`,
      );
    throw err;
  }
}

/** What `pvx approve` prints once the approval is written. */
export function approvedLine(name: string, user: string | undefined, plan: string): string {
  return `volumeexpansionrequest.pvx.dev/${name} approved${user ? ` by ${user}` : ''}: ${plan}`;
}

/**
 * What `pvx approve` says when the API server refuses the approval (403): the approval policy's
 * words (or RBAC's), that nothing was approved, and who can.
 */
export function approvalRefused(name: string, namespace: string, user: string | undefined, serverMessage: string): string {
  // A policy's refusal: "<object> is forbidden: ValidatingAdmissionPolicy '…' with binding '…' denied request: <its message>".
  const reason = /denied request: ([\s\S]*)$/.exec(serverMessage)?.[1] ?? serverMessage;
  const serviceAccount = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(user ?? '');
  const subject = serviceAccount ? `--serviceaccount=${serviceAccount[1]}:${serviceAccount[2]}` : `--user=${user ?? 'USER'}`;
  return (
    `${user ?? 'you'} may not approve VolumeExpansionRequest ${name} in namespace ${namespace} — the API server refused: ${reason.replace(/\.$/, '')}. ` +
    `Nothing was approved. An approver, or an admin who grants it (kubectl create rolebinding pvx-approve --clusterrole=pvx-approve ${subject} -n ${namespace}), can approve it.`
  );
}
