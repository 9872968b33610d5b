// One pvx process's connection to the simulated API server: a KubeClient that forwards to the
// shared FakeKubeClient, through the faults the scheduler draws. Each call may
//   - wait a random (virtual) time before it reaches the server and again before its answer returns;
//   - fail before it reaches the server (409/403/422/500/503, a refused connection);
//   - reach the server and change it, and then lose its answer (a 5xx or a reset connection);
//   - hang forever, once the process has crashed: a dead process never hears back, and nothing it
//     sends after its death arrives.
// Watch streams may lag (events arrive late, in order) and drop events; a dropped event is only
// recovered by a relist. A partition refuses every call for a while (how a leader loses its lease).
import type { KubernetesObject, V1ConfigMap, V1Lease, V1Node, V1PersistentVolumeClaim, V1StatefulSet } from '@kubernetes/client-node';
import type { PolicyStatus } from '../../src/crds/volume-expansion-policy.ts';
import type { RequestStatus } from '../../src/crds/volume-expansion-request.ts';
import type {
  AccessReviewResult,
  DeletePreconditions,
  EventRecord,
  KubeClient,
  NonResourceAccessReview,
  TokenReviewResult,
  ListOptions,
  ListPage,
  PolicyRef,
  PvcAnnotationsPatch,
  PvcSizePatch,
  WatchEvent,
  WatchHandle,
  WatchOptions,
  KubeletClient,
  MintedToken,
} from '../../src/k8s/client.ts';
import { ApiError } from '../../src/k8s/errors.ts';
import type { FakeKubeClient } from '../../src/k8s/testing/fake-client.ts';
import type { ResourceType } from '../../src/k8s/resources.ts';
import type { Random } from './random.ts';
import type { Trace } from './trace.ts';

/** How often each API fault strikes while faults are on; drawn per seed, so some seeds are calm and some stormy. */
export interface ApiFaultRates {
  /** A call waits before reaching the server and before its answer returns. */
  delay: number;
  maxDelayMs: number;
  /** A call fails before it reaches the server. */
  fail: number;
  /** A write is made and its answer lost. */
  lostResponse: number;
  /** A new watch stream delivers late. */
  watchLag: number;
  /** An event on a lagging stream is lost. */
  watchDrop: number;
}

export interface FaultSwitch {
  /** False in the quiet period at the end of a run. */
  enabled: boolean;
  rates: ApiFaultRates;
  rng: Random;
}

export interface ClientHooks {
  /** A write (not the lease's own) reached the server; issuedAt is when the process sent it (monotonic ms). */
  writeLanded(identity: string, method: string, what: string, issuedAt: number): void;
  /** A write landed and its answer was lost: the writer cannot know, and may write the same again. */
  answerLost?(what: string): void;
  /** A list reached the server: what the process read was the server's as of resourceVersion (of the namespace and field selector in opts). */
  listed?(identity: string, resource: string, resourceVersion: string, opts: ListOptions): void;
  /** Monotonic simulated ms. */
  now(): number;
}

const writeMethods = new Set([
  'patchPvcSize',
  'patchPvcAnnotations',
  'patchRequestStatus',
  'patchPolicyStatus',
  'emitEvent',
  'createRequest',
  'deleteRequest',
  ...['patchRequestFinalizers', 'deleteStatefulSetOrphan', 'createStatefulSet', 'evictPod'],
  ...['createRecord', 'updateRecord', 'deleteRecord'],
]);
const conditional = new Set([
  'patchPvcSize',
  'patchPvcAnnotations',
  'updateLease',
  'createRequest',
  'deleteRequest',
  'createLease',
  ...['patchRequestFinalizers', 'deleteStatefulSetOrphan', 'createStatefulSet', 'evictPod'],
  ...['createRecord', 'updateRecord', 'deleteRecord'],
]);

const never = <T>(): Promise<T> => new Promise<T>(() => undefined);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function connectionError(what: string): Error {
  return Object.assign(new Error(`connect ECONNREFUSED 10.96.0.1:443 (${what})`), { code: 'ECONNREFUSED' });
}

