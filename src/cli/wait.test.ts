import { describe, expect, it } from 'vitest';
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import type { RequestStatus, VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import type { KubeClient, ListPage, WatchEvent, WatchOptions } from '../k8s/client.ts';
import { ApiError } from '../k8s/errors.ts';
import type { ResourceType } from '../k8s/resources.ts';
import { CommandFailure, UsageError } from './errors.ts';
import {
  ProgressLog,
  asSeenOnClaim,
  claimStep,
  follow,
  followRequests,
  parseWaitArgs,
  parseWaitTarget,
  redrawBlock,
  requestLine,
  setOutcome,
  waitExitCodes,
  waitOutcome,
  type WaitEnd,
} from './wait.ts';

const created = Date.parse('2025-06-01T12:00:00Z');
const at = (seconds: number) => new Date(created + seconds * 1000);

function state(status: RequestStatus | undefined, uid = 'uid-1', resourceVersion?: string): VolumeExpansionRequest {
  return {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: { name: 'grow', namespace: 'shop', uid, resourceVersion, creationTimestamp: new Date(created) },
    spec: { target: { pvcName: 'data' }, size: '2Gi' },
    status,
  };
}

describe('parseWaitTarget', () => {
  it('accepts the names kubectl would accept for a request', () => {
    for (const text of [
      'ver/grow',
      'volumeexpansionrequest/grow',
      'volumeexpansionrequests/grow',
      'volumeexpansionrequests.pvx.dev/grow',
      'VolumeExpansionRequest/grow',
      'grow',
    ]) {
      expect(parseWaitTarget(text), text).toBe('grow');
    }
    expect(parseWaitTarget('ver/grow.data-0')).toBe('grow.data-0');
  });

  it('refuses other kinds and malformed names as usage errors', () => {
    expect(() => parseWaitTarget('pvc/data')).toThrow(/"pvc" is not one/);
    for (const text of ['ver/', 'ver/Grow', 'ver/a/b', 'ver/-grow', '']) expect(() => parseWaitTarget(text), text).toThrow(UsageError);
  });
});

describe('parseWaitArgs', () => {
  it('reads the flags, with a 10m default timeout', () => {
    expect(parseWaitArgs(['ver/grow', '-n', 'shop'])).toEqual({
      target: { kind: 'names', names: ['grow'] },
      namespace: 'shop',
      allNamespaces: false,
      timeoutMs: 600_000,
      quiet: false,
      kubeconfig: undefined,
    });
    expect(parseWaitArgs(['grow', '--timeout', '1m30s', '--quiet'])).toMatchObject({ timeoutMs: 90_000, quiet: true });
  });

  it('takes several names, -l or --all, in a namespace or (not with names) all of them', () => {
    expect(parseWaitArgs(['ver/a', 'b', 'ver/a']).target).toEqual({ kind: 'names', names: ['a', 'b'] });
    expect(parseWaitArgs(['-l', 'pvx.dev/policy=data', '-A'])).toMatchObject({
      target: { kind: 'selector', selector: 'pvx.dev/policy=data' },
      allNamespaces: true,
    });
    expect(parseWaitArgs(['--all', '-n', 'shop'])).toMatchObject({ target: { kind: 'all' }, namespace: 'shop', allNamespaces: false });
    expect(() => parseWaitArgs(['a', '-l', 'x=y'])).toThrow(/one of them/);
    expect(() => parseWaitArgs(['--all', '-l', 'x=y'])).toThrow(/one of them/);
    expect(() => parseWaitArgs(['a', '-A'])).toThrow(/-A goes with -l or --all/);
    expect(() => parseWaitArgs(['--all', '-A', '-n', 'shop'])).toThrow(/either -n NAMESPACE or -A/);
  });

  it('refuses a missing target and a timeout that is no duration', () => {
    expect(() => parseWaitArgs([])).toThrow(/name the request to wait for, or pass -l SELECTOR or --all/);
    expect(() => parseWaitArgs(['a', '--timeout', '10'])).toThrow(/--timeout 10 is not a positive duration/);
    expect(() => parseWaitArgs(['a', '--timeout', '0s'])).toThrow(UsageError);
    // Beyond what a timer can wait, which would fire at once.
    expect(() => parseWaitArgs(['a', '--timeout', '600h'])).toThrow(/longer than the longest wait/);
    expect(parseWaitArgs(['a', '--timeout', '596h']).timeoutMs).toBe(596 * 3_600_000);
  });
});

describe('ProgressLog', () => {
  it('prints a line per phase reached, timed from creation by the operator’s phaseSince', () => {
    const log = new ProgressLog();
    const lines = [
      state(undefined),
      state({ phase: 'Expanding', reason: 'WaitingForResizer', message: 'the claim was patched', phaseSince: at(1).toISOString() }),
      // Same phase and reason again (another status write): nothing new to say.
      state({ phase: 'Expanding', reason: 'WaitingForResizer', message: 'the claim was patched', phaseSince: at(1).toISOString(), capacity: '1Gi' }),
      state({ phase: 'NodeExpansionPending', reason: 'FileSystemResizePending', message: 'waiting for the kubelet', phaseSince: at(3).toISOString() }),
      state({ phase: 'Completed', reason: 'Completed', message: 'capacity is 2Gi', phaseSince: at(14).toISOString() }),
    ].flatMap((s, i) => log.observe(s, at(i * 20)));
    expect(lines).toEqual([
      '    0s  Created               waiting for the operator to pick it up',
      '    1s  Expanding             WaitingForResizer: the claim was patched',
      '    3s  NodeExpansionPending  FileSystemResizePending: waiting for the kubelet',
      '   14s  Completed             Completed: capacity is 2Gi',
    ]);
  });

  it('prints a new reason within a phase, timed by the local clock', () => {
    const log = new ProgressLog();
    log.observe(state({ phase: 'NodeExpansionPending', reason: 'FileSystemResizePending', message: 'waiting', phaseSince: at(2).toISOString() }), at(2));
    const lines = log.observe(
      state({
        phase: 'NodeExpansionPending',
        reason: 'NodeResizeError',
        message: 'waiting; retrying after NodeResizeError: boom',
        phaseSince: at(2).toISOString(),
      }),
      at(65),
    );
    expect(lines).toEqual([' 1m05s  NodeExpansionPending  NodeResizeError: waiting; retrying after NodeResizeError: boom']);
  });
});

describe('the steps between the request’s writes, read live from the claim', () => {
  // A request that goes well is written twice (the plan accepted, the end): its steps come from the claim.
  const patched: RequestStatus = {
    phase: 'Expanding',
    reason: 'Accepted',
    message: 'validated; patching the claim',
    phaseSince: at(1).toISOString(),
    pvcName: 'data',
    pvcUID: 'pvc-uid',
    fromCapacity: '1Gi',
    targetSize: '2Gi',
    timeline: { acceptedAt: at(1).toISOString(), patchedAt: at(1).toISOString() },
  };
  const claim = (status: V1PersistentVolumeClaim['status'], uid = 'pvc-uid'): V1PersistentVolumeClaim => ({
    metadata: { name: 'data', namespace: 'shop', uid },
    spec: { resources: { requests: { storage: '2Gi' } } },
    status: { phase: 'Bound', capacity: { storage: '1Gi' }, ...status },
  });
  const resizing = claim({ allocatedResources: { storage: '2Gi' }, allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' } });
  const nodePending = claim({ allocatedResources: { storage: '2Gi' }, allocatedResourceStatuses: { storage: 'NodeResizePending' } });
  const grown = claim({ capacity: { storage: '2Gi' } });

  it.each([
    ['the controller at work', resizing, { phase: 'ControllerExpanding', reason: 'ControllerResizeInProgress' }],
    ['the node stage (whether a pod mounts it is the operator’s to say)', nodePending, { phase: 'NodeExpansionPending', reason: 'NodeResizePending' }],
    ['grown: the end is the request’s to say', grown, undefined],
    ['another claim of the same name', claim({ allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' } }, 'other-uid'), undefined],
  ])('%s', (_name, pvc, want) => {
    const step = claimStep(state(patched), pvc, at(5));
    if (want === undefined) expect(step).toBeUndefined();
    else expect(step).toMatchObject(want);
  });

  it('says nothing before the claim’s patch, or once the request finished', () => {
    expect(claimStep(state(undefined), resizing, at(5))).toBeUndefined();
    expect(claimStep(state({ ...patched, timeline: { acceptedAt: at(1).toISOString() } }), resizing, at(5))).toBeUndefined();
    expect(claimStep(state({ ...patched, phase: 'Completed', reason: 'Completed' }), resizing, at(5))).toBeUndefined();
  });

  it('makes one log with the request’s lines: each step once, whichever tells it first', () => {
    const log = new ProgressLog();
    const req = state(patched);
    const onClaim = (pvc: V1PersistentVolumeClaim, t: number) =>
      log.observe(asSeenOnClaim(req, claimStep(req, pvc, at(t)) as NonNullable<ReturnType<typeof claimStep>>, at(t)), at(t));
    const lines = [
      ...log.observe(req, at(1)),
      ...onClaim(resizing, 3),
      ...onClaim(resizing, 4), // the same step again: nothing new
      ...onClaim(nodePending, 9),
      // The operator writes a step only once it is stuck; the same step from the request says nothing new.
      ...log.observe(
        state({ ...patched, phase: 'NodeExpansionPending', reason: 'NodeResizePending', message: 'waiting for the kubelet', phaseSince: at(9).toISOString() }),
        at(10),
      ),
      ...log.observe(state({ ...patched, phase: 'Completed', reason: 'Completed', message: 'capacity is 2Gi', phaseSince: at(12).toISOString() }), at(12)),
    ];
    expect(lines).toEqual([
      '    1s  Expanding             Accepted: validated; patching the claim',
      '    3s  ControllerExpanding   ControllerResizeInProgress: the CSI driver is expanding the volume (ControllerExpandVolume) (the claim, live)',
      '    9s  NodeExpansionPending  NodeResizePending: waiting for the kubelet to grow the filesystem (NodeExpandVolume) (the claim, live)',
      '   12s  Completed             Completed: capacity is 2Gi',
    ]);
  });
});

describe('waitOutcome', () => {
  const ref = { name: 'grow', namespace: 'shop', timeoutMs: 5000 };
  const now = at(100);

  it('exits 0 on Completed, telling how long it took', () => {
    const done = state({ phase: 'Completed', reason: 'Completed', capacity: '2Gi', timeline: { completedAt: at(14).toISOString() } });
    expect(waitOutcome({ kind: 'finished', request: done }, ref, now)).toEqual({ exitCode: 0, stdout: 'ver/grow completed in 14s: capacity 2Gi' });
  });

  it('on Completed, says the VolumeAttributesClass the claim has when the request set one, and when nothing had to change', () => {
    const classOnly = state({
      phase: 'Completed',
      reason: 'Completed',
      capacity: '1Gi',
      targetVolumeAttributesClassName: 'io2',
      currentVolumeAttributesClassName: 'io2',
      timeline: { completedAt: at(20).toISOString() },
    });
    expect(waitOutcome({ kind: 'finished', request: classOnly }, ref, now).stdout).toBe('ver/grow completed in 20s: VolumeAttributesClass io2');
    const both = state({ ...classOnly.status, capacity: '2Gi', targetSize: '2Gi' });
    expect(waitOutcome({ kind: 'finished', request: both }, ref, now).stdout).toBe('ver/grow completed in 20s: capacity 2Gi, VolumeAttributesClass io2');
    const already = state({ phase: 'Completed', reason: 'AlreadyApplied', currentVolumeAttributesClassName: 'io2', phaseSince: at(1).toISOString() });
    expect(waitOutcome({ kind: 'finished', request: already }, ref, now).stdout).toBe(
      'ver/grow completed in 1s: VolumeAttributesClass io2 (already applied: nothing was changed)',
    );
  });

  it('exits 0 on a finished dry run, printing its plan', () => {
    const dry = state({ phase: 'Completed', reason: 'DryRun', message: 'dry run: would grow data from 1Gi to 2Gi', phaseSince: at(1).toISOString() });
    expect(waitOutcome({ kind: 'finished', request: dry }, ref, now)).toEqual({
      exitCode: 0,
      stdout: 'ver/grow dry run completed in 1s: dry run: would grow data from 1Gi to 2Gi',
    });
  });

  it('exits 1 on Rejected and Failed, with the reason and message', () => {
    const rejected = state({ phase: 'Rejected', reason: 'ExpansionNotAllowed', message: 'allowVolumeExpansion is false', phaseSince: at(0).toISOString() });
    expect(waitOutcome({ kind: 'finished', request: rejected }, ref, now)).toEqual({
      exitCode: 1,
      stderr: 'ver/grow Rejected in 0s (ExpansionNotAllowed): allowVolumeExpansion is false',
    });
    const failed = state({ phase: 'Failed', reason: 'PVCDeleted', message: 'the claim was deleted', phaseSince: at(30).toISOString() });
    expect(waitOutcome({ kind: 'finished', request: failed }, ref, now)).toMatchObject({
      exitCode: waitExitCodes.failed,
      stderr: expect.stringContaining('Failed in 30s (PVCDeleted)'),
    });
  });

  it('exits 1 when the request is deleted while waiting', () => {
    const last = state({ phase: 'Expanding' });
    expect(waitOutcome({ kind: 'deleted', last }, ref, now)).toEqual({
      exitCode: 1,
      stderr: 'ver/grow was deleted while waiting for it (its last phase: Expanding)',
    });
  });

  it('exits 4 on timeout, saying whether the request existed and where it stood', () => {
    expect(waitOutcome({ kind: 'timeout', last: undefined }, ref, now)).toEqual({
      exitCode: 4,
      stderr: 'timed out after 5s waiting for ver/grow in namespace shop: it does not exist',
    });
    expect(waitOutcome({ kind: 'timeout', last: state(undefined) }, ref, now).stderr).toMatch(/: no operator has picked it up \(is pvx running\?\)$/);
    const stuck = state({ phase: 'WaitingForPod', reason: 'NodeResizePending', message: 'start a pod', phaseSince: at(40).toISOString() });
    expect(waitOutcome({ kind: 'timeout', last: stuck }, ref, now)).toEqual({
      exitCode: 4,
      stderr: 'timed out after 5s waiting for ver/grow in namespace shop: it is WaitingForPod for 1m00s (NodeResizePending: start a pod)',
    });
  });
});

type Stream = (emit: (e: WatchEvent) => void, end: (err?: unknown) => void) => void;

/**
 * The API server's reads playing a script: each list answers with the next page (or throws the
 * next error), each watch runs the next stream; with the streams used up, a watch stays open and
 * silent.
 */
class ScriptedSource implements Pick<KubeClient, 'list' | 'watch'> {
  readonly watchedFrom: string[] = [];
  lists = 0;
  private readonly pages: (ListPage | Error)[];
  private readonly streams: Stream[];

  constructor(pages: (ListPage | Error)[], streams: Stream[]) {
    this.pages = pages;
    this.streams = streams;
  }

  async list(): Promise<ListPage> {
    const page = this.pages[this.lists++];
    if (!page) throw new Error(`unexpected list #${this.lists}`);
    if (page instanceof Error) throw page;
    return page;
  }

  async watch(_type: ResourceType, opts: WatchOptions, onEvent: (e: WatchEvent) => void, onEnd: (err?: unknown) => void) {
    this.watchedFrom.push(opts.resourceVersion);
    const stream = this.streams.shift();
    let stopped = false;
    if (stream)
      setImmediate(() =>
        stream(
          (e) => !stopped && onEvent(e),
          (err) => !stopped && onEnd(err),
        ),
      );
    return { stop: () => (stopped = true) };
  }
}

const page = (resourceVersion: string, ...items: VolumeExpansionRequest[]): ListPage => ({ resourceVersion, items });
const modified = (req: VolumeExpansionRequest): WatchEvent => ({ type: 'MODIFIED', object: req });
const bookmark = (rv: string): WatchEvent => ({ type: 'BOOKMARK', object: { metadata: { resourceVersion: rv } } });

async function followScript(source: ScriptedSource, timeoutMs = 2000) {
  const phases: (string | undefined)[] = [];
  const retries: unknown[] = [];
  const end = await follow({
    client: source,
    namespace: 'shop',
    name: 'grow',
    timeoutMs,
    onState: (r) => phases.push(r.status?.phase),
    onRetry: (err) => retries.push(err),
    backoff: { initialMs: 1, maxMs: 1 },
  });
  return { end, phases, retries };
}

describe('follow', () => {
  it('resumes a stream the server closed from the last version seen, bookmarks included, without listing again', async () => {
    const source = new ScriptedSource(
      [page('10', state({ phase: 'Pending' }, 'uid-1', '10'))],
      [
        (emit, end) => {
          emit(modified(state({ phase: 'Expanding' }, 'uid-1', '11')));
          emit(bookmark('15'));
          end();
        },
        (emit) => emit(modified(state({ phase: 'Completed', reason: 'Completed' }, 'uid-1', '16'))),
      ],
    );
    const { end, phases } = await followScript(source);
    expect(end).toMatchObject({ kind: 'finished', request: { status: { phase: 'Completed' } } });
    expect(phases).toEqual(['Pending', 'Expanding', 'Completed']);
    expect(source.watchedFrom).toEqual(['10', '15']);
    expect(source.lists).toBe(1);
  });

  it('lists again when the version expired (410), and sees the state reached meanwhile', async () => {
    const source = new ScriptedSource(
      [page('10', state({ phase: 'Expanding' }, 'uid-1', '10')), page('40', state({ phase: 'Failed', reason: 'NodeResizeFailed' }, 'uid-1', '33'))],
      [(emit) => emit({ type: 'ERROR', object: { code: 410, message: 'too old resource version' } as never })],
    );
    const { end, phases, retries } = await followScript(source);
    expect(end).toMatchObject({ kind: 'finished', request: { status: { phase: 'Failed' } } });
    expect(phases).toEqual(['Expanding', 'Failed']);
    expect(source.lists).toBe(2);
    expect(retries).toEqual([]);
  });

  it('waits for a request that does not exist yet, and follows it once created', async () => {
    const source = new ScriptedSource(
      [page('5')],
      [
        (emit) => {
          emit({ type: 'ADDED', object: state(undefined, 'uid-1', '6') });
          emit(modified(state({ phase: 'Rejected', reason: 'ExpansionNotAllowed' }, 'uid-1', '7')));
        },
      ],
    );
    const { end, phases } = await followScript(source);
    expect(end).toMatchObject({ kind: 'finished', request: { status: { phase: 'Rejected' } } });
    expect(phases).toEqual([undefined, 'Rejected']);
    expect(source.watchedFrom).toEqual(['5']);
  });

  it('ends with deleted on a DELETED event, and when a relist finds it gone or created again', async () => {
    const deletedEvent = new ScriptedSource(
      [page('10', state({ phase: 'Pending' }, 'uid-1', '10'))],
      [(emit) => emit({ type: 'DELETED', object: state({ phase: 'Pending' }, 'uid-1', '12') })],
    );
    expect((await followScript(deletedEvent)).end).toMatchObject({ kind: 'deleted', last: { status: { phase: 'Pending' } } });

    const goneOnRelist = new ScriptedSource(
      [page('10', state({ phase: 'Pending' }, 'uid-1', '10')), page('20')],
      [(_emit, end) => end(new ApiError(410, 'Expired', 'expired'))],
    );
    expect((await followScript(goneOnRelist)).end).toMatchObject({ kind: 'deleted' });

    const recreated = new ScriptedSource(
      [page('10', state({ phase: 'Pending' }, 'uid-1', '10')), page('20', state(undefined, 'uid-2', '19'))],
      [(_emit, end) => end(new ApiError(410, 'Expired', 'expired'))],
    );
    const { end, phases } = await followScript(recreated);
    expect(end).toMatchObject({ kind: 'deleted', last: { metadata: { uid: 'uid-1' } } });
    expect(phases).toEqual(['Pending']);
  });

  it('retries a failed read, telling why: a failed list is made again, a broken stream resumed from the last version seen', async () => {
    const source = new ScriptedSource(
      [new Error('connect ECONNREFUSED'), page('10', state({ phase: 'Expanding' }, 'uid-1', '10'))],
      [(_emit, end) => end(new Error('socket hang up')), (emit) => emit(modified(state({ phase: 'Completed' }, 'uid-1', '30')))],
    );
    const { end, phases, retries } = await followScript(source);
    expect(end).toMatchObject({ kind: 'finished' });
    expect(phases).toEqual(['Expanding', 'Completed']);
    expect(retries.map((e) => (e as Error).message)).toEqual(['connect ECONNREFUSED', 'socket hang up']);
    expect(source.lists).toBe(2);
    expect(source.watchedFrom).toEqual(['10', '10']);
  });

  it('gives up at once on what the user must fix, such as the CRD going away', async () => {
    const source = new ScriptedSource(
      [page('10', state({ phase: 'Expanding' }, 'uid-1', '10'))],
      [(_emit, end) => end(new ApiError(404, 'NotFound', 'the server could not find the requested resource'))],
    );
    await expect(followScript(source)).rejects.toThrow(CommandFailure);
    await expect(followScript(new ScriptedSource([page('10')], [(_e, end) => end(new ApiError(404, 'NotFound', 'x'))]))).rejects.toThrow(/pvx install-crds/);
  });

  it('gives up at once when a watch stream reports a refusal (403 as an ERROR event)', async () => {
    const source = new ScriptedSource(
      [page('10', state({ phase: 'Expanding' }, 'uid-1', '10'))],
      [(emit) => emit({ type: 'ERROR', object: { code: 403, reason: 'Forbidden', message: 'volumeexpansionrequests.pvx.dev is forbidden' } as never })],
    );
    await expect(followScript(source)).rejects.toThrow(/not allowed to read VolumeExpansionRequests/);
  });

  it('times out with the last state seen', async () => {
    const source = new ScriptedSource([page('10', state({ phase: 'WaitingForPod' }, 'uid-1', '10'))], []);
    const started = Date.now();
    const { end } = await followScript(source, 100);
    expect(end).toMatchObject({ kind: 'timeout', last: { status: { phase: 'WaitingForPod' } } });
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

function named(name: string, status: RequestStatus | undefined, resourceVersion: string, namespace = 'shop'): VolumeExpansionRequest {
  const req = state(status, `uid-${name}`, resourceVersion);
  return { ...req, metadata: { ...req.metadata, name, namespace } };
}

describe('followRequests', () => {
  const run = (source: ScriptedSource, opts: { names?: string[]; namespace?: string; timeoutMs?: number } = {}) =>
    followRequests({
      client: source,
      namespace: 'namespace' in opts ? opts.namespace : 'shop',
      names: opts.names,
      timeoutMs: opts.timeoutMs ?? 2000,
      onState: () => undefined,
      onRetry: () => undefined,
      backoff: { initialMs: 1, maxMs: 1 },
    });

  it('follows the requests the first list finds until every one has finished', async () => {
    const source = new ScriptedSource(
      [page('10', named('a', { phase: 'Expanding' }, '8'), named('b', { phase: 'Pending' }, '9'))],
      [
        (emit) => {
          emit(modified(named('a', { phase: 'Completed', reason: 'Completed' }, '11')));
          // Created after the wait began: not one of the set.
          emit({ type: 'ADDED', object: named('c', undefined, '12') });
          emit(modified(named('b', { phase: 'Rejected', reason: 'ExpansionNotAllowed' }, '13')));
        },
      ],
    );
    const ends = await run(source);
    expect([...ends.keys()]).toEqual(['shop/a', 'shop/b']);
    expect(ends.get('shop/a')).toMatchObject({ kind: 'finished', request: { status: { phase: 'Completed' } } });
    expect(ends.get('shop/b')).toMatchObject({ kind: 'finished', request: { status: { phase: 'Rejected' } } });
  });

  it('tells apart requests of the same name in two namespaces (-A)', async () => {
    const source = new ScriptedSource([page('10', named('a', { phase: 'Completed' }, '8', 'x'), named('a', { phase: 'Expanding' }, '9', 'y'))], []);
    const ends = await run(source, { namespace: undefined, timeoutMs: 100 });
    expect(ends.get('x/a')).toMatchObject({ kind: 'finished' });
    expect(ends.get('y/a')).toMatchObject({ kind: 'timeout', last: { status: { phase: 'Expanding' } } });
  });

  it('waits for named requests that do not exist yet, ending the rest at the timeout', async () => {
    const source = new ScriptedSource([page('5')], [(emit) => emit({ type: 'ADDED', object: named('a', { phase: 'Completed' }, '6') })]);
    const ends = await run(source, { names: ['a', 'b'], timeoutMs: 150 });
    expect(ends.get('shop/a')).toMatchObject({ kind: 'finished' });
    expect(ends.get('shop/b')).toEqual({ kind: 'timeout', last: undefined });
  });

  it('ends at once, with none, when the first list finds nothing to follow', async () => {
    expect((await run(new ScriptedSource([page('5')], []))).size).toBe(0);
  });
});

describe('setOutcome', () => {
  const done = named('a', { phase: 'Completed', reason: 'Completed', capacity: '2Gi', phaseSince: at(5).toISOString() }, '1');
  const rejected = named('b', { phase: 'Rejected', reason: 'ExpansionNotAllowed', message: 'no', phaseSince: at(1).toISOString() }, '1');
  const outcome = (ends: [string, WaitEnd][]) => setOutcome(new Map(ends), 60_000, at(100));

  it('exits 0 when every request completed, printing each', () => {
    expect(outcome([['shop/a', { kind: 'finished', request: done }]])).toEqual({
      exitCode: 0,
      outcomes: [{ exitCode: 0, stdout: 'ver/a completed in 5s: capacity 2Gi' }],
    });
  });

  it('exits 1 when any was Rejected, Failed or deleted, even if another timed out', () => {
    expect(
      outcome([
        ['shop/a', { kind: 'finished', request: done }],
        ['shop/b', { kind: 'finished', request: rejected }],
        ['shop/c', { kind: 'timeout', last: undefined }],
      ]).exitCode,
    ).toBe(waitExitCodes.failed);
    expect(outcome([['shop/a', { kind: 'deleted', last: done }]]).exitCode).toBe(waitExitCodes.failed);
  });

  it('exits 4 when one had not finished at the timeout and none failed', () => {
    const { exitCode, outcomes } = outcome([
      ['shop/a', { kind: 'finished', request: done }],
      ['shop/c', { kind: 'timeout', last: undefined }],
    ]);
    expect(exitCode).toBe(waitExitCodes.timeout);
    expect(outcomes[1]?.stderr).toBe('timed out after 1m00s waiting for ver/c in namespace shop: it does not exist');
  });
});

describe('the lines of a set', () => {
  it('show each request’s age, phase and what is happening, labels aligned', () => {
    const now = at(75);
    expect(requestLine('ver/a', named('a', { phase: 'Expanding', reason: 'WaitingForResizer', message: 'patched' }, '1'), now, 9)).toBe(
      'ver/a       1m15s  Expanding             WaitingForResizer: patched',
    );
    expect(requestLine('ver/missing', undefined, now)).toBe('ver/missing       -  Created               does not exist yet');
  });

  it('redraw in place: up over the last block, each line cleared and cut to the terminal', () => {
    expect(redrawBlock(['a', 'b'], 0, 80)).toBe('\r\x1b[2Ka\n\x1b[2Kb\n');
    expect(redrawBlock(['a', 'b'.repeat(30)], 2, 20)).toBe(`\x1b[2A\r\x1b[2Ka\n\x1b[2K${'b'.repeat(19)}\n`);
  });
});
