// Why a claim does not grow: every gate a claim passes on its way to a bigger volume, in the order
// it meets them, each passed, holding, not applicable or unknown, with the evidence and what the
// user can do — and the first gate that holds, for `pvx why` and for the operator's
// pvx_claims_held gauge. Pure: a snapshot of the objects, the usage samples and the clock in.
//
// The gates are one ordered table (gateTable): each entry its id, when it holds, what it is judged by
// and what it reads, and its judge; every claim's chain walks the whole table, so a new gate is one
// entry there (and a row in docs/troubleshooting.md, which test/unit/docs.test.ts holds to it).
//
// It decides nothing of its own: each gate is the verdict of the function the operator decides
// with — the request validation's checks (src/policies/request/validation.ts), the autoscale decision's
// stages (src/policies/autoscale/decide.ts, through the policy pass's own input of a claim), the driver
// budget (src/policies/budget/budget.ts), the request's phase (src/policies/request/phase.ts) — so `why` cannot disagree with what pvx does.
import type { CoreV1Event, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { kubernetesAnnotations } from '../../crds/keys.ts';
import type { VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { QuantityError, formatBytes, humanBytes, readBytes } from '../../k8s/quantity.ts';
import { objectKey, resources, volumeExpansionPolicies, clusterVolumeExpansionPolicies } from '../../k8s/resources.ts';
import { auditContext, auditRules, driftRemedy, type AuditContext, type AuditSnapshot, type GoverningPolicy, type RuleId } from '../audit/rules.ts';
import {
  autoscaleSpec,
  cooldownState,
  stepCap,
  triggerReading,
  usageReading,
  type AutoscaleInput,
  type AutoscaleSpec,
  type TriggerReading,
} from '../autoscale/decide.ts';
import { budgetText, claimModifications, spendsBudget } from '../budget/budget.ts';
import { driverError, type DriverError, type DriverProfile, type DriverProfiles } from '../budget/drivers.ts';
import { humanDuration } from '../shared/duration.ts';
import { policyDefaults } from '../../crds/defaults.ts';
import { derivePhase, isFinished } from '../request/phase.ts';
import { awaitingApproval } from '../request/plan.ts';
import { claimAutoscaleInput, claimSizes } from '../autoscale/policy-pass.ts';
import {
  errorConditions,
  kubeletRefusedInUse,
  nodeExpansionNotRequired,
  preResizeCapacity,
  resizeState,
  resizeUnderway,
  toDate,
  trueCondition,
} from '../claim/resize.ts';
import { targetBytes } from '../request/sizing.ts';
import { isStatefulSetClaim } from '../claim/statefulset.ts';
import { budgetCheck, bindingCheck, clusterGuardrails, driverLimitCheck, guardrailCheck, quotaCheck, storageClassCheck } from '../request/validation.ts';
import { WindowError, windowState } from '../autoscale/windows.ts';
import type { UsageSample } from '../autoscale/sampling.ts';

/**
 * Where a gate stands in the chain, which decides whether it is judged for a claim: the trigger
 * gates only when a policy drives the claim and no resize is under way already, the limits only
 * before the claim is patched (see stageVerdict); the others always.
 */
export type Stage = 'claim' | 'driver' | 'trigger' | 'limits' | 'request' | 'resize';

/** One gate of the chain: its stable id, when it holds and by what it is judged (docs/troubleshooting.md shows both), what it reads, and how. */
export interface GateSpec {
  id: string;
  stage: Stage;
  /** When it holds the claim, in words. */
  holds: string;
  /** The decision of pvx's it is judged by: `why` decides nothing of its own. */
  judgedBy: string;
  /** The objects and readings it looks at. */
  reads: string;
  judge(c: Chain): Gate;
}

/**
 * The gates, in the order a claim meets them: every path of `pvx why` and the operator's
 * pvx_claims_held gauge walk this table, so a gate is one entry here. Ids are stable (JSON output,
 * the gauge's `gate` label).
 */
export const gateTable = [
  {
    id: 'storage-class',
    stage: 'claim',
    holds: "no class, a missing class, `allowVolumeExpansion` not true, or a guardrail's `allowedStorageClasses`",
    judgedBy: "the request validation's class and guardrail checks",
    reads: 'the StorageClass, the cluster guardrails, the driver profile',
    judge: (c) => storageClassGate(c.f),
  },
  {
    id: 'binding',
    stage: 'claim',
    holds: 'the claim is not Bound, its PV is gone, or its size cannot be read',
    judgedBy: "the request validation's binding check",
    reads: 'the claim and its PersistentVolume',
    judge: (c) => bindingGate(c.f),
  },
  {
    id: 'policy',
    stage: 'driver',
    holds: 'no policy with triggers selects it (or only a DryRun one) and no request is open',
    judgedBy: "the policies' selection (`governingPolicies`)",
    reads: 'the VolumeExpansionPolicies and ClusterVolumeExpansionPolicies, the requests',
    judge: (c) => c.policyGate,
  },
  {
    id: 'usage',
    stage: 'trigger',
    holds: "no fresh measurement (unknown): no pod mounts it (the kubelet reports nothing), stale, another filesystem's figures",
    judgedBy: "the autoscale decision's usage reading",
    reads: 'the usage samples, the pods',
    judge: (c) => c.usage().gate,
  },
  {
    id: 'threshold',
    stage: 'trigger',
    holds: 'under every trigger of the policy, not filling fast enough',
    judgedBy: "the autoscale decision's trigger reading",
    reads: "the usage samples, the policy's triggers",
    judge: thresholdGate,
  },
  {
    id: 'cooldown',
    stage: 'trigger',
    holds: "the policy's cooldown since the last expansion runs",
    judgedBy: "the autoscale decision's cooldown",
    reads: "the claim's requests, the policy's cooldown",
    judge: cooldownGate,
  },
  {
    id: 'window',
    stage: 'trigger',
    holds: "outside the policy's maintenance windows",
    judgedBy: '`windowState`',
    reads: "the policy's windows, the clock",
    judge: windowGate,
  },
  {
    id: 'max-size',
    stage: 'limits',
    holds: "at the policy's maximum, a guardrail's, or the largest volume the driver makes",
    judgedBy: "the decision's step cap, the validation's guardrail and driver-limit checks",
    reads: 'the policy, the guardrails, the StorageClass and driver profile',
    judge: maxSizeGate,
  },
  {
    id: 'budget',
    stage: 'limits',
    holds: "the driver's modification budget is spent (the claim's `pvx.dev/modifications` ledger and pvx's requests)",
    judgedBy: "the validation's budget check",
    reads: "the claim's ledger, its requests, the driver profile",
    judge: budgetGate,
  },
  {
    id: 'quota',
    stage: 'limits',
    holds: 'a ResourceQuota would refuse the next size',
    judgedBy: "the validation's quota check",
    reads: "the namespace's ResourceQuotas",
    judge: quotaGate,
  },
  {
    id: 'request',
    stage: 'request',
    holds: 'the open request (or the one asked about) has no status (no operator), waits (approval, a wait reason), or was rejected or failed',
    judgedBy: "the request's status",
    reads: 'the request',
    judge: (c) => requestGate(c.f, c.driver, c.asked),
  },
  {
    id: 'resizer',
    stage: 'resize',
    holds: 'the controller stage has not finished: not taken up, in progress, `ControllerResizeError`, infeasible',
    judgedBy: "the request reconciler's phase (`derivePhase`), with the claim's conditions and Events",
    reads: "the claim's status, conditions and Events",
    judge: (c) => c.resize()[0],
  },
  {
    id: 'node-stage',
    stage: 'resize',
    holds: '`FileSystemResizePending`/`NodeResizePending`: no running pod mounts the claim, or the kubelet is at it or failing',
    judgedBy: 'the same phase, with the running pods',
    reads: "the claim's status, the pods that mount it, its Events",
    judge: (c) => c.resize()[1],
  },
] as const satisfies readonly GateSpec[];

export type GateId = (typeof gateTable)[number]['id'];
/** The gates' ids, in the chain's order. */
export const gateIds: readonly GateId[] = gateTable.map((g) => g.id);

export const gateStates = ['passed', 'holding', 'not-applicable', 'unknown'] as const;
export type GateState = (typeof gateStates)[number];

export interface Gate {
  gate: GateId;
  state: GateState;
  /** What was seen, with the figures and times. */
  evidence: string;
  /** What the user can do, for a gate that holds or is unknown. */
  next?: string;
  /** ISO time the gate's condition began, when known. */
  since?: string;
  /** ISO time the gate stops holding by itself, when known (cooldown, window, budget). */
  until?: string;
}

export interface WhyReport {
  namespace: string;
  pvc: string;
  /** The request the chain is seen from (`pvx why ver/NAME`), or the claim's open request. */
  request?: string;
  /** The policy whose chain is shown, when a policy drives the claim. */
  policy?: string;
  gates: Gate[];
  /** The first gate that holds the claim (holding or unknown); none: nothing holds it. */
  heldBy?: GateId;
  /** The one next step the user can take. */
  next: string;
  /**
   * A claim of a StatefulSet whose volumeClaimTemplate asks for less than it does: new replicas
   * start smaller (the audit's statefulset-size-drift), and what to do about it. Not a gate: it
   * holds nothing of this claim.
   */
  template?: string;
}

export interface WhyOptions {
  now: Date;
  profiles?: DriverProfiles;
  /** The claim's usage measurements, oldest first; default: the snapshot's newest sample. */
  samples?: (key: string) => readonly UsageSample[];
  /** Where usage comes from ('kubelet', 'prometheus'); undefined: no usage source. */
  usageSource?: string;
  /** When the claim's capacity was last seen to change (measurements before describe the old volume). */
  lastCapacityChangeAt?: (key: string) => Date | undefined;
  /** Caps every policy's sustainedSamples: a one-off reading judges thresholds on the samples it took. */
  sustainedSamples?: number;
  /** Kinds (plural resource names) the reader may not list: their absence proves nothing. */
  unreadable?: ReadonlySet<string>;
}

export interface WhyInput extends WhyOptions {
  snapshot: AuditSnapshot;
  claim: V1PersistentVolumeClaim;
  /** `pvx why ver/NAME`: the request the chain is seen from. */
  request?: VolumeExpansionRequest;
  /** The claim's Events, when read (the resizer's and kubelet's own words). */
  events?: readonly CoreV1Event[];
}

const iso = (d: Date | undefined): string | undefined => d?.toISOString().replace(/\.000Z$/, 'Z');
const remedy = (id: RuleId): string => auditRules.find((r) => r.id === id)?.remedy ?? '';
const gate = (id: GateId, state: GateState, evidence: string, extra: Partial<Omit<Gate, 'gate' | 'state' | 'evidence'>> = {}): Gate => ({
  gate: id,
  state,
  evidence,
  ...Object.fromEntries(Object.entries(extra).filter(([, v]) => v !== undefined)),
});
const notApplicable = (id: GateId, evidence: string) => gate(id, 'not-applicable', evidence);
const stops = (g: Gate) => g.state === 'holding' || g.state === 'unknown';
const policyName = (p: GoverningPolicy) => `${p.kind === 'VolumeExpansionPolicy' ? 'vep' : 'cvep'}/${p.name}`;

/**
 * The gate, or — when a quantity it needs cannot be read (the claim's, its class's, a quota's) —
 * the gate unknown, naming it: one unreadable object never stops the chain.
 */
function readable(id: GateId, fn: () => Gate): Gate {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof QuantityError)) throw err;
    return gate(id, 'unknown', `pvx cannot read a quantity it needs: ${err.message}`, { next: remedy('claim-unreadable') });
  }
}

