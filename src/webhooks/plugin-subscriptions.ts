import type { EventSelector } from '../events/event-filters.js';
import { isValidPattern } from '../events/pattern-matcher.js';
import type { SubscriptionIndex } from '../events/subscription-index.js';
import type { SubscriptionRow, SubscriptionStore } from '../events/subscription-store.js';
import { AppError } from '../http/app-error.js';
import { newId, nowIso } from '../kernel/new-id.js';
import type { PluginConsumer, PluginConsumers } from './plugin-consumers.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry-schedule.js';

export interface PluginSubscriptionOptions {
  /** Unique per plugin: subscribing again under the same name reuses (and updates) the subscription. */
  name: string;
  eventPatterns: readonly string[];
  filters?: Omit<EventSelector, 'patterns'> | undefined;
  retryPolicy?: Partial<RetryPolicy> | undefined;
  timeoutSeconds?: number | undefined;
}

/**
 * Durable subscriptions of plugins (`delivery_method: plugin`). They are fed from the same outbox as
 * webhooks, with the same retries and attempt records; the consumer runs in this process.
 *
 * @example
 * ```ts
 * const { subscriptionId, unsubscribe } = await pluginSubscriptions.subscribe(
 *   'search',
 *   { name: 'index-users', eventPatterns: ['user.*'] },
 *   async ({ event }) => searchIndex.put(event.data),
 * );
 * ```
 */
export class PluginSubscriptions {
  constructor(
    private readonly deps: {
      store: SubscriptionStore;
      index: SubscriptionIndex;
      consumers: PluginConsumers;
      defaultTimeoutSeconds: () => number;
    },
  ) {}

  /** Creates or updates the plugin's subscription `name` and registers its consumer on this instance. */
  async subscribe(
    pluginId: string,
    options: PluginSubscriptionOptions,
    consumer: PluginConsumer,
  ): Promise<{ subscriptionId: string; unsubscribe: () => void }> {
    const bad = options.eventPatterns.find((p) => !isValidPattern(p));
    if (bad !== undefined || options.eventPatterns.length === 0) {
      throw new AppError('VALIDATION_ERROR', `'${bad ?? ''}' is not a valid event pattern`, {
        details: { field: 'event_patterns', reason: 'invalid pattern', value: bad ?? null },
      });
    }
    const row = await this.upsert(pluginId, options);
    const unsubscribe = this.deps.consumers.register(row.id, consumer, `plugin:${pluginId}`);
    return { subscriptionId: row.id, unsubscribe };
  }

  /** Deletes the plugin's subscriptions (uninstall): their waiting deliveries go with them. */
  async removeAll(pluginId: string): Promise<number> {
    const rows = await this.deps.store.list({ deliveryMethod: 'plugin' });
    const own = rows.filter((r) => r.plugin_id === pluginId);
    for (const r of own) await this.deps.store.delete(r.id);
    if (own.length > 0) await this.deps.index.changed();
    return own.length;
  }

  private async upsert(pluginId: string, options: PluginSubscriptionOptions): Promise<SubscriptionRow> {
    const now = nowIso();
    const existing = (await this.deps.store.list({ deliveryMethod: 'plugin' })).find(
      (r) => r.plugin_id === pluginId && r.name === options.name,
    );
    const fields = {
      event_patterns: JSON.stringify(options.eventPatterns),
      filters: JSON.stringify({
        ...(options.filters?.source ? { source: options.filters.source } : {}),
        ...(options.filters?.priority ? { priority: options.filters.priority } : {}),
        ...(options.filters?.dataFilters ? { data_filters: options.filters.dataFilters } : {}),
      }),
      retry_policy: JSON.stringify({ ...DEFAULT_RETRY_POLICY, ...(options.retryPolicy ?? {}) }),
      timeout_seconds: options.timeoutSeconds ?? this.deps.defaultTimeoutSeconds(),
    };
    if (existing) {
      const changed = (Object.keys(fields) as (keyof typeof fields)[]).some((k) => existing[k] !== fields[k]);
      if (!changed) return existing;
      await this.deps.store.update(existing.id, { ...fields, updated_at: now });
      await this.deps.index.changed();
      return { ...existing, ...fields, updated_at: now };
    }
    const row: SubscriptionRow = {
      id: newId('sub'),
      owner_id: `plugin:${pluginId}`,
      name: options.name,
      status: 'active',
      ...fields,
      delivery_method: 'plugin',
      webhook_url: null,
      webhook_secret: null,
      rate_limit: null,
      batch_config: JSON.stringify({ enabled: false, max_batch_size: 1, max_wait_time_seconds: 0 }),
      plugin_id: pluginId,
      reader_scopes: null,
      events_delivered: 0,
      events_failed: 0,
      consecutive_failures: 0,
      last_delivery: null,
      last_error: null,
      created_at: now,
      updated_at: now,
      previous_secret: null,
      previous_secret_expires_at: null,
      failing_since: null,
      inactive_since: null,
    };
    await this.deps.store.insert(row);
    await this.deps.index.changed();
    return row;
  }
}
