// Where the API server is and how pvx proves who it is, read without client-node: the pod's
// service account, or a kubeconfig whose user has static credentials (a client certificate, a
// token, a token file), reached directly or through an HTTP(S) proxy (the kubeconfig's proxy-url,
// or HTTPS_PROXY as client-go reads it: proxy.ts). Anything else — exec credential plugins,
// auth-providers (OIDC, cloud helpers), basic auth, impersonation, a SOCKS proxy-url — is
// `unsupported`, with the reason, and the caller falls back to client-node, which knows them all.
// A kubeconfig that turns TLS verification off and names a CA is refused outright (a TypeError),
// whichever client would serve it: client-go refuses it, client-node would silently not verify. The files are found the way client-node's
// loadKubeConfig finds them, so either way the same cluster is reached as the same user.
import { existsSync, readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { delimiter, dirname, isAbsolute, join } from 'node:path';

export interface Connection {
  /** The API server's base URL, without a trailing slash (a path prefix, if any, is kept). */
  server: string;
  /** Trusted roots (PEM); none: the system's. */
  ca?: Buffer;
  /** Where ca came from, for messages (kubelets are checked against it too, by default). */
  caSource?: string;
  /** Client certificate and key (PEM). */
  cert?: Buffer;
  key?: Buffer;
  /** false only for insecure-skip-tls-verify; undefined leaves Node's default (NODE_TLS_REJECT_UNAUTHORIZED). */
  rejectUnauthorized?: false;
  /** tls-server-name: the name the server's certificate is checked against. */
  servername?: string;
  /** The kubeconfig's proxy-url (http or https): every request goes through it, whatever HTTPS_PROXY says, as in client-go. */
  proxyUrl?: string;
  /** A bearer token that never changes. */
  token?: string;
  /** A bearer token read from this file, and read again as it is rotated (the service account's). */
  tokenFile?: string;
  /** The namespace of the kubeconfig's current context, or the pod's own: the one commands default to. */
  namespace?: string;
  /** Where the settings came from, for messages: "in-cluster" or the kubeconfig's path. */
  source: string;
}

export type ConnectionResult = { connection: Connection } | { unsupported: string };

export const serviceAccountDir = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * The connection of the kubeconfig at `path`, or, without a path, of what client-node's
 * loadFromDefault would load: ~/.kube/config when it exists, else the pod's service account.
 * (A KUBECONFIG list of several files is left to client-node, which merges them.)
 */
export async function resolveConnection(path: string | undefined, env: NodeJS.ProcessEnv = process.env, saDir = serviceAccountDir): Promise<ConnectionResult> {
  if (path) {
    if (!existsSync(path)) return { unsupported: `kubeconfig ${path} does not exist` };
    return kubeconfigConnection(path);
  }
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
  if (listed.length > 1) return { unsupported: `KUBECONFIG lists several files (${env.KUBECONFIG})` };
  if (listed[0]) return resolveConnection(listed[0], env, saDir);
  const home = env.HOME;
  if (home && existsSync(join(home, '.kube', 'config'))) return kubeconfigConnection(join(home, '.kube', 'config'));
  if (existsSync(join(saDir, 'token'))) return inClusterConnection(env, saDir);
  return { unsupported: 'no kubeconfig and no service account' };
}

/** The pod's service account: KUBERNETES_SERVICE_HOST/PORT, its CA and its (rotated) token. */
export function inClusterConnection(env: NodeJS.ProcessEnv = process.env, saDir = serviceAccountDir): ConnectionResult {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) return { unsupported: 'KUBERNETES_SERVICE_HOST or KUBERNETES_SERVICE_PORT is not set' };
  // client-node speaks plain HTTP to these ports, and then refuses to without insecure-skip-tls-verify.
  if (['80', '8080', '8001'].includes(port)) return { unsupported: `port ${port} is plain HTTP` };
  const caFile = join(saDir, 'ca.crt');
  const namespaceFile = join(saDir, 'namespace');
  const namespace = existsSync(namespaceFile) ? readFileSync(namespaceFile, 'utf8').trim() : '';
  return {
    connection: {
      server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
      ...(existsSync(caFile) ? { ca: readFileSync(caFile), caSource: caFile } : {}),
      tokenFile: join(saDir, 'token'),
      ...optional('namespace', text(namespace)),
      source: 'in-cluster',
    },
  };
}

type Entry = Record<string, unknown>;

const named = (list: unknown, name: unknown, key: string): Entry | undefined => {
  if (!Array.isArray(list)) return undefined;
  const found = (list as Entry[]).find((e) => e && typeof e === 'object' && e.name === name);
  const inner = found?.[key];
  return inner && typeof inner === 'object' ? (inner as Entry) : undefined;
};

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** The user fields a static connection serves; any other field set on the user means client-node. */
const staticUserFields = new Set([
  'client-certificate',
  'client-certificate-data',
  'client-key',
  'client-key-data',
  'token',
  'tokenFile',
  'token-file',
  'extensions',
]);
/** The cluster fields a static connection serves. */
const staticClusterFields = new Set([
  'server',
  'certificate-authority',
  'certificate-authority-data',
  'insecure-skip-tls-verify',
  'tls-server-name',
  'disable-compression',
  'proxy-url',
  'extensions',
]);

