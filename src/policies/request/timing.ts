// When a request is looked at again, and when its deadline passes: the clock of every stage.
import { requestLabels } from '../../crds/keys.ts';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { parseDuration } from '../shared/duration.ts';

/** How often an unfinished request is looked at again without any event (deadlines, missed events). */
export const trackEveryMs = 30_000;

/**
 * When the request was accepted, and when its deadline passes: first looked at — or, for a
 * StatefulSet request's child, made: its parent accepted it then, and a child pvx sees late (its
 * watch event lost until a relist) does not get a later deadline than the one it was made with.
 */
export function clock(req: VolumeExpansionRequest, now: Date): { acceptedAt: Date; deadline?: Date } {
  const created = req.metadata.creationTimestamp as Date | string | undefined;
  const made = req.metadata.labels?.[requestLabels.parent] && created !== undefined ? new Date(created).getTime() : Number.NaN;
  const firstLook = Number.isFinite(made) && made < now.getTime() ? new Date(made) : now;
  const acceptedAt = req.status?.timeline?.acceptedAt ? new Date(req.status.timeline.acceptedAt) : firstLook;
  const deadlineMs = req.spec.deadline ? parseDuration(req.spec.deadline) : undefined;
  return { acceptedAt, ...(deadlineMs !== undefined ? { deadline: new Date(acceptedAt.getTime() + deadlineMs) } : {}) };
}

/** When a request's spec.deadline passes, as its decisions count it, if it has one. */
export const requestDeadline = (req: VolumeExpansionRequest, now: Date): Date | undefined => clock(req, now).deadline;

/** How long until the next look: the usual period, the deadline if it comes first. */
export function nextLook(everyMs: number, deadline: Date | undefined, now: Date): number {
  if (!deadline) return everyMs;
  return Math.max(1, Math.min(everyMs, deadline.getTime() - now.getTime()));
}
