import { setTimeout as sleep } from 'node:timers/promises';
import type { Insertable, Kysely, Transaction } from 'kysely';
import { AUDIT_ACTIONS, auditDetails, type DeliveryOutcome, FAILED_CODE } from '../events/delivery-audit.js';
import { type DeliveryAttemptsTable, type EventAuditTable, INSERT_COLUMNS } from '../events/event-tables.js';
import { extend } from '../kernel/extend.js';
import { newId, nowIso } from '../kernel/new-id.js';
import { storableExcerpt } from '../kernel/storable-text.js';
import type { Bookkeeping } from '../storage/bookkeeping.js';
import type { Dialect } from '../storage/database.js';
import { dialectSql, runSql, runSqlForIds } from '../storage/dialect-sql.js';
import { insertRows } from '../storage/insert-rows.js';
import type { Tables } from '../storage/tables.js';
import type { ClaimedDelivery, OutboxStore } from './outbox-store.js';

export interface DeliveryResult {
  delivery: ClaimedDelivery;
  /** The lease holder that made the try; its writes apply only while it still holds the row. */
  owner: string;
  outcome: DeliveryOutcome;
  /** The attempt number this try was (the row's attempts after it). */
  attempt: number;
  /** When the try started. */
  at: string;
  responseStatus: number | null;
  latencyMs: number | null;
  error: string | null;
  nextAttemptAt?: string | undefined;
  batchId?: string | undefined;
  /** The target answered 410 Gone: the subscription goes to `error` at once. */
  gone?: boolean | undefined;
  /** Who delivered, for the audit trail: `webhook_dispatcher`, or `plugin:<id>`. */
  actor: string;
}

/** The result of a delivery whose event expired before it was sent: `dropped`, no attempt made. */
export function expiredDrop(
  delivery: ClaimedDelivery,
  owner: string,
  at: string,
  actor: string,
): DeliveryResult {
  return {
    delivery,
    owner,
    outcome: 'dropped',
    attempt: delivery.attempts,
    at,
    responseStatus: null,
    latencyMs: null,
    error: 'event expired',
    actor,
  };
}

/** A delivery that reached a final state, for whoever waits on it (a replay). */
export interface SettledDelivery {
  id: string;
  eventId: string;
  subscriptionId: string;
  replayId: string | null;
  status: 'delivered' | 'failed' | 'dropped';
  error: string | null;
}

const MAX_BATCH = 1000;
const MAX_ERROR_CHARS = 2000;
// A write waits this long for more results to join it, unless this many are already waiting: at a few thousand
// deliveries a second one commit then covers dozens of them (a commit costs about as much as 20 attempt rows).
const GATHER_MS = 10;
const GATHER_ROWS = 128;

/**
 * Writes what deliveries came to, many at a time: results that arrive within a few milliseconds, or while one
 * write runs, go together in the next (group commit), so the cost of a transaction is shared by every delivery
 * in it. One transaction holds the attempt rows, the audit entries, the outbox rows' new states and the
 * subscriptions' counters; event statuses follow right after it commits.
 */
export class DeliveryRecorder {
  private queue: DeliveryResult[] = [];
  private writing: Promise<void> | undefined;
  private inWrite = 0;
  private readonly settledListeners = new Set<(rows: SettledDelivery[]) => void>();
  written = 0;
  failedWrites = 0;

  constructor(
    private readonly deps: {
      db: Kysely<Tables>;
      dialect: Dialect;
      /**
       * A result lost with the machine (a power loss) is a delivery made again, as at-least-once allows, so
       * the results' commits need not wait for the disk.
       */
      bookkeeping: Bookkeeping;
      outbox: OutboxStore;
      errorThreshold: () => number;
      /** `webhooks.disable_after_failing_hours`: failing every attempt this long puts it in error (0: never). */
      disableAfterHours: () => number;
      /** Subscriptions this write moved to `error` (the emit path must stop queueing for them). */
      onSubscriptionError: (ids: string[]) => Promise<void>;
      /** Results whose rows were written (or given up), so the dispatcher stops holding them. */
      onWritten: (results: DeliveryResult[]) => void;
      reportError: (err: unknown) => void;
    },
  ) {}

  get pending(): number {
    return this.queue.length;
  }

