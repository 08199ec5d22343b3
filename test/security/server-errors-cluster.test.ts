import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// A day-long window (fixed windows start at midnight UTC), so the few errors below never straddle two windows.
const SECURITY = { security: { server_error_threshold: 4, server_error_window_minutes: 1440 } };

// Two instances share one counter only through Redis; embedded mode is one process (security-alerts.test.ts).
describe('the server errors alert across instances', () => {
  let a: TestPlatform;
  let b: TestPlatform;
  let adminA: string;
  let adminB: string;

  beforeAll(async () => {
    a = await startPlatform(SECURITY);
    b = await startPlatform(SECURITY, { storage: a.storage });
    adminA = await a.adminToken();
    adminB = (await b.login('admin', ADMIN_PASSWORD)).access;
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const serverErrors = async () =>
    (await a.request('GET', '/api/v1/admin/security/alerts?type=server_errors', { token: adminA })).data.data
      .alerts as { occurrences: number; metadata: Record<string, unknown> }[];
  const fail = async (t: TestPlatform, token: string) => {
    const res = await t.request('GET', '/api/v1/security/status', { token });
    expect(res.statusCode).toBe(500);
  };

  it('adds up the 5xx responses of every instance and raises one alert when the sum reaches the threshold', async () => {
    // A table the status route reads goes missing in the shared database: every instance now answers 500.
    await a.platform.context.database.db.schema.dropTable('failed_logins').execute();
    await fail(a, adminA);
    await fail(a, adminA);
    await fail(b, adminB);
    // Three in all, two and one per instance: below the threshold wherever counted.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await serverErrors()).toEqual([]);

    await fail(b, adminB);
    expect(await eventually(async () => (await serverErrors()).length === 1)).toBe(true);
    expect((await serverErrors())[0]).toMatchObject({
      occurrences: 1,
      metadata: { server_errors: 4, counted_in: 'shared_state', last_status: 500 },
    });

    // More errors on either instance within the minute raise nothing new anywhere.
    await fail(a, adminA);
    await fail(b, adminB);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await serverErrors()).toHaveLength(1);
    expect((await serverErrors())[0]?.occurrences).toBe(1);
  });
});
