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
  } | null;
  events_delivered: number;
  events_failed?: number;
  success_rate?: number;
  last_delivery: string | null;
  last_error?: string | null;
  created_at: string;
}
