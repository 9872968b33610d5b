import { describe, expect, it } from 'vitest';
import type { VolumeExpansionRequest } from '../crds/volume-expansion-request.ts';
import { ApiError } from '../k8s/errors.ts';
import { explainReadError, formatList, formatRows, noRequestsLine, parseStatusArgs, requestRow, sortRequests } from './status.ts';
import { CommandFailure, UsageError } from './errors.ts';

const now = new Date('2025-06-01T12:00:00Z');
const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000).toISOString();

function request(
  name: string,
  over: {
    spec?: Partial<VolumeExpansionRequest['spec']>;
    status?: VolumeExpansionRequest['status'];
    createdSecondsAgo?: number;
    namespace?: string;
    uid?: string;
  } = {},
): VolumeExpansionRequest {
  return {
    apiVersion: 'pvx.dev/v1alpha1',
    kind: 'VolumeExpansionRequest',
    metadata: {
      name,
      namespace: over.namespace ?? 'shop',
      uid: over.uid ?? `uid-${name}`,
      creationTimestamp: ago(over.createdSecondsAgo ?? 600) as unknown as Date,
    },
    spec: { target: { pvcName: `data-${name}` }, size: '2Gi', ...over.spec },
    status: over.status,
  };
}

describe('requestRow', () => {
  it('shows a completed request with its sizes, ages and no message', () => {
    const row = requestRow(
      request('grow', {
        status: { phase: 'Completed', reason: 'Completed', message: 'capacity is 2Gi', fromCapacity: '1Gi', targetSize: '2Gi', phaseSince: ago(90) },
      }),
      now,
    );
    expect(row).toEqual({
      namespace: 'shop',
      name: 'grow',
      target: 'pvc/data-grow',
      from: '1Gi',
      to: '2Gi',
      class: '-',
      phase: 'Completed',
      reason: 'Completed',
      age: '10m',
      inPhase: '90s',
      message: '',
    });
  });

  it('shows the VolumeAttributesClass a request sets, from the one before once known; no size for a class alone', () => {
    const planned = request('perf', { spec: { size: undefined, volumeAttributesClassName: 'io2' } });
    expect(requestRow(planned, now)).toMatchObject({ from: '-', to: '-', class: 'io2' });
    const patched = request('perf', {
      spec: { size: undefined, volumeAttributesClassName: 'io2' },
      status: { phase: 'Modifying', fromCapacity: '1Gi', fromVolumeAttributesClassName: 'gp3', targetVolumeAttributesClassName: 'io2' },
    });
    expect(requestRow(patched, now)).toMatchObject({ from: '-', to: '-', class: 'gp3→io2' });
    const fromNone = request('perf', {
      spec: { volumeAttributesClassName: 'io2' },
      status: { phase: 'Expanding', fromCapacity: '1Gi', targetSize: '2Gi', targetVolumeAttributesClassName: 'io2', timeline: { patchedAt: ago(1) } },
    });
    expect(requestRow(fromNone, now)).toMatchObject({ from: '1Gi', to: '2Gi', class: '(none)→io2' });
    // The status lost: the claim's record of this request's patch ("" for no class before).
    const crashed = request('perf', { spec: { size: undefined, volumeAttributesClassName: 'io2' }, status: { phase: 'Pending' } });
    expect(requestRow(crashed, now, { 'pvx.dev/request-uid': 'uid-perf', 'pvx.dev/previous-volume-attributes-class': '' })).toMatchObject({
      class: '(none)→io2',
    });
  });

  it('shows why an active request is where it is', () => {
    const row = requestRow(
      request('slow', {
        status: {
          phase: 'WaitingForPod',
          reason: 'NodeResizePending',
          message: 'the volume grew; start a pod',
          fromCapacity: '1Gi',
          targetSize: '2Gi',
          phaseSince: ago(30),
        },
      }),
      now,
    );
    expect(row).toMatchObject({ phase: 'WaitingForPod', reason: 'NodeResizePending', inPhase: '30s', message: 'the volume grew; start a pod' });
  });

  it('keeps the plan of a dry run, which is its message', () => {
    const row = requestRow(
      request('plan', {
        spec: { dryRun: true },
        status: { phase: 'Completed', reason: 'DryRun', message: 'dry run: would grow data-plan from 1Gi to 2Gi', phaseSince: ago(5) },
      }),
      now,
    );
    expect(row.message).toBe('dry run: would grow data-plan from 1Gi to 2Gi');
  });

  it('says a request without status has not been picked up, and shows its planned increment', () => {
    const row = requestRow(request('new', { spec: { size: undefined, increment: '50%' }, createdSecondsAgo: 3 }), now);
    expect(row).toMatchObject({ from: '-', to: '+50%', phase: '-', reason: '-', age: '3s', inPhase: '-' });
    expect(row.message).toMatch(/not picked up by the operator/);
  });

  it('falls back to the claim annotations this request wrote when the status lost the sizes', () => {
    const req = request('crashed', { spec: { size: undefined, increment: '1Gi' }, status: { phase: 'Pending', phaseSince: ago(1) } });
    const mine = { 'pvx.dev/request-uid': 'uid-crashed', 'pvx.dev/previous-capacity': '3Gi', 'pvx.dev/target-size': '4Gi' };
    expect(requestRow(req, now, mine)).toMatchObject({ from: '3Gi', to: '4Gi' });
    // Another request's annotations say nothing about this one.
    expect(requestRow(req, now, { ...mine, 'pvx.dev/request-uid': 'someone-else' })).toMatchObject({ from: '-', to: '+1Gi' });
  });

  it('names a StatefulSet target and sums up its claims’ sizes', () => {
    const req = request('sts', {
      spec: { target: { statefulSetName: 'db', volumeClaimTemplate: 'data' } },
      status: {
        phase: 'Expanding',
        reason: 'RequestsCreated',
        message: 'created 2 requests',
        targets: [
          { pvcName: 'data-db-0', fromCapacity: '1Gi', targetSize: '2Gi' },
          { pvcName: 'data-db-1', fromCapacity: '1Gi', targetSize: '2Gi' },
        ],
      },
    });
    expect(requestRow(req, now)).toMatchObject({ target: 'sts/db/data', from: '1Gi', to: '2Gi' });
  });

  it('keeps a multi-line message on one line', () => {
    const row = requestRow(request('err', { status: { phase: 'Failed', reason: 'NodeResizeFailed', message: 'resize failed:\n  exit status 1\n' } }), now);
    expect(row.message).toBe('resize failed: exit status 1');
  });
});

