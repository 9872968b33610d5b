// A StatefulSet request: the claims of its live replicas pinned with the size each is to have, one
// child request per claim, the parent's phase rolled up from its children, and the template step
// once every claim has grown.
import type { V1PersistentVolumeClaim, V1StatefulSet } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { clip, limits } from '../../crds/limits.ts';
import { pvcAnnotations, requestAnnotations, requestLabels } from '../../crds/keys.ts';
import type { Phase, RequestStatus, TargetStatus, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { formatBytes, readBytes } from '../../k8s/quantity.ts';
import { isFinishedPhase } from './phase.ts';
import { replicaClaimNames, replicaCount } from '../claim/statefulset.ts';
import { targetBytes } from './sizing.ts';
import { decideTemplate, templateNote } from './template.ts';
import { finish, type RequestDecision } from './decision.ts';
import { type RequestInput } from './request-input.ts';
import { clock, nextLook, trackEveryMs } from './timing.ts';
import { approvalRequired } from './plan.ts';
import { validate } from './before-patch.ts';

/** The name of a StatefulSet request's child for one replica: readable, unique, a valid object name. */
export function childRequestName(parent: string, ordinal: number): string {
  const suffix = `-${ordinal}`;
  if (parent.length + suffix.length <= 253) return `${parent}${suffix}`;
  const hash = createHash('sha256').update(parent).digest('hex').slice(0, 8);
  return `${parent.slice(0, 253 - suffix.length - hash.length - 1).replace(/[-.]+$/, '')}-${hash}${suffix}`;
}

const rollUpOrder: Phase[] = ['Pending', 'Expanding', 'ControllerExpanding', 'Recovering', 'WaitingForPod', 'NodeExpansionPending', 'Modifying'];

/**
 * A StatefulSet target fans out. Accepting it validates the claim of every live replica (ordinals
 * spec.ordinals.start to start + replicas − 1; all or nothing: one refusal rejects the request and
 * nothing is changed) and pins them in status.targets — each claim's UID, its capacity and the
 * absolute size the spec asks for it, as validated. Then one child request per claim, owned by this
 * one and labelled with it, asks for exactly that size through the single-claim path. So a child
 * made again (its first was deleted, by hand or otherwise) can never grow a claim a second time:
 * it asks for a size the claim already has, which is refused as not larger.
 *
 * A child is made once: the parent records each child it sees (its UID), and a recorded child that
 * is gone is an outcome (its recorded end, or RequestDeleted), not a missing child to create again;
 * so is a child the claim's own annotations show to have patched it. Only a child never seen and
 * never at work is created (again): its first creation failed (an object-count quota, a lost
 * answer). Children carry no TTL of their own: they go with their parent (its TTL deletes it, and
 * the garbage collector its children), so the record of a fan-out is never partly gone. The parent
 * finishes only when every pinned claim's child has.
 */
export function decideStatefulSet(input: RequestInput): RequestDecision {
  const p = parentOf(input);
  const pins = p.status.targets;
  if (!pins?.length) return pinClaims(p);
  const f = followChildren(p, pins);
  return f.missing.length > 0 ? createMissing(p, f) : rollUp(p, f);
}

/** What every step of a StatefulSet request reads: the request, its StatefulSet, its clock. */
interface Parent {
  input: RequestInput;
  req: VolumeExpansionRequest;
  status: RequestStatus;
  stsName: string;
  template: string;
  sts: V1StatefulSet | undefined;
  /** What the template step will do, in words. */
  note: string;
  deadline: Date | undefined;
  timeline: NonNullable<RequestStatus['timeline']>;
  now: Date;
}

function parentOf(input: RequestInput): Parent {
  const { request: req, now } = input;
  const status = req.status ?? {};
  const { acceptedAt, deadline } = clock(req, now);
  return {
    input,
    req,
    status,
    stsName: req.spec.target.statefulSetName as string,
    template: req.spec.target.volumeClaimTemplate as string,
    sts: input.statefulSet,
    note: templateNote(req, input.statefulSet),
    deadline,
    timeline: { ...status.timeline, acceptedAt: acceptedAt.toISOString() },
    now,
  };
}

/** The claims of the live replicas, or why the request is refused: no StatefulSet, no such template, too many claims, no replica. */
function replicaClaims(p: Parent): string[] | RequestDecision {
  const { sts, stsName, template, timeline } = p;
  if (!sts) return finish('Rejected', 'StatefulSetNotFound', `StatefulSet ${stsName} does not exist in this namespace`, { timeline });
  if (!sts.spec?.volumeClaimTemplates?.some((t) => t.metadata?.name === template))
    return finish('Rejected', 'TemplateNotFound', `StatefulSet ${stsName} has no volumeClaimTemplate named ${template}`, { timeline });
  const pvcNames = replicaClaimNames(sts, template);
  // Each claim is a target in the status, whose list the CRD bounds (crds/limits.ts).
  if (!pvcNames) {
    return finish(
      'Rejected',
      'TooManyClaims',
      `StatefulSet ${stsName} has ${replicaCount(sts)} replicas; one request grows at most ${limits.targets} claims: grow them with requests for single claims (target.pvcName)`,
      { timeline },
    );
  }
  // Nothing live to grow: waiting for a scale-up could take for ever, and the claims kept from
  // earlier replicas are not what "every replica" names now.
  if (pvcNames.length > 0) return pvcNames;
  return finish(
    'Rejected',
    'NoReplicas',
    `StatefulSet ${stsName} has no replicas (spec.replicas is 0), so no live claim of template ${template} to grow: scale it up and create the request again, or grow a retained claim by name (spec.target.pvcName)`,
    { timeline },
  );
}

/** The first look: every live replica's claim validated (all or nothing) and pinned, before any child exists. */
function pinClaims(p: Parent): RequestDecision {
  const { input, req, timeline, deadline, now } = p;
  const pvcNames = replicaClaims(p);
  if (!Array.isArray(pvcNames)) return pvcNames;
  // With spec.statefulSetTemplate.update, a claim already at the size is done, not a refusal:
  // what is asked for is the template to follow claims that have grown (a policy's request too).
  const alreadyAtSize = new Set<string>();
  const refusals = pvcNames.flatMap((pvcName) => {
    const v = validate(input, pvcName, input.claim(pvcName));
    if (v.kind === 'reject' && v.reason === 'NotLarger' && req.spec.statefulSetTemplate?.update) alreadyAtSize.add(pvcName);
    else if (v.kind === 'reject') return [`${pvcName}: ${v.message} (${v.reason})`];
    return [];
  });
  if (refusals.length > 0) return finish('Rejected', 'TargetRejected', `nothing was changed: ${refusals.join('; ')}`, { timeline });
  if (deadline && now >= deadline)
    return finish('Failed', 'DeadlineExceeded', `not started by the deadline ${deadline.toISOString()}; nothing was changed`, { timeline });
  // Pinned before any child exists: a partial fan-out is finished later, never validated again.
  const pin = (pvcName: string): TargetStatus =>
    alreadyAtSize.has(pvcName)
      ? {
          ...pinTarget(req, pvcName, input.claim(pvcName).claim),
          phase: 'Completed',
          reason: 'AlreadyAtSize',
          message: 'the claim already has the size: no request is made for it',
        }
      : { ...pinTarget(req, pvcName, input.claim(pvcName).claim), phase: 'Pending' };
  return {
    kind: 'status',
    status: {
      phase: 'Expanding',
      reason: 'Accepted',
      message: `validated ${pvcNames.length} claims; creating one request per claim; ${p.note}`,
      timeline,
      targets: pvcNames.map(pin),
    },
    requeueAfterMs: 1000,
  };
}

/** Each pinned claim as its child shows it, or as its child's absence means; the children to create. */
interface Following {
  targets: TargetStatus[];
  missing: { pvcName: string; name: string; pin: TargetStatus }[];
  summary: string;
}

function followChildren(p: Parent, pins: readonly TargetStatus[]): Following {
  const { input } = p;
  const childFor = new Map((input.children ?? []).map((c) => [c.spec.target.pvcName as string, c]));
  const parentName = p.req.metadata.name as string;
  const targets: TargetStatus[] = [];
  const missing: Following['missing'] = [];
  pins.forEach((pin, i) => {
    const pvcName = pin.pvcName;
    const name = childRequestName(parentName, ordinalOf(pvcName, i));
    const c = childFor.get(pvcName);
    const claim = input.claim(pvcName).claim;
    const known =
      pin.reason === 'AlreadyAtSize' && pin.phase === 'Completed'
        ? pin
        : c
          ? childTarget(pin, c)
          : (goneChild(pin, name, claim) ?? grownWithoutChild(pin, claim));
    if (known) targets.push(known);
    else {
      targets.push({ ...pinnedFields(pin), phase: 'Pending', reason: 'RequestNotCreated', message: 'its request is not created yet' });
      missing.push({ pvcName, name, pin });
    }
  });
  const done = targets.filter((t) => t.phase === 'Completed').length;
  return { targets, missing, summary: `${done}/${targets.length} PVCs completed; ${p.note}` };
}

/** A pinned claim as its child request shows it. */
function childTarget(pin: TargetStatus, c: VolumeExpansionRequest): TargetStatus {
  return {
    ...pinnedFields(pin),
    requestUID: c.metadata.uid,
    phase: c.status?.phase,
    reason: c.status?.reason,
    message: c.status?.message === undefined ? undefined : clip(c.status.message, limits.itemMessage),
    fromCapacity: c.status?.fromCapacity ?? pin.fromCapacity,
    targetSize: c.status?.targetSize ?? pin.targetSize,
    capacity: c.status?.capacity,
    targetVolumeAttributesClassName: c.status?.targetVolumeAttributesClassName,
  };
}

/** The children not made yet: past the deadline, the end; a name another request has, said so; else made. */
function createMissing(p: Parent, f: Following): RequestDecision {
  const { input, req, deadline, now, timeline } = p;
  const { targets, missing, summary } = f;
  const claims = missing.map((m) => m.pvcName).join(', ');
  if (deadline && now >= deadline) {
    return finish(
      'Failed',
      'DeadlineExceeded',
      `${summary}; not every claim's request could be created by the deadline ${deadline.toISOString()} (${claims})`,
      {
        targets,
        timeline,
      },
    );
  }
  const waiting = (reason: string, message: string): RequestDecision => ({
    kind: 'status',
    status: { phase: 'Expanding', reason, message: `${summary}; ${message}`, targets, timeline },
    requeueAfterMs: nextLook(60_000, deadline, now),
  });
  // A request of the same name that is not this one's child: say so rather than take it for ours.
  const clash = missing.find((m) => input.requestNamed?.(m.name) !== undefined);
  if (clash) return waiting('ChildNameTaken', `cannot create request ${clash.name} for ${clash.pvcName}: a request of that name exists and is not this one's`);
  return {
    kind: 'createChildren',
    children: missing.map((m) => childRequest(req, m.name, m.pin)),
    onRefused: (code, message) =>
      waiting('ChildRequestRefused', `the API server refused to create the request of ${claims} (${code}: ${message}); pvx tries again`),
    then: (created) => ({
      kind: 'status',
      status: {
        phase: 'Expanding',
        reason: 'RequestsCreated',
        message: `${summary}; created requests for ${claims}`,
        targets: targets.map((t) =>
          created.has(t.pvcName)
            ? { ...t, requestUID: created.get(t.pvcName), phase: 'Pending', reason: 'RequestCreated', message: 'its request is created' }
            : t,
        ),
        timeline,
      },
      requeueAfterMs: nextLook(trackEveryMs, deadline, now),
    }),
  };
}

/** Every child made: the parent's phase from theirs — the least advanced speaks for it — and, all completed, the template step. */
function rollUp(p: Parent, f: Following): RequestDecision {
  const { targets, summary } = f;
  const { timeline } = p;
  const unfinished = targets.filter((t) => !isFinishedPhase(t.phase));
  if (unfinished.length === 0) return allFinished(p, f);
  // Each child keeps its own deadline.
  const slowest = [...unfinished].sort((a, b) => rollUpOrder.indexOf(a.phase as Phase) - rollUpOrder.indexOf(b.phase as Phase))[0] as TargetStatus;
  return {
    kind: 'status',
    status: {
      phase: (slowest.phase as Phase) ?? 'Expanding',
      reason: slowest.reason ?? 'Expanding',
      message: `${summary}; ${slowest.pvcName}: ${slowest.message ?? ''}`,
      targets,
      timeline,
    },
    requeueAfterMs: trackEveryMs,
  };
}

function allFinished(p: Parent, f: Following): RequestDecision {
  const { targets, summary } = f;
  const { input, req, timeline, deadline } = p;
  const failed = targets.filter((t) => t.phase !== 'Completed');
  if (failed.length > 0)
    return finish('Failed', 'TargetFailed', `${summary}; ${failed.map((t) => `${t.pvcName}: ${t.phase} (${t.reason})`).join('; ')}`, { targets, timeline });
  if (!req.spec.statefulSetTemplate?.update) return finish('Completed', 'Completed', summary, { targets, timeline });
  return decideTemplate({
    request: req,
    statefulSet: p.sts,
    now: p.now,
    ...(deadline ? { deadline } : {}),
    claimsDone: { targets, timeline, message: summary },
    ...(input.statefulSetRecord ? { record: input.statefulSetRecord } : {}),
    ...(input.recordNamespace ? { recordNamespace: input.recordNamespace } : {}),
  });
}

/**
 * A replica's claim as validated: its UID, its capacity and the absolute size the spec asks for
 * it (increment and percentage applied once, here, rounded as the spec says).
 */
function pinTarget(req: VolumeExpansionRequest, pvcName: string, claim: V1PersistentVolumeClaim | undefined): TargetStatus {
  const capacity = claim?.status?.capacity?.storage;
  const pin: TargetStatus = { pvcName, ...(claim?.metadata?.uid ? { pvcUID: claim.metadata.uid } : {}) };
  const capacityBytes = capacity === undefined ? undefined : readBytes(capacity);
  if (capacityBytes === undefined) return pin;
  pin.fromCapacity = formatBytes(capacityBytes);
  if (req.spec.size === undefined && req.spec.increment === undefined) return pin;
  const sized = targetBytes(req.spec, capacityBytes);
  return sized.ok ? { ...pin, targetSize: formatBytes(sized.bytes) } : pin;
}

/** What the parent keeps of a target whatever its child shows: the claim and sizes as validated. */
function pinnedFields(t: TargetStatus): TargetStatus {
  return {
    pvcName: t.pvcName,
    ...(t.pvcUID ? { pvcUID: t.pvcUID } : {}),
    ...(t.requestUID ? { requestUID: t.requestUID } : {}),
    ...(t.fromCapacity ? { fromCapacity: t.fromCapacity } : {}),
    ...(t.targetSize ? { targetSize: t.targetSize } : {}),
  };
}

/** The pinned claim (the same UID) has the capacity its child was to give it (the target pinned, else the one its patch recorded). */
function reachedPinnedSize(pin: TargetStatus, claim: V1PersistentVolumeClaim | undefined): boolean {
  const target = pin.targetSize ?? claim?.metadata?.annotations?.[pvcAnnotations.targetSize];
  const targetB = target === undefined ? undefined : readBytes(target);
  const capacityB = readBytes(claim?.status?.capacity?.storage);
  return targetB !== undefined && capacityB !== undefined && capacityB >= targetB && claim?.metadata?.uid === (pin.pvcUID ?? claim?.metadata?.uid);
}

/**
 * The outcome of a target whose child is not there but once was: the parent saw it (its UID is
 * recorded), or the claim's annotations show it patched the claim. Undefined when the child never
 * existed (it is to be created).
 */
function goneChild(pin: TargetStatus, name: string, claim: V1PersistentVolumeClaim | undefined): TargetStatus | undefined {
  const anns = claim?.metadata?.annotations ?? {};
  const patchedIt = anns[pvcAnnotations.request] === name && (!pin.pvcUID || claim?.metadata?.uid === pin.pvcUID);
  const base = pinnedFields(pin);
  // An outcome recorded is final, the child's UID known or not: one read from the claim's marks
  // outlives them (seed 2465215: the child's UID never recorded, its end read from the claim's
  // annotations; the claim was replaced since, its marks with it, and the child was made again).
  if (isFinishedPhase(pin.phase)) return { ...pin, ...base };
  if (!pin.requestUID && !patchedIt) return undefined;
  const capacity = claim?.status?.capacity?.storage;
  if (reachedPinnedSize(pin, claim)) {
    return {
      ...base,
      phase: 'Completed',
      reason: 'RequestDeleted',
      message: `its request ${name} was deleted after it patched the claim; the claim reached ${capacity}`,
      capacity,
    };
  }
  return {
    ...base,
    phase: 'Failed',
    reason: 'RequestDeleted',
    message: `its request ${name} was deleted before it finished${pin.phase ? ` (last seen ${pin.phase}${pin.reason ? `/${pin.reason}` : ''})` : ''}; it is not made again, so the claim is not grown twice: the claim is left as it is${capacity ? ` (capacity ${capacity})` : ''}`,
    ...(capacity ? { capacity } : {}),
  };
}

/**
 * A target without a child whose claim asks for the pinned size already: another request (or a
 * person) raised it. A child made now would be refused as not larger, and fail the parent; and
 * the child may have been made before and deleted, its mark on the claim overwritten by the later
 * raise (seed 1211372: the parent's record of it lost, a second request's patch over its mark; the
 * child was made again). None is made: the target is Completed if the capacity is there, else
 * Failed with the claim left to the raise that is under way — as a deleted child's target ends.
 */
function grownWithoutChild(pin: TargetStatus, claim: V1PersistentVolumeClaim | undefined): TargetStatus | undefined {
  const target = pin.targetSize === undefined ? undefined : readBytes(pin.targetSize);
  if (target === undefined || !claim || (pin.pvcUID && claim.metadata?.uid !== pin.pvcUID)) return undefined;
  const requested = readBytes(claim.spec?.resources?.requests?.storage);
  if (requested === undefined || requested < target) return undefined;
  const capacity = claim.status?.capacity?.storage;
  const capacityB = capacity === undefined ? undefined : readBytes(capacity);
  if (capacityB !== undefined && capacityB >= target) {
    return {
      ...pinnedFields(pin),
      phase: 'Completed',
      reason: 'AlreadyAtSize',
      message: `the claim reached ${capacity} without a request of this one's (another raised it): none is made for it`,
      capacity,
    };
  }
  return {
    ...pinnedFields(pin),
    phase: 'Failed',
    reason: 'RaisedByAnother',
    message: `the claim asks for ${claim.spec?.resources?.requests?.storage} already (another request or a person raised it) and has ${capacity ?? 'no capacity'}, not ${pin.targetSize}: no request is made for it, so it is not grown twice; it is left to the raise under way`,
    ...(capacity ? { capacity } : {}),
  };
}

/** The child request for one pinned claim: the parent's spec, asking for the pinned size, without a TTL of its own. */
function childRequest(req: VolumeExpansionRequest, name: string, pin: TargetStatus): VolumeExpansionRequest {
  // The template is the parent's to update, once every child is done: a child targets one claim.
  const { target: _target, ttlSecondsAfterFinished: _ttl, statefulSetTemplate: _template, size, increment, ...rest } = req.spec;
  // Older parents pinned no size: their children ask as the parent does.
  const sizing = pin.targetSize ? { size: pin.targetSize } : { ...(size !== undefined ? { size } : {}), ...(increment !== undefined ? { increment } : {}) };
  return {
    apiVersion: req.apiVersion,
    kind: req.kind,
    metadata: {
      name,
      namespace: req.metadata.namespace,
      labels: { [requestLabels.parent]: req.metadata.name as string },
      annotations: {
        // A request that needs approval fans out into children that each need it: each shows its plan.
        ...(approvalRequired(req) ? { [requestAnnotations.approval]: 'required' } : {}),
        ...(pin.pvcUID ? { [requestAnnotations.claimUID]: pin.pvcUID } : {}),
      },
      ownerReferences: [
        {
          apiVersion: req.apiVersion,
          kind: req.kind,
          name: req.metadata.name as string,
          uid: req.metadata.uid as string,
          // No blockOwnerDeletion: it only holds a foreground deletion of the parent up, and under
          // OwnerReferencesPermissionEnforcement it needs update on volumeexpansionrequests/finalizers,
          // which pvx does not hold — every child would be refused.
          controller: true,
        },
      ],
    },
    spec: { ...rest, ...sizing, target: { pvcName: pin.pvcName } },
  };
}

/** The replica ordinal at the end of a StatefulSet claim's name (<template>-<sts>-<ordinal>). */
function ordinalOf(pvcName: string, fallback: number): number {
  const m = /-(\d+)$/.exec(pvcName);
  return m ? Number(m[1]) : fallback;
}
