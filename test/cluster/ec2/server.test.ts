import { mkdtempSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GiB, type Timing } from './ebs.ts';
import { startEmulator, type RunningEmulator } from './server.ts';

const timing: Timing = {
  creatingSeconds: 1,
  modifyingSeconds: 10,
  optimizingSeconds: 20,
  modificationWindowSeconds: 24 * 3600,
  modificationsPerWindow: 4,
};
const t0 = Date.parse('2026-03-01T00:00:00Z');

let stateDir: string;
let clock: number;
let emulator: RunningEmulator;

async function start(): Promise<void> {
  emulator = await startEmulator({ host: '127.0.0.1', port: 0, stateDir, timing, now: () => clock });
}

beforeEach(async () => {
  stateDir = mkdtempSync(join(tmpdir(), 'pvx-ec2-emulator-'));
  clock = t0;
  await start();
});

afterEach(async () => {
  await emulator.close();
  rmSync(stateDir, { recursive: true, force: true });
});

interface XmlNode {
  name: string;
  children: XmlNode[];
  text: string;
}

/** Just enough XML for the emulator's answers: elements, text and the xmlns attribute. */
function parseXml(xml: string): XmlNode & { attributes: string } {
  const document: XmlNode = { name: '#document', children: [], text: '' };
  const stack = [document];
  let rootAttributes = '';
  for (const [, closing, name, attributes, selfClosing, text] of xml.replace(/<\?xml[^>]*\?>/, '').matchAll(/<(\/?)([\w.:-]+)([^>]*?)(\/?)>|([^<]+)/g)) {
    const top = stack[stack.length - 1] as XmlNode;
    if (text !== undefined) {
      top.text += text.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)));
    } else if (closing) {
      stack.pop();
    } else {
      const node: XmlNode = { name: name as string, children: [], text: '' };
      if (top === document) rootAttributes = attributes ?? '';
      top.children.push(node);
      if (!selfClosing) stack.push(node);
    }
  }
  return { ...(document.children[0] as XmlNode), attributes: rootAttributes };
}

/** The element at a path of child names ('volumeSet/item/size'); fails the test if absent. */
function at(node: XmlNode, path: string): XmlNode {
  return path.split('/').reduce((current, name) => {
    const next = current.children.find((c) => c.name === name);
    if (!next) throw new Error(`no <${name}> in <${current.name}>: ${current.children.map((c) => c.name).join(', ')}`);
    return next;
  }, node);
}

const textAt = (node: XmlNode, path: string) => at(node, path).text;
const items = (node: XmlNode, path: string) => at(node, path).children.filter((c) => c.name === 'item');

const signed = { Authorization: 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260301/us-east-1/ec2/aws4_request' };

async function call(params: Record<string, string | number | boolean>, headers: Record<string, string> = signed) {
  const body = new URLSearchParams({ Version: '2016-11-15', ...Object.fromEntries(Object.entries(params).map(([k, v]) => [k, String(v)])) });
  const res = await fetch(emulator.url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    body: body.toString(),
  });
  return { status: res.status, xml: parseXml(await res.text()) };
}

async function expectError(params: Record<string, string | number | boolean>, code: string, headers?: Record<string, string>): Promise<string> {
  const { status, xml } = await call(params, headers);
  expect(xml.name).toBe('Response');
  expect(textAt(xml, 'Errors/Error/Code')).toBe(code);
  expect(textAt(xml, 'RequestID')).toMatch(/^[0-9a-f-]{36}$/);
  expect(status).toBe(400);
  return textAt(xml, 'Errors/Error/Message');
}

async function admin<T>(path: string): Promise<T> {
  return (await (await fetch(`${emulator.url}/_emulator/${path}`)).json()) as T;
}

const createRequest = {
  Action: 'CreateVolume',
  AvailabilityZone: 'us-east-1a',
  VolumeType: 'gp3',
  Size: 10,
  ClientToken: 'a3f1c0de',
  Encrypted: false,
  MultiAttachEnabled: false,
  'TagSpecification.1.ResourceType': 'volume',
  'TagSpecification.1.Tag.1.Key': 'CSIVolumeName',
  'TagSpecification.1.Tag.1.Value': 'pvc-1',
  'TagSpecification.1.Tag.2.Key': 'ebs.csi.aws.com/cluster',
  'TagSpecification.1.Tag.2.Value': 'true',
};

async function createVolume(): Promise<string> {
  const { xml } = await call(createRequest);
  return textAt(xml, 'volumeId');
}

