import { performance } from 'node:perf_hooks';
import type { Transaction } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/storage/database.js';
import type { Tables } from '../../src/storage/tables.js';
import { insertBulk } from '../helpers/bulk-events.js';
import { type Stall, startStallProbe } from '../helpers/stall-probe.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// Issue 22: a purge deletes in chunks that each hold the server's thread about 15 ms, and on SQLite their
// commits (and the task's progress writes) sync the write-ahead log off that thread: nothing it does may hold
// the event loop for more than 50 ms. Before, every chunk's commit synced inside COMMIT, on the loop (4 ms at
// the median, up to 80 ms on a shared disk). On a quiet disk those syncs are short enough that the holds alone
// did not tell the two apart: the test also records how the purge's chunks commit (watchCommits).
const STORED = 50_000;
const ALLOWED_MS = 50;
/** The largest chunk a purge deletes in one transaction (event-selection.ts). */
const CHUNK_MAX = 500;

/** Whether the code that called the caller of this is the purge's (its chunks are deleted by EventSelection). */
function calledByPurge(): boolean {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 50;
  const stack = new Error().stack ?? '';
  Error.stackTraceLimit = limit;
  // The purge's task row (TaskStore) is not a chunk: it commits unsynced and syncs off the thread too.
  return /event-selection|purge-service/.test(stack) && !/task-store/.test(stack);
}

/**
 * Records how the purge's chunks commit, by wrapping the database it writes through: batches run on the bulk
 * writer's thread (`bulkBatch`), transactions committed without a sync on the server's thread
 * (`unsyncedTransaction`), WAL syncs on libuv's pool (`syncWal`), and plain transactions (`db.transaction()`,
 * synced inside COMMIT on the server's thread on SQLite). `log` is their order of ending.
 */
function watchCommits(database: Database) {
  const seen = { batches: 0, unsynced: 0, synced: 0, syncs: 0, log: [] as ('batch' | 'unsynced' | 'sync')[] };
  const { unsyncedTransaction, syncWal, bulkBatch } = database;
  if (bulkBatch) {
    database.bulkBatch = async (batch) => {
      const ours = calledByPurge();
      const result = await bulkBatch.call(database, batch);
      if (ours) {
        seen.batches += 1;
        seen.log.push('batch');
      }
      return result;
    };
  }
  const transaction = database.db.transaction;
  if (unsyncedTransaction) {
    database.unsyncedTransaction = async <T>(work: (trx: Transaction<Tables>) => Promise<T>) => {
      const ours = calledByPurge();
      const result = await unsyncedTransaction.call<Database, [typeof work], Promise<T>>(database, work);
      if (ours) {
        seen.unsynced += 1;
        seen.log.push('unsynced');
      }
      return result;
    };
  }
  if (syncWal) {
    database.syncWal = async () => {
      await syncWal.call(database);
      seen.syncs += 1;
      seen.log.push('sync');
    };
  }
  database.db.transaction = function (this: Database['db']) {
    if (calledByPurge()) seen.synced += 1;
    return transaction.call(this);
  };
  return {
    seen,
    restore() {
      // The originals live on the prototype (db.transaction) or were own properties: put back as they were.
      delete (database.db as { transaction?: unknown }).transaction;
      if (unsyncedTransaction) database.unsyncedTransaction = unsyncedTransaction;
      if (syncWal) database.syncWal = syncWal;
      if (bulkBatch) database.bulkBatch = bulkBatch;
    },
  };
}

