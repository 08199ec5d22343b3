import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { permissionsOf } from '../../src/auth/roles.js';
import { type EventQuery, EventStore } from '../../src/events/event-store.js';
import { bulkWrites } from '../../src/storage/bulk-writes.js';
import type { Database } from '../../src/storage/database.js';
import { EventSelection } from '../../src/webhooks/event-selection.js';
import { insertBulk } from '../helpers/bulk-events.js';
import { planOf } from '../helpers/query-plan.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/**
 * Events written straight into the table (as emits store them), enough for a read to take a while
 * (test/helpers/bulk-events.ts).
 */
const BULK = 150_000;

/** True when a plan reads the events table row by row instead of through an index. */
const scansEvents = (plan: string[]) =>
  plan.some((line) => /^\s*(->\s*)?SCAN events\s*$/.test(line) || /Seq Scan on events/.test(line));

describe('the event list at scale', { timeout: 180_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let store: EventStore;
  let database: Database;

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    database = t.platform.context.database;
    store = new EventStore(database.db, database.reads, database.dialect);
    await insertBulk(database, BULK);
  });
  afterAll(async () => {
    await t?.close();
  });

  const list = async (query: string) => {
    const res = await t.request('GET', `/api/v1/events${query}`, { token: admin });
    expect(res.statusCode).toBe(200);
    return res.data.data;
  };

  const query = (filters: Partial<EventQuery>): EventQuery => ({
    sort: 'timestamp',
    order: 'desc',
    page: 1,
    perPage: 20,
    now: new Date().toISOString(),
    reader: { userId: 'usr_nobody', isAdmin: true, permissions: ['*'] },
    ...filters,
  });

  const FILTERS: Record<string, Partial<EventQuery>> = {
    none: {},
    'an exact type': { eventType: 'shop5.kind3' },
    'a pattern with a prefix': { eventType: 'shop5.**' },
    'a pattern starting with a wildcard': { eventType: '*.kind3' },
    'a source': { source: 'src4' },
    'a time range': { startTime: '2026-01-01T00:10:00.000Z', endTime: '2026-01-01T00:20:00.000Z' },
    'a correlation id': { correlationId: 'corr-42' },
    'a priority': { priority: 7 },
    'a status': { status: 'failed' },
    'sorted by priority': { sort: 'priority' },
    'sorted by type': { sort: 'event_type', order: 'asc' },
    'a type and a source': { eventType: 'shop5.kind3', source: 'src5' },
  };

  for (const [name, filters] of Object.entries(FILTERS)) {
    it(`reads a page filtered by ${name} and its count through indexes, at page 1 and at page 400`, async () => {
      for (const page of [1, 400]) {
        const statements = await store.listQueries(query({ ...filters, page }));
        expect(statements).toBeDefined();
        for (const statement of [statements!.rows, statements!.count]) {
          const plan = await planOf(database, statement.compile());
          expect(scansEvents(plan), plan.join('\n')).toBe(false);
          expect(plan.join('\n')).toMatch(
            database.dialect === 'sqlite' ? /USING (COVERING )?INDEX/ : /Index/,
          );
        }
      }
    });
  }

  // A reader who is not an admin adds the visibility condition (`readableBy`: security level, emitter, the
  // platform families it may not read). The list indexes carry its columns (migration 0032): on SQLite the page's
  // keys and its count are read from the index alone (without them, the unfiltered count was a `SCAN events`
  // and every other read a table row per index entry); PostgreSQL reads them through an index too.
  const USER_READER = { userId: 'usr_reader', isAdmin: false, permissions: permissionsOf(['user']) };
  for (const [name, filters] of Object.entries(FILTERS)) {
    it(`reads a non-admin's page filtered by ${name} and its count from the indexes alone, at page 1 and at page 400`, async () => {
      for (const page of [1, 400]) {
        const statements = await store.listQueries(query({ ...filters, page, reader: USER_READER }));
        expect(statements).toBeDefined();
        for (const statement of [statements!.rows, statements!.count]) {
          const lines = await planOf(database, statement.compile());
          const plan = lines.join('\n');
          expect(scansEvents(lines), plan).toBe(false);
          if (database.dialect === 'sqlite') {
            const listIndexes = lines.filter((line) => line.includes('events_list_'));
            expect(listIndexes.length, plan).toBeGreaterThan(0);
            for (const line of listIndexes) expect(line, plan).toMatch(/USING COVERING INDEX events_list_/);
          } else {
            expect(plan).toMatch(/Index/);
          }
        }
      }
    });
  }

  it('reads a page filtered by one column through its list index (on SQLite in its order, without sorting the matches)', async () => {
    // Whether PostgreSQL sorts the matches on a fresh table is its estimates' choice: there the page is held to
    // an index read (no sequential scan with it turned off); SQLite's plan is its own rule.
    for (const filters of [
      { source: 'src4' },
      { status: 'failed' },
      { priority: 7 },
      { eventType: 'shop5.kind3' },
    ]) {
      const statements = await store.listQueries(query(filters));
      const lines = await planOf(database, statements!.rows.compile());
      const plan = lines.join('\n');
      if (database.dialect !== 'sqlite') {
        expect(scansEvents(lines), plan).toBe(false);
        expect(plan).toMatch(/Index .*events_list_/);
        continue;
      }
      expect(plan).toMatch(/SEARCH events USING (COVERING )?INDEX events_list_/);
      expect(plan).not.toMatch(/TEMP B-TREE/);
    }
  });

  it("reads a recovery's missed events of a subscription's types, readable by its owner, through an index", async () => {
    const selection = new EventSelection(database.reads, database.dialect, bulkWrites(database));
    const types = await selection.resolveTypes(['shop5.*']);
    expect(types).toHaveLength(7);
    // As `subscription.recover` reads them (delivery-recovery.ts, missedSelector): a window, its types, its reader.
    const selector = {
      types: ['shop5.*'],
      reader: USER_READER,
      start: '2026-01-01T00:10:00.000Z',
      end: '2026-01-01T00:20:00.000Z',
      upToSequence: 0,
    };
    const lines = await planOf(database, selection.pageQuery(selector, undefined, 200, types).compile());
    expect(scansEvents(lines), lines.join('\n')).toBe(false);
    expect(lines.join('\n')).toMatch(database.dialect === 'sqlite' ? /USING (COVERING )?INDEX/ : /Index/);
  });

  it("reads each page of a replay or recovery past its cursor without sorting the window's remaining events", async () => {
    const selection = new EventSelection(database.reads, database.dialect, bulkWrites(database));
    const types = await selection.resolveTypes(['shop5.*']);
    const selector = {
      types: ['shop5.*'],
      start: '2026-01-01T00:00:00.000Z',
      end: '2030-01-01T00:00:00.000Z',
    };
    // A cursor at the first event of the window: the rest of it, the whole store's shop5 events, is ahead.
    const [first] = await selection.page(selector, undefined, 1, types);
    expect(first).toBeDefined();
    for (const picked of [types, [types![0]!], undefined]) {
      const lines = await planOf(database, selection.pageQuery(selector, first, 200, picked).compile());
      const plan = lines.join('\n');
      expect(scansEvents(lines), plan).toBe(false);
      if (database.dialect === 'sqlite') expect(plan).not.toMatch(/TEMP B-TREE/);
      else expect(plan).not.toMatch(/(^|->\s*)Sort\b/m);
    }
    // Page after page, every event of the window once, in (timestamp, sequence) order.
    const seen: { timestamp: string; sequence: number }[] = [];
    let cursor: { timestamp: string; sequence: number } | undefined;
    for (let i = 0; i < 3; i += 1) {
      const page = await selection.page(selector, cursor, 500, types);
      seen.push(...page);
      cursor = page.at(-1);
    }
    const sorted = [...seen].sort((a, b) =>
      a.timestamp === b.timestamp ? a.sequence - b.sequence : a.timestamp < b.timestamp ? -1 : 1,
    );
    expect(seen).toEqual(sorted);
    expect(new Set(seen.map((e) => e.sequence)).size).toBe(seen.length);
    expect(seen).toHaveLength(1500);
  });

  it('finds the types of a pattern by seeking through the type index, within its prefix on SQLite', async () => {
    const plan = await planOf(database, store.typeSeeks('shop5.**').compile(database.db));
    expect(scansEvents(plan), plan.join('\n')).toBe(false);
    if (database.dialect === 'sqlite') {
      expect(plan.join('\n')).toMatch(/COVERING INDEX events_list_type \(event_type>\? AND event_type<\?\)/);
    } else {
      expect(plan.join('\n')).toMatch(/Index Only Scan using events_list_type/);
    }
  });

  it("reads a pattern's deep page by merging its types' index orders, without sorting the matches", async () => {
    for (const order of ['desc', 'asc'] as const) {
      const statements = await store.listQueries(
        query({ eventType: 'shop5.**', order, page: 500, perPage: 100 }),
      );
      const lines = await planOf(database, statements!.rows.compile());
      const plan = lines.join('\n');
      expect(scansEvents(lines), plan).toBe(false);
      // Its 7 types' arms all start at the roll-ups' bucket.
      expect(statements!.skippedArms).toBe(7);
      if (database.dialect === 'sqlite') {
        // From the merge to the scan of its page: the page of keys (a deep one starts at the roll-ups' bucket
        // where its offset lands, found by a walk of a few roll-up rows before it: src/events/deep-page-skip.ts).
        // After it at most one sort: of the page's rows, found by their `sequence` (`mergedPage`, `joined`).
        const merge = lines.findIndex((line) => /MERGE \(UNION ALL\)/.test(line));
        const end = lines.indexOf('SCAN page', merge);
        expect(merge, plan).toBeGreaterThanOrEqual(0);
        expect(end, plan).toBeGreaterThan(merge);
        const page = lines.slice(merge, end + 1).join('\n');
        expect(page).toMatch(/COVERING INDEX events_list_type \(event_type=\?( AND timestamp[<>]\?)?\)/);
        expect(page).not.toMatch(/TEMP B-TREE/);
        expect(
          lines.slice(end + 1).filter((line) => /TEMP B-TREE/.test(line)).length,
          plan,
        ).toBeLessThanOrEqual(1);
      } else {
        // Each arm by its type's index; whether it reads it in order or sorts a small arm is the planner's
        // estimate (at a million events: Index Only Scan Backward). The arms are merged, never sorted together.
        expect(plan).toMatch(/Merge Append/);
        expect(plan).toMatch(/Index.* on events_list_type|using events_list_type/);
      }
    }
  });

  it("gives a pattern's pages, deep ones too, exactly as the plain query of its types does", async () => {
    const reader = await t.createUser('pattern-reader', ['user']);
    const plain = async (filters: { source?: string }, order: 'asc' | 'desc', page: number) => {
      let q = database.db
        .selectFrom('events')
        .select('event_id')
        .where(
          'event_type',
          'in',
          [0, 1, 2, 3, 4, 5, 6].map((k) => `shop5.kind${k}`),
        )
        .where('security_level', '!=', 'confidential');
      if (filters.source) q = q.where('source', '=', filters.source);
      const rows = await q
        .orderBy('timestamp', order)
        .orderBy('sequence', order)
        .limit(100)
        .offset((page - 1) * 100)
        .execute();
      return rows.map((r) => r.event_id);
    };
    // shop5.* holds a tenth of the bulk: 150 pages of 100.
    for (const [filters, pages] of [
      [{}, [1, 75, 150, 151]],
      [{ source: 'src5' }, [1, 150, 151]],
    ] as const) {
      for (const order of ['desc', 'asc'] as const) {
        for (const page of pages) {
          const source = 'source' in filters ? `&source=${filters.source}` : '';
          const res = await t.request(
            'GET',
            `/api/v1/events?event_type=shop5.*&per_page=100&page=${page}&order=${order}${source}`,
            { token: reader.access },
          );
          expect(res.statusCode).toBe(200);
          const ids = res.data.data.events.map((e: { event_id: string }) => e.event_id);
          expect(ids, `page ${page} ${order} ${source}`).toEqual(await plain(filters, order, page));
          expect(ids.length).toBe(page <= 150 ? 100 : 0);
        }
      }
    }
  });

  it('lists the events of a pattern, and only those, also when other types share its first letters', async () => {
    for (const type of ['shop5', 'shop5-x.kind1', 'shop50.kind1', 'shop5.kind1.deep']) {
      const res = await t.request('POST', '/api/v1/events', {
        token: admin,
        body: { event_type: type, source: 'test' },
      });
      expect(res.statusCode).toBe(201);
    }
    const types = async (pattern: string) =>
      (await list(`?source=test&event_type=${pattern}&order=asc`)).events.map(
        (e: { event_type: string }) => e.event_type,
      );
    expect(await types('shop5.**')).toEqual(['shop5', 'shop5.kind1.deep']);
    expect(await types('shop5.*')).toEqual([]);
    expect(await types('shop5.*.deep')).toEqual(['shop5.kind1.deep']);
    expect(await types('*.kind1')).toEqual(['shop5-x.kind1', 'shop50.kind1']);
    expect(await types('**')).toHaveLength(4);
  });

  it('gives an exact total below 10,000 events past the page, and a lower bound flagged total_exact false above', async () => {
    // shop5.kind3: i % 10 = 5 and i % 7 = 3, one in 70.
    const small = await list('?event_type=shop5.kind3&per_page=100');
    expect(small.pagination.total).toBe(Math.floor((BULK - 45) / 70) + 1);
    expect(small.pagination).not.toHaveProperty('total_exact');

    const big = await list('?event_type=shop5.**&source=src5&per_page=100&page=3');
    expect(big.pagination.total).toBe(300 + 10_000);
    expect(big.pagination.total_exact).toBe(false);
    expect(big.pagination.has_next).toBe(true);
    expect(big.events).toHaveLength(100);
    // The page holds the same events as before: the 201st to 300th of the type, newest first.
    const sequences = big.events.map((e: { event_id: string }) =>
      Number(e.event_id.slice('evt_bulk_'.length)),
    );
    const expected: number[] = [];
    for (let i = BULK; expected.length < 300; i--) if (i % 10 === 5) expected.push(i);
    expect(sequences).toEqual(expected.slice(200));
  });

  it('keeps answering other requests while a deep page is read', async () => {
    // A deep page, for a reader who is not an admin, of a filter whose index holds neither the sort's column
    // nor the page's order (status, sorted by priority): an offset through nearly every stored event, each
    // read from the table. (A reader's security level no longer makes the read long: the list indexes hold
    // it, migration 0032.)
    const reader = await t.createUser('deep-reader', ['user']);
    // A first read starts the reader threads.
    await list('?per_page=1');
    const started = performance.now();
    let last = started;
    let longest = 0;
    const probe = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 5);
    try {
      // Processed: all but one in 97 of the bulk; the page before the last.
      const page = Math.floor((BULK - BULK / 97) / 100) - 1;
      const res = await t.request(
        'GET',
        `/api/v1/events?per_page=100&page=${page}&sort=priority&status=processed`,
        {
          token: reader.access,
        },
      );
      expect(res.statusCode).toBe(200);
      expect(res.data.data.events.length).toBeGreaterThan(0);
    } finally {
      clearInterval(probe);
    }
    const took = performance.now() - started;
    // The stretch since the probe last ran counts too: a read that held the thread throughout leaves no other.
    longest = Math.max(longest, performance.now() - last);
    const message = `read took ${Math.round(took)} ms; event loop held for ${Math.round(longest)} ms`;
    if (database.dialect === 'sqlite') {
      // Meaningful only when the read itself took long enough to show a stall (on the server's connection,
      // the whole read is one).
      expect(took).toBeGreaterThan(150);
      expect(longest, message).toBeLessThan(Math.min(100, took / 2));
    } else {
      // PostgreSQL answers over a socket, however long it works: the read may be quick.
      expect(longest, message).toBeLessThan(100);
    }
  });
});
