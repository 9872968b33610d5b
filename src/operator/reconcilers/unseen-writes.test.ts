import { describe, expect, it } from 'vitest';
import { UnseenWrites } from './unseen-writes.ts';

describe('UnseenWrites', () => {
  it('holds a key while the cache still has the version our write replaced, and forgets it once the cache moves on', () => {
    const unseen = new UnseenWrites();
    expect(unseen.behind('db/data', '5')).toBe(false);
    unseen.wrote('db/data', '5');
    expect(unseen.behind('db/data', '5')).toBe(true);
    expect(unseen.behind('db/other', '5')).toBe(false);
    expect(unseen.behind('db/data', '7')).toBe(false);
    // Forgotten: an older copy seen later is not mistaken for ours.
    expect(unseen.behind('db/data', '5')).toBe(false);
  });

  it('a cache older than the first of two writes is behind too, not only one older than the last', () => {
    const unseen = new UnseenWrites();
    unseen.wrote('db/grow', '5'); // the accepted plan: 5 → 6
    unseen.wrote('db/grow', '6'); // the status after the patch: 6 → 7
    expect(unseen.behind('db/grow', '5')).toBe(true);
    expect(unseen.behind('db/grow', '6')).toBe(true);
    expect(unseen.behind('db/grow', '7')).toBe(false);
    expect(unseen.behind('db/grow', '5')).toBe(false);
  });

  it('forgets a key on request (the object is gone)', () => {
    const unseen = new UnseenWrites();
    unseen.wrote('db/data', '5');
    unseen.forget('db/data');
    expect(unseen.behind('db/data', '5')).toBe(false);
  });

  it('forgets the writes first made longer ago than an age, and keeps the younger ones', () => {
    let now = 0;
    const unseen = new UnseenWrites(() => now);
    unseen.wrote('db/old', '5');
    now = 50_000;
    unseen.wrote('db/young', '8');
    now = 70_000;
    unseen.forgetOlderThan(60_000);
    expect(unseen.behind('db/old', '5')).toBe(false);
    expect(unseen.behind('db/young', '8')).toBe(true);
  });
});
