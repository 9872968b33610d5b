import { mkdtempSync, rmSync, statSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startComputeEmulator, type CallRecord, type RunningEmulator } from './server.ts';

const GiB = 1024 ** 3;
const t0 = Date.parse('2026-03-01T00:00:00Z');
const project = 'pvx-test';
const zone = 'us-central1-a';

let stateDir: string;
let clock: number;
let emulator: RunningEmulator;

beforeEach(async () => {
  stateDir = mkdtempSync(join(tmpdir(), 'pvx-compute-emulator-'));
  clock = t0;
  emulator = await startComputeEmulator({ host: '127.0.0.1', port: 0, stateDir, project, now: () => clock });
});

afterEach(async () => {
  await emulator.close();
  rmSync(stateDir, { recursive: true, force: true });
});

interface Reply {
  status: number;
  body: Record<string, unknown> & { error?: { code: number; message: string; errors: { reason: string }[] } };
}

async function call(method: string, path: string, body?: unknown, version = 'v1'): Promise<Reply> {
  const res = await fetch(`${emulator.url}/compute/${version}/projects/${project}/${path}`, {
    method,
    headers: { authorization: 'Bearer test', 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(5000),
  });
  return { status: res.status, body: (await res.json()) as Reply['body'] };
}

const disksPath = `zones/${zone}/disks`;
const insert = (name: string, type: string, sizeGb: number, extra: Record<string, unknown> = {}) =>
  call('POST', disksPath, { name, sizeGb: String(sizeGb), type: `projects/${project}/zones/${zone}/diskTypes/${type}`, ...extra }, 'beta');
const image = (name: string) => join(stateDir, 'images', 'projects', project, 'zones', zone, 'disks', `${name}.img`);

async function admin<T>(path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${emulator.url}/_emulator/${path}`, { method: body ? 'POST' : 'GET', ...(body ? { body: JSON.stringify(body) } : {}) });
  return (await res.json()) as T;
}

describe('the Compute Engine emulator', () => {
  it('makes a disk whose image has its size, and shows it alike on v1 and beta, sizes as int64 strings', async () => {
    const op = await insert('pvc-1', 'pd-balanced', 10);
    expect(op.status).toBe(200);
    expect(op.body).toMatchObject({ kind: 'compute#operation', status: 'DONE', operationType: 'insert' });
    const waited = await call('POST', `zones/${zone}/operations/${String(op.body.name)}/wait`);
    expect(waited.body).toMatchObject({ status: 'DONE' });
    expect(waited.body.error).toBeUndefined();
    for (const version of ['v1', 'beta']) {
      const disk = await call('GET', `${disksPath}/pvc-1`, undefined, version);
      expect(disk.body).toMatchObject({ name: 'pvc-1', sizeGb: '10', status: 'READY' });
      expect(String(disk.body.type)).toMatch(/\/zones\/us-central1-a\/diskTypes\/pd-balanced$/);
    }
    expect(statSync(image('pvc-1')).size).toBe(10 * GiB);
  });

  it('grows a disk and its image, and refuses to shrink it or to pass its type’s largest size', async () => {
    await insert('pvc-2', 'pd-balanced', 10);
    expect((await call('POST', `${disksPath}/pvc-2/resize`, { sizeGb: '20' })).status).toBe(200);
    expect(statSync(image('pvc-2')).size).toBe(20 * GiB);
    const shrink = await call('POST', `${disksPath}/pvc-2/resize`, { sizeGb: '15' });
    expect(shrink.status).toBe(400);
    expect(shrink.body.error?.message).toMatch(/must be larger than existing size '20' GB/);
    const huge = await call('POST', `${disksPath}/pvc-2/resize`, { sizeGb: String(65_537) });
    expect(huge.body.error?.message).toMatch(/between 10 GB and 65536 GB/);
    await insert('thr', 'hyperdisk-throughput', 2048);
    expect((await call('POST', `${disksPath}/thr/resize`, { sizeGb: String(32_769) })).status).toBe(400);
  });

  it('changes a Hyperdisk’s IOPS once in its window, then refuses with the time the next is allowed', async () => {
    await insert('hd', 'hyperdisk-balanced', 10);
    const first = await call('PATCH', `${disksPath}/hd?paths=provisionedIops`, { provisionedIops: '6000' });
    expect(first.status).toBe(200);
    expect((await call('GET', `${disksPath}/hd`)).body.provisionedIops).toBe('6000');
    clock += 3600_000;
    const second = await call('PATCH', `${disksPath}/hd?paths=provisionedIops&paths=provisionedThroughput`, {
      provisionedIops: '3000',
      provisionedThroughput: '200',
    });
    expect(second.status).toBe(400);
    expect(second.body.error?.message).toContain(`next allowed at ${new Date(t0 + 4 * 3600_000).toISOString()}`);
    // A size change alone spends nothing.
    expect((await call('PATCH', `${disksPath}/hd?paths=sizeGb`, { sizeGb: '20' })).status).toBe(200);
    clock = t0 + 4 * 3600_000 + 1;
    expect((await call('PATCH', `${disksPath}/hd?paths=provisionedIops`, { provisionedIops: '3000' })).status).toBe(200);
    // PD types have no provisioned performance to change.
    await insert('pd', 'pd-ssd', 10);
    expect((await call('PATCH', `${disksPath}/pd?paths=provisionedIops`, { provisionedIops: '6000' })).status).toBe(400);
  });

  it('fails the next matching operations as a test sets, leaving the disk as it was, and logs every call', async () => {
    await insert('pvc-3', 'pd-balanced', 10);
    await admin('config', {
      faults: [
        { call: 'disks.resize', disk: 'pvc-3', times: 1, operationError: { code: 'RESOURCE_OPERATION_RATE_EXCEEDED', message: 'Operation rate exceeded' } },
      ],
    });
    const op = await call('POST', `${disksPath}/pvc-3/resize`, { sizeGb: '20' });
    expect(op.body.error).toEqual({ errors: [{ code: 'RESOURCE_OPERATION_RATE_EXCEEDED', message: 'Operation rate exceeded' }] });
    expect((await call('GET', `${disksPath}/pvc-3`)).body.sizeGb).toBe('10');
    expect((await call('POST', `${disksPath}/pvc-3/resize`, { sizeGb: '20' })).body.error).toBeUndefined();
    const resizes = await admin<CallRecord[]>('calls?call=disks.resize');
    expect(resizes.map((c) => c.result)).toEqual(['operation:RESOURCE_OPERATION_RATE_EXCEEDED', 'ok']);
    expect(resizes[0]).toMatchObject({ disk: 'pvc-3', body: { sizeGb: '20' } });
    // A limit that lasts: every call fails for its time, then none.
    await admin('config', { faults: [{ call: 'disks.resize', seconds: 60, operationError: { code: 'RATE_LIMIT_EXCEEDED', message: 'Rate Limit Exceeded' } }] });
    expect((await call('POST', `${disksPath}/pvc-3/resize`, { sizeGb: '30' })).body.error).toBeDefined();
    clock += 59_000;
    expect((await call('POST', `${disksPath}/pvc-3/resize`, { sizeGb: '30' })).body.error).toBeDefined();
    clock += 1000;
    expect((await call('POST', `${disksPath}/pvc-3/resize`, { sizeGb: '30' })).body.error).toBeUndefined();
    expect(await admin<{ error: string }>('config', { faults: [{ call: 'disks.resize', operationError: { code: 'X', message: 'x' } }] })).toEqual({
      error: 'config: faults must be [{call, times | seconds, operationError | httpError, disk?}]',
    });
  });

  it('wants a token, answers the token endpoint, and names a call it does not serve', async () => {
    const res = await fetch(`${emulator.url}/compute/v1/projects/${project}/${disksPath}/x`);
    expect(res.status).toBe(401);
    const token = (await (await fetch(`${emulator.url}/token`, { method: 'POST', body: 'grant_type=x' })).json()) as { access_token: string };
    expect(token.access_token).toMatch(/^pvx-emulated-/);
    const unknown = await call('GET', 'global/snapshots');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error?.message).toContain('does not serve GET /compute/v1/projects/pvx-test/global/snapshots');
  });

  it('deletes a disk and its image, and keeps disks across a restart', async () => {
    await insert('keep', 'pd-balanced', 10);
    await insert('gone', 'pd-balanced', 10);
    expect((await call('DELETE', `${disksPath}/gone`)).status).toBe(200);
    expect(existsSync(image('gone'))).toBe(false);
    await emulator.close();
    emulator = await startComputeEmulator({ host: '127.0.0.1', port: 0, stateDir, project, now: () => clock });
    expect((await call('GET', `${disksPath}/keep`)).body.sizeGb).toBe('10');
    expect((await call('GET', `${disksPath}/gone`)).status).toBe(404);
  });
});