export class FaultyClient implements KubeClient, KubeletClient {
  private dead = false;
  private partitionedUntil = -1;

  private readonly api: FakeKubeClient;
  readonly identity: string;
  private readonly faults: FaultSwitch;
  private readonly trace: Trace;
  private readonly hooks: ClientHooks;

  constructor(api: FakeKubeClient, identity: string, faults: FaultSwitch, trace: Trace, hooks: ClientHooks) {
    this.api = api;
    this.identity = identity;
    this.faults = faults;
    this.trace = trace;
    this.hooks = hooks;
  }

  /** The process died: every call in flight or to come hangs, every stream goes silent. */
  kill(): void {
    this.dead = true;
  }

  get alive(): boolean {
    return !this.dead;
  }

  /** Every call fails to connect until `until` (monotonic ms). */
  partition(until: number): void {
    this.partitionedUntil = until;
  }

  private get partitioned(): boolean {
    return this.hooks.now() < this.partitionedUntil;
  }

  private async call<T>(method: string, what: string, perform: () => Promise<T>): Promise<T> {
    if (this.dead) return never();
    const issuedAt = this.hooks.now();
    const { enabled, rates, rng } = this.faults;
    if (enabled && rates.delay > 0 && rng.chance(rates.delay)) {
      await sleep(rng.duration(1, rates.maxDelayMs));
      if (this.dead) return never();
    }
    if (this.partitioned) throw connectionError(`${method} ${what}`);
    if (enabled && rng.chance(rates.fail)) {
      const err = this.injectedError(method, rng);
      this.trace.fault('api-fail', `${this.identity} ${method} ${what}: ${err instanceof ApiError ? err.code : 'connection refused'}`);
      throw err;
    }
    const lose = enabled && writeMethods.has(method) && rng.chance(rates.lostResponse);
    const answerDelay = enabled && rates.delay > 0 && rng.chance(rates.delay) ? rng.duration(1, rates.maxDelayMs) : 0;
    // The store does its work synchronously inside perform(), under this process's name.
    const pending = this.api.asActor(this.identity, perform);
    let outcome: { ok: true; value: T } | { ok: false; err: unknown };
    try {
      outcome = { ok: true, value: await pending };
      // Only writes the store accepted count; a refused one (409, 403, …) changed nothing.
      if (writeMethods.has(method)) this.hooks.writeLanded(this.identity, method, what, issuedAt);
    } catch (err) {
      outcome = { ok: false, err };
    }
    if (answerDelay > 0) await sleep(answerDelay);
    if (this.dead) return never();
    if (!outcome.ok) throw outcome.err;
    if (lose) {
      this.trace.fault('lost-response', `${this.identity} ${method} ${what}: done, answer lost`);
      this.hooks.answerLost?.(what);
      throw rng.chance(0.5)
        ? new ApiError(503, 'ServiceUnavailable', 'the server is currently unable to handle the request')
        : Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    }
    return outcome.value;
  }

  private injectedError(method: string, rng: Random): unknown {
    const kind = rng.weighted<number>([
      [409, conditional.has(method) ? 3 : 0],
      [403, 1],
      [422, 0.5],
      [500, 3],
      [503, 3],
      [0, 2],
    ]);
    switch (kind) {
      case 409:
        return new ApiError(
          409,
          'Conflict',
          'Operation cannot be fulfilled: the object has been modified; please apply your changes to the latest version and try again',
        );
      case 403:
        return new ApiError(403, 'Forbidden', `${method} is forbidden: injected by the simulation`);
      case 422:
        return new ApiError(422, 'Invalid', `${method} is invalid: injected by the simulation`);
      case 500:
        return new ApiError(500, 'InternalError', 'Internal error occurred: etcdserver: request timed out');
      case 503:
        return new ApiError(503, 'ServiceUnavailable', 'the server is currently unable to handle the request');
      default:
        return connectionError(method);
    }
  }

  // --- KubeClient ----------------------------------------------------------------------------

