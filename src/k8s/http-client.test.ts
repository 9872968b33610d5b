import { KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CommandClient, KubeClient, WatchEvent } from './client.ts';
import { ApiError } from './errors.ts';
import { HttpKubeClient } from './http-client.ts';
import { NodeKubeClient } from './node-client.ts';
import { eventually, writeInChunks } from './testing/peers.ts';
import { resources, volumeExpansionRequests } from './resources.ts';

/** One request as the API server received it. */
interface Received {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType?: string;
  authorization?: string;
  acceptEncoding?: string;
  body?: unknown;
}

interface Answer {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  gzip?: boolean;
}

/** Enough discovery for client-node's KubernetesObjectApi to find the kinds pvx lists. */
const discovery: Record<string, unknown> = {
  '/api/v1': {
    kind: 'APIResourceList',
    groupVersion: 'v1',
    resources: [
      { name: 'persistentvolumeclaims', kind: 'PersistentVolumeClaim', namespaced: true, verbs: ['list'] },
      { name: 'nodes', kind: 'Node', namespaced: false, verbs: ['list'] },
    ],
  },
  '/apis/storage.k8s.io/v1': {
    kind: 'APIResourceList',
    groupVersion: 'storage.k8s.io/v1',
    resources: [
      { name: 'storageclasses', kind: 'StorageClass', namespaced: false, verbs: ['list'] },
      { name: 'volumeattributesclasses', kind: 'VolumeAttributesClass', namespaced: false, verbs: ['list'] },
    ],
  },
  '/apis/pvx.dev/v1alpha1': {
    kind: 'APIResourceList',
    groupVersion: 'pvx.dev/v1alpha1',
    resources: [{ name: 'volumeexpansionrequests', kind: 'VolumeExpansionRequest', namespaced: true, verbs: ['list'] }],
  },
};

/** A stand-in API server: records what it receives (discovery aside) and answers with `answer`. */
class FakeApiServer {
  readonly received: Received[] = [];
  /** Every request's path as sent, before decoding (discovery included). */
  readonly rawPaths: string[] = [];
  answer: (r: Received, res: ServerResponse) => Answer | undefined = () => ({ body: {} });
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on('connection', (s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((r) => this.server?.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server?.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server?.close(r));
  }

  /** Cuts every open connection (a watch stream, kept-alive sockets). */
  cut(): void {
    for (const s of this.sockets) s.destroy();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://x');
    this.rawPaths.push(url.pathname);
    if (discovery[url.pathname]) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(discovery[url.pathname]));
      return;
    }
    const text = Buffer.concat(chunks).toString('utf8');
    const r: Received = {
      method: req.method ?? '',
      path: decodeURIComponent(url.pathname),
      query: Object.fromEntries([...url.searchParams].sort(([a], [b]) => a.localeCompare(b))),
      ...(req.headers['content-type'] ? { contentType: req.headers['content-type'].split(';')[0] } : {}),
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
      ...(req.headers['accept-encoding'] ? { acceptEncoding: req.headers['accept-encoding'] } : {}),
      ...(text ? { body: JSON.parse(text) } : {}),
    };
    this.received.push(r);
    const a = this.answer(r, res);
    if (!a) return; // the handler answers (or never does) itself
    const payload = typeof a.body === 'string' ? a.body : JSON.stringify(a.body ?? {});
    const headers: Record<string, string> = { 'content-type': typeof a.body === 'string' ? 'text/plain' : 'application/json', ...a.headers };
    if (a.gzip) res.writeHead(a.status ?? 200, { ...headers, 'content-encoding': 'gzip' }).end(gzipSync(payload));
    else res.writeHead(a.status ?? 200, headers).end(payload);
  }
}

const server = new FakeApiServer();
const scratch = mkdtempSync(join(tmpdir(), 'pvx-http-client-'));

beforeAll(() => server.start());
afterAll(async () => {
  await server.stop();
  rmSync(scratch, { recursive: true, force: true });
});
afterEach(() => {
  server.cut();
  server.received.length = 0;
  server.answer = () => ({ body: {} });
});

function nodeClient(): NodeKubeClient {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: server.url, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'secret' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return new NodeKubeClient(kc);
}

const httpClient = (opts: ConstructorParameters<typeof HttpKubeClient>[1] = {}, token: { token?: string; tokenFile?: string } = { token: 'secret' }) =>
  new HttpKubeClient({ server: server.url, rejectUnauthorized: false, source: 'test', ...token }, opts);

const status = (code: number, reason: string, message: string, details?: object) => ({
  kind: 'Status',
  apiVersion: 'v1',
  status: 'Failure',
  code,
  reason,
  message,
  ...(details ? { details } : {}),
});

/** What a call came to: its value (as JSON) or the ApiError's code, reason, fields and Retry-After. */
async function outcome(call: () => Promise<unknown>): Promise<unknown> {
  try {
    const value = await call();
    return value === undefined ? { undefined: true } : { value: JSON.parse(JSON.stringify(value)) };
  } catch (err) {
    if (err instanceof ApiError)
      return { error: { code: err.code, reason: err.reason, fields: err.fields, causes: err.causes, retryAfterSeconds: err.retryAfterSeconds } };
    throw err;
  }
}

/** The requests of one call, with an Event's random name and timestamps made comparable. */
function comparable(received: Received[]): Received[] {
  return received.map((r) => {
    const body = r.body as { metadata?: { name?: string }; firstTimestamp?: string; lastTimestamp?: string; involvedObject?: unknown } | undefined;
    if (!body?.involvedObject) return r;
    return {
      ...r,
      body: {
        ...body,
        metadata: { ...body.metadata, name: body.metadata?.name?.replace(/\.[0-9a-f]{16}$/, '.<random>') },
        firstTimestamp: '<now>',
        lastTimestamp: '<now>',
      },
    };
  });
}

