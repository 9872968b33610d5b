// Reads a node's kubelet stats summary from the kubelet itself (https://ADDRESS:PORT/stats/summary),
// the way metrics-server does, rather than through the API server's node proxy. The proxy needs
// nodes/proxy get, which reaches every kubelet endpoint (exec and run included, on kubelets that
// authorize by it) and which security benchmarks flag; the kubelet's own webhook authorization maps
// GET /stats/* to the narrow nodes/stats subresource, so that is all pvx's RBAC grants.
//
// pvx presents the credentials it has for the API server (the service account's token, or what
// the kubeconfig gives: a token or a client certificate): the kubelet asks the API server who that
// is (TokenReview) and whether it may get nodes/stats (SubjectAccessReview). The kubelet's serving
// certificate is checked against --kubelet-ca-file, by default the cluster CA pvx already trusts.
//
// A kubelet is a peer pvx does not control: an answer is read up to maxBodyBytes and within
// deadlineMs, and the caller's signal stops the read; each closes the connection.
import type { V1Node } from '@kubernetes/client-node';
import https from 'node:https';
import type { KubeletClient } from '../k8s/client.ts';
import { readBounded } from './bounded-body.ts';
import { defaultAddressTypes, kubeletEndpoint, type KubeletEndpoint, type NodeAddressType } from './kubelet-endpoint.ts';

/** What pvx proves its identity with, as of now (tokens rotate, exec plugins refresh). */
export interface KubeletCredentials {
  token?: string;
  cert?: Buffer;
  key?: Buffer;
}

/** How the kubelet's serving certificate is checked: against a CA (none: the system's roots), or not at all. */
export type KubeletTrust = { ca?: Buffer; source: string; insecure?: false } | { insecure: true };

export interface HttpsKubeletClientOptions {
  credentials: () => KubeletCredentials | Promise<KubeletCredentials>;
  trust: KubeletTrust;
  /** Which node address to dial, most preferred first. Default: InternalIP, InternalDNS, Hostname, ExternalIP, ExternalDNS. */
  preferredAddressTypes?: readonly NodeAddressType[];
  /** A connection not made within this long fails, ms. Default 5,000. */
  connectTimeoutMs?: number;
  /** A request whose socket is silent this long fails, ms. Default 30,000. */
  requestTimeoutMs?: number;
  /** A whole answer (status, headers and body) not read within this long fails, ms. Default 30,000. */
  deadlineMs?: number;
  /**
   * An answer whose body passes this many bytes is not read further, bytes. Default 16 MiB: a
   * summary of a node with 250 pods is about 1 MiB.
   */
  maxBodyBytes?: number;
}

/** Node's codes for a serving certificate it does not accept. */
const certificateCodes = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** What went wrong reading one kubelet: an answer with an error status, or a failure to get one. */
export type KubeletFailure = { status: number; body: string } | { code?: string; message: string };

/**
 * One sentence for a failed read, naming the node, the address dialled and what to change: the
 * missing grant for a 403, the CA for a certificate pvx does not trust. Pure, so every wording is
 * table-tested.
 */
export function explainKubeletFailure(node: string, at: KubeletEndpoint, trust: KubeletTrust, failure: KubeletFailure): string {
  const where = `node ${node}: kubelet ${formatHostPort(at.host, at.port)} (${at.addressType})`;
  if ('status' in failure) {
    const detail = failure.body.trim().slice(0, 200);
    if (failure.status === 401) {
      return `${where} refused pvx's credentials (401 Unauthorized): the kubelet must authenticate API clients (--authentication-token-webhook, or a client CA that signs pvx's certificate)${detail ? `: ${detail}` : ''}`;
    }
    if (failure.status === 403) {
      return `${where} forbids reading /stats/summary (403 Forbidden): pvx's identity needs RBAC get on nodes/stats (ClusterRole pvx-kubelet-usage)${detail ? `: ${detail}` : ''}`;
    }
    return `${where} answered HTTP ${failure.status}${detail ? `: ${detail}` : ''}`;
  }
  if (failure.code && certificateCodes.has(failure.code)) {
    const against = trust.insecure ? 'the system' : trust.source;
    const subject = failure.code === 'ERR_TLS_CERT_ALTNAME_INVALID' ? `does not name ${at.host}` : 'is not trusted';
    return `${where}: its serving certificate ${subject} (${failure.code}: ${failure.message}), checked against ${against}; give the CA that signs kubelet serving certificates with --kubelet-ca-file, or choose another address type with --kubelet-preferred-address-types`;
  }
  if (failure.code === 'ECONNREFUSED')
    return `${where}: connection refused (is the kubelet's port reachable from pvx? a NetworkPolicy or firewall may block it)`;
  return `${where}: ${failure.message}`;
}

