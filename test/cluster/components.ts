// The cluster's daemons: how each is configured, started and known to be ready.
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { clusterSourceDir, csiDriverName, ebs, gce, nodeName, nodeNetwork, pauseImage, paths, podCIDR, ports, serviceCIDR } from './layout.ts';
import { auditArgs, writeAuditPolicy } from './audit.ts';
import { netnsPath } from './network.ts';
import { identities, pki } from './pki.ts';
import { isOK } from './http.ts';
import { run } from './processes.ts';

export interface Component {
  name: string;
  /** Name of the binary in the build cache, or an absolute path for Debian-provided ones. */
  binary: string;
  args(): string[];
  /** Writes config files the daemon reads; called before each start. */
  prepare?(): void;
  ready(): Promise<boolean>;
  readyTimeoutMs: number;
  /** TCP ports it listens on (checked free before starting). */
  ports: number[];
  /** Environment added to this process's (credentials, endpoints). */
  env?(): NodeJS.ProcessEnv;
  /** Runs in the node's network namespace (containerd, the kubelet and the pods they run). */
  inNodeNetwork?: boolean;
}

const adminTLS = { ca: pki.caCert, cert: pki.cert(identities.admin), key: pki.key(identities.admin) };
const apiserver = `https://127.0.0.1:${ports.apiserver}`;
const saIssuer = 'https://kubernetes.default.svc.cluster.local';
export const provisionerMetricsPort = 9810;
export const resizerMetricsPort = 9811;

export const etcd: Component = {
  name: 'etcd',
  binary: 'etcd',
  ports: [ports.etcdClient, ports.etcdPeer],
  readyTimeoutMs: 60_000,
  args: () => [
    '--name=pvx',
    `--data-dir=${paths.etcdData}`,
    `--listen-client-urls=http://127.0.0.1:${ports.etcdClient}`,
    `--advertise-client-urls=http://127.0.0.1:${ports.etcdClient}`,
    `--listen-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${ports.etcdPeer}`,
    `--initial-cluster=pvx=http://127.0.0.1:${ports.etcdPeer}`,
    // A throwaway test cluster: durability of each write is not worth an fsync on a shared VM.
    '--unsafe-no-fsync',
    '--log-level=warn',
  ],
  ready: () => isOK(`http://127.0.0.1:${ports.etcdClient}/health`),
};

export const kubeApiserver: Component = {
  name: 'kube-apiserver',
  binary: 'kube-apiserver',
  ports: [ports.apiserver],
  readyTimeoutMs: 120_000,
  // The audit log (test/cluster/audit.ts): the server's own record of writes, which e2e suites
  // check pvx's writes against.
  prepare: writeAuditPolicy,
  args: () => [
    ...auditArgs(),
    '--bind-address=127.0.0.1',
    // The `kubernetes` Service's endpoint: the node relay's address, which pods reach through
    // kube-proxy's rules for the Service IP (the standard in-cluster configuration).
    `--advertise-address=${nodeNetwork.nodeIP}`,
    `--secure-port=${ports.apiserver}`,
    `--etcd-servers=http://127.0.0.1:${ports.etcdClient}`,
    `--tls-cert-file=${pki.cert(identities.apiserver)}`,
    `--tls-private-key-file=${pki.key(identities.apiserver)}`,
    `--client-ca-file=${pki.caCert}`,
    `--kubelet-client-certificate=${pki.cert(identities.apiserverKubeletClient)}`,
    `--kubelet-client-key=${pki.key(identities.apiserverKubeletClient)}`,
    '--kubelet-preferred-address-types=InternalIP',
    `--service-account-issuer=${saIssuer}`,
    `--api-audiences=${saIssuer}`,
    `--service-account-key-file=${pki.saPub}`,
    `--service-account-signing-key-file=${pki.saKey}`,
    `--service-cluster-ip-range=${serviceCIDR}`,
    '--authorization-mode=Node,RBAC',
    // The defaults stay on (PersistentVolumeClaimResize, ResourceQuota, …); NodeRestriction is added.
    '--enable-admission-plugins=NodeRestriction',
    // ResourceQuota watches go straight to etcd, so a compaction makes an old resourceVersion
    // answer 410 Gone at once: the e2e suite uses it to prove pvx's caches relist. (With the watch
    // cache, the server keeps serving history it holds in memory for a while.)
    '--watch-cache-sizes=resourcequotas#0',
    '--allow-privileged=true',
    '--profiling=false',
    '--v=1',
  ],
  ready: async () => isOK(`${apiserver}/readyz`, adminTLS),
};

