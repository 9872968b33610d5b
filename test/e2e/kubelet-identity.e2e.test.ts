// No node gets the token that writes. pvx runs as its ServiceAccount (config/rbac/) with the
// kubelet usage source; a stand-in kubelet — an HTTPS server on loopback behind a Node object of
// its own, tainted so that nothing is scheduled there — records every bearer token pvx presents
// and answers with a summary that lies: a claim of pvx's namespace, 100 % full, under a pod the
// API server does not have on that node. The real API server then says whose tokens those were
// (TokenReview), what that identity may do (SubjectAccessReview), and who minted them (the audit log).
import { AuthenticationV1Api, AuthorizationV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions, type V1Node } from '@kubernetes/client-node';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { selfSignedCertificate } from '../../src/operator/endpoints/x509.ts';
import { apiserverAudits, auditLogEnd, readAuditEvents } from './support/audit-log.ts';
import { e2eEnv } from './support/env.ts';
import { pvxNamespace, serviceAccountKubeconfig } from './support/identity.ts';
import { bindPVC, core, createNamespace, createPVC, deleteNamespace, kc, waitFor } from './support/kube.ts';
import { e2eLogDir, startPvx, stopPvx, waitReady, type PvxProcess } from './support/pvx-process.ts';

const reader = `system:serviceaccount:${pvxNamespace}:pvx-usage-reader`;
const writer = `system:serviceaccount:${pvxNamespace}:pvx`;
const nodeName = `pvx-stand-in-${process.pid}`;
const custom = kc.makeApiClient(CustomObjectsApi);
const authn = kc.makeApiClient(AuthenticationV1Api);
const authz = kc.makeApiClient(AuthorizationV1Api);

let ns: string;
let pvx: PvxProcess | undefined;
let server: Server | undefined;
let heartbeat: NodeJS.Timeout | undefined;
/** Every bearer token the stand-in was sent, and the paths asked. */
const received: { token: string | undefined; path: string }[] = [];
let auditFrom = 0;

/** The stand-in's summary: claim `victim` of the suite's namespace, full, under a pod no node runs. */
const lyingSummary = () => ({
  node: { nodeName },
  pods: [
    {
      podRef: { name: 'liar', namespace: ns, uid: '00000000-0000-4000-8000-000000000001' },
      volume: [{ name: 'data', pvcRef: { name: 'victim', namespace: ns }, time: new Date().toISOString(), capacityBytes: 2 ** 30, usedBytes: 2 ** 30 }],
    },
  ],
});

async function startStandIn(): Promise<{ port: number; caFile: string }> {
  const now = new Date();
  const pair = selfSignedCertificate({
    commonName: nodeName,
    dnsNames: [],
    ipAddresses: ['127.0.0.1'],
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + 3_600_000),
  });
  mkdirSync(e2eLogDir, { recursive: true });
  const caFile = join(e2eLogDir, 'stand-in-kubelet.crt');
  writeFileSync(caFile, pair.cert);
  server = createServer({ cert: pair.cert, key: pair.key }, (req, res) => {
    const auth = req.headers.authorization;
    received.push({ token: auth?.startsWith('Bearer ') ? auth.slice('Bearer '.length) : undefined, path: req.url ?? '' });
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(lyingSummary()));
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, caFile };
}

/** A Ready Node whose kubelet is the stand-in; its heartbeat kept fresh, so the node controller leaves it Ready. */
async function standInNode(port: number): Promise<void> {
  await core.createNode({
    body: {
      metadata: { name: nodeName, labels: { 'pvx.dev/stand-in': 'true' } },
      spec: {
        taints: [
          { key: 'pvx.dev/stand-in', effect: 'NoSchedule' },
          { key: 'pvx.dev/stand-in', effect: 'NoExecute' },
        ],
      },
    },
  });
  // A merge patch of the status alone, as a kubelet's heartbeat is: the node controller writes the
  // node too (its taints), and a read-then-replace would meet its writes with 409s.
  const beat = async () => {
    const at = new Date();
    const status: V1Node['status'] = {
      addresses: [{ type: 'InternalIP', address: '127.0.0.1' }],
      daemonEndpoints: { kubeletEndpoint: { Port: port } },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'a stand-in kubelet', lastHeartbeatTime: at, lastTransitionTime: at }],
    };
    await core.patchNodeStatus({ name: nodeName, body: { status } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  };
  await beat();
  heartbeat = setInterval(() => void beat().catch(() => undefined), 5000);
}

