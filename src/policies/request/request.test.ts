import type { V1PersistentVolumeClaim, V1ResourceQuota, V1StorageClass, V1VolumeAttributesClass } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { GiB } from '../../k8s/quantity.ts';
import type { Phase, VolumeExpansionRequest } from '../../crds/volume-expansion-request.ts';
import type { Modification } from '../budget/budget.ts';
import { defaultDriverProfiles, driverProfiles } from '../budget/drivers.ts';
import { embeddedDriverProfiles } from '../budget/drivers.testing.ts';
import { derivePhase, inFlight, oldestPhaseAges, type PhaseInput } from './phase.ts';
import { targetBytes } from './sizing.ts';
import { guardrailsUnknown, validateRequest, type ValidationInput } from './validation.ts';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';

describe('targetBytes', () => {
  it.each([
    [{ size: '40Gi' }, 30n * GiB, 40n * GiB],
    [{ size: '40G' }, 30n * GiB, 38n * GiB], // 40e9 bytes rounds up to 38 GiB
    [{ size: '1.5Gi' }, GiB, 2n * GiB],
    [{ size: '1.5Gi', roundUpTo: '1Mi' }, GiB, 1536n * 1024n ** 2n],
    [{ increment: '10Gi' }, 30n * GiB, 40n * GiB],
    [{ increment: '25%' }, 40n * GiB, 50n * GiB],
    [{ increment: '10%' }, 10n * GiB, 11n * GiB],
    [{ increment: '12.5%' }, 8n * GiB, 9n * GiB],
    [{ increment: '1%' }, 10n * GiB, 11n * GiB], // 10.1 GiB rounds up
    [{ increment: '100%' }, 3n * GiB, 6n * GiB],
  ])('%o of %s → %s', (spec, capacity, want) => {
    expect(targetBytes(spec, capacity)).toEqual({ ok: true, bytes: want });
  });

  it.each([
    [{}, /exactly one/],
    [{ size: '1Gi', increment: '1Gi' }, /exactly one/],
    [{ size: 'ten' }, /spec\.size: "ten"/],
    [{ size: '-1Gi' }, /must be positive/],
    [{ increment: '0%' }, /must be positive/],
    [{ increment: '0' }, /must be positive/],
    [{ increment: '5 %' }, /spec\.increment/],
    [{ size: '1Gi', roundUpTo: '0' }, /roundUpTo must be positive/],
  ])('rejects %o', (spec, message) => {
    const r = targetBytes(spec, GiB);
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.message).toMatch(message);
  });
});

const pvc = (over: { phase?: string; sc?: string; request?: string; capacity?: string; allocated?: string } = {}): V1PersistentVolumeClaim => ({
  metadata: { name: 'data', namespace: 'db', uid: 'u1' },
  spec: { storageClassName: over.sc ?? 'fast', resources: { requests: { storage: over.request ?? '30Gi' } } },
  status: {
    phase: over.phase ?? 'Bound',
    capacity: { storage: over.capacity ?? '30Gi' },
    ...(over.allocated ? { allocatedResources: { storage: over.allocated } } : {}),
  },
});
const sc = (over: Partial<V1StorageClass> = {}): V1StorageClass => ({
  metadata: { name: 'fast' },
  provisioner: 'ebs.csi.aws.com',
  parameters: { type: 'gp3' },
  allowVolumeExpansion: true,
  ...over,
});
const quota = (hard: Record<string, string>, used: Record<string, string>): V1ResourceQuota => ({
  metadata: { name: 'q' },
  spec: { hard },
  status: { hard, used },
});

const input = (over: Partial<ValidationInput> = {}): ValidationInput => ({
  spec: { size: '40Gi' },
  pvcName: 'data',
  pvc: pvc(),
  storageClass: sc(),
  quotas: [],
  earlierActiveRequests: [],
  modifications: [],
  profiles: embeddedDriverProfiles,
  now: new Date('2026-11-29T12:00:00Z'),
  ...over,
});