export const kubeControllerManager: Component = {
  name: 'kube-controller-manager',
  binary: 'kube-controller-manager',
  ports: [ports.controllerManager],
  readyTimeoutMs: 60_000,
  args: () => [
    `--kubeconfig=${pki.kubeconfig(identities.controllerManager)}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${ports.controllerManager}`,
    '--leader-elect=false',
    '--use-service-account-credentials=true',
    `--service-account-private-key-file=${pki.saKey}`,
    `--root-ca-file=${pki.caCert}`,
    `--cluster-signing-cert-file=${pki.caCert}`,
    `--cluster-signing-key-file=${pki.caKey}`,
    `--service-cluster-ip-range=${serviceCIDR}`,
    '--controllers=*',
    '--v=1',
  ],
  ready: () => isOK(`https://127.0.0.1:${ports.controllerManager}/healthz`),
};

export const kubeScheduler: Component = {
  name: 'kube-scheduler',
  binary: 'kube-scheduler',
  ports: [ports.scheduler],
  readyTimeoutMs: 60_000,
  args: () => [
    `--kubeconfig=${pki.kubeconfig(identities.scheduler)}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${ports.scheduler}`,
    '--leader-elect=false',
    '--v=1',
  ],
  ready: () => isOK(`https://127.0.0.1:${ports.scheduler}/healthz`),
};

// The kubelet reaches the API server at 127.0.0.1:6443 inside the node's namespace: one relay
// there forwards to a unix socket, the other forwards that socket to the real 127.0.0.1:6443.
export const apiserverRelay: Component = {
  name: 'apiserver-relay',
  binary: '/usr/bin/socat',
  ports: [],
  readyTimeoutMs: 10_000,
  args: () => [`UNIX-LISTEN:${paths.apiserverRelaySocket},fork,unlink-early,mode=600`, `TCP:127.0.0.1:${ports.apiserver}`],
  ready: async () => existsSync(paths.apiserverRelaySocket),
};

export const apiserverRelayNode: Component = {
  name: 'apiserver-relay-node',
  binary: '/usr/bin/socat',
  ports: [],
  inNodeNetwork: true,
  readyTimeoutMs: 10_000,
  // Every address of the node's namespace: 127.0.0.1 for the kubelet, the node IP for pods (the
  // `kubernetes` Service's endpoint). The namespace is the cluster's own; nothing outside reaches it.
  args: () => [`TCP-LISTEN:${ports.apiserver},fork,reuseaddr`, `UNIX-CONNECT:${paths.apiserverRelaySocket}`],
  ready: async () => {
    await run('nsenter', [`--net=${netnsPath}`, '--', '/usr/bin/socat', '-u', 'OPEN:/dev/null', `TCP:127.0.0.1:${ports.apiserver},connect-timeout=1`], {
      timeoutMs: 3000,
    });
    return true;
  },
};

export const containerd: Component = {
  name: 'containerd',
  binary: '/usr/bin/containerd',
  ports: [],
  inNodeNetwork: true,
  readyTimeoutMs: 60_000,
  prepare: () => {
    mkdirSync(join(paths.containerdConfig, '..'), { recursive: true });
    writeFileSync(paths.containerdConfig, containerdConfig());
    mkdirSync(paths.cniConfDir, { recursive: true });
    writeFileSync(join(paths.cniConfDir, '10-pvx.conflist'), JSON.stringify(cniConfig(), null, 2));
  },
  args: () => ['--config', paths.containerdConfig],
  ready: async () => {
    if (!existsSync(paths.containerdSocket)) return false;
    await run('ctr', ['--address', paths.containerdSocket, 'version'], { timeoutMs: 5000 });
    return true;
  },
};

