// The API server's audit log: its own record of who wrote what, so e2e suites count and check
// writes from the server's side rather than from pvx's logs ("writes are earned").
//
// The policy is data: which verbs are recorded, and which resources at level Request (with the
// request body) rather than Metadata. To record reads as well, add them to `auditedVerbs`; to see
// another resource's bodies, add it to `detailedResources`.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { paths } from './layout.ts';

/** One JSON object per line (audit.k8s.io/v1 Event), appended across API server restarts. */
export const auditLogPath = join(paths.state, 'audit', 'kube-apiserver.jsonl');
export const auditPolicyPath = join(paths.state, 'audit', 'policy.yaml');

/** Verbs that change something. Reads (get, list, watch) are left out: they would be most of the log. */
export const auditedVerbs = ['create', 'update', 'patch', 'delete', 'deletecollection'];

/** Resources whose writes are recorded with their bodies (level Request); every other write with metadata only. */
export const detailedResources = [
  { group: '', resources: ['persistentvolumeclaims', 'persistentvolumeclaims/status'] },
  { group: 'pvx.dev', resources: ['volumeexpansionrequests', 'volumeexpansionrequests/status'] },
];

/**
 * Reads are recorded for these groups only: the benchmarks (bench/peers.ts) run each client as a
 * ServiceAccount of namespace pvx-bench, so every request a client makes, reads included, is in the
 * log under its own name, while the rest of the cluster's reads stay out of it.
 */
export const readAuditedGroups = ['system:serviceaccounts:pvx-bench'];
export const readVerbs = ['get', 'list', 'watch'];

export function auditPolicy(): object {
  return {
    apiVersion: 'audit.k8s.io/v1',
    kind: 'Policy',
    // One line per request, written when the response is complete (with its status code).
    omitStages: ['RequestReceived'],
    rules: [
      { level: 'Request', verbs: auditedVerbs, resources: detailedResources },
      { level: 'Metadata', verbs: auditedVerbs },
      { level: 'Metadata', verbs: readVerbs, userGroups: readAuditedGroups },
      { level: 'None' },
    ],
  };
}

export function writeAuditPolicy(): void {
  mkdirSync(dirname(auditPolicyPath), { recursive: true });
  writeFileSync(auditPolicyPath, stringify(auditPolicy()));
}

/** kube-apiserver's flags for the log above. */
export function auditArgs(): string[] {
  return [
    `--audit-policy-file=${auditPolicyPath}`,
    `--audit-log-path=${auditLogPath}`,
    '--audit-log-format=json',
    // Blocking: each line is written while its request is handled, not batched for seconds, so a
    // test reading the log just after a write finds it.
    '--audit-log-mode=blocking',
    // Never rotated during a run (the default rotates at 100 MB), so one file holds the whole record.
    '--audit-log-maxsize=4096',
  ];
}
