// How the commands that read the kubelets (run, audit, plan, df, why) reach them: the flags (defined
// in commands.ts's kubeletOptions), the CA the kubelets' serving certificates are checked against,
// and the identity presented. A person's commands read through the API server's node proxy: their
// credentials go to the API server only (a node is not trusted with an administrator's token);
// --kubelet-direct reads each kubelet with them, as metrics-server does, where nodes are trusted.
// `pvx run` reads each kubelet directly, with tokens of its reader identity (kubelet-identity.ts).
import type { KubeConfig, V1Node } from '@kubernetes/client-node';
import type { CommandClient, KubeletClient } from '../k8s/client.ts';
import { isForbidden } from '../k8s/errors.ts';
import { readFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { HttpsKubeletClient, type KubeletCredentials, type KubeletTrust } from '../usage/kubelet-client.ts';
import { defaultAddressTypes, parseAddressTypes, type NodeAddressType } from '../usage/kubelet-endpoint.ts';
import { UsageError } from './errors.ts';

/** The flags' help, descriptions starting at `column` as the command's other flags do; `direct`: a person's command, which has --kubelet-direct. */
export function kubeletHelp(column: number, direct = false): string {
  const rows: [string, string[]][] = [
    ...(direct
      ? ([
          [
            '--kubelet-direct',
            [
              'read each kubelet directly with your credentials, which then go to every node (env PVX_KUBELET_DIRECT=true);',
              'default: through the API server (needs get nodes/proxy), your credentials staying with it',
            ],
          ],
        ] as [string, string[]][])
      : []),
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
  /** Read each kubelet directly, with the person's credentials (the commands only: --kubelet-direct). */
  direct?: boolean;
  caFile?: string;
  insecureTLS: boolean;
  preferredAddressTypes: readonly NodeAddressType[];
}

export function kubeletFlags(
  values: { 'kubelet-ca-file'?: string; 'kubelet-insecure-tls'?: boolean; 'kubelet-preferred-address-types'?: string; 'kubelet-direct'?: boolean },
  env: NodeJS.ProcessEnv,
  /** A person's command reads through the API server unless --kubelet-direct; `pvx run` always reads directly. */
  through: 'direct' | 'api-server-unless-direct' = 'direct',
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
  const direct = through === 'api-server-unless-direct' && (values['kubelet-direct'] ?? env.PVX_KUBELET_DIRECT === 'true');
  if (through === 'api-server-unless-direct' && !direct && (caFile || insecureTLS || typesText !== undefined)) {
    throw new UsageError(
      '--kubelet-ca-file, --kubelet-insecure-tls and --kubelet-preferred-address-types are for --kubelet-direct: the API server reaches the kubelets otherwise',
    );
  }
  return { ...(direct ? { direct } : {}), ...(caFile ? { caFile } : {}), insecureTLS, preferredAddressTypes };
}

/** What a person is told before their command reads the kubelets as the flags say. */
export const kubeletWarnings = (flags: KubeletFlags): string[] => [
  ...(flags.direct ? [directKubeletWarning] : []),
  ...(flags.direct && flags.insecureTLS ? [insecureKubeletWarning] : []),
];

/** Printed whenever a person's command reads the kubelets with their own credentials. */
export const directKubeletWarning =
  "--kubelet-direct: your credentials are sent to every node's kubelet; a node that is not what it seems can replay them. Without the flag, pvx reads node statistics through the API server.";

/**
 * A person's reader of the kubelets: through the API server's node proxy (their credentials stay
 * with the API server), or each kubelet directly with --kubelet-direct.
 */
export function commandKubeletReader(flags: KubeletFlags, connected: { client: CommandClient; kubelet: KubeletAccess }): KubeletClient {
  return flags.direct ? kubeletClient(flags, connected.kubelet) : new ApiServerKubeletReader(connected.client);
}

/** The kubelets' summaries through the API server (nodes/proxy get), a refusal explained. */
export class ApiServerKubeletReader implements KubeletClient {
  private readonly client: Pick<CommandClient, 'nodeStatsSummary'>;

  constructor(client: Pick<CommandClient, 'nodeStatsSummary'>) {
    this.client = client;
  }

  async statsSummary(node: V1Node): Promise<unknown> {
    const name = node.metadata?.name ?? '';
    try {
      return await this.client.nodeStatsSummary(name);
    } catch (err) {
      if (isForbidden(err)) {
        throw new Error(
          `node ${name}: not allowed to read its statistics through the API server (get nodes/proxy): ask for it, read usage from Prometheus (--usage prometheus), or read the kubelets directly with --kubelet-direct`,
          { cause: err },
        );
      }
      throw err;
    }
  }
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