function containerdConfig(): string {
  const cri = '[plugins."io.containerd.grpc.v1.cri"]';
  return `# Written by pvx test/cluster; containerd ${'1.6'} (Debian) config, version 2 schema.
version = 2
root = "${paths.containerdRoot}"
state = "${paths.containerdState}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]

[grpc]
  address = "${paths.containerdSocket}"

[ttrpc]
  address = "${paths.containerdSocket}.ttrpc"

${cri}
  sandbox_image = "${pauseImage}"
  # Without it every sandbox fails here: runc cannot write a negative oom_score_adj (no CAP_SYS_RESOURCE).
  restrict_oom_score_adj = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

${cri.slice(0, -1)}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

${cri.slice(0, -1)}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

${cri.slice(0, -1)}.containerd.runtimes.runc.options]
  SystemdCgroup = false

${cri.slice(0, -1)}.cni]
  bin_dir = "/usr/lib/cni"
  conf_dir = "${paths.cniConfDir}"

[plugins."io.containerd.internal.v1.opt"]
  path = "${join(paths.state, 'containerd', 'opt')}"
`;
}

function cniConfig(): object {
  // A bridge of our own, no masquerading: pods on it reach nothing beyond the node's namespace.
  return {
    cniVersion: '0.4.0',
    name: 'pvx',
    plugins: [
      {
        type: 'bridge',
        bridge: 'pvx0',
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        // A default route through the bridge, so pods reach Service IPs (kube-proxy's rules in the
        // node's namespace) and the node; the node's namespace has no route beyond the host.
        ipam: { type: 'host-local', ranges: [[{ subnet: podCIDR }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: paths.cniStateDir },
      },
    ],
  };
}

export const kubelet: Component = {
  name: 'kubelet',
  binary: 'kubelet',
  ports: [ports.kubelet, ports.kubeletHealthz],
  inNodeNetwork: true,
  readyTimeoutMs: 90_000,
  prepare: () => {
    mkdirSync(paths.kubeletRoot, { recursive: true });
    writeFileSync(paths.kubeletConfig, stringify(kubeletConfig()));
  },
  args: () => [
    `--config=${paths.kubeletConfig}`,
    `--kubeconfig=${pki.kubeconfig(identities.kubelet)}`,
    `--root-dir=${paths.kubeletRoot}`,
    `--cert-dir=${join(paths.kubeletRoot, 'pki')}`,
    `--hostname-override=${nodeName}`,
    `--node-ip=${nodeNetwork.nodeIP}`,
    '--v=2',
  ],
  ready: () => isOK(`http://${nodeNetwork.nodeIP}:${ports.kubeletHealthz}/healthz`),
};

function kubeletConfig(): object {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: nodeNetwork.nodeIP,
    port: ports.kubelet,
    readOnlyPort: 0,
    healthzBindAddress: nodeNetwork.nodeIP,
    healthzPort: ports.kubeletHealthz,
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: pki.caCert } },
    tlsCertFile: pki.cert(identities.kubeletServing),
    tlsPrivateKeyFile: pki.key(identities.kubeletServing),
    authorization: { mode: 'Webhook' },
    cgroupDriver: 'cgroupfs',
    containerRuntimeEndpoint: `unix://${paths.containerdSocket}`,
    failSwapOn: false,
    // Usage statistics refresh quickly, so usage-driven tests do not wait a minute per sample.
    volumeStatsAggPeriod: '10s',
    podCIDR,
    resolvConf: '/etc/resolv.conf',
    // A shared VM's disk may be fuller than a dedicated node's: never evict or GC test images.
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    // Pods are re-synced (and pending online filesystem expansions noticed: the node stage of every
    // expansion of a mounted claim waits for it) every 3 s, not 1 min; a handful of pods make each
    // sync cheap.
    syncFrequency: '3s',
    nodeStatusUpdateFrequency: '10s',
    nodeStatusReportFrequency: '10s',
    protectKernelDefaults: false,
    // Our machines mount cgroup v1 controllers. From 1.35 the kubelet refuses to start on cgroup v1
    // unless this is false (kubelet config v1beta1 defaults.go: FailCgroupV1 defaults to true;
    // validation_linux.go fails when it is set on a v1 host); 1.37 still honours false. The field
    // exists since 1.31, so on 1.34, whose default is false, stating it changes nothing.
    failCgroupV1: false,
  };
}

