import type {
  KubernetesObject,
  V1ManagedFieldsEntry,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1PersistentVolumeClaimCondition,
  V1Pod,
  V1ResourceQuota,
  V1StatefulSet,
  V1StorageClass,
} from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { pvcAnnotations } from '../crds/keys.ts';
import type { VolumeExpansionPolicy } from '../crds/volume-expansion-policy.ts';
import { audit, type AuditSnapshot, type RuleId } from '../policies/audit/rules.ts';
import { defaultDriverProfiles } from '../policies/budget/drivers.ts';
import { observeClaim } from '../policies/budget/ledger.ts';
import { derivePhase } from '../policies/request/phase.ts';
import { claimSizes } from '../policies/autoscale/policy-pass.ts';
import { recordedPatchTime } from '../policies/claim/writers.ts';
import { modificationInFlight, modificationState } from '../policies/claim/modify.ts';
import { resizeState, resizeUnderway } from '../policies/claim/resize.ts';
import { policySelects } from '../policies/autoscale/selection.ts';
import { validateRequest } from '../policies/request/validation.ts';
import { GiB } from './quantity.ts';
import { attributesClassFields, compactClaim, compactNamespace, namespaces, resources, storageRequestFields } from './resources.ts';
import type { ClaimOptions } from '../policies/claim/claims.testing.ts';

const now = new Date('2026-11-30T12:00:00Z');
const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000).toISOString();

/** A managedFields entry as the API server writes it. */
function entry(manager: string, operation: 'Update' | 'Apply', minutes: number, fields: object, subresource?: string): V1ManagedFieldsEntry {
  return {
    manager,
    operation,
    apiVersion: 'v1',
    time: ago(minutes) as unknown as Date,
    fieldsType: 'FieldsV1',
    fieldsV1: fields,
    ...(subresource ? { subresource } : {}),
  };
}

const createdBy = (manager: string, minutes: number) =>
  entry(manager, 'Update', minutes, {
    'f:metadata': { 'f:annotations': { '.': {}, 'f:kubectl.kubernetes.io/last-applied-configuration': {} }, 'f:labels': { '.': {}, 'f:app': {} } },
    'f:spec': { 'f:accessModes': {}, 'f:resources': { 'f:requests': { '.': {}, 'f:storage': {} } }, 'f:storageClassName': {}, 'f:volumeMode': {} },
  });
const controllerManager = entry('kube-controller-manager', 'Update', 600, {
  'f:metadata': { 'f:annotations': { 'f:pv.kubernetes.io/bind-completed': {}, 'f:volume.kubernetes.io/storage-provisioner': {} } },
  'f:spec': { 'f:volumeName': {} },
});
const controllerManagerStatus = entry(
  'kube-controller-manager',
  'Update',
  600,
  { 'f:status': { 'f:accessModes': {}, 'f:capacity': { '.': {}, 'f:storage': {} }, 'f:phase': {} } },
  'status',
);
const resizerStatus = entry(
  'csi-resizer',
  'Update',
  30,
  { 'f:status': { 'f:allocatedResourceStatuses': { 'f:storage': {} }, 'f:allocatedResources': { 'f:storage': {} } } },
  'status',
);
/** pvx's patch: the size and its annotations. */
const pvxPatch = (minutes: number) =>
  entry('pvx', 'Update', minutes, {
    'f:metadata': { 'f:annotations': { 'f:pvx.dev/request': {}, 'f:pvx.dev/request-uid': {}, 'f:pvx.dev/target-size': {} } },
    'f:spec': { 'f:resources': { 'f:requests': { 'f:storage': {} } } },
  });
/** pvx's annotations only (a later patch that left the size to someone else). */
const pvxAnnotationsOnly = (minutes: number) => entry('pvx', 'Update', minutes, { 'f:metadata': { 'f:annotations': { 'f:pvx.dev/recovered-to': {} } } });
const kubectlResize = (minutes: number) => entry('kubectl-patch', 'Update', minutes, { 'f:spec': { 'f:resources': { 'f:requests': { 'f:storage': {} } } } });

