import type { Kysely, Selectable } from 'kysely';
import { retryOnConflict } from '../storage/retry-on-conflict.js';
import type { Tables } from '../storage/tables.js';
import type { SubscriptionsTable } from './event-tables.js';

export type SubscriptionRow = Selectable<SubscriptionsTable>;

export interface SubscriptionListFilter {
  ownerId?: string | undefined;
  status?: string | undefined;
  deliveryMethod?: string | undefined;
  /** Subscriptions that list this exact pattern. */
  eventPattern?: string | undefined;
}

/** Storage of durable subscriptions (webhook and plugin). */
export class SubscriptionStore {
  constructor(private readonly db: Kysely<Tables>) {}

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

  async countForOwner(ownerId: string): Promise<number> {
    const row = await this.db
      .selectFrom('subscriptions')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('owner_id', '=', ownerId)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  async update(id: string, changes: Partial<SubscriptionRow>): Promise<void> {
    await this.db.updateTable('subscriptions').set(changes).where('id', '=', id).execute();
  }

  async delete(id: string): Promise<boolean> {
    // The cascade to the outbox can meet a delivery being recorded for the same rows.
    const result = await retryOnConflict(() =>
      this.db.deleteFrom('subscriptions').where('id', '=', id).executeTakeFirst(),
    );
    return Number(result.numDeletedRows) > 0;
  }

  /** Active subscriptions with whether their owner is an admin (who may receive confidential events). */
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