/**
 * The policy's triggers in words: "used ≥ 80%, less than 2Gi free (in 2 measurements in a row)" —
 * the count the policy asks for, and, when a one-off reading judges on fewer (--samples), that too.
 */
function triggerText(spec: AutoscaleSpec, policy: GoverningPolicy): string {
  const asked = policy.spec.triggers?.sustainedSamples ?? policyDefaults.sustainedSamples;
  const judged = spec.sustainedSamples ?? asked;
  const inARow = `in ${asked} measurement${asked === 1 ? '' : 's'} in a row${judged < asked ? `; judged here on the ${judged} reading${judged === 1 ? '' : 's'} taken (--samples)` : ''}`;
  const parts = [
    spec.usedRatio !== undefined ? `used ≥ ${Math.round(spec.usedRatio * 100)}%` : '',
    spec.inodesRatio !== undefined ? `inodes used ≥ ${Math.round(spec.inodesRatio * 100)}%` : '',
    spec.minFreeBytes !== undefined ? `less than ${formatBytes(spec.minFreeBytes)} free` : '',
    spec.forecast ? `forecast full within ${humanDuration(spec.forecast.horizonMs)}` : '',
  ].filter(Boolean);
  return `${parts.join(', ') || 'the fill-rate forecast only'} (${inARow})`;
}

/**
 * What drives the claim's growth: an open request (or the one asked about), or a policy's decision.
 * `step`: neither, and the question is whether the claim could grow at all (pvx df): the limits
 * are judged for the step a policy of the defaults would take.
 */
type Driver =
  | { kind: 'request'; request: VolumeExpansionRequest }
  | { kind: 'policy'; policy: GoverningPolicy; spec: AutoscaleSpec; autoscale: AutoscaleInput }
  | { kind: 'step'; autoscale: AutoscaleInput }
  | { kind: 'none' };

interface ClaimFacts {
  ctx: AuditContext;
  input: WhyInput;
  pvc: V1PersistentVolumeClaim;
  name: string;
  namespace: string;
  driver: DriverProfile;
  capacity?: bigint;
  requested?: bigint;
  requests: VolumeExpansionRequest[];
  guardrails: ReturnType<typeof clusterGuardrails>;
  mounted: string[];
}

// --- the gates before a request ----------------------------------------------------------------