describe('sortRequests', () => {
  it('puts active requests first, then by namespace and age', () => {
    const sorted = sortRequests([
      request('done-old', { status: { phase: 'Completed' }, createdSecondsAgo: 900 }),
      request('active-b', { namespace: 'b', status: { phase: 'Expanding' }, createdSecondsAgo: 100 }),
      request('rejected', { status: { phase: 'Rejected' }, createdSecondsAgo: 50 }),
      request('active-a-new', { namespace: 'a', createdSecondsAgo: 10 }),
      request('active-a-old', { namespace: 'a', status: { phase: 'Pending' }, createdSecondsAgo: 500 }),
    ]);
    expect(sorted.map((r) => r.metadata.name)).toEqual(['active-a-old', 'active-a-new', 'active-b', 'done-old', 'rejected']);
  });
});

describe('formatRows', () => {
  const rows = [
    requestRow(
      request('grow', {
        status: { phase: 'Expanding', reason: 'WaitingForResizer', message: 'waiting', fromCapacity: '1Gi', targetSize: '2Gi', phaseSince: ago(4) },
      }),
      now,
    ),
  ];

  it('prints kubectl-style columns, with NAMESPACE only across namespaces', () => {
    const table = formatRows(rows, false).split('\n');
    expect(table[0]).toMatch(/^NAME\s+TARGET\s+FROM\s+TO\s+CLASS\s+PHASE\s+REASON\s+AGE\s+IN PHASE\s+MESSAGE$/);
    expect(table[1]).toMatch(/^grow\s+pvc\/data-grow\s+1Gi\s+2Gi\s+-\s+Expanding\s+WaitingForResizer\s+10m\s+4s\s+waiting$/);
    const all = formatRows(rows, true).split('\n');
    expect(all[0]).toMatch(/^NAMESPACE\s+NAME\s+TARGET/);
    expect(all[1]).toMatch(/^shop\s+grow\s+pvc\/data-grow/);
  });
});

describe('output', () => {
  it('says plainly where nothing was found', () => {
    expect(noRequestsLine('shop')).toBe('no VolumeExpansionRequests in namespace shop');
    expect(noRequestsLine(undefined, 'app=db')).toBe('no VolumeExpansionRequests in any namespace matching app=db');
  });

  it('prints json and yaml as a v1 List of the requests', () => {
    const req = request('grow', { status: { phase: 'Completed' } });
    expect(JSON.parse(formatList([req], 'json'))).toMatchObject({
      apiVersion: 'v1',
      kind: 'List',
      items: [{ metadata: { name: 'grow' }, status: { phase: 'Completed' } }],
    });
    expect(formatList([], 'yaml')).toMatch(/^apiVersion: v1\nkind: List\n[\s\S]*items: \[\]$/);
  });
});

describe('explainReadError', () => {
  it('tells the user to install the CRDs when the kind is not served', () => {
    const failure = explainReadError(new ApiError(404, 'NotFound', 'the server could not find the requested resource'), 'shop');
    expect(failure).toBeInstanceOf(CommandFailure);
    expect(failure?.message).toMatch(/CRD \(volumeexpansionrequests\.pvx\.dev\) is not installed.*pvx install-crds/);
  });

  it('names what was forbidden, and leaves other errors alone', () => {
    expect(explainReadError(new ApiError(403, 'Forbidden', 'user x cannot list'), 'shop')?.message).toBe(
      'not allowed to read VolumeExpansionRequests in namespace shop: user x cannot list',
    );
    expect(explainReadError(new ApiError(500, 'InternalError', 'boom'), 'shop')).toBeUndefined();
    expect(explainReadError(new Error('ECONNREFUSED'), 'shop')).toBeUndefined();
  });
});

describe('parseStatusArgs', () => {
  it('reads the flags', () => {
    expect(parseStatusArgs(['-A', '-o', 'json', '-l', 'a=b'])).toMatchObject({ allNamespaces: true, output: 'json', selector: 'a=b' });
    expect(parseStatusArgs(['-n', 'shop'])).toMatchObject({ namespace: 'shop', allNamespaces: false, output: 'table' });
  });

  it('refuses contradictions and unknown formats', () => {
    expect(() => parseStatusArgs(['-A', '-n', 'shop'])).toThrow(UsageError);
    expect(() => parseStatusArgs(['-o', 'wide'])).toThrow(/--output must be one of table, json, yaml, got "wide"/);
    expect(() => parseStatusArgs(['grow'])).toThrow(/unexpected argument "grow"/);
  });
});
