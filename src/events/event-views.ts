import { extend } from '../kernel/extend.js';
import { traceMetadata } from '../tracing/trace-metadata.js';
import type { EventCipher } from './event-cipher.js';
import { decodeEventData } from './event-data.js';
import type { EventRow, EventStore } from './event-store.js';
import type { EventsTable } from './event-tables.js';
import { cutText } from './input-shape.js';

export type EventStatus = 'emitted' | 'processing' | 'processed' | 'failed';

const PREVIEW_KEYS = 10;
const PREVIEW_STRING = 120;

/** What the emit answers with (§4.3). */
export function eventSummary(row: EventsTable) {
  return {
    event_id: row.event_id,
    event_type: row.event_type,
    source: row.source,
    timestamp: row.timestamp,
    priority: row.priority,
    status: row.status as EventStatus,
    subscriber_count: row.subscriber_count,
  };
}

export interface StoredMetadata {
  correlation_id: string;
  request_id: string;
  user_agent: string;
  ip_address: string;
  [key: string]: unknown;
}

function readMetadata(row: EventRow) {
  const stored = JSON.parse(row.metadata) as StoredMetadata;
  const read = extend(stored, { processing_time_ms: row.processing_time_ms });
  return row.traceparent === null ? read : extend(read, traceMetadata(row.traceparent, row.tracestate));
}

function common(row: EventRow) {
  return extend(eventSummary(row), {
    sequence: Number(row.sequence),
    security_level: row.security_level as 'public' | 'internal' | 'confidential',
    expires_at: row.expires_at,
    metadata: readMetadata(row),
  });
}

/**
 * A shallow, bounded look at `data` for lists: the first keys, long strings cut, nested values summarised.
 * Confidential events have none; client-encrypted data shows only that it is encrypted and how.
 */
export function dataPreview(row: EventRow, cipher: EventCipher): Record<string, unknown> | undefined {
  if (row.security_level === 'confidential') return undefined;
  const data = decodeEventData(row, cipher);
  if (data['encrypted'] === true) return { encrypted: true, encryption_method: data['encryption_method'] };
  const preview: Record<string, unknown> = {};
  const keys = Object.keys(data);
  for (const key of keys.slice(0, PREVIEW_KEYS)) {
    const value = data[key];
    if (typeof value === 'string')
      preview[key] = value.length > PREVIEW_STRING ? `${cutText(value, PREVIEW_STRING)}…` : value;
    else if (Array.isArray(value)) preview[key] = `[${value.length} items]`;
    else if (value !== null && typeof value === 'object') preview[key] = '{…}';
    else preview[key] = value;
  }
  if (keys.length > PREVIEW_KEYS) preview['…'] = `${keys.length - PREVIEW_KEYS} more keys`;
  return preview;
}

export function eventListItem(row: EventRow, cipher: EventCipher) {
  const preview = dataPreview(row, cipher);
  const item: ReturnType<typeof common> & { data_preview?: Record<string, unknown> } = common(row);
  if (preview) item.data_preview = preview;
  return item;
}

export function eventDetail(
  row: EventRow,
  cipher: EventCipher,
  deliveries: Awaited<ReturnType<EventStore['deliveries']>>,
) {
  const { counts, attempts } = deliveries;
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  return extend(common(row), {
    data: decodeEventData(row, cipher),
    delivery_info: {
      total_subscribers: total,
      successful_deliveries: counts['delivered'] ?? 0,
      failed_deliveries: counts['failed'] ?? 0,
      pending_deliveries: (counts['pending'] ?? 0) + (counts['delivering'] ?? 0),
      delivery_attempts: attempts.map((a) => ({
        subscriber: a.subscription_id,
        status: a.status,
        attempt: a.attempt,
        delivery_time: a.created_at,
        processing_time_ms: a.latency_ms ?? 0,
        response_status: a.response_status,
        error: a.error,
      })),
    },
  });
}