function storageClassGate(f: ClaimFacts): Gate {
  const { pvc, name, ctx } = f;
  const className = pvc.spec?.storageClassName;
  const sc = ctx.storageClass(className);
  if (className && !sc && f.input.unreadable?.has(resources.storageClasses.resource))
    return gate('storage-class', 'unknown', `not allowed to list StorageClasses: cannot tell whether ${className} allows expansion`, {
      next: 'ask for read access to storageclasses (storage.k8s.io), or run pvx why as a user who has it',
    });
  const refusal = storageClassCheck(pvc, sc, name) ?? (className ? guardrailCheck(f.guardrails, className, 0n, undefined) : undefined);
  if (refusal) {
    const next =
      refusal.reason === 'GuardrailStorageClass'
        ? `move the data to a claim of a class the guardrail allows, or ask the cluster's admins to allow ${className}`
        : remedy('class-not-expandable');
    return gate('storage-class', 'holding', `${refusal.message} (${refusal.reason})`, { next });
  }
  const max = sc ? f.driver.maxBytes(sc.parameters ?? {}) : undefined;
  const budget = f.driver.modificationBudget;
  const limits = [max !== undefined ? `largest volume ${formatBytes(max)}` : '', budget ? budgetText(budget) : ''].filter(Boolean).join(', ');
  return gate('storage-class', 'passed', `${className} (${sc?.provisioner}) allows expansion${limits ? `; driver limits: ${limits}` : ''}`);
}

function bindingGate(f: ClaimFacts): Gate {
  const { pvc, name, ctx } = f;
  const unbound = bindingCheck(pvc, name);
  if (unbound)
    return gate('binding', 'holding', unbound.message, {
      next: `wait for ${name} to be bound (kubectl describe pvc ${name} -n ${f.namespace} says what its provisioning waits for)`,
    });
  const sizes = claimSizes(pvc);
  if ('unreadable' in sizes) return gate('binding', 'unknown', `pvx cannot read the claim's size: ${sizes.unreadable}`, { next: remedy('claim-unreadable') });
  if (pvc.status?.capacity?.storage === undefined)
    return gate('binding', 'unknown', `${name} reports no status.capacity.storage`, {
      next: `read kubectl get pvc ${name} -n ${f.namespace} -o yaml: a Bound claim reports its capacity`,
    });
  const volume = pvc.spec?.volumeName;
  const pv = ctx.persistentVolume(volume);
  if (!pv) {
    if (f.input.unreadable?.has(resources.persistentVolumes.resource))
      return gate('binding', 'passed', `Bound to ${volume} (capacity ${formatBytes(sizes.capacityBytes)}; PersistentVolumes not readable)`);
    return gate('binding', 'holding', `Bound to PersistentVolume ${volume ?? '(none)'}, which does not exist`, {
      next: `the claim has lost its volume: restore PersistentVolume ${volume} or move the data to a new claim`,
    });
  }
  return gate('binding', 'passed', `Bound to ${volume} (capacity ${formatBytes(sizes.capacityBytes)})`);
}

/** The policy gate and what drives the claim; the policy chosen is the one closest to growing it. */
function policyGate(f: ClaimFacts, subject: VolumeExpansionRequest | undefined): { gate: Gate; driver: Driver } {
  const governing = f.ctx.policiesFor(f.pvc);
  const { overlapping, unreadable } = f.ctx.otherPoliciesFor(f.pvc);
  if (subject) {
    const by = [...governing.filter((p) => p.spec.mode !== 'DryRun').map(policyName)];
    const also = by.length ? `; ${by.join(', ')} also select${by.length === 1 ? 's' : ''} it` : '';
    return {
      gate: gate('policy', 'passed', `request ver/${subject.metadata.name} asks for ${describeAsk(subject)}${also}`),
      driver: { kind: 'request', request: subject },
    };
  }
  const chosen = governing.find((p) => p.spec.mode !== 'DryRun' && p.spec.triggers);
  const spec = chosen && policySpec(chosen, f.input);
  if (!chosen || !spec) {
    if (unreadable.length > 0 && governing.length === 0) {
      const names = unreadable.map(policyName).join(', ');
      return {
        gate: gate('policy', 'unknown', `pvx cannot read the spec of ${names}: it decides nothing`, {
          next: `fix the spec of ${names} (its Ready condition and pvx plan say what cannot be read)`,
        }),
        driver: { kind: 'none' },
      };
    }
    const policiesUnreadable = [volumeExpansionPolicies, clusterVolumeExpansionPolicies].some((t) => f.input.unreadable?.has(t.resource));
    if (policiesUnreadable)
      return {
        gate: gate('policy', 'unknown', 'not allowed to list the expansion policies: cannot tell whether one selects the claim', {
          next: 'ask for read access to volumeexpansionpolicies and clustervolumeexpansionpolicies (pvx.dev)',
        }),
        driver: { kind: 'none' },
      };
    // Raised outside pvx: a change is asked for all the same; where it stands is in the resize's gates.
    if ((f.requested ?? 0n) > (f.capacity ?? 0n) || resizeUnderway(f.pvc)) {
      return {
        gate: notApplicable(
          'policy',
          `no policy or request: the claim's own request was raised outside pvx (requests ${formatBytes(f.requested ?? 0n)}, capacity ${formatBytes(f.capacity ?? 0n)})`,
        ),
        driver: { kind: 'none' },
      };
    }
    const dryRun = governing.filter((p) => p.spec.mode === 'DryRun');
    if (dryRun.length) {
      const names = dryRun.map(policyName).join(', ');
      return {
        gate: gate('policy', 'holding', `${names} selects it in DryRun mode: it reports, never grows`, {
          next: `set spec.mode Auto (or Approval) on ${names}, or grow ${f.name} with a VolumeExpansionRequest`,
        }),
        driver: { kind: 'none' },
      };
    }
    return {
      gate: gate('policy', 'holding', 'no VolumeExpansionPolicy or ClusterVolumeExpansionPolicy with triggers selects it, and no request for it is open', {
        next: `create a VolumeExpansionPolicy in ${f.namespace} that selects ${f.name}, or grow it now with a VolumeExpansionRequest`,
      }),
      driver: { kind: 'none' },
    };
  }
  const autoscale = autoscaleInputOf(f, spec);
  const others = overlapping.map(policyName);
  const also = others.length
    ? `; ${others.join(', ')} select${others.length === 1 ? 's' : ''} it too and leave${others.length === 1 ? 's' : ''} it to ${policyName(chosen)} (the oldest policy that acts governs a claim)`
    : '';
  const evidence = `${policyName(chosen)} selects it (mode ${chosen.spec.mode ?? 'Auto'}; triggers: ${triggerText(spec, chosen)})${also}`;
  return { gate: gate('policy', 'passed', evidence), driver: autoscale ? { kind: 'policy', policy: chosen, spec, autoscale } : { kind: 'none' } };
}