describe('validateRequest', () => {
  it('accepts a valid request with the target it computed', () => {
    expect(validateRequest(input())).toEqual({ kind: 'accept', fromBytes: 30n * GiB, targetBytes: 40n * GiB });
  });

  it.each<[string, Partial<ValidationInput>, string, RegExp]>([
    ['missing PVC', { pvc: undefined }, 'PVCNotFound', /does not exist/],
    ['unbound PVC', { pvc: pvc({ phase: 'Pending' }) }, 'PVCNotBound', /Pending/],
    ['missing class', { storageClass: undefined }, 'StorageClassNotFound', /fast/],
    ['class without expansion', { storageClass: sc({ allowVolumeExpansion: false }) }, 'ExpansionNotAllowed', /allowVolumeExpansion/],
    ['class with expansion unset', { storageClass: sc({ allowVolumeExpansion: undefined }) }, 'ExpansionNotAllowed', /allowVolumeExpansion/],
    ['shrink', { spec: { size: '20Gi' } }, 'NotLarger', /cannot shrink/],
    ['same size', { spec: { size: '30Gi' } }, 'NotLarger', /not larger/],
    ['bad size', { spec: { size: '30 Gi' } }, 'InvalidSize', /"30 Gi"/],
    ['beyond the EBS gp3 maximum', { spec: { size: '65Ti' } }, 'ExceedsDriverLimit', /64Ti/],
    ['beyond the EBS gp2 maximum', { spec: { size: '20Ti' }, storageClass: sc({ parameters: { type: 'gp2' } }) }, 'ExceedsDriverLimit', /16Ti/],
    ['beyond the EBS io1 maximum', { spec: { size: '17Ti' }, storageClass: sc({ parameters: { type: 'io1' } }) }, 'ExceedsDriverLimit', /16Ti/],
    ['beyond the EBS st1 maximum', { spec: { size: '17Ti' }, storageClass: sc({ parameters: { type: 'st1' } }) }, 'ExceedsDriverLimit', /16Ti/],
    ['beyond the EBS standard maximum', { spec: { size: '2Ti' }, storageClass: sc({ parameters: { type: 'standard' } }) }, 'ExceedsDriverLimit', /1Ti/],
    [
      'beyond the hostpath class maximum',
      {
        storageClass: sc({ provisioner: 'hostpath.pvx.dev', parameters: { maxVolumeSize: '3Gi' } }),
        pvc: pvc({ capacity: '1Gi', request: '1Gi' }),
        spec: { size: '5Gi' },
      },
      'ExceedsDriverLimit',
      /3Gi/,
    ],
    ['namespace storage quota', { quotas: [quota({ 'requests.storage': '50Gi' }, { 'requests.storage': '45Gi' })] }, 'QuotaExceeded', /needs 10 GiB more/],
    [
      'per-class quota',
      { quotas: [quota({ 'fast.storageclass.storage.k8s.io/requests.storage': '35Gi' }, { 'fast.storageclass.storage.k8s.io/requests.storage': '30Gi' })] },
      'QuotaExceeded',
      /fast\.storageclass/,
    ],
  ])('rejects: %s', (_name, over, reason, message) => {
    const v = validateRequest(input(over));
    expect(v.kind).toBe('reject');
    expect(v.kind === 'reject' && v.reason).toBe(reason);
    expect(v.kind === 'reject' ? v.message : '').toMatch(message);
  });

  it.each<[string, ValidationInput['guardrails'], string | undefined]>([
    ['within every guardrail', [{ policy: 'g', maxBytes: 50n * GiB, maxStepBytes: 10n * GiB, allowedStorageClasses: ['fast'] }], undefined],
    ['beyond the maximum size', [{ policy: 'g', maxBytes: 35n * GiB }], 'GuardrailMaxSize'],
    ['beyond the maximum step', [{ policy: 'g', maxStepBytes: 5n * GiB }], 'GuardrailMaxStep'],
    ['a class not allowed', [{ policy: 'g', allowedStorageClasses: ['slow'] }], 'GuardrailStorageClass'],
    [
      'the stricter of two policies',
      [
        { policy: 'a', maxBytes: 100n * GiB },
        { policy: 'b', maxBytes: 32n * GiB },
      ],
      'GuardrailMaxSize',
    ],
  ])('cluster guardrails: %s', (_name, guardrails, reason) => {
    const v = validateRequest(input({ guardrails }));
    if (reason) expect(v).toMatchObject({ kind: 'reject', reason });
    else expect(v.kind).toBe('accept');
  });

  it('guardrails that cannot be known yet fail closed: the request waits, never validated without them', () => {
    const v = validateRequest(input({ guardrails: [], guardrailsUnknown: 'namespace db is not known to pvx yet' }));
    expect(v).toMatchObject({ kind: 'wait', reason: 'GuardrailsUnknown', message: expect.stringContaining('namespace db is not known to pvx yet') });
  });

  it.each<[string, Record<string, string> | undefined, ClusterVolumeExpansionPolicy['spec'] | undefined, boolean]>([
    [
      'a namespace not seen yet, a guardrail that selects namespaces by label',
      undefined,
      { namespaceSelector: { matchLabels: { team: 'db' } }, guardrails: { maxSize: '1Ti' } },
      true,
    ],
    ['a namespace not seen yet, a guardrail over every namespace', undefined, { guardrails: { maxSize: '1Ti' } }, false],
    ['a namespace not seen yet, no guardrail', undefined, undefined, false],
    ['a namespace seen, a guardrail by label', { team: 'db' }, { namespaceSelector: { matchLabels: { team: 'db' } }, guardrails: { maxSize: '1Ti' } }, false],
  ])('guardrailsUnknown: %s', (_name, labels, spec, unknown) => {
    const policies: ClusterVolumeExpansionPolicy[] = spec
      ? [{ apiVersion: 'pvx.dev/v1alpha1', kind: 'ClusterVolumeExpansionPolicy', metadata: { name: 'cap' }, spec }]
      : [];
    expect(guardrailsUnknown(policies, 'db', labels) !== undefined).toBe(unknown);
  });

  it.each([
    ['gp3', '20Ti'],
    ['gp3', '64Ti'],
    ['io2', '64Ti'],
    ['GP3', '20Ti'], // the driver reads the type case-insensitively
    [undefined, '20Ti'], // no type: the EBS driver makes gp3
  ])('accepts EBS %s up to its maximum: %s', (type, size) => {
    const v = validateRequest(input({ spec: { size }, storageClass: sc({ parameters: type ? { type } : {} }) }));
    expect(v.kind).toBe('accept');
  });

  it('names the cluster policy in a guardrail rejection', () => {
    const v = validateRequest(input({ guardrails: [{ policy: 'platform-limits', maxBytes: 35n * GiB }] }));
    expect(v.kind === 'reject' ? v.message : '').toMatch(/ClusterVolumeExpansionPolicy platform-limits caps volumes at 35Gi; the target is 40Gi/);
  });

  it('charges the quota from max(spec, allocated) as Kubernetes does', () => {
    // allocated 35Gi after an earlier attempt: growing to 40Gi costs 5Gi more, which fits in 50Gi with 45Gi used
    const v = validateRequest(input({ pvc: pvc({ allocated: '35Gi' }), quotas: [quota({ 'requests.storage': '50Gi' }, { 'requests.storage': '45Gi' })] }));
    expect(v.kind).toBe('accept');
  });

  it('ignores quotas on other resources and other classes', () => {
    const v = validateRequest(input({ quotas: [quota({ 'requests.cpu': '1', 'slow.storageclass.storage.k8s.io/requests.storage': '1Gi' }, {})] }));
    expect(v.kind).toBe('accept');
  });

  it.each<[string, Partial<ValidationInput>, string]>([
    ['an expansion already in flight', { pvc: pvc({ request: '35Gi' }) }, 'ExpansionInFlight'],
    ['an earlier active request', { earlierActiveRequests: ['grow-1'] }, 'AnotherRequestActive'],
  ])('waits for %s', (_name, over, reason) => {
    const v = validateRequest(input(over));
    expect(v).toMatchObject({ kind: 'wait', reason });
  });

  it('waits for the EBS modification budget and says when the next one is allowed', () => {
    const now = new Date('2026-11-29T12:00:00Z');
    const h = (hours: number, by = 'ver/grow'): Modification => ({ at: new Date(now.getTime() - hours * 3_600_000), by });
    const v = validateRequest(input({ now, modifications: [h(30), h(20), h(10), h(5), h(1)] }));
    expect(v.kind).toBe('wait');
    if (v.kind !== 'wait') return;
    expect(v.reason).toBe('ModificationBudgetExhausted');
    expect(v.message).toContain('2026-11-29T16:00:00.000Z'); // the one 20 h ago leaves the window in 4 h
    expect(v.retryAfterMs).toBe(4 * 3_600_000);
    expect(validateRequest(input({ now, modifications: [h(30), h(20), h(10)] })).kind).toBe('accept');
  });

  it('says how the budget was counted: pvx requests and changes observed on the claim', () => {
    const now = new Date('2026-11-29T12:00:00Z');
    const at = (hours: number) => new Date(now.getTime() - hours * 3_600_000);
    const modifications: Modification[] = [
      { at: at(20), by: 'ver/grow-1', change: 'resized 10Gi → 20Gi' },
      { at: at(10), by: 'observed:kubectl-patch', change: 'resized 20Gi → 30Gi' },
      { at: at(5), by: 'ver/grow-2' },
      { at: at(1), by: 'ver/grow-3' },
    ];
    const v = validateRequest(input({ now, modifications }));
    expect(v).toMatchObject({ kind: 'wait', reason: 'ModificationBudgetExhausted' });
    expect(v.kind === 'wait' ? v.message : '').toBe(
      'ebs.csi.aws.com allows 4 modifications per volume per 24h; data has 4 in the window (3 by pvx requests, 1 observed: resized 20Gi → 30Gi by kubectl-patch at 2026-11-29T02:00:00.000Z); the next is allowed at 2026-11-29T16:00:00.000Z',
    );
  });

  it('takes the budget from the profiles it is given', () => {
    const now = new Date('2026-11-29T12:00:00Z');
    const recent: Modification[] = [1, 2].map((m) => ({ at: new Date(now.getTime() - m * 60_000), by: 'ver/x' }));
    const tight = (budget: { count: number; windowMs: number } | null) =>
      validateRequest(input({ now, modifications: recent, profiles: driverProfiles({ 'ebs.csi.aws.com': budget }) }));
    expect(tight({ count: 2, windowMs: 10 * 60_000 })).toMatchObject({ kind: 'wait', reason: 'ModificationBudgetExhausted', retryAfterMs: 8 * 60_000 });
    expect(tight(null).kind).toBe('accept');
    expect(tight({ count: 3, windowMs: 10 * 60_000 }).kind).toBe('accept');
  });
});

