/**
 * How often pages reload what they show. Every reload is an authenticated request, and the default budget is
 * 1000 per hour per user (rate_limits.authenticated), so an overview left open must cost a fraction of it:
 * about 420 an hour at these settings. Fast polling is kept for things that finish (a task in progress).
 */
export const REFRESH = {
  /** Charts: the finest resolution is one minute, so a bucket changes a few times a minute at most. */
  charts: 30_000,
  /** Status figures and lists that change as people work. */
  lists: 20_000,
  /** Status and health summaries. */
  status: 30_000,
  /** Slow-moving things: security posture, maintenance state. */
  slow: 60_000,
  /** Something running that the operator is watching (a task, a scan). */
  progress: 1_500,
} as const;