/** The policy's autoscale spec as the policy pass reads it; undefined when it cannot be read (the pass decides nothing for it either). */
function policySpec(p: GoverningPolicy, input: WhyInput): AutoscaleSpec | undefined {
  let spec: AutoscaleSpec;
  try {
    spec = autoscaleSpec({ ...p.spec, triggers: p.spec.triggers ?? {} });
  } catch {
    return undefined;
  }
  if (input.sustainedSamples !== undefined) spec.sustainedSamples = Math.min(spec.sustainedSamples ?? 1, input.sustainedSamples);
  return spec;
}

function autoscaleInputOf(f: ClaimFacts, spec: AutoscaleSpec): AutoscaleInput | undefined {
  const key = objectKey(f.pvc);
  const samples = f.input.samples?.(key) ?? (f.input.snapshot.usage?.get(key) ? [f.input.snapshot.usage.get(key) as UsageSample] : []);
  const input = claimAutoscaleInput(spec, f.pvc, {
    requests: f.requests,
    storageClass: f.ctx.storageClass(f.pvc.spec?.storageClassName),
    samples,
    lastCapacityChangeAt: f.input.lastCapacityChangeAt?.(key),
    now: f.input.now,
    profiles: f.ctx.profiles,
  });
  return 'unreadable' in input ? undefined : input;
}

function describeAsk(r: VolumeExpansionRequest): string {
  const size = r.spec.size ?? (r.spec.increment ? `+${r.spec.increment}` : undefined);
  const vac = r.spec.volumeAttributesClassName ? `VolumeAttributesClass ${r.spec.volumeAttributesClassName}` : undefined;
  return [size, vac].filter(Boolean).join(' and ') || 'a change';
}

/** The policy that drives the claim: the trigger gates are judged only when one does (stageVerdict). */
function drivenBy(c: Chain): Extract<Driver, { kind: 'policy' }> {
  if (c.driver.kind !== 'policy') throw new Error(`a trigger gate judged without a policy (${c.driver.kind})`);
  return c.driver;
}

/** The usage gate: the autoscale decision's reading of the claim's measurements. */
function usageGate(c: Chain, usage: ReturnType<typeof usageReading>): Gate {
  if (usage.kind === 'unknown') return usageUnknown(c.f, usage.reason, usage.message);
  const { newest } = usage;
  return gate(
    'usage',
    'passed',
    `measured at ${iso(newest.at)} by ${c.f.input.usageSource ?? 'the usage source'}: ${humanBytes(newest.usedBytes)} of ${humanBytes(newest.capacityBytes)} used`,
  );
}

function thresholdGate(c: Chain): Gate {
  const t = c.trigger();
  if (!t) return gate('threshold', 'unknown', 'no usage to judge the triggers by', { next: c.usage().gate.next });
  const { spec, policy } = drivenBy(c);
  if (t.trigger) return gate('threshold', 'passed', `${t.why} (${t.detail})`);
  return gate('threshold', 'holding', `${t.detail}: under every trigger of ${policyName(policy)}: ${triggerText(spec, policy)}`, {
    next: `nothing to do: ${c.f.name} grows once a trigger of ${policyName(policy)} fires (pvx plan shows the figures as they change)`,
  });
}

function cooldownGate(c: Chain): Gate {
  const { autoscale, spec, policy } = drivenBy(c);
  const cooling = cooldownState(autoscale, c.trigger()?.imminent ?? false);
  const cooldown = humanDuration(spec.cooldownMs ?? 0);
  if (cooling?.holds) {
    return gate(
      'cooldown',
      'holding',
      `last expansion ${iso(autoscale.lastExpansionAt)}, cooldown ${cooldown}, next allowed ${iso(cooling.until)}${autoscale.lastRequestRefused ? ' (the last request was refused: the cooldown holds whatever the forecast)' : ''}`,
      {
        next: `wait until ${iso(cooling.until)}, or shorten spec.cooldown of ${policyName(policy)}`,
        since: iso(autoscale.lastExpansionAt),
        until: iso(cooling.until),
      },
    );
  }
  if (cooling) return gate('cooldown', 'passed', `cooling down until ${iso(cooling.until)}, which does not hold back a volume about to fill`);
  return gate(
    'cooldown',
    'passed',
    autoscale.lastExpansionAt ? `last expansion ${iso(autoscale.lastExpansionAt)}, cooldown ${cooldown} over` : 'no expansion yet',
  );
}

function usageUnknown(f: ClaimFacts, reason: string, message: string): Gate {
  if (!f.input.usageSource)
    return gate('usage', 'unknown', 'no usage source: usage unknown', {
      next: 'read usage from the kubelet or Prometheus (pvx why --usage kubelet|prometheus; pvx run --usage-source)',
    });
  if (reason === 'CapacityMismatch')
    return gate('usage', 'unknown', message, { next: "read usage from a source that measures the volume itself: the figures seen are another filesystem's" });
  if (reason === 'NoSamples' && f.input.usageSource === 'kubelet' && f.mounted.length === 0) {
    return gate('usage', 'unknown', 'the kubelet reports no stats for unmounted volumes: no running pod mounts the claim', {
      next: `start a pod that mounts ${f.name}, or read usage from Prometheus (--usage prometheus)`,
    });
  }
  return gate('usage', 'unknown', `${message} (from ${f.input.usageSource})`, {
    next: `check that ${f.input.usageSource} reports ${f.namespace}/${f.name} (pvx plan warns about the usage source's errors)`,
  });
}

function windowGate(c: Chain): Gate {
  const { spec, policy } = drivenBy(c);
  const pName = policyName(policy);
  const now = c.f.input.now;
  const windows = spec.windows ?? [];
  if (windows.length === 0) return notApplicable('window', `${pName} has no maintenance window: any time`);
  const list = windows.map((w) => `"${w.schedule}"${w.timeZone ? ` ${w.timeZone}` : ''} for ${humanDuration(w.durationMs)}`).join(', ');
  try {
    const w = windowState(windows, now);
    if (w.open) return gate('window', 'passed', `inside a maintenance window (${list})`);
    return gate('window', 'holding', `outside the maintenance windows (${list}); the next opens at ${iso(w.nextOpen) ?? '(never)'}`, {
      next: `wait until ${iso(w.nextOpen) ?? 'a window opens'}, or change spec.windows of ${pName}`,
      until: iso(w.nextOpen),
    });
  } catch (err) {
    if (!(err instanceof WindowError)) throw err;
    return gate('window', 'unknown', err.message, { next: `fix spec.windows of ${pName}` });
  }
}

/** The size the next change asks for: the request's target, or the policy's next step; undefined once patched. */
function nextTarget(f: ClaimFacts, driver: Driver): { target?: bigint; why: string } | undefined {
  if (f.capacity === undefined) return undefined;
  if (driver.kind === 'request') {
    const r = driver.request;
    if (r.spec.size === undefined && r.spec.increment === undefined) return { why: `ver/${r.metadata.name} changes only the VolumeAttributesClass` };
    const sized = targetBytes(r.spec, f.capacity);
    return sized.ok ? { target: sized.bytes, why: `ver/${r.metadata.name}` } : { why: sized.message };
  }
  if (driver.kind === 'policy') return { target: stepCap(driver.autoscale).step, why: `${policyName(driver.policy)}'s next step` };
  if (driver.kind === 'step') return { target: stepCap(driver.autoscale).step, why: "a policy's default step" };
  return undefined;
}

