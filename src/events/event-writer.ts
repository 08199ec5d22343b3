import { performance } from 'node:perf_hooks';
import { CompiledQuery, type Kysely } from 'kysely';
import { extend } from '../kernel/extend.js';
import { newId } from '../kernel/new-id.js';
import type { Database, Dialect } from '../storage/database.js';
import { preparedSql, runSql } from '../storage/dialect-sql.js';
import { isForeignKeyViolation, isUniqueViolation } from '../storage/foreign-key-violation.js';
import {
  existingKeys,
  IdempotencyKeyTaken,
  type KeyToRecord,
  keyName,
  RECORDED_KEY_COLUMNS,
  recordedKeyRow,
} from '../storage/idempotency-store.js';
import { insertRows, sqliteInserts } from '../storage/insert-rows.js';
import type { IdempotencyKeysTable, Tables } from '../storage/tables.js';
import { type EventsTable, INSERT_COLUMNS } from './event-tables.js';
import { existingSubscriptionIds } from './subscription-store.js';

/** An event ready to be written, with the durable subscriptions it goes to. */
export interface EventDraft {
  row: Omit<EventsTable, 'sequence' | 'processing_time_ms'>;
  subscriptionIds: readonly string[];
  /** `performance.now()` when the emit began; the stored processing time runs from here to the write. */
  startedAt: number;
  /**
   * The Idempotency-Key the event is emitted under, claimed in the batch: its row (answered, owned by the event)
   * is written before the event, in the same transaction. A key already there fails the batch; the emit is then
   * refused with IdempotencyKeyTaken and the rest of the batch written again.
   */
  key?: KeyToRecord | undefined;
}

interface Pending {
  draft: EventDraft;
  resolve: (row: EventsTable) => void;
  reject: (err: unknown) => void;
}

const MAX_BATCH = 256;

/**
 * Writes events a batch at a time: the next sequence numbers, the events and their outbox rows (an event's
 * `event_emitted` audit entry is read from its row), all committed together. Emits that arrive while a batch
 * commits wait and go together in the next one (group commit), so numbers are taken once per batch rather
 * than once per event.
 *
 * Numbers come from the `event_sequence` row, updated by the batch itself and locked until it commits, so they
 * follow commit order without gaps with several writers and instances (a failed batch rolls its numbers back).
 * PostgreSQL: a batch is one statement, one round trip (PG_INSERT_BATCH). SQLite: one connection is the only
 * writer; a batch is one transaction.
 */
export class EventWriter {
  private queue: Pending[] = [];
  /** Drain loops running: each takes the next batch, writes it, hands it on, and again. */
  private lanes = 0;
  private starting = false;
  private closed = false;
  /**
   * Batches written at once. PostgreSQL: two, so the next batch is on its way while one commits (it waits for
   * the counter row's lock, then follows at once) and the server is not idle for a round trip per batch.
   * SQLite writes synchronously on one connection: one.
   */
  private readonly maxLanes: number;
  committedEvents = 0;
  committedBatches = 0;
  failedBatches = 0;
  totalCommitMs = 0;
  lastSequence = 0;

  constructor(
    private readonly db: Kysely<Tables>,
    private readonly dialect: Dialect,
    /**
     * Called after each commit, before the emitters' promises resolve. Batches written at once may come in
     * either order (consumers order events by sequence: the stream hub holds an early one until its gap fills).
     */
    private readonly afterCommit: (rows: EventsTable[], outboxRows: number) => Promise<void>,
    /**
     * SQLite on a file: where a batch's statements run (Database.durableBatch), on the writer thread, so that
     * its commit's wait for the disk does not hold the server's thread. Without it they run on `db`.
     */
    private readonly durableBatch?: Database['durableBatch'],
  ) {
    this.maxLanes = dialect === 'postgres' ? 2 : 1;
  }

  get queueSize(): number {
    return this.queue.length;
  }

  write(draft: EventDraft): Promise<EventsTable> {
    if (this.closed) return Promise.reject(new Error('the event writer is stopped'));
    return new Promise((resolve, reject) => {
      this.queue.push({ draft, resolve, reject });
      this.startLane();
    });
  }

