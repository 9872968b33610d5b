// npm run demo: pvx's main job end to end. Without KUBECONFIG it brings up the embedded cluster;
// it installs the CRDs, runs `pvx run`, creates a PVC with a pod writing to it, applies the
// sample VolumeExpansionRequest and follows it with `pvx wait` (each step live from the claim) to
// Completed, then leaves pvx running until Ctrl-C (which stops it cleanly; the cluster stays up:
// npm run cluster:down).
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import type { VolumeExpansionRequest } from '../src/crds/volume-expansion-request.ts';
import { installCRDs } from '../src/k8s/crd-install.ts';
import { busyboxImage, paths } from '../test/cluster/layout.ts';

const root = resolve(import.meta.dirname, '..');
const namespace = 'pvx-demo';
const say = (text: string) => process.stdout.write(`${text}\n`);

if (!process.env.KUBECONFIG) {
  const { up } = await import('../test/cluster/cluster.ts');
  await up();
}
const kubeconfig = process.env.KUBECONFIG ?? paths.kubeconfig;
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const storageClass = process.env.PVX_DEMO_STORAGE_CLASS ?? (process.env.KUBECONFIG ? undefined : 'pvx-xfs');

await installCRDs(kc, say);

mkdirSync(join(root, '.demo'), { recursive: true });
const logFile = join(root, '.demo', 'pvx.log');
const port = process.env.PVX_DEMO_METRICS_PORT ?? '8443';
const healthPort = process.env.PVX_DEMO_HEALTH_PORT ?? '8081';
const pvx = spawn(
  process.execPath,
  [
    join(root, 'src', 'cli', 'main.ts'),
    'run',
    '--kubeconfig',
    kubeconfig,
    '--leader-elect=false',
    '--metrics-bind-address',
    `127.0.0.1:${port}`,
    '--health-probe-bind-address',
    `127.0.0.1:${healthPort}`,
    // The demo drives a request, not a policy: no usage is read (with the kubelet source, pvx
    // would read the kubelets as its reader ServiceAccount, which config/rbac/ creates).
    '--usage-source',
    'none',
    // The embedded cluster's driver takes its largest volume from a class parameter; pvx is told so.
    ...(process.env.KUBECONFIG ? [] : ['--max-volume-size', 'hostpath.pvx.dev=class-parameter:maxVolumeSize']),
  ],
  {
    stdio: ['ignore', openSync(logFile, 'a'), openSync(logFile, 'a')],
    // Its own process group: Ctrl-C reaches the demo only, which then stops pvx with one SIGTERM
    // (graceful, exit 0) — a terminal's SIGINT on top would be a second signal, which exits at once.
    detached: true,
  },
);
// Whatever ends the demo ends pvx too.
process.once('exit', () => {
  if (pvx.exitCode === null) pvx.kill('SIGTERM');
});
const pvxExited = new Promise<number | null>((r) => pvx.once('exit', (code) => r(code)));
for (let i = 0; ; i++) {
  if (pvx.exitCode !== null) throw new Error(`pvx exited with ${pvx.exitCode}; see ${logFile}`);
  if (
    await fetch(`http://127.0.0.1:${healthPort}/readyz`).then(
      (r) => r.ok,
      () => false,
    )
  )
    break;
  if (i > 300) throw new Error(`pvx not ready after 60 s; see ${logFile}`);
  await sleep(200);
}
say(
  `pvx is running (pid ${pvx.pid}; logs ${logFile}; metrics https://127.0.0.1:${port}/metrics for a bearer token allowed get /metrics — ClusterRole pvx-metrics-reader)`,
);

// A fresh namespace with a 1Gi claim and a pod that uses it.
await core.deleteNamespace({ name: namespace }).catch(() => undefined);
while (
  await core.readNamespace({ name: namespace }).then(
    () => true,
    () => false,
  )
)
  await sleep(500);
await core.createNamespace({ body: { metadata: { name: namespace } } });
while (
  !(await core.readNamespacedServiceAccount({ namespace, name: 'default' }).then(
    () => true,
    () => false,
  ))
)
  await sleep(200);
await core.createNamespacedPersistentVolumeClaim({
  namespace,
  body: { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: storageClass, resources: { requests: { storage: '1Gi' } } } },
});
await core.createNamespacedPod({
  namespace,
  body: {
    metadata: { name: 'app' },
    spec: {
      hostNetwork: true,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'app',
          image: process.env.PVX_DEMO_IMAGE ?? busyboxImage,
          imagePullPolicy: process.env.KUBECONFIG ? 'IfNotPresent' : 'Never',
          command: ['sh', '-c', 'dd if=/dev/zero of=/data/blob bs=1M count=100 2>/dev/null; while true; do df -h /data | tail -1; sleep 1; done'],
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
    },
  },
});
while ((await core.readNamespacedPod({ namespace, name: 'app' })).status?.phase !== 'Running') await sleep(500);
say(`namespace ${namespace}: PVC data (1Gi${storageClass ? `, StorageClass ${storageClass}` : ''}) mounted by pod app`);

const sample = parse(readFileSync(join(root, 'config', 'samples', 'volumeexpansionrequest-size.yaml'), 'utf8')) as VolumeExpansionRequest;
await custom.createNamespacedCustomObject({ group: 'pvx.dev', version: 'v1alpha1', plural: 'volumeexpansionrequests', namespace, body: sample });
say(`applied config/samples/volumeexpansionrequest-size.yaml: grow PVC data to ${sample.spec.size}\n`);

// The same story through the command line a user has (also `kubectl pvx …`).
const cli = (args: string[]) =>
  new Promise<void>((done) => {
    say(`\n$ pvx ${args.join(' ')}`);
    spawn(process.execPath, [join(root, 'src', 'cli', 'main.ts'), ...args, '--kubeconfig', kubeconfig], { stdio: ['ignore', 'inherit', 'inherit'] }).once(
      'close',
      () => done(),
    );
  });
// pvx wait follows the request and, between its two status writes (the plan accepted, the end),
// each step live from the claim itself: the resizer, the kubelet.
await cli(['wait', `ver/${sample.metadata.name}`, '-n', namespace, '--timeout', '5m']);
const req = (await custom.getNamespacedCustomObject({
  group: 'pvx.dev',
  version: 'v1alpha1',
  plural: 'volumeexpansionrequests',
  namespace,
  name: sample.metadata.name as string,
})) as VolumeExpansionRequest;
const s = req.status ?? {};
say(`\n${req.metadata.name}: ${s.phase} — ${s.fromCapacity ?? '?'} → ${s.targetSize ?? '?'}, capacity now ${s.capacity ?? '?'}`);
say(`timeline: ${JSON.stringify(s.timeline)}`);
const told = (
  await core.listNamespacedEvent({ namespace, fieldSelector: 'involvedObject.kind=PersistentVolumeClaim,involvedObject.name=data,reason=Expanded' })
).items[0];
if (told) say(`the claim's Event: ${told.reason}: ${told.message}`);
await sleep(2000);
say(`\nThe pod sees: ${(await core.readNamespacedPodLog({ namespace, name: 'app' })).trim().split('\n').pop()}`);

await cli(['status', '-n', namespace]);
await cli(['audit', '-n', namespace, '--usage', 'none']);
say(`Try: KUBECONFIG=${kubeconfig} kubectl -n ${namespace} get ver,pvc   |   pvx keeps running; Ctrl-C stops it.`);

const stop = () => {
  say('\nstopping pvx …');
  pvx.kill('SIGTERM');
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
const code = await pvxExited;
say(`pvx exited with ${code}. The cluster stays up: npm run cluster:down stops it.`);
