import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// SQLite's `max_page_count` stands in for a full disk: past it every write fails with SQLITE_FULL, and SQLite
// rolls the transaction back itself, as it does when the disk fills up. PostgreSQL has no such switch, so the
// cluster project leaves this file out (vitest.config.ts).
describe('a database that cannot grow', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  const lines: string[] = [];
  const db = () => t.platform.context.database.db;
  // On every connection that writes: the server's, and the writer thread's that commits the emits' batches.
  const setMaxPages = async (pages: number) => {
    const database = t.platform.context.database;
    const pragma = sql.raw(`pragma max_page_count = ${pages}`);
    await pragma.execute(db());
    await database.durableBatch?.([pragma.compile(db())]);
  };

  beforeAll(async () => {
    t = await startPlatform(
      { logging: { level: 'error' } },
      { logStream: { write: (line) => lines.push(line) } },
    );
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers emits with 503 and Retry-After, stores none of them, and numbers on without a gap once there is room', async () => {
    const emit = (n: number) =>
      t.request('POST', '/api/v1/events', {
        token: admin,
        body: { event_type: 'storage.full', data: { n, text: 'x'.repeat(6000) } },
      });
    expect((await emit(0)).statusCode).toBe(201);

    const { rows } = await sql<{ page_count: number }>`pragma page_count`.execute(db());
    await setMaxPages(rows[0]!.page_count);
    const refused = await Promise.all(Array.from({ length: 20 }, (_, i) => emit(i + 1)));
    for (const res of refused) {
      // The disk's state is the cause, not a bug: the client is told to retry, and the body says nothing of it.
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.data.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(res.body).not.toMatch(/rollback|SQLITE|disk/i);
    }

    // The operator's log names the cause (not a failed rollback standing in for it).
    const logged = lines.filter((l) => l.includes('the database could not store a change'));
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.join('\n')).toContain('database or disk is full');
    expect(lines.join('\n')).not.toContain('cannot rollback');

    await setMaxPages(1_073_741_823);
    expect((await emit(21)).statusCode).toBe(201);

    const list = await t.request('GET', '/api/v1/events?event_type=storage.full&per_page=100', {
      token: admin,
    });
    const stored = list.data.data.events as { event_id: string }[];
    // Only the emit before and the one after: none of the refused ones was half-written.
    expect(stored).toHaveLength(2);
    // Every stored event, the platform's own included, is numbered without a gap: the refused batches gave
    // their numbers back.
    const all = await t.request('GET', '/api/v1/events?per_page=100', { token: admin });
    const sequences: number[] = [];
    for (const item of all.data.data.events as { event_id: string }[]) {
      const detail = await t.request('GET', `/api/v1/events/${item.event_id}`, { token: admin });
      sequences.push(detail.data.data.event.sequence as number);
    }
    sequences.sort((a, b) => a - b);
    expect(sequences).toEqual(sequences.map((_, i) => i + 1));
  });
});
