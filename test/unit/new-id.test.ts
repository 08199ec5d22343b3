import { describe, expect, it } from 'vitest';
import { newId } from '../../src/kernel/new-id.js';

describe('newId', () => {
  it('makes unique ids of one shape that sort in the order they were made, also within one millisecond', () => {
    const ids = Array.from({ length: 5000 }, () => newId('evt'));
    for (const id of ids) expect(id).toMatch(/^evt_[0-9a-hjkmnp-tv-z]{26}$/);
    expect(new Set(ids).size).toBe(ids.length);
    // 5,000 ids take a few milliseconds at most: many share one, and still sort as made.
    expect([...ids].sort()).toEqual(ids);
  });
});