describe('the EC2 query protocol', () => {
  it('answers DescribeAvailabilityZones, and its DryRun health check with DryRunOperation', async () => {
    const { status, xml } = await call({ Action: 'DescribeAvailabilityZones' });
    expect(status).toBe(200);
    expect(xml.name).toBe('DescribeAvailabilityZonesResponse');
    expect(xml.attributes).toContain('xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"');
    const zones = items(xml, 'availabilityZoneInfo');
    expect(zones.map((z) => [textAt(z, 'zoneName'), textAt(z, 'zoneId'), textAt(z, 'zoneState'), textAt(z, 'regionName')])).toEqual([
      ['us-east-1a', 'use1-az1', 'available', 'us-east-1'],
      ['us-east-1b', 'use1-az2', 'available', 'us-east-1'],
      ['us-east-1c', 'use1-az3', 'available', 'us-east-1'],
    ]);
    expect(await expectError({ Action: 'DescribeAvailabilityZones', DryRun: true }, 'DryRunOperation')).toBe(
      'Request would have succeeded, but DryRun flag is set.',
    );
  });

  it('creates a volume with its tags and a sparse backing file, and answers the same ClientToken with the same volume', async () => {
    const { status, xml } = await call(createRequest);
    expect(status).toBe(200);
    expect(xml.name).toBe('CreateVolumeResponse');
    expect(textAt(xml, 'requestId')).toMatch(/^[0-9a-f-]{36}$/);
    const volumeId = textAt(xml, 'volumeId');
    expect(volumeId).toMatch(/^vol-[0-9a-f]{17}$/);
    expect(['size', 'status', 'volumeType', 'iops', 'throughput'].map((e) => textAt(xml, e))).toEqual(['10', 'creating', 'gp3', '3000', '125']);
    expect(textAt(xml, 'createTime')).toBe('2026-03-01T00:00:00.000Z');
    expect(items(xml, 'tagSet').map((t) => [textAt(t, 'key'), textAt(t, 'value')])).toEqual([
      ['CSIVolumeName', 'pvc-1'],
      ['ebs.csi.aws.com/cluster', 'true'],
    ]);

    const file = statSync(join(stateDir, 'volumes', `${volumeId}.img`));
    expect(file.size).toBe(10 * GiB);
    expect(file.blocks).toBe(0);

    expect(textAt((await call(createRequest)).xml, 'volumeId')).toBe(volumeId);
  });

  it('describes volumes by ID and by the CSIVolumeName tag, creating and then available', async () => {
    const volumeId = await createVolume();
    const byId = (await call({ Action: 'DescribeVolumes', 'VolumeId.1': volumeId })).xml;
    expect(byId.name).toBe('DescribeVolumesResponse');
    expect(items(byId, 'volumeSet').map((v) => textAt(v, 'status'))).toEqual(['creating']);

    clock += 1000;
    const byTag = (await call({ Action: 'DescribeVolumes', 'Filter.1.Name': 'tag:CSIVolumeName', 'Filter.1.Value.1': 'pvc-1', 'Filter.1.Value.2': 'pvc-2' }))
      .xml;
    const [volume] = items(byTag, 'volumeSet');
    expect(volume && [textAt(volume, 'volumeId'), textAt(volume, 'status'), textAt(volume, 'availabilityZone')]).toEqual([volumeId, 'available', 'us-east-1a']);

    const missing = await expectError({ Action: 'DescribeVolumes', 'VolumeId.1': volumeId, 'VolumeId.2': 'vol-00000000000000000' }, 'InvalidVolume.NotFound');
    expect(missing).toBe("The volume 'vol-00000000000000000' does not exist.");
  });

  it('modifies a volume: modifying, then optimizing with the larger size and backing file, then completed', async () => {
    const volumeId = await createVolume();
    clock += 5_000;
    const modified = (await call({ Action: 'ModifyVolume', VolumeId: volumeId, Size: 20 })).xml;
    expect(modified.name).toBe('ModifyVolumeResponse');
    const answered = at(modified, 'volumeModification');
    const fields = ['modificationState', 'originalSize', 'targetSize', 'targetVolumeType', 'progress'];
    expect(fields.map((e) => textAt(answered, e))).toEqual(['modifying', '10', '20', 'gp3', '0']);
    expect(textAt(answered, 'startTime')).toBe('2026-03-01T00:00:05.000Z');

    const describe = async () => {
      const [modification] = items((await call({ Action: 'DescribeVolumesModifications', 'VolumeId.1': volumeId })).xml, 'volumeModificationSet');
      const [volume] = items((await call({ Action: 'DescribeVolumes', 'VolumeId.1': volumeId })).xml, 'volumeSet');
      return { state: modification && textAt(modification, 'modificationState'), size: volume && textAt(volume, 'size'), modification };
    };
    expect(await describe()).toMatchObject({ state: 'modifying', size: '10' });

    clock += 10_000;
    expect(await describe()).toMatchObject({ state: 'optimizing', size: '20' });
    expect(statSync(join(stateDir, 'volumes', `${volumeId}.img`)).size).toBe(20 * GiB);
    expect(await expectError({ Action: 'ModifyVolume', VolumeId: volumeId, Size: 30 }, 'IncorrectModificationState')).toBe(
      `Volume ${volumeId} cannot be modified in modification state OPTIMIZING`,
    );

    clock += 20_000;
    const completed = await describe();
    expect(completed.state).toBe('completed');
    expect(completed.modification && textAt(completed.modification, 'endTime')).toBe('2026-03-01T00:00:35.000Z');
  });

  it('answers errors in EC2 shape with EC2 codes', async () => {
    const volumeId = await createVolume();
    clock += 5_000;
    expect(await expectError({ Action: 'ModifyVolume', VolumeId: volumeId, Size: 5 }, 'InvalidParameterValue')).toBe(
      'New size cannot be smaller than existing size',
    );
    expect(await expectError({ Action: 'ModifyVolume', VolumeId: volumeId, Size: 'ten' }, 'InvalidParameterValue')).toContain("'ten'");
    expect(await expectError({ Action: 'DescribeVolumesModifications', 'VolumeId.1': volumeId }, 'InvalidVolumeModification.NotFound')).toBe(
      `Modification for volume '${volumeId}' does not exist.`,
    );
    const iopsLimitDryRun = { Action: 'CreateVolume', AvailabilityZone: 'us-east-1a', VolumeType: 'gp3', Size: 4, Iops: 2147483647, DryRun: true };
    expect(await expectError(iopsLimitDryRun, 'InvalidParameterValue')).toBe('Volume iops of 2147483647 is too high; maximum is 80000.');
    await expectError({ Action: 'DeleteVolume' }, 'MissingParameter');
    await expectError({ Action: 'AttachVolume', VolumeId: volumeId, InstanceId: 'i-1', Device: '/dev/xvdba' }, 'UnsupportedOperation');
    expect(await expectError({ Action: 'DescribeWidgets' }, 'InvalidAction')).toBe('The action DescribeWidgets is not valid for this web service.');
    await expectError({ Version: '2016-11-15' }, 'MissingAction');
    await expectError({ Action: 'DescribeVolumes' }, 'MissingAuthenticationToken', {});
  });

  it('deletes a volume and its backing file', async () => {
    const volumeId = await createVolume();
    const { xml } = await call({ Action: 'DeleteVolume', VolumeId: volumeId });
    expect(textAt(xml, 'return')).toBe('true');
    expect(existsSync(join(stateDir, 'volumes', `${volumeId}.img`))).toBe(false);
    await expectError({ Action: 'DeleteVolume', VolumeId: volumeId }, 'InvalidVolume.NotFound');
  });

  it('tags volumes with CreateTags and DeleteTags', async () => {
    const volumeId = await createVolume();
    await call({ Action: 'CreateTags', 'ResourceId.1': volumeId, 'Tag.1.Key': 'team', 'Tag.1.Value': 'storage' });
    await call({ Action: 'DeleteTags', 'ResourceId.1': volumeId, 'Tag.1.Key': 'CSIVolumeName' });
    const [volume] = items((await call({ Action: 'DescribeVolumes', 'VolumeId.1': volumeId })).xml, 'volumeSet');
    expect(volume && items(volume, 'tagSet').map((t) => textAt(t, 'key'))).toEqual(['ebs.csi.aws.com/cluster', 'team']);
  });
});