describe('validateRequest with a VolumeAttributesClass', () => {
  const now = new Date('2026-11-29T12:00:00Z');
  const io2: V1VolumeAttributesClass = { metadata: { name: 'io2' }, driverName: 'ebs.csi.aws.com', parameters: { type: 'io2', iops: '4000' } };
  /** The claim data (30Gi, gp3) with a class asked for and applied, and maybe a change under way. */
  const withClass = (
    spec: string | undefined,
    current: string | undefined,
    modify?: { targetVolumeAttributesClassName?: string; status: string },
    over: Parameters<typeof pvc>[0] = {},
  ): V1PersistentVolumeClaim => {
    const c = pvc(over);
    return {
      ...c,
      spec: { ...c.spec, ...(spec ? { volumeAttributesClassName: spec } : {}) },
      status: { ...c.status, ...(current ? { currentVolumeAttributesClassName: current } : {}), ...(modify ? { modifyVolumeStatus: modify } : {}) },
    };
  };
  const classInput = (over: Partial<ValidationInput> = {}): ValidationInput =>
    input({ spec: { volumeAttributesClassName: 'io2' }, pvc: withClass('gp3', 'gp3'), volumeAttributesClass: io2, now, ...over });

  it('accepts a class alone: no size, the class applied now and the one to set', () => {
    expect(validateRequest(classInput())).toEqual({ kind: 'accept', fromBytes: 30n * GiB, fromClass: 'gp3', targetClass: 'io2' });
  });

  it('accepts a size and a class together (one patch), and a class from none', () => {
    expect(validateRequest(classInput({ spec: { size: '40Gi', volumeAttributesClassName: 'io2' } }))).toEqual({
      kind: 'accept',
      fromBytes: 30n * GiB,
      targetBytes: 40n * GiB,
      fromClass: 'gp3',
      targetClass: 'io2',
    });
    expect(validateRequest(classInput({ pvc: pvc() }))).toEqual({ kind: 'accept', fromBytes: 30n * GiB, targetClass: 'io2' });
  });

  it('a class already applied: accepted with nothing to change (the request completes at once), even with no budget left', () => {
    const h = (hours: number) => new Date(now.getTime() - hours * 3_600_000);
    expect(
      validateRequest(classInput({ pvc: withClass('io2', 'io2'), modifications: [h(4), h(3), h(2), h(1)].map((at) => ({ at, by: 'ver/earlier' })) })),
    ).toEqual({ kind: 'accept', fromBytes: 30n * GiB, fromClass: 'io2' });
  });

  it('a class already applied needs no class object to be left alone (it may have been deleted since)', () => {
    expect(validateRequest(classInput({ pvc: withClass('io2', 'io2'), volumeAttributesClass: undefined }))).toEqual({
      kind: 'accept',
      fromBytes: 30n * GiB,
      fromClass: 'io2',
    });
  });

  it('a class already applied with a size: only the size changes', () => {
    expect(validateRequest(classInput({ spec: { size: '40Gi', volumeAttributesClassName: 'io2' }, pvc: withClass('io2', 'io2') }))).toEqual({
      kind: 'accept',
      fromBytes: 30n * GiB,
      targetBytes: 40n * GiB,
      fromClass: 'io2',
    });
  });

  it('a class change needs no expandable StorageClass: it is not an expansion', () => {
    expect(validateRequest(classInput({ storageClass: sc({ allowVolumeExpansion: false }) })).kind).toBe('accept');
  });

  it.each<[string, Partial<ValidationInput>, string, RegExp]>([
    [
      'a class that does not exist, once the wait for it is over',
      { volumeAttributesClass: undefined, missingClassWaitUntil: now },
      'VolumeAttributesClassNotFound',
      /io2 does not exist/,
    ],
    ['a class that does not exist, without a wait', { volumeAttributesClass: undefined }, 'VolumeAttributesClassNotFound', /create it/],
    [
      'a class of another driver',
      { volumeAttributesClass: { ...io2, driverName: 'pd.csi.storage.gke.io' } },
      'VolumeAttributesClassDriverMismatch',
      /pd\.csi\.storage\.gke\.io.*ebs\.csi\.aws\.com/,
    ],
    ['a cluster that does not serve VolumeAttributesClasses', { volumeAttributesClassesServed: false }, 'VolumeAttributesClassUnsupported', /Kubernetes 1\.34/],
    ['an unbound claim', { pvc: withClass(undefined, undefined, undefined, { phase: 'Pending' }) }, 'PVCNotBound', /Pending/],
    [
      'a change to this class the driver already refused',
      { pvc: withClass('io2', 'gp3', { targetVolumeAttributesClassName: 'io2', status: 'Infeasible' }) },
      'VolumeAttributesClassInfeasible',
      /infeasible/,
    ],
    ['a StorageClass a guardrail does not allow', { guardrails: [{ policy: 'g', allowedStorageClasses: ['slow'] }] }, 'GuardrailStorageClass', /slow/],
    // The class sets the volume type io2 (64 TiB); its limit, not gp3's 16 TiB, applies to the size.
    [
      'a size beyond the limit of the volume type the class sets',
      { spec: { size: '65Ti', volumeAttributesClassName: 'io2' } },
      'ExceedsDriverLimit',
      /with VolumeAttributesClass io2 \(64Ti\)/,
    ],
  ])('rejects %s', (_name, over, reason, message) => {
    const v = validateRequest(classInput(over));
    expect(v).toMatchObject({ kind: 'reject', reason });
    expect(v.kind === 'reject' ? v.message : '').toMatch(message);
  });

  it('a size the class’s volume type allows is accepted although the StorageClass’s type would not', () => {
    const standard = sc({ parameters: { type: 'standard' } }); // 1 TiB at most
    expect(validateRequest(classInput({ storageClass: standard, spec: { size: '2Ti', volumeAttributesClassName: 'io2' } })).kind).toBe('accept');
    expect(validateRequest(input({ storageClass: standard, spec: { size: '2Ti' }, now }))).toMatchObject({ kind: 'reject', reason: 'ExceedsDriverLimit' });
  });

  it('waits a while for a class it has not seen (it may be applied with the request), then rejects', () => {
    const v = validateRequest(classInput({ volumeAttributesClass: undefined, missingClassWaitUntil: new Date(now.getTime() + 90_000) }));
    expect(v).toMatchObject({ kind: 'wait', reason: 'VolumeAttributesClassNotFound', retryAfterMs: 10_000 });
    expect(v.kind === 'wait' ? v.message : '').toMatch(/until 2026-11-29T12:01:30.000Z, then the request is rejected/);
  });

  it.each<[string, Partial<ValidationInput>, string]>([
    [
      'a class change of the volume under way',
      { pvc: withClass('gp3-fast', 'gp3', { targetVolumeAttributesClassName: 'gp3-fast', status: 'InProgress' }) },
      'ModificationInFlight',
    ],
    ['a class asked for and not taken up yet', { pvc: withClass('gp3-fast', 'gp3') }, 'ModificationInFlight'],
    [
      'a change to this very class by someone else',
      { pvc: withClass('io2', 'gp3', { targetVolumeAttributesClassName: 'io2', status: 'InProgress' }) },
      'ModificationInFlight',
    ],
    ['an expansion under way', { pvc: withClass('gp3', 'gp3', undefined, { request: '35Gi' }) }, 'ExpansionInFlight'],
    [
      'the modification budget (a class change is a modification)',
      { modifications: [1, 2, 3, 4].map((h) => ({ at: new Date(now.getTime() - h * 3_600_000), by: 'ver/earlier' })) },
      'ModificationBudgetExhausted',
    ],
  ])('waits for %s', (_name, over, reason) => {
    expect(validateRequest(classInput(over))).toMatchObject({ kind: 'wait', reason });
  });

  it('a size-only request waits while the volume’s class is being changed: one change of the volume at a time', () => {
    expect(validateRequest(input({ pvc: withClass('io2', 'gp3', { targetVolumeAttributesClassName: 'io2', status: 'InProgress' }) }))).toMatchObject({
      kind: 'wait',
      reason: 'ModificationInFlight',
    });
  });

  it.each<[string, { targetVolumeAttributesClassName?: string; status: string }]>([
    ['Pending (the class it asks for does not exist)', { status: 'Pending' }],
    ['Infeasible', { targetVolumeAttributesClassName: 'gp3-bad', status: 'Infeasible' }],
  ])('a claim whose earlier class change is %s may be set to another class: Kubernetes lets that end it', (_name, modify) => {
    expect(validateRequest(classInput({ pvc: withClass('gp3-bad', 'gp3', modify) }))).toMatchObject({ kind: 'accept', targetClass: 'io2' });
  });
});

