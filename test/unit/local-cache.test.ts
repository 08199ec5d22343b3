import { describe, expect, it } from 'vitest';
import { LocalCache } from '../../src/cache/local-cache.js';

describe('LocalCache', () => {
  it('answers an unchanged entry with the same frozen value, and a changed one with the new value', () => {
    const cache = LocalCache.standalone<{ id: string; roles: string[] }>('test', 60_000);
    cache.set('u1', { id: 'u1', roles: ['user'] });
    const first = cache.get('u1')!;
    expect(first).toEqual({ id: 'u1', roles: ['user'] });
    expect(cache.get('u1')).toBe(first);
    // No caller can change what the next one reads.
    expect(() => first.roles.push('admin')).toThrow(TypeError);
    expect(cache.get('u1')!.roles).toEqual(['user']);

    cache.set('u1', { id: 'u1', roles: ['user', 'admin'] });
    expect(cache.get('u1')!.roles).toEqual(['user', 'admin']);
    cache.delete('u1');
    expect(cache.get('u1')).toBeUndefined();
    cache.set('u2', { id: 'u2', roles: [] });
    cache.clear();
    expect(cache.get('u2')).toBeUndefined();
  });
});