function maxSizeGate(c: Chain): Gate {
  const { f, driver } = c;
  const { target, why: asker } = c.next();
  if (f.capacity === undefined) return notApplicable('max-size', asker);
  const capacity = f.capacity;
  if (driver.kind === 'policy' || driver.kind === 'step') {
    const cap = stepCap(driver.autoscale);
    if (cap.step <= capacity) {
      const policy = driver.kind === 'policy' ? policyName(driver.policy) : 'the policy';
      const which = cap.driverCaps ? `the largest volume ${f.driver.name} makes for its class` : `${policy}'s maximum size`;
      const next = cap.driverCaps ? `move the data to a class whose volumes may be larger` : `raise spec.maxSize of ${policy}`;
      return gate('max-size', 'holding', `at ${which} ${formatBytes(cap.maxBytes ?? capacity)} (capacity ${formatBytes(capacity)})`, { next });
    }
  }
  if (target === undefined) return notApplicable('max-size', asker);
  const sc = f.ctx.storageClass(f.pvc.spec?.storageClassName);
  const className = f.pvc.spec?.storageClassName ?? '';
  const refusal = guardrailCheck(f.guardrails, className, capacity, target) ?? (sc ? driverLimitCheck(f.driver, sc, className, target) : undefined);
  if (refusal) {
    const next =
      refusal.reason === 'ExceedsDriverLimit'
        ? 'ask for a size the driver makes, or move the data to a class with larger volumes'
        : "ask for a size within the guardrail, or ask the cluster's admins to raise it";
    return gate('max-size', 'holding', `${asker} ${formatBytes(capacity)} → ${formatBytes(target)}: ${refusal.message} (${refusal.reason})`, { next });
  }
  return gate('max-size', 'passed', `${asker} ${formatBytes(capacity)} → ${formatBytes(target)} is within every maximum (policy, guardrails, driver)`);
}

function budgetGate(c: Chain): Gate {
  const { f, driver } = c;
  if (driver.kind === 'none') return notApplicable('budget', 'no change is asked for');
  // The request that drives the claim is the change itself, not one that spent the budget.
  const others = driver.kind === 'request' ? f.requests.filter((r) => r.metadata.uid !== driver.request.metadata.uid) : f.requests;
  const budget = f.driver.modificationBudget;
  if (!budget) return notApplicable('budget', `${f.driver.name} has no modification budget pvx knows of`);
  const change = { performance: driver.kind === 'request' && driver.request.spec.volumeAttributesClassName !== undefined };
  if (!spendsBudget(budget, change)) return notApplicable('budget', `${f.driver.name} allows ${budgetText(budget)}; a change of size alone spends none`);
  const modifications = claimModifications(f.pvc, budget, others, f.input.now);
  const spent = budgetCheck(f.driver, f.name, modifications, f.input.now, change);
  if (!spent)
    return gate(
      'budget',
      'passed',
      `${modifications.filter((m) => m.at.getTime() > f.input.now.getTime() - budget.windowMs).length} of ${budgetText(budget)} spent in the window`,
    );
  const until = new Date(f.input.now.getTime() + spent.retryAfterMs);
  return gate('budget', 'holding', spent.message, {
    next: `wait until ${iso(until)}; if ${f.name} may fill sooner, free space in it or move load off it`,
    until: iso(until),
  });
}

function quotaGate(c: Chain): Gate {
  const { f } = c;
  const { target, why: asker } = c.next();
  if (target === undefined) return notApplicable('quota', asker);
  const quotas = f.ctx.quotasIn(f.namespace);
  if (quotas.length === 0 && f.input.unreadable?.has(resources.resourceQuotas.resource))
    return gate('quota', 'unknown', `not allowed to list ResourceQuotas in ${f.namespace}`, { next: 'ask for read access to resourcequotas in the namespace' });
  const refusal = quotaCheck(f.pvc, f.name, target, quotas);
  if (refusal) return gate('quota', 'holding', refusal.message, { next: remedy('quota-headroom') });
  return gate(
    'quota',
    'passed',
    quotas.length
      ? `room for ${formatBytes(target)} in ${quotas.map((q) => `ResourceQuota ${q.metadata?.name}`).join(', ')}`
      : `no ResourceQuota in ${f.namespace}`,
  );
}

// --- the gates after the claim is patched ------------------------------------------------------

function requestGate(f: ClaimFacts, driver: Driver, asked: boolean): Gate {
  if (driver.kind !== 'request') {
    if (f.requested !== undefined && f.capacity !== undefined && f.requested > f.capacity)
      return notApplicable(
        'request',
        `no request is open: ${f.name} was resized outside pvx (requests ${formatBytes(f.requested)}, capacity ${formatBytes(f.capacity)})`,
      );
    return notApplicable(
      'request',
      driver.kind === 'policy' ? `no request is open: ${policyName(driver.policy)} creates one when every gate above passes` : 'no request is open',
    );
  }
  const r = driver.request;
  const name = `ver/${r.metadata.name}`;
  const s = r.status;
  if (!s?.phase) {
    return gate('request', 'holding', `${name} has no status: pvx's operator has not taken it up`, {
      next: "start pvx's operator (pvx run, or its Helm chart), or check its log for this request",
      since: iso(toDate(r.metadata.creationTimestamp as unknown as string)),
    });
  }
  const said = `${name} is ${s.phase}${s.reason ? ` (${s.reason})` : ''}${s.message ? `: ${s.message}` : ''}`;
  const since = s.phaseSince;
  if (s.phase === 'Pending') {
    const approval = awaitingApproval(s);
    return gate('request', 'holding', said, {
      next: approval ? `pvx approve ${name} -n ${f.namespace}` : 'the request goes on by itself once the wait ends; its message says what it waits for',
      since,
    });
  }
  if (s.phase === 'Rejected' || s.phase === 'Failed') {
    return gate('request', 'holding', said, {
      next: asked ? `fix what the message says, then create a new request (a finished request is not retried)` : `create a new request once the cause is fixed`,
      since,
    });
  }
  return gate('request', 'passed', said, { since });
}

/** The claim's newest Event among those of the resizer and the kubelet, as evidence. */
function lastResizeEvent(events: readonly CoreV1Event[] | undefined): string {
  const newest = newestResizeEvent(events);
  if (!newest) return '';
  const { e, at } = newest;
  return `; last Event: ${e.type ?? ''} ${e.reason} "${e.message ?? ''}"${at ? ` at ${iso(at)}` : ''}${(e.count ?? 1) > 1 ? ` (×${e.count})` : ''}`;
}

