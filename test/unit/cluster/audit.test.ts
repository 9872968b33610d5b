import { describe, expect, it } from 'vitest';
import { auditArgs, auditLogPath, auditPolicy, auditPolicyPath } from '../../cluster/audit.ts';
import { kubeApiserver } from '../../cluster/components.ts';

interface Rule {
  level: string;
  verbs?: string[];
  userGroups?: string[];
  resources?: { group: string; resources: string[] }[];
}

/** The level the API server gives a request: the first rule that matches it (audit policy semantics). */
function levelOf(verb: string, group: string, resource: string, userGroups = ['system:authenticated']): string {
  const rules = (auditPolicy() as { rules: Rule[] }).rules;
  const rule = rules.find(
    (r) =>
      (!r.verbs || r.verbs.includes(verb)) &&
      (!r.userGroups || r.userGroups.some((g) => userGroups.includes(g))) &&
      (!r.resources || r.resources.some((g) => g.group === group && g.resources.includes(resource))),
  );
  return rule?.level ?? 'None';
}

describe('the embedded API server’s audit policy', () => {
  it.each([
    ['patch', '', 'persistentvolumeclaims', 'Request'],
    ['create', '', 'persistentvolumeclaims', 'Request'],
    ['delete', '', 'persistentvolumeclaims', 'Request'],
    ['patch', '', 'persistentvolumeclaims/status', 'Request'],
    ['create', 'pvx.dev', 'volumeexpansionrequests', 'Request'],
    ['patch', 'pvx.dev', 'volumeexpansionrequests/status', 'Request'],
    ['update', 'coordination.k8s.io', 'leases', 'Metadata'],
    ['create', '', 'events', 'Metadata'],
    ['patch', '', 'pods/status', 'Metadata'],
    ['get', '', 'persistentvolumeclaims', 'None'],
    ['list', 'pvx.dev', 'volumeexpansionrequests', 'None'],
    ['watch', '', 'pods', 'None'],
  ])('%s %s/%s is recorded at level %s', (verb, group, resource, level) => {
    expect(levelOf(verb, group, resource)).toBe(level);
  });

  it.each([
    ['get', 'coordination.k8s.io', 'leases'],
    ['list', '', 'persistentvolumeclaims'],
    ['watch', 'pvx.dev', 'volumeexpansionrequests'],
  ])('records %s %s/%s by a benchmark ServiceAccount (group system:serviceaccounts:pvx-bench) at level Metadata', (verb, group, resource) => {
    expect(levelOf(verb, group, resource, ['system:serviceaccounts', 'system:serviceaccounts:pvx-bench', 'system:authenticated'])).toBe('Metadata');
  });

  it('is passed to kube-apiserver with a JSON log that is not rotated mid-run', () => {
    const args = kubeApiserver.args();
    expect(args).toEqual(expect.arrayContaining(auditArgs()));
    expect(args).toContain(`--audit-policy-file=${auditPolicyPath}`);
    expect(args).toContain(`--audit-log-path=${auditLogPath}`);
    expect(args).toContain('--audit-log-format=json');
    expect(typeof kubeApiserver.prepare).toBe('function');
  });
});
