import { type Kysely, PostgresAdapter, sql } from 'kysely';

/**
 * Event roll-ups: the figures of `GET /api/v1/events/stats` and `/events/health` without a scan of the events.
 * One row per (span, bucket, event_type, source, security_level, emitter_key): how many stored events and the
 * sum of their processing times. `span` is `m` (the bucket is the minute, `2026-05-01T12:34`) or `h` (the hour,
 * `2026-05-01T12`); `emitter_key` is the emitter of a confidential event (whose readers depend on it), '' for
 * every other level.
 *
 * Triggers on `events` keep them in the same transaction as every write: the event writer's batches add, every
 * deletion (purge, retention, a restore replacing the table) subtracts and drops the rows that reach zero, and
 * a change of a counted column moves the event. PostgreSQL: one statement-level trigger per batch (the rows of
 * the statement grouped, applied in key order so concurrent writers never deadlock on them); SQLite: row
 * triggers. Existing events are counted here.
 *
 * `event_purge_progress` holds how many events each purge has deleted, updated in the transaction of each
 * deleted batch, so a purge resumed after its instance died reports exactly what was deleted.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('event_rollups')
    .addColumn('span', 'text', (c) => c.notNull())
    .addColumn('bucket', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('security_level', 'text', (c) => c.notNull())
    .addColumn('emitter_key', 'text', (c) => c.notNull())
    .addColumn('event_count', 'bigint', (c) => c.notNull())
    .addColumn('processing_ms', 'double precision', (c) => c.notNull())
    .addPrimaryKeyConstraint('event_rollups_pk', [
      'span',
      'bucket',
      'event_type',
      'source',
      'security_level',
      'emitter_key',
    ])
    .execute();
  await db.schema
    .createTable('event_purge_progress')
    .addColumn('purge_id', 'text', (c) => c.primaryKey())
    .addColumn('events_purged', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await sql`
    insert into event_rollups
      (span, bucket, event_type, source, security_level, emitter_key, event_count, processing_ms)
    select s.span, substr(e.timestamp, 1, s.width), e.event_type, e.source, e.security_level,
      case when e.security_level = 'confidential' then coalesce(e.emitter_id, '') else '' end,
      count(*), sum(cast(e.processing_time_ms as double precision))
    from events e cross join (select 'm' as span, 16 as width union all select 'h', 13) s
    group by s.span, substr(e.timestamp, 1, s.width), e.event_type, e.source, e.security_level,
      case when e.security_level = 'confidential' then coalesce(e.emitter_id, '') else '' end
  `.execute(db);

  await rollupTriggers(db);
}

/** This migration's triggers on `events` (also what 0033's `down` puts back). */
export async function rollupTriggers(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) await postgresTriggers(db);
  else await sqliteTriggers(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    for (const t of ['event_rollups_insert', 'event_rollups_delete', 'event_rollups_update']) {
      await sql`drop trigger if exists ${sql.raw(t)} on events`.execute(db);
    }
    await sql`drop function if exists event_rollups_apply()`.execute(db);
    await sql`drop function if exists event_rollups_move()`.execute(db);
  } else {
    for (const t of ['event_rollups_insert', 'event_rollups_delete', 'event_rollups_update']) {
      await sql`drop trigger if exists ${sql.raw(t)}`.execute(db);
    }
  }
  await db.schema.dropTable('event_purge_progress').execute();
  await db.schema.dropTable('event_rollups').execute();
}

const KEY = 'span, bucket, event_type, source, security_level, emitter_key';
const COLUMNS = `${KEY}, event_count, processing_ms`;

/** `rows` (a transition table or OLD/NEW) as roll-up deltas of sign `sign`, grouped and in key order. */
const pgDeltas = (rows: string, sign: '' | '-') => `
  select s.span, substr(r.timestamp, 1, s.width) as bucket, r.event_type, r.source, r.security_level,
    case when r.security_level = 'confidential' then coalesce(r.emitter_id, '') else '' end as emitter_key,
    ${sign}count(*) as event_count, ${sign}sum(r.processing_time_ms::double precision) as processing_ms
  from ${rows} r cross join (values ('m', 16), ('h', 13)) as s(span, width)
  group by 1, 2, 3, 4, 5, 6 order by 1, 2, 3, 4, 5, 6`;

const PG_UPSERT = `insert into event_rollups (${COLUMNS}) %DELTAS%
  on conflict (${KEY}) do update set
    event_count = event_rollups.event_count + excluded.event_count,
    processing_ms = event_rollups.processing_ms + excluded.processing_ms`;

