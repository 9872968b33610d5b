// The embedded cluster's EC2 emulator (test/cluster/ec2), as the EBS suite reads and tunes it:
// its call log is what reached "AWS", its config file sets EBS's timings for a test.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ec2Endpoint } from '../../cluster/components.ts';
import { paths } from '../../cluster/layout.ts';
import type { Timing } from '../../cluster/ec2/ebs.ts';
import type { CallRecord } from '../../cluster/ec2/state-dir.ts';

/** A line of the emulator's call log. */
export type Ec2Call = CallRecord;
export type Ec2Timing = Partial<Timing>;

async function admin<T>(path: string): Promise<T> {
  const res = await fetch(`${ec2Endpoint}/_emulator/${path}`, { signal: AbortSignal.timeout(5000) });
  if (!res.ok) throw new Error(`EC2 emulator ${path}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Every EC2 call the emulator answered for this volume (optionally one action), oldest first. */
export async function ec2Calls(volumeId: string, action?: string): Promise<Ec2Call[]> {
  const calls = await admin<Ec2Call[]>(action ? `calls?action=${action}` : 'calls');
  return calls.filter((c) => c.volumeIds.includes(volumeId));
}

export interface Ec2Volume {
  volumeId: string;
  sizeGiB: number;
  latestModification?: { modificationState: 'modifying' | 'optimizing' | 'completed' };
}

/** The volume as the emulator holds it now. */
export async function ec2Volume(volumeId: string): Promise<Ec2Volume | undefined> {
  return (await admin<Ec2Volume[]>('volumes')).find((v) => v.volumeId === volumeId);
}

/** One EC2 API call straight to the emulator, as a user's own tool (the AWS console, the CLI) makes it. */
export async function ec2Call(params: Record<string, string>): Promise<string> {
  const res = await fetch(ec2Endpoint, {
    method: 'POST',
    body: new URLSearchParams({ Version: '2016-11-15', ...params }),
    // The emulator wants a signature to be present, not valid.
    headers: { Authorization: 'AWS4-HMAC-SHA256 Credential=AKIAPVXEMBEDDEDTEST0/e2e', 'Content-Type': 'application/x-www-form-urlencoded' },
    signal: AbortSignal.timeout(5000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`EC2 ${params.Action}: HTTP ${res.status} ${text}`);
  return text;
}

const configFile = join(paths.ec2State, 'config.json');

/** Sets EBS's timings for the calls that follow (the emulator re-reads its config file on change). */
export async function setEc2Timing(timing: Ec2Timing): Promise<void> {
  let current: Ec2Timing = {};
  try {
    current = JSON.parse(readFileSync(configFile, 'utf8')) as Ec2Timing;
  } catch {
    // no overrides yet
  }
  writeFileSync(configFile, JSON.stringify({ ...current, ...timing }));
  const inForce = await admin<Ec2Timing>('config');
  for (const [key, value] of Object.entries(timing)) {
    if (inForce[key as keyof Ec2Timing] !== value) throw new Error(`EC2 emulator did not take ${key}=${value}: ${JSON.stringify(inForce)}`);
  }
}

/** Back to the emulator's defaults (Amazon's rules). */
export function resetEc2Timing(): void {
  rmSync(configFile, { force: true });
}