  /** Results added and not yet written (waiting, or in the write under way). */
  get unwritten(): number {
    return this.queue.length + this.inWrite;
  }

  /** Listens for deliveries that reached a final state on this instance. */
  onSettled(listener: (rows: SettledDelivery[]) => void): () => void {
    this.settledListeners.add(listener);
    return () => this.settledListeners.delete(listener);
  }

  add(result: DeliveryResult): void {
    // An error's text goes into the attempt, the outbox row and the subscription. A plugin consumer's can be
    // any text of any length, and one a database refuses (NUL) would fail every result written with it.
    this.queue.push(
      result.error === null
        ? result
        : extend(result, { error: storableExcerpt(result.error, MAX_ERROR_CHARS) }),
    );
    this.schedule();
  }

  private schedule(): void {
    if (this.writing !== undefined) return;
    this.writing = this.drain()
      .catch((err: unknown) => this.deps.reportError(err))
      .finally(() => {
        this.writing = undefined;
        // A result added after the last batch was taken, before this ran, is not left behind.
        if (this.queue.length > 0) this.schedule();
      });
  }

  /** Resolves when everything added so far is written. */
  async flush(): Promise<void> {
    while (this.writing !== undefined) await this.writing;
  }

  private async drain(): Promise<void> {
    while (this.queue.length > 0) {
      if (this.queue.length < GATHER_ROWS) await sleep(GATHER_MS);
      const batch = this.queue.splice(0, MAX_BATCH);
      this.inWrite = batch.length;
      try {
        await this.writeWithRetry(batch);
      } finally {
        this.inWrite = 0;
        this.deps.onWritten(batch);
      }
    }
  }

  private async writeWithRetry(batch: DeliveryResult[]): Promise<void> {
    try {
      await this.write(batch);
    } catch (first) {
      // A concurrent purge can remove an event between the check and the insert (PostgreSQL); once more.
      await new Promise((r) => setTimeout(r, 50));
      try {
        await this.write(batch);
      } catch {
        this.failedWrites += 1;
        throw first;
      }
    }
  }

  private async write(batch: DeliveryResult[]): Promise<void> {
    const now = nowIso();
    let errored: string[] = [];
    let live: DeliveryResult[] = [];
    await this.deps.bookkeeping(async (trx) => {
      const { dialect } = this.deps;
      const present = await presentEvents(
        trx,
        dialect,
        batch.map((r) => r.delivery.event_id),
      );
      live = batch.filter((r) => present.has(r.delivery.event_id));
      await insertRows(
        trx,
        dialect,
        'delivery_attempts',
        INSERT_COLUMNS.delivery_attempts,
        live.filter(isAttempt).map(attemptRow),
      );
      // A try's attempt row is its audit entry too (deliveryAuditEntry); a drop was no try and has a row of its own.
      await insertRows(
        trx,
        dialect,
        'event_audit',
        INSERT_COLUMNS.event_audit,
        live.filter((r) => !isAttempt(r)).map(auditRow),
      );
      await updateOutbox(trx, dialect, live, now);
      errored = await updateSubscriptions(trx, dialect, live, now, {
        threshold: this.deps.errorThreshold(),
        failingHours: this.deps.disableAfterHours(),
      });
      // SQLite has one writer, so the final statuses can go in the same commit; PostgreSQL sets them after it
      // (see OutboxStore.finalizeEvents).
      if (this.deps.dialect === 'sqlite') await this.deps.outbox.finalizeEvents(settledEventsOf(live), trx);
    });
    this.written += batch.length;
    // First, so that the emit path stops queueing for them as soon as possible.
    if (errored.length > 0) await this.deps.onSubscriptionError(errored);
    if (this.deps.dialect === 'postgres') await this.deps.outbox.finalizeEvents(settledEventsOf(live));
    const settled: SettledDelivery[] = live
      .filter((r) => r.outcome !== 'retry')
      .map((r) => ({
        id: r.delivery.id,
        eventId: r.delivery.event_id,
        subscriptionId: r.delivery.subscription_id,
        replayId: r.delivery.replay_id,
        status: r.outcome as SettledDelivery['status'],
        error: r.error,
      }));
    if (settled.length > 0) for (const listener of this.settledListeners) listener(settled);
  }
}

const isAttempt = (r: DeliveryResult) => r.outcome !== 'dropped';

