// Where the embedded cluster keeps its files, which ports it uses, and which versions it runs.
// Everything lives under one state directory so `down` can remove it in one go; built binaries
// live in the user's cache, keyed by version, so a warm machine skips the builds.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export const repoRoot = resolve(import.meta.dirname, '..', '..');
export const clusterSourceDir = join(repoRoot, 'test', 'cluster');

/**
 * The Kubernetes releases the cluster can run, each built from its own pinned module under
 * test/cluster/modules. The first is the default: the last minor whose kubelet starts on cgroup v1
 * without being told to (our machines mount v1 controllers). The other is the newest minor the
 * module proxy serves, so CI also runs pvx against the API it will meet next.
 */
export const kubernetesReleases = [
  { version: 'v1.34.4', module: 'kubernetes' },
  { version: 'v1.37.2', module: 'kubernetes-1.37' },
] as const;
export type KubernetesVersion = (typeof kubernetesReleases)[number]['version'];
export const defaultKubernetesVersion: KubernetesVersion = kubernetesReleases[0].version;

/** PVX_KUBERNETES_VERSION (with or without the leading v) picks the release; unset, the default. */
export function selectKubernetesVersion(requested: string | undefined): KubernetesVersion {
  if (requested === undefined || requested.trim() === '') return defaultKubernetesVersion;
  const wanted = requested.trim().startsWith('v') ? requested.trim() : `v${requested.trim()}`;
  const release = kubernetesReleases.find((r) => r.version === wanted);
  if (!release) {
    throw new Error(`PVX_KUBERNETES_VERSION=${requested}: the cluster builds only ${kubernetesReleases.map((r) => r.version).join(' and ')}`);
  }
  return release.version;
}

/** Minor number of a version like v1.37.2. */
export function kubernetesMinor(version: string): number {
  return Number(version.slice(1).split('.')[1]);
}

export const versions = {
  kubernetes: selectKubernetesVersion(process.env.PVX_KUBERNETES_VERSION),
  etcd: 'v3.6.4',
  externalProvisioner: 'v6.4.0',
  externalResizer: 'v2.3.0',
  helm: 'v3.22.0',
  /** Amazon's EBS CSI driver: its controller runs against the EC2 emulator (test/cluster/ec2). */
  awsEbsCsiDriver: 'v1.63.0',
  /** Google's Compute Engine PD CSI driver: its controller runs against the Compute Engine emulator (test/cluster/compute). */
  gcePdCsiDriver: 'v1.28.1',
  pause: '3.10',
  busybox: '1.35',
} as const;

export const nodeName = 'pvx-node';
export const csiDriverName = 'hostpath.pvx.dev';
/**
 * The AWS EBS driver's name. Its controller is Amazon's code, talking to our EC2 emulator; its node
 * half is pvx-csi serving loop-mounted XFS images of the emulated volumes (there are no NVMe
 * devices here). The node sits in the emulated region's first zone.
 */
export const ebs = { driverName: 'ebs.csi.aws.com', region: 'us-east-1', zone: 'us-east-1a' } as const;
/**
 * The GCE PD driver's name, and the emulated project and zone its controller works in. As for EBS,
 * the controller is Google's code, talking to our Compute Engine emulator; the node half is pvx-csi
 * serving the emulated disks' images.
 */
export const gce = { driverName: 'pd.csi.storage.gke.io', project: 'pvx-embedded', zone: 'us-central1-a' } as const;
export const pauseImage = `registry.k8s.io/pause:${versions.pause}`;
export const busyboxImage = `pvx.local/busybox:${versions.busybox}`;
export const serviceCIDR = '10.96.0.0/16';
export const serviceIP = '10.96.0.1';
// Pod IPs come from the cluster's own bridge inside the node's network namespace; tests use
// hostNetwork pods and send nothing there.
export const podCIDR = '10.244.0.0/24';

/**
 * The node (containerd, the kubelet and its pods) lives in a network namespace of its own,
 * joined to the host by a veth pair. The kubelet refuses a loopback node IP and the API server
 * refuses to proxy to one (nodes/proxy: "address not allowed"), so the Node needs a real address:
 * this one exists only inside the cluster's own namespace, so no traffic leaves the machine.
 * 198.18.0.0/15 is reserved for network testing and is never routed on the internet.
 */
