import type { Static } from '@sinclair/typebox';
import type { ExpressionBuilder, Kysely } from 'kysely';
import type { Tables } from '../storage/tables.js';
import type {
  DeliveryAttempt,
  DeliveryStatus,
  SubscriptionDelivery,
} from './subscription-delivery-schemas.js';

export type SubscriptionDeliveryItem = Static<typeof SubscriptionDelivery>;
export type DeliveryAttemptItem = Static<typeof DeliveryAttempt>;

/** A delivery makes at most retry_policy.max_attempts (20) attempts; the bound keeps any older row in check. */
const ATTEMPTS_READ = 100;

export interface SubscriptionDeliveryQuery {
  status?: DeliveryStatus | undefined;
  page: number;
  perPage: number;
}

/**
 * The deliveries of one subscription, newest first: its `event_outbox` rows with their event's type and the
 * last of their `delivery_attempts`, in one query for the page and one for the count.
 */
export class SubscriptionDeliveryStore {
  /** @param reads where a delivery's attempts are read (Database.reads: off the server's thread on SQLite) */
  constructor(
    private readonly db: Kysely<Tables>,
    private readonly reads: Kysely<Tables>,
  ) {}

  async page(
    subscriptionId: string,
    q: SubscriptionDeliveryQuery,
  ): Promise<{ items: SubscriptionDeliveryItem[]; total: number }> {
    const mine = (eb: ExpressionBuilder<Tables & { o: Tables['event_outbox'] }, 'o'>) =>
      q.status === undefined
        ? eb('o.subscription_id', '=', subscriptionId)
        : eb.and([eb('o.subscription_id', '=', subscriptionId), eb('o.status', '=', q.status)]);
    const [rows, count] = await Promise.all([
      this.db
        .selectFrom('event_outbox as o')
        .innerJoin('events as e', 'e.event_id', 'o.event_id')
        .leftJoin('delivery_attempts as a', (join) =>
          join.on((eb) =>
            eb(
              'a.id',
              '=',
              eb
                .selectFrom('delivery_attempts as d')
                .select('d.id')
                // delivery_attempts is indexed by event, not by outbox row: the event narrows it to a few rows.
                .whereRef('d.event_id', '=', 'o.event_id')
                .whereRef('d.outbox_id', '=', 'o.id')
                .orderBy('d.attempt', 'desc')
                .orderBy('d.created_at', 'desc')
                .orderBy('d.id', 'desc')
                .limit(1),
            ),
          ),
        )
        .select([
          'o.id',
          'o.event_id',
          'e.event_type',
          'o.status',
          'o.attempts',
          'o.next_attempt_at',
          'o.last_error',
          'o.replay_id',
          'o.created_at',
          'o.updated_at',
          'a.response_status',
          'a.latency_ms',
          'a.created_at as last_attempt_at',
        ])
        .where(mine)
        // Rows of one emit share created_at; the event's sequence orders them, the id makes pages stable.
        .orderBy('o.created_at', 'desc')
        .orderBy('o.sequence', 'desc')
        .orderBy('o.id', 'desc')
        .limit(q.perPage)
        .offset((q.page - 1) * q.perPage)
        .execute(),
      this.db
        .selectFrom('event_outbox as o')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where(mine)
        .executeTakeFirst(),
    ]);
    return {
      items: rows.map((r) => ({
        delivery_id: r.id,
        event_id: r.event_id,
        event_type: r.event_type,
        status: r.status as DeliveryStatus,
        attempts: r.attempts,
        next_attempt_at: r.status === 'pending' ? r.next_attempt_at : null,
        last_error: r.last_error,
        replay_id: r.replay_id,
        response_status: r.response_status,
        latency_ms: r.latency_ms === null ? null : Number(r.latency_ms),
        last_attempt_at: r.last_attempt_at,
        created_at: r.created_at,
        updated_at: r.updated_at,
      })),
      total: Number(count?.n ?? 0),
    };
  }

  /**
   * Every attempt of one delivery of the subscription, oldest first; undefined when the subscription has no
   * such delivery. Read by the delivery's event (the index of delivery_attempts), whose attempts grow with its
   * subscribers: on the reader threads.
   */
  async attempts(subscriptionId: string, deliveryId: string): Promise<DeliveryAttemptItem[] | undefined> {
    const delivery = await this.db
      .selectFrom('event_outbox')
      .select(['id', 'event_id'])
      .where('id', '=', deliveryId)
      .where('subscription_id', '=', subscriptionId)
      .executeTakeFirst();
    if (!delivery) return undefined;
    const rows = await this.reads
      .selectFrom('delivery_attempts')
      .select([
        'attempt',
        'status',
        'created_at',
        'response_status',
        'latency_ms',
        'error',
        'next_attempt_at',
      ])
      .where('event_id', '=', delivery.event_id)
      .where('outbox_id', '=', delivery.id)
      .orderBy('attempt', 'asc')
      .orderBy('created_at', 'asc')
      .orderBy('id', 'asc')
      .limit(ATTEMPTS_READ)
      .execute();
    return rows.map((r) => ({
      attempt: r.attempt,
      status: r.status,
      attempted_at: r.created_at,
      response_status: r.response_status,
      latency_ms: r.latency_ms === null ? null : Number(r.latency_ms),
      error: r.error,
      next_attempt_at: r.next_attempt_at,
    }));
  }
}
