// The identity the operator reads kubelets as: a ServiceAccount that may get nodes/stats and
// nothing else (src/k8s/rbac.ts, kubeletReader). pvx mints short-lived tokens for it through the
// API server (TokenRequest) and sends only those to nodes, so the token that patches claims never
// leaves the connection to the API server: a compromised node that replays what it was sent can
// read statistics for a few minutes, and write nothing.
import type { KubeClient, MintedToken } from '../k8s/client.ts';
import { ApiError } from '../k8s/errors.ts';
import type { KubeletCredentials } from './kubelet-client.ts';

/** The shortest lifetime TokenRequest grants (the API server refuses less than ten minutes). */
export const kubeletTokenSeconds = 600;
/** A token is replaced once this share of its lifetime has passed, as the kubelet does for projected tokens. */
const renewAtShare = 0.8;

export interface KubeletIdentity {
  namespace: string;
  name: string;
}

export interface MintedCredentialsOptions {
  client: Pick<KubeClient, 'createServiceAccountToken'>;
  identity: KubeletIdentity;
  now?: () => Date;
}

/**
 * The kubelet reader's credentials: a token minted for it, minted again once most of its life has
 * passed. One mint at a time; a mint that fails leaves the token held while it is still valid,
 * and says what to fix when there is none.
 */
export class MintedKubeletCredentials {
  private held: { minted: MintedToken; renewAt: number } | undefined;
  private minting: Promise<KubeletCredentials> | undefined;
  private readonly now: () => Date;
  private readonly o: MintedCredentialsOptions;

  constructor(o: MintedCredentialsOptions) {
    this.o = o;
    this.now = o.now ?? (() => new Date());
  }

  credentials = (): Promise<KubeletCredentials> => {
    const now = this.now().getTime();
    if (this.held && now < this.held.renewAt) return Promise.resolve({ token: this.held.minted.token });
    this.minting ??= this.mint(now).finally(() => (this.minting = undefined));
    return this.minting;
  };

  private async mint(now: number): Promise<KubeletCredentials> {
    const { namespace, name } = this.o.identity;
    try {
      const minted = await this.o.client.createServiceAccountToken(namespace, name, kubeletTokenSeconds);
      const life = minted.expiresAt.getTime() - now;
      this.held = { minted, renewAt: now + Math.max(0, life) * renewAtShare };
      return { token: minted.token };
    } catch (err) {
      // Still valid: read with it, and mint again at the next read.
      if (this.held && now < this.held.minted.expiresAt.getTime()) return { token: this.held.minted.token };
      throw new Error(explainMintFailure(this.o.identity, err), { cause: err });
    }
  }
}

/** One sentence for a token pvx could not mint: what is missing, and where it is granted. */
export function explainMintFailure(identity: KubeletIdentity, err: unknown): string {
  const who = `ServiceAccount ${identity.namespace}/${identity.name}`;
  if (err instanceof ApiError && err.code === 404) {
    return `${who}, the identity pvx reads the kubelets as, does not exist: create it (config/rbac/kubelet_usage_role.yaml, or the chart with usageSource kubelet), name another with --kubelet-identity, or run with --usage-source prometheus or none`;
  }
  if (err instanceof ApiError && err.code === 403) {
    return `pvx may not mint tokens for ${who}, the identity it reads the kubelets as: it needs create on serviceaccounts/token for it (Role pvx-kubelet-identity in ${identity.namespace}): ${err.message}`;
  }
  return `could not mint a token for ${who}, the identity pvx reads the kubelets as: ${err instanceof Error ? err.message : String(err)}`;
}
