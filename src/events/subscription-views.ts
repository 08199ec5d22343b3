import { SECRET_MASK } from './subscription-service.js';
import type { SubscriptionRow } from './subscription-store.js';

/** The API form of a subscription; `secret` is the full secret only in the creation response. */
export function subscriptionView(row: SubscriptionRow, secret?: string) {
  const finished = row.events_delivered + row.events_failed;
  return {
    subscription_id: row.id,
    name: row.name,
    status: row.status as 'active' | 'paused' | 'error',
    enabled: row.status !== 'paused',
    owner_id: row.owner_id,
    event_patterns: JSON.parse(row.event_patterns) as string[],
    filters: JSON.parse(row.filters) as Record<string, unknown>,
    delivery_method: row.delivery_method,
    webhook_url: row.webhook_url,
    webhook_config:
      row.webhook_url === null
        ? null
        : {
            url: row.webhook_url,
            secret: secret ?? SECRET_MASK,
            retry_policy: JSON.parse(row.retry_policy) as {
              max_attempts: number;
              retry_delay_seconds: number;
              exponential_backoff: boolean;
            },
            timeout_seconds: row.timeout_seconds,
            rate_limit: row.rate_limit === null ? null : Number(row.rate_limit),
          },
    batch_config: JSON.parse(row.batch_config) as {
      enabled: boolean;
      max_batch_size: number;
      max_wait_time_seconds: number;
    },
    plugin_id: row.plugin_id,
    events_delivered: row.events_delivered,
    events_failed: row.events_failed,
    success_rate: finished === 0 ? 1 : Math.round((row.events_delivered / finished) * 10_000) / 10_000,
    last_delivery: row.last_delivery,
    last_error: row.last_error,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function webhookView(row: SubscriptionRow, secret?: string) {
  return {
    id: row.id,
    url: row.webhook_url ?? '',
    events: JSON.parse(row.event_patterns) as string[],
    secret: secret ?? SECRET_MASK,
    status: row.status,
    events_delivered: row.events_delivered,
    last_delivery: row.last_delivery,
    created_at: row.created_at,
  };
}
