import { describe, expect, it } from 'vitest';
import { formatTable } from './table.ts';

describe('formatTable', () => {
  it('pads columns to the widest cell, without trailing spaces', () => {
    expect(
      formatTable(
        ['NAME', 'PHASE', 'MESSAGE'],
        [
          ['a', 'Completed', ''],
          ['longer-name', 'Failed', 'boom'],
        ],
      ),
    ).toBe(['NAME          PHASE       MESSAGE', 'a             Completed', 'longer-name   Failed      boom'].join('\n'));
  });
});