export const nodeNetwork = {
  netns: 'pvx-node',
  hostInterface: 'pvx-host',
  nodeInterface: 'pvx-node0',
  hostIP: '198.18.231.1',
  nodeIP: '198.18.231.2',
  prefixLength: 30,
} as const;

/** Every port the cluster listens on, all bound to 127.0.0.1. */
export const ports = {
  etcdClient: 2379,
  etcdPeer: 2380,
  apiserver: 6443,
  controllerManager: 10257,
  scheduler: 10259,
  kubelet: 10250,
  kubeletHealthz: 10248,
  /** The EC2 emulator the EBS controller calls (AWS_EC2_ENDPOINT). */
  ec2: 9830,
  /** The Compute Engine emulator the GCE PD controller calls (--compute-endpoint), and its token endpoint. */
  compute: 9831,
} as const;

export const stateDir = process.env.PVX_CLUSTER_DIR ?? '/var/lib/pvx-cluster';
export const cacheDir = process.env.PVX_CACHE_DIR ?? join(homedir(), '.cache', 'pvx');

export const paths = {
  state: stateDir,
  logs: join(stateDir, 'logs'),
  run: join(stateDir, 'run'),
  pki: join(stateDir, 'pki'),
  etcdData: join(stateDir, 'etcd'),
  containerdRoot: join(stateDir, 'containerd', 'root'),
  containerdState: join(stateDir, 'run', 'containerd'),
  containerdSocket: join(stateDir, 'run', 'containerd.sock'),
  containerdConfig: join(stateDir, 'containerd', 'config.toml'),
  cniConfDir: join(stateDir, 'cni', 'net.d'),
  cniStateDir: join(stateDir, 'cni', 'state'),
  kubeletRoot: join(stateDir, 'kubelet'),
  kubeletConfig: join(stateDir, 'kubelet-config.yaml'),
  csiState: join(stateDir, 'csi'),
  /** Unix socket relaying the node namespace's 127.0.0.1:6443 to the API server. */
  apiserverRelaySocket: join(stateDir, 'run', 'apiserver-relay.sock'),
  csiSocket: join(stateDir, 'kubelet', 'plugins', csiDriverName, 'csi.sock'),
  csiRegistrationSocket: join(stateDir, 'kubelet', 'plugins_registry', `${csiDriverName}-reg.sock`),
  /** The EC2 emulator's volumes (their images under volumes/), modifications and call log. */
  ec2State: join(stateDir, 'ec2'),
  ebsControllerSocket: join(stateDir, 'run', 'ebs-controller.sock'),
  ebsNodeSocket: join(stateDir, 'kubelet', 'plugins', ebs.driverName, 'csi.sock'),
  ebsRegistrationSocket: join(stateDir, 'kubelet', 'plugins_registry', `${ebs.driverName}-reg.sock`),
  ebsNodeState: join(stateDir, 'ebs-node'),
  /** The Compute Engine emulator's disks (their images under images/), call log; the GCE controller's config and credentials. */
  computeState: join(stateDir, 'compute'),
  gceControllerSocket: join(stateDir, 'run', 'gce-controller.sock'),
  gceNodeSocket: join(stateDir, 'kubelet', 'plugins', gce.driverName, 'csi.sock'),
  gceRegistrationSocket: join(stateDir, 'kubelet', 'plugins_registry', `${gce.driverName}-reg.sock`),
  gceNodeState: join(stateDir, 'gce-node'),
  /** The Kubernetes version this state (etcd's data above all) was brought up with. */
  kubernetesVersion: join(stateDir, 'kubernetes-version'),
  /** The admin kubeconfig users and tests connect with. */
  kubeconfig: join(stateDir, 'admin.kubeconfig'),
  binCache: join(cacheDir, 'bin'),
  imageCache: join(cacheDir, 'images'),
} as const;

export const apiserverURL = `https://127.0.0.1:${ports.apiserver}`;
