// Deliberately broken variants of pvx (mutants): a check that cannot fail proves nothing, so each
// invariant is shown to catch at least one of them within the seeds CI runs. Most break a pure
// decision (src/operator/wiring.ts, Decisions: what the reconcilers carry out is passed in); a few
// break the runtime around it (the fence, the claim ledger, the evaluator's memory of its creates),
// patched for one run and restored after.
//
// Adding one: a name, what it breaks, the invariants meant to catch it, and the change — wrap the
// decision's input or output, or patch the runtime in `install`.
import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { pvcAnnotations, requestAnnotations, requestLabels } from '../../src/crds/keys.ts';
import type { RequestStatus } from '../../src/crds/volume-expansion-request.ts';
import { FencedKubeClient } from '../../src/k8s/fenced-client.ts';
import { formatBytes, parseBytes } from '../../src/k8s/quantity.ts';
import { PolicyEvaluator } from '../../src/operator/reconcilers/expansion-policy.ts';
import { ExpansionRequestReconciler } from '../../src/operator/reconcilers/expansion-request.ts';
import { UnseenCreates } from '../../src/operator/reconcilers/unseen-writes.ts';
import type { Decisions } from '../../src/operator/wiring.ts';
import { policySpecProblem, usedRatio } from '../../src/policies/autoscale/decide.ts';
import { policyEvent, policyRequest, type PolicyPlan, type VolumePlan } from '../../src/policies/autoscale/policy-pass.ts';
import { embeddedDriverProfiles } from '../../src/policies/budget/drivers.testing.ts';
import type { ClaimContext, RequestDecision, RequestInput } from '../../src/policies/request/decide.ts';

export interface Mutant {
  name: string;
  /** What is broken, in a sentence. */
  breaks: string;
  /** The invariants written to catch it: one of them must, within the seeds CI runs. */
  catches: readonly string[];
  /** The decisions the broken operator carries out. */
  decisions?: (pvx: Decisions) => Partial<Decisions>;
  /** Breaks the runtime for one run; returns what restores it. */
  install?: () => () => void;
  /** Breaks each pvx process as it is built (its controllers by name). */
  process?: (controllers: { name: string; opts: { reconcile: (key: string) => Promise<unknown> } }[]) => void;
}

type Decide = Decisions['decideRequest'];
type Pass = Decisions['policyPass'];

/** decideRequest with its input changed. */
const withInput = (change: (input: RequestInput) => RequestInput) => (pvx: Decisions) => ({
  decideRequest: ((input) => pvx.decideRequest(change(input))) as Decide,
});

/** decideRequest with its decision changed (each continuation of a patch too). */
function withDecision(change: (d: RequestDecision, input: RequestInput) => RequestDecision) {
  return (pvx: Decisions) => ({ decideRequest: ((input) => change(pvx.decideRequest(input), input)) as Decide });
}

/** Each claim context a request's decision reads, changed. */
const claimsRead = (input: RequestInput, change: (c: ClaimContext) => ClaimContext): RequestInput => ({ ...input, claim: (name) => change(input.claim(name)) });

const withoutAnnotations = (claim: V1PersistentVolumeClaim | undefined, keys: string[]): V1PersistentVolumeClaim | undefined =>
  claim && {
    ...claim,
    metadata: { ...claim.metadata, annotations: Object.fromEntries(Object.entries(claim.metadata?.annotations ?? {}).filter(([k]) => !keys.includes(k))) },
  };

/** A policy's request without the claim its policy measured (pvx.dev/measured-capacity, pvx.dev/claim-uid). */
function withoutMeasurement(input: RequestInput): RequestInput {
  if (!input.request.metadata.labels?.[requestLabels.policy] && !input.request.metadata.labels?.[requestLabels.clusterPolicy]) return input;
  const annotations = { ...input.request.metadata.annotations };
  delete annotations[requestAnnotations.measuredCapacity];
  delete annotations[requestAnnotations.claimUID];
  return { ...input, request: { ...input.request, metadata: { ...input.request.metadata, annotations } } };
}

