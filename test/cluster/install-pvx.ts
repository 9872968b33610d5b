// pvx installed into the embedded cluster as users install it: the image built from the
// Dockerfile and imported into the node's containerd, then `helm upgrade --install` of
// charts/pvx into pvx-system (Pod Security "restricted"), waiting for the replicas to be Ready.
import { join } from 'node:path';
import { binaries } from './build.ts';
import { isUp, kubectl } from './cluster.ts';
import { paths, repoRoot } from './layout.ts';
import { importOperatorImage, operatorImage } from './operator-image.ts';
import { ClusterError, run } from './processes.ts';

export const installNamespace = 'pvx-system';
/** Pod Security Admission enforcing the restricted profile, as the shipped kustomize Namespace has it. */
export const restrictedLabels = { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' };
export const crdNames = ['volumeexpansionrequests.pvx.dev', 'volumeexpansionpolicies.pvx.dev', 'clustervolumeexpansionpolicies.pvx.dev'];

/**
 * pvx's CRDs, when they exist already (made by `pvx install-crds`, the demo or another release),
 * given Helm's ownership metadata for `release`, so the chart adopts them instead of refusing to
 * install: what a user moving existing CRDs under Helm does.
 */
export async function adoptCRDs(release: string, namespace: string): Promise<void> {
  const existing = (await kubectl(['get', 'crd', '-o', 'name', ...crdNames, '--ignore-not-found'])).split('\n').filter(Boolean);
  for (const crd of existing) {
    await kubectl(['annotate', crd, `meta.helm.sh/release-name=${release}`, `meta.helm.sh/release-namespace=${namespace}`, '--overwrite']);
    await kubectl(['label', crd, 'app.kubernetes.io/managed-by=Helm', '--overwrite']);
  }
}

export async function installPvx(log: (line: string) => void): Promise<void> {
  if (!isUp()) throw new ClusterError('the embedded cluster is not running: `npm run cluster:up` first');
  const helm = (await binaries()).helm;
  if (!helm) throw new ClusterError('helm is not built: `npm run cluster:build`');
  log(`imported ${await importOperatorImage(log)}`);
  const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: installNamespace, labels: restrictedLabels } };
  await kubectl(['apply', '-f', '-'], { input: JSON.stringify(namespace) });
  await adoptCRDs('pvx', installNamespace);
  const values = [`image.repository=${operatorImage.repository}`, `image.tag=${operatorImage.tag}`, 'image.pullPolicy=Never'];
  log(`helm upgrade --install pvx charts/pvx --namespace ${installNamespace} ${values.map((v) => `--set ${v}`).join(' ')} --wait`);
  const out = await run(
    helm,
    [
      '--kubeconfig',
      paths.kubeconfig,
      'upgrade',
      '--install',
      'pvx',
      join(repoRoot, 'charts', 'pvx'),
      '--namespace',
      installNamespace,
      ...values.flatMap((v) => ['--set', v]),
      '--wait',
      '--timeout',
      '5m',
    ],
    { timeoutMs: 330_000 },
  );
  log(out.trim());
  log(await kubectl(['get', 'pods', '--namespace', installNamespace, '-l', 'app.kubernetes.io/name=pvx', '-o', 'wide']));
}
