// Usage from each node's kubelet stats summary (/stats/summary, read from the kubelet itself: see
// kubelet-client.ts), with bounded concurrency and a timeout per node. pvx's RBAC grants the
// nodes/stats get it needs only when this source is enabled.
import type { V1Node } from '@kubernetes/client-node';
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

interface Summary {
  pods?: { volume?: SummaryVolume[] }[];
}

/** The nodes worth asking: a node that is not Ready has a kubelet that would only time out. */
export const readyNodes = (nodes: readonly V1Node[]): V1Node[] =>
  nodes.filter((n) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));

export interface KubeletSourceOptions {
  kubelet: KubeletClient;
  /** The nodes to read (Ready ones, from the node cache): their addresses say where each kubelet listens. */
  nodes: () => V1Node[];
  /** Nodes read at once. Default 4. */
  concurrency?: number;
  /** Per-node timeout. Default 10 s. */
  timeoutMs?: number;
}

export class KubeletSummarySource implements UsageSource {
  readonly name = 'kubelet';
  readonly sampleTimes = 'measurement';
  private readonly o: Required<KubeletSourceOptions>;

  constructor(opts: KubeletSourceOptions) {
    this.o = { concurrency: 4, timeoutMs: 10_000, ...opts };
    if (!Number.isInteger(this.o.concurrency) || this.o.concurrency < 1)
      throw new TypeError(`concurrency must be a positive integer, got ${this.o.concurrency}`);
  }

  async collect(_now: Date): Promise<UsageReport> {
    const report: UsageReport = { samples: new Map(), errors: [] };
    const queue = [...this.o.nodes()];
    const worker = async () => {
      for (let node = queue.shift(); node !== undefined; node = queue.shift()) {
        try {
          const summary = (await withTimeout((signal) => this.o.kubelet.statsSummary(node, signal), this.o.timeoutMs, `node ${nodeName(node)}`)) as Summary;
          for (const [key, sample] of volumeSamples(summary)) {
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

/**
 * The samples of PVC-backed volumes in one summary, each dated with the time the kubelet measured
 * it (its `time`: the kubelet recomputes a pod's volume stats every 1–2 volumeStatsAggPeriods and
 * serves the latest in between, so the time of reading says nothing of the measurement's age).
 * Volumes without usage numbers, or without a readable time, are skipped: dated by the reading, a
 * measurement read twice would count twice.
 */
export function volumeSamples(summary: Summary): [string, UsageSample][] {
  const out: [string, UsageSample][] = [];
  for (const pod of summary.pods ?? []) {
    for (const v of pod.volume ?? []) {
      if (!v.pvcRef || v.usedBytes === undefined || v.capacityBytes === undefined || !v.time) continue;
      const at = new Date(v.time);
      if (Number.isNaN(at.getTime())) continue;
      out.push([
        `${v.pvcRef.namespace}/${v.pvcRef.name}`,
        { at, usedBytes: BigInt(Math.round(v.usedBytes)), capacityBytes: BigInt(Math.round(v.capacityBytes)), inodes: v.inodes, inodesUsed: v.inodesUsed },
      ]);
    }
  }
  return out;
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