function newestResizeEvent(events: readonly CoreV1Event[] | undefined): { e: CoreV1Event; at: Date | undefined } | undefined {
  const resize = /Resiz|Expand|FileSystem/i;
  return (events ?? [])
    .filter((e) => resize.test(e.reason ?? ''))
    .map((e) => ({ e, at: toDate((e.lastTimestamp ?? e.series?.lastObservedTime ?? e.eventTime ?? e.metadata?.creationTimestamp) as unknown as string) }))
    .sort((a, b) => (b.at?.getTime() ?? 0) - (a.at?.getTime() ?? 0))[0];
}

/**
 * The driver error the profile recognises in the resize error condition, or else in the newest
 * resize failure Event of this resize: the resizer says only there that a driver grows volumes
 * only offline, or that it answered ResourceExhausted — errors it retries without a condition. Its
 * "Resizing" Event of each new attempt is newer than the failure it follows, so the failures are
 * read apart (Warnings), and only those since the resize began (an older one is a past resize's).
 */
function recognisedError(f: ClaimFacts, error: { message?: string } | undefined, failureEvent: string | undefined): DriverError | undefined {
  const fromCondition = error?.message ? driverError(f.driver, error.message) : undefined;
  return fromCondition ?? (failureEvent ? driverError(f.driver, failureEvent) : undefined);
}

/** The text of the newest resize failure Event since the resize began (see recognisedError). */
function resizeFailureEvent(f: ClaimFacts, resizeSince: Date | undefined): string | undefined {
  const failure = newestResizeEvent((f.input.events ?? []).filter((e) => e.type === 'Warning'));
  const current = failure && (!resizeSince || !failure.at || failure.at.getTime() >= resizeSince.getTime() - 1000);
  return current ? failure.e.message : undefined;
}

/** What to do about an error the profile recognises: wait out a rate limit, or the fix it names (and which pods mount the claim, for one that grows only offline). */
function recognisedNext(f: ClaimFacts, recognised: DriverError | undefined, progressMessage: string): string | undefined {
  if (recognised?.kind === 'rateLimited') return `wait: ${progressMessage.split('; ').at(-1)}`;
  if (recognised?.kind === 'offlineOnly') return `${recognised.fix ?? ''}${f.mounted.length > 0 ? ` (pod ${f.mounted.join(', ')} mounts it)` : ''}`;
  return recognised?.fix;
}

/** What the resizer gate says while the controller stage holds the claim, and what to do about it. */
function controllerHold(
  f: ClaimFacts,
  progress: ReturnType<typeof derivePhase>,
  held: {
    error: { message?: string } | undefined;
    errorText: string;
    recognised: DriverError | undefined;
    failureEvent: string | undefined;
    stageSince: string | undefined;
  },
): { what: string; next: string } {
  const { error, errorText, recognised, failureEvent, stageSince } = held;
  const since = stageSince ? ` since ${stageSince}` : '';
  const describe = `read the error: kubectl describe pvc ${f.name} -n ${f.namespace}`;
  if (error) {
    return {
      what: `${errorText}${recognised?.meaning ? ` — ${recognised.meaning}` : ''}`,
      next: recognisedNext(f, recognised, progress.message) ?? `${describe}, and the external-resizer's log for this volume; the resizer retries by itself`,
    };
  }
  // A driver error the resizer retries without a condition (ResourceExhausted, Aborted …) shows
  // only in its Event: named from there when the profile knows it.
  if (recognised) {
    return {
      what: `${progress.reason}${since}: the driver's last attempt failed (${recognised.reason}: "${failureEvent ?? ''}") — ${recognised.meaning}; the resizer retries it by itself`,
      next:
        (recognised.kind === 'rateLimited'
          ? 'wait: the resizer tries again with backoff, and the driver lets the change through once its limit frees'
          : recognisedNext(f, recognised, progress.message)) ?? `${describe}; the resizer retries by itself`,
    };
  }
  if (progress.reason === 'WaitingForResizer') {
    return {
      what: 'the external-resizer has not taken up the change (no allocatedResourceStatuses, no resize condition)',
      next: `check that the external-resizer runs for ${f.driver.name} (kubectl get pods -A | grep resizer) and read its log`,
    };
  }
  return {
    what: `${progress.reason}${since}: ${progress.message}`,
    next: "wait for the driver to expand the volume; if it lasts, read the external-resizer's log for ControllerExpandVolume errors of this volume",
  };
}

/**
 * resizer and node-stage: the claim's resize as the request reconciler reads it (derivePhase),
 * with the resizer's and kubelet's conditions and Events as evidence.
 */
function resizeGates(f: ClaimFacts, modifications: ReturnType<typeof claimModifications>, patchedBy: string | undefined): Gate[] {
  const { pvc, name } = f;
  const error = trueCondition(pvc, ...errorConditions);
  const state = resizeState(pvc);
  const growing = f.requested !== undefined && f.capacity !== undefined && f.requested > f.capacity;
  if (!growing && !state && !error) {
    const figures = f.capacity === undefined ? '' : ` (capacity ${formatBytes(f.capacity)})`;
    // The request's patch went through both stages: the claim has what it asked for.
    const nodeDone = nodeExpansionNotRequired(pvc)
      ? `not needed: the resizer completed the expansion without a node step (${kubernetesAnnotations.nodeExpansionNotRequired})${figures}`
      : `done: the filesystem grew${figures}`;
    if (patchedBy) return [gate('resizer', 'passed', `done: the volume has what ${patchedBy} asked for${figures}`), gate('node-stage', 'passed', nodeDone)];
    const lastNeededNoNode = nodeExpansionNotRequired(pvc) ? `; the last one needed no node step (${kubernetesAnnotations.nodeExpansionNotRequired})` : '';
    return [notApplicable('resizer', `no resize under way${figures}`), notApplicable('node-stage', `no resize under way${figures}${lastNeededNoNode}`)];
  }
  const progress = derivePhase({
    pvc,
    pvcUID: pvc.metadata?.uid ?? '',
    targetBytes: growing ? f.requested : f.capacity,
    mountedByRunningPod: f.mounted.length > 0,
    driver: f.driver,
    modifications,
    rateLimitedSince: toDate(error?.lastTransitionTime),
    now: f.input.now,
  });
  const errorSince = toDate(error?.lastTransitionTime);
  const errorText = error ? `${error.type} "${error.message ?? ''}" since ${iso(errorSince) ?? '?'}` : '';
  const failureEvent = resizeFailureEvent(f, state?.since);
  const recognised = recognisedError(f, error, failureEvent);
  const meaning = recognised?.meaning;
  const events = lastResizeEvent(f.input.events);
  const sizes = `requests ${formatBytes(f.requested ?? 0n)}, capacity ${formatBytes(f.capacity ?? 0n)}`;
  const stageSince = iso(state?.since);
  const onNode = progress.phase === 'WaitingForPod' || progress.phase === 'NodeExpansionPending' || error?.type === 'NodeResizeError';
  if (progress.phase === 'Failed') {
    return [
      gate('resizer', 'holding', `${progress.reason}: ${progress.message} (${sizes})${events}`, {
        next: remedy('resize-infeasible'),
        since: iso(errorSince) ?? stageSince,
      }),
      notApplicable('node-stage', 'the controller stage cannot complete'),
    ];
  }
  if (progress.phase === 'Completed') {
    return [gate('resizer', 'passed', `done (${sizes})`), gate('node-stage', 'passed', `the filesystem grew: capacity ${formatBytes(f.capacity ?? 0n)}`)];
  }
  if (!onNode) {
    const { what, next } = controllerHold(f, progress, { error, errorText, recognised, failureEvent, stageSince });
    return [
      gate('resizer', 'holding', `${what} (${sizes})${events}`, { next, since: iso(errorSince) ?? stageSince }),
      notApplicable('node-stage', 'comes after the resizer'),
    ];
  }
  const allocated = pvc.status?.allocatedResources?.storage;
  // The PersistentVolume's pre-resize-capacity, where the resizer recorded it: what the filesystem still has.
  const before = preResizeCapacity(f.ctx.persistentVolume(pvc.spec?.volumeName));
  const from = before === undefined ? '' : ` from ${formatBytes(before)} (the PersistentVolume's ${kubernetesAnnotations.preResizeCapacity})`;
  const resizer = gate('resizer', 'passed', `the volume grew${from}${allocated ? ` to ${allocated}` : ''} (${state?.reason ?? progress.reason})`);
  if (progress.phase === 'WaitingForPod') {
    return [
      resizer,
      gate(
        'node-stage',
        'holding',
        `${state?.reason ?? progress.reason}${stageSince ? ` since ${stageSince}` : ''}: no running pod mounts the claim; start one${events}`,
        { next: `start a pod that mounts ${name} (or scale its workload up): the kubelet then grows the filesystem`, since: stageSince },
      ),
    ];
  }
  const pods = f.mounted.join(', ');
  if (kubeletRefusedInUse(pvc)) return [resizer, offlineNodeStage(f, pods, errorText, events, iso(errorSince) ?? stageSince)];
  const nodeWhat = error
    ? `${errorText}${meaning ? ` — ${meaning}` : ''}`
    : `${state?.reason ?? progress.reason}${stageSince ? ` since ${stageSince}` : ''}: the kubelet grows the filesystem for pod ${pods || '(a running pod)'}`;
  return [
    resizer,
    gate('node-stage', 'holding', `${nodeWhat}${events}`, {
      next: error
        ? `read the kubelet's log on the node of pod ${f.mounted[0] ?? '(the pod)'} for NodeExpandVolume errors; deleting and re-creating the pod retries`
        : 'wait for the kubelet (its next sync of the pod, about a minute)',
      since: iso(errorSince) ?? stageSince,
    }),
  ];
}

