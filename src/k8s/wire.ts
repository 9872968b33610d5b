// What both KubeClient adapters (client-node's and pvx's own HTTP one) put on the wire and how they
// read the API server's refusals, in one place so the two cannot drift: the bodies of the port's
// writes and of an Event, and the claim patch's UID precondition read as the 409 it means.
import type { CoreV1Event } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import type { EventRecord, PvcAnnotationsPatch, PvcSizePatch } from './client.ts';
import { ApiError } from './errors.ts';

/** The JSON merge patch media type: every pvx patch is one, and says so (client-node's default is not). */
export const mergePatch = 'application/merge-patch+json';

/** A claim's patch: the new request and/or class, pvx's annotations, and the resourceVersion and UID preconditions. */
export function pvcSizeBody(patch: PvcSizePatch): object {
  return {
    metadata: { resourceVersion: patch.resourceVersion, uid: patch.uid, annotations: patch.annotations },
    spec: {
      ...(patch.storage !== undefined ? { resources: { requests: { storage: patch.storage } } } : {}),
      ...(patch.volumeAttributesClassName !== undefined ? { volumeAttributesClassName: patch.volumeAttributesClassName } : {}),
    },
  };
}

/** A merge of a claim's annotations, preconditioned on its resourceVersion and UID. */
export function pvcAnnotationsBody(patch: PvcAnnotationsPatch): object {
  return { metadata: { resourceVersion: patch.resourceVersion, uid: patch.uid, annotations: patch.annotations } };
}

/** A merge of a pvx object's status, with a resourceVersion precondition when given. */
export function statusBody(status: object, resourceVersion?: string): object {
  return resourceVersion === undefined ? { status } : { metadata: { resourceVersion }, status };
}

/** A core/v1 Event about e.regarding, under a fresh name. */
export function eventBody(e: EventRecord, now: Date): CoreV1Event {
  return {
    metadata: { name: `${e.regarding.name}.${randomBytes(8).toString('hex')}`, namespace: e.regarding.namespace },
    involvedObject: { ...e.regarding },
    type: e.type,
    reason: e.reason,
    message: e.message.slice(0, 1024),
    source: { component: 'pvx' },
    reportingComponent: 'pvx.dev/operator',
    reportingInstance: 'pvx',
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  };
}

/**
 * The API server refuses a claim patch naming another UID as an immutable-field change (422): to
 * the port it is what it means, a failed precondition — the claim is not the one validated.
 */
export function claimPatchRefusal(err: unknown): unknown {
  if (err instanceof ApiError && err.code === 422 && err.fields.includes('metadata.uid')) {
    return new ApiError(409, 'Conflict', `the claim is not the one validated (UID precondition): ${err.message}`);
  }
  return err;
}
