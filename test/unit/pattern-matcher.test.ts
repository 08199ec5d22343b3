import { describe, expect, it } from 'vitest';
import { compileDataFilters } from '../../src/events/data-filter.js';
import { isValidEventType } from '../../src/events/event-type.js';
import { PatternIndex } from '../../src/events/pattern-index.js';
import {
  canonicalPattern,
  compilePattern,
  compilePatterns,
  isValidPattern,
} from '../../src/events/pattern-matcher.js';

describe('event patterns', () => {
  it.each([
    // pattern, type, matches
    ['user.login', 'user.login', true],
    ['user.login', 'user.logout', false],
    ['user.login', 'user.login.extra', false],
    ['user.*', 'user.login', true],
    ['user.*', 'user', false],
    ['user.*', 'user.profile.updated', false],
    ['user.**', 'user', true],
    ['user.**', 'user.login', true],
    ['user.**', 'user.profile.updated', true],
    ['user.**', 'users.login', false],
    ['*', 'anything', true],
    ['*', 'a.b.c.d', true],
    ['**', 'a.b.c', true],
    ['*.created', 'user.created', true],
    ['*.created', 'user.profile.created', false],
    ['**.created', 'created', true],
    ['**.created', 'user.profile.created', true],
    ['**.created', 'user.created.not', false],
    ['user.*.updated', 'user.profile.updated', true],
    ['user.*.updated', 'user.updated', false],
    ['user.**.updated', 'user.updated', true],
    ['user.**.updated', 'user.a.b.updated', true],
    ['a.**.b.**.c', 'a.b.c', true],
    ['a.**.b.**.c', 'a.x.b.y.z.c', true],
    ['a.**.b.**.c', 'a.x.c', false],
    ['order-v2.*', 'order-v2.created', true],
    ['order_v2.*', 'orderXv2.created', false],
    ['User.*', 'user.login', false],
  ])('%s against %s → %s', (pattern, type, expected) => {
    expect(isValidPattern(pattern)).toBe(true);
    expect(compilePattern(pattern)(type)).toBe(expected);
  });

  it.each(['', 'user.', '.user', 'user..login', 'user.*x', 'us er', 'a.b.c.d.e.f.g.h.i.j.k', 'user.***'])(
    'refuses the pattern %j',
    (pattern) => {
      expect(isValidPattern(pattern)).toBe(false);
    },
  );

  it('treats characters with a meaning in regular expressions as literal only where the grammar allows them', () => {
    expect(isValidPattern('user.(a|b)')).toBe(false);
    expect(isValidPattern('user.[a]')).toBe(false);
  });

  it('matches any of several patterns', () => {
    const m = compilePatterns(['user.*', 'order.**']);
    expect(m('user.login')).toBe(true);
    expect(m('order.item.added')).toBe(true);
    expect(m('payment.done')).toBe(false);
  });

  it('validates event types by the grammar of decisions §4', () => {
    expect(isValidEventType('user.login')).toBe(true);
    expect(isValidEventType('a')).toBe(true);
    expect(isValidEventType('a.b.c.d.e.f.g.h.i.j')).toBe(true);
    expect(isValidEventType('a.b.c.d.e.f.g.h.i.j.k')).toBe(false);
    expect(isValidEventType(`${'a'.repeat(255)}`)).toBe(true);
    expect(isValidEventType(`${'a'.repeat(256)}`)).toBe(false);
    expect(isValidEventType('user.*')).toBe(false);
    expect(isValidEventType('ünïcode')).toBe(false);
  });
});

describe('adjacent wildcards', () => {
  it.each([
    ['**.**.x', '**.x'],
    ['**.*.**', '*.**'],
    ['*.**.*', '*.*.**'],
    ['a.**.**.b.*.**', 'a.**.b.*.**'],
    ['user.login', 'user.login'],
    ['*', '*'],
  ])('%s is written %s', (pattern, canonical) => {
    expect(canonicalPattern(pattern)).toBe(canonical);
  });

  // A matcher with no regular expression: segment by segment, `**` trying every split.
  const naive = (pattern: string[], type: string[]): boolean => {
    if (pattern.length === 0) return type.length === 0;
    const [head, ...rest] = pattern;
    if (head === '**') return type.some((_, i) => naive(rest, type.slice(i))) || naive(rest, []);
    if (type.length === 0) return false;
    return (head === '*' || head === type[0]) && naive(rest, type.slice(1));
  };

  it('selects the same types as the pattern as written', () => {
    const patterns = ['**.**.x', '**.*.**', '*.**.*', 'a.**.**.b', '**.a.**', '*.*.**.**.x', '**.**.**'];
    const types = ['x', 'a.x', 'a.b.x', 'a.b', 'a', 'a.a.b', 'x.y', 'q.a.b.x', 'a.b.c.d.e.f.g.h.i.x'];
    for (const p of patterns) {
      const matcher = compilePattern(p);
      for (const t of types) {
        expect(matcher(t), `${p} ~ ${t}`).toBe(p === '*' || naive(p.split('.'), t.split('.')));
      }
    }
  });

  it('matches a run of nine ** against ten segments without backtracking through every split', () => {
    // Written as one regular expression per segment, this took over a millisecond per test (seconds here).
    const matcher = compilePattern('**.**.**.**.**.**.**.**.**.x');
    const started = performance.now();
    for (let i = 0; i < 5000; i++) expect(matcher('a.b.c.d.e.f.g.h.i.j')).toBe(false);
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe('the pattern index', () => {
  it('offers only entries whose first segment fits, plus wildcard-led ones', () => {
    const index = new PatternIndex<string>();
    index.add('users', ['user.*']);
    index.add('orders', ['order.**', 'invoice.paid']);
    index.add('all', ['*']);
    index.add('created', ['**.created']);
    expect([...index.candidates('user.login')].sort()).toEqual(['all', 'created', 'users']);
    expect([...index.candidates('invoice.paid')].sort()).toEqual(['all', 'created', 'orders']);
    expect([...index.candidates('payment.done')].sort()).toEqual(['all', 'created']);
    index.remove('all');
    index.remove('created');
    expect([...index.candidates('payment.done')]).toEqual([]);
    index.add('users', ['payment.*']);
    expect([...index.candidates('user.login')]).toEqual([]);
    expect([...index.candidates('payment.done')]).toEqual(['users']);
  });
});

describe('data filters', () => {
  it('matches dotted paths against a value or a list of accepted values', () => {
    const f = compileDataFilters({
      'customer.tier': ['gold', 'platinum'],
      currency: 'EUR',
      'flags.vip': true,
    });
    expect(f({ customer: { tier: 'gold' }, currency: 'EUR', flags: { vip: true } })).toBe(true);
    expect(f({ customer: { tier: 'silver' }, currency: 'EUR', flags: { vip: true } })).toBe(false);
    expect(f({ customer: { tier: 'gold' }, currency: 'USD', flags: { vip: true } })).toBe(false);
    expect(f({ currency: 'EUR' })).toBe(false);
    expect(compileDataFilters({})({})).toBe(true);
    expect(compileDataFilters({ amount: 10 })({ amount: 10 })).toBe(true);
    expect(compileDataFilters({ amount: 10 })({ amount: '10' })).toBe(false);
  });
});
