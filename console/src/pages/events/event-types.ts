export interface EventItem {
  event_id: string;
  event_type: string;
  source: string;
  timestamp: string;
  priority?: number;
  status?: string;
  subscriber_count?: number;
  sequence?: number;
  data?: unknown;
  data_preview?: unknown;
  metadata?: Record<string, unknown>;
  delivery_info?: {
    total_subscribers: number;
    successful_deliveries: number;
    failed_deliveries: number;
    delivery_attempts: {
      subscriber: string;
      status: string;
      delivery_time: string;
      processing_time_ms?: number;
      attempt?: number;
      response_status?: number;
      error?: string;
    }[];
  };
}