/**
 * The node stage of a claim whose driver grows filesystems only when mounted anew: the kubelet
 * refused to grow it in use, and waits for the pod to be restarted — by a person, or by pvx for a
 * request that says spec.offlineNodeExpansion: EvictPod (its eviction, if any, as evidence).
 */
function offlineNodeStage(f: ClaimFacts, pods: string, errorText: string, events: string, since: string | undefined): Gate {
  const subject = subjectRequest(f, f.input.request);
  const ev = subject?.status?.eviction;
  const evicting = subject?.spec.offlineNodeExpansion === 'EvictPod';
  const who = pods ? `pod ${pods}` : 'the pod that mounts it';
  const evidence = `the kubelet cannot grow the filesystem while ${who} mounts the claim (its driver grows it only when mounted anew): ${errorText}${ev ? `; ver/${subject?.metadata.name}: eviction of pod ${ev.podName} ${ev.phase}${ev.message ? ` (${ev.message})` : ''}` : ''}${events}`;
  const next = evicting
    ? ev?.phase === 'Blocked'
      ? `wait: pvx evicts pod ${ev.podName} once its PodDisruptionBudget allows (or restart it yourself: kubectl delete pod ${ev.podName} -n ${f.namespace})`
      : `wait: ver/${subject?.metadata.name} evicts ${who} (spec.offlineNodeExpansion: EvictPod) and the kubelet grows the filesystem as its next pod mounts the claim`
    : `restart ${who} (kubectl delete pod ${pods || 'POD'} -n ${f.namespace}: its controller creates it again and the kubelet grows the filesystem as it mounts the claim), or let pvx evict it: a request with spec.offlineNodeExpansion: EvictPod`;
  return gate('node-stage', 'holding', evidence, { next, since });
}

// --- the chain ----------------------------------------------------------------------------------

function claimFacts(ctx: AuditContext, input: WhyInput, pvc: V1PersistentVolumeClaim): ClaimFacts {
  const namespace = pvc.metadata?.namespace ?? '';
  const sizes = claimSizes(pvc);
  const nsLabels = ctx.snapshot.namespaces?.find((n) => n.metadata?.name === namespace)?.metadata?.labels;
  return {
    ctx,
    input,
    pvc,
    name: pvc.metadata?.name ?? '',
    namespace,
    driver: ctx.driverOf(pvc),
    ...('unreadable' in sizes || pvc.status?.capacity?.storage === undefined ? {} : { capacity: sizes.capacityBytes, requested: sizes.requestedBytes }),
    requests: ctx.requestsFor(pvc),
    guardrails: clusterGuardrails(ctx.snapshot.clusterPolicies, nsLabels),
    mounted: ctx.runningPodsMounting(pvc),
  };
}

/** The request the chain follows: the one asked about, else the claim's open request (the newest). */
function subjectRequest(f: ClaimFacts, asked: VolumeExpansionRequest | undefined): VolumeExpansionRequest | undefined {
  if (asked) return asked;
  return f.requests
    .filter((r) => !isFinished(r) && !r.spec.dryRun)
    .sort((a, b) => String(b.metadata.creationTimestamp ?? '').localeCompare(String(a.metadata.creationTimestamp ?? '')))[0];
}

/**
 * What the gates of one claim are judged from: its facts, what drives its growth, and the readings
 * several gates share, each made once.
 */
export interface Chain {
  f: ClaimFacts;
  driver: Driver;
  /** The policy gate, judged with the driver: what drives the claim is what it finds. */
  policyGate: Gate;
  /** `pvx why ver/NAME`: the request was asked about. */
  asked: boolean;
  /**
   * Why the trigger and limit gates do not apply: a resize under way without a request (made
   * outside pvx), which the policy waits for as its decision does (in flight); what holds the
   * claim is in the resize's own gates.
   */
  underway?: string;
  /** The request patched the claim: which (ver/NAME), and when. */
  patched?: { by: string; at: string };
  /** The policy's reading of the claim's usage, and the usage gate's verdict on it. */
  usage(): { reading: ReturnType<typeof usageReading>; gate: Gate };
  /** The policy's trigger reading, once usage is known. */
  trigger(): TriggerReading | undefined;
  /** The size the next change asks for (undefined: none), and whose change it is. */
  next(): { target?: bigint; why: string };
  /** The resizer's and the node stage's verdicts: one reading of the claim's resize. */
  resize(): [Gate, Gate];
}

/** fn's value, computed at the first call (an exception is not kept: the next call throws it again). */
function once<T>(fn: () => T): () => T {
  let value: { v: T } | undefined;
  return () => (value ??= { v: fn() }).v;
}

