// Which cluster the e2e suites run against, and with which StorageClasses and image.
//
// Default: the embedded cluster (test/cluster), brought up by the global setup if needed.
// Any other cluster: set KUBECONFIG, and name its classes with the PVX_E2E_* variables below
// (e.g. kind with the csi-driver-host-path deployment, k3s, EKS with the EBS CSI driver's gp3).
import { paths } from '../../cluster/layout.ts';

const embedded = !process.env.KUBECONFIG;

// The embedded cluster's driver is not one pvx has a profile of: every pvx process and command
// the suites start (they inherit this environment) is told its limit, as a user would tell it.
if (embedded) process.env.PVX_MAX_VOLUME_SIZE ??= 'hostpath.pvx.dev=class-parameter:maxVolumeSize';

function setting(name: string, embeddedDefault: string, otherDefault?: string): string | undefined {
  return process.env[name] ?? (embedded ? embeddedDefault : otherDefault);
}

export const e2eEnv = {
  /** True when the suite manages the embedded cluster itself. */
  embedded,
  kubeconfig: process.env.KUBECONFIG ?? paths.kubeconfig,
  /** Expandable class whose driver needs node expansion (hostpath, EBS). */
  expandableClass: setting('PVX_E2E_SC_EXPANDABLE', 'pvx-hostpath', 'standard'),
  /** Class with allowVolumeExpansion: false. */
  fixedClass: setting('PVX_E2E_SC_FIXED', 'pvx-hostpath-fixed'),
  /** Class whose driver refuses sizes above some limit, and a size above that limit. */
  cappedClass: setting('PVX_E2E_SC_CAPPED', 'pvx-hostpath-capped'),
  cappedTooLarge: setting('PVX_E2E_CAPPED_TOO_LARGE', '5Gi', '65Ti'),
  /** Class whose driver refuses sizes above a limit pvx cannot know (expansions fail at the driver). */
  hiddenCapClass: setting('PVX_E2E_SC_HIDDEN_CAP', 'pvx-hostpath-hidden-cap'),
  /** Class whose volumes report their own usage in the kubelet's volume stats. */
  usageClass: setting('PVX_E2E_SC_USAGE', 'pvx-xfs'),
  image: setting('PVX_E2E_IMAGE', 'pvx.local/busybox:1.35', 'busybox:1.36') as string,
  imagePullPolicy: embedded ? 'Never' : 'IfNotPresent',
};
