import { AppError } from '../http/app-error.js';
import { MAX_POINTS, RESOLUTIONS, type Resolution } from './metric-series.js';

/** A chart route's query: a time range and the width of its buckets. */
export interface BucketQuery {
  start_time?: string | undefined;
  end_time?: string | undefined;
  resolution?: string | undefined;
}

export const invalidQuery = (
  field: string,
  reason: string,
  message: string,
  extra: Record<string, unknown> = {},
) => new AppError('VALIDATION_ERROR', message, { details: { field, reason, ...extra } });

/**
 * The range and bucket width a chart route answers (the metrics series, a subscription's delivery timeline):
 * `end_time` defaults to now and `start_time` to `defaultSpanMs` before it; an inverted range, or one that
 * needs more than MAX_POINTS buckets of `what`, is refused with 422 VALIDATION_ERROR.
 */
export function bucketRange(
  q: BucketQuery,
  defaults: { spanMs: number; resolution: Resolution; what: string },
): { startMs: number; endMs: number; resolution: Resolution; width: number } {
  const endMs = q.end_time ? Date.parse(q.end_time) : Date.now();
  const startMs = q.start_time ? Date.parse(q.start_time) : endMs - defaults.spanMs;
  if (startMs > endMs) {
    throw invalidQuery('start_time', 'after end_time', 'start_time must not be after end_time');
  }
  const resolution = (q.resolution ?? defaults.resolution) as Resolution;
  const width = RESOLUTIONS[resolution];
  const points = Math.floor(endMs / width) - Math.floor(startMs / width) + 1;
  if (points > MAX_POINTS) {
    throw invalidQuery(
      'resolution',
      `${points} ${defaults.what} exceed ${MAX_POINTS}`,
      `The range needs ${points} ${defaults.what} at ${resolution}; at most ${MAX_POINTS} are returned, so choose a coarser resolution or a shorter range`,
      { points, max_points: MAX_POINTS },
    );
  }
  return { startMs, endMs, resolution, width };
}
