import type { Transaction } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/storage/database.js';
import type { Tables } from '../../src/storage/tables.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/**
 * SQLite with synced commits (the default): an Idempotency-Key's claim and answer commit without a sync of their
 * own (ADR 0011). PostgreSQL has no unsynced kind of commit, so this file runs on the embedded project only.
 */
describe("an Idempotency-Key's writes on SQLite", { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let token: string;

  beforeAll(async () => {
    t = await startPlatform();
    token = (await t.createUser('ann', ['user'])).access;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('commits the claim and the answer unsynced, the connection back at FULL after each', async () => {
    const database = t.platform.context.database;
    const level = database.synchronous!;
    const commits: string[] = [];
    const { unsyncedTransaction } = database;
    expect(unsyncedTransaction).toBeDefined();
    database.unsyncedTransaction = async <T>(work: (trx: Transaction<Tables>) => Promise<T>) => {
      const ours = /idempotency-store/.test(new Error().stack ?? '');
      let during: string | undefined;
      const result = await unsyncedTransaction!.call<Database, [typeof work], Promise<T>>(
        database,
        async (trx) => {
          during = level();
          return work(trx);
        },
      );
      if (ours) commits.push(`${during}`);
      return result;
    };
    try {
      const body = { event_type: 'order.synced', source: 'shop', data: { order_id: 9 } };
      const emit = () =>
        t.request('POST', '/api/v1/events', { token, body, headers: { 'idempotency-key': 'order-synced' } });
      const first = await emit();
      expect(first.statusCode).toBe(201);
      // The claim, then the answer.
      expect(commits).toEqual(['normal', 'normal']);
      // Put back once each is over (read when nothing else holds the connection).
      await database.db.connection().execute(async () => expect(level()).toBe('full'));
      const stored = await database.db
        .selectFrom('events')
        .select('event_id')
        .where('event_type', '=', 'order.synced')
        .execute();
      expect(stored).toHaveLength(1);
      const again = await emit();
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toBe(first.body);
    } finally {
      database.unsyncedTransaction = unsyncedTransaction;
    }
  });
});