interface Claim extends Pick<ClaimOptions, 'request' | 'capacity' | 'allocated' | 'allocatedStatus' | 'phase' | 'conditions' | 'labels' | 'annotations'> {
  name: string;
  storageClass?: string;
  writers?: V1ManagedFieldsEntry[];
  /** spec.volumeAttributesClassName, status.currentVolumeAttributesClassName, status.modifyVolumeStatus. */
  vac?: { spec?: string; current?: string; modify?: { targetVolumeAttributesClassName?: string; status: string } };
}

/** A claim as the API server serves it: every field, a kubectl last-applied annotation, managedFields. */
function served(c: Claim): V1PersistentVolumeClaim {
  const request = c.request ?? '10Gi';
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: c.name,
      namespace: 'db',
      uid: `uid-${c.name}`,
      resourceVersion: '4711',
      generation: 3,
      creationTimestamp: ago(600) as unknown as Date,
      finalizers: ['kubernetes.io/pvc-protection'],
      labels: { app: 'db', ...c.labels },
      annotations: {
        'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify({
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          metadata: { name: c.name, namespace: 'db', labels: { app: 'db' } },
          spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '10Gi' } } },
        }),
        'pv.kubernetes.io/bind-completed': 'yes',
        'pv.kubernetes.io/bound-by-controller': 'yes',
        'volume.beta.kubernetes.io/storage-provisioner': 'ebs.csi.aws.com',
        'volume.kubernetes.io/storage-provisioner': 'ebs.csi.aws.com',
        'volume.kubernetes.io/selected-node': 'ip-10-0-1-17.eu-central-1.compute.internal',
        ...c.annotations,
      },
      managedFields: [createdBy('kubectl-client-side-apply', 600), controllerManager, controllerManagerStatus, ...(c.writers ?? [])],
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: request } },
      storageClassName: c.storageClass ?? 'gp3',
      volumeMode: 'Filesystem',
      volumeName: `pvc-${c.name}`,
      ...(c.vac?.spec ? { volumeAttributesClassName: c.vac.spec } : {}),
    },
    status: {
      phase: c.phase ?? 'Bound',
      accessModes: ['ReadWriteOnce'],
      capacity: { storage: c.capacity ?? request },
      ...(c.allocated ? { allocatedResources: { storage: c.allocated } } : {}),
      ...(c.allocatedStatus ? { allocatedResourceStatuses: { storage: c.allocatedStatus } } : {}),
      ...(c.conditions ? { conditions: c.conditions } : {}),
      ...(c.vac?.current ? { currentVolumeAttributesClassName: c.vac.current } : {}),
      ...(c.vac?.modify ? { modifyVolumeStatus: c.vac.modify } : {}),
    },
  };
}

const condition = (type: string, minutes: number, message?: string): V1PersistentVolumeClaimCondition => ({
  type,
  status: 'True',
  reason: 'Resizing',
  lastProbeTime: null as unknown as Date,
  lastTransitionTime: ago(minutes) as unknown as Date,
  ...(message ? { message } : {}),
});

const compact = (pvc: V1PersistentVolumeClaim) => compactClaim(pvc) as V1PersistentVolumeClaim;