const withStatus = (input: RequestInput, change: (s: RequestStatus) => RequestStatus): RequestInput => ({
  ...input,
  request: { ...input.request, status: change(input.request.status ?? {}) },
});

/** A patch decision with its claim patch changed (the record, the event and the continuations kept). */
function patchChanged(change: (d: Extract<RequestDecision, { kind: 'patch' }>) => Extract<RequestDecision, { kind: 'patch' }>) {
  return withDecision((d) => (d.kind === 'patch' ? change(d) : d));
}

/** Every requeue of a request made soon: a reconcile loop. */
function requeueSoon(d: RequestDecision): RequestDecision {
  if (d.kind === 'status' || d.kind === 'wait') return { ...d, requeueAfterMs: 500 };
  if (d.kind === 'patch') return { ...d, onPatched: (at) => requeueSoon(d.onPatched(at)), onRefused: (c, m) => requeueSoon(d.onRefused(c, m)) };
  return d;
}

/** The policy pass with its plans changed. */
const withPlans = (change: (plans: PolicyPlan[], input: Parameters<Pass>[0]) => PolicyPlan[]) => (pvx: Decisions) => ({
  policyPass: ((input) => change(pvx.policyPass(input), input)) as Pass,
});
/** The policy pass with its input changed. */
const withPassInput = (change: (input: Parameters<Pass>[0]) => Parameters<Pass>[0]) => (pvx: Decisions) => ({
  policyPass: ((input) => pvx.policyPass(change(input))) as Pass,
});

/** A prototype's method replaced for one run. */
function patchMethod<T extends object>(
  proto: T,
  name: string,
  replacement: (original: (...args: unknown[]) => unknown) => (...args: unknown[]) => unknown,
): () => () => void {
  return () => {
    const target = proto as Record<string, unknown>;
    const original = target[name] as (...args: unknown[]) => unknown;
    target[name] = replacement(original);
    return () => {
      target[name] = original;
    };
  };
}

/** Each install in turn; restores them all. */
function both(...installs: (() => () => void)[]): () => () => void {
  return () => {
    const restores = installs.map((install) => install());
    return () => restores.reverse().forEach((restore) => restore());
  };
}

/**
 * The evaluator's reads on the API server just before a create, gone — of the claim's requests and
 * of the claim itself: they stop a second request, and one for a claim created again under its
 * name, whatever let the pass decide it, so a mutant that breaks a check before them (the
 * evaluator's memory, the one-policy rule, the request's measurement) disables them as well.
 */
const noReadBeforeCreate = both(
  patchMethod(PolicyEvaluator.prototype, 'askedOnServer', () => async () => undefined),
  patchMethod(PolicyEvaluator.prototype, 'replacedOnServer', () => async () => undefined),
);

