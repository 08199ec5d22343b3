import { type Kysely, type RawBuilder, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { permissionsOf } from '../../src/auth/roles.js';
import { SKIP_FROM } from '../../src/events/deep-page-skip.js';
import { type EventReader, mayRead, type ReadFacts } from '../../src/events/event-data.js';
import { type EventQuery, EventStore, TOTAL_LOOKAHEAD } from '../../src/events/event-store.js';
import { compactMinuteRollups } from '../../src/events/rollup-compaction.js';
import type { Database } from '../../src/storage/database.js';
import type { Tables } from '../../src/storage/tables.js';
import { planOf } from '../helpers/query-plan.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/**
 * Deep pages of `GET /api/v1/events` start at the roll-ups' bucket where their offset lands
 * (src/events/deep-page-skip.ts). Every page here is compared with the one a plain OFFSET query on the test's
 * own connection reads: events over six hours (two per timestamp, and on the edges of minutes and hours),
 * hours compacted whole and in part, events expired but stored, confidential events of two emitters, an
 * admin and a user reading, deletions between the reads.
 */
const HOUR = 3_600_000;
const EVENTS = 24_000;
const SPAN_HOURS = 6;
/** 51 hours before this hour: with 48 hours of minutes kept, the first three hours are compacted. */
const START = Math.floor(Date.now() / HOUR) * HOUR - 51 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();

/** A small seeded generator (Park–Miller, exact in doubles): the same combinations on every run. */
function random(seed: number) {
  let s = seed;
  return (n: number) => {
    s = (s * 48_271) % 2_147_483_647;
    return s % n;
  };
}

interface Row {
  event_id: string;
  sequence: number;
  event_type: string;
  source: string;
  timestamp: string;
  priority: number;
  status: string;
  security_level: string;
  emitter_id: string | null;
  expires_at: string | null;
  data: string;
  metadata: string;
  correlation_id: string;
  emitted_by: string;
  durable_subscribers: number;
}

const row = (i: number, timestamp: string, reader: string): Row => ({
  event_id: `evt_deep_${i}`,
  sequence: -i,
  event_type: `deep${i % 3}.kind${i % 4}`,
  source: `s${i % 5}`,
  timestamp,
  priority: 1 + (i % 10),
  status: 'processed',
  security_level: i % 7 === 0 ? 'confidential' : 'internal',
  emitter_id: i % 7 === 0 ? (i % 2 === 0 ? reader : 'usr_other') : null,
  // Past expiry (stored until a purge deletes them) or far ahead.
  expires_at: i % 53 === 0 ? '2026-01-01T00:00:00.000Z' : i % 3 === 0 ? '2099-01-01T00:00:00.000Z' : null,
  data: '{}',
  metadata: JSON.stringify({
    correlation_id: `corr-${i}`,
    request_id: `req_${i}`,
    user_agent: 'deep',
    ip_address: '127.0.0.1',
  }),
  correlation_id: `corr-${i}`,
  emitted_by: `s${i % 5}`,
  durable_subscribers: 0,
});

async function insert(db: Kysely<Tables>, rows: Row[]) {
  for (let i = 0; i < rows.length; i += 500) {
    await db
      .insertInto('events')
      .values(rows.slice(i, i + 500) as never)
      .execute();
  }
}

describe('deep pages skipped to by the roll-ups', { timeout: 300_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let user: { id: string; access: string };
  let database: Database;
  let next = 1;

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    user = await t.createUser('deep-reader');
    database = t.platform.context.database;
    const rows: Row[] = [];
    // Two events per timestamp, 1.8 s apart: six hours.
    const step = (SPAN_HOURS * HOUR) / (EVENTS / 2);
    for (; next <= EVENTS; next++)
      rows.push(row(next, iso(START + Math.floor((next - 1) / 2) * step), user.id));
    // On the edges: the first and last millisecond of every hour and of some minutes.
    for (let h = 0; h <= SPAN_HOURS; h++) {
      for (const at of [
        h * HOUR,
        h * HOUR - 1,
        h * HOUR + 60_000,
        h * HOUR + 60_000 - 1,
        h * HOUR + 1_800_000,
      ]) {
        rows.push(row(next++, iso(START + at), user.id));
      }
    }
    await insert(database.db, rows);
  });
  afterAll(async () => {
    await t?.close();
  });

  type Filter = { query: string; where: () => RawBuilder<unknown> };
  const FILTERS: Filter[] = [
    { query: '', where: () => sql`1 = 1` },
    { query: '&event_type=deep1.kind2', where: () => sql`event_type = 'deep1.kind2'` },
    { query: '&event_type=deep1.**', where: () => sql`event_type like 'deep1.%'` },
    { query: '&event_type=**', where: () => sql`1 = 1` },
    { query: '&source=s3', where: () => sql`source = 's3'` },
    {
      query: '&event_type=deep2.**&source=s1',
      where: () => sql`event_type like 'deep2.%' and source = 's1'`,
    },
  ];

  /**
   * The list's matches in its order, read on the test's connection, and those the reader may read (the rule's
   * own function: what is under test is the skip, not the rule).
   */
  async function expected(filter: Filter, reader: EventReader, order: 'asc' | 'desc') {
    const now = new Date().toISOString();
    const dir = sql.raw(order);
    const { rows } = await sql<ReadFacts & { event_id: string }>`
      select event_id, event_type, source, security_level, emitter_id from events
      where (expires_at is null or expires_at > ${now}) and ${filter.where()}
      order by timestamp ${dir}, sequence ${dir}`.execute(database.db);
    return rows.filter((r) => mayRead(r, reader)).map((r) => r.event_id);
  }

  /** `count` random deep pages, each equal to the plain page and with the plain `total`. */
  async function comparePages(seed: number, count: number) {
    const pick = random(seed);
    const readers = {
      admin: { token: admin, reader: { userId: 'admin', isAdmin: true, permissions: ['*'] } },
      user: {
        token: user.access,
        reader: { userId: user.id, isAdmin: false, permissions: permissionsOf(['user']) },
      },
    };
    let skipped = 0;
    for (let n = 0; n < count; n++) {
      const filter = FILTERS[pick(FILTERS.length)]!;
      const as = pick(2) === 0 ? readers.user : readers.admin;
      const order = pick(2) === 0 ? 'asc' : 'desc';
      const perPage = [1, 13, 50, 100][pick(4)]!;
      const before = await expected(filter, as.reader, order);
      // Mostly deep pages, some past the end.
      const offset = SKIP_FROM + pick(before.length - SKIP_FROM + 300);
      const page = Math.floor(offset / perPage) + 1;
      const from = (page - 1) * perPage;
      const url = `/api/v1/events?per_page=${perPage}&page=${page}&order=${order}${filter.query}`;
      const label = `${url} as ${as === readers.user ? 'user' : 'admin'}`;
      // The platform's own events (a task's, a login's) may land between the reads: read again until the
      // reference stood still around the request.
      let all: string[] = before;
      let res: Awaited<ReturnType<TestPlatform['request']>> | undefined;
      for (let attempt = 0; attempt < 5; attempt++) {
        const prior = attempt === 0 ? before : await expected(filter, as.reader, order);
        res = await t.request('GET', url, { token: as.token });
        all = await expected(filter, as.reader, order);
        if (all.length === prior.length && all.every((id, i) => id === prior[i])) break;
      }
      expect(res!.statusCode, label).toBe(200);
      const ids = res!.data.data.events.map((e: { event_id: string }) => e.event_id);
      expect(ids, label).toEqual(all.slice(from, from + perPage));
      const countLimit = from + perPage + TOTAL_LOOKAHEAD;
      expect(res!.data.data.pagination.total, label).toBe(Math.min(all.length, countLimit));
      if (from >= SKIP_FROM) skipped++;
    }
    expect(skipped).toBeGreaterThan(count / 2);
  }

  it('reads the plain page at every depth, filter, order and reader', async () => {
    await comparePages(1, 40);
  });

  it('after compacted hours, a partly compacted hour and writes into a compacted hour', async () => {
    const now = Date.now();
    // The first run sets the mark, the second deletes below it.
    await compactMinuteRollups(database, 48, now);
    await compactMinuteRollups(database, 48, now);
    const minutes = await database.db
      .selectFrom('event_rollups')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('span', '=', 'm')
      .where('bucket', '<', iso(START + 3 * HOUR).slice(0, 13))
      .executeTakeFirst();
    expect(Number(minutes?.n)).toBe(0);
    // A compaction interrupted between its batches: part of an hour's minutes gone.
    const hour3 = iso(START + 3 * HOUR).slice(0, 13);
    await database.db
      .deleteFrom('event_rollups')
      .where('span', '=', 'm')
      .where('bucket', '>=', `${hour3}:00`)
      .where('bucket', '<=', `${hour3}:20`)
      .execute();
    // Late events in a compacted hour: their minutes are rows again, the hour's others are not.
    const late: Row[] = [];
    for (let k = 0; k < 40; k++) late.push(row(next++, iso(START + HOUR + 7 * 60_000 + k * 1000), user.id));
    await insert(database.db, late);
    await comparePages(2, 40);
  });

  it('after deletions between the reads', async () => {
    // A purge of a span (as retention deletes) and of single events across the hours.
    await database.db
      .deleteFrom('events')
      .where('timestamp', '>=', iso(START + 2 * HOUR + 600_000))
      .where('timestamp', '<', iso(START + 2 * HOUR + 1_500_000))
      .execute();
    await database.db.deleteFrom('events').where(sql`abs(sequence) % 11`, '=', 0).execute();
    await comparePages(3, 40);
  });

  it('reads a deep page from its bucket on, and a shallow one as before', async () => {
    const store = new EventStore(database.db, database.reads, database.dialect);
    const query = (page: number): EventQuery => ({
      sort: 'timestamp',
      order: 'desc',
      page,
      perPage: 100,
      now: new Date().toISOString(),
      reader: { userId: user.id, isAdmin: false, permissions: [] },
      eventType: 'deep1.**',
    });
    const deep = (await store.listQueries(query(Math.ceil(SKIP_FROM / 100) + 30)))!;
    const shallow = (await store.listQueries(query(2)))!;
    const planned = await planOf(database, deep.rows.compile());
    expect(deep.rows.compile().sql).toContain('skip_target');
    expect(deep.count.compile().sql).toContain('skip_target');
    expect(shallow.rows.compile().sql).not.toContain('skip_target');
    // Each arm of the merged page starts at the bucket (a range of its index), not at the list's start.
    const ranged = planned.filter((line) =>
      database.dialect === 'sqlite'
        ? /SEARCH events USING (COVERING )?INDEX events_list_type \(event_type=\? AND timestamp<\?\)/.test(
            line,
          )
        : /Index Cond: .*"timestamp" < /.test(line),
    );
    expect(ranged.length, planned.join('\n')).toBeGreaterThanOrEqual(3);
  });
});

