// Why a claim does not grow: every gate a claim passes on its way to a bigger volume, in the order
// it meets them, each passed, holding, not applicable or unknown, with the evidence and what the
// user can do — and the first gate that holds, for `pvx why` and for the operator's
// pvx_claims_held gauge. Pure: a snapshot of the objects, the usage samples and the clock in.
//
// It decides nothing of its own: each gate is the verdict of the function the operator decides
// with — the request validation's checks (src/policies/request/validation.ts), the autoscale decision's
// stages (src/policies/autoscale/decide.ts, through the policy pass's own input of a claim), the driver
// budget (src/policies/budget/budget.ts), the request's phase (src/policies/request/phase.ts) — so `why` cannot disagree with what pvx does.
import type { CoreV1Event, V1PersistentVolumeClaim } from '@kubernetes/client-node';
import type { Phase, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import { QuantityError, formatBytes, humanBytes } from '../../k8s/quantity.ts';
import { objectKey, resources, volumeExpansionPolicies, clusterVolumeExpansionPolicies } from '../../k8s/resources.ts';
import { auditContext, auditRules, type AuditContext, type AuditSnapshot, type GoverningPolicy, type RuleId } from '../audit/rules.ts';
import { autoscaleSpec, cooldownState, stepCap, triggerReading, usageReading, type AutoscaleInput, type AutoscaleSpec } from '../autoscale/decide.ts';
import { budgetText, claimModifications } from '../budget/budget.ts';
import { driverError, type DriverProfile, type DriverProfiles } from '../budget/drivers.ts';
import { humanDuration } from '../shared/duration.ts';
import { derivePhase, finishedPhases } from '../request/phase.ts';
import { claimAutoscaleInput, claimSizes } from '../autoscale/policy-pass.ts';
import { errorConditions, resizeState, resizeUnderway, toDate, trueCondition } from '../claim/resize.ts';
import { targetBytes } from '../request/sizing.ts';
import { budgetCheck, bindingCheck, clusterGuardrails, driverLimitCheck, guardrailCheck, quotaCheck, storageClassCheck } from '../request/validation.ts';
import { WindowError, windowState } from '../autoscale/windows.ts';
import type { UsageSample } from '../autoscale/sampling.ts';

/** The gates, in the order a claim meets them: stable ids (JSON output, the pvx_claims_held gauge's `gate` label). */
export const gateIds = ['storage-class', 'binding', 'policy', 'usage', 'threshold', 'cooldown', 'window', 'max-size', 'budget', 'quota', 'request', 'resizer', 'node-stage'] as const;
export type GateId = (typeof gateIds)[number];

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
 * The gates `ids`, or — when a quantity they need cannot be read (the claim's, its class's, a
 * quota's) — each of them unknown, naming it: one unreadable object never stops the chain.
 */
function readable(ids: readonly GateId[], fn: () => Gate[]): Gate[] {
  try {
    return fn();
  } catch (err) {
    if (!(err instanceof QuantityError)) throw err;
    return ids.map((id) => gate(id, 'unknown', `pvx cannot read a quantity it needs: ${err.message}`, { next: remedy('claim-unreadable') }));
  }
}

/** The policy's triggers in words: "used ≥ 80%, less than 2Gi free". */
function triggerText(spec: AutoscaleSpec): string {
  const parts = [
    spec.usedRatio !== undefined ? `used ≥ ${Math.round(spec.usedRatio * 100)}%` : '',
    spec.inodesRatio !== undefined ? `inodes used ≥ ${Math.round(spec.inodesRatio * 100)}%` : '',
    spec.minFreeBytes !== undefined ? `less than ${formatBytes(spec.minFreeBytes)} free` : '',
    spec.forecast ? `forecast full within ${humanDuration(spec.forecast.horizonMs)}` : '',
  ].filter(Boolean);
  return `${parts.join(', ') || 'the fill-rate forecast only'} (in ${spec.sustainedSamples ?? 1} measurement${spec.sustainedSamples === 1 ? '' : 's'} in a row)`;
}

/** What drives the claim's growth: an open request (or the one asked about), or a policy's decision. */
type Driver = { kind: 'request'; request: VolumeExpansionRequest } | { kind: 'policy'; policy: GoverningPolicy; spec: AutoscaleSpec; autoscale: AutoscaleInput } | { kind: 'none' };

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
  if (className && !sc && f.input.unreadable?.has(resources.storageClasses.resource)) return gate('storage-class', 'unknown', `not allowed to list StorageClasses: cannot tell whether ${className} allows expansion`, { next: 'ask for read access to storageclasses (storage.k8s.io), or run pvx why as a user who has it' });
  const refusal = storageClassCheck(pvc, sc, name) ?? (className ? guardrailCheck(f.guardrails, className, 0n, undefined) : undefined);
  if (refusal) {
    const next = refusal.reason === 'GuardrailStorageClass' ? `move the data to a claim of a class the guardrail allows, or ask the cluster's admins to allow ${className}` : remedy('class-not-expandable');
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
  if (unbound) return gate('binding', 'holding', unbound.message, { next: `wait for ${name} to be bound (kubectl describe pvc ${name} -n ${f.namespace} says what its provisioning waits for)` });
  const sizes = claimSizes(pvc);
  if ('unreadable' in sizes) return gate('binding', 'unknown', `pvx cannot read the claim's size: ${sizes.unreadable}`, { next: remedy('claim-unreadable') });
  if (pvc.status?.capacity?.storage === undefined) return gate('binding', 'unknown', `${name} reports no status.capacity.storage`, { next: `read kubectl get pvc ${name} -n ${f.namespace} -o yaml: a Bound claim reports its capacity` });
  const volume = pvc.spec?.volumeName;
  const pv = ctx.persistentVolume(volume);
  if (!pv) {
    if (f.input.unreadable?.has(resources.persistentVolumes.resource)) return gate('binding', 'passed', `Bound to ${volume} (capacity ${formatBytes(sizes.capacityBytes)}; PersistentVolumes not readable)`);
    return gate('binding', 'holding', `Bound to PersistentVolume ${volume ?? '(none)'}, which does not exist`, { next: `the claim has lost its volume: restore PersistentVolume ${volume} or move the data to a new claim` });
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
    return { gate: gate('policy', 'passed', `request ver/${subject.metadata.name} asks for ${describeAsk(subject)}${also}`), driver: { kind: 'request', request: subject } };
  }
  const chosen = governing.find((p) => p.spec.mode !== 'DryRun' && p.spec.triggers);
  const spec = chosen && policySpec(chosen, f.input);
  if (!chosen || !spec) {
    if (unreadable.length > 0 && governing.length === 0) {
      const names = unreadable.map(policyName).join(', ');
      return { gate: gate('policy', 'unknown', `pvx cannot read the spec of ${names}: it decides nothing`, { next: `fix the spec of ${names} (its Ready condition and pvx plan say what cannot be read)` }), driver: { kind: 'none' } };
    }
    const policiesUnreadable = [volumeExpansionPolicies, clusterVolumeExpansionPolicies].some((t) => f.input.unreadable?.has(t.resource));
    if (policiesUnreadable) return { gate: gate('policy', 'unknown', 'not allowed to list the expansion policies: cannot tell whether one selects the claim', { next: 'ask for read access to volumeexpansionpolicies and clustervolumeexpansionpolicies (pvx.dev)' }), driver: { kind: 'none' } };
    // Raised outside pvx: a change is asked for all the same; where it stands is in the resize's gates.
    if ((f.requested ?? 0n) > (f.capacity ?? 0n) || resizeUnderway(f.pvc)) {
      return { gate: notApplicable('policy', `no policy or request: the claim's own request was raised outside pvx (requests ${formatBytes(f.requested ?? 0n)}, capacity ${formatBytes(f.capacity ?? 0n)})`), driver: { kind: 'none' } };
    }
    const dryRun = governing.filter((p) => p.spec.mode === 'DryRun');
    if (dryRun.length) {
      const names = dryRun.map(policyName).join(', ');
      return { gate: gate('policy', 'holding', `${names} selects it in DryRun mode: it reports, never grows`, { next: `set spec.mode Auto (or Approval) on ${names}, or grow ${f.name} with a VolumeExpansionRequest` }), driver: { kind: 'none' } };
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
  const also = others.length ? `; ${others.join(', ')} select${others.length === 1 ? 's' : ''} it too and leave${others.length === 1 ? 's' : ''} it to ${policyName(chosen)} (the oldest policy that acts governs a claim)` : '';
  const evidence = `${policyName(chosen)} selects it (mode ${chosen.spec.mode ?? 'Auto'}; triggers: ${triggerText(spec)})${also}`;
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

/** usage, threshold, cooldown and window: the autoscale decision's stages for the chosen policy. */
function policyGates(f: ClaimFacts, d: Extract<Driver, { kind: 'policy' }>): Gate[] {
  const { autoscale, spec } = d;
  const pName = policyName(d.policy);
  const usage = usageReading(autoscale);
  let imminent = false;
  const gates: Gate[] = [];
  if (usage.kind === 'unknown') {
    gates.push(usageUnknown(f, usage.reason, usage.message));
    gates.push(gate('threshold', 'unknown', 'no usage to judge the triggers by', { next: gates[0]?.next }));
  } else {
    const newest = usage.newest;
    gates.push(gate('usage', 'passed', `measured at ${iso(newest.at)} by ${f.input.usageSource ?? 'the usage source'}: ${humanBytes(newest.usedBytes)} of ${humanBytes(newest.capacityBytes)} used`));
    const t = triggerReading(spec, usage.samples, f.input.now);
    imminent = t.imminent;
    gates.push(
      t.trigger
        ? gate('threshold', 'passed', `${t.why} (${t.detail})`)
        : gate('threshold', 'holding', `${t.detail}: under every trigger of ${pName}: ${triggerText(spec)}`, { next: `nothing to do: ${f.name} grows once a trigger of ${pName} fires (pvx plan shows the figures as they change)` }),
    );
  }
  const cooling = cooldownState(autoscale, imminent);
  const cooldown = humanDuration(spec.cooldownMs ?? 0);
  if (cooling?.holds) {
    gates.push(
      gate('cooldown', 'holding', `last expansion ${iso(autoscale.lastExpansionAt)}, cooldown ${cooldown}, next allowed ${iso(cooling.until)}${autoscale.lastRequestRefused ? ' (the last request was refused: the cooldown holds whatever the forecast)' : ''}`, {
        next: `wait until ${iso(cooling.until)}, or shorten spec.cooldown of ${pName}`,
        since: iso(autoscale.lastExpansionAt),
        until: iso(cooling.until),
      }),
    );
  } else if (cooling) {
    gates.push(gate('cooldown', 'passed', `cooling down until ${iso(cooling.until)}, which does not hold back a volume about to fill`));
  } else {
    gates.push(gate('cooldown', 'passed', autoscale.lastExpansionAt ? `last expansion ${iso(autoscale.lastExpansionAt)}, cooldown ${cooldown} over` : 'no expansion yet'));
  }
  gates.push(windowGate(spec, pName, f.input.now));
  return gates;
}

function usageUnknown(f: ClaimFacts, reason: string, message: string): Gate {
  if (!f.input.usageSource) return gate('usage', 'unknown', 'no usage source: usage unknown', { next: 'read usage from the kubelet or Prometheus (pvx why --usage kubelet|prometheus; pvx run --usage-source)' });
  if (reason === 'CapacityMismatch') return gate('usage', 'unknown', message, { next: "read usage from a source that measures the volume itself: the figures seen are another filesystem's" });
  if (reason === 'NoSamples' && f.input.usageSource === 'kubelet' && f.mounted.length === 0) {
    return gate('usage', 'unknown', 'the kubelet reports no stats for unmounted volumes: no running pod mounts the claim', { next: `start a pod that mounts ${f.name}, or read usage from Prometheus (--usage prometheus)` });
  }
  return gate('usage', 'unknown', `${message} (from ${f.input.usageSource})`, { next: `check that ${f.input.usageSource} reports ${f.namespace}/${f.name} (pvx plan warns about the usage source's errors)` });
}

function windowGate(spec: AutoscaleSpec, pName: string, now: Date): Gate {
  const windows = spec.windows ?? [];
  if (windows.length === 0) return notApplicable('window', `${pName} has no maintenance window: any time`);
  const list = windows.map((w) => `"${w.schedule}"${w.timeZone ? ` ${w.timeZone}` : ''} for ${humanDuration(w.durationMs)}`).join(', ');
  try {
    const w = windowState(windows, now);
    if (w.open) return gate('window', 'passed', `inside a maintenance window (${list})`);
    return gate('window', 'holding', `outside the maintenance windows (${list}); the next opens at ${iso(w.nextOpen) ?? '(never)'}`, { next: `wait until ${iso(w.nextOpen) ?? 'a window opens'}, or change spec.windows of ${pName}`, until: iso(w.nextOpen) });
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
  return undefined;
}

function maxSizeGate(f: ClaimFacts, driver: Driver, target: bigint | undefined, why: string): Gate {
  const capacity = f.capacity as bigint;
  if (driver.kind === 'policy') {
    const cap = stepCap(driver.autoscale);
    if (cap.step <= capacity) {
      const which = cap.driverCaps ? `the largest volume ${f.driver.name} makes for its class` : `${policyName(driver.policy)}'s maximum size`;
      const next = cap.driverCaps ? `move the data to a class whose volumes may be larger` : `raise spec.maxSize of ${policyName(driver.policy)}`;
      return gate('max-size', 'holding', `at ${which} ${formatBytes(cap.maxBytes ?? capacity)} (capacity ${formatBytes(capacity)})`, { next });
    }
  }
  if (target === undefined) return notApplicable('max-size', why);
  const sc = f.ctx.storageClass(f.pvc.spec?.storageClassName);
  const className = f.pvc.spec?.storageClassName ?? '';
  const refusal = guardrailCheck(f.guardrails, className, capacity, target) ?? (sc ? driverLimitCheck(f.driver, sc, className, target) : undefined);
  if (refusal) {
    const next = refusal.reason === 'ExceedsDriverLimit' ? 'ask for a size the driver makes, or move the data to a class with larger volumes' : "ask for a size within the guardrail, or ask the cluster's admins to raise it";
    return gate('max-size', 'holding', `${why} ${formatBytes(capacity)} → ${formatBytes(target)}: ${refusal.message} (${refusal.reason})`, { next });
  }
  return gate('max-size', 'passed', `${why} ${formatBytes(capacity)} → ${formatBytes(target)} is within every maximum (policy, guardrails, driver)`);
}

function budgetGate(f: ClaimFacts, others: readonly VolumeExpansionRequest[]): Gate {
  const budget = f.driver.modificationBudget;
  if (!budget) return notApplicable('budget', `${f.driver.name} has no modification budget pvx knows of`);
  const modifications = claimModifications(f.pvc, budget, others, f.input.now);
  const spent = budgetCheck(f.driver, f.name, modifications, f.input.now);
  if (!spent) return gate('budget', 'passed', `${modifications.filter((m) => m.at.getTime() > f.input.now.getTime() - budget.windowMs).length} of ${budgetText(budget)} spent in the window`);
  const until = new Date(f.input.now.getTime() + spent.retryAfterMs);
  return gate('budget', 'holding', spent.message, { next: `wait until ${iso(until)}; if ${f.name} may fill sooner, free space in it or move load off it`, until: iso(until) });
}

function quotaGate(f: ClaimFacts, target: bigint | undefined, why: string): Gate {
  if (target === undefined) return notApplicable('quota', why);
  const quotas = f.ctx.quotasIn(f.namespace);
  if (quotas.length === 0 && f.input.unreadable?.has(resources.resourceQuotas.resource)) return gate('quota', 'unknown', `not allowed to list ResourceQuotas in ${f.namespace}`, { next: 'ask for read access to resourcequotas in the namespace' });
  const refusal = quotaCheck(f.pvc, f.name, target, quotas);
  if (refusal) return gate('quota', 'holding', refusal.message, { next: remedy('quota-headroom') });
  return gate('quota', 'passed', quotas.length ? `room for ${formatBytes(target)} in ${quotas.map((q) => `ResourceQuota ${q.metadata?.name}`).join(', ')}` : `no ResourceQuota in ${f.namespace}`);
}

// --- the gates after the claim is patched ------------------------------------------------------

function requestGate(f: ClaimFacts, driver: Driver, asked: boolean): Gate {
  if (driver.kind !== 'request') {
    if (f.requested !== undefined && f.capacity !== undefined && f.requested > f.capacity) return notApplicable('request', `no request is open: ${f.name} was resized outside pvx (requests ${formatBytes(f.requested)}, capacity ${formatBytes(f.capacity)})`);
    return notApplicable('request', driver.kind === 'policy' ? `no request is open: ${policyName(driver.policy)} creates one when every gate above passes` : 'no request is open');
  }
  const r = driver.request;
  const name = `ver/${r.metadata.name}`;
  const s = r.status;
  if (!s?.phase) {
    return gate('request', 'holding', `${name} has no status: pvx's operator has not taken it up`, { next: "start pvx's operator (pvx run, or its Helm chart), or check its log for this request", since: iso(toDate(r.metadata.creationTimestamp as unknown as string)) });
  }
  const said = `${name} is ${s.phase}${s.reason ? ` (${s.reason})` : ''}${s.message ? `: ${s.message}` : ''}`;
  const since = s.phaseSince;
  if (s.phase === 'Pending') {
    const approval = s.reason === 'AwaitingApproval' || s.reason === 'PlanChanged';
    return gate('request', 'holding', said, { next: approval ? `pvx approve ${name} -n ${f.namespace}` : 'the request goes on by itself once the wait ends; its message says what it waits for', since });
  }
  if (s.phase === 'Rejected' || s.phase === 'Failed') {
    return gate('request', 'holding', said, { next: asked ? `fix what the message says, then create a new request (a finished request is not retried)` : `create a new request once the cause is fixed`, since });
  }
  return gate('request', 'passed', said, { since });
}

/** The claim's newest Event among those of the resizer and the kubelet, as evidence. */
function lastResizeEvent(events: readonly CoreV1Event[] | undefined): string {
  const resize = /Resiz|Expand|FileSystem/i;
  const newest = (events ?? [])
    .filter((e) => resize.test(e.reason ?? ''))
    .map((e) => ({ e, at: toDate((e.lastTimestamp ?? e.series?.lastObservedTime ?? e.eventTime ?? e.metadata?.creationTimestamp) as unknown as string) }))
    .sort((a, b) => (b.at?.getTime() ?? 0) - (a.at?.getTime() ?? 0))[0];
  if (!newest) return '';
  const { e, at } = newest;
  return `; last Event: ${e.type ?? ''} ${e.reason} "${e.message ?? ''}"${at ? ` at ${iso(at)}` : ''}${(e.count ?? 1) > 1 ? ` (×${e.count})` : ''}`;
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
    if (patchedBy) return [gate('resizer', 'passed', `done: the volume has what ${patchedBy} asked for${figures}`), gate('node-stage', 'passed', `done: the filesystem grew${figures}`)];
    return [notApplicable('resizer', `no resize under way${figures}`), notApplicable('node-stage', `no resize under way${figures}`)];
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
  const meaning = error && error.message ? driverError(f.driver, error.message)?.meaning : undefined;
  const events = lastResizeEvent(f.input.events);
  const sizes = `requests ${formatBytes(f.requested ?? 0n)}, capacity ${formatBytes(f.capacity ?? 0n)}`;
  const stageSince = iso(state?.since);
  const onNode = progress.phase === 'WaitingForPod' || progress.phase === 'NodeExpansionPending' || error?.type === 'NodeResizeError';
  if (progress.phase === 'Failed') {
    return [
      gate('resizer', 'holding', `${progress.reason}: ${progress.message} (${sizes})${events}`, { next: remedy('resize-infeasible'), since: iso(errorSince) ?? stageSince }),
      notApplicable('node-stage', 'the controller stage cannot complete'),
    ];
  }
  if (progress.phase === 'Completed') {
    return [gate('resizer', 'passed', `done (${sizes})`), gate('node-stage', 'passed', `the filesystem grew: capacity ${formatBytes(f.capacity ?? 0n)}`)];
  }
  if (!onNode) {
    const what = error
      ? `${errorText}${meaning ? ` — ${meaning}` : ''}`
      : progress.reason === 'WaitingForResizer'
        ? `the external-resizer has not taken up the change (no allocatedResourceStatuses, no resize condition)`
        : `${progress.reason}${stageSince ? ` since ${stageSince}` : ''}: ${progress.message}`;
    const next = error
      ? driverError(f.driver, error.message ?? '')?.kind === 'rateLimited'
        ? `wait: ${progress.message.split('; ').at(-1)}`
        : `read the error: kubectl describe pvc ${name} -n ${f.namespace}, and the external-resizer's log for this volume; the resizer retries by itself`
      : progress.reason === 'WaitingForResizer'
        ? `check that the external-resizer runs for ${f.driver.name} (kubectl get pods -A | grep resizer) and read its log`
        : `wait for the driver to expand the volume; if it lasts, read the external-resizer's log for ControllerExpandVolume errors of this volume`;
    return [gate('resizer', 'holding', `${what} (${sizes})${events}`, { next, since: iso(errorSince) ?? stageSince }), notApplicable('node-stage', 'comes after the resizer')];
  }
  const allocated = pvc.status?.allocatedResources?.storage;
  const resizer = gate('resizer', 'passed', `the volume grew${allocated ? ` to ${allocated}` : ''} (${state?.reason ?? progress.reason})`);
  if (progress.phase === 'WaitingForPod') {
    return [resizer, gate('node-stage', 'holding', `${state?.reason ?? progress.reason}${stageSince ? ` since ${stageSince}` : ''}: no running pod mounts the claim; start one${events}`, { next: `start a pod that mounts ${name} (or scale its workload up): the kubelet then grows the filesystem`, since: stageSince })];
  }
  const pods = f.mounted.join(', ');
  const nodeWhat = error ? `${errorText}${meaning ? ` — ${meaning}` : ''}` : `${state?.reason ?? progress.reason}${stageSince ? ` since ${stageSince}` : ''}: the kubelet grows the filesystem for pod ${pods || '(a running pod)'}`;
  return [
    resizer,
    gate('node-stage', 'holding', `${nodeWhat}${events}`, {
      next: error ? `read the kubelet's log on the node of pod ${f.mounted[0] ?? '(the pod)'} for NodeExpandVolume errors; deleting and re-creating the pod retries` : 'wait for the kubelet (its next sync of the pod, about a minute)',
      since: iso(errorSince) ?? stageSince,
    }),
  ];
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
    .filter((r) => !finishedPhases.has(r.status?.phase as Phase) && !r.spec.dryRun)
    .sort((a, b) => String(b.metadata.creationTimestamp ?? '').localeCompare(String(a.metadata.creationTimestamp ?? '')))[0];
}

function chainFor(f: ClaimFacts, policy: { gate: Gate; driver: Driver }, asked: boolean): Gate[] {
  const { driver } = policy;
  const gates: Gate[] = [...readable(['storage-class'], () => [storageClassGate(f)]), ...readable(['binding'], () => [bindingGate(f)]), policy.gate];
  // A resize under way without a request (made outside pvx): the policy waits for it, as its
  // decision does (in flight); what holds the claim is in the resize's own gates.
  const underway = driver.kind === 'policy' && ((f.requested ?? 0n) > (f.capacity ?? 0n) || resizeUnderway(f.pvc));
  const underwayWhy = `an expansion is already under way (requests ${formatBytes(f.requested ?? 0n)}, capacity ${formatBytes(f.capacity ?? 0n)}): the policy waits for it`;
  if (driver.kind === 'policy' && !underway) gates.push(...readable(['usage', 'threshold', 'cooldown', 'window'], () => policyGates(f, driver)));
  else {
    const why = underway ? underwayWhy : driver.kind === 'request' ? `ver/${driver.request.metadata.name} asks for the change: no policy trigger applies` : 'no policy grows the claim';
    gates.push(notApplicable('usage', why), notApplicable('threshold', why), notApplicable('cooldown', why), notApplicable('window', why));
  }
  const others = driver.kind === 'request' ? f.requests.filter((r) => r.metadata.uid !== driver.request.metadata.uid) : f.requests;
  const patched = driver.kind === 'request' && Boolean(driver.request.status?.timeline?.patchedAt);
  if (underway) {
    gates.push(notApplicable('max-size', underwayWhy), notApplicable('budget', underwayWhy), notApplicable('quota', underwayWhy));
  } else if (patched) {
    const at = `ver/${(driver as Extract<Driver, { kind: 'request' }>).request.metadata.name} patched the claim at ${driver.request.status?.timeline?.patchedAt}`;
    gates.push(gate('max-size', 'passed', at), gate('budget', 'passed', at), gate('quota', 'passed', at));
  } else {
    const next = nextTarget(f, driver);
    const why = next?.why ?? (driver.kind === 'none' ? 'no change is asked for' : 'the claim reports no capacity');
    gates.push(...readable(['max-size'], () => [f.capacity === undefined ? notApplicable('max-size', why) : maxSizeGate(f, driver, next?.target, why)]));
    gates.push(...readable(['budget'], () => [driver.kind === 'none' ? notApplicable('budget', 'no change is asked for') : budgetGate(f, others)]));
    gates.push(...readable(['quota'], () => [quotaGate(f, next?.target, why)]));
  }
  gates.push(requestGate(f, driver, asked));
  const budget = f.driver.modificationBudget;
  const patchedBy = patched ? `ver/${(driver as Extract<Driver, { kind: 'request' }>).request.metadata.name}` : undefined;
  gates.push(...readable(['resizer', 'node-stage'], () => resizeGates(f, claimModifications(f.pvc, budget, f.requests, f.input.now), patchedBy)));
  return gates;
}

/** Every gate of one claim, in order, and the one next step. */
export function why(input: WhyInput, ctx: AuditContext = auditContext(input.snapshot, { now: input.now, profiles: input.profiles })): WhyReport {
  const f = claimFacts(ctx, input, input.claim);
  const subject = subjectRequest(f, input.request);
  const policy = policyGate(f, subject);
  const gates = chainFor(f, policy, input.request !== undefined);
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
  };
}

function nothingHolds(f: ClaimFacts, driver: Driver): string {
  if (driver.kind === 'policy') {
    const target = stepCap(driver.autoscale).step;
    return `nothing: ${policyName(driver.policy)} asks to grow ${f.name} ${formatBytes(f.capacity ?? 0n)} → ${formatBytes(target)} at its next pass (pvx's operator must be running)`;
  }
  if (driver.kind === 'request') return driver.request.status?.phase === 'Completed' ? `nothing: ver/${driver.request.metadata.name} completed` : `nothing: ver/${driver.request.metadata.name} goes on by itself`;
  return 'nothing';
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