function chain(f: ClaimFacts, policy: { gate: Gate; driver: Driver }, asked: boolean): Chain {
  const { driver } = policy;
  const underway = (driver.kind === 'policy' || driver.kind === 'step') && ((f.requested ?? 0n) > (f.capacity ?? 0n) || resizeUnderway(f.pvc));
  const patchedAt = driver.kind === 'request' ? driver.request.status?.timeline?.patchedAt : undefined;
  const c: Chain = {
    f,
    driver,
    policyGate: policy.gate,
    asked,
    ...(underway
      ? {
          underway: `an expansion is already under way (requests ${formatBytes(f.requested ?? 0n)}, capacity ${formatBytes(f.capacity ?? 0n)}): the policy waits for it`,
        }
      : {}),
    ...(patchedAt && driver.kind === 'request' ? { patched: { by: `ver/${driver.request.metadata.name}`, at: patchedAt } } : {}),
    usage: once(() => {
      const reading = usageReading(drivenBy(c).autoscale);
      return { reading, gate: usageGate(c, reading) };
    }),
    trigger: once(() => {
      const { reading } = c.usage();
      return reading.kind === 'unknown' ? undefined : triggerReading(drivenBy(c).spec, reading.samples, f.input.now);
    }),
    next: once(() => nextTarget(f, driver) ?? { why: driver.kind === 'none' ? 'no change is asked for' : 'the claim reports no capacity' }),
    resize: once(() => {
      const [resizer, node] = resizeGates(f, claimModifications(f.pvc, f.driver.modificationBudget, f.requests, f.input.now), c.patched?.by);
      return [resizer as Gate, node as Gate];
    }),
  };
  return c;
}

/**
 * What a gate says when its stage does not apply to the claim, instead of being judged; undefined:
 * judge it. The trigger gates need a policy that drives the claim and no resize under way; the
 * limits are judged before the claim is patched (after, they held when it was).
 */
function stageVerdict(spec: (typeof gateTable)[number], c: Chain): Gate | undefined {
  const { id } = spec;
  if (spec.stage === 'trigger' && (c.driver.kind !== 'policy' || c.underway)) {
    return notApplicable(
      id,
      c.underway ??
        (c.driver.kind === 'request' ? `ver/${c.driver.request.metadata.name} asks for the change: no policy trigger applies` : 'no policy grows the claim'),
    );
  }
  if (spec.stage === 'limits') {
    if (c.underway) return notApplicable(id, c.underway);
    if (c.patched) return gate(id, 'passed', `${c.patched.by} patched the claim at ${c.patched.at}`);
  }
  return undefined;
}

/** The chain: every gate of the table, in order, judged or said not to apply. */
function walk(c: Chain): Gate[] {
  return gateTable.map((spec) => readable(spec.id, () => stageVerdict(spec, c) ?? spec.judge(c)));
}

/** Every gate of one claim, in order, and the one next step. */
export function why(input: WhyInput, ctx: AuditContext = auditContext(input.snapshot, { now: input.now, profiles: input.profiles })): WhyReport {
  const f = claimFacts(ctx, input, input.claim);
  const subject = subjectRequest(f, input.request);
  const policy = policyGate(f, subject);
  const gates = walk(chain(f, policy, input.request !== undefined));
  const held = gates.find(stops);
  const next = held?.next ?? nothingHolds(f, policy.driver);
  return {
    namespace: f.namespace,
    pvc: f.name,
    ...(subject ? { request: subject.metadata.name as string } : {}),
    ...(policy.driver.kind === 'policy' ? { policy: policyName(policy.driver.policy) } : {}),
    gates,
    ...(held ? { heldBy: held.gate } : {}),
    next,
    ...templateNote(f),
  };
}

/** The StatefulSet template behind the claim, when it asks for less than the claim: the audit's drift finding, seen from the claim. */
function templateNote(f: ClaimFacts): { template?: string } {
  const sets = f.ctx.snapshot.statefulSets.filter((s) => s.metadata?.namespace === f.namespace);
  for (const sts of sets) {
    const vct = (sts.spec?.volumeClaimTemplates ?? []).find((t) => isStatefulSetClaim(f.name, sts.metadata?.name ?? '', t.metadata?.name ?? ''));
    const templateBytes = readBytes(vct?.spec?.resources?.requests?.storage);
    if (!vct || templateBytes === undefined || f.requested === undefined || templateBytes >= f.requested) continue;
    return {
      template: `StatefulSet ${sts.metadata?.name}'s volumeClaimTemplate ${vct.metadata?.name} asks for ${formatBytes(templateBytes)}, less than this claim's ${formatBytes(f.requested)}: new replicas start at ${formatBytes(templateBytes)}. ${driftRemedy(sts, vct.metadata?.name ?? '', f.requested)}`,
    };
  }
  return {};
}

function nothingHolds(f: ClaimFacts, driver: Driver): string {
  if (driver.kind === 'policy') {
    const target = stepCap(driver.autoscale).step;
    return `nothing: ${policyName(driver.policy)} asks to grow ${f.name} ${formatBytes(f.capacity ?? 0n)} → ${formatBytes(target)} at its next pass (pvx's operator must be running)`;
  }
  if (driver.kind === 'request')
    return driver.request.status?.phase === 'Completed'
      ? `nothing: ver/${driver.request.metadata.name} completed`
      : `nothing: ver/${driver.request.metadata.name} goes on by itself`;
  return 'nothing';
}

/**
 * The chain that says whether a claim can grow now (pvx df), as `pvx why` walks it: the limits
 * judged for the next step of the policy that grows the claim, for its open request, or — neither —
 * for the step a policy of the defaults would take.
 */
export function growthChain(input: WhyInput, ctx: AuditContext = auditContext(input.snapshot, { now: input.now, profiles: input.profiles })): Gate[] {
  const f = claimFacts(ctx, input, input.claim);
  const policy = policyGate(f, subjectRequest(f, undefined));
  const autoscale = policy.driver.kind === 'none' ? autoscaleInputOf(f, autoscaleSpec({ triggers: {} })) : undefined;
  const driver: Driver = autoscale ? { kind: 'step', autoscale } : policy.driver;
  return walk(chain(f, { gate: policy.gate, driver }, false));
}

/** A claim and the gate that holds it (none: nothing does). */
export interface HeldClaim {
  namespace: string;
  name: string;
  gate?: GateId;
}

/**
 * Which gate holds each claim of the snapshot: what the operator's pvx_claims_held gauge counts.
 * The same chain as `pvx why`, without Events (the operator does not cache them).
 */
export function claimsHeld(snapshot: AuditSnapshot, opts: WhyOptions): HeldClaim[] {
  const ctx = auditContext(snapshot, { now: opts.now, profiles: opts.profiles });
  return snapshot.pvcs.map((claim) => {
    const report = why({ ...opts, snapshot, claim }, ctx);
    return { namespace: report.namespace, name: report.pvc, ...(report.heldBy ? { gate: report.heldBy } : {}) };
  });
}
