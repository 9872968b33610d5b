// `pvx wait ver/NAME`: follows one VolumeExpansionRequest live until it finishes, printing a line
// per phase it reaches, and exits with a code a script can branch on. `pvx wait -l SELECTOR`,
// `--all` or several names follow a set of requests, one live line each, until every one has
// finished. Requests are followed through an informer (src/k8s/informer.ts, the operator's own
// cache: a list, then a watch resumed from the last resourceVersion when the stream ends and a new
// list when that version expired; a field selector on the name when there is one), so no phase in
// between is missed. What to print and how it ends is decided by pure functions over the requests'
// states.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { parseArgs } from 'node:util';
import type { Phase, VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import type { KubeClient } from '../k8s/client.ts';
import { Informer } from '../k8s/informer.ts';
import { parseBytes } from '../k8s/quantity.ts';
import { resources, volumeExpansionRequests } from '../k8s/resources.ts';
import { parseDuration } from '../policies/shared/duration.ts';
import { derivePhase, isFinished, type Progress } from '../policies/request/phase.ts';
import { elapsed } from '../policies/shared/duration.ts';
import { connect, namespaceOf } from './connect.ts';
import { explainReadError, noRequestsLine } from './status.ts';
import { commands } from './commands.ts';
import { namespaceScope } from './options.ts';
import { UsageError } from './errors.ts';

export const waitExitCodes = { completed: 0, failed: 1, usage: 2, timeout: 4 } as const;

export const waitHelp = `usage: pvx wait ver/NAME [-n NAMESPACE] [--timeout DURATION] [--quiet] [--kubeconfig PATH]
       pvx wait ver/NAME ver/NAME… | -l SELECTOR | --all  [-n NAMESPACE | -A] [--timeout DURATION]

Follows a VolumeExpansionRequest until it finishes, printing a line per phase it reaches with the
time since the request was created and what is happening. The request may also be named NAME,
volumeexpansionrequest/NAME or volumeexpansionrequests.pvx.dev/NAME. A request that does not
exist yet is waited for (until the timeout), so \`pvx wait\` can follow \`kubectl apply\` at once;
one no operator has picked up yet shows as Created. On a terminal a status line ticks below.

Several names, -l or --all follow a set of requests until every one has finished, with one line
each: redrawn in place on a terminal, a line per change otherwise. -l and --all follow the
requests that match when the wait begins (none matching is an error); named ones are waited for
until they exist. The outcome of each request is printed as it is for one.

  -n, --namespace NS      the requests' namespace (default: the kubeconfig context's, else "default")
  -A, --all-namespaces    with -l or --all: in every namespace
  -l, --selector SEL      follow the requests with these labels, e.g. pvx.dev/policy=data
  --all                   follow every request of the namespace (or of all, with -A)
  --timeout DURATION      give up after this long, e.g. 90s, 10m, 1h (default 10m), for all at once
  -q, --quiet             print no progress; only the outcome of requests that did not complete
  --kubeconfig PATH       kubeconfig file (env KUBECONFIG)

Exit codes:
  0  the request Completed (a dry run too: it completes with reason DryRun); of a set: every one
  1  the request was Rejected or Failed (its reason and message are printed), it was deleted
     while waiting, or the cluster could not be read (e.g. the CRD is not installed); of a set:
     any one of them (whatever became of the others), or none matched -l/--all
  2  usage error (unknown flag, malformed ver/NAME or --timeout)
  4  timed out: the request had not finished (or did not exist) when --timeout passed; of a set:
     one had not, and none was Rejected, Failed or deleted`;

const defaultTimeout = commands.wait.flags.timeout.default;

/** The server ends each watch stream after this long (it is then resumed), so a dead connection cannot go unnoticed for longer. */
const watchStreamSeconds = 300;

const requestKinds = new Set([
  'ver',
  'volumeexpansionrequest',
  'volumeexpansionrequests',
  'volumeexpansionrequest.pvx.dev',
  'volumeexpansionrequests.pvx.dev',
  'volumeexpansionrequest.v1alpha1.pvx.dev',
  'volumeexpansionrequests.v1alpha1.pvx.dev',
]);

/** An object name as the API server accepts one (RFC 1123 subdomain). */
const objectName = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** The request's name from ver/NAME, volumeexpansionrequest/NAME, …/NAME or a bare NAME. */
export function parseWaitTarget(text: string): string {
  const slash = text.indexOf('/');
  const kind = slash < 0 ? undefined : text.slice(0, slash);
  const name = slash < 0 ? text : text.slice(slash + 1);
  if (kind !== undefined && !requestKinds.has(kind.toLowerCase())) {
    throw new UsageError(`pvx wait follows VolumeExpansionRequests: "${kind}" is not one (write ver/NAME or NAME)`);
  }
  if (!objectName.test(name) || name.length > 253) {
    throw new UsageError(`"${text}" does not name a request: write ver/NAME or NAME, NAME being lower-case letters, digits, '-' and '.'`);
  }
  return name;
}

/** Which requests a wait follows: named ones, or those the first list finds (by label, or all). */
export type WaitTarget = { kind: 'names'; names: string[] } | { kind: 'selector'; selector: string } | { kind: 'all' };

export interface WaitOptions {
  target: WaitTarget;
  namespace?: string;
  allNamespaces: boolean;
  timeoutMs: number;
  quiet: boolean;
  kubeconfig?: string;
}

function waitTarget(positionals: string[], selector: string | undefined, all: boolean, allNamespaces: boolean): WaitTarget {
  const ways = [positionals.length > 0, selector !== undefined, all].filter(Boolean).length;
  if (ways === 0) throw new UsageError(`name the request to wait for, or pass -l SELECTOR or --all\n\n${waitHelp}`);
  if (ways > 1) throw new UsageError('pass request names, -l SELECTOR or --all: one of them');
  if (positionals.length > 0) {
    if (allNamespaces) throw new UsageError('-A goes with -l or --all: named requests are in one namespace (-n)');
    return { kind: 'names', names: [...new Set(positionals.map(parseWaitTarget))] };
  }
  return selector !== undefined ? { kind: 'selector', selector } : { kind: 'all' };
}

export function parseWaitArgs(argv: string[]): WaitOptions {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: commands.wait.flags });
  const scope = namespaceScope(values);
  const target = waitTarget(positionals, values.selector, values.all ?? false, scope.allNamespaces);
  const timeoutText = values.timeout ?? defaultTimeout;
  const timeoutMs = parseDuration(timeoutText);
  if (timeoutMs === undefined || timeoutMs <= 0) throw new UsageError(`--timeout ${timeoutText} is not a positive duration (e.g. 90s, 10m, 1h)`);
  // A timer cannot wait longer (it would fire at once).
  if (timeoutMs > maxTimerMs) throw new UsageError(`--timeout ${timeoutText} is longer than the longest wait, 596h`);
  return { target, ...scope, timeoutMs, quiet: values.quiet ?? false, kubeconfig: values.kubeconfig };
}

