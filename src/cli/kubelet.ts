// How the commands that read the kubelets (run, audit, plan, df, why) reach them: the flags (defined
// in commands.ts's kubeletOptions), the CA the kubelets' serving certificates are checked against,
// and pvx's identity, taken from the same credentials as the API server's (pvx's own connection, or
// client-node's KubeConfig).
import type { KubeConfig } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { HttpsKubeletClient, type KubeletCredentials, type KubeletTrust } from '../usage/kubelet-client.ts';
import { defaultAddressTypes, parseAddressTypes, type NodeAddressType } from '../usage/kubelet-endpoint.ts';
import { UsageError } from './usage.ts';

/** The flags' help, descriptions starting at `column` as the command's other flags do. */
export function kubeletHelp(column: number): string {
  const rows: [string, string[]][] = [
    [
      '--kubelet-ca-file PATH',
      ["CA of the kubelets' serving certificates (env PVX_KUBELET_CA_FILE;", 'default: the cluster CA pvx trusts for the API server)'],
    ],
    [
      '--kubelet-preferred-address-types LIST',
      ['node address types to dial, most preferred first', '(env PVX_KUBELET_PREFERRED_ADDRESS_TYPES; default', `${defaultAddressTypes.join(',')})`],
    ],
    [
      '--kubelet-insecure-tls',
      ["do not check the kubelets' serving certificates (UNSAFE: whoever", "intercepts the traffic gets pvx's token; env PVX_KUBELET_INSECURE_TLS=true)"],
    ],
  ];
  const pad = ' '.repeat(column);
  return rows
    .flatMap(([flag, lines]) => {
      const head = `  ${flag}`;
      return head.length < column ? [head.padEnd(column) + lines[0], ...lines.slice(1).map((l) => pad + l)] : [head, ...lines.map((l) => pad + l)];
    })
    .join('\n');
}

export interface KubeletFlags {
  caFile?: string;
  insecureTLS: boolean;
  preferredAddressTypes: readonly NodeAddressType[];
}

export function kubeletFlags(
  values: { 'kubelet-ca-file'?: string; 'kubelet-insecure-tls'?: boolean; 'kubelet-preferred-address-types'?: string },
  env: NodeJS.ProcessEnv,
): KubeletFlags {
  const caFile = values['kubelet-ca-file'] ?? (env.PVX_KUBELET_CA_FILE || undefined);
  const insecureEnv = env.PVX_KUBELET_INSECURE_TLS;
  if (insecureEnv !== undefined && insecureEnv !== '' && insecureEnv !== 'true' && insecureEnv !== 'false')
    throw new UsageError(`PVX_KUBELET_INSECURE_TLS must be true or false, got "${insecureEnv}"`);
  const insecureTLS = values['kubelet-insecure-tls'] ?? insecureEnv === 'true';
  if (insecureTLS && caFile) throw new UsageError('--kubelet-insecure-tls and --kubelet-ca-file exclude each other: give one');
  const typesText = values['kubelet-preferred-address-types'] ?? (env.PVX_KUBELET_PREFERRED_ADDRESS_TYPES || undefined);
  let preferredAddressTypes = defaultAddressTypes;
  if (typesText !== undefined) {
    try {
      preferredAddressTypes = parseAddressTypes(typesText);
    } catch (err) {
      throw new UsageError(`--kubelet-preferred-address-types: ${(err as Error).message}`);
    }
  }
  return { ...(caFile ? { caFile } : {}), insecureTLS, preferredAddressTypes };
}

/** pvx's identity as of now, and the CA it trusts for the API server (with where it came from). */
export interface KubeletAccess {
  credentials: () => KubeletCredentials | Promise<KubeletCredentials>;
  clusterCa?: { pem: Buffer; source: string };
}

/** Logged at start whenever the kubelets' certificates go unchecked. */
export const insecureKubeletWarning =
  "--kubelet-insecure-tls: the kubelets' serving certificates are NOT checked; anyone who can intercept pvx's traffic to a kubelet can impersonate it and capture pvx's token. Give --kubelet-ca-file instead.";

/**
 * What the kubelets' certificates are checked against: --kubelet-ca-file, else the cluster CA (it
 * signs kubelet serving certificates where they are bootstrapped through the API server, e.g.
 * serverTLSBootstrap), else the system's roots.
 */
export function kubeletTrust(flags: KubeletFlags, access: KubeletAccess): KubeletTrust {
  if (flags.insecureTLS) return { insecure: true };
  if (flags.caFile) {
    try {
      return { ca: readFileSync(flags.caFile), source: `the CA file ${flags.caFile}` };
    } catch (err) {
      throw new UsageError(`--kubelet-ca-file ${flags.caFile} cannot be read: ${(err as Error).message}`);
    }
  }
  if (access.clusterCa) return { ca: access.clusterCa.pem, source: `the cluster CA (${access.clusterCa.source}; another CA with --kubelet-ca-file)` };
  return { source: "the system's trusted CAs (no --kubelet-ca-file, and the cluster's CA is not known)" };
}

export function kubeletClient(flags: KubeletFlags, access: KubeletAccess): HttpsKubeletClient {
  return new HttpsKubeletClient({ credentials: access.credentials, trust: kubeletTrust(flags, access), preferredAddressTypes: flags.preferredAddressTypes });
}

const buffer = (v: unknown): Buffer | undefined => (typeof v === 'string' || Buffer.isBuffer(v) ? Buffer.from(v) : undefined);

/**
 * The access client-node's KubeConfig gives: whatever it would put on a request to the API server
 * (a token from a file, an exec plugin or an auth-provider; a client certificate), asked for at
 * each read so refreshed credentials are used.
 */
export function kubeConfigAccess(kc: KubeConfig): KubeletAccess {
  const cluster = kc.getCurrentCluster();
  const clusterCa = cluster?.caData
    ? { pem: Buffer.from(cluster.caData, 'base64'), source: "the kubeconfig's certificate-authority-data" }
    : cluster?.caFile
      ? { pem: readFileSync(cluster.caFile), source: cluster.caFile }
      : undefined;
  return {
    credentials: async () => {
      const opts: RequestOptions = { headers: {} };
      await kc.applyToHTTPSOptions(opts);
      const headers = (opts.headers ?? {}) as Record<string, unknown>;
      const auth = headers.Authorization ?? headers.authorization;
      const token = typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice('Bearer '.length) : undefined;
      const cert = buffer(opts.cert);
      const key = buffer(opts.key);
      return { ...(token ? { token } : {}), ...(cert && key ? { cert, key } : {}) };
    },
    ...(clusterCa ? { clusterCa } : {}),
  };
}
