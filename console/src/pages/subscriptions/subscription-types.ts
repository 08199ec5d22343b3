export interface Subscription {
  subscription_id: string;
  name: string;
  status: string;
  enabled?: boolean;
  event_patterns: string[];
  delivery_method: string;
  webhook_url: string | null;
  webhook_config?: {
    url: string;
    secret: string;
    retry_policy?: { max_attempts: number; retry_delay_seconds: number; exponential_backoff: boolean };
    timeout_seconds?: number;
    /** Deliveries per second at most; null: no limit. */
    rate_limit?: number | null;
  } | null;
  events_delivered: number;
  events_failed?: number;
  success_rate?: number;
  last_delivery: string | null;
  last_error?: string | null;
  created_at: string;
}

/** One entry of `GET /events/subscriptions/{id}/deliveries`: an event queued for the subscription. */
export interface SubscriptionDelivery {
  delivery_id: string;
  event_id: string;
  event_type: string;
  /** pending, delivering, delivered, failed or dropped. */
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  last_error: string | null;
  replay_id: string | null;
  response_status: number | null;
  latency_ms: number | null;
  last_attempt_at: string | null;
  created_at: string;
  updated_at: string;
}

/** One entry of `GET /events/subscriptions/{id}/deliveries/{delivery_id}/attempts`, oldest first. */
export interface DeliveryAttempt {
  attempt: number;
  /** delivered or failed. */
  status: string;
  attempted_at: string;
  response_status: number | null;
  latency_ms: number | null;
  error: string | null;
  next_attempt_at: string | null;
}
