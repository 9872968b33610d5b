// How a reconcile failure is retried. Reconcilers throw these, RetryAfterError (src/k8s/errors.ts:
// the fenced client throws it too) or let API errors through; the controller maps each to a queue
// action so no error becomes a hot loop.
import { ApiError, RetryAfterError } from '../../k8s/errors.ts';

/** Someone else changed the object first (HTTP 409): requeue at once, quietly. */
export class ConflictError extends Error {
  override name = 'ConflictError';
}

// No failure is terminal: a reconcile that cannot go on until an input changes says so in the
// object's status and returns; what it throws is retried.
export type Disposition = { kind: 'conflict' } | { kind: 'retryAfter'; delayMs: number } | { kind: 'backoff' };

export function classify(err: unknown): Disposition {
  if (err instanceof ConflictError) return { kind: 'conflict' };
  if (err instanceof RetryAfterError) return { kind: 'retryAfter', delayMs: err.delayMs };
  if (err instanceof ApiError) {
    if (err.code === 409) return { kind: 'conflict' };
    if (err.code === 429 && err.retryAfterSeconds !== undefined) return { kind: 'retryAfter', delayMs: err.retryAfterSeconds * 1000 };
  }
  // Network errors, 5xx, 403 (RBAC may be fixed), 404 of a dependency, bugs: exponential backoff.
  // So are 400 and 422: the same write may well be refused again, but the next reconcile need not
  // make it — time alone changes a decision (a deadline passes; simulation seed 8541: a status
  // write refused 422 at the deadline, and the request waited for an input that never came).
  return { kind: 'backoff' };
}
