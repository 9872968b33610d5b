// Which decisions the simulation reaches. A seed batch runs with a recorder around pvx's decisions
// (every decision decideRequest returns, continuations included, and every claim's decision in a
// policy pass); the universe is read from the decisions' source, so a reason added there and never
// generated shows up as unreached. An unreached one fails the CI batch unless `notGenerated` says
// why the simulation cannot or need not reach it.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Decisions } from '../../src/operator/wiring.ts';
import type { RequestDecision } from '../../src/policies/request/decision.ts';
import type { RecordDecision } from '../../src/policies/request/record-keeper.ts';

const root = new URL('../../', import.meta.url).pathname;

export interface DecisionCoverage {
  /** decideRequest's decision kinds (patch, finish …) and every reason in the statuses they write. */
  requestKinds: Set<string>;
  requestReasons: Set<string>;
  /** The policy pass's per-claim decisions (idle, blocked …) and their reasons. */
  policyKinds: Set<string>;
  policyReasons: Set<string>;
  /** The record keeper's decision kinds (update, deleteStatefulSet …); their reasons count with the request's, which shows them. */
  recordKinds: Set<string>;
}

export const emptyCoverage = (): DecisionCoverage => ({
  requestKinds: new Set(),
  requestReasons: new Set(),
  policyKinds: new Set(),
  policyReasons: new Set(),
  recordKinds: new Set(),
});

/** Every `reason` string anywhere in a status (the request's, its targets', template's, eviction's, recovery's). */
function collectReasons(value: unknown, into: Set<string>): void {
  if (Array.isArray(value)) for (const v of value) collectReasons(v, into);
  else if (value && typeof value === 'object' && !(value instanceof Date)) {
    for (const [k, v] of Object.entries(value)) {
      if (k === 'reason' && typeof v === 'string') into.add(v);
      else if (typeof v === 'object') collectReasons(v, into);
    }
  }
}

/** Parts of a decision that are Kubernetes objects or a claim's patch, not what pvx says: their reasons are not decisions. */
const objectKeys = new Set(['children', 'statefulSet', 'patch', 'preconditions', 'pod']);

/** The decision recorded (its kind, and every reason it writes or emits), its continuations wrapped to record what they return when called. */
function recorded(d: RequestDecision, into: DecisionCoverage): RequestDecision {
  into.requestKinds.add(d.kind);
  const wrapped: Record<string, unknown> = { ...d };
  for (const [k, v] of Object.entries(d) as [string, unknown][]) {
    // A continuation may answer nothing (onLivePods: go on as decided): nothing to record then.
    if (typeof v === 'function')
      wrapped[k] = (...args: unknown[]) => {
        const next = (v as (...a: unknown[]) => RequestDecision | undefined)(...args);
        return next === undefined ? undefined : recorded(next, into);
      };
    else if (k === 'then' && v && typeof v === 'object') wrapped[k] = recorded(v as RequestDecision, into);
    else if (!objectKeys.has(k)) collectReasons(k === 'reason' ? { reason: v } : v, into.requestReasons);
  }
  return wrapped as RequestDecision;
}

/** A record keeper's decision recorded (its kind, and every reason its updates write), its continuations wrapped likewise. */
function recordedRecord(d: RecordDecision, into: DecisionCoverage): RecordDecision {
  into.recordKinds.add(d.kind);
  if (d.kind === 'update') {
    into.requestReasons.add(d.content.reason);
    if (d.event) into.requestReasons.add(d.event.reason);
    return d.then ? { ...d, then: recordedRecord(d.then, into) } : d;
  }
  const wrapped: Record<string, unknown> = { ...d };
  for (const [k, v] of Object.entries(d) as [string, unknown][])
    if (typeof v === 'function') wrapped[k] = (...args: unknown[]) => recordedRecord((v as (...a: unknown[]) => RecordDecision)(...args), into);
  return wrapped as RecordDecision;
}

