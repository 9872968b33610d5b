// Usage from each node's kubelet stats summary (/stats/summary, read from the kubelet itself: see
// kubelet-client.ts, or through the API server for a person's commands), with bounded concurrency
// and a timeout per node. A node is believed only about the claims its own pods mount: a
// compromised node's kubelet that reported any claim as full would have pvx grow it.
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { UsageSample } from '../policies/autoscale/sampling.ts';
import type { KubeletClient } from '../k8s/client.ts';
import type { UsageReport, UsageSource } from './source.ts';

interface SummaryVolume {
  pvcRef?: { name: string; namespace: string };
  time?: string;
  capacityBytes?: number;
  usedBytes?: number;
  inodes?: number;
  inodesUsed?: number;
}

interface SummaryPod {
  podRef?: { name?: string; namespace?: string; uid?: string };
  volume?: SummaryVolume[];
}

interface Summary {
  pods?: SummaryPod[];
}

/** The nodes worth asking: a node that is not Ready has a kubelet that would only time out. */
export const readyNodes = (nodes: readonly V1Node[]): V1Node[] =>
  nodes.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));

export interface KubeletSourceOptions {
  kubelet: KubeletClient;
  /** The nodes to read (Ready ones, from the node cache): their addresses say where each kubelet listens. */
  nodes: () => V1Node[];
  /**
   * The pods as the API server has them (spec.nodeName, spec.volumes): a node's report of a claim
   * counts only for a pod scheduled there that mounts it. Absent: every report counts (a test's).
   */
  pods?: () => readonly V1Pod[];
  /** Nodes read at once. Default 4. */
  concurrency?: number;
  /** Per-node timeout. Default 10 s. */
  timeoutMs?: number;
}

export class KubeletSummarySource implements UsageSource {
  readonly name = 'kubelet';
  readonly sampleTimes = 'measurement';
  private readonly o: Required<Omit<KubeletSourceOptions, 'pods'>> & Pick<KubeletSourceOptions, 'pods'>;

  constructor(opts: KubeletSourceOptions) {
    this.o = { concurrency: 4, timeoutMs: 10_000, ...opts };
    if (!Number.isInteger(this.o.concurrency) || this.o.concurrency < 1)
      throw new TypeError(`concurrency must be a positive integer, got ${this.o.concurrency}`);
  }

  async collect(_now: Date): Promise<UsageReport> {
    const report: UsageReport = { samples: new Map(), errors: [] };
    const mounts = this.o.pods ? claimsByPod(this.o.pods()) : undefined;
    const queue = [...this.o.nodes()];
    const worker = async () => {
      for (let node = queue.shift(); node !== undefined; node = queue.shift()) {
        try {
          const summary = (await withTimeout((signal) => this.o.kubelet.statsSummary(node, signal), this.o.timeoutMs, `node ${nodeName(node)}`)) as Summary;
          const { samples, disowned } = volumeSamples(summary, mounts && ((pod) => mounts.get(podKey(pod))?.on(nodeName(node))));
          if (disowned.length > 0) report.errors.push({ target: nodeName(node), message: disownedMessage(disowned) });
          for (const [key, sample] of samples) {
            // A claim mounted by two pods is measured by each on its own schedule: the newer counts.
            const held = report.samples.get(key);
            if (!held || held.at.getTime() < sample.at.getTime()) report.samples.set(key, sample);
          }
        } catch (err) {
          report.errors.push({ target: nodeName(node), message: err instanceof Error ? err.message : String(err) });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.o.concurrency, queue.length) }, worker));
    return report;
  }
}

const nodeName = (node: V1Node): string => node.metadata?.name ?? '(unnamed)';

/** A pod as the API server has it: the node it is scheduled to, and the claims it mounts. */
interface PodMounts {
  on(node: string): ReadonlySet<string> | undefined;
}

const podKey = (ref: SummaryPod['podRef']): string => `${ref?.namespace}/${ref?.name}/${ref?.uid}`;

/** Each pod (namespace/name/uid) with the claims it mounts, on the node it is scheduled to only. */
function claimsByPod(pods: readonly V1Pod[]): Map<string, PodMounts> {
  const out = new Map<string, PodMounts>();
  for (const p of pods) {
    const claims = new Set(
      (p.spec?.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [`${p.metadata?.namespace}/${v.persistentVolumeClaim.claimName}`] : [])),
    );
    const node = p.spec?.nodeName;
    out.set(podKey({ namespace: p.metadata?.namespace, name: p.metadata?.name, uid: p.metadata?.uid }), { on: (n) => (n === node ? claims : undefined) });
  }
  return out;
}

function disownedMessage(claims: readonly string[]): string {
  const shown = claims.slice(0, 5).join(', ');
  return `reported usage of ${claims.length === 1 ? 'claim' : 'claims'} ${shown}${claims.length > 5 ? ` and ${claims.length - 5} more` : ''} that no pod scheduled to it mounts, as the API server has the pods: not believed`;
}

/**
 * The samples of PVC-backed volumes in one summary, each dated with the time the kubelet measured
 * it (its `time`: the kubelet recomputes a pod's volume stats every 1–2 volumeStatsAggPeriods and
 * serves the latest in between, so the time of reading says nothing of the measurement's age).
 * Volumes without usage numbers, or without a readable time, are skipped: dated by the reading, a
 * measurement read twice would count twice. With `claimsOf` (the claims the API server has the
 * summary's pod mount on this node), a volume of a claim its pod does not mount there is
 * `disowned`, not a sample.
 */
export function volumeSamples(
  summary: Summary,
  claimsOf?: (pod: SummaryPod['podRef']) => ReadonlySet<string> | undefined,
): { samples: [string, UsageSample][]; disowned: string[] } {
  const out: [string, UsageSample][] = [];
  const disowned = new Set<string>();
  for (const pod of summary.pods ?? []) {
    const mounted = claimsOf?.(pod.podRef);
    for (const v of pod.volume ?? []) {
      if (!v.pvcRef || v.usedBytes === undefined || v.capacityBytes === undefined || !v.time) continue;
      const key = `${v.pvcRef.namespace}/${v.pvcRef.name}`;
      if (claimsOf && (v.pvcRef.namespace !== pod.podRef?.namespace || !mounted?.has(key))) {
        disowned.add(key);
        continue;
      }
      const at = new Date(v.time);
      if (Number.isNaN(at.getTime())) continue;
      out.push([
        key,
        { at, usedBytes: BigInt(Math.round(v.usedBytes)), capacityBytes: BigInt(Math.round(v.capacityBytes)), inodes: v.inodes, inodesUsed: v.inodesUsed },
      ]);
    }
  }
  return { samples: out, disowned: [...disowned] };
}

/** The call's answer, or an error after `ms`, when the call's signal fires so that it stops (and closes its connection). */
function withTimeout<T>(call: (signal: AbortSignal) => Promise<T>, ms: number, what: string): Promise<T> {
  const controller = new AbortController();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`${what}: no answer within ${ms} ms`));
      controller.abort();
    }, ms);
    call(controller.signal).then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}
