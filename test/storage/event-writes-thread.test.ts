import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { bytesWritten } from '../helpers/thread-writes.js';

/**
 * SQLite: an emit's batch (its events, their outbox rows and roll-ups) is written and committed by the writer
 * thread (Database.durableBatch), so the commit's wait for the disk's sync never holds the server's thread.
 * Linux counts the bytes each thread passes to write calls (`/proc/thread-self/io`, `wchar`): the WAL's frames
 * are written by whichever thread commits. PostgreSQL's writes are the server's, so this runs on the embedded
 * project only.
 */
const EMITS = 20;

describe("an emit's writes on SQLite", { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let token: string;

  beforeAll(async () => {
    t = await startPlatform();
    token = (await t.createUser('ann', ['user'])).access;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('reach the database file from the writer thread, not from the thread that serves requests', async () => {
    const emit = (i: number) =>
      t.request('POST', '/api/v1/events', {
        token,
        body: { event_type: 'order.placed', source: 'shop', data: { order_id: i, note: 'x'.repeat(2000) } },
      });
    // Warm: the route's first use, the writer thread started.
    expect((await emit(0)).statusCode).toBe(201);
    const served = bytesWritten('thread');
    const all = bytesWritten('process');
    for (let i = 1; i <= EMITS; i++) expect((await emit(i)).statusCode).toBe(201);
    const byServer = bytesWritten('thread') - served;
    const byProcess = bytesWritten('process') - all;
    // Each emit committed alone: its event (2 KB of data), its index entries and its roll-up rows, a few pages
    // of 4 KB each appended to the WAL.
    expect(byProcess).toBeGreaterThan(EMITS * 2 * 4096);
    // Nothing of it from this thread (a little room for anything else the platform writes meanwhile).
    expect(byServer, `${byServer} of ${byProcess} bytes written by the server's thread`).toBeLessThan(
      byProcess / 10,
    );
    const stored = await t.platform.context.database.db
      .selectFrom('events')
      .select(({ fn }) => fn.countAll<number>().as('n'))
      .where('event_type', '=', 'order.placed')
      .executeTakeFirstOrThrow();
    expect(Number(stored.n)).toBe(EMITS + 1);
  });
});
