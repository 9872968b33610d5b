// Brings the embedded cluster up before the e2e suites when no other cluster is given; it is left
// running afterwards (a warm `up` takes seconds; `npm run cluster:down` stops it).
import { e2eEnv } from './env.ts';

export default async function setup(): Promise<void> {
  if (e2eEnv.embedded) {
    const { up } = await import('../../cluster/cluster.ts');
    await up();
  } else {
    process.stderr.write(`e2e: using the cluster of KUBECONFIG=${e2eEnv.kubeconfig}\n`);
  }
  // pvx's own CRDs, which `pvx run` needs (its caches include them).
  const { installCRDs } = await import('../../../src/k8s/crd-install.ts');
  const { kubeConfig } = await import('./kube.ts');
  await installCRDs(kubeConfig());
  // The ServiceAccount pvx reads the kubelets as is made before each file (each-file.ts).
}