/**
 * kube-proxy in the node's namespace: Service IPs route there (the `kubernetes` Service included,
 * so a pod uses the standard in-cluster configuration). iptables mode, as most clusters run it.
 * It leaves the conntrack table size as it is (changing it needs a capability the VM lacks).
 */
export const kubeProxy: Component = {
  name: 'kube-proxy',
  binary: 'kube-proxy',
  ports: [],
  inNodeNetwork: true,
  readyTimeoutMs: 60_000,
  prepare: () => writeFileSync(kubeProxyConfigPath, stringify(kubeProxyConfig())),
  args: () => [`--config=${kubeProxyConfigPath}`, '--v=1'],
  ready: () => isOK(`http://${nodeNetwork.nodeIP}:${kubeProxyHealthzPort}/healthz`),
};

const kubeProxyConfigPath = join(paths.state, 'kube-proxy-config.yaml');
const kubeProxyHealthzPort = 10256;

function kubeProxyConfig(): object {
  return {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    clientConnection: { kubeconfig: pki.kubeconfig(identities.kubeProxy) },
    hostnameOverride: nodeName,
    mode: 'iptables',
    clusterCIDR: podCIDR,
    bindAddress: nodeNetwork.nodeIP,
    healthzBindAddress: `${nodeNetwork.nodeIP}:${kubeProxyHealthzPort}`,
    metricsBindAddress: '127.0.0.1:10249',
    conntrack: { maxPerCore: 0, min: 0, tcpCloseWaitTimeout: '0s', tcpEstablishedTimeout: '0s' },
    // NodePorts on 127.0.0.1 would need route_localnet; nothing here uses NodePorts.
    iptables: { localhostNodePorts: false },
  };
}

export const csiDriver: Component = {
  name: 'pvx-csi',
  binary: 'pvx-csi',
  ports: [],
  readyTimeoutMs: 30_000,
  args: () => [
    `--driver-name=${csiDriverName}`,
    `--node-id=${nodeName}`,
    `--endpoint=${paths.csiSocket}`,
    `--registration-socket=${paths.csiRegistrationSocket}`,
    `--state-dir=${paths.csiState}`,
  ],
  ready: async () => existsSync(paths.csiSocket) && existsSync(paths.csiRegistrationSocket),
};

/**
 * A CSI sidecar (external-provisioner or external-resizer) for the driver on this socket: it
 * learns the driver's name from it. extraArgs: the flags of this sidecar or instance alone.
 */
function sidecarFor(name: string, binary: string, socket: string, metricsPort: number, extraArgs: string[]): Component {
  return {
    name,
    binary,
    ports: [metricsPort],
    readyTimeoutMs: 30_000,
    args: () => [
      `--csi-address=${socket}`,
      `--kubeconfig=${pki.kubeconfig(identities.csi)}`,
      '--leader-election=false',
      `--http-endpoint=127.0.0.1:${metricsPort}`,
      '--timeout=60s',
      '--v=3',
      ...extraArgs,
    ],
    ready: () => isOK(`http://127.0.0.1:${metricsPort}/metrics`),
  };
}

const provisionerFor = (name: string, socket: string, metricsPort: number) =>
  sidecarFor(name, 'csi-provisioner', socket, metricsPort, ['--extra-create-metadata']);
/** The resizer also runs the VolumeAttributesClass modify controller. */
const resizerFor = (name: string, socket: string, metricsPort: number, extraArgs: string[] = []) =>
  sidecarFor(name, 'csi-resizer', socket, metricsPort, extraArgs);

export const csiProvisioner = provisionerFor('csi-provisioner', paths.csiSocket, provisionerMetricsPort);
export const csiResizer = resizerFor('csi-resizer', paths.csiSocket, resizerMetricsPort);

// The AWS EBS driver, Amazon's controller against our EC2 emulator.
export const ebsProvisionerMetricsPort = 9812;
export const ebsResizerMetricsPort = 9813;
export const ec2Endpoint = `http://127.0.0.1:${ports.ec2}`;

/**
 * Our EC2 emulator (test/cluster/ec2): the EC2 actions the EBS controller calls, with EBS's rules
 * (sizes per type, modification states, the per-volume modification rate limit). It keeps each
 * volume as a sparse image file the EBS node half mounts. Tests change its timings at run time.
 */
