import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// Subscriptions belong to their creator; one whose creator's account was deleted would go on delivering, with
// nobody left to see or stop it.
describe('the subscriptions of a deleted user', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  it('go with the account, their waiting deliveries with them; others stay', async () => {
    const leaving = await t.createUser('leaving', ['user']);
    const staying = await t.createUser('staying', ['user']);
    const subscribe = async (token: string) => {
      const res = await t.request('POST', '/api/v1/events/subscriptions', {
        token,
        body: { event_patterns: ['owner.*'], webhook_config: { url: 'https://hooks.example.test/owner' } },
      });
      expect(res.statusCode, res.body).toBe(201);
      return res.data.data.subscription.subscription_id as string;
    };
    const gone = await subscribe(leaving.access);
    const kept = await subscribe(staying.access);
    const before = await t.request('POST', '/api/v1/events', {
      token: admin,
      body: { event_type: 'owner.before' },
    });
    expect(before.data.data.event.subscriber_count).toBe(2);

    const del = await t.request('DELETE', `/api/v1/admin/users/${leaving.id}`, { token: admin });
    expect(del.statusCode, del.body).toBe(200);
    const ids = async () =>
      (await t.request('GET', '/api/v1/events/subscriptions', { token: admin })).data.data.subscriptions.map(
        (s: { subscription_id: string }) => s.subscription_id,
      ) as string[];
    expect(await eventually(async () => !(await ids()).includes(gone), 5000)).toBe(true);
    expect(await ids()).toContain(kept);

    const after = await t.request('POST', '/api/v1/events', {
      token: admin,
      body: { event_type: 'owner.after' },
    });
    expect(after.data.data.event.subscriber_count).toBe(1);
    const detail = await t.request('GET', `/api/v1/events/${before.data.data.event.event_id}`, {
      token: admin,
    });
    expect(detail.data.data.event.delivery_info.total_subscribers).toBe(1);
  });
});