/** The longest delay a Node.js timer takes (2^31 − 1 ms, about 24.8 days). */
const maxTimerMs = 2 ** 31 - 1;

const ms = (timestamp: string | Date | undefined): number | undefined => {
  if (timestamp === undefined) return undefined;
  const t = new Date(timestamp).getTime();
  return Number.isNaN(t) ? undefined : t;
};

/** Phases pad to the longest, so the messages of successive lines start in one column. */
const phaseWidth = Math.max(...['NodeExpansionPending', 'ControllerExpanding'].map((p) => p.length));

/** What a progress line reports; a request without status has not been picked up yet. */
function phaseAndDetail(req: VolumeExpansionRequest): { phase: string; detail: string } {
  const s = req.status;
  if (!s?.phase) return { phase: 'Created', detail: 'waiting for the operator to pick it up' };
  return { phase: s.phase, detail: [s.reason, s.message].filter(Boolean).join(': ') };
}

/**
 * Decides which states of one request are worth a line: a new phase, or a new reason within a
 * phase (e.g. a retry after a resizer error). Lines carry the time since the request was created,
 * taken from the status's phaseSince when the phase changed (the operator's clock, so a late
 * `pvx wait` still shows when each phase began), else from `now`.
 */
export class ProgressLog {
  private last: { uid?: string; phase: string; reason?: string } | undefined;