/** Wraps pvx's decisions (or a mutant's) to record what they decide: SeedOptions.observe. */
export function recordDecisions(into: DecisionCoverage): (pvx: Decisions) => Partial<Decisions> {
  return (pvx) => ({
    decideRecord: ((input) => recordedRecord(pvx.decideRecord(input), into)) as Decisions['decideRecord'],
    decideRequest: ((input) => recorded(pvx.decideRequest(input), into)) as Decisions['decideRequest'],
    policyPass: ((input) => {
      const plans = pvx.policyPass(input);
      for (const plan of plans) {
        // The policy's own Ready condition (Evaluated, or InvalidSpec for rules pvx cannot read).
        for (const c of plan.status.conditions ?? []) if (c.reason) into.policyReasons.add(c.reason);
        for (const v of plan.volumes) {
          into.policyKinds.add(v.status.decision);
          if (v.status.reason) into.policyReasons.add(v.status.reason);
        }
      }
      return plans;
    }) as Decisions['policyPass'],
  });
}

const matches = (text: string, re: RegExp): string[] => [...text.matchAll(re)].map((m) => m[1] as string);

/** What the decisions' source says they can decide (string literals in the places that name kinds and reasons). */
export function decisionUniverse(): DecisionCoverage {
  const requestDir = join(root, 'src/policies/request');
  const requestSource = readdirSync(requestDir)
    // The Event a finished expansion leaves (claim-event.ts) and the conditions derived from the
    // status for kubectl (status.ts) are written by the reconciler, not decided.
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !['claim-event.ts', 'status.ts'].includes(f))
    .map((f) => readFileSync(join(requestDir, f), 'utf8'))
    .join('\n');
  const decisionTypes = readFileSync(join(requestDir, 'decision.ts'), 'utf8');
  // The capitalised literals after `reason` on a line (a status's, a target's, an Event's; both sides
  // of a conditional), and the reason argument of finish(phase, reason, …) and reject(reason, …).
  // The capitalised literals of each `reason:` property's value (both sides of a conditional, over
  // lines as the formatter breaks them), and the reason argument of finish(phase, reason, …) and
  // reject(reason, …). Comments are left out; comparisons (reason === 'X') are reads, not decisions.
  const code = requestSource.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const reasonValues = [...code.matchAll(/\breason\??\s*:\s*((?:[^,;{}()]|\([^()]*\))*)/g)].flatMap((m) => matches(m[1] as string, /'([A-Z][A-Za-z]+)'/g));
  const requestReasons = new Set([...matches(code, /\bfinish\(\s*'\w+',\s*'([A-Z]\w+)'/g), ...matches(code, /\breject\(\s*'([A-Z]\w+)'/g), ...reasonValues]);
  const autoscale = readFileSync(join(root, 'src/policies/autoscale/decide.ts'), 'utf8');
  const union = autoscale.slice(
    autoscale.indexOf('export type AutoscaleDecision ='),
    autoscale.indexOf(';\n\n', autoscale.indexOf('export type AutoscaleDecision =')),
  );
  const pass = readFileSync(join(root, 'src/policies/autoscale/policy-pass.ts'), 'utf8');
  const keeper = readFileSync(join(requestDir, 'record-keeper.ts'), 'utf8');
  const recordUnion = keeper.slice(keeper.indexOf('export type RecordDecision ='), keeper.indexOf('export interface RecordEvent'));
  return {
    recordKinds: new Set(matches(recordUnion, /kind: '(\w+)'/g)),
    requestKinds: new Set(matches(decisionTypes, /kind: '(\w+)'/g)),
    requestReasons,
    policyKinds: new Set([...matches(union, /kind: '(\w+)'/g), ...matches(pass, /decision: '(\w+)'/g)]),
    policyReasons: new Set([
      ...matches(union, /'([A-Z]\w+)'/g).filter((r) => !['UsedRatio', 'InodesRatio', 'MinFree', 'Forecast'].includes(r)),
      ...matches(pass, /reason: '([A-Z]\w+)'/g),
    ]),
  };
}

/**
 * Decisions the simulation does not reach, each with why. The CI batch (2,000 seeds) fails on an
 * unreached one not listed here; one listed here that a batch reaches after all is printed, to be
 * taken off.
 */
export const notGenerated: Readonly<Record<string, string>> = {
  // What the generated world never holds: claims come Bound, with a capacity, a StorageClass and
  // sizes that parse; StatefulSets have 0–3 replicas and the template their requests name.
  'request reason CapacityUnknown': 'generated claims are Bound with status.capacity set',
  'request reason PVCNotBound': 'generated claims are Bound to static PVs; none is Pending',
  'request reason NoStorageClass': 'every generated claim names a StorageClass',
  'request reason Unreadable': 'generated claims, classes and quotas hold only quantities that parse',
  'request reason TooManyClaims': 'generated StatefulSets have at most 3 replicas, far below the targets limit',
  'request reason TemplateNotFound': 'generated StatefulSet requests name the template their StatefulSet has',
  'request reason TemplateUnreadable': 'generated volumeClaimTemplates ask for sizes that parse',
  'request reason InvalidSize': 'generated sizes parse (malformed ones are refused at admission)',
  'request reason InvalidSpec': 'the generator writes only specs the CRD admits (a spec pvx cannot read is refused at admission first)',
  'request reason ChildNameTaken': 'no generated request takes the name of a StatefulSet request’s child',
  'request reason AbovePolicyMaximum':
    'the person lowers no policy’s maxSize while a request of its waits (deleted and created again under the name, it is PolicyDeleted): pvx reads the maximum from its cache, and a lowering the cache has not shown yet is a race the invariant would need pvx’s reads of the policy to excuse',
  'request reason TargetUnknown':
    'only a status written by hand lacks its target; the statuses the simulation forges are template steps and evictions, never a patch',
  // What the models of the API server and the controllers never answer.
  'request reason RecoveryRefused': 'the in-memory API server accepts every lowering of a claim recovering from a failed expansion',
  'request reason OwnedByController': 'workload mode’s StatefulSets carry no controller ownerReference (GitOps labels are generated: ManagedByGitOps)',
  'request reason RecreatedElsewhere': 'no simulated actor but pvx creates a deleted StatefulSet again',
  'request reason DriverKeepsRefusing': 'the resizer model’s errors last a few attempts, never the hours this limit waits',
  'request reason UnknownModifyVolumeStatus': 'the modifier model writes only the modifyVolumeStatus values Kubernetes defines',
  'request reason UnknownResizeStatus': 'the resizer and kubelet models write only the allocatedResourceStatuses values Kubernetes defines',
  'request reason NodeResizeInProgress': 'a resize status pvx reads, not writes: the kubelet model finishes a node step in one write',
  'request reason NodeExpansionNotRequired': 'the resizer model never marks a claim node-expansion-not-required (every generated volume has a node step)',
  'request reason VolumeAttributesClassUnsupported': 'the simulated cluster serves VolumeAttributesClasses',
  'policy reason Unreadable': 'generated claims hold sizes that parse',
};

export interface CoverageReport {
  unreached: string[];
  /** Listed in notGenerated, yet reached. */
  reachedAfterAll: string[];
  text: string;
}

export function coverageReport(reached: DecisionCoverage, universe: DecisionCoverage = decisionUniverse()): CoverageReport {
  const groups: [string, keyof DecisionCoverage][] = [
    ['request kind', 'requestKinds'],
    ['request reason', 'requestReasons'],
    ['policy decision', 'policyKinds'],
    ['policy reason', 'policyReasons'],
    ['record kind', 'recordKinds'],
  ];
  const unreached: string[] = [];
  const reachedAfterAll: string[] = [];
  const lines: string[] = [];
  for (const [label, key] of groups) {
    const all = [...universe[key]].sort();
    const missing = all.filter((x) => !reached[key].has(x));
    for (const x of missing) if (!notGenerated[`${label} ${x}`]) unreached.push(`${label} ${x}`);
    for (const x of all) if (reached[key].has(x) && notGenerated[`${label} ${x}`]) reachedAfterAll.push(`${label} ${x}`);
    lines.push(
      `${label}s reached: ${all.length - missing.length} of ${all.length}${missing.length ? `; not: ${missing.map((x) => (notGenerated[`${label} ${x}`] ? `${x} (${notGenerated[`${label} ${x}`]})` : x)).join(', ')}` : ''}`,
    );
  }
  return { unreached, reachedAfterAll, text: lines.join('\n') };
}