  /**
   * Starts a drain loop when one may run. Also when one ends: a write queued by an emitter whose promise the
   * ending loop had just resolved (`await emit(); await emit()`) came while that loop still counted, and would
   * otherwise wait for some later write.
   */
  private startLane(): void {
    if (this.lanes >= this.maxLanes || this.starting) return;
    this.starting = true;
    // Started on the next tick so emits arriving in the same tick join the batch.
    setImmediate(() => {
      this.starting = false;
      if (this.queue.length === 0 || this.lanes >= this.maxLanes) return;
      this.lanes += 1;
      this.drain()
        .catch(() => {})
        .finally(() => {
          this.lanes -= 1;
          if (this.queue.length > 0) this.startLane();
        });
    });
  }

  /** Accepts writes again after `close()` (a service restart). */
  open(): void {
    this.closed = false;
  }

  /** Waits for queued emits to be written; later writes are refused. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.lanes > 0 || this.starting) await new Promise((r) => setTimeout(r, 5));
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH);
      let rows: EventsTable[];
      const started = performance.now();
      try {
        rows = await this.commit(batch);
      } catch (err) {
        this.failedBatches += 1;
        for (const p of batch) p.reject(err);
        continue;
      }
      // Every emit of the batch was refused for its key.
      if (rows.length === 0) continue;
      this.totalCommitMs += performance.now() - started;
      this.committedBatches += 1;
      this.committedEvents += rows.length;
      this.lastSequence = Math.max(this.lastSequence, rows[rows.length - 1]!.sequence);
      try {
        await this.afterCommit(
          rows,
          batch.reduce((n, p) => n + p.draft.subscriptionIds.length, 0),
        );
      } catch {
        // Already committed: the emits succeeded; a failed follow-up leaves those events `emitted`.
      } finally {
        for (const [i, row] of rows.entries()) batch[i]!.resolve(row);
      }
    }
  }

  /**
   * Writes a batch. A subscription an event matched may be deleted before the batch is written (its outbox rows
   * then break the foreign key, and the batch fails whole): those rows are dropped and the batch written again,
   * so the other emits of the batch are not refused for it. Likewise an emit whose Idempotency-Key is held
   * already (by an earlier request, or another instance's batch): it is taken out of `batch`, refused with
   * IdempotencyKeyTaken, and the rest written again.
   */
  private async commit(batch: Pending[]): Promise<EventsTable[]> {
    for (let deletions = 0; batch.length > 0; ) {
      try {
        return await this.writeBatch(batch);
      } catch (err) {
        if (isForeignKeyViolation(err)) {
          // Another deletion can land between the check and the next try: a few tries, then the error.
          if (++deletions === 3) throw err;
          await this.dropDeletedSubscriptions(batch);
          // Each try with a key refused has one emit less: the tries end.
        } else if (!isUniqueViolation(err) || !(await this.refuseTakenKeys(batch))) throw err;
      }
    }
    return [];
  }

  /**
   * Refuses the emits of `batch` whose key is stored already, and all but the first of any under one key (one
   * instance lets only one request with a key write at a time: a safety net); false when none is refused (the
   * batch failed on something else).
   */
  private async refuseTakenKeys(batch: Pending[]): Promise<boolean> {
    const keys = batch.flatMap((p) => (p.draft.key ? [p.draft.key] : []));
    const taken = await existingKeys(this.db, keys);
    const seen = new Set<string>();
    return (
      this.refuse(batch, (key) => {
        const name = keyName(key);
        if (taken.has(name) || seen.has(name)) return true;
        seen.add(name);
        return false;
      }) > 0
    );
  }

  /** Takes the emits whose key `taken` says so out of `batch`, rejecting each; answers how many. */
  private refuse(batch: Pending[], taken: (key: KeyToRecord) => boolean): number {
    let kept = 0;
    for (const p of batch) {
      if (p.draft.key !== undefined && taken(p.draft.key)) p.reject(new IdempotencyKeyTaken(p.draft.key));
      else batch[kept++] = p;
    }
    const refused = batch.length - kept;
    batch.length = kept;
    return refused;
  }