  /** The lines to print for this state of the request (none when nothing new). */
  observe(req: VolumeExpansionRequest, now: Date): string[] {
    const { phase, detail } = phaseAndDetail(req);
    const reason = req.status?.reason;
    const uid = req.metadata?.uid;
    const last = this.last;
    if (last && last.uid === uid && last.phase === phase && last.reason === reason) return [];
    this.last = { uid, phase, reason };
    const created = ms(req.metadata?.creationTimestamp) ?? now.getTime();
    const newPhase = !last || last.phase !== phase;
    const at = (newPhase ? ms(req.status?.phaseSince) : undefined) ?? now.getTime();
    return [`${elapsed(at - created).padStart(6)}  ${phase.padEnd(phaseWidth)}  ${detail}`.trimEnd()];
  }
}

/** The steps of an expansion the claim shows while it is under way (a wait, an error or the end is the request's to say). */
const claimSteps: ReadonlySet<Phase> = new Set(['Expanding', 'ControllerExpanding', 'NodeExpansionPending', 'Modifying']);

/**
 * Where a patched request's expansion stands, read from its claim as the operator derives it
 * (src/policies/request/phase.ts): the steps the operator does not write to the request (a request
 * that goes well is written twice, the plan accepted and the end), so \`pvx wait\` shows each one
 * as it happens. Undefined when the claim says nothing the request should not say itself: before
 * the patch, after the end, or a wait, an error or the end (the operator's, with what it knows of
 * pods and drivers).
 */
export function claimStep(req: VolumeExpansionRequest, pvc: V1PersistentVolumeClaim, now: Date): Progress | undefined {
  const s = req.status;
  if (!s?.pvcUID || !s.timeline?.patchedAt || isFinished(req) || (s.targetSize === undefined && s.targetVolumeAttributesClassName === undefined))
    return undefined;
  let targetBytes: bigint | undefined;
  try {
    targetBytes = s.targetSize === undefined ? undefined : parseBytes(s.targetSize);
  } catch {
    return undefined;
  }
  // A pod is taken to mount the claim: whether one does is the operator's to say (WaitingForPod).
  const p = derivePhase({
    pvc,
    pvcUID: s.pvcUID,
    ...(targetBytes !== undefined ? { targetBytes } : {}),
    ...(s.targetVolumeAttributesClassName ? { targetClass: s.targetVolumeAttributesClassName } : {}),
    mountedByRunningPod: true,
    now,
  });
  return claimSteps.has(p.phase) ? p : undefined;
}

/** A request as the claim shows it now: the step, from the claim, since `now` (a line for ProgressLog). */
export function asSeenOnClaim(req: VolumeExpansionRequest, step: Progress, now: Date): VolumeExpansionRequest {
  return {
    ...req,
    status: { ...req.status, phase: step.phase, reason: step.reason, message: `${step.message} (the claim, live)`, phaseSince: now.toISOString() },
  };
}

/** How following a request ended. */
export type WaitEnd =
  | { kind: 'finished'; request: VolumeExpansionRequest }
  | { kind: 'deleted'; last: VolumeExpansionRequest }
  | { kind: 'timeout'; last: VolumeExpansionRequest | undefined };

export interface WaitOutcome {
  exitCode: number;
  /** Printed to stdout unless --quiet: the good news. */
  stdout?: string;
  /** Printed to stderr always: what went wrong. */
  stderr?: string;
}

