// The cluster's certificates (one CA, ECDSA P-256 keys) and kubeconfigs, made with openssl.
// Identities follow Kubernetes' conventions, so RBAC and the Node authorizer treat each component
// as they would in a kubeadm cluster.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { apiserverURL, nodeName, nodeNetwork, paths, serviceIP } from './layout.ts';
import { run } from './processes.ts';

export interface Identity {
  /** File name stem under pki/. */
  file: string;
  cn: string;
  org?: string;
  sans?: string[];
  server?: boolean;
}

export const identities = {
  apiserver: {
    file: 'apiserver',
    cn: 'kube-apiserver',
    server: true,
    sans: [
      'IP:127.0.0.1',
      `IP:${serviceIP}`,
      'DNS:localhost',
      'DNS:kubernetes',
      'DNS:kubernetes.default',
      'DNS:kubernetes.default.svc',
      'DNS:kubernetes.default.svc.cluster.local',
    ],
  },
  apiserverKubeletClient: { file: 'apiserver-kubelet-client', cn: 'kube-apiserver-kubelet-client', org: 'system:masters' },
  admin: { file: 'admin', cn: 'pvx-cluster-admin', org: 'system:masters' },
  controllerManager: { file: 'controller-manager', cn: 'system:kube-controller-manager' },
  scheduler: { file: 'scheduler', cn: 'system:kube-scheduler' },
  kubelet: { file: 'kubelet', cn: `system:node:${nodeName}`, org: 'system:nodes' },
  // The kubelet's serving certificate, signed by the cluster CA (as serverTLSBootstrap gives), so a
  // client that reads /stats/summary from the kubelet directly can verify it.
  kubeletServing: {
    file: 'kubelet-serving',
    cn: `system:node:${nodeName}`,
    org: 'system:nodes',
    server: true,
    sans: [`IP:${nodeNetwork.nodeIP}`, `DNS:${nodeName}`],
  },
  kubeProxy: { file: 'kube-proxy', cn: 'system:kube-proxy' },
  // The CSI sidecars run as cluster admins: they are test infrastructure, not what pvx ships.
  csi: { file: 'csi', cn: 'pvx-cluster-csi', org: 'system:masters' },
} satisfies Record<string, Identity>;

export const pki = {
  caCert: join(paths.pki, 'ca.crt'),
  caKey: join(paths.pki, 'ca.key'),
  saKey: join(paths.pki, 'sa.key'),
  saPub: join(paths.pki, 'sa.pub'),
  cert: (id: Identity) => join(paths.pki, `${id.file}.crt`),
  key: (id: Identity) => join(paths.pki, `${id.file}.key`),
  kubeconfig: (id: Identity) => join(paths.pki, `${id.file}.kubeconfig`),
};

const days = '3650';
const curve = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

async function issue(id: Identity): Promise<void> {
  if (existsSync(pki.cert(id))) return;
  const subject = `${id.org ? `/O=${id.org}` : ''}/CN=${id.cn}`;
  const csr = join(paths.pki, `${id.file}.csr`);
  const ext = join(paths.pki, `${id.file}.ext`);
  writeFileSync(
    ext,
    [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      `extendedKeyUsage=${id.server ? 'serverAuth' : 'clientAuth'}`,
      ...(id.sans ? [`subjectAltName=${id.sans.join(',')}`] : []),
    ].join('\n'),
  );
  await run('openssl', ['req', '-new', ...curve, '-keyout', pki.key(id), '-out', csr, '-subj', subject]);
  await run('openssl', [
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    pki.caCert,
    '-CAkey',
    pki.caKey,
    '-CAcreateserial',
    '-days',
    days,
    '-sha256',
    '-extfile',
    ext,
    '-out',
    pki.cert(id),
  ]);
}

function writeKubeconfig(id: Identity, file: string): void {
  const b64 = (p: string) => readFileSync(p).toString('base64');
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'pvx', cluster: { server: apiserverURL, 'certificate-authority-data': b64(pki.caCert) } }],
    users: [{ name: id.cn, user: { 'client-certificate-data': b64(pki.cert(id)), 'client-key-data': b64(pki.key(id)) } }],
    contexts: [{ name: 'pvx', context: { cluster: 'pvx', user: id.cn } }],
    'current-context': 'pvx',
  };
  writeFileSync(file, stringify(config), { mode: 0o600 });
}

/** Creates whatever is missing: CA, service-account key pair, certificates, kubeconfigs. */
export async function ensurePKI(): Promise<void> {
  mkdirSync(paths.pki, { recursive: true, mode: 0o700 });
  if (!existsSync(pki.caCert)) {
    await run('openssl', [
      'req',
      '-x509',
      ...curve,
      '-keyout',
      pki.caKey,
      '-out',
      pki.caCert,
      '-days',
      days,
      '-subj',
      '/CN=pvx-cluster-ca',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    ]);
  }
  if (!existsSync(pki.saKey)) {
    await run('openssl', ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', pki.saKey]);
    await run('openssl', ['pkey', '-in', pki.saKey, '-pubout', '-out', pki.saPub]);
  }
  for (const id of Object.values(identities) as Identity[]) {
    await issue(id);
    if (!id.server) writeKubeconfig(id, pki.kubeconfig(id));
  }
  writeKubeconfig(identities.admin, paths.kubeconfig);
}