  private async dropDeletedSubscriptions(batch: Pending[]): Promise<void> {
    const existing = await existingSubscriptionIds(
      this.db,
      batch.flatMap((p) => p.draft.subscriptionIds),
    );
    for (const p of batch) {
      const kept = p.draft.subscriptionIds.filter((id) => existing.has(id));
      const gone = p.draft.subscriptionIds.length - kept.length;
      if (gone === 0) continue;
      p.draft = extend(p.draft, {
        subscriptionIds: kept,
        row: extend(p.draft.row, {
          durable_subscribers: kept.length,
          subscriber_count: p.draft.row.subscriber_count - gone,
        }),
      });
    }
  }

  private async writeBatch(batch: Pending[]): Promise<EventsTable[]> {
    const now = performance.now();
    const rows: EventsTable[] = batch.map((p) =>
      writtenRow(p.draft.row, p.draft.row.status, Math.round((now - p.draft.startedAt) * 1000) / 1000),
    );
    // An event with no durable subscriber has nothing left to do once committed (live clients get it from
    // the commit, or from the store when they resume): it is stored `processed`, while the emitter and the
    // live streams see it as it was emitted.
    const stored = rows.map((row, i) =>
      batch[i]!.draft.subscriptionIds.length === 0
        ? writtenRow(row, 'processed', row.processing_time_ms)
        : row,
    );
    const outbox = batch.flatMap((p, i) =>
      p.draft.subscriptionIds.map((subscriptionId) => ({
        id: newId('dlv'),
        event_id: rows[i]!.event_id,
        subscription_id: subscriptionId,
        sequence: i + 1,
        priority: rows[i]!.priority,
        status: 'pending',
        attempts: 0,
        next_attempt_at: rows[0]!.timestamp,
        created_at: rows[0]!.timestamp,
        updated_at: rows[0]!.timestamp,
      })),
    );
    const keys = batch.flatMap((p, i) =>
      p.draft.key ? [recordedKeyRow(p.draft.key, rows[i]!.event_id, rows[i]!.timestamp)] : [],
    );
    if (this.dialect === 'postgres') {
      const base = await insertBatchPostgres(this.db, stored, outbox, keys);
      for (const [i, row] of rows.entries()) row.sequence = base + i + 1;
      return rows;
    }
    if (this.durableBatch) return this.writeOnWriterThread(rows, stored, outbox, keys, this.durableBatch);
    return this.db.transaction().execute(async (trx) => {
      // The keys first: a key held already fails the batch before anything else is written.
      await insertRows(trx, this.dialect, 'idempotency_keys', RECORDED_KEY_COLUMNS, keys);
      const { rows: taken } = await runSql<{ last: number }>(trx, SQLITE_TAKE_NUMBERS, [rows.length]);
      const base = Number(taken[0]!.last) - rows.length;
      for (const [i, row] of rows.entries()) {
        row.sequence = base + i + 1;
        stored[i]!.sequence = row.sequence;
      }
      for (const o of outbox) o.sequence += base;
      await insertRows(trx, this.dialect, 'events', INSERT_COLUMNS.events, stored);
      await insertRows(trx, this.dialect, 'event_outbox', INSERT_COLUMNS.event_outbox, outbox);
      return rows;
    });
  }