/** The exit code and closing words for how the wait ended. */
export function waitOutcome(end: WaitEnd, ref: { name: string; namespace: string; timeoutMs: number }, now: Date): WaitOutcome {
  const who = `ver/${ref.name}`;
  if (end.kind === 'timeout') {
    const last = end.last;
    const where = `${who} in namespace ${ref.namespace}`;
    if (!last) return { exitCode: waitExitCodes.timeout, stderr: `timed out after ${elapsed(ref.timeoutMs)} waiting for ${where}: it does not exist` };
    if (!last.status?.phase) {
      return {
        exitCode: waitExitCodes.timeout,
        stderr: `timed out after ${elapsed(ref.timeoutMs)} waiting for ${where}: no operator has picked it up (is pvx running?)`,
      };
    }
    const { phase, detail } = phaseAndDetail(last);
    const since = ms(last.status?.phaseSince);
    const how = since === undefined ? phase : `${phase} for ${elapsed(now.getTime() - since)}`;
    return {
      exitCode: waitExitCodes.timeout,
      stderr: `timed out after ${elapsed(ref.timeoutMs)} waiting for ${where}: it is ${how}${detail ? ` (${detail})` : ''}`,
    };
  }
  if (end.kind === 'deleted') {
    return { exitCode: waitExitCodes.failed, stderr: `${who} was deleted while waiting for it (its last phase: ${phaseAndDetail(end.last).phase})` };
  }
  const s = end.request.status ?? {};
  const created = ms(end.request.metadata?.creationTimestamp);
  const finishedAt = ms(s.timeline?.completedAt) ?? ms(s.phaseSince);
  const took = created !== undefined && finishedAt !== undefined ? ` in ${elapsed(finishedAt - created)}` : '';
  if (s.phase === 'Completed') {
    // A dry run's message is its plan, the answer the user waited for.
    if (s.reason === 'DryRun') return { exitCode: waitExitCodes.completed, stdout: `${who} dry run completed${took}: ${s.message ?? ''}` };
    // What the request changed, as the claim has it now: its capacity, its VolumeAttributesClass or both.
    const figures = [
      s.capacity && (s.targetSize || !s.targetVolumeAttributesClassName) ? `capacity ${s.capacity}` : '',
      s.currentVolumeAttributesClassName ? `VolumeAttributesClass ${s.currentVolumeAttributesClassName}` : '',
    ]
      .filter(Boolean)
      .join(', ');
    const already = s.reason === 'AlreadyApplied' ? ' (already applied: nothing was changed)' : '';
    return { exitCode: waitExitCodes.completed, stdout: `${who} completed${took}${figures ? `: ${figures}` : ''}${already}` };
  }
  return { exitCode: waitExitCodes.failed, stderr: `${who} ${s.phase}${took} (${s.reason ?? 'no reason given'}): ${s.message ?? 'no message'}` };
}

/** Where progress goes: plain lines, or (on a terminal) the same lines under a ticking status line. */
interface Display {
  line(text: string): void;
  /** A status line redrawn in place; ignored when stdout is not a terminal. */
  live(text: string): void;
  close(): void;
}

function plainDisplay(out: NodeJS.WriteStream): Display {
  return { line: (text) => out.write(`${text}\n`), live: () => undefined, close: () => undefined };
}

function terminalDisplay(out: NodeJS.WriteStream): Display {
  let current = '';
  const clear = '\r\x1b[2K';
  // Longer than the terminal would wrap, and a wrapped line cannot be redrawn in place.
  const fit = (text: string) => text.slice(0, Math.max(10, (out.columns || 80) - 1));
  return {
    line(text) {
      out.write(`${clear}${text}\n${fit(current)}`);
    },
    live(text) {
      current = text;
      out.write(`${clear}${fit(current)}`);
    },
    close() {
      if (current) out.write(clear);
      current = '';
    },
  };
}

const silentDisplay: Display = { line: () => undefined, live: () => undefined, close: () => undefined };

export interface FollowOptions {
  /** Where the requests are read: the API server's client (list and watch). */
  client: Pick<KubeClient, 'list' | 'watch'>;
  /** Where the requests are; undefined: every namespace (names need one). */
  namespace?: string;
  /** The requests to follow by name, waited for until they exist; undefined: those the first list returns. */
  names?: readonly string[];
  /** With no names: follow the requests with these labels. */
  labelSelector?: string;
  timeoutMs: number;
  onState: (req: VolumeExpansionRequest) => void;
  /** A transient failure the follower retries after; for the user to see why nothing moves. */
  onRetry: (err: unknown, retryInMs: number) => void;
  /** Delays before retrying after failures in a row, ms: the first, doubling up to the largest (default 1 s to 10 s). */
  backoff?: { initialMs: number; maxMs: number };
}

/** "namespace/name": a followed request's key. */
export const requestKey = (namespace: string | undefined, name: string | undefined): string => `${namespace ?? ''}/${name ?? ''}`;

/** Follows one request by name: how following it ended. */
export async function follow(opts: Omit<FollowOptions, 'names' | 'labelSelector'> & { name: string }): Promise<WaitEnd> {
  const ends = await followRequests({ ...opts, names: [opts.name] });
  return ends.get(requestKey(opts.namespace, opts.name)) as WaitEnd;
}

