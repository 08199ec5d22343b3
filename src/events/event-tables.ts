import type { Generated } from 'kysely';

/**
 * Row types of the event system's tables. Same representation as every other table: ISO timestamps and
 * JSON as text, booleans as 0/1. `sequence` is the global, gap-free position of an event in commit order.
 */
export interface EventsTable {
  event_id: string;
  sequence: number;
  event_type: string;
  source: string;
  timestamp: string;
  priority: number;
  status: string;
  security_level: string;
  /** JSON text; for confidential events the AES-256-GCM envelope of that text (`data_encrypted` = 1). */
  data: string;
  data_encrypted: number;
  metadata: string;
  correlation_id: string;
  emitter_id: string | null;
  expires_at: string | null;
  subscriber_count: number;
  processing_time_ms: number;
  /**
   * The `event_emitted` entry of the audit trail: its actor (the emitting user's name, else the source) and
   * the durable subscriptions the event was written for. Null for events stored before migration 0011, whose
   * entry is an `event_audit` row.
   */
  emitted_by: string | null;
  durable_subscribers: number | null;
  /** The trace the event belongs to (migration 0024, docs/tracing.md); null for events stored before it. */
  traceparent: string | null;
  tracestate: string | null;
  /** The caller's Idempotency-Key, as `idempotencyRef` digests it (migration 0031); null without one. */
  idempotency_ref: string | null;
}

export interface SubscriptionsTable {
  id: string;
  owner_id: string;
  name: string;
  status: string;
  event_patterns: string;
  filters: string;
  delivery_method: string;
  webhook_url: string | null;
  /** Encrypted like confidential event data; the dispatcher decrypts it to sign deliveries. */
  webhook_secret: string | null;
  retry_policy: string;
  timeout_seconds: number;
  /** `webhook_config.rate_limit`: deliveries per second at most; null for no limit (migration 0023). */
  rate_limit: number | null;
  batch_config: string;
  /**
   * The scopes of the API key that created it (JSON array), which narrow what its owner's roles let it receive;
   * null when made with a session or by a plugin (migration 0018).
   */
  reader_scopes: string | null;
  plugin_id: string | null;
  events_delivered: number;
  events_failed: number;
  consecutive_failures: number;
  last_delivery: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
  /** The secret before the last rotation (sealed), still signing until `previous_secret_expires_at` (0022). */
  previous_secret: string | null;
  previous_secret_expires_at: string | null;
  /** When the first attempt failed after the last success; null while its target answers (0022). */
  failing_since: string | null;
  /** When it last stopped being active: paused, or put in error (0022). */
  inactive_since: string | null;
}

/** One row per (event, matching durable subscription), written in the emitting transaction. */
export interface EventOutboxTable {
  id: string;
  event_id: string;
  subscription_id: string;
  sequence: number;
  priority: number;
  /** pending | delivering | delivered | failed | dropped */
  status: string;
  attempts: number;
  next_attempt_at: string;
  lease_owner: string | null;
  lease_until: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
  /** Set on rows a replay queued (migration 0007); they do not count towards the event's own status. */
  replay_id: string | null;
}

export interface DeliveryAttemptsTable {
  id: string;
  outbox_id: string;
  event_id: string;
  subscription_id: string;
  attempt: number;
  status: string;
  response_status: number | null;
  latency_ms: number | null;
  error: string | null;
  created_at: string;
  /** The batch the attempt was part of, for batching subscriptions (migration 0007). */
  batch_id: string | null;
  /**
   * Who made the attempt (`webhook_dispatcher`, `plugin:<id>`), when the next one is due (set when the attempt
   * failed and another follows) and the replay it belonged to: the attempt is also its audit trail entry
   * (migration 0013). Null on attempts made before it.
   */
  actor: string | null;
  next_attempt_at: string | null;
  replay_id: string | null;
}

export interface EventAuditTable {
  id: string;
  event_id: string;
  timestamp: string;
  action: string;
  actor: string;
  details: string;
}

/** One row (`id` 1): the last sequence number handed out (migration 0012, see the event writer). */
export interface EventSequenceTable {
  id: number;
  last: number;
}

/**
 * Counts and processing-time sums of the stored events per minute (`span` `m`, bucket `YYYY-MM-DDTHH:MM`) and per
 * hour (`h`, `YYYY-MM-DDTHH`) and key (`event_rollup_keys`). Kept by triggers on `events` in the transaction of
 * every write and deletion (migrations 0015, 0033).
 */
export interface EventRollupsTable {
  span: 'm' | 'h';
  bucket: string;
  /** `event_rollup_keys.id`. */
  key_id: number;
  event_count: number;
  processing_ms: number;
}

/** A roll-up key: `emitter_key` is the emitter of a confidential event (whose readers depend on it), else ''. */
export interface EventRollupKeysTable {
  id: Generated<number>;
  event_type: string;
  source: string;
  security_level: string;
  emitter_key: string;
}

/**
 * From which hour (`minutes_from`, `YYYY-MM-DDTHH`) every minute roll-up is kept; older minutes were folded into
 * the hour rows by the compaction job (migration 0030). One row, named `minutes`.
 */
export interface EventRollupCompactionTable {
  name: string;
  minutes_from: string;
  updated_at: string;
}

/** How many events a purge has deleted, written with each deleted batch (migration 0015). */
export interface EventPurgeProgressTable {
  purge_id: string;
  events_purged: number;
  updated_at: string;
}

export interface EventTables {
  events: EventsTable;
  event_rollups: EventRollupsTable;
  event_rollup_keys: EventRollupKeysTable;
  event_rollup_compaction: EventRollupCompactionTable;
  event_purge_progress: EventPurgeProgressTable;
  event_sequence: EventSequenceTable;
  subscriptions: SubscriptionsTable;
  event_outbox: EventOutboxTable;
  delivery_attempts: DeliveryAttemptsTable;
  event_audit: EventAuditTable;
}

/**
 * The columns the event system's bulk inserts name (storage/insert-rows.ts), per table: the event writer's
 * events, outbox rows and audit entries, the delivery recorder's attempts and audit entries. A column left out
 * takes its default.
 */
export const INSERT_COLUMNS = {
  events: [
    'event_id',
    'sequence',
    'event_type',
    'source',
    'timestamp',
    'priority',
    'status',
    'security_level',
    'data',
    'data_encrypted',
    'metadata',
    'correlation_id',
    'emitter_id',
    'expires_at',
    'subscriber_count',
    'processing_time_ms',
    'emitted_by',
    'durable_subscribers',
    'traceparent',
    'tracestate',
    'idempotency_ref',
  ],
  event_outbox: [
    'id',
    'event_id',
    'subscription_id',
    'sequence',
    'priority',
    'status',
    'attempts',
    'next_attempt_at',
    'created_at',
    'updated_at',
  ],
  delivery_attempts: [
    'id',
    'outbox_id',
    'event_id',
    'subscription_id',
    'attempt',
    'status',
    'response_status',
    'latency_ms',
    'error',
    'created_at',
    'batch_id',
    'actor',
    'next_attempt_at',
    'replay_id',
  ],
  event_audit: ['id', 'event_id', 'timestamp', 'action', 'actor', 'details'],
} as const satisfies {
  [T in Exclude<
    keyof EventTables,
    | 'subscriptions'
    | 'event_sequence'
    | 'event_rollups'
    | 'event_rollup_keys'
    | 'event_rollup_compaction'
    | 'event_purge_progress'
  >]: readonly (keyof EventTables[T])[];
};