// Rows the deletion brought to zero go (they are locked by the upsert just before: no other order of locks).
const PG_DROP_EMPTY = (rows: string) => `delete from event_rollups g using (
    select distinct s.span, substr(r.timestamp, 1, s.width) as bucket, r.event_type, r.source, r.security_level,
      case when r.security_level = 'confidential' then coalesce(r.emitter_id, '') else '' end as emitter_key
    from ${rows} r cross join (values ('m', 16), ('h', 13)) as s(span, width)) k
  where g.span = k.span and g.bucket = k.bucket and g.event_type = k.event_type and g.source = k.source
    and g.security_level = k.security_level and g.emitter_key = k.emitter_key and g.event_count <= 0`;

async function postgresTriggers(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(`create or replace function event_rollups_apply() returns trigger language plpgsql as $$
begin
  if tg_op = 'INSERT' then
    ${PG_UPSERT.replace('%DELTAS%', pgDeltas('new_rows', ''))};
  else
    ${PG_UPSERT.replace('%DELTAS%', pgDeltas('old_rows', '-'))};
    ${PG_DROP_EMPTY('old_rows')};
  end if;
  return null;
end $$`)
    .execute(db);
  // A change of a counted column (rare: the writer never updates them) moves one event, row by row.
  await sql
    .raw(`create or replace function event_rollups_move() returns trigger language plpgsql as $$
begin
  ${PG_UPSERT.replace('%DELTAS%', pgDeltas('(select old.*) ', '-'))};
  ${PG_DROP_EMPTY('(select old.*)')};
  ${PG_UPSERT.replace('%DELTAS%', pgDeltas('(select new.*) ', ''))};
  return null;
end $$`)
    .execute(db);
  await sql
    .raw(`create trigger event_rollups_insert after insert on events
      referencing new table as new_rows for each statement execute function event_rollups_apply()`)
    .execute(db);
  await sql
    .raw(`create trigger event_rollups_delete after delete on events
      referencing old table as old_rows for each statement execute function event_rollups_apply()`)
    .execute(db);
  await sql
    .raw(`create trigger event_rollups_update
      after update of timestamp, event_type, source, security_level, emitter_id, processing_time_ms on events
      for each row when (old.timestamp is distinct from new.timestamp
        or old.event_type is distinct from new.event_type or old.source is distinct from new.source
        or old.security_level is distinct from new.security_level
        or old.emitter_id is distinct from new.emitter_id
        or old.processing_time_ms is distinct from new.processing_time_ms)
      execute function event_rollups_move()`)
    .execute(db);
}

/** SQLite: the upsert of one row (`r` is NEW or OLD) into both spans. */
const sqliteUpsert = (r: 'new' | 'old', sign: '' | '-') => {
  const emitter = `case when ${r}.security_level = 'confidential' then coalesce(${r}.emitter_id, '') else '' end`;
  const values = (span: string, width: number) =>
    `('${span}', substr(${r}.timestamp, 1, ${width}), ${r}.event_type, ${r}.source, ${r}.security_level, ` +
    `${emitter}, ${sign}1, ${sign}${r}.processing_time_ms)`;
  return (
    `insert into event_rollups (${COLUMNS}) values ${values('m', 16)}, ${values('h', 13)} ` +
    `on conflict (${KEY}) do update set event_count = event_count + excluded.event_count, ` +
    'processing_ms = processing_ms + excluded.processing_ms;'
  );
};

const sqliteDropEmpty = (r: 'old') =>
  `delete from event_rollups where span in ('m', 'h') and bucket in (substr(${r}.timestamp, 1, 16), ` +
  `substr(${r}.timestamp, 1, 13)) and event_type = ${r}.event_type and source = ${r}.source and ` +
  `security_level = ${r}.security_level and emitter_key = case when ${r}.security_level = 'confidential' ` +
  `then coalesce(${r}.emitter_id, '') else '' end and event_count <= 0;`;

async function sqliteTriggers(db: Kysely<unknown>): Promise<void> {
  await sql
    .raw(`create trigger event_rollups_insert after insert on events begin ${sqliteUpsert('new', '')} end`)
    .execute(db);
  await sql
    .raw(
      `create trigger event_rollups_delete after delete on events begin ` +
        `${sqliteUpsert('old', '-')} ${sqliteDropEmpty('old')} end`,
    )
    .execute(db);
  await sql
    .raw(
      `create trigger event_rollups_update after update of timestamp, event_type, source, security_level, ` +
        `emitter_id, processing_time_ms on events when old.timestamp is not new.timestamp ` +
        `or old.event_type is not new.event_type or old.source is not new.source ` +
        `or old.security_level is not new.security_level or old.emitter_id is not new.emitter_id ` +
        `or old.processing_time_ms is not new.processing_time_ms begin ` +
        `${sqliteUpsert('old', '-')} ${sqliteDropEmpty('old')} ${sqliteUpsert('new', '')} end`,
    )
    .execute(db);
}