const claim = (status: { capacity?: string; alloc?: string; conditions?: { type: string; message?: string }[]; uid?: string }): V1PersistentVolumeClaim => ({
  metadata: { name: 'data', uid: status.uid ?? 'u1' },
  status: {
    capacity: { storage: status.capacity ?? '1Gi' },
    ...(status.alloc ? { allocatedResourceStatuses: { storage: status.alloc } } : {}),
    conditions: (status.conditions ?? []).map((c) => ({ ...c, status: 'True' })),
  },
});
const ebs = defaultDriverProfiles('ebs.csi.aws.com');
const phaseOf = (over: Partial<PhaseInput>) =>
  derivePhase({ pvc: claim({}), pvcUID: 'u1', targetBytes: 2n * GiB, mountedByRunningPod: true, now: new Date('2026-11-29T12:00:00Z'), ...over });

describe('derivePhase', () => {
  it.each<[string, Partial<PhaseInput>, string, string]>([
    ['capacity reached', { pvc: claim({ capacity: '2Gi' }) }, 'Completed', 'Completed'],
    ['capacity beyond the target', { pvc: claim({ capacity: '3Gi' }) }, 'Completed', 'Completed'],
    ['patched, resizer not started', {}, 'Expanding', 'WaitingForResizer'],
    ['ControllerResizeInProgress', { pvc: claim({ alloc: 'ControllerResizeInProgress' }) }, 'ControllerExpanding', 'ControllerResizeInProgress'],
    ['Resizing condition only (older clusters)', { pvc: claim({ conditions: [{ type: 'Resizing' }] }) }, 'ControllerExpanding', 'ControllerResizeInProgress'],
    [
      'NodeResizePending with a pod',
      { pvc: claim({ alloc: 'NodeResizePending', conditions: [{ type: 'FileSystemResizePending' }] }) },
      'NodeExpansionPending',
      'NodeResizePending',
    ],
    ['NodeResizePending without a pod', { pvc: claim({ alloc: 'NodeResizePending' }), mountedByRunningPod: false }, 'WaitingForPod', 'NodeResizePending'],
    [
      'FileSystemResizePending only, no pod',
      { pvc: claim({ conditions: [{ type: 'FileSystemResizePending' }] }), mountedByRunningPod: false },
      'WaitingForPod',
      'NodeResizePending',
    ],
    ['NodeResizeInProgress', { pvc: claim({ alloc: 'NodeResizeInProgress' }) }, 'NodeExpansionPending', 'NodeResizeInProgress'],
    // Older clusters leave Resizing True while the node stage waits: the node stage wins.
    [
      'Resizing and FileSystemResizePending, with a pod',
      { pvc: claim({ conditions: [{ type: 'Resizing' }, { type: 'FileSystemResizePending' }] }) },
      'NodeExpansionPending',
      'FileSystemResizePending',
    ],
    [
      'Resizing and FileSystemResizePending, no pod',
      { pvc: claim({ conditions: [{ type: 'Resizing' }, { type: 'FileSystemResizePending' }] }), mountedByRunningPod: false },
      'WaitingForPod',
      'NodeResizePending',
    ],
    [
      'ControllerResizeInfeasible',
      { pvc: claim({ alloc: 'ControllerResizeInfeasible', conditions: [{ type: 'ControllerResizeError', message: 'OutOfRange: too big' }] }) },
      'Failed',
      'ControllerResizeInfeasible',
    ],
    ['NodeResizeInfeasible', { pvc: claim({ alloc: 'NodeResizeInfeasible' }) }, 'Failed', 'NodeResizeInfeasible'],
    ['legacy ControllerResizeFailed', { pvc: claim({ alloc: 'ControllerResizeFailed' }) }, 'Failed', 'ControllerResizeFailed'],
    ['an unknown status value', { pvc: claim({ alloc: 'SomethingNew' }) }, 'Expanding', 'UnknownResizeStatus'],
    [
      'controller error, retrying',
      { pvc: claim({ alloc: 'ControllerResizeInProgress', conditions: [{ type: 'ControllerResizeError', message: 'rpc error: Internal' }] }) },
      'ControllerExpanding',
      'ControllerResizeError',
    ],
    [
      'EBS rate limit',
      {
        driver: ebs,
        pvc: claim({
          alloc: 'ControllerResizeInProgress',
          conditions: [{ type: 'ControllerResizeError', message: 'VolumeModificationRateExceeded: wait 6h' }],
        }),
      },
      'ControllerExpanding',
      'DriverRateLimited',
    ],
    [
      'EBS: the previous modification still optimizing (a wait)',
      {
        driver: ebs,
        pvc: claim({
          alloc: 'ControllerResizeInProgress',
          conditions: [
            { type: 'ControllerResizeError', message: 'Could not resize volume "vol-1": volume "vol-1" in OPTIMIZING state, cannot currently modify' },
          ],
        }),
      },
      'ControllerExpanding',
      'DriverModificationInProgress',
    ],
    [
      'a driver text of another driver is not recognised',
      { pvc: claim({ alloc: 'ControllerResizeInProgress', conditions: [{ type: 'ControllerResizeError', message: 'VolumeModificationRateExceeded' }] }) },
      'ControllerExpanding',
      'ControllerResizeError',
    ],
    ['PVC deleted', { pvc: undefined }, 'Failed', 'PVCDeleted'],
    ['PVC replaced', { pvc: claim({ uid: 'u2' }) }, 'Failed', 'PVCReplaced'],
    ['deadline passed', { pvc: claim({ alloc: 'NodeResizePending' }), deadline: new Date('2026-11-29T11:00:00Z') }, 'Failed', 'DeadlineExceeded'],
    ['deadline passed but complete', { pvc: claim({ capacity: '2Gi' }), deadline: new Date('2026-11-29T11:00:00Z') }, 'Completed', 'Completed'],
  ])('%s → %s (%s)', (_name, over, phase, reason) => {
    expect(phaseOf(over)).toMatchObject({ phase, reason });
  });

  it('says when the EBS budget allows the next modification after a rate-limit error', () => {
    const now = new Date('2026-11-29T12:00:00Z');
    const h = (hours: number) => new Date(now.getTime() - hours * 3_600_000);
    const p = phaseOf({
      driver: ebs,
      now,
      modifications: [h(23), h(12), h(6), h(0.1)].map((at) => ({ at, by: 'ver/grow' })),
      pvc: claim({
        alloc: 'ControllerResizeInProgress',
        conditions: [{ type: 'ControllerResizeError', message: 'rpc error: code = Internal desc = VolumeModificationRateExceeded' }],
      }),
    });
    expect(p.reason).toBe('DriverRateLimited');
    expect(p.message).toContain('next modification at 2026-11-29T13:00:00.000Z'); // the one 23 h ago leaves the 24 h window
  });

  it('tells the user to start a pod while waiting for node expansion', () => {
    expect(phaseOf({ pvc: claim({ alloc: 'NodeResizePending' }), mountedByRunningPod: false }).message).toMatch(/start a pod/);
  });

  describe('volume.kubernetes.io/node-expansion-not-required (external-resizer v2.0): no pod is waited for', () => {
    const noNodeStep = (c: V1PersistentVolumeClaim): V1PersistentVolumeClaim => ({
      ...c,
      metadata: { ...c.metadata, annotations: { 'volume.kubernetes.io/node-expansion-not-required': 'true' } },
    });

    it('completes as soon as the resizer recorded the capacity, without any pod, and says there was no node step', () => {
      const p = phaseOf({ pvc: noNodeStep(claim({ capacity: '2Gi' })), mountedByRunningPod: false });
      expect(p).toMatchObject({ phase: 'Completed', reason: 'Completed' });
      expect(p.message).toMatch(/no node step/);
    });

    it('never asks for a pod, even while a node-stage condition is still shown', () => {
      const stale = noNodeStep(claim({ conditions: [{ type: 'FileSystemResizePending' }] }));
      const p = phaseOf({ pvc: stale, mountedByRunningPod: false });
      expect(p).toMatchObject({ phase: 'NodeExpansionPending', reason: 'NodeExpansionNotRequired' });
      expect(p.message).not.toMatch(/start a pod/);
      // Without the annotation, the same claim waits for a pod.
      expect(phaseOf({ pvc: claim({ conditions: [{ type: 'FileSystemResizePending' }] }), mountedByRunningPod: false }).phase).toBe('WaitingForPod');
    });

    it('only "true" counts', () => {
      const c = claim({ alloc: 'NodeResizePending' });
      expect(
        phaseOf({
          pvc: { ...c, metadata: { ...c.metadata, annotations: { 'volume.kubernetes.io/node-expansion-not-required': 'false' } } },
          mountedByRunningPod: false,
        }).phase,
      ).toBe('WaitingForPod');
    });
  });
});

