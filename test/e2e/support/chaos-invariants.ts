// pvx's invariants, checked after a chaos run from the API server's audit log (its own record of
// every write: who, what body, what answer) and the objects as they ended — never from pvx's logs.
// Pure: the run's record in, the violations (with the audit lines that show them) out, so each
// rule is table-tested (test/unit/e2e-support/chaos-invariants.test.ts) and can be seen to fail.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { pvcAnnotations } from '../../../src/crds/keys.ts';
import type { VolumeExpansionRequest } from '../../../src/crds/volume-expansion-request.ts';
import { GiB, formatBytes, parseBytes, readBytes, roundUp } from '../../../src/k8s/quantity.ts';
import { parseDuration } from '../../../src/policies/shared/duration.ts';
import type { AuditEvent } from './audit-log.ts';

/** Status writes of one request in any 60 s: above this is a hot loop (a request has ~6 transitions in all). */
export const maxStatusWritesPerMinute = 20;
/** A deadline may be overrun by this much (tracking period, leader takeover, an API server restart). */
export const deadlineSlackMs = 90_000;
export const finishedPhases = new Set(['Completed', 'Failed', 'Rejected']);

/** What a run leaves behind to check. */
export interface RunRecord {
  namespace: string;
  /** pvx's user in the audit log: its writes are the events with it. */
  pvxUser: string;
  /** Audit events since the run began, in the order the server wrote them. */
  events: AuditEvent[];
  /** The namespace's requests at the end. */
  requests: VolumeExpansionRequest[];
  /** Each claim name as it is at the end (undefined: gone). */
  claims: Map<string, V1PersistentVolumeClaim | undefined>;
  /** Every UID each claim name had during the run, oldest first. */
  claimUIDs: Map<string, string[]>;
  /** parameters.maxVolumeSize of each claim's class, where it has one. */
  classMax: Map<string, string>;
  /** Wall-clock ms at the check. */
  now: number;
}

export interface Violation {
  rule: string;
  subject: string;
  message: string;
  evidence: AuditEvent[];
}

export interface InvariantReport {
  violations: Violation[];
  /** pvx's claim patches: succeeded raising, succeeded lowering (recovery), refused by the server. */
  patches: { raises: number; lowerings: number; refused: number };
  checked: number;
}

interface ClaimPatchBody {
  /** A null annotation is removed by the merge patch (a raise clears an earlier recovery's mark). */
  metadata?: { uid?: string; annotations?: Record<string, string | null> };
  spec?: { resources?: { requests?: { storage?: string } } };
}

/** The most a request may ever patch its claim to, from its spec alone (pvx's own sizing aside). */
function specCeiling(r: VolumeExpansionRequest, previousCapacity: bigint | undefined): bigint | undefined {
  const unit = readBytes(r.spec.roundUpTo ?? '1Gi') ?? GiB;
  if (r.spec.size) return roundUp(parseBytes(r.spec.size), unit);
  const inc = r.spec.increment ?? '';
  if (previousCapacity === undefined) return undefined;
  if (inc.endsWith('%')) return roundUp(previousCapacity + (previousCapacity * BigInt(Math.ceil(Number(inc.slice(0, -1)) * 100))) / 10_000n + 1n, unit);
  return roundUp(previousCapacity + parseBytes(inc), unit);
}

