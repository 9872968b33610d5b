// What carrying out a request's decision is made of: the writer each decision kind has (a table
// typed over the kinds, src/operator/reconcilers/expansion-request.ts, so a kind added to
// RequestDecision asks for its writer), the reconciler's part every writer uses (RequestWriting),
// and the one way an API call's failure is sorted (attempt). The core's writers are in core.ts;
// each opt-in's beside it (template.ts, eviction.ts), as its decisions are in src/policies/request/.
import type { Logger } from 'pino';
import type { RequestStatus, VolumeExpansionRequest } from '../../../crds/volume-expansion-request.ts';
import type { KubeClient } from '../../../k8s/client.ts';
import { ApiError } from '../../../k8s/errors.ts';
import type { RequestMetrics } from '../../../metrics/expansion.ts';
import type { RequestDecision } from '../../../policies/request/decision.ts';
import type { ReconcileResult } from '../../runtime/controller.ts';
import type { UnseenCreates, UnseenWrites } from '../unseen-writes.ts';

/** A request as a reconcile sees it: its status overlaid with steps not written yet. */
export interface Reading {
  key: string;
  req: VolumeExpansionRequest;
  /** The status as the API server has it. */
  written: RequestStatus | undefined;
}

/** A status write's outcome: whether it wrote, the reading as written (for a second write in the same reconcile), and when an in-flight step held back is due. */
export interface StatusWrite {
  wrote: boolean;
  reading: Reading;
  showInMs?: number;
}

/**
 * The reconciler's part in carrying out a decision, one per reconcile: its client, clock and
 * logger, its memory of its own writes the caches have not shown yet, its status writer and
 * Events, and the way on to the decision a continuation returns.
 */
export interface RequestWriting {
  client: KubeClient;
  log: Logger;
  metrics: RequestMetrics | undefined;
  now: () => Date;
  monotonicMs: () => number;
  /** Throws (a RetryAfterError) unless this process may write now: the leader-election fence. */
  fence: (what: string) => void;
  /** Writes the status (only when a reader would see a change, unless `always`): see ExpansionRequestReconciler.writeStatus. */
  writeStatus: (r: Reading, next: RequestStatus, opts?: { always?: boolean }) => Promise<StatusWrite>;
  event: (req: VolumeExpansionRequest, type: 'Normal' | 'Warning', reason: string, message: string) => Promise<void>;
  /** Carries out the decision a continuation returned, from the reading as written so far. */
  carryOn: (r: Reading, next: RequestDecision) => Promise<ReconcileResult>;
  /** Our request writes the requests' cache has not shown yet. */
  unseenStatus: UnseenWrites;
  /** Our claim writes the claims' cache has not shown yet (this reconciler's). */
  unseenClaimPatches: UnseenWrites;
  /** Our claim patches, for the policy evaluator (which decides from the cache until it shows them). */
  ownClaimPatches: UnseenWrites | undefined;
  /** The requests this process created that the cache has not shown yet. */
  ownCreates: UnseenCreates<VolumeExpansionRequest> | undefined;
  /** Reconciles a key after a delay, event or not. */
  wakeAfter: ((key: string, delayMs: number) => void) | undefined;
  /** Evictions this process decided, as the requests that made them (ExpansionRequestReconciler.decidedEvictions). */
  decidedEvictions: UnseenCreates<VolumeExpansionRequest>;
  /** When this process last tried each request's eviction. */
  evictionAttempts: Map<string, Date>;
  /** How long ago (ms) this process first saw the request new, once: the first call forgets it (undefined after, or if not seen new). */
  sinceFirstSight: (requestUID: string) => number | undefined;
}

export type DecisionKind = RequestDecision['kind'];
export type DecisionOf<K extends DecisionKind> = Extract<RequestDecision, { kind: K }>;
/** Carries out one kind of decision: its writes, then the decision its continuation returns. */
export type Writer<K extends DecisionKind> = (w: RequestWriting, r: Reading, decision: DecisionOf<K>) => Promise<ReconcileResult>;
/** A writer for each of the kinds K. */
export type Writers<K extends DecisionKind> = { readonly [Kind in K]: Writer<Kind> };

/** What an API call came to: its value, or a refusal the decision has an answer for. */
export type Answer<T> = { value: T; refused?: undefined } | { refused: ApiError };

/**
 * Makes one API call and sorts its failure, the one way every writer does: a code in `answered`
 * comes back as a refusal, for the decision's continuation to say what it means; a 409 (a
 * conflict: the object changed since it was read) becomes what `onConflict` makes of it — a
 * ConflictError, decided again from the cache at once; anything else is thrown, and the controller
 * retries it with backoff.
 */
export async function attempt<T>(call: () => Promise<T>, sort: FailureSort): Promise<Answer<T>> {
  try {
    return { value: await call() };
  } catch (err) {
    return { refused: sorted(err, sort) };
  }
}

/** A write that answers no refusal: its value, or the error it is retried by (onConflict's for a 409). */
export async function tryWrite<T>(call: () => Promise<T>, onConflict: (err: ApiError) => Error): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw sorted(err, { onConflict });
  }
}

interface FailureSort {
  answered?: readonly number[];
  onConflict?: (err: ApiError) => Error;
}

/** The refusal to answer, or throws what the failure is retried by. */
function sorted(err: unknown, sort: FailureSort): ApiError {
  if (!(err instanceof ApiError)) throw err;
  if (err.code === 409 && sort.onConflict) throw sort.onConflict(err);
  if (sort.answered?.includes(err.code)) return err;
  throw err;
}