  /**
   * SQLite's batch as one set of statements for the writer thread: the numbers taken, then the events and
   * their outbox rows, each row's sequence computed in SQL from the counter row the first statement updated
   * (`last` less the row's distance from the batch's end), so nothing waits for a result between statements.
   * Idempotency-Keys recorded with their events come first: a key held already fails the batch at once.
   */
  private async writeOnWriterThread(
    rows: EventsTable[],
    stored: EventsTable[],
    outbox: { sequence: number }[],
    keys: readonly IdempotencyKeysTable[],
    run: NonNullable<Database['durableBatch']>,
  ): Promise<EventsTable[]> {
    const n = rows.length;
    // Until the batch is written, a row's `sequence` holds its distance from the batch's end.
    for (const [i, row] of stored.entries()) row.sequence = n - 1 - i;
    for (const o of outbox) o.sequence = n - o.sequence;
    const keyInserts = keys.length === 0 ? [] : sqliteInserts('idempotency_keys', RECORDED_KEY_COLUMNS, keys);
    const results = await run([
      ...keyInserts,
      CompiledQuery.raw(SQLITE_TAKE_NUMBERS, [n]),
      ...sqliteInserts('events', INSERT_COLUMNS.events, stored, { sequence: NUMBER_FROM_END }),
      ...sqliteInserts('event_outbox', INSERT_COLUMNS.event_outbox, outbox as never, {
        sequence: NUMBER_FROM_END,
      }),
    ]);
    const base = Number((results[keyInserts.length]!.rows[0] as { last: number }).last) - n;
    for (const [i, row] of rows.entries()) {
      row.sequence = base + i + 1;
      stored[i]!.sequence = row.sequence;
    }
    return rows;
  }
}

/** A row's sequence in a batch on the writer thread: the counter as the batch left it, less the parameter. */
const NUMBER_FROM_END = '((select "last" from "event_sequence" where "id" = 1) - ?)';

// The numbers of a batch are taken from the `event_sequence` row (migration 0012), or past the largest stored
// sequence if that is further on (a database restored from an archive whose counter is behind).
const SQLITE_TAKE_NUMBERS =
  'update "event_sequence" set "last" = max("last", (select coalesce(max("sequence"), 0) from "events")) + ? ' +
  'where "id" = 1 returning "last"';

const EVENT_COLUMNS = INSERT_COLUMNS.events.filter((c) => c !== 'sequence');
const PG_EVENT_TYPES: Record<(typeof EVENT_COLUMNS)[number], string> = {
  event_id: 'text',
  event_type: 'text',
  source: 'text',
  timestamp: 'text',
  priority: 'integer',
  status: 'text',
  security_level: 'text',
  data: 'text',
  data_encrypted: 'integer',
  metadata: 'text',
  correlation_id: 'text',
  emitter_id: 'text',
  expires_at: 'text',
  subscriber_count: 'integer',
  processing_time_ms: 'double precision',
  emitted_by: 'text',
  durable_subscribers: 'integer',
  traceparent: 'text',
  tracestate: 'text',
  idempotency_ref: 'text',
};
// An outbox row's `sequence` here is its event's place in the batch (1, 2, …) until the batch's numbers are known.
const OUTBOX_COLUMNS = ['id', 'event_id', 'subscription_id', 'sequence', 'priority'] as const;
const PG_OUTBOX_TYPES: Record<(typeof OUTBOX_COLUMNS)[number], string> = {
  id: 'text',
  event_id: 'text',
  subscription_id: 'text',
  sequence: 'bigint',
  priority: 'integer',
};

/**
 * PostgreSQL: a batch is one statement, run on its own (its own transaction, one round trip). It updates the
 * `event_sequence` row first: a concurrent batch (another connection or instance) waits for that row's lock
 * until this one commits, then reads the row as committed, so numbers follow commit order without gaps; a
 * failed statement rolls its numbers back with it. The events and their outbox rows arrive as two JSON
 * arrays of rows (each row an array of its columns: `JSON.stringify` is much cheaper than pg's escaping of
 * one text array per column), so the text of the statement is the same for every batch and it stays prepared.
 * Foreign keys are checked at the end of the statement, when the events are there. Answers the sequence
 * before the batch's first.
 */
