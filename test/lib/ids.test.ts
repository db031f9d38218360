import { describe, expect, it } from 'vitest';
import { UUID, uuidv7 } from '../../src/lib/ids.ts';

describe('ids', () => {
  it('are version 7 UUIDs that stay in creation order within one millisecond', () => {
    const ids = Array.from({ length: 10_000 }, () => uuidv7());
    // 10,000 ids in a tight loop span few milliseconds, so most share one with their neighbours.
    const sameMillisecond = ids.filter((id, i) => i > 0 && id.slice(0, 13) === ids[i - 1]!.slice(0, 13));
    expect(sameMillisecond.length).toBeGreaterThan(1000);
    for (const id of ids) {
      expect(id).toMatch(UUID);
      expect(id[14]).toBe('7');
    }
    const outOfOrder = ids.filter((id, i) => i > 0 && id <= ids[i - 1]!);
    expect(outOfOrder).toEqual([]);
  });
});