export const ec2Emulator: Component = {
  name: 'ec2-emulator',
  binary: process.execPath,
  ports: [ports.ec2],
  readyTimeoutMs: 30_000,
  args: () => [join(clusterSourceDir, 'ec2', 'main.ts'), `--listen=127.0.0.1:${ports.ec2}`, `--state-dir=${paths.ec2State}`],
  ready: () => isOK(`${ec2Endpoint}/_emulator/healthz`),
};

/**
 * Amazon's aws-ebs-csi-driver in controller mode (CreateVolume, ControllerExpandVolume,
 * ControllerModifyVolume). Its EC2 client goes to the emulator; instance metadata is switched off,
 * so nothing it does leaves the machine. The credentials are placeholders the emulator accepts.
 */
export const ebsController: Component = {
  name: 'ebs-controller',
  binary: 'aws-ebs-csi-driver',
  ports: [],
  readyTimeoutMs: 30_000,
  env: () => ({
    AWS_REGION: ebs.region,
    AWS_EC2_ENDPOINT: ec2Endpoint,
    AWS_ACCESS_KEY_ID: 'AKIAPVXEMBEDDEDTEST0',
    AWS_SECRET_ACCESS_KEY: 'pvx-embedded-cluster-placeholder',
    AWS_EC2_METADATA_DISABLED: 'true',
  }),
  args: () => ['controller', `--endpoint=unix://${paths.ebsControllerSocket}`, `--kubeconfig=${pki.kubeconfig(identities.csi)}`, '--v=4'],
  ready: async () => existsSync(paths.ebsControllerSocket),
};

/**
 * A cloud driver's node half: pvx-csi serving the emulator's volume images (made by the real
 * controller's calls) under the driver's name, reporting the emulated zone as its topology.
 */
function nodeHalfFor(
  name: string,
  node: { driverName: string; socket: string; registrationSocket: string; state: string; images: string; zone: string },
): Component {
  return {
    name,
    binary: 'pvx-csi',
    ports: [],
    readyTimeoutMs: 30_000,
    args: () => [
      `--driver-name=${node.driverName}`,
      `--node-id=${nodeName}`,
      `--endpoint=${node.socket}`,
      `--registration-socket=${node.registrationSocket}`,
      `--state-dir=${node.state}`,
      `--volume-images=${node.images}`,
      `--topology=${node.zone}`,
    ],
    ready: async () => existsSync(node.socket) && existsSync(node.registrationSocket),
  };
}

/** The EBS driver's node half, in the emulated region's first zone. */
export const ebsNode = nodeHalfFor('ebs-node', {
  driverName: ebs.driverName,
  socket: paths.ebsNodeSocket,
  registrationSocket: paths.ebsRegistrationSocket,
  state: paths.ebsNodeState,
  images: join(paths.ec2State, 'volumes'),
  zone: `topology.kubernetes.io/zone=${ebs.zone}`,
});

export const ebsProvisioner = provisionerFor('ebs-provisioner', paths.ebsControllerSocket, ebsProvisionerMetricsPort);
// A refused resize is retried with exponential backoff up to --retry-interval-max (5 min by
// default); 30 s here, so a test that waits out EBS's rate-limit window sees the retry that gets
// through within half a minute rather than five.
export const ebsResizer = resizerFor('ebs-resizer', paths.ebsControllerSocket, ebsResizerMetricsPort, ['--retry-interval-max=30s']);

// The GCE PD driver, Google's controller against our Compute Engine emulator.
export const gceProvisionerMetricsPort = 9814;
export const gceResizerMetricsPort = 9815;
export const computeEndpoint = `http://127.0.0.1:${ports.compute}`;
const gceCloudConfig = join(paths.computeState, 'cloud-config');
const gceCredentials = join(paths.computeState, 'service-account.json');

/**
 * Our Compute Engine emulator (test/cluster/compute): the disk calls the GCE PD controller makes,
 * with Compute Engine's rules (sizes per disk type, Hyperdisk's performance changes), each disk an
 * image file the node half mounts. Tests set its rules and faults at run time.
 */
