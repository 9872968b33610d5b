import { afterEach, describe, expect, it, vi } from 'vitest';
import { mountPointsUnder } from '../../cluster/cluster.ts';
import { Progress, formatDuration } from '../../cluster/progress.ts';

describe('formatDuration', () => {
  it.each([
    [0, '0.0s'],
    [1234, '1.2s'],
    [59_949, '59.9s'],
    [60_000, '1m00s'],
    [125_500, '2m05s'],
    [3_600_000, '60m00s'],
  ])('%d ms → %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe('Progress', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('numbers steps, beats while a step runs, and reports the outcome', async () => {
    vi.useFakeTimers();
    const lines: string[] = [];
    const progress = new Progress(2, (l) => lines.push(l), 1000);
    const first = progress.step('Building', async (ctx) => {
      ctx.detail('42 packages');
      await new Promise((r) => setTimeout(r, 2500));
      ctx.log('built');
    });
    await vi.advanceTimersByTimeAsync(2500);
    await first;
    await expect(progress.step('Starting', async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(lines).toEqual([
      '[1/2] Building …',
      '[1/2] … still building (1.0s): 42 packages',
      '[1/2] … still building (2.0s): 42 packages',
      '[1/2]   built',
      '[1/2] Building: done in 2.5s',
      '[2/2] Starting …',
      '[2/2] Starting: FAILED after 0.0s',
    ]);
  });
});

describe('mountPointsUnder', () => {
  const mountinfo = [
    '22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw',
    '90 22 0:50 / /var/lib/pvx-cluster/kubelet/pods/a/volumes/kubernetes.io~csi/pvc-1/mount rw - xfs /dev/loop0 rw',
    '91 22 254:0 /x /var/lib/pvx-cluster/containerd/root/with\\040space rw - ext4 /dev/vda rw',
    '92 22 0:51 / /var/lib/pvx-cluster rw - tmpfs tmpfs rw',
    '93 22 0:52 / /var/lib/pvx-cluster-other rw - tmpfs tmpfs rw',
  ].join('\n');

  it('lists mounts at or below the directory, deepest first, unescaping octal escapes', () => {
    expect(mountPointsUnder(mountinfo, '/var/lib/pvx-cluster')).toEqual([
      '/var/lib/pvx-cluster/kubelet/pods/a/volumes/kubernetes.io~csi/pvc-1/mount',
      '/var/lib/pvx-cluster/containerd/root/with space',
      '/var/lib/pvx-cluster',
    ]);
  });

  it('does not take a sibling directory sharing the prefix', () => {
    expect(mountPointsUnder(mountinfo, '/var/lib/pvx-cluster')).not.toContain('/var/lib/pvx-cluster-other');
  });
});
