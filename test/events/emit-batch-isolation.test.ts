import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// Emits that arrive together are written together (group commit): one event that cannot be stored must not
// take the others of its batch down with it.
describe('an unstorable event among concurrent emits', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  it('is refused with 400 on its own; every other emit of the same moment is stored', async () => {
    const bad = [
      { event_type: 'batch.bad', source: 'nul\u0000source' },
      { event_type: 'batch.bad', source: 'lone\ud800surrogate' },
      { event_type: 'batch.bad', metadata: { correlation_id: 'nul\u0000correlation' } },
      { event_type: 'batch.bad', metadata: { correlation_id: 'lone\udc00surrogate' } },
    ];
    const good = Array.from({ length: 40 }, (_, i) => ({ event_type: 'batch.good', data: { i } }));
    // Interleaved and sent at once, so the bad ones share batches with good ones.
    const bodies = good.flatMap((g, i) => (i % 10 === 0 ? [bad[i / 10]!, g] : [g]));
    const answers = await Promise.all(
      bodies.map((body) => t.request('POST', '/api/v1/events', { token: admin, body })),
    );
    for (const [i, res] of answers.entries()) {
      if (bodies[i]!.event_type === 'batch.bad') {
        expect(res.statusCode, res.body).toBe(400);
        expect(res.data.error.code).toBe('VALIDATION_ERROR');
      } else {
        expect(res.statusCode, res.body).toBe(201);
      }
    }
    const stored = await t.request('GET', '/api/v1/events?event_type=batch.*&per_page=100', { token: admin });
    expect(stored.data.data.pagination.total).toBe(40);
  });

  it('stores every emit while a subscription it matched is deleted at the same moment', async () => {
    for (let round = 0; round < 5; round++) {
      const created = await t.request('POST', '/api/v1/events/subscriptions', {
        token: admin,
        body: {
          name: `race-${round}`,
          event_patterns: ['race.*'],
          webhook_config: { url: 'https://hooks.example.test/in' },
        },
      });
      expect(created.statusCode).toBe(201);
      const id = created.data.data.subscription.subscription_id as string;
      const emits = Array.from({ length: 30 }, (_, i) =>
        t.request('POST', '/api/v1/events', {
          token: admin,
          body: { event_type: 'race.tick', data: { round, i } },
        }),
      );
      const removed = t.request('DELETE', `/api/v1/events/subscriptions/${id}`, { token: admin });
      const answers = await Promise.all(emits);
      expect((await removed).statusCode).toBe(200);
      for (const res of answers) expect(res.statusCode, res.body).toBe(201);
    }
    const stored = await t.request('GET', '/api/v1/events?event_type=race.tick&per_page=1', { token: admin });
    expect(stored.data.data.pagination.total).toBe(150);
  });
});