export function checkInvariants(run: RunRecord): InvariantReport {
  const { namespace: ns, pvxUser, events, requests, claims, claimUIDs } = run;
  const violations: Violation[] = [];
  let checked = 0;
  const violate = (rule: string, subject: string, message: string, evidence: AuditEvent[] = []) => violations.push({ rule, subject, message, evidence });
  const byUID = new Map(requests.map((r) => [r.metadata.uid as string, r]));
  const inNs = events.filter((e) => e.objectRef?.namespace === ns);
  const claimPatches = inNs.filter(
    (e) => e.user.username === pvxUser && e.verb === 'patch' && e.objectRef?.resource === 'persistentvolumeclaims' && !e.objectRef.subresource,
  );
  const ok = (e: AuditEvent) => (e.responseStatus?.code ?? 0) >= 200 && (e.responseStatus?.code ?? 0) < 300;
  const succeeded = claimPatches.filter(ok);
  const raisesByRequest = new Map<string, AuditEvent[]>();
  let lowerings = 0;

  for (const e of succeeded) {
    const body = (e.requestObject ?? {}) as ClaimPatchBody;
    const claim = e.objectRef?.name as string;
    const anns = body.metadata?.annotations ?? {};
    const size = readBytes(body.spec?.resources?.requests?.storage);
    const carriedUID = body.metadata?.uid;
    checked++;
    if (!carriedUID)
      violate('patch-carries-claim-uid', claim, 'a pvx patch of a claim succeeded without metadata.uid (no precondition on which claim it grows)', [e]);
    else if (!(claimUIDs.get(claim) ?? []).includes(carriedUID))
      violate('patch-carries-claim-uid', claim, `patched claim uid ${carriedUID} is none the suite created (${(claimUIDs.get(claim) ?? []).join(', ')})`, [e]);
    const max = readBytes(run.classMax.get(claim));
    checked++;
    if (size !== undefined && max !== undefined && size > max)
      violate('size-within-class-max', claim, `patched to ${formatBytes(size)}, above the class's maxVolumeSize ${formatBytes(max)}`, [e]);

    if (typeof anns[pvcAnnotations.recoveredTo] === 'string') {
      lowerings++;
      // Recovery's lowering: it names no request; it belongs to the request of this claim that records the size.
      const owners = requests.filter(
        (r) => r.spec.target.pvcName === claim && r.status?.recovery?.attemptedSizes?.includes(anns[pvcAnnotations.recoveredTo] as string),
      );
      checked++;
      if (owners.length === 0) {
        violate('lowering-attributed', claim, `a recovery lowering to ${anns[pvcAnnotations.recoveredTo]} that no request of ${claim} records`, [e]);
      } else if (carriedUID && !owners.some((r) => r.status?.pvcUID === carriedUID)) {
        violate(
          'patch-of-recorded-claim',
          claim,
          `lowering carried claim uid ${carriedUID}; the requests that record it name ${owners.map((r) => `${r.metadata.name}: ${r.status?.pvcUID}`).join(', ')}`,
          [e],
        );
      }
      continue;
    }
    const requestUID = anns[pvcAnnotations.requestUID];
    checked++;
    if (!requestUID) {
      violate('patch-names-request', claim, 'a pvx patch of a claim named neither the request (pvx.dev/request-uid) nor a recovery (pvx.dev/recovered-to)', [
        e,
      ]);
      continue;
    }
    raisesByRequest.set(requestUID, [...(raisesByRequest.get(requestUID) ?? []), e]);
    const r = byUID.get(requestUID);
    checked++;
    if (!r) {
      violate('patch-names-request', claim, `patch names request uid ${requestUID}, which the namespace does not hold`, [e]);
      continue;
    }
    const subject = `${r.metadata.name} (${requestUID})`;
    checked++;
    if (r.spec.target.pvcName !== claim) violate('patch-of-target', subject, `request targets ${r.spec.target.pvcName} but pvx patched ${claim}`, [e]);
    checked++;
    if (carriedUID && r.status?.pvcUID !== carriedUID)
      violate('patch-of-recorded-claim', subject, `patch carried claim uid ${carriedUID}; the request records pvcUID ${r.status?.pvcUID ?? '(none)'}`, [e]);
    const target = readBytes(r.status?.targetSize);
    checked++;
    if (size !== undefined && target !== undefined && size > target)
      violate('size-within-target', subject, `patched to ${formatBytes(size)}, above the request's targetSize ${r.status?.targetSize}`, [e]);
    const ceiling = specCeiling(r, readBytes(anns[pvcAnnotations.previousCapacity] ?? undefined));
    checked++;
    if (size !== undefined && ceiling !== undefined && size > ceiling)
      violate(
        'size-within-spec',
        subject,
        `patched to ${formatBytes(size)}, above what the spec ${JSON.stringify(r.spec)} allows from ${anns[pvcAnnotations.previousCapacity]} (${formatBytes(ceiling)})`,
        [e],
      );
  }
  for (const [uid, patches] of raisesByRequest) {
    checked++;
    if (patches.length > 1)
      violate(
        'one-raise-per-request',
        `${byUID.get(uid)?.metadata.name ?? '?'} (${uid})`,
        `${patches.length} size-raising patches of a claim succeeded`,
        patches,
      );
  }

  // The recovery a request records happened: it asked for it (spec.recovery Auto), and pvx lowered
  // its claim to each size it lists after raising it for this request — not for an earlier one.
  for (const r of requests) {
    const attempted = r.status?.recovery?.attemptedSizes ?? [];
    if (attempted.length === 0) continue;
    const subject = `${r.metadata.name} (${r.metadata.uid})`;
    const ownRaise = (raisesByRequest.get(r.metadata.uid as string) ?? [])[0];
    const after = ownRaise ? succeeded.slice(succeeded.indexOf(ownRaise) + 1) : [];
    const loweredTo = new Set(
      after
        .filter((e) => e.objectRef?.name === r.spec.target.pvcName && (e.requestObject as ClaimPatchBody | undefined)?.metadata?.uid === r.status?.pvcUID)
        .map((e) => (e.requestObject as ClaimPatchBody).metadata?.annotations?.[pvcAnnotations.recoveredTo])
        .filter((size): size is string => typeof size === 'string'),
    );
    const unmade = attempted.filter((size) => !loweredTo.has(size));
    checked++;
    if (r.spec.recovery !== 'Auto' || unmade.length > 0) {
      const lowerings = succeeded.filter(
        (e) =>
          e.objectRef?.name === r.spec.target.pvcName &&
          typeof (e.requestObject as ClaimPatchBody | undefined)?.metadata?.annotations?.[pvcAnnotations.recoveredTo] === 'string',
      );
      violate(
        'recovery-recorded-truly',
        subject,
        `records recovery to ${attempted.join(', ')} (${r.status?.phase} ${r.status?.reason}) with spec.recovery ${r.spec.recovery ?? 'None'}; no lowering of ${r.spec.target.pvcName} to ${unmade.join(', ') || attempted.join(', ')} followed its own raise`,
        [...(ownRaise ? [ownRaise] : []), ...lowerings],
      );
    }
  }

  // Every Completed request's claim has at least its target, unless the claim was re-created since.
  for (const r of requests) {
    if (r.status?.phase !== 'Completed' || r.status.reason === 'DryRun') continue;
    const claim = claims.get(r.spec.target.pvcName ?? '');
    if (!claim || claim.metadata?.uid !== r.status.pvcUID) continue;
    const capacity = readBytes(claim.status?.capacity?.storage) ?? 0n;
    const target = readBytes(r.status.targetSize);
    checked++;
    if (target === undefined || capacity < target)
      violate(
        'completed-has-capacity',
        r.metadata.name as string,
        `Completed with target ${r.status.targetSize} but ${claim.metadata?.name} has capacity ${claim.status?.capacity?.storage}`,
      );
  }

  // Deadlines hold in every phase.
  const now = run.now;
  for (const r of requests) {
    const accepted = Date.parse(r.status?.timeline?.acceptedAt ?? '');
    if (!r.spec.deadline || Number.isNaN(accepted)) continue;
    const due = accepted + (parseDuration(r.spec.deadline) ?? 0);
    const endedAt = finishedPhases.has(r.status?.phase ?? '') ? Date.parse(r.status?.phaseSince ?? '') : now;
    checked++;
    if (endedAt > due + deadlineSlackMs)
      violate(
        'deadline-holds',
        r.metadata.name as string,
        `deadline ${r.spec.deadline} from ${r.status?.timeline?.acceptedAt} passed ${Math.round((endedAt - due) / 1000)} s before it ${finishedPhases.has(r.status?.phase ?? '') ? `ended ${r.status?.phase}` : `was still ${r.status?.phase}`}`,
      );
  }

  // No hot loop: status writes of one request within any minute stay few.
  const statusWrites = new Map<string, AuditEvent[]>();
  for (const e of inNs) {
    if (e.user.username !== pvxUser || e.objectRef?.resource !== 'volumeexpansionrequests' || e.objectRef.subresource !== 'status') continue;
    const name = e.objectRef.name as string;
    statusWrites.set(name, [...(statusWrites.get(name) ?? []), e]);
  }
  checked++;
  if (requests.some((r) => r.status) && statusWrites.size === 0)
    violate('audit-log-records', ns, `pvx wrote request statuses, but the audit log holds none of its writes in ${ns}: the checks above saw nothing`);
  for (const [name, writes] of statusWrites) {
    const times = writes.map((w) => Date.parse(w.stageTimestamp));
    checked++;
    for (let i = 0, j = 0; j < times.length; j++) {
      while ((times[j] as number) - (times[i] as number) > 60_000) i++;
      if (j - i + 1 > maxStatusWritesPerMinute) {
        violate('no-hot-loop', name, `${j - i + 1} status writes within a minute (at most ${maxStatusWritesPerMinute})`, writes.slice(i, j + 1));
        break;
      }
    }
  }
  return {
    violations,
    patches: { raises: [...raisesByRequest.values()].reduce((n, p) => n + p.length, 0), lowerings, refused: claimPatches.length - succeeded.length },
    checked,
  };
}