  list(type: ResourceType, opts: ListOptions): Promise<ListPage> {
    return this.call('list', type.resource, async () => {
      const page = await this.api.list(type, opts);
      this.hooks.listed?.(this.identity, type.resource, page.resourceVersion, opts);
      return page;
    });
  }

  async watch(type: ResourceType, opts: WatchOptions, onEvent: (e: WatchEvent) => void, onEnd: (err?: unknown) => void): Promise<WatchHandle> {
    if (this.dead) return never();
    const { enabled, rates, rng } = this.faults;
    const lagMs = enabled && rng.chance(rates.watchLag) ? rng.duration(50, 20_000) : 0;
    let dropping = lagMs > 0 && rng.chance(rates.watchDrop * 5);
    const historyRead = opts.fieldSelector?.startsWith('metadata.name=') === true;
    if (lagMs > 0) this.trace.fault('watch-lag', `${this.identity} ${type.resource} stream lags ${lagMs} ms${dropping ? ' and drops events' : ''}`);
    let open = true;
    let lastDelivery = 0;
    // Events of one stream keep their order; streams lag independently, so caches disagree for a while.
    const deliver = (fn: () => void) => {
      if (lagMs === 0) {
        if (open && !this.dead) fn();
        return;
      }
      const at = Math.max(lastDelivery, this.hooks.now() + lagMs);
      lastDelivery = at;
      setTimeout(() => {
        if (open && !this.dead) fn();
      }, at - this.hooks.now());
    };
    const handle = await this.call('watch', type.resource, () =>
      this.api.watch(
        type,
        opts,
        (e) => {
          if (dropping && e.type !== 'ERROR' && this.faults.enabled && rng.chance(rates.watchDrop * 10)) {
            const what = `${e.type} ${e.object.metadata?.namespace ?? ''}/${e.object.metadata?.name ?? ''}`;
            // A stream of one object's history (a watch by name from a version: how it went) is
            // read as the API server's watch contract promises, every event in order or an end;
            // an informer's stream is made lossier than any real one, for what a relist hides.
            // So the history's stream breaks there instead (seed 2286978: its owner's foreground
            // cascade dropped from the history, and pvx took the deletion for its own alone).
            if (historyRead) {
              this.trace.fault('watch-drop', `${this.identity} ${type.resource} stream of ${opts.fieldSelector} breaks before ${what}`);
              deliver(() => {
                open = false;
                onEnd(new Error('connection reset'));
              });
              dropping = false;
              return;
            }
            this.trace.fault('watch-drop', `${this.identity} ${type.resource} lost ${what}`);
            return;
          }
          deliver(() => onEvent(e));
        },
        (err) =>
          deliver(() => {
            open = false;
            onEnd(err);
          }),
      ),
    );
    return {
      stop: () => {
        open = false;
        handle.stop();
      },
    };
  }

  patchPvcSize(namespace: string, name: string, patch: PvcSizePatch): Promise<V1PersistentVolumeClaim> {
    return this.call('patchPvcSize', `${namespace}/${name}`, () => this.api.patchPvcSize(namespace, name, patch));
  }

  patchPvcAnnotations(namespace: string, name: string, patch: PvcAnnotationsPatch): Promise<V1PersistentVolumeClaim> {
    return this.call('patchPvcAnnotations', `${namespace}/${name}`, () => this.api.patchPvcAnnotations(namespace, name, patch));
  }

  patchRequestStatus(namespace: string, name: string, status: RequestStatus, resourceVersion: string): Promise<string> {
    return this.call('patchRequestStatus', `${namespace}/${name}`, () => this.api.patchRequestStatus(namespace, name, status, resourceVersion));
  }

  patchPolicyStatus(policy: PolicyRef, status: PolicyStatus): Promise<string> {
    return this.call('patchPolicyStatus', `${policy.namespace ?? ''}/${policy.name}`, () => this.api.patchPolicyStatus(policy, status));
  }