describe('derivePhase with a VolumeAttributesClass', () => {
  const now = new Date('2026-11-29T12:00:00Z');
  /** Claim data at `capacity` asking for `spec`, with `current` applied and maybe a change under way. */
  const classed = (c: {
    capacity?: string;
    alloc?: string;
    spec?: string;
    current?: string;
    modify?: { target?: string; status: string };
    conditions?: { type: string; message?: string }[];
  }) => {
    const base = claim({ capacity: c.capacity, alloc: c.alloc, conditions: c.conditions });
    return {
      ...base,
      metadata: { ...base.metadata, namespace: 'db' },
      spec: { volumeAttributesClassName: c.spec ?? 'io2' },
      status: {
        ...base.status,
        ...(c.current ? { currentVolumeAttributesClassName: c.current } : {}),
        ...(c.modify
          ? { modifyVolumeStatus: { ...(c.modify.target ? { targetVolumeAttributesClassName: c.modify.target } : {}), status: c.modify.status } }
          : {}),
      },
    } as V1PersistentVolumeClaim;
  };
  const inProgress = { target: 'io2', status: 'InProgress' };
  const classOnly = (pvc: V1PersistentVolumeClaim, over: Partial<PhaseInput> = {}) =>
    derivePhase({ pvc, pvcUID: 'u1', targetClass: 'io2', mountedByRunningPod: true, now, ...over });
  const both = (pvc: V1PersistentVolumeClaim, over: Partial<PhaseInput> = {}) => classOnly(pvc, { targetBytes: 2n * GiB, ...over });

  it.each<[string, V1PersistentVolumeClaim, string, string]>([
    ['applied', classed({ current: 'io2' }), 'Completed', 'Completed'],
    ['patched, not taken up yet', classed({ current: 'gp3' }), 'Modifying', 'WaitingForResizer'],
    ['Pending (the class is not there for the resizer)', classed({ current: 'gp3', modify: { status: 'Pending' } }), 'Modifying', 'ModifyVolumePending'],
    ['InProgress', classed({ current: 'gp3', modify: inProgress, conditions: [{ type: 'ModifyingVolume' }] }), 'Modifying', 'ModifyVolumeInProgress'],
    [
      'InProgress after a driver error, retrying',
      classed({
        current: 'gp3',
        modify: inProgress,
        conditions: [{ type: 'ModifyingVolume' }, { type: 'ModifyVolumeError', message: 'rpc error: code = Internal desc = timeout' }],
      }),
      'Modifying',
      'ModifyVolumeError',
    ],
    ['an unknown status value', classed({ current: 'gp3', modify: { target: 'io2', status: 'Paused' } }), 'Modifying', 'UnknownModifyVolumeStatus'],
    [
      'Infeasible',
      classed({
        current: 'gp3',
        modify: { target: 'io2', status: 'Infeasible' },
        conditions: [{ type: 'ModifyVolumeError', message: 'iops 99999 above the maximum' }],
      }),
      'Failed',
      'ModifyVolumeInfeasible',
    ],
    ['the claim set to another class since', classed({ spec: 'gp3', current: 'gp3' }), 'Failed', 'VolumeAttributesClassChanged'],
  ])('class only, %s → %s (%s)', (_name, pvc, phase, reason) => {
    expect(classOnly(pvc)).toMatchObject({ phase, reason });
  });

  it('a driver rate limit on the class change reads as one, with the budget’s next slot', () => {
    const h = (hours: number) => new Date(now.getTime() - hours * 3_600_000);
    const pvc = classed({
      current: 'gp3',
      modify: inProgress,
      conditions: [{ type: 'ModifyVolumeError', message: 'rpc error: code = Internal desc = VolumeModificationRateExceeded' }],
    });
    const p = classOnly(pvc, {
      driver: defaultDriverProfiles('ebs.csi.aws.com'),
      modifications: [h(23), h(12), h(6), h(0.1)].map((at) => ({ at, by: 'ver/earlier' })),
    });
    expect(p).toMatchObject({ phase: 'Modifying', reason: 'DriverRateLimited' });
    expect(p.message).toContain('next modification at 2026-11-29T13:00:00.000Z');
  });

  it('Infeasible tells how to cancel: the class set back to the one applied, or removed when there was none', () => {
    const infeasible = { target: 'io2', status: 'Infeasible' };
    expect(classOnly(classed({ current: 'gp3', modify: infeasible })).message).toMatch(
      /set its spec\.volumeAttributesClassName back to gp3 \(kubectl patch pvc data -n db --type merge -p '\{"spec":\{"volumeAttributesClassName":"gp3"\}\}'\)/,
    );
    expect(classOnly(classed({ modify: infeasible })).message).toMatch(/remove its spec\.volumeAttributesClassName \(it had none/);
  });

  it.each<[string, V1PersistentVolumeClaim, string, string]>([
    [
      'neither done: the resize speaks first',
      classed({ alloc: 'ControllerResizeInProgress', current: 'gp3', modify: inProgress }),
      'ControllerExpanding',
      'ControllerResizeInProgress',
    ],
    ['the class applied, the size not yet', classed({ alloc: 'NodeResizePending', current: 'io2' }), 'NodeExpansionPending', 'NodeResizePending'],
    ['the size reached, the class not yet', classed({ capacity: '2Gi', current: 'gp3', modify: inProgress }), 'Modifying', 'ModifyVolumeInProgress'],
    ['both done', classed({ capacity: '2Gi', current: 'io2' }), 'Completed', 'Completed'],
    [
      'the class infeasible while the size grows',
      classed({ alloc: 'ControllerResizeInProgress', current: 'gp3', modify: { target: 'io2', status: 'Infeasible' } }),
      'Failed',
      'ModifyVolumeInfeasible',
    ],
    ['the size infeasible', classed({ alloc: 'ControllerResizeInfeasible', current: 'io2' }), 'Failed', 'ControllerResizeInfeasible'],
    [
      'a class change error while the resize waits for the resizer',
      classed({ current: 'gp3', modify: inProgress, conditions: [{ type: 'ModifyVolumeError', message: 'busy' }] }),
      'Expanding',
      'ModifyVolumeError',
    ],
  ])('size and class, %s → %s (%s)', (_name, pvc, phase, reason) => {
    expect(both(pvc)).toMatchObject({ phase, reason });
  });

  it('says both figures when done, and when the deadline passes', () => {
    expect(both(classed({ capacity: '2Gi', current: 'io2' })).message).toBe('capacity is 2Gi; VolumeAttributesClass is io2');
    expect(classOnly(classed({ current: 'io2' })).message).toBe('VolumeAttributesClass is io2');
    const late = both(classed({ capacity: '2Gi', current: 'gp3', modify: inProgress }), { deadline: new Date(now.getTime() - 1) });
    expect(late).toMatchObject({ phase: 'Failed', reason: 'DeadlineExceeded' });
    expect(late.message).toMatch(/\(capacity 2Gi; VolumeAttributesClass gp3\)$/);
  });

  it('a size reached is not failed by someone else’s infeasible resize: only the class is followed then', () => {
    expect(both(classed({ capacity: '3Gi', alloc: 'ControllerResizeInfeasible', current: 'gp3', modify: inProgress }))).toMatchObject({
      phase: 'Modifying',
      reason: 'ModifyVolumeInProgress',
    });
  });
});

describe('request gauges', () => {
  const at = new Date('2026-11-29T12:00:00Z');
  const req = (phase: Phase, secondsInPhase: number, patched = true) =>
    ({
      apiVersion: 'pvx.dev/v1alpha1',
      kind: 'VolumeExpansionRequest',
      metadata: { name: `${phase}-${secondsInPhase}` },
      spec: { target: { pvcName: 'x' }, size: '2Gi' },
      status: { phase, phaseSince: new Date(at.getTime() - secondsInPhase * 1000).toISOString(), timeline: patched ? { patchedAt: at.toISOString() } : {} },
    }) as VolumeExpansionRequest;

  it('oldestPhaseAges keeps the longest wait per unfinished phase and ignores finished ones', () => {
    const ages = oldestPhaseAges(
      [req('WaitingForPod', 30), req('WaitingForPod', 600), req('NodeExpansionPending', 5), req('Completed', 9999), req('Rejected', 9999, false)],
      at,
    );
    expect(Object.fromEntries(ages)).toEqual({ WaitingForPod: 600, NodeExpansionPending: 5 });
  });

  it('inFlight counts patched, unfinished requests', () => {
    expect(inFlight([req('WaitingForPod', 1), req('Pending', 1, false), req('Completed', 1)])).toBe(1);
  });
});