export const mutants: readonly Mutant[] = [
  {
    name: 'drop-patch-preconditions',
    breaks:
      'patches the claim without its UID and resourceVersion preconditions (a claim re-created after the decision is patched on the old one’s validation)',
    catches: ['patched-the-validated-claim', 'size-as-asked', 'one-raise-per-ask', 'no-raise-over-a-resize'],
    decisions: patchChanged((d) => ({ ...d, patch: { ...d.patch, uid: '', resourceVersion: '' } })),
  },
  {
    name: 'increment-twice',
    breaks: 'applies a request’s growth twice, recording the doubled size as its plan',
    catches: ['size-as-asked'],
    decisions: patchChanged((d) => {
      const from = d.record.acceptedPlan?.fromCapacity;
      const to = d.patch.storage;
      if (!from || !to || d.record.reason !== 'Accepted') return d;
      const doubled = formatBytes(parseBytes(to) * 2n - parseBytes(from));
      return {
        ...d,
        record: {
          ...d.record,
          targetSize: doubled,
          acceptedPlan: { ...(d.record.acceptedPlan as NonNullable<RequestStatus['acceptedPlan']>), targetSize: doubled },
        },
        patch: { ...d.patch, storage: doubled, annotations: { ...d.patch.annotations, [pvcAnnotations.targetSize]: doubled } },
      };
    }),
  },
  {
    name: 'ignore-roundUpTo',
    breaks: 'sizes every request as if it asked for the default rounding (1Gi)',
    catches: ['size-as-asked'],
    decisions: withInput((input) => ({ ...input, request: { ...input.request, spec: { ...input.request.spec, roundUpTo: undefined } } })),
  },
  {
    name: 'ignore-ordinals',
    breaks: 'names a StatefulSet’s claims from ordinal 0 whatever spec.ordinals.start says',
    catches: ['raised-claim-is-targeted'],
    decisions: withInput((input) =>
      input.statefulSet ? { ...input, statefulSet: { ...input.statefulSet, spec: { ...input.statefulSet.spec!, ordinals: undefined } } } : input,
    ),
  },
  {
    name: 'deleted-child-counts-as-missing',
    breaks: 'forgets which children a StatefulSet request has seen, so a deleted one is made again',
    catches: ['child-made-once'],
    decisions: withInput((input) => withStatus(input, (s) => ({ ...s, ...(s.targets ? { targets: s.targets.map(({ requestUID: _seen, ...t }) => t) } : {}) }))),
  },
  {
    name: 'children-ask-again',
    breaks: 'a StatefulSet request forgets its children and its pinned sizes: a deleted child is made again with the parent’s increment',
    catches: ['one-raise-per-ask', 'child-made-once'],
    decisions: withInput((input) => {
      if (!input.request.spec.target.statefulSetName) return input;
      const forgetting = withStatus(input, (s) => ({
        ...s,
        ...(s.targets ? { targets: s.targets.map(({ requestUID: _seen, targetSize: _pinned, ...t }) => t) } : {}),
      }));
      return claimsRead(forgetting, (c) => ({ ...c, claim: withoutAnnotations(c.claim, [pvcAnnotations.request, pvcAnnotations.requestUID]) }));
    }),
  },
  {
    name: 'pin-larger',
    breaks: 'pins each StatefulSet claim 1Gi above what the spec asks',
    catches: ['pinned-as-asked'],
    decisions: withDecision((d) => {
      if (d.kind !== 'status' || d.status.reason !== 'Accepted' || !d.status.targets) return d;
      return {
        ...d,
        status: {
          ...d.status,
          targets: d.status.targets.map((t) => (t.targetSize ? { ...t, targetSize: formatBytes(parseBytes(t.targetSize) + 2n ** 30n) } : t)),
        },
      };
    }),
  },
  {
    name: 'forget-patched',
    breaks: 'forgets that a request already patched its claim, so it is decided as new again',
    catches: ['one-raise-per-ask', 'size-as-asked'],
    decisions: withInput((input) => {
      const { timeline, acceptedPlan: _plan, ...s } = input.request.status ?? {};
      const forgot = { ...input, request: { ...input.request, status: { ...s, ...(timeline ? { timeline: { ...timeline, patchedAt: undefined } } : {}) } } };
      return claimsRead(forgot, (c) => ({ ...c, claim: withoutAnnotations(c.claim, [pvcAnnotations.requestUID]) }));
    }),
  },
  {
    name: 'forget-class-patched',
    breaks: 'forgets that a request already set its claim’s VolumeAttributesClass, so one changed back by hand is set again',
    catches: ['one-class-change-per-request'],
    decisions: withInput((input) => {
      if (!input.request.spec.volumeAttributesClassName) return input;
      const { timeline, acceptedPlan: _plan, ...s } = input.request.status ?? {};
      const forgot = { ...input, request: { ...input.request, status: { ...s, ...(timeline ? { timeline: { ...timeline, patchedAt: undefined } } : {}) } } };
      return claimsRead(forgot, (c) => ({ ...c, claim: withoutAnnotations(c.claim, [pvcAnnotations.requestUID]) }));
    }),
  },
  {
    name: 'ignore-resize-in-flight',
    breaks: 'reads a claim being resized as if it were not (its spec taken for its capacity)',
    catches: ['no-raise-over-a-resize'],
    decisions: withInput((input) =>
      claimsRead(input, (c) => ({
        ...c,
        claim: c.claim && {
          ...c.claim,
          spec: { ...c.claim.spec, resources: { ...c.claim.spec?.resources, requests: { storage: c.claim.status?.capacity?.storage ?? '0' } } },
        },
      })),
    ),
  },
  {
    name: 'reopen-finished',
    breaks: 'decides a finished request again as if it had not finished',
    catches: ['terminal-is-final', 'patch-after-finish'],
    decisions: withInput((input) =>
      ['Completed', 'Failed', 'Rejected'].includes(input.request.status?.phase ?? '') ? withStatus(input, ({ phase: _done, ...s }) => s) : input,
    ),
  },
  {
    name: 'skip-approval',
    breaks: 'patches a request that needs approval without one',
    catches: ['only-the-approved-plan'],
    decisions: withInput((input) => ({
      ...input,
      request: {
        ...input.request,
        metadata: { ...input.request.metadata, annotations: { ...input.request.metadata.annotations, [requestAnnotations.approval]: 'no' } },
      },
    })),
  },
  {
    name: 'ignore-driver-limit',
    breaks: 'knows no driver’s largest volume',
    catches: ['above-class-maximum'],
    decisions: withInput((input) => ({ ...input, profiles: (p) => ({ ...(input.profiles ?? embeddedDriverProfiles)(p), maxBytes: () => undefined }) })),
  },
  {
    name: 'wait-out-a-final-refusal',
    breaks: 'takes a driver’s refusal its profile knows no retry gets past (TopoLVM’s full node) for one that may pass, and waits on it',
    catches: ['settles'],
    decisions: withInput((input) => ({
      ...input,
      profiles: (p) => {
        const profile = (input.profiles ?? embeddedDriverProfiles)(p);
        return { ...profile, errors: profile.errors.map((e) => (e.kind === 'final' ? { ...e, kind: 'refused' as const } : e)) };
      },
    })),
  },
  {
    name: 'ignore-guardrails',
    breaks: 'validates requests without the cluster guardrails',
    catches: ['within-guardrails'],
    decisions: withInput((input) => claimsRead(input, (c) => ({ ...c, guardrails: [], guardrailsUnknown: undefined }))),
  },
  {
    name: 'ignore-approval-guardrail',
    breaks: 'patches a request its namespace’s cluster guardrail holds for approval, unapproved (only requests marked for approval wait)',
    catches: ['only-the-approved-plan'],
    decisions: withInput((input) => claimsRead(input, (c) => ({ ...c, guardrails: c.guardrails.map(({ requireApproval: _ignored, ...g }) => g) }))),
  },
  {
    name: 'class-left-out',
    breaks: 'patches a request’s size without the VolumeAttributesClass it sets in the same write',
    catches: ['size-and-class-in-one-patch'],
    decisions: patchChanged((d) =>
      d.patch.storage && d.patch.volumeAttributesClassName ? { ...d, patch: { ...d.patch, volumeAttributesClassName: undefined } } : d,
    ),
  },
  {
    name: 'wrong-class',
    breaks: 'sets a VolumeAttributesClass other than the one asked for',
    catches: ['class-as-requested'],
    decisions: patchChanged((d) =>
      d.patch.volumeAttributesClassName ? { ...d, patch: { ...d.patch, volumeAttributesClassName: `${d.patch.volumeAttributesClassName}-x` } } : d,
    ),
  },
  {
    name: 'complete-on-patch',
    breaks: 'calls a request Completed as soon as its claim is patched',
    catches: ['completed-means-grown'],
    decisions: patchChanged((d) => ({
      ...d,
      onPatched: () => ({ kind: 'finish', status: { ...d.record, phase: 'Completed', reason: 'Completed', message: 'done' }, result: 'completed' }),
    })),
  },
  {
    name: 'complete-class-on-patch',
    breaks: 'calls a VolumeAttributesClass change Completed as soon as its claim is patched',
    catches: ['completed-means-applied'],
    decisions: patchChanged((d) =>
      d.patch.volumeAttributesClassName && !d.patch.storage
        ? {
            ...d,
            onPatched: () => ({ kind: 'finish', status: { ...d.record, phase: 'Completed', reason: 'Completed', message: 'done' }, result: 'completed' }),
          }
        : d,
    ),
  },
  {
    name: 'never-finish',
    breaks: 'keeps a completed request Expanding for ever',
    catches: ['settles'],
    decisions: withDecision((d) =>
      d.kind === 'finish' && d.status.phase === 'Completed'
        ? { kind: 'status', status: { ...d.status, phase: 'Expanding', reason: 'WaitingForResizer' }, requeueAfterMs: 30_000 }
        : d,
    ),
  },
  {
    name: 'deadline-ignored-while-pending',
    breaks: 'ignores spec.deadline while a request waits (Pending)',
    catches: ['deadline-holds'],
    decisions: withInput((input) =>
      input.request.status?.phase === 'Pending' ? { ...input, request: { ...input.request, spec: { ...input.request.spec, deadline: undefined } } } : input,
    ),
  },
  {
    name: 'requeue-fast',
    breaks: 'looks at every unfinished request again every half second',
    catches: ['no-hot-loop'],
    decisions: withDecision((d) => requeueSoon(d)),
  },
  {
    name: 'churn-status',
    breaks: 'writes a new message at every reconcile, so each write wakes the next at the same instant',
    catches: ['time-passes', 'no-hot-loop'],
    decisions: withDecision((d) => (d.kind === 'status' ? { ...d, status: { ...d.status, message: `${d.status.message ?? ''} (${Math.random()})` } } : d)),
  },
  {
    name: 'read-usage-every-second',
    breaks: 'times the next policy pass one second ahead, whatever the usage source refreshes',
    catches: ['no-hot-loop'],
    decisions: () => ({ nextReadDelayMs: () => 1000 }),
  },
  {
    name: 'every-policy-acts',
    // With the checks behind the one-policy rule gone as well — the evaluator's second look and its
    // read of the API server before each create, and a request's check of the claim its policy
    // measured — or the second policy's request is never made, or ends Superseded.
    breaks: 'lets every namespaced policy that selects a claim grow it (nothing looked at again before the create, the measurement ignored)',
    catches: ['one-raise-per-breach'],
    decisions: (pvx) => ({
      policyPass: ((input) => {
        if (input.policies.length < 2) return pvx.policyPass(input);
        return input.policies.flatMap((p, i) =>
          pvx
            .policyPass({ ...input, policies: [p], clusterPolicies: i === 0 ? input.clusterPolicies : [] })
            .filter((plan) => i === 0 || plan.policy.ref.kind === 'VolumeExpansionPolicy'),
        );
      }) as Pass,
      decideRequest: ((input) => pvx.decideRequest(withoutMeasurement(input))) as Decide,
    }),
    install: both(
      patchMethod(PolicyEvaluator.prototype, 'movedSinceDecided', () => () => undefined),
      noReadBeforeCreate,
    ),
  },
  {
    name: 'ignore-measurement',
    breaks: 'carries out a policy’s request on a claim grown since the policy measured it (and on one re-created)',
    catches: ['one-raise-per-breach'],
    decisions: withInput(withoutMeasurement),
    install: noReadBeforeCreate,
  },
  {
    name: 'ignore-cooldown',
    breaks: 'reads every policy’s cooldown as one second',
    catches: ['cooldown-holds'],
    decisions: withPassInput((input) => ({
      ...input,
      policies: input.policies.map((p) => ({ ...p, spec: { ...p.spec, cooldown: '1s' } })),
      clusterPolicies: input.clusterPolicies.map((p) => ({ ...p, spec: { ...p.spec, cooldown: '1s' } })),
    })),
  },
  {
    name: 'ignore-policy-maximum',
    breaks: 'reads no policy’s maxSize: not when it decides a step, nor when its request is carried out',
    catches: ['above-policy-maximum'],
    decisions: (pvx: Decisions) => ({
      ...withPassInput((input) => ({ ...input, policies: input.policies.map((p) => ({ ...p, spec: { ...p.spec, maxSize: undefined } })) }))(pvx),
      ...withInput((input) => (input.askingPolicy?.present ? { ...input, askingPolicy: { present: true } } : input))(pvx),
    }),
  },

  {
    name: 'forecast-on-a-spike',
    breaks: 'grows a claim on a forecast whenever its newest measurement is above 60 %',
    catches: ['no-forecast-on-a-spike'],
    decisions: withPlans((plans, input) =>
      plans.map((plan) => ({
        ...plan,
        volumes: plan.volumes.map((v): VolumePlan => {
          if (v.decision.kind !== 'idle' || plan.mode === 'DryRun' || !v.newest || usedRatio(v.newest) <= 0.6) return v;
          const decision = {
            kind: 'expand' as const,
            trigger: 'Forecast' as const,
            fromBytes: v.newest.capacityBytes,
            targetBytes: v.newest.capacityBytes + 2n ** 30n,
            message: 'forecast',
            detail: '',
          };
          const request = policyRequest(plan.policy, plan.mode, v.pvc, decision, input.now);
          return {
            ...v,
            decision,
            action: {
              kind: 'create',
              namespace: request.metadata.namespace as string,
              request,
              event: policyEvent(plan.policy, v.pvc, 'Normal', 'RequestCreated', 'forecast'),
            },
          };
        }),
      })),
    ),
  },
  {
    name: 'bad-window-stops-the-pass',
    breaks: 'a policy whose window pvx cannot read throws out of the whole policy pass',
    catches: ['policies-evaluated'],
    decisions: (pvx) => ({
      policyPass: ((input) => {
        const broken = input.policies.find((p) => policySpecProblem(p.spec));
        if (broken) throw new Error(`cannot read the windows of ${broken.metadata.name}`);
        return pvx.policyPass(input);
      }) as Pass,
    }),
  },
  {
    name: 'no-fence',
    breaks: 'writes whether or not this replica holds the lease',
    catches: ['only-the-leader-writes'],
    install: patchMethod(FencedKubeClient.prototype, 'through', () => (_call, forward) => (forward as () => Promise<unknown>)()),
  },
  {
    name: 'always-write-status',
    breaks: 'writes a request’s status at every reconcile, changed or not',
    catches: ['writes-change-something'],
    install: patchMethod(
      ExpansionRequestReconciler.prototype,
      'writeStatus',
      (original) =>
        function (this: unknown, ...args: unknown[]) {
          return original.call(this, args[0], args[1], { ...(args[2] as object | undefined), always: true });
        },
    ),
  },
  {
    name: 'forget-own-creates',
    breaks: 'the policy evaluator forgets the requests it created until its cache shows them (and reads none on the API server before a create)',
    catches: ['one-raise-per-breach'],
    install: both(
      patchMethod(UnseenCreates.prototype, 'unseen', () => () => []),
      noReadBeforeCreate,
    ),
  },
  {
    name: 'ignore-a-performance-budget',
    breaks: 'carries out a change of VolumeAttributesClass whatever a budget of performance changes holds (as if the driver had none)',
    catches: ['within-budget'],
    decisions: withInput((input) => {
      const profiles = input.profiles ?? embeddedDriverProfiles;
      return {
        ...input,
        profiles: (provisioner) => {
          const p = profiles(provisioner);
          return p.modificationBudget?.counts === 'performance' ? { ...p, modificationBudget: undefined } : p;
        },
      };
    }),
  },
  {
    name: 'no-claim-ledger',
    breaks: 'never records changes made to a budgeted claim outside pvx',
    catches: ['ledger-counts-outside-changes'],
    process: (controllers) => {
      for (const c of controllers) if (c.name === 'claim-ledger') c.opts.reconcile = async () => ({});
    },
  },
];

export function mutantNamed(name: string): Mutant {
  const m = mutants.find((x) => x.name === name);
  if (!m) throw new TypeError(`unknown mutant "${name}"; known: ${mutants.map((x) => x.name).join(', ')}`);
  return m;
}
