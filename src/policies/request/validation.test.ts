import type { V1PersistentVolumeClaim, V1ResourceQuota, V1StorageClass, V1VolumeAttributesClass } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { GiB } from '../../k8s/quantity.ts';
import type { ClusterVolumeExpansionPolicy } from '../../crds/cluster-volume-expansion-policy.ts';
import type { Modification } from '../budget/budget.ts';
import { driverProfiles } from '../budget/drivers.ts';
import { embeddedDriverProfiles } from '../budget/drivers.testing.ts';
import { guardrailsUnknown, validateRequest, type ValidationInput } from './validation.ts';

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

  it('a budget of performance changes (GCE Hyperdisk, Azure Premium SSD v2): a class change waits for it, a size alone does not', () => {
    const performance = driverProfiles({ 'ebs.csi.aws.com': { count: 1, windowMs: 4 * 3_600_000, counts: 'performance' } });
    const modifications: Modification[] = [{ at: new Date(now.getTime() - 3_600_000), by: 'ver/faster', change: 'class gp3 → io2', performance: true }];
    const held = validateRequest(classInput({ profiles: performance, modifications }));
    expect(held).toMatchObject({ kind: 'wait', reason: 'ModificationBudgetExhausted', retryAfterMs: 3 * 3_600_000 });
    expect(held.kind === 'wait' ? held.message : '').toContain('allows 1 performance change (VolumeAttributesClass) per volume per 4h');
    expect(validateRequest(input({ now, profiles: performance, modifications })).kind).toBe('accept');
  });

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
