import type { DeliveryAttemptsTable } from './event-tables.js';

/**
 * How one try of a delivery ended: `delivered` (2xx), `retry` (failed, another attempt is scheduled),
 * `failed` (failed for good: retries exhausted, target refused or gone), `dropped` (not tried: the event
 * expired or was purged).
 */
export type DeliveryOutcome = 'delivered' | 'retry' | 'failed' | 'dropped';

/** The error code a delivery's final failure is recorded with (decisions §4). */
export const FAILED_CODE = 'WEBHOOK_DELIVERY_FAILED';

/** The audit trail action of each outcome (decisions §4). */
export const AUDIT_ACTIONS: Record<DeliveryOutcome, string> = {
  delivered: 'event_delivered',
  retry: 'delivery_retried',
  failed: 'delivery_failed',
  dropped: 'delivery_dropped',
};

/** What a delivery's audit entry tells; `error` without the `WEBHOOK_DELIVERY_FAILED: ` of the attempt. */
export interface DeliveryAuditFacts {
  outcome: DeliveryOutcome;
  subscriptionId: string;
  deliveryId: string;
  attempt: number;
  responseStatus: number | null;
  latencyMs: number | null;
  error: string | null;
  nextAttemptAt?: string | undefined;
  replayId: string | null;
  batchId?: string | null | undefined;
}

/** The details of a delivery's audit entry: the same whether read from an attempt row or a drop's own row. */
export function auditDetails(r: DeliveryAuditFacts): Record<string, unknown> {
  const details: Record<string, unknown> = {
    subscription_id: r.subscriptionId,
    delivery_id: r.deliveryId,
    attempt: r.attempt,
  };
  if (r.outcome !== 'dropped') {
    details['response_status'] = r.responseStatus;
    details['latency_ms'] = r.latencyMs;
  }
  if (r.error !== null) details['error'] = r.error;
  if (r.outcome === 'failed') details['error_code'] = FAILED_CODE;
  if (r.nextAttemptAt !== undefined) details['next_attempt_at'] = r.nextAttemptAt;
  if (r.replayId !== null) details['replay_id'] = r.replayId;
  if (r.batchId !== undefined && r.batchId !== null) details['batch_id'] = r.batchId;
  return details;
}

export interface AuditEntry {
  /** For the order of entries of the same millisecond (ids are time-sortable after their prefix). */
  id: string;
  timestamp: string;
  action: string;
  actor: string;
  details: Record<string, unknown>;
}

/**
 * The audit entry an attempt row stands for (`event_delivered`, `delivery_retried`, `delivery_failed`,
 * migration 0013); null for attempts made before it, whose entries are rows of `event_audit`.
 */
export function deliveryAuditEntry(a: DeliveryAttemptsTable): AuditEntry | null {
  if (a.actor === null) return null;
  const outcome: DeliveryOutcome =
    a.status === 'delivered' ? 'delivered' : a.next_attempt_at !== null ? 'retry' : 'failed';
  const error =
    outcome === 'failed' && a.error?.startsWith(`${FAILED_CODE}: `)
      ? a.error.slice(FAILED_CODE.length + 2)
      : a.error;
  return {
    id: a.id,
    timestamp: a.created_at,
    action: AUDIT_ACTIONS[outcome],
    actor: a.actor,
    details: auditDetails({
      outcome,
      subscriptionId: a.subscription_id,
      deliveryId: a.outbox_id,
      attempt: a.attempt,
      responseStatus: a.response_status,
      latencyMs: a.latency_ms,
      error,
      nextAttemptAt: a.next_attempt_at ?? undefined,
      replayId: a.replay_id,
      batchId: a.batch_id,
    }),
  };
}
