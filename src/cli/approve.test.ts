import { describe, expect, it } from 'vitest';
import { approvalRefused, approvedLine } from './approve.ts';

describe('pvx approve: what it says', () => {
  it('names who approved, when the API server said who the user is', () => {
    expect(approvedLine('grow', 'alice', 'raise data-0 from 10Gi to 15Gi')).toBe(
      'volumeexpansionrequest.pvx.dev/grow approved by alice: raise data-0 from 10Gi to 15Gi',
    );
    expect(approvedLine('grow', undefined, 'raise data-0 from 10Gi to 15Gi')).toBe(
      'volumeexpansionrequest.pvx.dev/grow approved: raise data-0 from 10Gi to 15Gi',
    );
  });

  it('refused by the approval policy: the policy’s own words, and how to be made an approver', () => {
    const server =
      "volumeexpansionrequests.pvx.dev \"grow\" is forbidden: ValidatingAdmissionPolicy 'pvx-approval' with binding 'pvx-approval' denied request: only an approver may set pvx.dev/approved: bob may not approve VolumeExpansionRequests in namespace db (approvers are granted approve on volumeexpansionrequests/approval, e.g. by the ClusterRole pvx-approve)";
    expect(approvalRefused('grow', 'db', 'bob', server)).toBe(
      'bob may not approve VolumeExpansionRequest grow in namespace db — the API server refused: only an approver may set pvx.dev/approved: bob may not approve VolumeExpansionRequests in namespace db (approvers are granted approve on volumeexpansionrequests/approval, e.g. by the ClusterRole pvx-approve). Nothing was approved. An approver, or an admin who grants it (kubectl create rolebinding pvx-approve --clusterrole=pvx-approve --user=bob -n db), can approve it.',
    );
  });

  it('names a ServiceAccount as kubectl create rolebinding takes one', () => {
    expect(approvalRefused('grow', 'db', 'system:serviceaccount:ci:deployer', 'forbidden')).toContain(
      'kubectl create rolebinding pvx-approve --clusterrole=pvx-approve --serviceaccount=ci:deployer -n db',
    );
  });

  it('refused by RBAC (no patch at all), for an unknown user', () => {
    const server =
      'volumeexpansionrequests.pvx.dev "grow" is forbidden: User "system:serviceaccount:db:ci" cannot patch resource "volumeexpansionrequests" in API group "pvx.dev" in the namespace "db"';
    expect(approvalRefused('grow', 'db', undefined, server)).toMatch(
      /^you may not approve VolumeExpansionRequest grow in namespace db — the API server refused: volumeexpansionrequests.pvx.dev "grow" is forbidden: User .* cannot patch resource .*\. Nothing was approved\. An approver, or an admin who grants it \(kubectl create rolebinding pvx-approve --clusterrole=pvx-approve --user=USER -n db\), can approve it\.$/,
    );
  });
});