/** Events whose own (not replayed) deliveries may all have settled with these results. */
const settledEventsOf = (results: DeliveryResult[]) =>
  results
    .filter((r) => r.outcome !== 'retry' && r.delivery.replay_id === null)
    .map((r) => r.delivery.event_id);

const finalError = (r: DeliveryResult) =>
  r.outcome === 'failed' ? `${FAILED_CODE}: ${r.error ?? 'delivery failed'}` : r.error;

function attemptRow(r: DeliveryResult): Insertable<DeliveryAttemptsTable> {
  return {
    id: newId('att'),
    outbox_id: r.delivery.id,
    event_id: r.delivery.event_id,
    subscription_id: r.delivery.subscription_id,
    attempt: r.attempt,
    status: r.outcome === 'delivered' ? 'delivered' : 'failed',
    response_status: r.responseStatus,
    latency_ms: r.latencyMs,
    error: finalError(r),
    created_at: r.at,
    batch_id: r.batchId ?? null,
    actor: r.actor,
    next_attempt_at: r.outcome === 'retry' ? (r.nextAttemptAt ?? r.at) : null,
    replay_id: r.delivery.replay_id,
  };
}

/** The audit entry of a delivery dropped untried (also the sweep's drops of expired events, OutboxStore.dropExpired). */
export function auditRow(r: DeliveryResult): Insertable<EventAuditTable> {
  return {
    id: newId('aud'),
    event_id: r.delivery.event_id,
    timestamp: r.at,
    action: AUDIT_ACTIONS[r.outcome],
    actor: r.actor,
    details: JSON.stringify(
      auditDetails({
        ...r,
        subscriptionId: r.delivery.subscription_id,
        deliveryId: r.delivery.id,
        replayId: r.delivery.replay_id,
        batchId: r.batchId,
      }),
    ),
  };
}

async function presentEvents(
  trx: Transaction<Tables>,
  dialect: Dialect,
  ids: string[],
): Promise<Set<string>> {
  const rows = await runSqlForIds<{ event_id: string }>(trx, dialect, SQL[dialect].present, ids);
  return new Set(rows.map((r) => r.event_id));
}

async function updateOutbox(
  trx: Transaction<Tables>,
  dialect: Dialect,
  results: DeliveryResult[],
  now: string,
): Promise<void> {
  // Delivered and dropped rows share their new state: one statement per (outcome, attempt, owner).
  const groups = new Map<string, { r: DeliveryResult; ids: string[] }>();
  for (const r of results) {
    if (r.outcome !== 'delivered' && r.outcome !== 'dropped') continue;
    const key = `${r.outcome}|${r.attempt}|${r.owner}`;
    const g = groups.get(key) ?? { r, ids: [] };
    g.ids.push(r.delivery.id);
    groups.set(key, g);
  }
  for (const { r, ids } of groups.values()) {
    await runSqlForIds(trx, dialect, SQL[dialect].settleMany, ids, (list) => [
      r.outcome,
      r.attempt,
      r.outcome === 'dropped' ? r.error : null,
      now,
      list,
      r.owner,
    ]);
  }
  // Retried and failed rows each have their own state: one statement for all of them, a row each.
  const unsettled = results
    .filter((r) => r.outcome === 'retry' || r.outcome === 'failed')
    .map((r) => [
      r.delivery.id,
      r.owner,
      r.outcome === 'retry' ? 'pending' : 'failed',
      r.attempt,
      r.nextAttemptAt ?? now,
      finalError(r),
    ]);
  if (unsettled.length > 0) {
    await runSql(trx, SQL[dialect].settleEach, [now, ...rowsParams(dialect, SETTLE_FIELDS, unsettled)]);
  }
}

interface SubscriptionTally {
  delivered: number;
  failed: number;
  /** Exhausted deliveries since the last success in this write. */
  trailingFailures: number;
  hadSuccess: boolean;
  lastDelivery: string | undefined;
  lastError: string | undefined;
  gone: boolean;
  /** The first failed attempt (a retry's too) after the last success in this write. */
  failingFrom: string | undefined;
}

