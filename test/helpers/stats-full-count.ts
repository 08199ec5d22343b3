import type { Kysely } from 'kysely';
import { expect } from 'vitest';
import { permissionsOf } from '../../src/auth/roles.js';
import { mayRead } from '../../src/events/event-data.js';
import type { Tables } from '../../src/storage/tables.js';
import { eventually } from './eventually.js';
import type { TestPlatform } from './test-platform.js';

export interface StoredRow {
  timestamp: string;
  event_type: string;
  source: string;
  security_level: string;
  emitter_id: string | null;
  processing_time_ms: number;
}

/** Who reads the stats, as `mayRead` takes it. */
export interface StatsReaderInfo {
  userId: string;
  isAdmin: boolean;
  permissions: readonly string[];
}

const round3 = (n: number) => Math.round(n * 1000) / 1000;

/** Every stored event, with what the stats count of it. */
export async function storedEvents(db: Kysely<Tables>): Promise<StoredRow[]> {
  return (
    await db
      .selectFrom('events')
      .select(['timestamp', 'event_type', 'source', 'security_level', 'emitter_id', 'processing_time_ms'])
      .execute()
  ).map((r) => ({ ...r, processing_time_ms: Number(r.processing_time_ms) }));
}

/**
 * What a full count of the stored events gives for a range and a reader, shaped like the figures of
 * `GET /api/v1/events/stats` (counts exact; mean processing times to the rounding of the answer).
 */
export function fullCount(
  rows: readonly StoredRow[],
  range: { start: string; end: string },
  bucket: 'hour' | 'day',
  reader: StatsReaderInfo,
) {
  const picked = rows.filter(
    (r) =>
      Date.parse(r.timestamp) >= Date.parse(range.start) &&
      Date.parse(r.timestamp) <= Date.parse(range.end) &&
      // Who may read which event is proven by test/events/event-rights-attacks.test.ts; here the same rule.
      mayRead(r, reader),
  );
  const group = (key: (r: StoredRow) => string) => {
    const m = new Map<string, { n: number; ms: number }>();
    for (const r of picked) {
      const g = m.get(key(r)) ?? { n: 0, ms: 0 };
      g.n += 1;
      g.ms += r.processing_time_ms;
      m.set(key(r), g);
    }
    return m;
  };
  const sorted = (m: Map<string, { n: number; ms: number }>) =>
    [...m].sort(([a, x], [b, y]) => y.n - x.n || (a < b ? -1 : 1));
  const ms = picked.reduce((s, r) => s + r.processing_time_ms, 0);
  const width = bucket === 'hour' ? 13 : 10;
  return {
    total: picked.length,
    avg: picked.length === 0 ? 0 : round3(ms / picked.length),
    types: sorted(group((r) => r.event_type)).map(([k, v]) => [k, v.n, round3(v.ms / v.n)] as const),
    sources: sorted(group((r) => r.source)).map(([k, v]) => [k, v.n] as const),
    timeline: [...group((r) => r.timestamp.slice(0, width))]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => [k, v.n] as const),
  };
}

/**
 * Where a stats answer (`data` of `GET /api/v1/events/stats` asked with `query`) and a full count of `rows` over
 * the answer's own `time_range` disagree, for this reader (empty: they agree).
 */
