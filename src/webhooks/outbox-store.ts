import {
  CompiledQuery,
  type Expression,
  type ExpressionBuilder,
  type Kysely,
  type SqlBool,
  type Transaction,
} from 'kysely';
import type { EventCipher } from '../events/event-cipher.js';
import type { EventsTable } from '../events/event-tables.js';
import { settleEvents } from '../events/settle-events.js';
import type { Bookkeeping } from '../storage/bookkeeping.js';
import type { Dialect } from '../storage/database.js';

import { dialectSql, runSqlForIds } from '../storage/dialect-sql.js';
import type { Tables } from '../storage/tables.js';
import { deliveryOrder } from './delivery-order.js';
import { auditRow, expiredDrop } from './delivery-recorder.js';
import { countFor, idIn, idNotIn } from './id-list.js';
import type { DeliverableEvent } from './webhook-payload.js';

/** An outbox row this instance holds a lease on. */
export interface ClaimedDelivery {
  id: string;
  event_id: string;
  subscription_id: string;
  sequence: number;
  priority: number;
  attempts: number;
  replay_id: string | null;
}

export interface ClaimFilter {
  /** Subscriptions not to claim for now (saturated here, or batching: claimed by their own rule). */
  exclude: readonly string[];
  /** Plugin subscriptions with a consumer on this instance; other plugin rows are left to other instances. */
  pluginSubscriptions: readonly string[];
}

const CHUNK = 500;
// Rows a claim ranks at most.
const MAX_CANDIDATES = 400;
const CLAIMED = [
  'id',
  'event_id',
  'subscription_id',
  'sequence',
  'priority',
  'attempts',
  'replay_id',
] as const;

// SQLite claim statements (OutboxStore.claimByLane); fixed texts, so each stays one prepared statement.
const CLAIMABLE_SUBSCRIPTIONS =
  `select "id" from "subscriptions" where "status" = 'active' and ` +
  `("delivery_method" = 'webhook' or "id" in (select value from json_each(?)))`;
const LANE_CANDIDATES = {
  due:
    `select "id", "priority", "sequence" from "event_outbox" where "subscription_id" = ? and "status" = 'pending' ` +
    `and "next_attempt_at" <= ? order by "priority" desc, "sequence" limit ?`,
  expired:
    `select "id", "priority", "sequence" from "event_outbox" where "subscription_id" = ? and "status" = 'delivering' ` +
    `and "lease_until" < ? order by "priority" desc, "sequence" limit ?`,
} as const;
// `+"status"`: the condition is checked on each row found by id. Without the `+`, SQLite's planner reads every
// row of that status through the claim index instead (7× slower per row in a backlog).
const LEASE_SET =
  `update "event_outbox" set "status" = 'delivering', "lease_owner" = ?, "lease_until" = ?, "updated_at" = ? ` +
  `where "id" in (select value from json_each(?)) and `;
const LEASE_RETURNING = ` returning ${CLAIMED.map((c) => `"${c}"`).join(', ')}`;
const LEASE_BY_ID = {
  due: `${LEASE_SET}+"status" = 'pending' and "next_attempt_at" <= ?${LEASE_RETURNING}`,
  expired: `${LEASE_SET}+"status" = 'delivering' and "lease_until" < ?${LEASE_RETURNING}`,
} as const;

/** A claim's events go from `emitted` to `processing`. */
export const MARK_PROCESSING = `update "events" set "status" = 'processing' where "event_id" in list(?) and ("status" || '') = 'emitted'`;

// Statements of the delivery path, written once (storage/dialect-sql.ts).
const STATEMENTS = (dialect: Dialect) => ({
  events: dialectSql(
    dialect,
    'select "event_id", "event_type", "source", "timestamp", "priority", "sequence", "data", "data_encrypted", ' +
      '"correlation_id", "expires_at", "traceparent", "tracestate" from "events" where "event_id" in list(?)',
  ),
  // By id, not through the status index (see SETTLE in settle-events.ts).
  markProcessing: dialectSql(dialect, MARK_PROCESSING),
});
const SQL = { sqlite: STATEMENTS('sqlite'), postgres: STATEMENTS('postgres') };

/**
 * The dispatcher's reads and writes of `event_outbox`. A claim takes due rows — pending ones whose time has
 * come, and `delivering` ones whose lease expired (their instance died) — highest priority first, then by
 * sequence, and leases them in one statement. PostgreSQL: the candidate rows are locked with
 * `FOR UPDATE SKIP LOCKED`, so instances claiming at once never take the same row. SQLite: one writer, so the
 * statement is atomic as it is.
 */