/**
 * Follows the requests through an informer of them until every one has finished or was deleted,
 * or the timeout passes (which ends the rest): each state the cache reaches is seen, whether it
 * came by the watch or by a new list after the watch's version expired. Errors a user must fix
 * (CRD not installed, forbidden) end it; any other failure is retried. Resolves with how following
 * each request ended, by "namespace/name"; empty when none was named and the first list found none.
 */
export function followRequests(opts: FollowOptions): Promise<Map<string, WaitEnd>> {
  const tracked = new Map<string, { last?: VolumeExpansionRequest; end?: WaitEnd }>((opts.names ?? []).map((n) => [requestKey(opts.namespace, n), {}]));
  const keyOf = (req: VolumeExpansionRequest) => requestKey(req.metadata?.namespace ?? opts.namespace, req.metadata?.name);
  const only = opts.names?.length === 1 ? opts.names[0] : undefined;
  return new Promise((resolve, reject) => {
    let done = false;
    const finish = (error?: { error: unknown }) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      // Not awaited: the outcome is decided, and Informer.stop() does not reject (its loop catches
      // and logs every list and watch error itself).
      void informer.stop();
      if (error) reject(error.error);
      else resolve(new Map([...tracked].map(([key, t]) => [key, t.end ?? { kind: 'timeout', last: t.last }])));
    };
    const endOne = (key: string, end: WaitEnd) => {
      const t = tracked.get(key);
      if (!t || t.end) return;
      t.end = end;
      if ([...tracked.values()].every((x) => x.end)) finish();
    };
    /** Reports a state of a followed request, and ends following it when it finished. */
    const see = (req: VolumeExpansionRequest): void => {
      const key = keyOf(req);
      const t = tracked.get(key);
      if (done || !t || t.end) return;
      if (t.last && t.last.metadata?.uid !== req.metadata?.uid) {
        // Deleted and created again while the watch was down: not the request this wait began with.
        endOne(key, { kind: 'deleted', last: t.last });
        return;
      }
      t.last = req;
      opts.onState(req);
      if (isFinished(req)) endOne(key, { kind: 'finished', request: req });
    };
    const informer = new Informer<VolumeExpansionRequest>({
      type: volumeExpansionRequests,
      client: opts.client,
      namespace: opts.namespace,
      labelSelector: opts.labelSelector,
      ...(only === undefined ? {} : { fieldSelector: `metadata.name=${only}` }),
      backoffInitialMs: opts.backoff?.initialMs ?? 1000,
      backoffMaxMs: opts.backoff?.maxMs ?? 10_000,
      watchTimeoutSeconds: watchStreamSeconds,
      onFailure: (err, retryInMs) => {
        if (done) return;
        const fatal = explainReadError(err, opts.namespace);
        if (fatal) finish({ error: fatal });
        else opts.onRetry(err, retryInMs);
      },
    });
    informer.on({
      onAdd: see,
      onUpdate: (_old, req) => see(req),
      onDelete: (req) => endOne(keyOf(req), { kind: 'deleted', last: tracked.get(keyOf(req))?.last ?? req }),
    });
    const timer = setTimeout(() => finish(), opts.timeoutMs);
    informer.start();
    // Named requests are known from the start; otherwise the first list says which. waitForSync()
    // only resolves (a list that never lands is ended by the timer), so nothing is dropped here.
    void informer.waitForSync().then(() => {
      if (done || opts.names) return;
      const found = informer.list();
      for (const req of found) tracked.set(keyOf(req), {});
      if (tracked.size === 0) return finish();
      for (const req of found) see(req);
    });
  });
}

/** One live line of a request in a set: where it stands, since when, and what is happening. */
export function requestLine(label: string, req: VolumeExpansionRequest | undefined, now: Date, labelWidth = label.length): string {
  if (!req) return `${label.padEnd(labelWidth)}  ${'-'.padStart(6)}  ${'Created'.padEnd(phaseWidth)}  does not exist yet`;
  const { phase, detail } = phaseAndDetail(req);
  const created = ms(req.metadata?.creationTimestamp) ?? now.getTime();
  return `${label.padEnd(labelWidth)}  ${elapsed(now.getTime() - created).padStart(6)}  ${phase.padEnd(phaseWidth)}  ${detail}`.trimEnd();
}