export const computeEmulator: Component = {
  name: 'compute-emulator',
  binary: process.execPath,
  ports: [ports.compute],
  readyTimeoutMs: 30_000,
  args: () => [
    join(clusterSourceDir, 'compute', 'main.ts'),
    `--listen=127.0.0.1:${ports.compute}`,
    `--state-dir=${paths.computeState}`,
    `--project=${gce.project}`,
  ],
  ready: () => isOK(`${computeEndpoint}/_emulator/healthz`),
};

/**
 * What points the GCE controller at the emulator: a cloud config naming the project and zone (so it
 * asks no metadata server for them), and a service account whose token_uri is the emulator's. The
 * key is made here, once; nothing outside the machine knows it.
 */
function writeGceCredentials(): void {
  mkdirSync(paths.computeState, { recursive: true });
  writeFileSync(gceCloudConfig, `[Global]\nproject-id = ${gce.project}\nzone = ${gce.zone}\n`);
  if (existsSync(gceCredentials)) return;
  const { privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const account = {
    type: 'service_account',
    project_id: gce.project,
    private_key_id: 'pvx-embedded',
    private_key: privateKey,
    client_email: `pd-csi@${gce.project}.iam.gserviceaccount.com`,
    client_id: '1',
    token_uri: `${computeEndpoint}/token`,
  };
  writeFileSync(gceCredentials, JSON.stringify(account, null, 1), { mode: 0o600 });
}

/**
 * Google's gcp-compute-persistent-disk-csi-driver in controller mode (CreateVolume,
 * ControllerExpandVolume, ControllerModifyVolume). Its Compute Engine client goes to the emulator
 * (--compute-endpoint), its tokens come from the emulator, and metadata lookups go to the emulator
 * too (GCE_METADATA_HOST), so nothing it does leaves the machine; a failed first token is fatal
 * (--fail-close-on-auth-error) rather than a silent fall back to Google's endpoint. The Hyperdisk
 * types it may modify are those of its shipped manifest (deploy/kubernetes/base/controller).
 */
export const gceController: Component = {
  name: 'gce-controller',
  binary: 'gce-pd-csi-driver',
  ports: [],
  readyTimeoutMs: 45_000,
  prepare: writeGceCredentials,
  env: () => ({ GOOGLE_APPLICATION_CREDENTIALS: gceCredentials, GCE_METADATA_HOST: `127.0.0.1:${ports.compute}` }),
  args: () => [
    `--endpoint=unix:${paths.gceControllerSocket}`,
    '--run-node-service=false',
    `--cloud-config=${gceCloudConfig}`,
    `--compute-endpoint=${computeEndpoint}`,
    '--fail-close-on-auth-error=true',
    '--supports-dynamic-iops-provisioning=hyperdisk-balanced,hyperdisk-extreme',
    '--supports-dynamic-throughput-provisioning=hyperdisk-balanced,hyperdisk-throughput,hyperdisk-ml',
    '--v=4',
  ],
  ready: async () => existsSync(paths.gceControllerSocket),
};

/** The GCE driver's node half, in the emulated zone (the key GKE's nodes carry). */
export const gceNode = nodeHalfFor('gce-node', {
  driverName: gce.driverName,
  socket: paths.gceNodeSocket,
  registrationSocket: paths.gceRegistrationSocket,
  state: paths.gceNodeState,
  images: join(paths.computeState, 'images'),
  zone: `topology.gke.io/zone=${gce.zone}`,
});

export const gceProvisioner = provisionerFor('gce-provisioner', paths.gceControllerSocket, gceProvisionerMetricsPort);
export const gceResizer = resizerFor('gce-resizer', paths.gceControllerSocket, gceResizerMetricsPort, ['--retry-interval-max=30s']);

/** In start order; `down` stops them in reverse. */
export const components: Component[] = [
  etcd,
  kubeApiserver,
  kubeControllerManager,
  kubeScheduler,
  apiserverRelay,
  apiserverRelayNode,
  containerd,
  kubelet,
  kubeProxy,
  csiDriver,
  csiProvisioner,
  csiResizer,
  ec2Emulator,
  ebsController,
  ebsNode,
  ebsProvisioner,
  ebsResizer,
  computeEmulator,
  gceController,
  gceNode,
  gceProvisioner,
  gceResizer,
];