describe('a purge of a large store', { timeout: 240_000 }, () => {
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    await insertBulk(t.platform.context.database, STORED);
  });
  afterAll(async () => {
    await t?.close();
  });

  const stored = async () =>
    Number(
      (
        await t.platform.context.database.db
          .selectFrom('events')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('event_id', 'like', 'evt_bulk_%')
          .executeTakeFirstOrThrow()
      ).n,
    );

  it(`deletes half of ${STORED} events without holding the server more than ${ALLOWED_MS} ms at a time`, async () => {
    // Warm: the routes' schemas are compiled on first use.
    expect((await t.request('GET', '/api/v1/health')).statusCode).toBe(200);
    expect(await stored()).toBe(STORED);
    // A dry run first: the purge routes' schemas are compiled on their first use.
    const dry = await t.request('POST', '/api/v1/events/purge', {
      token: admin,
      body: { criteria: { older_than_days: 0, event_types: ['shop0.**'] }, dry_run: true },
    });
    expect(dry.statusCode, dry.body).toBe(202);
    await t.request('GET', `/api/v1/events/purge/${dry.data.data.purge_id}`, { token: admin });

    const commits = watchCommits(t.platform.context.database);
    const probe = startStallProbe();
    const res = await t.request('POST', '/api/v1/events/purge', {
      token: admin,
      body: {
        criteria: {
          older_than_days: 0,
          event_types: ['shop0.**', 'shop1.**', 'shop2.**', 'shop3.**', 'shop4.**'],
        },
      },
    });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.data.data.events_to_purge).toBe(STORED / 2);
    const id = res.data.data.purge_id as string;
    // A client polls the health route every 10 ms meanwhile (and the purge's status every 20th time).
    let slowestHealth = 0;
    let status = 'started';
    for (let i = 0; status !== 'completed' && status !== 'failed'; i++) {
      const asked = performance.now();
      expect((await t.request('GET', '/api/v1/health')).statusCode).toBe(200);
      slowestHealth = Math.max(slowestHealth, performance.now() - asked);
      if (i % 20 === 0) {
        status = (await t.request('GET', `/api/v1/events/purge/${id}`, { token: admin })).data.data.purge
          .status;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const stalls = probe.stop();
    commits.restore();
    expect(status).toBe('completed');
    expect(await stored()).toBe(STORED / 2);

    // The mechanism, whatever the disk: on SQLite every chunk is written and committed unsynced on the bulk
    // writer's thread, and the WAL is synced off the thread after the last of them; no chunk is written on the
    // server's thread. On PostgreSQL a commit is a round trip, never a sync on this thread: the chunks are
    // plain transactions, and there is no WAL sync.
    const { seen } = commits;
    const chunks = Math.ceil(STORED / 2 / CHUNK_MAX);
    if (t.backend === 'sqlite') {
      expect(seen.synced, 'chunks committed by a synced transaction on the server thread').toBe(0);
      expect(seen.unsynced, 'chunks written on the server thread').toBe(0);
      expect(seen.batches).toBeGreaterThanOrEqual(chunks);
      expect(seen.syncs).toBeGreaterThanOrEqual(1);
      expect(seen.log.at(-1), 'the last chunk is followed by a WAL sync').toBe('sync');
    } else {
      expect(t.platform.context.database.unsyncedTransaction).toBeUndefined();
      expect(seen.batches + seen.unsynced + seen.syncs).toBe(0);
      expect(seen.synced).toBeGreaterThanOrEqual(chunks);
    }

    const worst = [...stalls].sort((a, b) => b.wallHeldMs - a.wallHeldMs).slice(0, 5);
    const describe = (s: Stall) =>
      `${s.wallHeldMs.toFixed(1)} ms at ${s.at} ms (gap ${s.gapMs.toFixed(1)}, cpu ${s.cpuMs.toFixed(1)})`;
    const over = stalls.filter((s) => s.wallHeldMs > 20).length;
    console.log(
      `purge of ${STORED / 2} events: longest holds ${worst.map(describe).join('; ')}; ${over} over 20 ms; ` +
        `slowest /health ${slowestHealth.toFixed(1)} ms`,
    );
    // The thread's own work within each gap is held to the target; the wall figure (which also counts a disk
    // sync waited for on the loop, and on a loaded machine the scheduler's share) only to catch a gross hold.
    const busiest = Math.max(0, ...stalls.map((s) => s.cpuMs));
    expect(busiest, worst.map(describe).join('\n')).toBeLessThan(ALLOWED_MS);
    expect(worst[0]?.wallHeldMs ?? 0, worst.map(describe).join('\n')).toBeLessThan(3 * ALLOWED_MS);
  });
});