/** Counters and status of the subscriptions concerned; answers those moved to `error`. */
async function updateSubscriptions(
  trx: Transaction<Tables>,
  dialect: Dialect,
  results: DeliveryResult[],
  now: string,
  rules: { threshold: number; failingHours: number },
): Promise<string[]> {
  const tallies = new Map<string, SubscriptionTally>();
  for (const r of results) {
    if (r.outcome === 'dropped') continue;
    const id = r.delivery.subscription_id;
    const t = tallies.get(id) ?? {
      delivered: 0,
      failed: 0,
      trailingFailures: 0,
      hadSuccess: false,
      lastDelivery: undefined,
      lastError: undefined,
      gone: false,
      failingFrom: undefined,
    };
    if (r.outcome === 'delivered') {
      t.delivered += 1;
      t.trailingFailures = 0;
      t.hadSuccess = true;
      t.failingFrom = undefined;
      if (t.lastDelivery === undefined || r.at > t.lastDelivery) t.lastDelivery = r.at;
    } else {
      if (r.outcome === 'failed') {
        t.failed += 1;
        t.trailingFailures += 1;
      }
      t.lastError = r.error ?? undefined;
      if (r.gone) t.gone = true;
      if (t.failingFrom === undefined || r.at < t.failingFrom) t.failingFrom = r.at;
    }
    tallies.set(id, t);
  }
  const { threshold } = rules;
  if (tallies.size > 0) await updateCounters(trx, dialect, tallies);
  // Failing since before this: failing every attempt for `failingHours` (webhook subscriptions only).
  const cutoff =
    rules.failingHours > 0 ? new Date(Date.parse(now) - rules.failingHours * 3_600_000).toISOString() : null;
  // The subscriptions that may have to go to `error`, with the rules that may move each: one statement for all.
  const candidates = [...tallies]
    .map(([id, t]) => [
      id,
      t.gone ? 1 : 0,
      t.trailingFailures > 0 ? 1 : 0,
      cutoff !== null && t.failingFrom !== undefined ? 1 : 0,
    ])
    .filter(([, gone, counted, timed]) => gone === 1 || counted === 1 || timed === 1);
  if (candidates.length === 0) return [];
  const moved = await runSql<{ id: string }>(trx, SQL[dialect].toError, [
    now,
    now,
    GONE_ERROR,
    ...rowsParams(dialect, ERROR_FIELDS, candidates),
    threshold,
    cutoff,
  ]);
  return moved.rows.map((r) => r.id);
}

const GONE_ERROR = 'the target answered 410 Gone; the subscription was put in error';

/** Every subscription's counters in one statement, however many subscriptions the write concerns. */
async function updateCounters(
  trx: Transaction<Tables>,
  dialect: Dialect,
  tallies: Map<string, SubscriptionTally>,
): Promise<void> {
  // One row per subscription, in the order of COUNTER_FIELDS. After a success in this write, the count of
  // exhausted deliveries starts again from those after it (`reset`).
  const rows = [...tallies].map(([id, t]) => [
    id,
    t.delivered,
    t.failed,
    t.hadSuccess ? 1 : 0,
    t.trailingFailures,
    t.lastDelivery ?? null,
    t.lastError ?? null,
    t.failingFrom ?? null,
  ]);
  await runSql(trx, SQL[dialect].counters, rowsParams(dialect, COUNTER_FIELDS, rows));
}

/** The fields of a row of values that one statement applies to many table rows, with their PostgreSQL types. */
type RowFields = readonly (readonly [name: string, type: 'text' | 'integer'])[];

/**
 * The source `"t"` of a statement over many rows of values, each in the order of `fields`: a JSON array of row
 * arrays read by json_each (SQLite; one parameter), one array per field (PostgreSQL; a parameter each).
 */
function rowsSource(dialect: Dialect, fields: RowFields): string {
  return dialect === 'sqlite'
    ? `(select ${fields.map(([name], i) => `"value" ->> ${i} as "${name}"`).join(', ')} from json_each(?)) as "t"`
    : `unnest(${fields.map(([, type]) => `?::${type}[]`).join(', ')}) as "t"(` +
        `${fields.map(([name]) => `"${name}"`).join(', ')})`;
}

/** The parameters of `rowsSource` for these rows. */
function rowsParams(dialect: Dialect, fields: RowFields, rows: unknown[][]): unknown[] {
  return dialect === 'sqlite' ? [JSON.stringify(rows)] : fields.map((_, i) => rows.map((row) => row[i]));
}

