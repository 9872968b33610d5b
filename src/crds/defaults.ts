// Every default of pvx in one place: the expansion policies' rules, how pvx samples usage, and how
// `pvx run` runs. The decision (src/policies/autoscale/decide.ts), the read schedule
// (src/policies/autoscale/sampling.ts), the CRD's descriptions, the flag table (src/cli/commands.ts)
// and `pvx run --help` take them from here; the chart's values.yaml, the kustomize Deployment and
// the docs are held to them by test/unit/defaults.test.ts. At the bottom of the import graph with
// the schemas: it imports nothing of pvx.

/** 1 GiB in bytes (src/k8s/quantity.ts has the same constant; crds/ import nothing above them). */
const GiB = 1024n ** 3n;

export const policyDefaults = {
  /**
   * A threshold trigger fires once this many distinct measurements in a row breach it. Two: the
   * breach is seen again a refresh period of the source later (1–2 min at the kubelet's defaults),
   * so a spike that falls back before the next measurement raises nothing, and a level that holds
   * is acted on one period after it is first seen, not two.
   */
  sustainedSamples: 2,
  /** Wait this long after an expansion of a claim before the next (a volume about to fill excepted). */
  cooldownMs: 30 * 60_000,
  /** A newest measurement older than this is stale: the decision is "unknown". */
  staleAfterMs: 5 * 60_000,
  /** Growth per expansion: this percent of capacity, at least minStepBytes, rounded up to whole GiB. */
  stepPercent: 20,
  minStepBytes: GiB,
  /**
   * How long an expansion takes, from the decision to the new size usable by the application: the
   * request is validated and the claim patched (about a second), the CSI controller resizes the
   * volume (seconds; EBS's ModifyVolume reaches "optimizing", when the size is usable, within a
   * minute or so), and the kubelet grows the file system at its next sync of the pod (its
   * syncFrequency, 1 min by default) — about 2 min on cloud block storage — plus 1 min of margin.
   * The lead time of the fill-rate trigger is this plus the longest interval between the
   * measurements it read (the next measurement may come that late: the kubelet refreshes volume
   * stats every 1–2 volumeStatsAggPeriods, 1–2 min by default), so about 5 min at the kubelet's
   * defaults.
   */
  expansionMs: 3 * 60_000,
  /**
   * The fill-rate trigger reads at least this many distinct measurements (two intervals), each
   * interval growing: one jump between two measurements is never a fill.
   */
  fillMeasurements: 3,
  /** The least-squares forecast of spec.triggers.forecast needs this many measurements in its window. */
  forecastMinSamples: 5,
} as const;

export const samplingDefaults = {
  /**
   * The usage source's refresh period until the measurements show it: the kubelet's
   * volumeStatsAggPeriod default (each pod's volumes are measured again 1–2 periods after the last
   * time, the wait drawn at random: wait.JitterUntil with a jitter factor of 1.0).
   */
  refreshMs: 60_000,
  /** Read this long after a refresh is due, so the measurement (a du or a statfs) has finished. */
  settleMs: 2_000,
  /** Never read the source more often than this (unless --policy-interval is shorter). */
  minReadGapMs: 5_000,
  /** Recent intervals between measurements the refresh period is estimated from. */
  refreshIntervals: 8,
} as const;

/**
 * `pvx run`'s defaults, by flag, as the command line writes them. Flags that an environment
 * variable may also set take theirs in src/cli/run.ts (flag, then environment, then this).
 */
export const runDefaults = {
  /** How pvx talks to the API server: its own HTTP client when the credentials allow, else client-node. */
  'kube-client': 'auto',
  /** /metrics, over HTTPS behind the token review unless metrics-secure is false. */
  'metrics-bind-address': ':8443',
  'metrics-secure': 'true',
  /** /healthz and /readyz, plain HTTP. */
  'health-probe-bind-address': ':8081',
  'leader-elect': 'true',
  /** The Lease's name. */
  'leader-election-id': 'pvx-leader',
  'log-level': 'info',
  /** How long shutdown waits for reconciles in flight (the flag also takes plain seconds). */
  'drain-timeout': '30s',
  'usage-source': 'kubelet',
  /** The longest wait between two readings of usage and policy passes. */
  'policy-interval': '30s',
  /** How often the audit rules run over the cluster. */
  'audit-interval': '1m',
  /** A resize stage lasting longer is reported stuck (pvx audit's --stuck-after too). */
  'audit-stuck-after': '15m',
  /** The client-side rate limit: requests per second, sustained, and at once above that. */
  // High enough that pvx's own limit does not hold a burst of requests back (1,000 at once cost
  // about 2,000 writes before their claims' patches): the API server's priority and fairness
  // protects it, and answers 429 with Retry-After, which pvx honours.
  'kube-api-qps': '500',
  'kube-api-burst': '1000',
} as const;