/**
 * How waiting for a set ended: each request's own outcome (as for one), and one exit code — 1 when
 * any was Rejected, Failed or deleted (a definite failure outranks a wait cut short), else 4 when
 * any had not finished by the timeout, else 0.
 */
export function setOutcome(ends: ReadonlyMap<string, WaitEnd>, timeoutMs: number, now: Date): { exitCode: number; outcomes: WaitOutcome[] } {
  const outcomes = [...ends].map(([key, end]) => {
    const [namespace = '', name = ''] = key.split('/');
    return waitOutcome(end, { name, namespace, timeoutMs }, now);
  });
  const codes = new Set(outcomes.map((o) => o.exitCode));
  const exitCode = codes.has(waitExitCodes.failed) ? waitExitCodes.failed : codes.has(waitExitCodes.timeout) ? waitExitCodes.timeout : waitExitCodes.completed;
  return { exitCode, outcomes };
}

/** The text that redraws a block of lines in place: up over the block last drawn, each line cleared and written. */
export function redrawBlock(lines: readonly string[], previousLines: number, columns: number): string {
  const up = previousLines > 0 ? `\x1b[${previousLines}A` : '';
  // A line longer than the terminal wraps, and a wrapped block cannot be redrawn in place.
  return `${up}\r${lines.map((l) => `\x1b[2K${l.slice(0, Math.max(10, columns - 1))}\n`).join('')}`;
}

/** Follows a set of requests (several names, -l or --all), one line each. */
async function waitForSet(opts: WaitOptions, client: KubeClient, namespace: string | undefined): Promise<number> {
  const { target } = opts;
  const names = target.kind === 'names' ? target.names : undefined;
  const selector = target.kind === 'selector' ? target.selector : undefined;
  const where = namespace === undefined ? 'every namespace' : `namespace ${namespace}`;
  const what = names ? names.map((n) => `ver/${n}`).join(', ') : selector ? `the requests matching ${selector}` : 'every request';
  const label = (key: string) => (opts.allNamespaces ? key : `ver/${key.slice(key.indexOf('/') + 1)}`);
  const states = new Map<string, VolumeExpansionRequest | undefined>((names ?? []).map((n) => [requestKey(namespace, n), undefined]));
  const tty = process.stdout.isTTY && !opts.quiet;
  const logs = new Map<string, ProgressLog>();
  let drawn = 0;
  const draw = () => {
    const keys = [...states.keys()].sort();
    const width = Math.max(0, ...keys.map((k) => label(k).length));
    const now = new Date();
    process.stdout.write(
      redrawBlock(
        keys.map((k) => requestLine(label(k), states.get(k), now, width)),
        drawn,
        process.stdout.columns || 80,
      ),
    );
    drawn = keys.length;
  };
  if (!opts.quiet) process.stdout.write(`following ${what} in ${where} (timeout ${elapsed(opts.timeoutMs)})\n`);
  const ticker = tty ? setInterval(draw, 1000) : undefined;
  let ends: Map<string, WaitEnd>;
  try {
    ends = await followRequests({
      client,
      namespace,
      names,
      labelSelector: selector,
      timeoutMs: opts.timeoutMs,
      onState: (req) => {
        const key = requestKey(req.metadata?.namespace ?? namespace, req.metadata?.name);
        states.set(key, req);
        if (tty) return draw();
        if (opts.quiet) return;
        // Not a terminal: a line per change, the request named before the progress line.
        const log = logs.get(key) ?? new ProgressLog();
        logs.set(key, log);
        for (const line of log.observe(req, new Date())) process.stdout.write(`${label(key)}  ${line.trimStart()}\n`);
      },
      onRetry: (err, retryInMs) => {
        if (!opts.quiet)
          process.stderr.write(`pvx: reading requests failed (${err instanceof Error ? err.message : String(err)}); retrying in ${elapsed(retryInMs)}\n`);
      },
    });
  } finally {
    clearInterval(ticker);
  }
  if (tty && states.size > 0) draw();
  if (ends.size === 0) {
    process.stderr.write(`pvx: ${noRequestsLine(namespace, selector)}: nothing to wait for\n`);
    return waitExitCodes.failed;
  }
  const { exitCode, outcomes } = setOutcome(ends, opts.timeoutMs, new Date());
  for (const o of outcomes) {
    if (o.stdout && !opts.quiet) process.stdout.write(`${o.stdout}\n`);
    if (o.stderr) process.stderr.write(`pvx: ${o.stderr}\n`);
  }
  return exitCode;
}

export async function wait(argv: string[]): Promise<number> {
  const opts = parseWaitArgs(argv);
  const { client, ...connected } = await connect(opts.kubeconfig);
  const namespace = opts.allNamespaces ? undefined : namespaceOf(connected, opts.namespace);
  if (opts.target.kind !== 'names' || opts.target.names.length > 1) return waitForSet(opts, client, namespace);
  return waitForOne({ ...opts, name: opts.target.names[0] as string }, client, namespace as string);
}

/** Follows one request, a line per phase it reaches under a ticking status line. */
async function waitForOne(opts: WaitOptions & { name: string }, client: KubeClient, namespace: string): Promise<number> {
  const display = opts.quiet ? silentDisplay : process.stdout.isTTY ? terminalDisplay(process.stdout) : plainDisplay(process.stdout);
  const progress = new ProgressLog();
  let current: VolumeExpansionRequest | undefined;
  const started = Date.now();
  const tick = () => {
    const now = Date.now();
    if (!current) {
      display.live(`  waiting for ver/${opts.name} to be created … ${elapsed(now - started)}`);
      return;
    }
    const { phase } = phaseAndDetail(current);
    const phaseSince = ms(current.status?.phaseSince);
    const createdMs = ms(current.metadata?.creationTimestamp) ?? started;
    display.live(`  ${phase}${phaseSince === undefined ? '' : ` for ${elapsed(now - phaseSince)}`} … ${elapsed(now - createdMs)} since created`);
  };
  const ticker = setInterval(tick, 1000);
  display.line(`following ver/${opts.name} in namespace ${namespace} (timeout ${elapsed(opts.timeoutMs)})`);
  tick();

  // The claim, once the request names it: its steps between the request's few writes, live.
  let claim: Informer<V1PersistentVolumeClaim> | undefined;
  const onClaim = (pvc: V1PersistentVolumeClaim) => {
    const now = new Date();
    const step = current ? claimStep(current, pvc, now) : undefined;
    if (step && current) for (const line of progress.observe(asSeenOnClaim(current, step, now), now)) display.line(line);
  };
  const watchClaim = (req: VolumeExpansionRequest) => {
    const name = req.status?.pvcName ?? req.spec?.target?.pvcName;
    if (claim || opts.quiet || !name || !req.status?.timeline?.patchedAt || isFinished(req)) return;
    claim = new Informer<V1PersistentVolumeClaim>({
      type: resources.persistentVolumeClaims,
      client,
      namespace,
      fieldSelector: `metadata.name=${name}`,
      watchTimeoutSeconds: watchStreamSeconds,
    });
    claim.on({ onAdd: onClaim, onUpdate: (_old, pvc) => onClaim(pvc) });
    claim.start();
  };

  let end: WaitEnd;
  try {
    end = await follow({
      client,
      namespace,
      name: opts.name,
      timeoutMs: opts.timeoutMs,
      onState: (req) => {
        current = req;
        tick();
        for (const line of progress.observe(req, new Date())) display.line(line);
        watchClaim(req);
      },
      onRetry: (err, retryInMs) => {
        if (opts.quiet) return;
        display.close();
        process.stderr.write(`pvx: reading ver/${opts.name} failed (${err instanceof Error ? err.message : String(err)}); retrying in ${elapsed(retryInMs)}\n`);
      },
    });
  } finally {
    clearInterval(ticker);
    // Not awaited: the outcome is known; Informer.stop() does not reject.
    void claim?.stop();
    display.close();
  }
  const outcome = waitOutcome(end, { name: opts.name, namespace, timeoutMs: opts.timeoutMs }, new Date());
  if (outcome.stdout && !opts.quiet) process.stdout.write(`${outcome.stdout}\n`);
  if (outcome.stderr) process.stderr.write(`pvx: ${outcome.stderr}\n`);
  return outcome.exitCode;
}
