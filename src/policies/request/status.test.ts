import { describe, expect, it } from 'vitest';
import { limits } from '../../crds/limits.ts';
import { nextStatus } from './status.ts';

describe('nextStatus', () => {
  it('cuts a message longer than a condition may hold (the CRD refuses more), in the status and its conditions', () => {
    const long = `nothing was changed: ${'data-db-0: refused; '.repeat(5_000)}`;
    const { status } = nextStatus(undefined, { phase: 'Rejected', reason: 'TargetRejected', message: long }, new Date('2026-12-01T00:00:00Z'));
    expect(status.message?.length).toBe(limits.conditionMessage);
    expect(status.conditions?.map((c) => c.message.length)).toEqual([limits.conditionMessage, limits.conditionMessage]);
    expect(status.message?.startsWith('nothing was changed: data-db-0: refused;')).toBe(true);
  });
});