  createServiceAccountToken(namespace: string, name: string, expirationSeconds: number): Promise<MintedToken> {
    return this.call('createServiceAccountToken', `${namespace}/${name}`, () => this.api.createServiceAccountToken(namespace, name, expirationSeconds));
  }

  createTokenReview(token: string): Promise<TokenReviewResult> {
    return this.call('createTokenReview', '', () => this.api.createTokenReview(token));
  }

  getServiceAccountKeys(): Promise<unknown> {
    return this.call('getServiceAccountKeys', '', () => this.api.getServiceAccountKeys());
  }

  createSubjectAccessReview(review: NonResourceAccessReview): Promise<AccessReviewResult> {
    return this.call('createSubjectAccessReview', `${review.user.username} ${review.verb} ${review.path}`, () => this.api.createSubjectAccessReview(review));
  }

  emitEvent(event: EventRecord): Promise<void> {
    return this.call('emitEvent', `${event.regarding.namespace}/${event.regarding.name} ${event.reason}`, () => this.api.emitEvent(event));
  }

  createRequest(namespace: string, request: KubernetesObject): Promise<string> {
    return this.call('createRequest', `${namespace}/${request.metadata?.name}`, () => this.api.createRequest(namespace, request));
  }

  deleteRequest(namespace: string, name: string, uid: string): Promise<void> {
    return this.call('deleteRequest', `${namespace}/${name}`, () => this.api.deleteRequest(namespace, name, uid));
  }

  patchRequestFinalizers(namespace: string, name: string, finalizers: string[], resourceVersion: string): Promise<string> {
    return this.call('patchRequestFinalizers', `${namespace}/${name}`, () => this.api.patchRequestFinalizers(namespace, name, finalizers, resourceVersion));
  }

  createRecord(namespace: string, record: V1ConfigMap): Promise<V1ConfigMap> {
    return this.call('createRecord', `${namespace}/${record.metadata?.name}`, () => this.api.createRecord(namespace, record));
  }

  updateRecord(namespace: string, record: V1ConfigMap): Promise<V1ConfigMap> {
    return this.call('updateRecord', `${namespace}/${record.metadata?.name}`, () => this.api.updateRecord(namespace, record));
  }

  deleteRecord(namespace: string, name: string, uid: string): Promise<void> {
    return this.call('deleteRecord', `${namespace}/${name}`, () => this.api.deleteRecord(namespace, name, uid));
  }

  getStatefulSet(namespace: string, name: string): Promise<V1StatefulSet | undefined> {
    return this.call('getStatefulSet', `${namespace}/${name}`, () => this.api.getStatefulSet(namespace, name));
  }

  deleteStatefulSetOrphan(namespace: string, name: string, preconditions: DeletePreconditions): Promise<string | undefined> {
    return this.call('deleteStatefulSetOrphan', `${namespace}/${name}`, () => this.api.deleteStatefulSetOrphan(namespace, name, preconditions));
  }

  createStatefulSet(namespace: string, statefulSet: V1StatefulSet): Promise<V1StatefulSet> {
    return this.call('createStatefulSet', `${namespace}/${statefulSet.metadata?.name}`, () => this.api.createStatefulSet(namespace, statefulSet));
  }

  evictPod(namespace: string, name: string, uid: string): Promise<void> {
    return this.call('evictPod', `${namespace}/${name}`, () => this.api.evictPod(namespace, name, uid));
  }

  /** The kubelets are reached through the same faulty network (KubeletClient). */
  statsSummary(node: V1Node): Promise<unknown> {
    return this.call('statsSummary', node.metadata?.name ?? '', () => this.api.statsSummary(node));
  }

  getLease(namespace: string, name: string): Promise<V1Lease | undefined> {
    return this.call('getLease', name, () => this.api.getLease(namespace, name));
  }

  createLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.call('createLease', lease.metadata?.name ?? '', () => this.api.createLease(namespace, lease));
  }

  updateLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return this.call('updateLease', lease.metadata?.name ?? '', () => this.api.updateLease(namespace, lease));
  }
}