describe('the emulator process’s state', () => {
  it('keeps volumes and modifications across a restart', async () => {
    const volumeId = await createVolume();
    clock += 5_000;
    await call({ Action: 'ModifyVolume', VolumeId: volumeId, Size: 20 });
    await emulator.close();
    await start();
    const [modification] = items((await call({ Action: 'DescribeVolumesModifications', 'VolumeId.1': volumeId })).xml, 'volumeModificationSet');
    expect(modification && textAt(modification, 'targetSize')).toBe('20');
  });

  it('logs every call, and serves the log, the volumes and health', async () => {
    const volumeId = await createVolume();
    await call({ Action: 'ModifyVolume', VolumeId: volumeId, Size: 5 });
    const calls = await admin<{ action: string; volumeIds: string[]; params: Record<string, string>; result: string; httpStatus: number }[]>('calls');
    expect(calls.map((c) => [c.action, c.volumeIds, c.result, c.httpStatus])).toEqual([
      ['CreateVolume', [volumeId], 'ok', 200],
      ['ModifyVolume', [volumeId], 'IncorrectState', 400],
    ]);
    expect(calls[0]?.params).toMatchObject({ Size: '10', 'TagSpecification.1.Tag.1.Value': 'pvc-1' });
    expect(await admin<unknown[]>('calls?action=ModifyVolume')).toHaveLength(1);

    const [volume] = await admin<{ volumeId: string; sizeGiB: number; backingFileBytes: number }[]>('volumes');
    expect(volume).toMatchObject({ volumeId, sizeGiB: 10, backingFileBytes: 10 * GiB });
    expect(await (await fetch(`${emulator.url}/_emulator/healthz`)).text()).toBe('ok\n');
  });

  it('takes timing from config.json while running', async () => {
    writeFileSync(join(stateDir, 'config.json'), JSON.stringify({ creatingSeconds: 0, modifyingSeconds: 0 }));
    const volumeId = await createVolume();
    const modified = (await call({ Action: 'ModifyVolume', VolumeId: volumeId, Size: 20 })).xml;
    expect(textAt(modified, 'volumeModification/modificationState')).toBe('optimizing');
    expect(await admin<Timing>('config')).toEqual({ ...timing, creatingSeconds: 0, modifyingSeconds: 0 });
  });
});
