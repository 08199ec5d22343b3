import type { Kysely } from 'kysely';
import type { PlatformConfig } from '../config/config-schema.js';
import { bulkWrites } from '../storage/bulk-writes.js';
import type { Database } from '../storage/database.js';
import { retryOnConflict } from '../storage/retry-on-conflict.js';
import type { Tables } from '../storage/tables.js';
import type { JobRun, Scheduler } from '../tasks/scheduler.js';

export const ROLLUP_COMPACTION = 'event_rollup_compaction';
const HOUR_MS = 3_600_000;
/** The one row of `event_rollup_compaction` (migration 0030). */
const MARK = 'minutes';
/**
 * Minute rows deleted per transaction. On a SQLite file each runs on the bulk writer's thread (`BulkWrites.batch`),
 * not the server's, while the server's connection waits: 500 rows by the primary key take a few milliseconds.
 * PostgreSQL runs them off the thread, so fewer round trips.
 */
const BATCH = { sqlite: 500, postgres: 5000 } as const;

/**
 * The hour (`YYYY-MM-DDTHH`) from which every minute roll-up is kept; `undefined` while none was ever compacted
 * (every minute is kept). Older minute rows may exist (events written or restored with old timestamps) but are
 * incomplete: readers take those hours from the hour rows.
 */
export async function minutesKeptFrom(db: Kysely<Tables>): Promise<string | undefined> {
  const row = await db
    .selectFrom('event_rollup_compaction')
    .select('minutes_from')
    .where('name', '=', MARK)
    .executeTakeFirst();
  return row?.minutes_from;
}

export interface CompactionRun {
  /** Minute rows deleted by this run. */
  deleted: number;
  /** The mark after this run: minutes from this hour on are kept. */
  minutesFrom: string;
}

/**
 * One run of the compaction of the minute roll-ups. The hour rows are written by the same triggers, in the same
 * transactions, as the minute rows, so they already hold every minute's counts: folding a minute into its hour
 * is deleting it. The run moves the mark (`minutesKeptFrom`) forward to the hour `hours` before `now`, then
 * deletes the minute rows below the mark an earlier run wrote — never below its own — so a stats request that
 * read the mark before it moved finds every minute it counts on (the schedule's interval is the grace). The
 * deletes go in transactions of at most `BATCH` rows, in key order, with a turn of the event loop between them;
 * on a SQLite file on the bulk writer's thread (a store restored or loaded with days of minutes has hundreds of
 * thousands to delete at the first run).
 * Several instances may run it at once: the mark only moves forward and a deletion of deleted rows does nothing.
 */
export async function compactMinuteRollups(
  database: Pick<Database, 'db' | 'dialect' | 'unsyncedTransaction' | 'syncWal' | 'bulkBatch'>,
  hours: number,
  now: number,
  signal?: AbortSignal,
): Promise<CompactionRun> {
  const { db } = database;
  const before = await minutesKeptFrom(db);
  const target = new Date(Math.floor((now - hours * HOUR_MS) / HOUR_MS) * HOUR_MS).toISOString().slice(0, 13);
  const at = new Date(now).toISOString();
  await db
    .insertInto('event_rollup_compaction')
    .values({ name: MARK, minutes_from: target, updated_at: at })
    .onConflict((oc) =>
      oc
        .column('name')
        .doUpdateSet({ minutes_from: target, updated_at: at })
        .where('event_rollup_compaction.minutes_from', '<', target),
    )
    .execute();
  if (before === undefined) return { deleted: 0, minutesFrom: target };
  // Deleted minutes are only work done again if a crash takes them: SQLite need not sync each batch.
  const writes = bulkWrites(database);
  const limit = BATCH[database.dialect];
  let deleted = 0;
  for (;;) {
    if (signal?.aborted) break;
    const n = await retryOnConflict(async () => {
      const [result] = await writes.batch([deleteMinutes(db, before, limit)]);
      return Number(result?.numAffectedRows ?? 0);
    });
    deleted += n;
    if (n < limit) break;
    await new Promise((resolve) => setImmediate(resolve));
  }
  await writes.sync();
  return { deleted, minutesFrom: (await minutesKeptFrom(db)) ?? target };
}

/** The deletion of up to `limit` minute rows of hours before `hour`, the first in key order. */
function deleteMinutes(db: Kysely<Tables>, hour: string, limit: number) {
  return db
    .deleteFrom('event_rollups')
    .where('span', '=', 'm')
    .where((eb) =>
      eb(
        eb.refTuple('bucket', 'key_id'),
        'in',
        eb
          .selectFrom('event_rollups')
          .select(['bucket', 'key_id'])
          .where('span', '=', 'm')
          .where('bucket', '<', hour)
          .orderBy('bucket')
          .orderBy('key_id')
          .limit(limit)
          .$asTuple('bucket', 'key_id'),
      ),
    );
}

/**
 * The recurring compaction (`events.rollup_compaction_schedule`, bound `events.rollup_minute_retention_hours`
 * read at each run); in a cluster one instance runs each occurrence. An expression the scheduler refuses is
 * reported (the platform starts without the job).
 */
export function scheduleRollupCompaction(deps: {
  scheduler: Scheduler;
  database: Pick<Database, 'db' | 'dialect' | 'unsyncedTransaction' | 'syncWal' | 'bulkBatch'>;
  cfg: () => PlatformConfig;
  reportError: (err: unknown) => void;
}): void {
  const run = async ({ signal }: JobRun) => {
    await compactMinuteRollups(
      deps.database,
      deps.cfg().events.rollup_minute_retention_hours,
      Date.now(),
      signal,
    );
  };
  try {
    deps.scheduler.schedule(ROLLUP_COMPACTION, deps.cfg().events.rollup_compaction_schedule, run, {
      description: 'Folds minute roll-ups older than events.rollup_minute_retention_hours into the hours',
    });
  } catch (err) {
    deps.reportError(err);
  }
}
