// Where volume usage comes from. A source returns what it could read and, separately, what failed:
// one unreachable node or a slow Prometheus never aborts a pass, and a PVC without a sample is
// "unknown" to the policies, never "empty".
import type { SampleTimes, UsageSample } from '../policies/autoscale/sampling.ts';

export interface UsageReport {
  /** Latest sample per PVC, keyed "namespace/name", dated when it was measured. */
  samples: Map<string, UsageSample>;
  errors: { target: string; message: string }[];
}

/** What a reader needs beyond bytes: a source that reads each figure apart skips what is not needed. */
export interface UsageWanted {
  /** Inode counts (default true): only an inode trigger reads them. */
  inodes?: boolean;
}

export interface UsageSource {
  readonly name: string;
  /** What its samples' times are (default 'measurement'): see src/policies/autoscale/sampling.ts. */
  readonly sampleTimes?: SampleTimes;
  collect(now: Date, wanted?: UsageWanted): Promise<UsageReport>;
}
