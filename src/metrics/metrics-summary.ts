import type { MetricsCollector } from './metrics-collector.js';

const GIB = 1024 ** 3;

/**
 * `GET /api/v1/metrics/summary`: this instance's responses since start (counts, and quantiles from the
 * latency histogram) and its resources. A response is an error from status 400 up.
 */
export function metricsSummary(collector: MetricsCollector, diskBytes: number) {
  let total = 0;
  let sumMs = 0;
  const byStatus: Record<string, number> = {};
  let errors = 0;
  for (const r of collector.requests.routeFigures()) {
    total += r.latency.count;
    sumMs += r.latency.sumMs;
    for (const [status, n] of r.byStatus) {
      if (status < 400) continue;
      errors += n;
      byStatus[String(status)] = (byStatus[String(status)] ?? 0) + n;
    }
  }
  const overall = collector.requests.overall;
  return {
    requests: {
      total,
      success_rate: total === 0 ? 0 : round((total - errors) / total, 4),
      avg_response_time_ms: total === 0 ? 0 : round(sumMs / total),
      p95_response_time_ms: round(overall.quantile(0.95)),
      p99_response_time_ms: round(overall.quantile(0.99)),
    },
    errors: { total: errors, rate: total === 0 ? 0 : round(errors / total, 4), by_status: byStatus },
    resources: {
      avg_cpu_percent: round(collector.averageCpuPercent()),
      avg_memory_mb: round(collector.averageMemoryMb()),
      peak_memory_mb: round(collector.peakMemoryMb()),
      disk_usage_gb: round(diskBytes / GIB, 6),
    },
  };
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;