const pvc = {
  apiVersion: 'v1',
  kind: 'PersistentVolumeClaim',
  metadata: { name: 'data', namespace: 'db', uid: 'u1', resourceVersion: '7' },
  spec: { resources: { requests: { storage: '2Gi' } } },
};
const request = {
  apiVersion: 'pvx.dev/v1alpha1',
  kind: 'VolumeExpansionRequest',
  metadata: { name: 'grow', namespace: 'db', resourceVersion: '12' },
  spec: { target: { pvcName: 'data' }, size: '2Gi' },
};
const statefulSet = {
  apiVersion: 'apps/v1',
  kind: 'StatefulSet',
  metadata: { name: 'web', namespace: 'db', uid: 's1', resourceVersion: '21' },
  spec: {
    serviceName: 'web',
    selector: { matchLabels: { app: 'web' } },
    template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'busybox' }] } },
    volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '2Gi' } } } }],
  },
};
const lease = {
  apiVersion: 'coordination.k8s.io/v1',
  kind: 'Lease',
  metadata: { name: 'pvx-leader', namespace: 'pvx-system', resourceVersion: '3' },
  spec: { holderIdentity: 'a', leaseDurationSeconds: 15 },
};

interface Case {
  name: string;
  call: (c: CommandClient) => Promise<unknown>;
  answer: Answer;
}

