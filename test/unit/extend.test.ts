import { describe, expect, it } from 'vitest';
import { extend } from '../../src/kernel/extend.js';

describe('extend', () => {
  it('gives what { ...base, ...fields } gives: base first, later properties winning, base untouched', () => {
    const base = { a: 1, b: 'two', c: null as string | null };
    const out = extend(base, { b: 'replaced', d: true });
    expect(out).toEqual({ a: 1, b: 'replaced', c: null, d: true });
    expect(Object.keys(out)).toEqual(['a', 'b', 'c', 'd']);
    expect(out).not.toBe(base);
    expect(base).toEqual({ a: 1, b: 'two', c: null });
    expect(JSON.stringify(extend({ x: 1, y: 2 }, { y: 3, z: 4 }))).toBe(JSON.stringify({ x: 1, y: 3, z: 4 }));
  });
});
