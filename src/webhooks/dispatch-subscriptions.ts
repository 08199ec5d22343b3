import { type Kysely, sql } from 'kysely';
import type { EventCipher } from '../events/event-cipher.js';
import type { Tables } from '../storage/tables.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry-schedule.js';
import type { PreviousSecret } from './webhook-signature.js';

/** An active subscription as the dispatcher uses it: target, decrypted secret, policies. */
export interface DispatchSubscription {
  id: string;
  method: 'webhook' | 'plugin';
  url: string | null;
  /** Null when the stored secret cannot be decrypted (a changed `events.encryption_key`). */
  secret: string | null;
  /** The secret a rotation replaced, signing too until it expires; null when none (or undecryptable). */
  previous: PreviousSecret | null;
  retry: RetryPolicy;
  timeoutMs: number;
  batch: { maxSize: number; maxWaitMs: number } | undefined;
  /** `webhook_config.rate_limit`: deliveries per second at most (SubscriptionThrottle); undefined: no limit. */
  rateLimit: number | undefined;
}

// How often the table is asked whether anything changed; the answer is one aggregate row.
const CHECK_MS = 250;

/**
 * The active subscriptions, reloaded when the table changes (its row count or latest `updated_at` moves), so
 * a change made on any instance reaches this one within a quarter of a second without a message.
 */
export class DispatchSubscriptions {
  private byId = new Map<string, DispatchSubscription>();
  private signature = '';
  private checkedAt = 0;
  private loading: Promise<void> | undefined;
  // Bumped by invalidate(); what was loaded is current while loadedGeneration equals it.
  private generation = 0;
  private loadedGeneration = 0;

  constructor(
    private readonly db: Kysely<Tables>,
    private readonly cipher: EventCipher,
  ) {}

  get(id: string): DispatchSubscription | undefined {
    return this.byId.get(id);
  }

  /** How many active subscriptions there are. */
  get size(): number {
    return this.byId.size;
  }

  /** Whether any active subscription delivers by webhook. */
  hasWebhooks(): boolean {
    for (const s of this.byId.values()) if (s.method === 'webhook') return true;
    return false;
  }

  /** Active webhook subscriptions with batching on. */
  batching(): DispatchSubscription[] {
    return [...this.byId.values()].filter((s) => s.batch !== undefined);
  }

  /**
   * Marks what is held as out of date (a subscription changed, here or on another instance): the next
   * `refresh` reloads at once, so a delivery made after an update answered uses the updated target and secret.
   */
  invalidate(): void {
    this.generation += 1;
  }

  async refresh(force = false): Promise<void> {
    while (this.loading !== undefined) {
      await this.loading;
      if (this.loadedGeneration === this.generation) return;
    }
    const stale = this.loadedGeneration !== this.generation;
    if (!force && !stale && Date.now() - this.checkedAt < CHECK_MS) return;
    const generation = this.generation;
    this.loading = this.load(force || stale)
      .then(() => {
        this.loadedGeneration = generation;
      })
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }

  private async load(force: boolean): Promise<void> {
    this.checkedAt = Date.now();
    const head = await this.db
      .selectFrom('subscriptions')
      .select([(eb) => eb.fn.countAll<number>().as('n'), sql<string | null>`max(updated_at)`.as('latest')])
      .executeTakeFirst();
    const signature = `${Number(head?.n ?? 0)}:${head?.latest ?? ''}`;
    if (!force && signature === this.signature) return;
    const rows = await this.db
      .selectFrom('subscriptions')
      .selectAll()
      .where('status', '=', 'active')
      .execute();
    const next = new Map<string, DispatchSubscription>();
    for (const row of rows) {
      const batch = parse<{ enabled?: boolean; max_batch_size?: number; max_wait_time_seconds?: number }>(
        row.batch_config,
        {},
      );
      next.set(row.id, {
        id: row.id,
        method: row.delivery_method === 'plugin' ? 'plugin' : 'webhook',
        url: row.webhook_url,
        secret: this.openSecret(row.webhook_secret),
        previous: this.previousOf(row.previous_secret, row.previous_secret_expires_at),
        retry: { ...DEFAULT_RETRY_POLICY, ...parse<Partial<RetryPolicy>>(row.retry_policy, {}) },
        timeoutMs: Math.max(1, Number(row.timeout_seconds)) * 1000,
        batch:
          batch.enabled === true && row.delivery_method !== 'plugin'
            ? {
                maxSize: Math.max(1, batch.max_batch_size ?? 100),
                maxWaitMs: Math.max(0, batch.max_wait_time_seconds ?? 5) * 1000,
              }
            : undefined,
        rateLimit:
          row.rate_limit === null || row.delivery_method === 'plugin' ? undefined : Number(row.rate_limit),
      });
    }
    this.byId = next;
    this.signature = signature;
  }

  private previousOf(sealed: string | null, expiresAt: string | null): PreviousSecret | null {
    const secret = this.openSecret(sealed);
    const until = expiresAt === null ? Number.NaN : Date.parse(expiresAt);
    return secret === null || Number.isNaN(until) ? null : { secret, expiresAt: until };
  }

  private openSecret(sealed: string | null): string | null {
    if (sealed === null) return null;
    try {
      return this.cipher.open(sealed);
    } catch {
      return null;
    }
  }
}

function parse<T>(text: string, fallback: T): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    return fallback;
  }
}
