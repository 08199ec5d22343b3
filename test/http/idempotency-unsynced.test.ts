import type { Transaction } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/storage/database.js';
import type { Tables } from '../../src/storage/tables.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { bytesWritten } from '../helpers/thread-writes.js';

/**
 * SQLite with synced commits (the default). An emit's Idempotency-Key is written with the event, in the event
 * writer's batch, on the writer thread: the key makes no commit of its own. The other creating routes claim
 * their key and store its answer in commits of their own, without a sync (ADR 0011). PostgreSQL has no unsynced
 * kind of commit nor a writer thread, so this file runs on the embedded project only.
 */
describe("an Idempotency-Key's writes on SQLite", { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let token: string;
  /** The synchronous level during each commit of the idempotency store's own. */
  const commits: string[] = [];
  let restore = () => {};

  beforeAll(async () => {
    t = await startPlatform();
    token = (await t.createUser('ann', ['user'])).access;
    const database = t.platform.context.database;
    const level = database.synchronous!;
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
    restore = () => {
      database.unsyncedTransaction = unsyncedTransaction;
    };
  });
  afterAll(async () => {
    restore();
    await t?.close();
  });

  const emit = (key: string, body: Record<string, unknown>) =>
    t.request('POST', '/api/v1/events', { token, body, headers: { 'idempotency-key': key } });

  it("writes an emit's key with its event, on the writer thread: no commit of its own", async () => {
    // Warm: the route's first use, the writer thread started.
    expect((await emit('warm', { event_type: 'order.warm', data: {} })).statusCode).toBe(201);
    commits.length = 0;
    const served = bytesWritten('thread');
    const all = bytesWritten('process');
    const firsts = [];
    for (let i = 1; i <= 20; i++) {
      const res = await emit(`order-${i}`, {
        event_type: 'order.keyed',
        source: 'shop',
        data: { order_id: i },
      });
      expect(res.statusCode).toBe(201);
      firsts.push(res);
    }
    const byServer = bytesWritten('thread') - served;
    const byProcess = bytesWritten('process') - all;
    expect(commits).toEqual([]);
    // Each emit committed alone: its event, its key and their index entries, a few pages appended to the WAL,
    // none of them by the thread that serves requests (before, the key's claim and answer were two commits there).
    expect(byProcess).toBeGreaterThan(20 * 4096);
    expect(byServer, `${byServer} of ${byProcess} bytes written by the server's thread`).toBeLessThan(
      byProcess / 10,
    );
    const keys = await t.platform.context.database.db
      .selectFrom('idempotency_keys')
      .select(['key', 'owner', 'status_code', 'response_body'])
      .where('key', 'like', 'order-%')
      .execute();
    // Each key is stored answered, by its event (no stored body).
    expect(keys).toHaveLength(20);
    for (const k of keys) expect(k).toMatchObject({ status_code: 201, response_body: null });
    expect(new Set(keys.map((k) => k.owner))).toEqual(new Set(firsts.map((f) => f.data.data.event.event_id)));
    // A repeat is answered from the event, byte for byte, and writes nothing either.
    const again = await emit('order-7', { event_type: 'order.keyed', source: 'shop', data: { order_id: 7 } });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(firsts[6]!.body);
    const other = await emit('order-7', { event_type: 'order.keyed', source: 'shop', data: { order_id: 8 } });
    expect(other.statusCode).toBe(409);
    expect(other.data.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it("commits another route's claim and answer unsynced, the connection back at FULL after each", async () => {
    commits.length = 0;
    const database = t.platform.context.database;
    const create = () =>
      t.request('POST', '/api/v1/events/subscriptions', {
        token,
        headers: { 'idempotency-key': 'hook-1' },
        body: { event_patterns: ['order.*'], webhook_config: { url: 'https://hooks.example.test/in' } },
      });
    const first = await create();
    expect(first.statusCode, first.body).toBe(201);
    // The claim, then the answer.
    expect(commits).toEqual(['normal', 'normal']);
    // Put back once each is over (read when nothing else holds the connection).
    await database.db.connection().execute(async () => expect(database.synchronous!()).toBe('full'));
    const again = await create();
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(first.body);
  });
});