/**
 * A pattern of many types is read by merging one arm per type (`mergedPage`), each arm starting at the walk's
 * bucket. SQLite 3.54 (better-sqlite3 13, Node 22 and later) refused such a page of 10 arms or more when each
 * arm read the bucket by a subquery ("VIEWs and/or subqueries nested too deep"), and the page was read with
 * OFFSET from 8 types on. Here patterns of 12 and 64 types (MERGED_TYPES_MAX) at deep pages: every arm starts
 * at the bucket, and rows and `total` are those of a plain OFFSET query.
 */
describe('deep pages of a pattern of many types', { timeout: 300_000 }, () => {
  let t: TestPlatform;
  let database: Database;
  let admin: string;
  let user: { id: string; access: string };
  const WIDE = { pattern: 'wide.*', types: 64, events: 16_000 };
  const NARROW = { pattern: 'narrow.*', types: 12, events: 8_000 };

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    user = await t.createUser('wide-reader');
    database = t.platform.context.database;
    const rows: Row[] = [];
    const all = WIDE.events + NARROW.events;
    const step = (SPAN_HOURS * HOUR) / all;
    for (let k = 1; k <= all; k++) {
      // The two patterns' events interleaved; one source, so that the hour roll-ups stay fewer than the offset.
      const wide = k % 3 !== 0;
      const n = wide ? k : Math.floor(k / 3);
      rows.push({
        ...row(k, iso(START + Math.floor(k * step)), user.id),
        event_type: wide
          ? `wide.t${String(n % WIDE.types).padStart(2, '0')}`
          : `narrow.t${String(n % NARROW.types).padStart(2, '0')}`,
        source: 'one',
      });
    }
    await insert(database.db, rows);
  });
  afterAll(async () => {
    await t?.close();
  });

  /** The pattern's events the reader may read, in the list's order, by a plain query. */
  async function plain(pattern: string, reader: EventReader, order: 'asc' | 'desc') {
    const dir = sql.raw(order);
    const { rows } = await sql<ReadFacts & { event_id: string }>`
      select event_id, event_type, source, security_level, emitter_id from events
      where (expires_at is null or expires_at > ${new Date().toISOString()})
        and event_type like ${`${pattern.slice(0, -1)}%`}
      order by timestamp ${dir}, sequence ${dir}`.execute(database.db);
    return rows.filter((r) => mayRead(r, reader)).map((r) => r.event_id);
  }

  for (const wide of [NARROW, WIDE]) {
    it(`reads the deep pages of a pattern of ${wide.types} types from the bucket on, as the plain query`, async () => {
      const store = new EventStore(database.db, database.reads, database.dialect);
      const readers = [
        { token: admin, reader: { userId: 'admin', isAdmin: true, permissions: ['*'] } },
        {
          token: user.access,
          reader: { userId: user.id, isAdmin: false, permissions: permissionsOf(['user']) },
        },
      ];
      for (const as of readers) {
        for (const order of ['asc', 'desc'] as const) {
          const all = await plain(wide.pattern, as.reader, order);
          // From the first skipped page to past the list's end.
          for (const [offset, perPage] of [
            [SKIP_FROM, 100],
            [all.length - 1_000, 13],
            [all.length - 50, 100],
            [all.length + 500, 100],
          ] as const) {
            const page = Math.floor(offset / perPage) + 1;
            const from = (page - 1) * perPage;
            const label = `${wide.pattern} page ${page} of ${perPage} ${order} as ${as.reader.userId}`;
            const statements = (await store.listQueries({
              sort: 'timestamp',
              order,
              page,
              perPage,
              now: new Date().toISOString(),
              reader: as.reader,
              eventType: wide.pattern,
            }))!;
            // Every arm starts at the walk's bucket: a range of its type's index (on PostgreSQL, whose plan
            // names each type, one or two ranges of it: it may read the index once per case of the expiry).
            expect(statements.skippedArms, label).toBe(wide.types);
            const plan = await planOf(database, statements.rows.compile());
            const ranged =
              database.dialect === 'sqlite'
                ? plan.filter((line) =>
                    /SEARCH events USING (COVERING )?INDEX events_list_type \(event_type=\? AND timestamp[<>]\?\)/.test(
                      line,
                    ),
                  ).length
                : new Set(
                    plan
                      .filter((line) => /Index Cond: .*"timestamp" [<>]/.test(line))
                      .map((line) => /event_type = '([^']+)'/.exec(line)?.[1]),
                  ).size;
            expect(ranged, `${label}\n${plan.join('\n')}`).toBe(wide.types);
            const res = await t.request(
              'GET',
              `/api/v1/events?event_type=${wide.pattern}&per_page=${perPage}&page=${page}&order=${order}`,
              { token: as.token },
            );
            expect(res.statusCode, label).toBe(200);
            const ids = res.data.data.events.map((e: { event_id: string }) => e.event_id);
            expect(ids, label).toEqual(all.slice(from, from + perPage));
            expect(res.data.data.pagination.total, label).toBe(
              Math.min(all.length, from + perPage + TOTAL_LOOKAHEAD),
            );
          }
        }
      }
    });
  }
});

