import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/**
 * Three instances on one PostgreSQL database and Redis: the same Idempotency-Key fired at all of them at once
 * creates one event, and every instance answers with it.
 */
describe('Idempotency-Key across three instances', { timeout: 90_000 }, () => {
  let a: TestPlatform;
  let b: TestPlatform;
  let c: TestPlatform;

  beforeAll(async () => {
    a = await startPlatform();
    b = await startPlatform({}, { storage: a.storage });
    c = await startPlatform({}, { storage: a.storage });
  });
  afterAll(async () => {
    await c?.close();
    await b?.close();
    await a?.close();
  });

  it('creates exactly one event when one key reaches every instance at once', async () => {
    const instances = [a, b, c];
    const tokens = await Promise.all(instances.map((i) => i.adminToken()));
    for (let round = 0; round < 5; round++) {
      const body = { event_type: `retry.storm${round}`, source: 'producer', data: { round } };
      const headers = { 'idempotency-key': `storm-${round}` };
      const answers = await Promise.all(
        Array.from({ length: 12 }, (_, n) =>
          instances[n % 3]!.request('POST', '/api/v1/events', { token: tokens[n % 3], headers, body }),
        ),
      );
      for (const r of answers) expect(r.statusCode, r.body).toBe(201);
      expect(new Set(answers.map((r) => r.data.data.event.event_id)).size).toBe(1);
      expect(answers.filter((r) => r.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
      const stored = await a.platform.context.database.db
        .selectFrom('events')
        .select('event_id')
        .where('event_type', '=', body.event_type)
        .execute();
      expect(stored).toHaveLength(1);
    }
  });

  it('refuses the key with another body on every instance', async () => {
    const tokens = await Promise.all([a, b, c].map((i) => i.adminToken()));
    const headers = { 'idempotency-key': 'one-body-only' };
    const first = await a.request('POST', '/api/v1/events', {
      token: tokens[0],
      headers,
      body: { event_type: 'retry.body', data: { v: 1 } },
    });
    expect(first.statusCode).toBe(201);
    for (const [i, instance] of [b, c].entries()) {
      const other = await instance.request('POST', '/api/v1/events', {
        token: tokens[i + 1],
        headers,
        body: { event_type: 'retry.body', data: { v: 2 } },
      });
      expect(other.statusCode).toBe(409);
      expect(other.data.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    }
  });
});