const cases: Case[] = [
  {
    name: 'read of one claim (the commands)',
    call: (c) => c.read(resources.persistentVolumeClaims, 'db', 'data-0'),
    answer: { body: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', metadata: pvc.metadata, spec: pvc.spec } },
  },
  {
    name: 'read of a missing request (undefined)',
    call: (c) => c.read(volumeExpansionRequests, 'db', 'grow'),
    answer: { status: 404, body: status(404, 'NotFound', 'volumeexpansionrequests.pvx.dev "grow" not found') },
  },
  {
    name: 'a request’s annotations merged, on its resourceVersion (pvx approve)',
    call: (c) => c.patchRequestAnnotations('db', 'grow', { resourceVersion: '7', annotations: { 'pvx.dev/approved': 'plan', 'pvx.dev/other': null } }),
    answer: { body: { kind: 'VolumeExpansionRequest', apiVersion: 'pvx.dev/v1alpha1', metadata: { name: 'grow', namespace: 'db', resourceVersion: '8' } } },
  },
  {
    name: 'a request’s annotations on a stale version',
    call: (c) => c.patchRequestAnnotations('db', 'grow', { resourceVersion: '7', annotations: { 'pvx.dev/approved': 'plan' } }),
    answer: { status: 409, body: status(409, 'Conflict', 'the object has been modified') },
  },
  {
    name: 'list of a namespaced kind, one page, with selectors',
    call: (c) =>
      c.list(resources.persistentVolumeClaims, { namespace: 'db', labelSelector: 'app=db', fieldSelector: 'status.phase=Bound', limit: 500, continue: 'abc' }),
    answer: {
      body: {
        kind: 'PersistentVolumeClaimList',
        apiVersion: 'v1',
        metadata: { resourceVersion: '42', continue: 'def' },
        items: [{ metadata: pvc.metadata, spec: pvc.spec }],
      },
    },
  },
  {
    name: 'list of a cluster-scoped kind, the last page',
    call: (c) => c.list(resources.storageClasses, { limit: 500 }),
    answer: {
      body: {
        kind: 'StorageClassList',
        apiVersion: 'storage.k8s.io/v1',
        metadata: { resourceVersion: '43' },
        items: [{ metadata: { name: 'gp3' }, provisioner: 'ebs.csi.aws.com' }],
      },
    },
  },
  {
    name: 'list of VolumeAttributesClasses (storage.k8s.io/v1, cluster-scoped)',
    call: (c) => c.list(resources.volumeAttributesClasses, { limit: 500 }),
    answer: {
      body: {
        kind: 'VolumeAttributesClassList',
        apiVersion: 'storage.k8s.io/v1',
        metadata: { resourceVersion: '45' },
        items: [{ metadata: { name: 'io2' }, driverName: 'ebs.csi.aws.com', parameters: { type: 'io2', iops: '4000' } }],
      },
    },
  },
  {
    name: 'list of pvx requests in all namespaces',
    call: (c) => c.list(volumeExpansionRequests, { limit: 1 }),
    answer: { body: { kind: 'VolumeExpansionRequestList', apiVersion: 'pvx.dev/v1alpha1', metadata: { resourceVersion: '44' }, items: [request] } },
  },
  {
    name: 'list refused: not served',
    call: (c) => c.list(volumeExpansionRequests, { namespace: 'db' }),
    answer: { status: 404, body: '404 page not found' },
  },
  {
    name: 'claim size patch',
    call: (c) =>
      c.patchPvcSize('db', 'data', {
        resourceVersion: '7',
        uid: 'u1',
        storage: '3Gi',
        annotations: { 'pvx.dev/target-size': '3Gi', 'pvx.dev/recovered-to': null },
      }),
    answer: { body: pvc },
  },
  {
    name: 'claim patch of the size and the VolumeAttributesClass together',
    call: (c) =>
      c.patchPvcSize('db', 'data', {
        resourceVersion: '7',
        uid: 'u1',
        storage: '3Gi',
        volumeAttributesClassName: 'io2',
        annotations: { 'pvx.dev/target-volume-attributes-class': 'io2' },
      }),
    answer: { body: pvc },
  },
  {
    name: 'claim patch of the VolumeAttributesClass alone (the size left as it is)',
    call: (c) =>
      c.patchPvcSize('db', 'data', { resourceVersion: '7', uid: 'u1', volumeAttributesClassName: 'io2', annotations: { 'pvx.dev/target-size': null } }),
    answer: { body: pvc },
  },
  {
    name: 'claim size patch naming another UID (422 on metadata.uid → 409)',
    call: (c) => c.patchPvcSize('db', 'data', { resourceVersion: '7', uid: 'other', storage: '3Gi', annotations: {} }),
    answer: {
      status: 422,
      body: status(422, 'Invalid', 'PersistentVolumeClaim "data" is invalid: metadata.uid: Invalid value', {
        causes: [{ field: 'metadata.uid', reason: 'FieldValueInvalid' }],
      }),
    },
  },
  {
    name: 'claim size patch refused by validation (422 elsewhere stays 422)',
    call: (c) => c.patchPvcSize('db', 'data', { resourceVersion: '7', uid: 'u1', storage: '1Gi', annotations: {} }),
    answer: {
      status: 422,
      body: status(422, 'Invalid', 'spec.resources.requests.storage: Forbidden', { causes: [{ field: 'spec.resources.requests.storage' }] }),
    },
  },
  {
    name: 'claim size patch on a stale resourceVersion',
    call: (c) => c.patchPvcSize('db', 'data', { resourceVersion: '1', uid: 'u1', storage: '3Gi', annotations: {} }),
    answer: { status: 409, body: status(409, 'Conflict', 'the object has been modified') },
  },
  {
    name: 'claim size patch refused by admission',
    call: (c) => c.patchPvcSize('db', 'data', { resourceVersion: '7', uid: 'u1', storage: '3Gi', annotations: {} }),
    answer: { status: 403, body: status(403, 'Forbidden', 'only dynamically provisioned pvc can be resized') },
  },
  {
    name: 'claim annotations patch',
    call: (c) =>
      c.patchPvcAnnotations('db', 'data', { resourceVersion: '7', uid: 'u1', annotations: { 'pvx.dev/modifications': '{"spec":{"size":"3Gi"},"mods":[]}' } }),
    answer: { body: pvc },
  },
  {
    name: 'claim annotations patch naming another UID (422 on metadata.uid → 409)',
    call: (c) => c.patchPvcAnnotations('db', 'data', { resourceVersion: '7', uid: 'other', annotations: { 'pvx.dev/modifications': '{}' } }),
    answer: {
      status: 422,
      body: status(422, 'Invalid', 'PersistentVolumeClaim "data" is invalid: metadata.uid: Invalid value', {
        causes: [{ field: 'metadata.uid', reason: 'FieldValueInvalid' }],
      }),
    },
  },
  {
    name: 'claim annotations patch on a stale resourceVersion',
    call: (c) => c.patchPvcAnnotations('db', 'data', { resourceVersion: '1', uid: 'u1', annotations: { 'pvx.dev/modifications': '{}' } }),
    answer: { status: 409, body: status(409, 'Conflict', 'the object has been modified') },
  },
  {
    name: 'throttled, with Retry-After',
    call: (c) => c.patchPvcSize('db', 'data', { resourceVersion: '7', uid: 'u1', storage: '3Gi', annotations: {} }),
    answer: { status: 429, body: status(429, 'TooManyRequests', 'slow down'), headers: { 'retry-after': '7' } },
  },
  {
    name: 'request status merge with its resourceVersion precondition',
    call: (c) => c.patchRequestStatus('db', 'grow', { phase: 'Pending', reason: 'Validating', message: 'x' }, '12'),
    answer: { body: { ...request, metadata: { ...request.metadata, resourceVersion: '13' } } },
  },
  {
    name: 'namespaced policy status',
    call: (c) => c.patchPolicyStatus({ kind: 'VolumeExpansionPolicy', namespace: 'db', name: 'grow' }, { volumes: [] }),
    answer: { body: {} },
  },
  {
    name: 'cluster policy status',
    call: (c) => c.patchPolicyStatus({ kind: 'ClusterVolumeExpansionPolicy', name: 'fleet' }, { volumes: [] }),
    answer: { body: {} },
  },
  {
    name: 'event about a claim',
    call: (c) =>
      c.emitEvent({
        regarding: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'db', name: 'data', uid: 'u1' },
        type: 'Warning',
        reason: 'AtMaxSize',
        message: 'x'.repeat(2000),
      }),
    answer: { status: 201, body: {} },
  },
  {
    name: 'request creation',
    call: (c) => c.createRequest('db', request),
    answer: { status: 201, body: request },
  },
  {
    name: 'request creation of an existing one',
    call: (c) => c.createRequest('db', request),
    answer: { status: 409, body: status(409, 'AlreadyExists', 'volumeexpansionrequests.pvx.dev "grow" already exists', { name: 'grow' }) },
  },
  {
    name: 'request deletion with its UID precondition',
    call: (c) => c.deleteRequest('db', 'grow', 'u9'),
    answer: { body: status(200, '', '') },
  },
  {
    name: 'request finalizers, with the resourceVersion precondition',
    call: (c) => c.patchRequestFinalizers('db', 'grow', ['pvx.dev/statefulset-record'], '12'),
    answer: { body: { ...request, metadata: { ...request.metadata, resourceVersion: '14', finalizers: ['pvx.dev/statefulset-record'] } } },
  },
  {
    name: 'StatefulSet read',
    call: (c) => c.getStatefulSet('db', 'web'),
    answer: { body: statefulSet },
  },
  {
    name: 'StatefulSet read of a missing one (undefined)',
    call: (c) => c.getStatefulSet('db', 'web'),
    answer: { status: 404, body: status(404, 'NotFound', 'statefulsets.apps "web" not found') },
  },
  {
    name: 'StatefulSet deletion orphaning its pods, on its UID and resourceVersion',
    call: (c) => c.deleteStatefulSetOrphan('db', 'web', { uid: 's1', resourceVersion: '21' }),
    answer: { body: { ...statefulSet, metadata: { ...statefulSet.metadata, deletionTimestamp: '2026-12-02T10:00:00Z', finalizers: ['orphan'] } } },
  },
  {
    name: 'StatefulSet deletion refused: it changed since it was recorded',
    call: (c) => c.deleteStatefulSetOrphan('db', 'web', { uid: 's1', resourceVersion: '20' }),
    answer: {
      status: 409,
      body: status(
        409,
        'Conflict',
        'Operation cannot be fulfilled on statefulsets.apps "web": the ResourceVersion in the precondition (20) does not match the ResourceVersion in record (21)',
      ),
    },
  },
  {
    name: 'StatefulSet creation',
    call: (c) =>
      c.createStatefulSet('db', { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'web', labels: { app: 'web' } }, spec: statefulSet.spec }),
    answer: { status: 201, body: statefulSet },
  },
  {
    name: 'StatefulSet creation while the old one is still being deleted',
    call: (c) => c.createStatefulSet('db', { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'web' }, spec: statefulSet.spec }),
    answer: { status: 409, body: status(409, 'AlreadyExists', 'statefulsets.apps "web" already exists', { name: 'web', group: 'apps', kind: 'statefulsets' }) },
  },
  {
    name: 'StatefulSet record creation, in pvx’s namespace',
    call: (c) => c.createRecord('pvx-system', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'pvx-sts-r1' }, data: { 'step.json': '{}' } }),
    answer: {
      status: 201,
      body: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'pvx-sts-r1', namespace: 'pvx-system', uid: 'c1', resourceVersion: '5' } },
    },
  },
  {
    name: 'StatefulSet record update refused: it changed since it was read',
    call: (c) =>
      c.updateRecord('pvx-system', {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'pvx-sts-r1', resourceVersion: '4' },
        data: { 'step.json': '{}' },
      }),
    answer: {
      status: 409,
      body: status(
        409,
        'Conflict',
        'Operation cannot be fulfilled on configmaps "pvx-sts-r1": the object has been modified; please apply your changes to the latest version and try again',
      ),
    },
  },
  {
    name: 'StatefulSet record deletion, on its UID',
    call: (c) => c.deleteRecord('pvx-system', 'pvx-sts-r1', 'c1'),
    answer: { body: status(200, '', '') },
  },
  {
    name: 'pod eviction, on the pod’s UID',
    call: (c) => c.evictPod('db', 'web-0', 'p1'),
    answer: { status: 201, body: { kind: 'Status', apiVersion: 'v1', status: 'Success' } },
  },
  {
    name: 'pod eviction refused by a PodDisruptionBudget (429, the budget named in the causes)',
    call: (c) => c.evictPod('db', 'web-0', 'p1'),
    answer: {
      status: 429,
      body: status(429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's disruption budget.", {
        causes: [{ reason: 'DisruptionBudget', message: 'The disruption budget web needs 2 healthy pods and has 2 currently' }],
      }),
    },
  },
  {
    name: 'token review of an authenticated token',
    call: (c) => c.createTokenReview('scraper-token'),
    answer: {
      status: 201,
      body: {
        kind: 'TokenReview',
        status: {
          authenticated: true,
          user: {
            username: 'system:serviceaccount:monitoring:prometheus',
            uid: 'u7',
            groups: ['system:serviceaccounts'],
            extra: { 'authentication.kubernetes.io/pod-name': ['prometheus-0'] },
          },
        },
      },
    },
  },
  {
    name: 'token review of a token nobody issued',
    call: (c) => c.createTokenReview('bogus'),
    answer: { status: 201, body: { kind: 'TokenReview', status: { authenticated: false, error: 'invalid bearer token' } } },
  },
  {
    name: 'token review refused (no RBAC to create tokenreviews)',
    call: (c) => c.createTokenReview('scraper-token'),
    answer: {
      status: 403,
      body: status(
        403,
        'Forbidden',
        'tokenreviews.authentication.k8s.io is forbidden: User "system:serviceaccount:pvx-system:pvx" cannot create resource "tokenreviews"',
      ),
    },
  },
  {
    name: 'subject access review of /metrics, allowed',
    call: (c) =>
      c.createSubjectAccessReview({
        user: { username: 'system:serviceaccount:monitoring:prometheus', uid: 'u7', groups: ['system:serviceaccounts'], extra: { k: ['v'] } },
        path: '/metrics',
        verb: 'get',
      }),
    answer: { status: 201, body: { kind: 'SubjectAccessReview', status: { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "prometheus"' } } },
  },
  {
    name: 'subject access review of /metrics, denied',
    call: (c) => c.createSubjectAccessReview({ user: { username: 'alice' }, path: '/metrics', verb: 'get' }),
    answer: { status: 201, body: { kind: 'SubjectAccessReview', status: { allowed: false, denied: true, evaluationError: 'x' } } },
  },
  {
    name: 'lease read',
    call: (c) => c.getLease('pvx-system', 'pvx-leader'),
    answer: { body: lease },
  },
  {
    name: 'lease read of a missing lease (undefined)',
    call: (c) => c.getLease('pvx-system', 'pvx-leader'),
    answer: { status: 404, body: status(404, 'NotFound', 'leases.coordination.k8s.io "pvx-leader" not found') },
  },
  {
    name: 'lease creation',
    call: (c) => c.createLease('pvx-system', lease),
    answer: { status: 201, body: lease },
  },
  {
    name: 'lease update on a stale version',
    call: (c) => c.updateLease('pvx-system', lease),
    answer: { status: 409, body: status(409, 'Conflict', 'the object has been modified') },
  },
  {
    name: 'an internal error with a text body',
    call: (c) => c.getLease('pvx-system', 'pvx-leader'),
    answer: { status: 500, body: 'etcdserver: request timed out' },
  },
];

describe('HttpKubeClient and the client-node adapter: the same requests, the same answers', () => {
  it.each(cases)('$name', async (c) => {
    server.answer = () => c.answer;
    const viaNode = await outcome(() => c.call(nodeClient()));
    const nodeRequests = comparable(server.received.splice(0));
    const viaHttp = await outcome(() => c.call(httpClient()));
    const httpRequests = comparable(server.received.splice(0));
    expect(httpRequests.map(({ acceptEncoding: _, ...r }) => r)).toEqual(nodeRequests.map(({ acceptEncoding: _, ...r }) => r));
    expect(httpRequests).toHaveLength(1);
    expect(viaHttp).toEqual(viaNode);
  });

  it('watch: the same request, the same events and end', async () => {
    const lines = [
      { type: 'ADDED', object: pvc },
      { type: 'BOOKMARK', object: { kind: 'PersistentVolumeClaim', apiVersion: 'v1', metadata: { resourceVersion: '50' } } },
      { type: 'ERROR', object: status(410, 'Expired', 'too old resource version') },
    ];
    server.answer = (_r, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
      return undefined;
    };
    const run = (client: KubeClient) =>
      new Promise<{ events: WatchEvent[]; end: unknown }>((resolve) => {
        const events: WatchEvent[] = [];
        void client.watch(
          resources.persistentVolumeClaims,
          { namespace: 'db', resourceVersion: '41', timeoutSeconds: 290, labelSelector: 'a=b', fieldSelector: 'x=y' },
          (e) => events.push(e),
          (end) => resolve({ events, end }),
        );
      });
    const viaNode = await run(nodeClient());
    const nodeRequests = server.received.splice(0);
    const viaHttp = await run(httpClient());
    expect(server.received.map(({ acceptEncoding: _, ...r }) => r)).toEqual(nodeRequests.map(({ acceptEncoding: _, ...r }) => r));
    expect(server.received[0]?.query).toEqual({
      allowWatchBookmarks: 'true',
      fieldSelector: 'x=y',
      labelSelector: 'a=b',
      resourceVersion: '41',
      timeoutSeconds: '290',
      watch: 'true',
    });
    expect(viaHttp).toEqual(viaNode);
    expect(viaHttp.events.map((e) => e.type)).toEqual(['ADDED', 'BOOKMARK', 'ERROR']);
    expect(viaHttp.end).toBeUndefined();
  });

  it('watch refused: onEnd gets the same ApiError code', async () => {
    server.answer = () => ({ status: 403, body: status(403, 'Forbidden', 'persistentvolumeclaims is forbidden') });
    const run = (client: KubeClient) =>
      new Promise<unknown>((resolve) => {
        void client.watch(
          resources.persistentVolumeClaims,
          { resourceVersion: '1' },
          () => undefined,
          (end) => resolve(end),
        );
      });
    const viaNode = (await run(nodeClient())) as ApiError;
    const viaHttp = (await run(httpClient())) as ApiError;
    expect(viaHttp).toBeInstanceOf(ApiError);
    expect({ code: viaHttp.code, reason: viaHttp.reason }).toEqual({ code: viaNode.code, reason: viaNode.reason });
  });
});

describe('HttpKubeClient', () => {
  it('a claim patch sends only what it changes: a class without a size, a size without a class, both together', async () => {
    server.answer = () => ({ body: pvc });
    const client = httpClient();
    await client.patchPvcSize('db', 'data', { resourceVersion: '7', uid: 'u1', volumeAttributesClassName: 'io2', annotations: {} });
    await client.patchPvcSize('db', 'data', { resourceVersion: '7', uid: 'u1', storage: '3Gi', annotations: {} });
    await client.patchPvcSize('db', 'data', { resourceVersion: '7', uid: 'u1', storage: '3Gi', volumeAttributesClassName: 'io2', annotations: {} });
    expect(server.received.map((r) => (r.body as { spec: unknown }).spec)).toEqual([
      { volumeAttributesClassName: 'io2' },
      { resources: { requests: { storage: '3Gi' } } },
      { resources: { requests: { storage: '3Gi' } }, volumeAttributesClassName: 'io2' },
    ]);
    client.close();
  });

  it('reads a compressed answer, and asks for one (not on watches)', async () => {
    server.answer = () => ({ gzip: true, body: { metadata: { resourceVersion: '9' }, items: [{ metadata: { name: 'n1' } }] } });
    const page = await httpClient().list(resources.nodes, {});
    expect(page.items.map((n) => [n.kind, n.metadata?.name])).toEqual([['Node', 'n1']]);
    expect(server.received[0]?.acceptEncoding).toBe('gzip');
  });

  it('assembles watch events split across chunks, and several in one chunk', async () => {
    const text = [
      { type: 'ADDED', object: { metadata: { name: 'a' } } },
      { type: 'MODIFIED', object: { metadata: { name: 'b' } } },
      { type: 'DELETED', object: { metadata: { name: 'c' } } },
    ]
      .map((l) => JSON.stringify(l))
      .join('\n');
    server.answer = (_r, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // one event and a half, then the rest (the last line without its newline)
      const cut = text.indexOf('\n') + 10;
      res.write(text.slice(0, cut));
      setTimeout(() => res.end(text.slice(cut)), 20);
      return undefined;
    };
    const events: string[] = [];
    const end = await new Promise<unknown>((resolve) => {
      void httpClient().watch(resources.pods, { resourceVersion: '1' }, (e) => events.push(`${e.type} ${e.object.metadata?.name}`), resolve);
    });
    expect(events).toEqual(['ADDED a', 'MODIFIED b', 'DELETED c']);
    expect(end).toBeUndefined();
    expect(server.received[0]?.acceptEncoding).toBeUndefined();
  });

  it('watch: a stream cut by the server ends with an error; stop() ends it without calling onEnd', async () => {
    server.answer = (_r, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } })}\n`);
      return undefined;
    };
    const cut = await new Promise<unknown>((resolve) => {
      void httpClient().watch(resources.pods, { resourceVersion: '1' }, () => server.cut(), resolve);
    });
    expect(cut).toBeInstanceOf(Error);
    let ended = false;
    const handle = await httpClient().watch(
      resources.pods,
      { resourceVersion: '1' },
      () => undefined,
      () => (ended = true),
    );
    handle.stop();
    await new Promise((r) => setTimeout(r, 50));
    expect(ended).toBe(false);
  });

  it('watch: a silent stream ends with an error after the idle timeout', async () => {
    server.answer = (_r, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('\n');
      return undefined;
    };
    const end = await new Promise<unknown>((resolve) => {
      void httpClient({ watchIdleTimeoutMs: 100 }).watch(resources.pods, { resourceVersion: '1' }, () => undefined, resolve);
    });
    expect(String(end)).toMatch(/silent for 100 ms/);
  });

  it('a request unanswered within the timeout fails, with what it waited for', async () => {
    server.answer = () => undefined; // never answers
    await expect(httpClient({ requestTimeoutMs: 100 }).getLease('ns', 'l')).rejects.toThrow(
      /no answer to GET \/apis\/coordination.k8s.io\/v1\/namespaces\/ns\/leases\/l within 100 ms/,
    );
    server.cut();
  });

  it('an unreachable server is a network error, not an ApiError', async () => {
    const gone = new HttpKubeClient({ server: 'http://127.0.0.1:1', rejectUnauthorized: false, source: 'test' });
    const err = await gone.list(resources.nodes, {}).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(ApiError);
    expect(String(err)).toMatch(/ECONNREFUSED/);
  });

  it('reads a token file again once its copy is older than the refresh period (rotation)', async () => {
    const file = join(scratch, 'token');
    writeFileSync(file, 'first\n');
    const client = httpClient({ tokenRefreshMs: 0 }, { tokenFile: file });
    await client.getLease('ns', 'l');
    writeFileSync(file, 'second');
    await client.getLease('ns', 'l');
    const cached = httpClient({ tokenRefreshMs: 60_000 }, { tokenFile: file });
    await cached.getLease('ns', 'l');
    writeFileSync(file, 'third');
    await cached.getLease('ns', 'l');
    expect(server.received.map((r) => r.authorization)).toEqual(['Bearer first', 'Bearer second', 'Bearer second', 'Bearer second']);
  });

  it('keeps connections alive between requests', async () => {
    const client = httpClient();
    const sockets = new Set<unknown>();
    server.answer = (_r, res) => {
      sockets.add(res.socket);
      return { body: {} };
    };
    for (let i = 0; i < 3; i++) await client.getLease('pvx-system', 'pvx-leader');
    expect(sockets.size).toBe(1);
    client.close();
  });

  it('sends a review again when its kept-alive connection is reset under it (it creates nothing), but not a write', async () => {
    const client = httpClient();
    let n = 0;
    // Every other request finds its connection reset, as after an API server restart.
    server.answer = (_r, res) => {
      if (n++ % 2 === 1) {
        res.socket?.destroy();
        return undefined;
      }
      return { status: 201, body: { status: { authenticated: false } } };
    };
    await client.createTokenReview('t');
    await expect(client.createTokenReview('t')).resolves.toEqual({ authenticated: false });
    expect(server.received.map((r) => r.path)).toEqual(Array(3).fill('/apis/authentication.k8s.io/v1/tokenreviews'));
    await expect(
      client.emitEvent({ regarding: { apiVersion: 'v1', kind: 'Pod', namespace: 'db', name: 'p' }, type: 'Normal', reason: 'R', message: 'm' }),
    ).rejects.toThrow(/socket hang up|ECONNRESET/);
    client.close();
  });

  it('returns list items with their apiVersion and kind', async () => {
    server.answer = () => ({
      body: {
        metadata: { resourceVersion: '1' },
        items: [{ metadata: { name: 'x' } }, { apiVersion: 'pvx.dev/v1alpha1', kind: 'VolumeExpansionRequest', metadata: { name: 'y' } }],
      },
    });
    const page = await httpClient().list(volumeExpansionRequests, {});
    expect(page.items.map((i: KubernetesObject) => `${i.apiVersion} ${i.kind}`)).toEqual([
      'pvx.dev/v1alpha1 VolumeExpansionRequest',
      'pvx.dev/v1alpha1 VolumeExpansionRequest',
    ]);
    expect(page.continue).toBeUndefined();
  });
});

// --- hostile and broken API servers --------------------------------------------------------------

/** Watches until the stream ends; every event (type and name) and how it ended. */
function watchToEnd(client: HttpKubeClient, opts: Partial<Parameters<HttpKubeClient['watch']>[1]> = {}): Promise<{ events: string[]; end: unknown }> {
  return new Promise((resolve, reject) => {
    const events: string[] = [];
    client
      .watch(
        resources.pods,
        { resourceVersion: '1', ...opts },
        (e) => events.push(`${e.type} ${e.object.metadata?.name}`),
        (end) => resolve({ events, end }),
      )
      .catch(reject);
  });
}

/** A watch answer that writes `text` in chunks of `chunk` bytes, each after the previous one was taken by the socket. */
function streamInChunks(text: Buffer, chunk: number) {
  return (_r: Received, res: ServerResponse): undefined => {
    res.writeHead(200, { 'content-type': 'application/json' });
    writeInChunks(res, text, chunk);
    return undefined;
  };
}

/** One ADDED event whose object carries an annotation of `bytes` bytes, as one line. */
const longLine = (bytes: number) =>
  Buffer.from(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'big', annotations: { a: 'x'.repeat(bytes) } } } })}\n`);

/** CPU (user + system) the process spends on a watch that receives one long line, ms. */
async function cpuForLine(bytes: number): Promise<number> {
  server.answer = streamInChunks(longLine(bytes), 16 * 1024);
  const before = process.cpuUsage();
  const { events } = await watchToEnd(httpClient());
  const used = process.cpuUsage(before);
  expect(events).toEqual(['ADDED big']);
  return (used.user + used.system) / 1000;
}

describe('HttpKubeClient facing a hostile or broken API server', () => {
  it('splits a long watch line in time linear in its length (a large object is no stall)', { timeout: 120_000 }, async () => {
    // The API server's TLS records are 16 KiB; the chunks here are too. Before, each chunk made the
    // whole pending line be searched and copied again: 4× the line cost about 16× the CPU.
    await cpuForLine(512 * 1024); // warm up
    const best = async (bytes: number) => Math.min(await cpuForLine(bytes), await cpuForLine(bytes));
    const small = await best(2 * 1024 * 1024);
    const large = await best(8 * 1024 * 1024);
    // Linear: about 4×. Generous bounds: a loaded machine and the collector add noise.
    expect(large / small).toBeLessThan(7);
  });

  it('ends a watch whose line is longer than 16 MiB with an error, as client-go does, holding no more than that', { timeout: 60_000 }, async () => {
    server.answer = streamInChunks(
      Buffer.concat([Buffer.from(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'before' } } })}\n`), longLine(17 * 1024 * 1024)]),
      64 * 1024,
    );
    const { events, end } = await watchToEnd(httpClient());
    expect(events).toEqual(['ADDED before']);
    expect(String(end)).toMatch(/watch event longer than 16 MiB/);
  });

  it('ends a watch at a line that does not parse, with an error naming it; nothing after it is delivered', async () => {
    const line = (name: string) => JSON.stringify({ type: 'MODIFIED', object: { metadata: { name, resourceVersion: '7' } } });
    server.answer = (_r, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`${line('a')}\n{"type":"MODIFIED","object":{"metadata":{"na\n${line('b')}\n`);
      return undefined;
    };
    const { events, end } = await watchToEnd(httpClient());
    expect(events).toEqual(['MODIFIED a']);
    expect(end).toBeInstanceOf(Error);
    expect(String(end)).toMatch(/watch line 2 is not an event \(.*\): \{"type":"MODIFIED","object":\{"metadata":\{"na$/);
  });

  it.each([
    ['JSON that is not an event', '{"kind":"Status"}'],
    ['an event without an object', '{"type":"ADDED"}'],
    ['an event of an unknown type', '{"type":"RENAMED","object":{}}'],
  ])('ends a watch at %s', async (_what, bad) => {
    server.answer = (_r, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`${bad}\n`);
      return undefined;
    };
    const { events, end } = await watchToEnd(httpClient());
    expect(events).toEqual([]);
    expect(String(end)).toMatch(/watch line 1 is not an event/);
  });

  it('a watch whose answer never comes: aborted by its signal before the answer, its socket is closed at once', async () => {
    let held: Socket | undefined;
    server.answer = (_r, res) => void (held = res.socket ?? undefined); // headers never sent
    const controller = new AbortController();
    let ended = false;
    const watching = httpClient().watch(
      resources.pods,
      { resourceVersion: '1', signal: controller.signal },
      () => undefined,
      () => (ended = true),
    );
    await eventually(() => held !== undefined);
    controller.abort();
    // Like stop(): the watch settles and onEnd is not called.
    await watching;
    await eventually(() => held?.destroyed === true);
    expect(ended).toBe(false);
  });

  it('a watch whose answer never comes fails after watchAnswerTimeoutMs, its socket closed', async () => {
    let held: Socket | undefined;
    server.answer = (_r, res) => void (held = res.socket ?? undefined);
    const started = performance.now();
    const { end } = await watchToEnd(httpClient({ watchAnswerTimeoutMs: 200 }));
    expect(String(end)).toMatch(/no answer to the watch of pods within 200 ms/);
    expect(performance.now() - started).toBeLessThan(5_000);
    await eventually(() => held?.destroyed === true);
  });

  it('an empty token file keeps the token read before (the kubelet is mid-rotation), as client-go does', async () => {
    const file = join(scratch, 'emptied-token');
    writeFileSync(file, 'first\n');
    const client = httpClient({ tokenRefreshMs: 0 }, { tokenFile: file });
    await client.getLease('ns', 'l');
    writeFileSync(file, '\n');
    await client.getLease('ns', 'l');
    expect(server.received.map((r) => r.authorization)).toEqual(['Bearer first', 'Bearer first']);
  });

  it('an empty token file with no token read before fails the request, which is not sent without credentials', async () => {
    const file = join(scratch, 'empty-token');
    writeFileSync(file, '');
    await expect(httpClient({ tokenRefreshMs: 0 }, { tokenFile: file }).getLease('ns', 'l')).rejects.toThrow(`the token file ${file} is empty`);
    expect(server.received).toEqual([]);
  });

  it('puts a namespace into URLs encoded (a name that is not a DNS label cannot change the path)', async () => {
    server.answer = () => ({ body: { metadata: { resourceVersion: '1' }, items: [] } });
    await httpClient().list(resources.persistentVolumeClaims, { namespace: 'db/../../apis?x=' });
    expect(server.rawPaths.at(-1)).toBe('/api/v1/namespaces/db%2F..%2F..%2Fapis%3Fx%3D/persistentvolumeclaims');
  });

  it('refuses insecure-skip-tls-verify together with a CA (it would turn verification off silently)', () => {
    expect(() => new HttpKubeClient({ server: 'https://k:6443', ca: Buffer.from('CA'), rejectUnauthorized: false, source: 'kubeconfig /k' })).toThrow(
      'kubeconfig /k: insecure-skip-tls-verify and a certificate authority together are not allowed (client-go refuses them too): remove one',
    );
  });
});

describe('HttpKubeClient behind an egress proxy (HTTPS_PROXY, NO_PROXY)', () => {
  // An API server named api.pvx.test, its certificate signed by a throwaway CA, reached only
  // through a CONNECT proxy on loopback that maps that name to 127.0.0.1: nothing resolves the
  // name or leaves the machine.
  const dir = mkdtempSync(join(tmpdir(), 'pvx-proxy-'));
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe', timeout: 30_000 });
  let api: HttpsServer;
  let proxy: Server;
  let apiPort = 0;
  let proxyUrl = '';
  const tunnels: string[] = [];
  /** The Authorization header of each request the API server stand-in answered. */
  const authorizations: (string | undefined)[] = [];

  beforeAll(async () => {
    openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '1',
      '-subj',
      '/CN=test-ca',
    );
    writeFileSync(join(dir, 'api.ext'), 'subjectAltName=DNS:api.pvx.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
    openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'api.key', '-out', 'api.csr', '-subj', '/CN=api');
    openssl('x509', '-req', '-in', 'api.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', '7', '-out', 'api.crt', '-days', '1', '-extfile', 'api.ext');
    api = createHttpsServer({ cert: readFileSync(join(dir, 'api.crt')), key: readFileSync(join(dir, 'api.key')) }, (req, res) => {
      authorizations.push(req.headers.authorization);
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ metadata: { name: 'l', resourceVersion: '1' }, seen: req.headers.authorization }));
    });
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    apiPort = (api.address() as AddressInfo).port;
    proxy = createServer((_req, res) => res.writeHead(405).end());
    proxy.on('connect', (req: IncomingMessage, client: Socket) => {
      tunnels.push(req.url ?? '');
      const [host, port] = (req.url ?? '').split(':');
      if (host !== 'api.pvx.test') return client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      const upstream = connect(Number(port), '127.0.0.1', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.pipe(client).pipe(upstream);
      });
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    api.closeAllConnections();
    proxy.closeAllConnections();
    await Promise.all([new Promise((r) => api.close(r)), new Promise((r) => proxy.close(r))]);
    rmSync(dir, { recursive: true, force: true });
  });

  const viaProxy = (env: NodeJS.ProcessEnv) =>
    new HttpKubeClient({ server: `https://api.pvx.test:${apiPort}`, ca: readFileSync(join(dir, 'ca.crt')), token: 't', source: 'test' }, { env });

  it('tunnels to the API server through HTTPS_PROXY, the server’s certificate still checked against the CA', async () => {
    tunnels.length = 0;
    const client = viaProxy({ HTTPS_PROXY: proxyUrl });
    expect(await client.getLease('ns', 'l')).toMatchObject({ seen: 'Bearer t' });
    expect(tunnels).toEqual([`api.pvx.test:${apiPort}`]);
    client.close();
  });

  // Review, 2026-12-04: an exec-plugin kubeconfig (EKS, GKE: client-node's) went direct whatever
  // HTTPS_PROXY said. The plugin is a node one-liner that prints its ExecCredential.
  it('takes client-node, serving an exec-plugin kubeconfig, through HTTPS_PROXY too, its certificate checked', async () => {
    tunnels.length = 0;
    const exec = {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: process.execPath,
      args: ['-e', 'console.log(JSON.stringify({apiVersion:"client.authentication.k8s.io/v1",kind:"ExecCredential",status:{token:"exec-token"}}))'],
      interactiveMode: 'Never',
    };
    const path = join(dir, 'exec.kubeconfig');
    writeFileSync(
      path,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [
          {
            name: 'c',
            cluster: { server: `https://api.pvx.test:${apiPort}`, 'certificate-authority-data': readFileSync(join(dir, 'ca.crt')).toString('base64') },
          },
        ],
        users: [{ name: 'u', user: { exec } }],
        contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
        'current-context': 'x',
      }),
    );
    const { loadKubeConfig } = await import('../cli/kubeconfig.ts');
    const { NodeKubeClient } = await import('./node-client.ts');
    const client = new NodeKubeClient(loadKubeConfig(path, { HTTPS_PROXY: proxyUrl }));
    authorizations.length = 0;
    expect(await client.getLease('ns', 'l')).toMatchObject({ metadata: { name: 'l' } });
    expect(tunnels).toEqual([`api.pvx.test:${apiPort}`]);
    expect(authorizations).toEqual(['Bearer exec-token']);
  }, 30_000);

  it('does not reach the server through the proxy when the CA does not sign its certificate', async () => {
    const client = new HttpKubeClient({ server: `https://api.pvx.test:${apiPort}`, token: 't', source: 'test' }, { env: { HTTPS_PROXY: proxyUrl } });
    await expect(client.getLease('ns', 'l')).rejects.toThrow(/self-signed|unable to (verify|get)/i);
    client.close();
  });

  it('goes direct where the rules say so (here: a loopback server, never proxied), never asking the proxy', async () => {
    tunnels.length = 0;
    // Going direct to api.pvx.test would need a DNS lookup, which must not happen here; which
    // names NO_PROXY exempts is table-tested in proxy.test.ts.
    const direct = new HttpKubeClient(
      { server: server.url, rejectUnauthorized: false, token: 't', source: 'test' },
      { env: { HTTP_PROXY: proxyUrl, HTTPS_PROXY: proxyUrl } },
    );
    await direct.getLease('ns', 'l');
    expect(tunnels).toEqual([]);
    expect(server.received).toHaveLength(1);
  });
});
