// The embedded cluster's Compute Engine emulator (test/cluster/compute), as the GCE suite reads and
// tunes it: its call log is what reached "Google", its config sets Hyperdisk's window and the
// failures a test wants the next calls to meet.
import { computeEndpoint } from '../../cluster/components.ts';
import type { CallRecord, EmulatorConfig, Fault } from '../../cluster/compute/server.ts';

export type ComputeCall = CallRecord;
export type ComputeFault = Fault;

async function admin<T>(path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${computeEndpoint}/_emulator/${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(5000),
  });
  if (!res.ok) throw new Error(`Compute Engine emulator ${path}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** The disk's name in its CSI volume handle (projects/P/zones/Z/disks/NAME). */
export const diskName = (volumeHandle: string): string => volumeHandle.split('/').at(-1) as string;

/** Every call the emulator answered for this disk (optionally one call, e.g. disks.resize), oldest first. */
export async function computeCalls(disk: string, call?: string): Promise<ComputeCall[]> {
  const calls = await admin<ComputeCall[]>(call ? `calls?call=${call}` : 'calls');
  return calls.filter((c) => c.disk === disk);
}

export interface ComputeDisk {
  name: string;
  type: string;
  sizeGb: number;
  provisionedIops?: number;
  provisionedThroughput?: number;
}

export async function computeDisk(disk: string): Promise<ComputeDisk | undefined> {
  return (await admin<ComputeDisk[]>('disks')).find((d) => d.name === disk);
}

/** Sets Compute Engine's rules and the faults the next calls meet; returns what is in force. */
export async function setComputeConfig(config: Partial<EmulatorConfig>): Promise<EmulatorConfig> {
  return admin<EmulatorConfig>('config', config);
}
