import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// A value outside a field's allowed set is named once, with the values that would do (not once per value).
describe('refusals of a value outside its allowed set', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  it('name each field once with its allowed values, in the query and in a body', async () => {
    const users = await t.request('GET', '/api/v1/admin/users?role=x&status=y', { token: admin });
    expect(users.statusCode).toBe(422);
    expect(users.data.error.details.errors).toEqual([
      { field: 'role', reason: 'must be one of: user, moderator, admin' },
      { field: 'status', reason: 'must be one of: active, inactive, suspended' },
    ]);
    expect(users.data.error.message).toMatch(/role must be one of: /);

    const emit = await t.request('POST', '/api/v1/events', {
      token: admin,
      body: { event_type: 'enum.check', data: {}, security_level: 'nope' },
    });
    expect(emit.statusCode).toBe(422);
    expect(emit.data.error.details.errors).toEqual([
      { field: 'security_level', reason: expect.stringMatching(/^must be one of: .*confidential/) },
    ]);
  });
});