describe('compactClaim', () => {
  it('is the claims cache’s transform', () => {
    expect(resources.persistentVolumeClaims.transform).toBe(compactClaim);
  });

  it('keeps what pvx reads and nothing else', () => {
    const pvc = served({
      name: 'data',
      request: '20Gi',
      capacity: '10Gi',
      allocated: '20Gi',
      allocatedStatus: 'NodeResizePending',
      conditions: [condition('FileSystemResizePending', 5, 'Waiting for user to (re-)start a pod to finish file system resize of volume on node.')],
      labels: { tier: 'primary' },
      annotations: {
        [pvcAnnotations.request]: 'grow',
        [pvcAnnotations.requestUID]: 'r1',
        [pvcAnnotations.targetSize]: '20Gi',
        [pvcAnnotations.previousCapacity]: '10Gi',
      },
      writers: [resizerStatus, pvxPatch(6)],
    });
    expect(compact(pvc)).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: 'data',
        namespace: 'db',
        uid: 'uid-data',
        resourceVersion: '4711',
        creationTimestamp: ago(600),
        labels: { app: 'db', tier: 'primary' },
        annotations: { 'pvx.dev/request': 'grow', 'pvx.dev/request-uid': 'r1', 'pvx.dev/target-size': '20Gi', 'pvx.dev/previous-capacity': '10Gi' },
        managedFields: [
          { manager: 'kubectl-client-side-apply', operation: 'Update', time: ago(600), fieldsV1: storageRequestFields },
          { manager: 'pvx', operation: 'Update', time: ago(6), fieldsV1: storageRequestFields },
        ],
      },
      spec: { storageClassName: 'gp3', volumeName: 'pvc-data', resources: { requests: { storage: '20Gi' } } },
      status: {
        phase: 'Bound',
        capacity: { storage: '10Gi' },
        allocatedResources: { storage: '20Gi' },
        allocatedResourceStatuses: { storage: 'NodeResizePending' },
        conditions: [
          {
            type: 'FileSystemResizePending',
            status: 'True',
            lastTransitionTime: ago(5),
            message: 'Waiting for user to (re-)start a pod to finish file system resize of volume on node.',
          },
        ],
      },
    });
  });

  it('keeps the resizer’s node-expansion-not-required annotation (no pod to wait for), and drops other annotations', () => {
    const pvc = served({
      name: 'data',
      annotations: {
        'volume.kubernetes.io/node-expansion-not-required': 'true',
        'volume.kubernetes.io/storage-provisioner': 'ebs.csi.aws.com',
        'kubectl.kubernetes.io/last-applied-configuration': '{"apiVersion":"v1"}',
        [pvcAnnotations.request]: 'grow',
      },
    });
    expect(compact(pvc).metadata?.annotations).toEqual({ 'volume.kubernetes.io/node-expansion-not-required': 'true', 'pvx.dev/request': 'grow' });
  });

  it('keeps the claim’s VolumeAttributesClass: asked for, applied, and the change under way (src/policies/claim/modify.ts)', () => {
    const pvc = served({
      name: 'data',
      vac: { spec: 'io2', current: 'gp3', modify: { targetVolumeAttributesClassName: 'io2', status: 'InProgress' } },
      conditions: [condition('ModifyingVolume', 2, 'Modifying volume to "io2" is in progress.')],
    });
    const small = compact(pvc);
    expect(small.spec?.volumeAttributesClassName).toBe('io2');
    expect(small.status).toMatchObject({
      currentVolumeAttributesClassName: 'gp3',
      modifyVolumeStatus: { targetVolumeAttributesClassName: 'io2', status: 'InProgress' },
    });
    expect(small.status?.conditions).toEqual([
      { type: 'ModifyingVolume', status: 'True', lastTransitionTime: ago(2), message: 'Modifying volume to "io2" is in progress.' },
    ]);
  });

  it('keeps pvx’s own updates of the claim even when they no longer own the size (recordedPatchTime reads them), and no empty fields', () => {
    const pvc = served({ name: 'data', writers: [pvxAnnotationsOnly(3), resizerStatus] });
    expect(compact(pvc).metadata?.managedFields).toEqual([
      { manager: 'kubectl-client-side-apply', operation: 'Update', time: ago(600), fieldsV1: storageRequestFields },
      { manager: 'pvx', operation: 'Update', time: ago(3) },
    ]);
    const bare = compact({ metadata: { name: 'x', namespace: 'db' } });
    expect(bare).toEqual({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'x', namespace: 'db' } });
    expect(JSON.stringify(compact(served({ name: 'data' })), (k, v: unknown) => (k === 'fieldsV1' ? undefined : v))).not.toMatch(/null|\{\}|\[\]|"undefined"/);
  });

  it('is a fraction of the claim as served', () => {
    const pvc = served({ name: 'data', writers: [resizerStatus, pvxPatch(6)], allocated: '10Gi', conditions: [condition('Resizing', 3)] });
    const [full, kept] = [JSON.stringify(pvc).length, JSON.stringify(compact(pvc)).length];
    expect(kept / full).toBeLessThan(0.3);
  });

  it('keeps the VolumeAttributesClass and who set it (its change spends a driver budget too)', () => {
    const pvc = served({
      name: 'data',
      writers: [
        entry('kubectl-edit', 'Update', 4, { 'f:spec': { 'f:volumeAttributesClassName': {} } }),
        entry('helm', 'Apply', 2, { 'f:spec': { 'f:resources': { 'f:requests': { 'f:storage': {} } }, 'f:volumeAttributesClassName': {} } }),
      ],
    });
    pvc.spec!.volumeAttributesClassName = 'io2-fast';
    const small = compact(pvc);
    expect(small.spec?.volumeAttributesClassName).toBe('io2-fast');
    expect(small.metadata?.managedFields).toEqual([
      { manager: 'kubectl-client-side-apply', operation: 'Update', time: ago(600), fieldsV1: storageRequestFields },
      { manager: 'kubectl-edit', operation: 'Update', time: ago(4), fieldsV1: attributesClassFields },
      {
        manager: 'helm',
        operation: 'Apply',
        time: ago(2),
        fieldsV1: { 'f:spec': { 'f:resources': { 'f:requests': { 'f:storage': {} } }, 'f:volumeAttributesClassName': {} } },
      },
    ]);
  });

  it('shares one storage-request path among every entry that owns it', () => {
    const [a, b] = [compact(served({ name: 'a' })), compact(served({ name: 'b', writers: [kubectlResize(1)] }))];
    expect(a.metadata?.managedFields?.[0]?.fieldsV1).toBe(b.metadata?.managedFields?.[1]?.fieldsV1);
    expect(Object.isFrozen(storageRequestFields)).toBe(true);
  });
});

