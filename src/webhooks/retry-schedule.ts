/** A subscription's retry policy (decisions §4: default 5 attempts, 30 s, exponential). */
export interface RetryPolicy {
  max_attempts: number;
  retry_delay_seconds: number;
  exponential_backoff: boolean;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  max_attempts: 5,
  retry_delay_seconds: 30,
  exponential_backoff: true,
};

/**
 * The wait before the next attempt after attempt `attempt` (1-based) failed: delay × 2^(attempt−1) with
 * exponential backoff, ±20 % jitter so retries of many deliveries do not arrive together, times `scale`
 * (tests shrink it), never less than a target's `Retry-After`, and never more than `capMs`.
 */
export function retryDelayMs(
  policy: RetryPolicy,
  attempt: number,
  options: { scale: number; capMs: number; retryAfterMs?: number | null; random?: () => number },
): number {
  const base =
    policy.retry_delay_seconds * 1000 * (policy.exponential_backoff ? 2 ** Math.max(0, attempt - 1) : 1);
  const jitter = 0.8 + 0.4 * (options.random ?? Math.random)();
  const delay = Math.max(base * jitter * options.scale, options.retryAfterMs ?? 0);
  return Math.round(Math.min(delay, options.capMs));
}

/** `Retry-After` as milliseconds: delay-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (/^\d{1,10}$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