beforeAll(async () => {
  ns = await createNamespace('pvx-e2e-kubelet-identity');
  const { port, caFile } = await startStandIn();
  await standInNode(port);
  // A claim nothing mounts, under a policy that would grow it past 80 % used.
  await createPVC(ns, 'victim', e2eEnv.expandableClass as string, '1Gi');
  await bindPVC(ns, 'victim');
  await custom.createNamespacedCustomObject({
    group: 'pvx.dev',
    version: 'v1alpha1',
    plural: 'volumeexpansionpolicies',
    namespace: ns,
    body: {
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionPolicy',
      metadata: { name: 'grow' },
      spec: { triggers: { usedPercent: 80, sustainedSamples: 1 }, step: { percent: 50, minimum: '1Gi' }, cooldown: '10s' },
    },
  });
  auditFrom = auditLogEnd();
  // The stand-in's certificate is the kubelets' CA here: the embedded node's own kubelet is then
  // refused (its reads fail and are logged), and only the stand-in is read.
  pvx = startPvx(
    'kubelet-identity',
    ['--leader-elect=false', '--namespace', ns, '--policy-interval', '2s', '--kubelet-ca-file', caFile],
    await serviceAccountKubeconfig(),
  );
  await waitReady(pvx);
}, 120_000);

afterAll(async () => {
  if (heartbeat) clearInterval(heartbeat);
  if (pvx) await stopPvx(pvx);
  server?.close();
  await core.deleteNode({ name: nodeName }).catch(() => undefined);
  if (ns) await deleteNamespace(ns);
});

const reviewed = async (token: string) => (await authn.createTokenReview({ body: { spec: { token } } })).status?.user?.username;

describe('the kubelets are read as the reader, never as the identity that writes', () => {
  it('every token a node is sent is the reader’s, minted by pvx; the reader may read node statistics and write nothing', async () => {
    await waitFor('pvx to read the stand-in three times', 60_000, async () => received.length >= 3, 500);
    const ownToken = (parse(readFileSync(await serviceAccountKubeconfig(), 'utf8')) as { users: { user: { token: string } }[] }).users[0]?.user.token;
    expect(await reviewed(ownToken as string)).toBe(writer);
    const tokens = [...new Set(received.map((r) => r.token))];
    expect(received.every((r) => r.path === '/stats/summary')).toBe(true);
    expect(tokens).not.toContain(ownToken);
    expect(tokens).not.toContain(undefined);
    for (const token of tokens) expect(await reviewed(token as string)).toBe(reader);

    const may = async (verb: string, resource: string, subresource?: string) =>
      (
        await authz.createSubjectAccessReview({
          body: {
            spec: {
              user: reader,
              groups: ['system:serviceaccounts', `system:serviceaccounts:${pvxNamespace}`],
              resourceAttributes: { verb, resource, ...(subresource ? { subresource } : {}), ...(resource === 'nodes' ? {} : { namespace: ns }) },
            },
          },
        })
      ).status?.allowed ?? false;
    expect(await may('get', 'nodes', 'stats')).toBe(true);
    expect(await may('get', 'nodes', 'proxy')).toBe(false);
    expect(await may('patch', 'persistentvolumeclaims')).toBe(false);
    expect(await may('create', 'volumeexpansionrequests')).toBe(false);
  });

  it.skipIf(!apiserverAudits())('the API server’s audit log: pvx minted the reader’s tokens, and the reader wrote nothing', () => {
    const events = readAuditEvents(auditFrom);
    const mints = events.filter(
      (e) => e.objectRef?.resource === 'serviceaccounts' && e.objectRef.subresource === 'token' && e.objectRef.name === 'pvx-usage-reader',
    );
    expect(mints.length).toBeGreaterThan(0);
    expect(mints.every((e) => e.user.username === writer && e.responseStatus?.code === 201)).toBe(true);
    expect(events.filter((e) => e.user.username === reader)).toEqual([]);
  });

  it('a node is not believed about a claim no pod of its mounts: the full claim it reports is not grown', async () => {
    await waitFor(
      'pvx to say it did not believe the stand-in',
      30_000,
      async () => readFileSync(pvx?.logFile as string, 'utf8').includes(`reported usage of claim ${ns}/victim that no pod scheduled to it mounts`),
      500,
    );
    const requests = (await custom.listNamespacedCustomObject({ group: 'pvx.dev', version: 'v1alpha1', plural: 'volumeexpansionrequests', namespace: ns })) as {
      items: unknown[];
    };
    expect(requests.items).toEqual([]);
  });
});