// The fields of a subscription's counter row.
const COUNTER_FIELDS: RowFields = [
  ['id', 'text'],
  ['delivered', 'integer'],
  ['failed', 'integer'],
  ['reset', 'integer'],
  ['trailing', 'integer'],
  ['last_delivery', 'text'],
  ['last_error', 'text'],
  ['failing_from', 'text'],
];

// A subscription that may go to `error`: answered 410 Gone, has exhausted deliveries (`counted`: the threshold
// applies), or failed since before the cutoff may allow (`timed`: webhook subscriptions only).
const ERROR_FIELDS: RowFields = [
  ['id', 'text'],
  ['gone', 'integer'],
  ['counted', 'integer'],
  ['timed', 'integer'],
];

// A retried or failed delivery's new state.
const SETTLE_FIELDS: RowFields = [
  ['id', 'text'],
  ['owner', 'text'],
  ['status', 'text'],
  ['attempts', 'integer'],
  ['next_attempt_at', 'text'],
  ['last_error', 'text'],
];

const COUNTERS_SET =
  '"events_delivered" = "subscriptions"."events_delivered" + "t"."delivered", ' +
  '"events_failed" = "subscriptions"."events_failed" + "t"."failed", ' +
  '"consecutive_failures" = case when "t"."reset" = 1 then "t"."trailing" ' +
  'else "subscriptions"."consecutive_failures" + "t"."trailing" end, ' +
  // The later of the two: results are written as they come back, and a slow try's result may follow a later one's.
  '"last_delivery" = case when "subscriptions"."last_delivery" is null or ' +
  '"t"."last_delivery" > "subscriptions"."last_delivery" then "t"."last_delivery" ' +
  'else "subscriptions"."last_delivery" end, ' +
  '"last_error" = coalesce("t"."last_error", "subscriptions"."last_error"), ' +
  // Cleared by a success (then set by failures after it in the same write); else kept from the first failure.
  '"failing_since" = case when "t"."reset" = 1 then "t"."failing_from" ' +
  'else coalesce("subscriptions"."failing_since", "t"."failing_from") end';

// Statements of every write (storage/dialect-sql.ts): fixed texts, prepared once.
const STATEMENTS = (dialect: Dialect) => ({
  present: dialectSql(dialect, 'select "event_id" from "events" where "event_id" in list(?)'),
  settleMany: dialectSql(
    dialect,
    'update "event_outbox" set "status" = ?, "attempts" = ?, "lease_owner" = null, "lease_until" = null, ' +
      '"last_error" = ?, "updated_at" = ? where "id" in list(?) and "lease_owner" = ?',
  ),
  settleEach: dialectSql(
    dialect,
    'update "event_outbox" set "status" = "t"."status", "attempts" = "t"."attempts", ' +
      '"next_attempt_at" = "t"."next_attempt_at", "lease_owner" = null, "lease_until" = null, ' +
      `"last_error" = "t"."last_error", "updated_at" = ? from ${rowsSource(dialect, SETTLE_FIELDS)} ` +
      'where "event_outbox"."id" = "t"."id" and "event_outbox"."lease_owner" = "t"."owner"',
  ),
  counters: dialectSql(
    dialect,
    `update "subscriptions" set ${COUNTERS_SET} from ${rowsSource(dialect, COUNTER_FIELDS)} ` +
      'where "subscriptions"."id" = "t"."id"',
  ),
  // After the counters: the threshold applies to the counts they set. Answers the subscriptions moved.
  toError: dialectSql(
    dialect,
    'update "subscriptions" set "status" = \'error\', "updated_at" = ?, "inactive_since" = ?, ' +
      '"last_error" = case when "t"."gone" = 1 then ? else "subscriptions"."last_error" end ' +
      `from ${rowsSource(dialect, ERROR_FIELDS)} ` +
      'where "subscriptions"."id" = "t"."id" and "subscriptions"."status" = \'active\' and ("t"."gone" = 1 ' +
      'or ("t"."counted" = 1 and "subscriptions"."consecutive_failures" >= ?) ' +
      'or ("t"."timed" = 1 and "subscriptions"."delivery_method" = \'webhook\' ' +
      'and "subscriptions"."failing_since" <= ?)) returning "subscriptions"."id"',
  ),
});
const SQL = { sqlite: STATEMENTS('sqlite'), postgres: STATEMENTS('postgres') };
