// Before each e2e file: the kubelet reader every suite's pvx reads the kubelets as
// (identity.ts's ensureKubeletReader). Made again per file, not once: a suite that installs pvx
// as shipped (in-cluster.e2e.test.ts) deletes what its install made when it ends, the reader too.
import { beforeAll } from 'vitest';
import { ensureKubeletReader } from './identity.ts';

beforeAll(async () => {
  await ensureKubeletReader();
});