describe('deep pages of a store with more hour roll-ups than the offset', { timeout: 120_000 }, () => {
  let t: TestPlatform;
  let database: Database;

  beforeAll(async () => {
    t = await startPlatform();
    database = t.platform.context.database;
    const reader = 'usr_nobody';
    // One event per source: as many hour roll-ups as events, more than a page at SKIP_FROM would skip.
    const rows = Array.from({ length: SKIP_FROM + 500 }, (_, k) => ({
      ...row(k + 1, iso(START + k * 10), reader),
      source: `many${k}`,
    }));
    await insert(database.db, rows);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('skip by OFFSET: the walk would read more roll-ups than the entries it saves', async () => {
    const store = new EventStore(database.db, database.reads, database.dialect);
    const statements = (await store.listQueries({
      sort: 'timestamp',
      order: 'asc',
      page: SKIP_FROM / 100 + 1,
      perPage: 100,
      now: new Date().toISOString(),
      reader: { userId: 'usr_nobody', isAdmin: true, permissions: ['*'] },
    }))!;
    expect(statements.rows.compile().sql).not.toContain('skip_target');
    const res = await t.request('GET', `/api/v1/events?per_page=100&page=${SKIP_FROM / 100 + 1}&order=asc`, {
      token: await t.adminToken(),
    });
    const { rows } = await sql<{ event_id: string }>`select event_id from events
      where expires_at is null or expires_at > ${new Date().toISOString()}
      order by timestamp, sequence limit 100 offset ${SKIP_FROM}`.execute(database.db);
    expect(res.data.data.events.map((e: { event_id: string }) => e.event_id)).toEqual(
      rows.map((r) => r.event_id),
    );
  });
});