const PG_INSERT_BATCH = preparedSql(
  (() => {
    const quoted = (cols: readonly string[]) => cols.map((c) => `"${c}"`).join(', ');
    // Column i of a row array, typed as its column.
    const field = (row: string, i: number, type: string) =>
      type === 'text' ? `${row} ->> ${i}` : `(${row} ->> ${i})::${type}`;
    const eventFields = EVENT_COLUMNS.map((c, i) => field('"u"."e"', i, PG_EVENT_TYPES[c]));
    const outboxFields = OUTBOX_COLUMNS.map((c, i) =>
      c === 'sequence'
        ? `"taken"."base" + ${field('"o"."e"', i, PG_OUTBOX_TYPES[c])}`
        : field('"o"."e"', i, PG_OUTBOX_TYPES[c]),
    );
    return (
      `with "taken" as (update "event_sequence" set "last" = greatest("last", ` +
      `(select coalesce(max("sequence"), 0) from "events")) + $1::bigint where "id" = 1 ` +
      `returning "last" - $1::bigint as "base"), ` +
      `"stored" as (insert into "events" (${quoted(EVENT_COLUMNS)}, "sequence") ` +
      `select ${eventFields.join(', ')}, "taken"."base" + "u"."ord" ` +
      `from "taken", jsonb_array_elements($2::jsonb) with ordinality as "u"("e", "ord")), ` +
      `"queued" as (insert into "event_outbox" (${quoted(OUTBOX_COLUMNS)}, "status", "attempts", ` +
      `"next_attempt_at", "created_at", "updated_at") ` +
      `select ${outboxFields.join(', ')}, 'pending', 0, $4::text, $4::text, $4::text ` +
      `from "taken", jsonb_array_elements($3::jsonb) as "o"("e")), ` +
      // After the counter row's lock (it reads "taken"), so batches meet on that row first, never on a key.
      `"keys" as (insert into "idempotency_keys" (${quoted(RECORDED_KEY_COLUMNS)}) ` +
      `select ${RECORDED_KEY_COLUMNS.map((c, i) => field('"k"."e"', i, c === 'status_code' ? 'integer' : 'text')).join(', ')} ` +
      `from "taken", jsonb_array_elements($5::jsonb) as "k"("e")) ` +
      `select "base" from "taken"`
    );
  })(),
);

async function insertBatchPostgres(
  db: Kysely<Tables>,
  events: readonly Omit<EventsTable, 'sequence'>[],
  outbox: readonly {
    id: string;
    event_id: string;
    subscription_id: string;
    sequence: number;
    priority: number;
  }[],
  keys: readonly IdempotencyKeysTable[],
): Promise<number> {
  const eventRows = JSON.stringify(events.map((e) => EVENT_COLUMNS.map((c) => e[c])));
  const keyRows =
    keys.length === 0 ? '[]' : JSON.stringify(keys.map((k) => RECORDED_KEY_COLUMNS.map((c) => k[c])));
  const outboxRows = JSON.stringify(outbox.map((o) => OUTBOX_COLUMNS.map((c) => o[c])));
  const { rows } = await runSql<{ base: number }>(db, PG_INSERT_BATCH, [
    events.length,
    eventRows,
    outboxRows,
    events[0]!.timestamp,
    keyRows,
  ]);
  if (rows.length === 0) throw new Error('the event_sequence row is missing (migration 0012)');
  return Number(rows[0]!.base);
}

/**
 * The row as written: every column named, in one literal. `extend` (Object.assign) of the draft's 20 fields cost
 * 2–13 µs an event on Node 20 once the trace columns made it cross V8's fast-copy size; a literal costs ~0.1 µs.
 */
function writtenRow(
  d: Omit<EventsTable, 'sequence' | 'processing_time_ms'>,
  status: string,
  processingMs: number,
): EventsTable {
  return {
    event_id: d.event_id,
    sequence: 0,
    event_type: d.event_type,
    source: d.source,
    timestamp: d.timestamp,
    priority: d.priority,
    status,
    security_level: d.security_level,
    data: d.data,
    data_encrypted: d.data_encrypted,
    metadata: d.metadata,
    correlation_id: d.correlation_id,
    emitter_id: d.emitter_id,
    expires_at: d.expires_at,
    subscriber_count: d.subscriber_count,
    processing_time_ms: processingMs,
    emitted_by: d.emitted_by,
    durable_subscribers: d.durable_subscribers,
    traceparent: d.traceparent,
    tracestate: d.tracestate,
    idempotency_ref: d.idempotency_ref,
  };
}