export function statsDisagreement(
  s: any,
  rows: readonly StoredRow[],
  reader: StatsReaderInfo,
  query: string,
  bucket: 'hour' | 'day',
): string[] {
  const expected = fullCount(rows, s.time_range, bucket, reader);
  const close = (a: number, b: number) => Math.abs(a - b) <= 0.002;
  const got = {
    total: s.summary.total_events,
    types: s.by_event_type.map((r: any) => [r.event_type, r.count]),
    sources: s.by_source.map((r: any) => [r.source, r.count]),
    timeline: s.timeline.map((r: any) => [r.timestamp.slice(0, bucket === 'hour' ? 13 : 10), r.event_count]),
    unique: s.summary.unique_event_types,
  };
  const want = {
    total: expected.total,
    types: expected.types.map(([k, n]) => [k, n]),
    sources: expected.sources.map(([k, n]) => [k, n]),
    timeline: expected.timeline.map(([k, n]) => [k, n]),
    unique: expected.types.length,
  };
  const problems: string[] = [];
  if (JSON.stringify(got) !== JSON.stringify(want))
    problems.push(`${query}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
  if (!close(s.summary.average_processing_time_ms, expected.avg)) problems.push(`${query}: average`);
  for (const [i, r] of s.by_event_type.entries()) {
    if (!close(r.avg_processing_time_ms, expected.types[i]?.[2] ?? -1)) problems.push(`${query}: avg ${i}`);
  }
  return problems;
}

export type StatsReader = StatsReaderInfo & { token: string };

/** The admin and a new moderator (`moderator1`), as readers of the stats. */
export async function adminAndModerator(t: TestPlatform): Promise<[StatsReader, StatsReader]> {
  const token = await t.adminToken();
  const userId = (await t.request('GET', '/api/v1/auth/me', { token })).data.data.id as string;
  const moderator = await t.createUser('moderator1', ['moderator']);
  return [
    { token, userId, isAdmin: true, permissions: ['*'] },
    {
      token: moderator.access,
      userId: moderator.id,
      isAdmin: false,
      permissions: permissionsOf(['moderator']),
    },
  ];
}

/**
 * Emits an event through `POST /api/v1/events` and, given `at`, moves it back to that instant the way an event
 * stored long ago would be (the roll-ups' triggers follow the change). Resolves to its id.
 */
export async function emitAt(
  t: TestPlatform,
  token: string,
  body: Record<string, unknown>,
  at?: number,
): Promise<string> {
  const res = await t.request('POST', '/api/v1/events', { token, body });
  expect(res.statusCode, res.body).toBe(201);
  const id = res.data.data.event.event_id as string;
  if (at !== undefined) {
    await t.platform.context.database.db
      .updateTable('events')
      .set({ timestamp: new Date(at).toISOString() })
      .where('event_id', '=', id)
      .execute();
  }
  return id;
}

/**
 * A workload over types, sources and levels: for each entry of `places` (how far before `now`, 0: now), three
 * events of the admin's (two types, two sources) and a confidential one of `owner`'s.
 */
export async function emitStatsWorkload(
  t: TestPlatform,
  tokens: { admin: string; owner: string },
  places: readonly number[],
  now: number,
): Promise<void> {
  for (const [i, back] of places.entries()) {
    for (const [type, source] of [
      ['shop.order', 'web'],
      ['shop.order', 'app'],
      ['shop.refund', 'web'],
    ] as const) {
      await emitAt(
        t,
        tokens.admin,
        { event_type: type, source, data: { i } },
        back > 0 ? now - back - i * 777 : undefined,
      );
    }
    const secret = {
      event_type: 'alice.secret',
      source: 'diary',
      security_level: 'confidential',
      data: { i },
    };
    await emitAt(t, tokens.owner, secret, back > 0 ? now - back - 61_000 : undefined);
  }
}

type GroupBy = 'event_type' | 'source' | 'hour' | 'day';

/**
 * Asks `GET /api/v1/events/stats` of `t` for every range (a query string, '' for the defaults) and `group_by`,
 * as each reader, and expects every answer to equal a full count of the stored events over its `time_range`.
 * Platform events (logins, tasks) may land between an answer and the count: compared again until quiet.
 */
export async function expectStatsAgreement(
  t: TestPlatform,
  readers: readonly StatsReader[],
  ranges: () => readonly string[],
  groupBys: readonly GroupBy[] = ['event_type', 'source', 'hour', 'day'],
): Promise<void> {
  let problems: string[] = [];
  const agrees = async () => {
    problems = [];
    for (const reader of readers) {
      for (const range of ranges()) {
        for (const groupBy of groupBys) {
          const q = `${range}${range === '' ? '?' : '&'}group_by=${groupBy}`;
          const res = await t.request('GET', `/api/v1/events/stats${q}`, { token: reader.token });
          expect(res.statusCode, res.body).toBe(200);
          const rows = await storedEvents(t.platform.context.database.db);
          problems.push(
            ...statsDisagreement(res.data.data, rows, reader, q, groupBy === 'day' ? 'day' : 'hour'),
          );
        }
      }
    }
    return problems.length === 0;
  };
  const ok = await eventually(agrees, 10_000);
  expect(problems).toEqual([]);
  expect(ok).toBe(true);
}
