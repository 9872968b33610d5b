// Reading the embedded API server's audit log (test/cluster/audit.ts): the server's own record of
// every write, with who made it, its request body (for claims and requests) and its answer.
import { closeSync, existsSync, openSync, readSync, readFileSync, statSync } from 'node:fs';
import { auditLogPath } from '../../cluster/audit.ts';
import { daemonPid } from '../../cluster/processes.ts';

export { auditLogPath };

/** The fields of an audit.k8s.io/v1 Event the suites read. */
export interface AuditEvent {
  auditID: string;
  stage: string;
  verb: string;
  user: { username: string };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string; apiGroup?: string };
  responseStatus?: { code?: number };
  requestObject?: Record<string, unknown>;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

/** True when the running kube-apiserver was started with the audit log (a cluster started before it existed was not). */
export function apiserverAudits(): boolean {
  const pid = daemonPid('kube-apiserver');
  if (pid === undefined) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(`--audit-log-path=${auditLogPath}`);
  } catch {
    return false;
  }
}

/** Where the log ends now: read from here to see only what happens next. */
export function auditLogEnd(): number {
  return existsSync(auditLogPath) ? statSync(auditLogPath).size : 0;
}

/** Every complete event written since `from` (a byte offset from auditLogEnd), in the order the server wrote them. */
export function readAuditEvents(from = 0): AuditEvent[] {
  if (!existsSync(auditLogPath)) return [];
  const size = statSync(auditLogPath).size;
  if (size <= from) return [];
  const buf = Buffer.alloc(size - from);
  const fd = openSync(auditLogPath, 'r');
  try {
    readSync(fd, buf, 0, buf.length, from);
  } finally {
    closeSync(fd);
  }
  const text = buf.toString('utf8');
  // A line still being written (no newline yet) is left for the next read.
  const complete = text.slice(0, text.lastIndexOf('\n') + 1);
  const lines = complete.split('\n').filter((line) => line.trim() !== '');
  // An offset taken while a line was being written starts inside it: that tail is not an event.
  if (from > 0 && lines[0] !== undefined && !lines[0].startsWith('{')) lines.shift();
  return lines.map((line) => JSON.parse(line) as AuditEvent).filter((e) => e.stage === 'ResponseComplete');
}

/** One event as a short line of evidence: time, who, verb, object, code, and the body when recorded. */
export function describeAuditEvent(e: AuditEvent, bodyChars = 600): string {
  const ref = e.objectRef ?? {};
  const object = `${ref.resource ?? '?'}${ref.subresource ? `/${ref.subresource}` : ''} ${ref.namespace ? `${ref.namespace}/` : ''}${ref.name ?? ''}`;
  const body = e.requestObject ? ` ${JSON.stringify(e.requestObject).slice(0, bodyChars)}` : '';
  return `${e.stageTimestamp} ${e.user.username} ${e.verb} ${object} → ${e.responseStatus?.code ?? '?'}${body}`;
}

/** The writes of one user among events, as "verb resource[/subresource]" → count (what a feature costs the API server). */
export function writesBy(events: readonly AuditEvent[], username: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const e of events) {
    if (e.user.username !== username || !['create', 'update', 'patch', 'delete'].includes(e.verb)) continue;
    const ref = e.objectRef ?? {};
    const key = `${e.verb} ${ref.resource ?? '?'}${ref.subresource ? `/${ref.subresource}` : ''} → ${e.responseStatus?.code ?? '?'}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}
