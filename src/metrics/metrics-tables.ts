/**
 * Row type of the metrics module's table (migration 0004-metrics-logs). One row per series per sample:
 * `timestamp` is the ISO time like every table; `time_ms` is the same instant in epoch milliseconds, kept
 * because grouping samples into resolution buckets needs integer arithmetic that text cannot do portably.
 */
export interface MetricSamplesTable {
  timestamp: string;
  time_ms: number;
  /** The platform instance that measured it: in cluster mode several instances sample side by side. */
  instance: string;
  name: string;
  value: number;
}

export interface MetricsTables {
  metric_samples: MetricSamplesTable;
}
