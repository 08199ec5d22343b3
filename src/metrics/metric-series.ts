/**
 * The series the collector samples, and how each is aggregated: `within` folds the samples of one instance
 * inside a resolution bucket, `across` folds the instances of a cluster. Counts add up, gauges average,
 * tail latencies keep their worst value. Figures per response (`weighted`) average over the responses, not
 * over the samples: each sample counts as many times as it had responses (its `request_count`), so an interval
 * with one failed response and one with 99 good ones make an error rate of 0.01, not 0.5.
 */
export type Fold = 'sum' | 'avg' | 'max' | 'weighted';

/** The series whose samples weigh by their interval's `request_count`. */
export const WEIGHT_SERIES = 'request_count';

export const METRIC_SERIES = {
  requests_per_second: { within: 'avg', across: 'sum', help: 'Responses per second over the interval' },
  request_count: { within: 'sum', across: 'sum', help: 'Responses sent in the interval' },
  error_count: { within: 'sum', across: 'sum', help: 'Responses with status 400 or above in the interval' },
  server_error_count: {
    within: 'sum',
    across: 'sum',
    help: 'Responses with status 500 or above in the interval',
  },
  error_rate: {
    within: 'weighted',
    across: 'weighted',
    help: 'Share of responses with status 400 or above',
  },
  response_time_ms: { within: 'weighted', across: 'weighted', help: 'Mean response time in the interval' },
  response_time_p50_ms: { within: 'avg', across: 'avg', help: 'Median response time in the interval' },
  response_time_p95_ms: {
    within: 'max',
    across: 'max',
    help: '95th percentile response time in the interval',
  },
  response_time_p99_ms: {
    within: 'max',
    across: 'max',
    help: '99th percentile response time in the interval',
  },
  memory_usage_mb: { within: 'avg', across: 'sum', help: 'Resident memory of the process' },
  heap_used_mb: { within: 'avg', across: 'sum', help: 'V8 heap in use' },
  cpu_usage_percent: { within: 'avg', across: 'sum', help: 'CPU time over wall time (100 = one core)' },
  events_per_second: { within: 'avg', across: 'sum', help: 'Events processed by the event bus per second' },
} as const satisfies Record<string, { within: Fold; across: Fold; help: string }>;

export type MetricName = keyof typeof METRIC_SERIES;
export const METRIC_NAMES = Object.keys(METRIC_SERIES) as MetricName[];

export const RESOLUTIONS = {
  '1m': 60_000,
  '5m': 300_000,
  '15m': 900_000,
  '1h': 3_600_000,
  '1d': 86_400_000,
} as const;
export type Resolution = keyof typeof RESOLUTIONS;

/** More points than this in one series is refused (decisions §6). */
export const MAX_POINTS = 1000;