/**
 * The current context's cluster and user of one kubeconfig file, if its user's credentials are
 * static. The YAML parser is loaded only here: a pod's service account needs none.
 */
export async function kubeconfigConnection(path: string): Promise<ConnectionResult> {
  let doc: unknown;
  try {
    const { parseKubeconfig } = await import('./kubeconfig-yaml.ts');
    doc = parseKubeconfig(readFileSync(path, 'utf8'));
  } catch (err) {
    return { unsupported: `kubeconfig ${path} cannot be read: ${(err as Error).message}` };
  }
  if (!doc || typeof doc !== 'object') return { unsupported: `kubeconfig ${path} is empty` };
  const config = doc as Entry;
  const contextName = config['current-context'];
  const context = named(config.contexts, contextName, 'context');
  if (!context) return { unsupported: `kubeconfig ${path} has no current context` };
  const cluster = named(config.clusters, context.cluster, 'cluster');
  if (!cluster || !text(cluster.server)) return { unsupported: `kubeconfig ${path}: context ${String(contextName)} names no cluster with a server` };
  if (cluster['insecure-skip-tls-verify'] === true && (text(cluster['certificate-authority']) || text(cluster['certificate-authority-data']))) {
    throw new TypeError(
      `kubeconfig ${path}: insecure-skip-tls-verify and a certificate authority together are not allowed (client-go refuses them too): remove one`,
    );
  }
  const proxyUrl = text(cluster['proxy-url']);
  if (proxyUrl && !/^https?:\/\//i.test(proxyUrl))
    return { unsupported: `the kubeconfig's proxy-url is not an HTTP(S) proxy (${proxyUrl.replace(/\/\/[^@/]*@/, '//')})` };
  const user = context.user === undefined || context.user === '' ? {} : named(config.users, context.user, 'user');
  if (!user) return { unsupported: `kubeconfig ${path}: context ${String(contextName)} names no user ${String(context.user)}` };
  const otherUser = Object.keys(user).filter((k) => !staticUserFields.has(k) && user[k] !== undefined && user[k] !== null && user[k] !== '');
  if (otherUser.length > 0) return { unsupported: `the kubeconfig's user has credentials pvx's own transport does not serve (${otherUser.join(', ')})` };
  const otherCluster = Object.keys(cluster).filter((k) => !staticClusterFields.has(k) && cluster[k] !== undefined && cluster[k] !== null && cluster[k] !== '');
  if (otherCluster.length > 0) return { unsupported: `the kubeconfig's cluster has settings pvx's own transport does not serve (${otherCluster.join(', ')})` };

  const dir = dirname(path);
  // Relative paths are relative to the kubeconfig, as kubectl and client-node read them.
  const file = (v: unknown) => (text(v) ? readFileSync(isAbsolute(v as string) ? (v as string) : join(dir, v as string)) : undefined);
  const data = (v: unknown) => (text(v) ? Buffer.from(v as string, 'base64') : undefined);
  const server = (cluster.server as string).replace(/\/$/, '');
  const insecure = cluster['insecure-skip-tls-verify'] === true;
  // client-node refuses plain HTTP unless TLS verification is off; leave that refusal to it.
  if (server.startsWith('http:') && !insecure) return { unsupported: `server ${server} is plain HTTP without insecure-skip-tls-verify` };
  if (!/^https?:\/\//.test(server)) return { unsupported: `server ${server} is not an http(s) URL` };
  const tokenFile = text(user.tokenFile) ?? text(user['token-file']);
  const caFile = text(cluster['certificate-authority']);
  const caSource = caFile
    ? isAbsolute(caFile)
      ? caFile
      : join(dir, caFile)
    : text(cluster['certificate-authority-data'])
      ? `the certificate-authority-data of kubeconfig ${path}`
      : undefined;
  try {
    return {
      connection: {
        server,
        ...optional('ca', file(cluster['certificate-authority']) ?? data(cluster['certificate-authority-data'])),
        ...optional('caSource', caSource),
        ...optional('cert', file(user['client-certificate']) ?? data(user['client-certificate-data'])),
        ...optional('key', file(user['client-key']) ?? data(user['client-key-data'])),
        ...(insecure ? { rejectUnauthorized: false as const } : {}),
        ...optional('servername', text(cluster['tls-server-name'])),
        ...optional('proxyUrl', proxyUrl),
        ...optional('token', text(user.token)),
        ...(text(user.token) === undefined && tokenFile ? { tokenFile: isAbsolute(tokenFile) ? tokenFile : join(dir, tokenFile) } : {}),
        ...optional('namespace', text(context.namespace)),
        source: path,
      },
    };
  } catch (err) {
    return { unsupported: `kubeconfig ${path}: ${(err as Error).message}` };
  }
}

const optional = <K extends string, V>(key: K, value: V | undefined): { [k in K]?: V } => (value === undefined ? {} : ({ [key]: value } as { [k in K]: V }));
