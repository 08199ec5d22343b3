import type { Kysely, Selectable } from 'kysely';
import type { Dialect } from '../storage/database.js';
import { retryOnConflict } from '../storage/retry-on-conflict.js';
import type { Tables } from '../storage/tables.js';
import type { SubscriptionsTable } from './event-tables.js';
import { settleEvents } from './settle-events.js';

export type SubscriptionRow = Selectable<SubscriptionsTable>;

export interface SubscriptionListFilter {
  ownerId?: string | undefined;
  status?: string | undefined;
  deliveryMethod?: string | undefined;
  /** Subscriptions that list this exact pattern. */
  eventPattern?: string | undefined;
}

/** Which of these subscriptions still exist (one may be deleted while work that named it is under way). */
export async function existingSubscriptionIds(
  db: Kysely<Tables>,
  ids: Iterable<string>,
): Promise<Set<string>> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return new Set();
  const rows = await db.selectFrom('subscriptions').select('id').where('id', 'in', unique).execute();
  return new Set(rows.map((r) => r.id));
}

/** Storage of durable subscriptions (webhook and plugin). */
export class SubscriptionStore {
  constructor(
    private readonly db: Kysely<Tables>,
    private readonly dialect: Dialect,
  ) {}

  async insert(row: SubscriptionRow): Promise<void> {
    await this.db.insertInto('subscriptions').values(row).execute();
  }

  async findById(id: string): Promise<SubscriptionRow | undefined> {
    return this.db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async list(filter: SubscriptionListFilter): Promise<SubscriptionRow[]> {
    let q = this.db.selectFrom('subscriptions').selectAll();
    if (filter.ownerId !== undefined) q = q.where('owner_id', '=', filter.ownerId);
    if (filter.status !== undefined) q = q.where('status', '=', filter.status);
    if (filter.deliveryMethod !== undefined) q = q.where('delivery_method', '=', filter.deliveryMethod);
    const rows = await q.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
    const pattern = filter.eventPattern;
    return pattern === undefined
      ? rows
      : rows.filter((r) => (JSON.parse(r.event_patterns) as string[]).includes(pattern));
  }

  /**
   * Stores a subscription unless its owner already has `limit`; answers whether it was stored. Creations that
   * arrive together are counted one after another: PostgreSQL locks the owner's user row first (on every
   * instance), and SQLite's one connection runs the transaction whole.
   */
  async insertWithinLimit(row: SubscriptionRow, limit: number): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      if (this.dialect === 'postgres') {
        // NO KEY UPDATE: creations for the owner wait for each other, rows that only refer to the owner (its
        // sessions, API keys) do not.
        await trx.selectFrom('users').select('id').where('id', '=', row.owner_id).forNoKeyUpdate().execute();
      }
      const count = await trx
        .selectFrom('subscriptions')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('owner_id', '=', row.owner_id)
        .executeTakeFirst();
      if (Number(count?.n ?? 0) >= limit) return false;
      await trx.insertInto('subscriptions').values(row).execute();
      return true;
    });
  }

  async update(id: string, changes: Partial<SubscriptionRow>): Promise<void> {
    await this.db.updateTable('subscriptions').set(changes).where('id', '=', id).execute();
  }

  /**
   * Deletes a subscription with its outbox rows (the foreign key cascades). Events left waiting only for those
   * rows settle in the same transaction, as if the deleted deliveries had never been queued (`settleEvents`).
   */
  async delete(id: string): Promise<boolean> {
    // The cascade to the outbox can meet a delivery being recorded for the same rows.
    const { deleted, waiting } = await retryOnConflict(() =>
      this.db.transaction().execute(async (trx) => {
        if (this.dialect === 'postgres') {
          // Emits referring to it (their outbox rows) wait from here, so none is deleted without being seen.
          await trx.selectFrom('subscriptions').select('id').where('id', '=', id).forUpdate().execute();
        }
        const open = await trx
          .selectFrom('event_outbox')
          .select('event_id')
          .distinct()
          .where('subscription_id', '=', id)
          .where('status', 'in', ['pending', 'delivering'])
          .where('replay_id', 'is', null)
          .execute();
        const result = await trx.deleteFrom('subscriptions').where('id', '=', id).executeTakeFirst();
        const eventIds = open.map((r) => r.event_id);
        await settleEvents(trx, this.dialect, eventIds);
        return { deleted: Number(result.numDeletedRows) > 0, waiting: eventIds };
      }),
    );
    // PostgreSQL: a delivery of another subscription recorded meanwhile may have seen these rows still open
    // and left its event to whoever commits last (see settleEvents).
    if (this.dialect === 'postgres' && waiting.length > 0) await settleEvents(this.db, this.dialect, waiting);
    return deleted;
  }

  /** Active subscriptions with their owner's roles, which decide what they receive (`subscriptionReader`). */
  async listActive(): Promise<(SubscriptionRow & { owner_roles: string | null })[]> {
    return this.db
      .selectFrom('subscriptions')
      .leftJoin('users', 'users.id', 'subscriptions.owner_id')
      .selectAll('subscriptions')
      .select('users.roles as owner_roles')
      .where('subscriptions.status', '=', 'active')
      .execute();
  }
}