export class OutboxStore {
  constructor(
    private readonly db: Kysely<Tables>,
    private readonly dialect: Dialect,
    private readonly cipher: EventCipher,
    /**
     * For the SQLite claim: a lost claim (a power loss) leaves its rows pending, to be claimed again, so its
     * commit need not wait for the disk.
     */
    private readonly bookkeeping: Bookkeeping,
  ) {}

  /**
   * Claims due rows: `pending` ones whose time has come (`kind: 'due'`), or `delivering` ones whose lease
   * expired (`kind: 'expired'`). At most `room.of(subscription)` rows per subscription (`room.default` for
   * those not named), at most `limit` in all.
   */
  async claim(
    kind: 'due' | 'expired',
    owner: string,
    leaseUntil: string,
    now: string,
    limit: number,
    /** Per subscription; `subscriptions`: how many may take part (for sizing the candidate set). */
    room: { default: number; of: ReadonlyMap<string, number>; subscriptions: number },
    filter: ClaimFilter,
    subscriptionId?: string,
  ): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    if (this.dialect === 'sqlite')
      return this.claimByLane(kind, owner, leaseUntil, now, limit, room, filter, subscriptionId);
    const maxRoom = Math.max(room.default, ...room.of.values());
    const eligible = (eb: ExpressionBuilder<Tables, 'event_outbox'>) => {
      const all: Expression<SqlBool>[] =
        kind === 'due'
          ? [eb('status', '=', 'pending'), eb('next_attempt_at', '<=', now)]
          : [eb('status', '=', 'delivering'), eb('lease_until', '<', now)];
      if (subscriptionId !== undefined) all.push(eb('subscription_id', '=', subscriptionId));
      else {
        all.push(
          eb(
            'subscription_id',
            'in',
            eb
              .selectFrom('subscriptions')
              .select('id')
              .where('status', '=', 'active')
              .where((s) =>
                filter.pluginSubscriptions.length === 0
                  ? s('delivery_method', '=', 'webhook')
                  : s.or([
                      s('delivery_method', '=', 'webhook'),
                      idIn(this.dialect, 'id', filter.pluginSubscriptions),
                    ]),
              ),
          ),
        );
        if (filter.exclude.length > 0) all.push(idNotIn(this.dialect, 'subscription_id', filter.exclude));
      }
      return eb.and(all);
    };
    // The first candidates in priority order are locked (PostgreSQL) for the length of the statement; of
    // those, each subscription gets no more than it has room for, so one subscription's backlog never fills a
    // claim it could not send before the others get a turn.
    let locked = this.db
      .selectFrom('event_outbox')
      .select(['id', 'subscription_id', 'priority', 'sequence'])
      .where(eligible)
      .orderBy('priority', 'desc')
      .orderBy('sequence', 'asc')
      // Enough for every subscription taking part to find its share when their rows interleave evenly.
      .limit(Math.min(MAX_CANDIDATES, Math.max(limit * 2, room.subscriptions * maxRoom)));
    if (this.dialect === 'postgres') locked = locked.forUpdate().skipLocked();
    // One transaction with the `emitted` → `processing` move of their events: one commit per claim.
    return this.db.transaction().execute(async (trx) => {
      const rows = await trx
        .with('locked', () => locked)
        .with('ranked', (db) =>
          db.selectFrom('locked').select((eb) => [
            'locked.id',
            'locked.subscription_id',
            eb.fn
              .agg<number>('row_number')
              .over((ob) =>
                ob
                  .partitionBy('locked.subscription_id')
                  .orderBy('locked.priority', 'desc')
                  .orderBy('locked.sequence', 'asc'),
              )
              .as('rn'),
          ]),
        )
        .updateTable('event_outbox')
        .set({ status: 'delivering', lease_owner: owner, lease_until: leaseUntil, updated_at: now })
        .where('id', 'in', (eb) =>
          eb
            .selectFrom('ranked')
            .select('ranked.id')
            .where('ranked.rn', '<=', countFor(this.dialect, 'ranked.subscription_id', room.of, room.default))
            .limit(limit),
        )
        .returning([...CLAIMED])
        .execute();
      return this.leased(trx, rows);
    });
  }

  /**
   * The claim on SQLite (one writer: the transaction is atomic as it is). Each subscription's next rows are
   * read from its own range of the `(subscription_id, status, priority, sequence)` index, exactly as many as
   * it has room for; the first `limit` of those in priority order are leased by id. Same rows as the ranked
   * statement PostgreSQL runs, without reading and ranking every subscription's window of candidates.
   */
  private async claimByLane(
    kind: 'due' | 'expired',
    owner: string,
    leaseUntil: string,
    now: string,
    limit: number,
    room: { default: number; of: ReadonlyMap<string, number> },
    filter: ClaimFilter,
    subscriptionId?: string,
  ): Promise<ClaimedDelivery[]> {
    return this.bookkeeping(async (trx) => {
      const subscriptions =
        subscriptionId !== undefined ? [subscriptionId] : await claimableSubscriptions(trx, filter);
      const candidates: { id: string; priority: number; sequence: number }[] = [];
      for (const id of subscriptions) {
        const n = room.of.get(id) ?? room.default;
        if (n <= 0) continue;
        const { rows } = await trx.executeQuery<{ id: string; priority: number; sequence: number }>(
          CompiledQuery.raw(LANE_CANDIDATES[kind], [id, now, n]),
        );
        for (const r of rows) candidates.push(r);
      }
      if (candidates.length === 0) return [];
      candidates.sort(deliveryOrder);
      const ids = candidates.slice(0, limit).map((c) => c.id);
      const { rows } = await trx.executeQuery<ClaimedDelivery>(
        CompiledQuery.raw(LEASE_BY_ID[kind], [owner, leaseUntil, now, JSON.stringify(ids), now]),
      );
      return this.leased(trx, rows);
    });
  }

  /** The rows a claim leased, in claim order; their events move `emitted` → `processing` in the same commit. */
  private async leased(trx: Transaction<Tables>, rows: ClaimedDelivery[]): Promise<ClaimedDelivery[]> {
    for (const r of rows) r.sequence = Number(r.sequence);
    await markProcessing(
      trx,
      this.dialect,
      rows.filter((r) => r.replay_id === null).map((r) => r.event_id),
    );
    return rows.sort(deliveryOrder);
  }

  /**
   * How many of a subscription's due pending rows (at most `limit`) rank above `priority`: deliveries that
   * should go before the lowest of those it holds waiting.
   */
  async dueAbove(subscriptionId: string, priority: number, now: string, limit: number): Promise<number> {
    const rows = await this.db
      .selectFrom('event_outbox')
      .select('id')
      .where('subscription_id', '=', subscriptionId)
      .where('status', '=', 'pending')
      .where('priority', '>', priority)
      .where('next_attempt_at', '<=', now)
      .limit(limit)
      .execute();
    return rows.length;
  }

  /** How much a batching subscription has waiting: due rows, the oldest due time, whether any is a retry. */
  async batchBacklog(
    subscriptionId: string,
    now: string,
  ): Promise<{ due: number; oldest: string | null; retrying: boolean }> {
    const row = await this.db
      .selectFrom('event_outbox')
      .select((eb) => [
        eb.fn.countAll<number>().as('n'),
        eb.fn.min('next_attempt_at').as('oldest'),
        eb.fn.max('attempts').as('tries'),
      ])
      .where('subscription_id', '=', subscriptionId)
      .where((eb) =>
        eb.or([
          eb.and([eb('status', '=', 'pending'), eb('next_attempt_at', '<=', now)]),
          eb.and([eb('status', '=', 'delivering'), eb('lease_until', '<', now)]),
        ]),
      )
      .executeTakeFirst();
    return {
      due: Number(row?.n ?? 0),
      oldest: (row?.oldest as string | null | undefined) ?? null,
      retrying: Number(row?.tries ?? 0) > 0,
    };
  }

  /** Gives rows back untried (shutdown, more than this instance can send soon): due again at once. */
  async release(owner: string, ids: readonly string[], now: string): Promise<void> {
    for (let i = 0; i < ids.length; i += CHUNK) {
      await this.db
        .updateTable('event_outbox')
        .set({
          status: 'pending',
          lease_owner: null,
          lease_until: null,
          next_attempt_at: now,
          updated_at: now,
        })
        .where(idIn(this.dialect, 'id', ids.slice(i, i + CHUNK)))
        .where('lease_owner', '=', owner)
        .where('status', '=', 'delivering')
        .execute();
    }
  }

  /** Drops rows this instance holds and will not send (their replay was cancelled): final, never sent. */
  async dropHeld(owner: string, ids: readonly string[], reason: string, now: string): Promise<void> {
    for (let i = 0; i < ids.length; i += CHUNK) {
      await this.db
        .updateTable('event_outbox')
        .set({ status: 'dropped', lease_owner: null, lease_until: null, last_error: reason, updated_at: now })
        .where(idIn(this.dialect, 'id', ids.slice(i, i + CHUNK)))
        .where('lease_owner', '=', owner)
        .where('status', '=', 'delivering')
        .execute();
    }
  }

  /** Extends the leases of the rows this instance still holds (only those: a row it lost is not kept alive). */
  async renew(owner: string, ids: readonly string[], leaseUntil: string): Promise<number> {
    let renewed = 0;
    for (let i = 0; i < ids.length; i += CHUNK) {
      const result = await this.db
        .updateTable('event_outbox')
        .set({ lease_until: leaseUntil })
        .where(idIn(this.dialect, 'id', ids.slice(i, i + CHUNK)))
        .where('lease_owner', '=', owner)
        .where('status', '=', 'delivering')
        .executeTakeFirst();
      renewed += Number(result.numUpdatedRows);
    }
    return renewed;
  }

  /** The events of claimed rows, ready to send (data decrypted); purged events are missing from the map. */
  async events(ids: readonly string[]): Promise<Map<string, DeliverableEvent>> {
    const out = new Map<string, DeliverableEvent>();
    const rows = await runSqlForIds<EventsTable>(this.db, this.dialect, SQL[this.dialect].events, ids);
    for (const r of rows) {
      out.set(r.event_id, {
        event_id: r.event_id,
        event_type: r.event_type,
        source: r.source,
        timestamp: r.timestamp,
        priority: r.priority,
        sequence: Number(r.sequence),
        dataJson: r.data_encrypted === 1 ? this.cipher.open(r.data) : r.data,
        correlation_id: r.correlation_id,
        expires_at: r.expires_at,
        traceparent: r.traceparent,
        tracestate: r.tracestate,
      });
    }
    return out;
  }

  /**
   * `processing` → `processed` | `failed` for those of these events whose own deliveries (not replays) are
   * all settled. Run after the settling writes committed: with several instances, whichever commits last
   * sees every other's rows settled, so an event is never left `processing`.
   */
  async finalizeEvents(eventIds: readonly string[], executor: Kysely<Tables> = this.db): Promise<void> {
    await settleEvents(executor, this.dialect, eventIds);
  }

  /**
   * Drops pending deliveries of expired events (ones no instance claims, e.g. of a paused subscription),
   * with a `delivery_dropped` audit entry each in the same transaction; answers the rows dropped.
   */
  async dropExpired(now: string, limit: number, actor: string): Promise<ClaimedDelivery[]> {
    return this.db.transaction().execute(async (trx) => {
      const rows = await trx
        .selectFrom('event_outbox')
        .innerJoin('events', 'events.event_id', 'event_outbox.event_id')
        .select(CLAIMED.map((c) => `event_outbox.${c}` as const))
        .where('event_outbox.status', '=', 'pending')
        .where('events.expires_at', 'is not', null)
        .where('events.expires_at', '<=', now)
        .limit(limit)
        .execute();
      if (rows.length === 0) return [];
      const dropped = await trx
        .updateTable('event_outbox')
        .set({ status: 'dropped', last_error: 'event expired', updated_at: now })
        .where(
          'id',
          'in',
          rows.map((r) => r.id),
        )
        .where('status', '=', 'pending')
        .returning(['id'])
        .execute();
      const ids = new Set(dropped.map((r) => r.id));
      const gone = rows.filter((r) => ids.has(r.id));
      for (const r of gone) r.sequence = Number(r.sequence);
      if (gone.length > 0) {
        // The same entry as the dispatcher's own drop of a claimed row (DeliveryRecorder).
        await trx
          .insertInto('event_audit')
          .values(gone.map((delivery) => auditRow(expiredDrop(delivery, actor, now, actor))))
          .execute();
      }
      return gone;
    });
  }
}

/** SQLite: the active subscriptions this instance delivers for, less the excluded ones. */
async function claimableSubscriptions(trx: Kysely<Tables>, filter: ClaimFilter): Promise<string[]> {
  const excluded = new Set(filter.exclude);
  const { rows } = await trx.executeQuery<{ id: string }>(
    CompiledQuery.raw(CLAIMABLE_SUBSCRIPTIONS, [JSON.stringify(filter.pluginSubscriptions)]),
  );
  return rows.map((r) => r.id).filter((id) => !excluded.has(id));
}

/** `emitted` → `processing` for events whose deliveries started. */
async function markProcessing(
  trx: Kysely<Tables>,
  dialect: Dialect,
  eventIds: readonly string[],
): Promise<void> {
  await runSqlForIds(trx, dialect, SQL[dialect].markProcessing, eventIds);
}