const formatHostPort = (host: string, port: number) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

export class HttpsKubeletClient implements KubeletClient {
  private readonly o: Required<Omit<HttpsKubeletClientOptions, 'trust' | 'credentials'>> & Pick<HttpsKubeletClientOptions, 'trust' | 'credentials'>;
  private readonly agent: https.Agent;

  constructor(opts: HttpsKubeletClientOptions) {
    this.o = {
      preferredAddressTypes: defaultAddressTypes,
      connectTimeoutMs: 5_000,
      requestTimeoutMs: 30_000,
      deadlineMs: 30_000,
      maxBodyBytes: 16 * 1024 * 1024,
      ...opts,
    };
    const { trust } = opts;
    // Kept alive: the same kubelets are read every policy interval.
    this.agent = new https.Agent({
      keepAlive: true,
      keepAliveMsecs: 30_000,
      timeout: 60_000,
      ...(trust.insecure ? { rejectUnauthorized: false } : { ca: trust.ca }),
    });
  }

  /** Closes the idle kept-alive connections. */
  close(): void {
    this.agent.destroy();
  }

  async statsSummary(node: V1Node, signal?: AbortSignal): Promise<unknown> {
    const name = node.metadata?.name ?? '(unnamed)';
    const at = kubeletEndpoint(node, this.o.preferredAddressTypes);
    if ('error' in at) throw new Error(at.error);
    const { token, cert, key } = await this.o.credentials();
    const answer = await this.get(at, { token, cert, key }, signal).catch((err: NodeJS.ErrnoException) => {
      throw new Error(explainKubeletFailure(name, at, this.o.trust, { code: err.code, message: err.message }));
    });
    if (answer.status !== 200) throw new Error(explainKubeletFailure(name, at, this.o.trust, answer));
    try {
      return JSON.parse(answer.body) as unknown;
    } catch (err) {
      throw new Error(`node ${name}: kubelet ${formatHostPort(at.host, at.port)} answered something that is not JSON: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  private get(at: KubeletEndpoint, id: KubeletCredentials, signal?: AbortSignal): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      // Why the request was cut, when pvx cut it: the stream's own error would only say "aborted".
      let cut: Error | undefined;
      const stop = (err: Error) => {
        cut ??= err;
        req.destroy(err);
      };
      const deadline = setTimeout(
        () => stop(Object.assign(new Error(`no whole answer within ${this.o.deadlineMs} ms`), { code: 'ETIMEDOUT' })),
        this.o.deadlineMs,
      );
      const abort = () => stop(Object.assign(new Error('the read was aborted'), { code: 'ABORT_ERR' }));
      const done = () => {
        clearTimeout(deadline);
        signal?.removeEventListener('abort', abort);
      };
      const fail = (err: Error) => {
        done();
        reject(cut ?? err);
      };
      const req = https.request(
        {
          host: at.host,
          port: at.port,
          path: '/stats/summary',
          method: 'GET',
          agent: this.agent,
          // SNI takes names only; for an IP the certificate's IP SANs are checked without it.
          ...(/^[\d.]+$|:/.test(at.host) ? {} : { servername: at.host }),
          ...(id.cert && id.key ? { cert: id.cert, key: id.key } : {}),
          headers: { accept: 'application/json', 'user-agent': 'pvx', ...(id.token ? { authorization: `Bearer ${id.token}` } : {}) },
        },
        (res) => {
          readBounded(res, this.o.maxBodyBytes).then((body) => {
            done();
            resolve({ status: res.statusCode ?? 0, body });
          }, fail);
        },
      );
      req.on('error', fail);
      if (signal?.aborted) abort();
      else signal?.addEventListener('abort', abort, { once: true });
      req.setTimeout(this.o.requestTimeoutMs, () =>
        req.destroy(Object.assign(new Error(`no answer within ${this.o.requestTimeoutMs} ms`), { code: 'ETIMEDOUT' })),
      );
      req.once('socket', (socket) => {
        if (!socket.connecting) return;
        const timer = setTimeout(
          () => req.destroy(Object.assign(new Error(`no connection within ${this.o.connectTimeoutMs} ms`), { code: 'ETIMEDOUT' })),
          this.o.connectTimeoutMs,
        );
        socket.once('secureConnect', () => clearTimeout(timer));
        socket.once('close', () => clearTimeout(timer));
      });
      req.end();
    });
  }
}