describe('every reader of a cached claim decides the same on the compacted claim', () => {
  const claims = [
    served({ name: 'fixed', storageClass: 'fixed' }),
    served({
      name: 'stuck',
      request: '20Gi',
      allocated: '20Gi',
      allocatedStatus: 'NodeResizePending',
      conditions: [condition('FileSystemResizePending', 60)],
      writers: [resizerStatus, pvxPatch(61)],
      annotations: { [pvcAnnotations.targetSize]: '20Gi' },
    }),
    served({
      name: 'waiting',
      request: '20Gi',
      allocated: '20Gi',
      allocatedStatus: 'NodeResizePending',
      conditions: [condition('FileSystemResizePending', 5)],
      writers: [resizerStatus, kubectlResize(6)],
    }),
    served({
      name: 'infeasible',
      request: '20Gi',
      allocated: '20Gi',
      allocatedStatus: 'ControllerResizeInfeasible',
      conditions: [condition('ControllerResizeError', 20, 'rpc error: code = OutOfRange desc = size exceeds maximum')],
      writers: [resizerStatus, pvxPatch(21)],
    }),
    served({
      name: 'erroring',
      request: '20Gi',
      allocated: '20Gi',
      allocatedStatus: 'ControllerResizeInProgress',
      conditions: [condition('ControllerResizeError', 20, 'VolumeModificationRateExceeded')],
      writers: [resizerStatus, pvxPatch(21)],
    }),
    served({ name: 'mismatch', capacity: '10Gi' }),
    served({ name: 'full', labels: { grow: 'no' } }),
    served({ name: 'quota', labels: { grow: 'yes' } }),
    served({
      name: 'resized-by-kubectl',
      request: '30Gi',
      capacity: '30Gi',
      allocated: '30Gi',
      writers: [resizerStatus, pvxPatch(120), kubectlResize(30)],
      annotations: { [pvcAnnotations.targetSize]: '20Gi' },
    }),
    served({
      name: 'resized-by-pvx-then-annotated',
      request: '20Gi',
      capacity: '20Gi',
      allocated: '20Gi',
      writers: [resizerStatus, pvxPatch(120), pvxAnnotationsOnly(10)],
      annotations: { [pvcAnnotations.targetSize]: '20Gi' },
    }),
    served({ name: 'unreadable', request: '10 Gi' }),
    served({
      name: 'ledgered',
      request: '30Gi',
      capacity: '20Gi',
      allocated: '30Gi',
      writers: [resizerStatus, kubectlResize(3)],
      annotations: {
        [pvcAnnotations.modifications]: JSON.stringify({ spec: { size: '20Gi' }, mods: [{ at: ago(300), by: 'ver/grow', size: ['10Gi', '20Gi'] }] }),
      },
    }),
    served({ name: 'pending', phase: 'Pending', capacity: undefined }),
    served({ name: 'data-db-0' }),
    served({ name: 'data-db-1', request: '20Gi' }),
    served({
      name: 'modifying',
      vac: { spec: 'io2', current: 'gp3', modify: { targetVolumeAttributesClassName: 'io2', status: 'InProgress' } },
      conditions: [condition('ModifyingVolume', 40, 'Modifying volume to "io2" is in progress.')],
    }),
    served({
      name: 'refused',
      vac: { spec: 'io2', current: 'gp3', modify: { targetVolumeAttributesClassName: 'io2', status: 'Infeasible' } },
      conditions: [condition('ModifyVolumeError', 40, 'iops too high')],
    }),
  ];
  const snapshot = (pvcs: V1PersistentVolumeClaim[]): AuditSnapshot => ({
    pvcs,
    pvs: claims.map((c): V1PersistentVolume => ({
      metadata: { name: `pvc-${c.metadata?.name}` },
      spec: { capacity: { storage: c.metadata?.name === 'mismatch' ? '12Gi' : (c.status?.capacity?.storage ?? '10Gi') } },
    })),
    storageClasses: [
      { metadata: { name: 'gp3' }, provisioner: 'ebs.csi.aws.com', allowVolumeExpansion: true, parameters: { type: 'gp3' } } as V1StorageClass,
      { metadata: { name: 'fixed' }, provisioner: 'ebs.csi.aws.com', allowVolumeExpansion: false } as V1StorageClass,
    ],
    statefulSets: [
      {
        metadata: { name: 'db', namespace: 'db' },
        spec: {
          selector: {},
          serviceName: 'db',
          template: {},
          volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { resources: { requests: { storage: '10Gi' } } } }],
        },
      } as V1StatefulSet,
    ],
    resourceQuotas: [
      {
        metadata: { name: 'storage', namespace: 'db' },
        spec: { hard: { 'requests.storage': '300Gi' } },
        status: { hard: { 'requests.storage': '300Gi' }, used: { 'requests.storage': '299Gi' } },
      } as V1ResourceQuota,
    ],
    pods: [
      {
        metadata: { name: 'app', namespace: 'db' },
        spec: { containers: [], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'stuck' } }] },
        status: { phase: 'Running', conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: ago(600) as unknown as Date }] },
      } as V1Pod,
    ],
    requests: [],
    policies: [
      {
        apiVersion: 'pvx.dev/v1alpha1',
        kind: 'VolumeExpansionPolicy',
        metadata: { name: 'grow', namespace: 'db' },
        spec: { selector: { matchLabels: { grow: 'yes' } }, triggers: { usedPercent: 80 }, step: { percent: 50 } },
      } as VolumeExpansionPolicy,
    ],
    clusterPolicies: [],
    usage: new Map([
      ['db/full', { at: now, usedBytes: (95n * GiB) / 10n, capacityBytes: 10n * GiB }],
      ['db/quota', { at: now, usedBytes: 9n * GiB, capacityBytes: 10n * GiB }],
    ]),
  });

  it('the audit: the same findings, every rule that fires on the claims as served fires on the compacted ones', () => {
    const full = audit(snapshot(claims), { now });
    const compacted = audit(snapshot(claims.map(compact)), { now });
    expect(compacted).toEqual(full);
    const fired = new Set(full.map((f) => f.rule));
    const expected: RuleId[] = [
      'class-not-expandable',
      'resize-stuck',
      'waiting-for-pod',
      'resize-infeasible',
      'resize-error',
      'capacity-mismatch',
      'nearly-full-uncovered',
      'quota-headroom',
      'statefulset-size-drift',
      'resized-outside-pvx',
      'claim-unreadable',
      'modify-stuck',
      'modify-infeasible',
    ];
    expect([...fired].sort()).toEqual([...expected].sort());
    expect(full.filter((f) => f.rule === 'resized-outside-pvx').map((f) => f.name)).toEqual(['ledgered', 'resized-by-kubectl', 'waiting']);
  });

  it.each(claims.map((c) => [c.metadata?.name, c] as const))('%s: phase, resize state, sizes, selection, validation and pvx’s recorded patch', (_name, pvc) => {
    const small = compact(pvc);
    /** What a reader returns, or the error it throws (a claim whose sizes cannot be read). */
    const read = (f: () => unknown) => {
      try {
        return { value: f() };
      } catch (err) {
        return { error: String(err) };
      }
    };
    const readings = (c: V1PersistentVolumeClaim) => ({
      phase: read(() =>
        derivePhase({
          pvc: c,
          pvcUID: pvc.metadata?.uid as string,
          targetBytes: 20n * GiB,
          mountedByRunningPod: false,
          driver: defaultDriverProfiles('ebs.csi.aws.com'),
          now,
        }),
      ),
      resizeState: read(() => resizeState(c)),
      resizeUnderway: read(() => resizeUnderway(c)),
      sizes: read(() => claimSizes(c)),
      selected: read(() => policySelects(snapshot([]).policies[0] as VolumeExpansionPolicy, c, { namespaceLabels: () => ({}), statefulSet: () => undefined })),
      validation: read(() =>
        validateRequest({
          spec: { size: '40Gi' },
          pvcName: c.metadata?.name as string,
          pvc: c,
          storageClass: snapshot([]).storageClasses[0],
          quotas: [],
          earlierActiveRequests: [],
          modifications: [],
          profiles: defaultDriverProfiles,
          now,
        }),
      ),
      recordedPatchTime: read(() => recordedPatchTime(c)),
      modification: read(() => modificationState(c, 'io2')),
      modificationInFlight: read(() => modificationInFlight(c)),
      observed: read(() => observeClaim(c, { count: 4, windowMs: 86_400_000 }, now)),
    });
    expect(readings(small)).toEqual(readings(pvc));
  });

  it('recordedPatchTime finds pvx’s last update of the claim, the size or only its annotations', () => {
    expect(recordedPatchTime(compact(claims[9] as V1PersistentVolumeClaim))).toEqual(new Date(ago(10)));
    expect(recordedPatchTime(compact(claims[8] as V1PersistentVolumeClaim))).toEqual(new Date(ago(120)));
  });
});

