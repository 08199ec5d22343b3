import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// RFC 3339 allows a leap second (23:59:60), which JavaScript's Date cannot hold: every route that takes a time
// refuses one in the envelope, naming the field (src/http/date-time-format.ts), instead of failing with 500.
describe('times with a leap second', () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  const LEAP = '2016-12-31T23:59:60Z';
  it.each([
    ['/api/v1/events', 'start_time'],
    ['/api/v1/events/stats', 'start_time'],
    ['/api/v1/admin/users', 'created_after'],
    ['/api/v1/admin/audit-log', 'start_time'],
    ['/api/v1/metrics', 'start_time'],
    ['/api/v1/admin/system/metrics', 'end_time'],
    ['/api/v1/admin/system/logs', 'start_time'],
  ])('%s?%s=…23:59:60Z is a 422 naming the field', async (path, field) => {
    const res = await t.request('GET', `${path}?${field}=${LEAP}`, { token: admin });
    expect(res.statusCode).toBe(422);
    expect(res.data.error.code).toBe('VALIDATION_ERROR');
    expect(JSON.stringify(res.data.error.details.errors)).toContain(field);
  });

  it('still takes every other RFC 3339 form: offsets, lower case, fractions', async () => {
    for (const time of ['2016-12-31T23:59:59+05:30', '2016-12-31t23:59:59z', '2016-12-31T23:59:59.123456Z']) {
      const res = await t.request('GET', `/api/v1/events?start_time=${encodeURIComponent(time)}`, {
        token: admin,
      });
      expect(res.statusCode).toBe(200);
    }
  });
});
