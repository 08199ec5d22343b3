import { performance } from 'node:perf_hooks';
import { type Kysely, sql, type Transaction } from 'kysely';
import { extend } from '../kernel/extend.js';
import { newId } from '../kernel/new-id.js';
import type { Dialect } from '../storage/database.js';
import { insertRows } from '../storage/insert-rows.js';
import type { Tables } from '../storage/tables.js';
import { type EventsTable, INSERT_COLUMNS } from './event-tables.js';

/** An event ready to be written, with the durable subscriptions it goes to. */
export interface EventDraft {
  row: Omit<EventsTable, 'sequence' | 'processing_time_ms'>;
  subscriptionIds: readonly string[];
  /** `performance.now()` when the emit began; the stored processing time runs from here to the write. */
  startedAt: number;
}

interface Pending {
  draft: EventDraft;
  resolve: (row: EventsTable) => void;
  reject: (err: unknown) => void;
}

// Any fixed 64-bit value: the one advisory lock every instance takes to number events.
const SEQUENCE_LOCK = 7_262_001_004;
const MAX_BATCH = 256;
// PostgreSQL: outbox rows of a batch written in the same statement as its events, at most (parameters < 65,535).
const MAX_OUTBOX_IN_ONE_STATEMENT = 2000;

/**
 * Writes events in one transaction each batch: the next sequence numbers, the events and their outbox rows
 * (an event's `event_emitted` audit entry is read from its row). Emits that arrive while a batch commits wait and go together in the next one
 * (group commit), so the sequence lock is taken once per batch rather than once per event.
 *
 * PostgreSQL: the sequence is read under a transaction-scoped advisory lock, so numbers follow commit order
 * with several writers and instances, without gaps (a failed batch rolls back its numbers with it).
 * SQLite: one connection is the only writer; the same code runs without the lock.
 */
export class EventWriter {
  private queue: Pending[] = [];
  private running = false;
  private closed = false;
  committedEvents = 0;
  committedBatches = 0;
  failedBatches = 0;
  totalCommitMs = 0;
  lastSequence = 0;

  constructor(
    private readonly db: Kysely<Tables>,
    private readonly dialect: Dialect,
    /** Called after each commit, in sequence order, before the emitters' promises resolve. */
    private readonly afterCommit: (rows: EventsTable[], outboxRows: number) => Promise<void>,
  ) {}

  get queueSize(): number {
    return this.queue.length;
  }

  write(draft: EventDraft): Promise<EventsTable> {
    if (this.closed) return Promise.reject(new Error('the event writer is stopped'));
    return new Promise((resolve, reject) => {
      this.queue.push({ draft, resolve, reject });
      if (!this.running) {
        this.running = true;
        // Started on the next tick so emits arriving in the same tick join the first batch.
        setImmediate(() => {
          this.drain().catch(() => {});
        });
      }
    });
  }

  /** Accepts writes again after `close()` (a service restart). */
  open(): void {
    this.closed = false;
  }

  /** Waits for queued emits to be written; later writes are refused. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.running) await new Promise((r) => setTimeout(r, 5));
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, MAX_BATCH);
        let rows: EventsTable[];
        const started = performance.now();
        try {
          rows = await this.db.transaction().execute((trx) => this.commit(trx, batch));
        } catch (err) {
          this.failedBatches += 1;
          for (const p of batch) p.reject(err);
          continue;
        }
        this.totalCommitMs += performance.now() - started;
        this.committedBatches += 1;
        this.committedEvents += rows.length;
        this.lastSequence = rows[rows.length - 1]!.sequence;
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
    } finally {
      this.running = false;
    }
  }

  private async commit(trx: Transaction<Tables>, batch: Pending[]): Promise<EventsTable[]> {
    if (this.dialect === 'postgres') await sql`select pg_advisory_xact_lock(${SEQUENCE_LOCK})`.execute(trx);
    const top = await trx
      .selectFrom('events')
      .select(sql<number | null>`max(sequence)`.as('max'))
      .executeTakeFirst();
    let next = Number(top?.max ?? 0);
    const now = performance.now();
    const rows: EventsTable[] = batch.map((p) =>
      extend(p.draft.row, {
        sequence: ++next,
        processing_time_ms: Math.round((now - p.draft.startedAt) * 1000) / 1000,
      }),
    );
    const stamp = rows[0]!.timestamp;
    const outbox = batch.flatMap((p, i) =>
      p.draft.subscriptionIds.map((subscriptionId) => ({
        id: newId('dlv'),
        event_id: rows[i]!.event_id,
        subscription_id: subscriptionId,
        sequence: rows[i]!.sequence,
        priority: rows[i]!.priority,
        status: 'pending',
        attempts: 0,
        next_attempt_at: stamp,
        created_at: stamp,
        updated_at: stamp,
      })),
    );
    // An event with no durable subscriber has nothing left to do once committed (live clients get it from
    // the commit, or from the store when they resume): it is stored `processed`, while the emitter and the
    // live streams see it as it was emitted.
    const stored = rows.map((row, i) =>
      batch[i]!.draft.subscriptionIds.length === 0 ? extend(row, { status: 'processed' }) : row,
    );
    if (this.dialect === 'postgres' && outbox.length > 0 && outbox.length <= MAX_OUTBOX_IN_ONE_STATEMENT) {
      // One round trip for both inserts (a data-modifying CTE): every round trip is made under the sequence
      // lock, and each waits its turn in a busy event loop. Foreign keys are checked at the end of the
      // statement, when the events are there.
      await trx
        .with('stored_events', (db) => db.insertInto('events').values(stored))
        .insertInto('event_outbox')
        .values(outbox)
        .execute();
      return rows;
    }
    await insertRows(trx, this.dialect, 'events', INSERT_COLUMNS.events, stored);
    await insertRows(trx, this.dialect, 'event_outbox', INSERT_COLUMNS.event_outbox, outbox);
    return rows;
  }
}