describe('the namespaces cache’s transform', () => {
  it('keeps the labels, the UID and a deletion under way (deletionTimestamp, phase), and nothing else', () => {
    expect(namespaces.transform).toBe(compactNamespace);
    const served = {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {
        name: 'db',
        uid: 'u1',
        resourceVersion: '7',
        labels: { team: 'a' },
        annotations: { big: 'x'.repeat(1000) },
        deletionTimestamp: new Date('2026-12-04T12:00:00Z'),
        finalizers: ['kubernetes'],
        managedFields: [{ manager: 'kubectl' }],
      },
      spec: { finalizers: ['kubernetes'] },
      status: { phase: 'Terminating', conditions: [{ type: 'NamespaceDeletionContentFailure', status: 'False' }] },
    };
    expect(compactNamespace(served)).toEqual({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'db', uid: 'u1', resourceVersion: '7', labels: { team: 'a' }, deletionTimestamp: new Date('2026-12-04T12:00:00Z') },
      status: { phase: 'Terminating' },
    });
    expect(compactNamespace({ ...served, metadata: { name: 'db', uid: 'u1' }, status: { phase: 'Active' } } as KubernetesObject)).toEqual({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'db', uid: 'u1', resourceVersion: undefined, labels: undefined },
      status: { phase: 'Active' },
    });
  });
});
