import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// A JSON body carries its own types: a string where a number is expected (or a string where a list is) is a
// mistake to name, not a value to convert. Query strings are text, and keep being read as numbers.
describe('the types of a JSON body', () => {
  let t: TestPlatform;
  let token: string;
  beforeAll(async () => {
    t = await startPlatform();
    token = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  it('are not converted: a string for a number, a number for a string and a string for a list are refused', async () => {
    const cases: [string, string, unknown, string][] = [
      ['POST', '/api/v1/events', { event_type: 'typed.priority', priority: '7' }, 'priority'],
      ['POST', '/api/v1/events', { event_type: 123 }, 'event_type'],
      [
        'POST',
        '/api/v1/users',
        { username: 12345, email: 'typed@example.test', password: 'Passw0rd!Passw0rd' },
        'username',
      ],
      [
        'POST',
        '/api/v1/users',
        { username: 'typed', email: 'typed@example.test', password: 'Passw0rd!Passw0rd', roles: 'user' },
        'roles',
      ],
    ];
    for (const [method, url, body, field] of cases) {
      const res = await t.request(method, url, { token, body });
      expect(res.statusCode, `${method} ${url} ${JSON.stringify(body)}: ${res.body}`).toBe(422);
      expect(res.data.error.code).toBe('VALIDATION_ERROR');
      expect(res.data.error.details.field).toBe(field);
    }
    const users = await t.request('GET', '/api/v1/users?search=typed', { token });
    expect(users.data.data.users ?? users.data.data.items ?? []).toEqual([]);
  });

  it('still reads numbers from the query string', async () => {
    const res = await t.request('GET', '/api/v1/events?per_page=5&page=1', { token });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.data.data.pagination.per_page).toBe(5);
  });
});
