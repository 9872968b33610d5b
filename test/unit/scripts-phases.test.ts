// scripts/lib/phases.sh, the phase machinery of scripts/test, run by bash: the run stops at the first
// phase that fails and exits with its status, the exit hooks notwithstanding (a hook that returned 0
// once turned a failed v1.37.2 phase into a green CI run).
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const phasesScript = resolve(import.meta.dirname, '../../scripts/lib/phases.sh');

/** Runs a bash script after sourcing phases.sh, in an empty directory (no .test-results to summarise). */
function run(script: string) {
  const result = spawnSync('bash', ['-uo', 'pipefail', '-c', `source ${phasesScript}\n${script}`], {
    cwd: mkdtempSync(join(tmpdir(), 'pvx-phases-')),
    encoding: 'utf8',
    // bash alone, but a loaded 2-core machine can take seconds to start a process.
    timeout: 30_000,
  });
  return { status: result.status, out: result.stdout, err: result.stderr };
}

describe('scripts/lib/phases.sh', () => {
  it('exits with the status of the first phase that fails, after the exit hooks ran, and runs no phase after it', { timeout: 40_000 }, () => {
    const r = run(`hook() { echo hook ran; return 0; }
on_exit_hooks+=(hook)
phase first true
phase second bash -c 'exit 3'
phase third echo third ran`);
    expect(r.status).toBe(3);
    expect(r.out).toContain('hook ran');
    expect(r.out).not.toContain('third ran');
    expect(r.out).toMatch(/first\s+\d+s {2}ok/);
    expect(r.out).toMatch(/second\s+\d+s {2}FAILED \(3\)/);
    expect(r.err).toContain("phase 'second' failed (exit 3): stopping here");
  });

  it('exits 0 when every phase passed, even if a hook fails', { timeout: 40_000 }, () => {
    const r = run(`hook() { return 1; }
on_exit_hooks+=(hook)
phase only true`);
    expect(r.status).toBe(0);
    expect(r.out).toMatch(/only\s+\d+s {2}ok/);
    expect(r.out).toMatch(/total\s+\d+s/);
  });
});
