// KubeClient over node:http(s) — pvx's own transport, for a connection with static credentials
// (src/k8s/connection.ts). It makes the same calls as the client-node adapter (NodeKubeClient):
// the same paths, query parameters, field manager, content types, preconditions and bodies
// (src/k8s/wire.ts), and its refusals become the same ApiErrors (src/k8s/errors.ts) — without
// loading client-node, whose generated models and APIs alone take ~75 MiB of a process's memory.
// Objects come back as the API server's JSON: timestamps are strings, as on client-node's watches.
//
// Timeouts are client-node's: a connection must be made within 10 s; a request whose socket is
// silent for 300 s fails (undici's header and body timeouts); a watch stream silent for an hour
// ends with an error (the informer's own watchdog, 2 min, cuts it long before). A watch the server
// does not answer within 30 s fails, and one whose caller aborts it is closed at once, answered or
// not: a peer that never answers holds no socket for long. Connections are kept alive and reused
// (client-node opens a new one per request).
//
// What client-go gives its users and this client owes them too: the token file read again as it
// rotates (and an empty read ignored), HTTPS_PROXY/NO_PROXY honoured by client-go's rules
// (proxy.ts), TLS verification never silently off, watch lines split in linear time and bounded
// (watch-stream.ts), a line that is not an event ending the watch so that it resumes where it was.
import type {
  KubernetesObject,
  V1ConfigMap,
  V1Lease,
  V1PersistentVolumeClaim,
  V1StatefulSet,
  V1SubjectAccessReview,
  V1TokenReview,
} from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import type { Agent, ClientRequest, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { Readable } from 'node:stream';
import type {
  AccessReviewResult,
  CommandClient,
  DeletePreconditions,
  EventRecord,
  MintedToken,
  NonResourceAccessReview,
  TokenReviewResult,
  ListOptions,
  ListPage,
  RequestAnnotationsPatch,
  WatchEvent,
  WatchHandle,
  WatchOptions,
} from './client.ts';
import type { Connection } from './connection.ts';
import { ApiError, isNotFound, toApiError } from './errors.ts';
import { proxyFor } from './proxy.ts';
import { apiVersionOf, fieldManager, collectionPath, leaseType, resources, volumeExpansionRequests, type ResourceType } from './resources.ts';
import { LineSplitter, parseWatchLine } from './watch-stream.ts';
import type { AuthenticationV1TokenRequest } from '@kubernetes/client-node';
import {
  MergePatchClient,
  accessReviewResult,
  deletedVersion,
  eventBody,
  evictionBody,
  finalizersBody,
  mergePatch,
  orphanDeleteBody,
  requestAnnotationsBody,
  mintedToken,
  subjectAccessReviewBody,
  tokenRequestBody,
  tokenReviewBody,
  tokenReviewResult,
} from './wire.ts';

export interface HttpKubeClientOptions {
  /** A connection not made within this long fails, ms. Default 10,000. */
  connectTimeoutMs?: number;
  /** A request whose socket is silent this long fails, ms. Default 300,000. */
  requestTimeoutMs?: number;
  /** A watch stream silent this long ends with an error, ms. Default 3,600,000. */
  watchIdleTimeoutMs?: number;
  /** A watch request not answered (status and headers) within this long fails, ms. Default 30,000. */
  watchAnswerTimeoutMs?: number;
  /** A token file is read again when its copy is older than this, ms. Default 60,000 (client-go's and client-node's period). */
  tokenRefreshMs?: number;
  /** Where HTTPS_PROXY, HTTP_PROXY and NO_PROXY are read (proxy.ts). Default process.env. */
  env?: NodeJS.ProcessEnv;
}

type Query = Record<string, string | number | boolean | undefined>;

interface Call {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Query;
  body?: unknown;
  contentType?: string;
  /** The media type asked for, when not application/json (the key set is served as application/jwk-set+json alone). */
  accept?: string;
  /** Safe to send twice (a GET, or a review that creates nothing): sent again once if a kept-alive connection was closed under it. */
  idempotent?: boolean;
}

/** The transport failed (no answer, a reset, a silent socket), as opposed to an answer with an error status. */
class TransportError extends Error {
  override name = 'TransportError';
}

// node:http is taken with getBuiltinModule, not imported: an ESM import of it builds a namespace of
// every export, which runs its lazy getters for WebSocket and the fetch classes and so loads Node's
// bundled undici — about 13 MiB of memory for classes pvx never uses.
const http = process.getBuiltinModule('node:http');

const objectPath = (type: ResourceType, namespace: string | undefined, name: string) => `${collectionPath(type, namespace)}/${encodeURIComponent(name)}`;

export class HttpKubeClient extends MergePatchClient implements CommandClient {
  readonly connection: Connection;
  private readonly base: URL;
  private readonly hostname: string;
  private readonly port: string;
  private readonly basePath: string;
  private readonly agent: Agent;
  private readonly request: typeof http.request;
  private readonly o: Required<HttpKubeClientOptions>;
  private token: { value: string; readAt: number } | undefined;
  /** The proxy the API server is reached through, if any (for messages). */
  readonly proxy: URL | undefined;

  constructor(connection: Connection, opts: HttpKubeClientOptions = {}) {
    super();
    this.connection = connection;
    this.o = {
      connectTimeoutMs: 10_000,
      requestTimeoutMs: 300_000,
      watchIdleTimeoutMs: 3_600_000,
      watchAnswerTimeoutMs: 30_000,
      tokenRefreshMs: 60_000,
      env: process.env,
      ...opts,
    };
    // client-go refuses this too: with both, Node would skip verification and ignore the CA.
    if (connection.rejectUnauthorized === false && connection.ca) {
      throw new TypeError(
        `${connection.source}: insecure-skip-tls-verify and a certificate authority together are not allowed (client-go refuses them too): remove one`,
      );
    }
    this.base = new URL(connection.server);
    const secure = this.base.protocol === 'https:';
    this.proxy = connection.proxyUrl ? new URL(connection.proxyUrl) : proxyFor(this.base, this.o.env);
    // Idle connections are closed after 30 s, well inside the API server's own idle timeout, so a
    // request never goes out on a connection the server is closing. Node tunnels through the proxy
    // (CONNECT for https, the server's certificate still checked against `ca`); it is given the
    // one proxy decided above and no NO_PROXY, whose reading it does not share with client-go.
    const agentOptions = {
      keepAlive: true,
      keepAliveMsecs: 30_000,
      timeout: 30_000,
      ...(this.proxy ? { proxyEnv: secure ? { HTTPS_PROXY: this.proxy.href } : { HTTP_PROXY: this.proxy.href } } : {}),
    };
    this.agent = secure
      ? new https.Agent({
          ...agentOptions,
          // The CA, certificate and key as one secure context, made once: given as ca, cert and key,
          // https.Agent turns their text into its pool's key at every request (getName), which was
          // most of the CPU of a lease renewal at rest.
          secureContext: process.getBuiltinModule('node:tls').createSecureContext({ ca: connection.ca, cert: connection.cert, key: connection.key }),
          servername: connection.servername,
          ...(connection.rejectUnauthorized === false ? { rejectUnauthorized: false } : {}),
        })
      : new http.Agent(agentOptions);
    // Each request's target, without parsing a URL at every request.
    this.hostname = this.base.hostname.replace(/^\[(.*)\]$/, '$1');
    this.port = this.base.port;
    this.basePath = this.base.pathname.replace(/\/$/, '');
    this.request = secure ? https.request : http.request;
  }

  /** Closes the idle kept-alive connections (open watches end on their own when stopped). */
  close(): void {
    this.agent.destroy();
  }

  // --- the port ------------------------------------------------------------------------------

  async read(type: ResourceType, namespace: string | undefined, name: string): Promise<KubernetesObject | undefined> {
    try {
      return (await this.call({ method: 'GET', path: objectPath(type, type.namespaced ? namespace : undefined, name) })) as KubernetesObject;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async list(type: ResourceType, opts: ListOptions): Promise<ListPage> {
    const page = (await this.call({
      method: 'GET',
      path: collectionPath(type, type.namespaced ? opts.namespace : undefined),
      query: { fieldSelector: opts.fieldSelector, labelSelector: opts.labelSelector, limit: opts.limit, continue: opts.continue },
    })) as { items?: KubernetesObject[]; metadata?: { resourceVersion?: string; continue?: string } };
    const apiVersion = apiVersionOf(type);
    return {
      // A list's items carry no apiVersion and kind; the caches want them.
      items: (page.items ?? []).map((item) => ({ ...item, apiVersion: item.apiVersion ?? apiVersion, kind: item.kind ?? type.kind })),
      resourceVersion: page.metadata?.resourceVersion ?? '',
      continue: page.metadata?.continue || undefined,
    };
  }

  async watch(type: ResourceType, opts: WatchOptions, onEvent: (e: WatchEvent) => void, onEnd: (err?: unknown) => void): Promise<WatchHandle> {
    const url = this.url(collectionPath(type, type.namespaced ? opts.namespace : undefined), {
      watch: true,
      resourceVersion: opts.resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds: opts.timeoutSeconds,
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
    });
    const headers = this.headers();
    const { signal } = opts;
    let ended = false;
    let req: ClientRequest | undefined;
    const end = (err?: unknown) => {
      if (ended) return;
      ended = true;
      req?.destroy();
      onEnd(err === undefined ? undefined : toApiError(err));
    };
    const stop = () => {
      ended = true;
      req?.destroy();
    };
    if (signal?.aborted) return { stop };
    let answerTimer: NodeJS.Timeout | undefined;
    // Settles once the server has answered (or the request failed, or was aborted), as client-node's watch does.
    await new Promise<void>((answered) => {
      const settle = () => {
        clearTimeout(answerTimer);
        signal?.removeEventListener('abort', abort);
        answered();
      };
      const abort = () => {
        stop();
        settle();
      };
      signal?.addEventListener('abort', abort, { once: true });
      req = this.request({ ...url, method: 'GET', agent: this.agent, headers }, (res) => {
        settle();
        if (ended) return void res.destroy();
        if (signal) signal.addEventListener('abort', stop, { once: true });
        if (res.statusCode !== 200) {
          readBody(res).then(
            (body) => end(statusError(res, body)),
            (err: unknown) => end(err),
          );
          return;
        }
        const lines = new LineSplitter();
        let lineNumber = 0;
        const deliver = (line: Buffer) => {
          const event = parseWatchLine(line.toString('utf8'), ++lineNumber);
          if (event && !ended) onEvent(event);
        };
        res.on('data', (chunk: Buffer) => {
          try {
            for (const line of lines.push(chunk)) {
              if (ended) return;
              deliver(line);
            }
          } catch (err) {
            end(err);
          }
        });
        res.on('end', () => {
          try {
            if (!ended) deliver(lines.rest());
            end();
          } catch (err) {
            end(err);
          }
        });
        res.on('error', end);
        res.on('close', () => end(res.complete ? undefined : new TransportError('the watch stream was cut')));
      });
      req.on('error', (err) => {
        settle();
        end(err);
      });
      // The idle timeout would also bound the wait for an answer, but at an hour; a server that
      // never answers is given up on sooner.
      answerTimer = setTimeout(
        () => req?.destroy(new TransportError(`no answer to the watch of ${type.resource} within ${this.o.watchAnswerTimeoutMs} ms`)),
        this.o.watchAnswerTimeoutMs,
      );
      this.arm(req, this.o.watchIdleTimeoutMs, `the watch stream was silent for ${this.o.watchIdleTimeoutMs} ms`);
      req.end();
    });
    return { stop };
  }

  protected mergeClaimPatch(namespace: string, name: string, body: object): Promise<V1PersistentVolumeClaim> {
    return this.call({
      method: 'PATCH',
      path: objectPath(resources.persistentVolumeClaims, namespace, name),
      query: { fieldManager },
      body,
      contentType: mergePatch,
    }) as Promise<V1PersistentVolumeClaim>;
  }

  protected mergeStatusPatch(type: ResourceType, namespace: string | undefined, name: string, body: object): Promise<KubernetesObject> {
    return this.call({
      method: 'PATCH',
      path: `${objectPath(type, namespace, name)}/status`,
      query: { fieldManager },
      body,
      contentType: mergePatch,
    }) as Promise<KubernetesObject>;
  }

  async emitEvent(e: EventRecord): Promise<void> {
    await this.call({ method: 'POST', path: `/api/v1/namespaces/${encodeURIComponent(e.regarding.namespace)}/events`, body: eventBody(e, new Date()) });
  }

  async patchRequestAnnotations(namespace: string, name: string, patch: RequestAnnotationsPatch): Promise<void> {
    await this.call({
      method: 'PATCH',
      path: objectPath(volumeExpansionRequests, namespace, name),
      query: { fieldManager },
      body: requestAnnotationsBody(patch),
      contentType: mergePatch,
    });
  }

  async nodeStatsSummary(node: string): Promise<unknown> {
    return this.call({ method: 'GET', path: `/api/v1/nodes/${encodeURIComponent(node)}/proxy/stats/summary` });
  }

  async whoAmI(): Promise<string | undefined> {
    try {
      const review = (await this.call({
        method: 'POST',
        path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
        idempotent: true,
      })) as { status?: { userInfo?: { username?: string } } };
      return review.status?.userInfo?.username || undefined;
    } catch {
      return undefined;
    }
  }

  async createRequest(namespace: string, request: KubernetesObject): Promise<string> {
    const created = (await this.call({
      method: 'POST',
      path: collectionPath(volumeExpansionRequests, namespace),
      query: { fieldManager },
      body: request,
    })) as KubernetesObject;
    return created.metadata?.uid ?? '';
  }

  async deleteRequest(namespace: string, name: string, uid: string): Promise<void> {
    await this.call({ method: 'DELETE', path: objectPath(volumeExpansionRequests, namespace, name), body: { preconditions: { uid } } });
  }

  async patchRequestFinalizers(namespace: string, name: string, finalizers: string[], resourceVersion: string): Promise<string> {
    const written = (await this.call({
      method: 'PATCH',
      path: objectPath(volumeExpansionRequests, namespace, name),
      query: { fieldManager },
      body: finalizersBody(finalizers, resourceVersion),
      contentType: mergePatch,
    })) as KubernetesObject;
    return written.metadata?.resourceVersion ?? '';
  }

  async getStatefulSet(namespace: string, name: string): Promise<V1StatefulSet | undefined> {
    try {
      return (await this.call({ method: 'GET', path: objectPath(resources.statefulSets, namespace, name) })) as V1StatefulSet;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async deleteStatefulSetOrphan(namespace: string, name: string, preconditions: DeletePreconditions): Promise<string | undefined> {
    const left = (await this.call({ method: 'DELETE', path: objectPath(resources.statefulSets, namespace, name), body: orphanDeleteBody(preconditions) })) as
      KubernetesObject | undefined;
    return deletedVersion(left);
  }

  async createStatefulSet(namespace: string, statefulSet: V1StatefulSet): Promise<V1StatefulSet> {
    return (await this.call({
      method: 'POST',
      path: collectionPath(resources.statefulSets, namespace),
      query: { fieldManager },
      body: statefulSet,
    })) as V1StatefulSet;
  }

  async createRecord(namespace: string, record: V1ConfigMap): Promise<V1ConfigMap> {
    return (await this.call({
      method: 'POST',
      path: collectionPath(resources.statefulSetRecords, namespace),
      query: { fieldManager },
      body: record,
    })) as V1ConfigMap;
  }

  async updateRecord(namespace: string, record: V1ConfigMap): Promise<V1ConfigMap> {
    return (await this.call({
      method: 'PUT',
      path: objectPath(resources.statefulSetRecords, namespace, record.metadata?.name as string),
      query: { fieldManager },
      body: record,
    })) as V1ConfigMap;
  }

  async deleteRecord(namespace: string, name: string, uid: string): Promise<void> {
    await this.call({ method: 'DELETE', path: objectPath(resources.statefulSetRecords, namespace, name), body: { preconditions: { uid } } });
  }

  async evictPod(namespace: string, name: string, uid: string): Promise<void> {
    await this.call({ method: 'POST', path: `${objectPath(resources.pods, namespace, name)}/eviction`, body: evictionBody(namespace, name, uid) });
  }

  async createServiceAccountToken(namespace: string, name: string, expirationSeconds: number): Promise<MintedToken> {
    return mintedToken(
      (await this.call({
        method: 'POST',
        path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts/${encodeURIComponent(name)}/token`,
        body: tokenRequestBody(expirationSeconds),
        idempotent: true,
      })) as AuthenticationV1TokenRequest,
    );
  }

  async createTokenReview(token: string): Promise<TokenReviewResult> {
    return tokenReviewResult(
      (await this.call({
        method: 'POST',
        path: '/apis/authentication.k8s.io/v1/tokenreviews',
        body: tokenReviewBody(token),
        idempotent: true,
      })) as V1TokenReview,
    );
  }

  async getServiceAccountKeys(): Promise<unknown> {
    return this.call({ method: 'GET', path: '/openid/v1/jwks', accept: 'application/jwk-set+json' });
  }

  async createSubjectAccessReview(review: NonResourceAccessReview): Promise<AccessReviewResult> {
    return accessReviewResult(
      (await this.call({
        method: 'POST',
        path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
        body: subjectAccessReviewBody(review),
        idempotent: true,
      })) as V1SubjectAccessReview,
    );
  }

  async getLease(namespace: string, name: string): Promise<V1Lease | undefined> {
    try {
      return (await this.call({ method: 'GET', path: objectPath(leaseType, namespace, name) })) as V1Lease;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async createLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return (await this.call({ method: 'POST', path: collectionPath(leaseType, namespace), body: lease })) as V1Lease;
  }

  async updateLease(namespace: string, lease: V1Lease): Promise<V1Lease> {
    return (await this.call({ method: 'PUT', path: objectPath(leaseType, namespace, lease.metadata?.name ?? ''), body: lease })) as V1Lease;
  }

  /** One JSON request and its answer, whatever its status (a transport failure still throws): `pvx install-crds`. */
  async exchange(method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
    try {
      return { status: 200, json: ((await this.call({ method, path, body })) ?? {}) as Record<string, unknown> };
    } catch (err) {
      if (err instanceof ApiError) return { status: err.code, json: { reason: err.reason, message: err.message } };
      throw err;
    }
  }

  // --- HTTP ----------------------------------------------------------------------------------

  /** Where a request goes: the server, and the path with its query (values URI-encoded). */
  private url(path: string, query: Query = {}): { hostname: string; port: string; path: string } {
    const params = Object.entries(query).flatMap(([k, v]) => (v === undefined ? [] : [`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`]));
    return { hostname: this.hostname, port: this.port, path: `${this.basePath}${path}${params.length ? `?${params.join('&')}` : ''}` };
  }

  private headers(contentType?: string): OutgoingHttpHeaders {
    const token = this.bearerToken();
    return {
      accept: 'application/json',
      'user-agent': 'pvx',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(contentType ? { 'content-type': contentType } : {}),
    };
  }

  /**
   * The static token, or the token file's content, read again once its copy is older than
   * tokenRefreshMs. Public: pvx presents the same identity to the kubelets it reads usage from.
   */
  bearerToken(): string | undefined {
    const { token, tokenFile } = this.connection;
    if (token) return token;
    if (!tokenFile) return undefined;
    const now = performance.now();
    if (!this.token || now - this.token.readAt > this.o.tokenRefreshMs) {
      try {
        const value = readFileSync(tokenFile, 'utf8').trim();
        // Sent without a token, a request would reach the API server as system:anonymous.
        if (value === '') throw new Error(`the token file ${tokenFile} is empty`);
        this.token = { value, readAt: now };
      } catch (err) {
        // The kubelet swaps the file atomically, yet a read can still fail or find it empty: the
        // copy we had is kept, as client-go keeps it, and the file is read again next time.
        if (!this.token) throw err;
      }
    }
    return this.token.value;
  }

  /** Connect timeout while the socket connects, then a timeout on silence, for the request's life. */
  private arm(req: ClientRequest, idleMs: number, silentMessage: string): void {
    req.setTimeout(idleMs, () => req.destroy(new TransportError(silentMessage)));
    req.once('socket', (socket) => {
      if (!socket.connecting) return;
      const timer = setTimeout(
        () => req.destroy(new TransportError(`no connection to ${this.base.host} within ${this.o.connectTimeoutMs} ms`)),
        this.o.connectTimeoutMs,
      );
      socket.once(this.base.protocol === 'https:' ? 'secureConnect' : 'connect', () => clearTimeout(timer));
      socket.once('close', () => clearTimeout(timer));
    });
  }

  /** One request, its JSON answer; an error status becomes an ApiError. A GET or a review is sent again once if a kept-alive connection was closed under it. */
  private async call(c: Call): Promise<unknown> {
    try {
      return await this.send(c);
    } catch (err) {
      if ((c.method === 'GET' || c.idempotent) && err instanceof StaleConnection) return this.send(c);
      throw err instanceof StaleConnection ? err.cause : err;
    }
  }

  private send(c: Call): Promise<unknown> {
    const payload = c.body === undefined ? undefined : JSON.stringify(c.body);
    const headers = {
      ...this.headers(payload === undefined ? undefined : (c.contentType ?? 'application/json')),
      'accept-encoding': 'gzip',
      ...(c.accept ? { accept: c.accept } : {}),
      ...(payload === undefined ? {} : { 'content-length': Buffer.byteLength(payload) }),
    };
    return new Promise((resolve, reject) => {
      let answered = false;
      const req = this.request({ ...this.url(c.path, c.query), method: c.method, agent: this.agent, headers }, (res) => {
        answered = true;
        readBody(res).then((body) => {
          const status = res.statusCode ?? 0;
          if (status < 200 || status > 299) return reject(toApiError(statusError(res, body)));
          try {
            resolve(body === '' ? undefined : JSON.parse(body));
          } catch (err) {
            reject(new TransportError(`${c.method} ${c.path}: the answer is not JSON: ${(err as Error).message}`));
          }
        }, reject);
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        const reset = err.code === 'ECONNRESET' || err.code === 'EPIPE';
        reject(!answered && req.reusedSocket && reset ? new StaleConnection(err) : err);
      });
      this.arm(req, this.o.requestTimeoutMs, `no answer to ${c.method} ${c.path} within ${this.o.requestTimeoutMs} ms`);
      req.end(payload);
    });
  }
}

/** A kept-alive connection the server had closed: the request never reached it. */
class StaleConnection extends Error {
  override name = 'StaleConnection';
  constructor(cause: Error) {
    super(cause.message, { cause });
  }
}

/**
 * The response's body as text, gunzipped when the server compressed it. node:zlib is taken only
 * then: the API server compresses large answers alone, and a command's start need not load it.
 */
function readBody(res: IncomingMessage): Promise<string> {
  const stream: Readable = res.headers['content-encoding'] === 'gzip' ? res.pipe(process.getBuiltinModule('node:zlib').createGunzip()) : res;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    stream.on('error', reject);
    if (stream !== res) res.on('error', reject);
  });
}

/** An answer with an error status, in the shape toApiError reads (code, Status body, Retry-After). */
function statusError(res: IncomingMessage, body: string): unknown {
  const code = res.statusCode ?? 0;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers[k] = v;
  return toApiError({ code, body, headers, message: `HTTP ${code} ${res.statusMessage ?? ''}`.trim() });
}
