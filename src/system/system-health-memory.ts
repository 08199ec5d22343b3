import { getHeapStatistics } from 'node:v8';
import type { PlatformConfig } from '../config/config-schema.js';
import type { ServiceHealth } from '../kernel/service.js';

const MIB = 1024 * 1024;
const round = (n: number) => Math.round(n * 100) / 100;

/**
 * The `memory` component: the V8 heap in use against its limit (`health.memory_limit_mb`, or V8's own heap
 * limit when 0), and the resident set size. Warning from `health.memory_warning_percent`, unhealthy from 95 %.
 */
export function memoryHealth(cfg: PlatformConfig['health']): ServiceHealth & { name: 'memory' } {
  const usage = process.memoryUsage();
  const heapLimitMb =
    cfg.memory_limit_mb > 0 ? cfg.memory_limit_mb : getHeapStatistics().heap_size_limit / MIB;
  const heapMb = usage.heapUsed / MIB;
  const percent = (heapMb / heapLimitMb) * 100;
  const status = percent >= 95 ? 'unhealthy' : percent >= cfg.memory_warning_percent ? 'warning' : 'healthy';
  return {
    name: 'memory',
    status,
    checks: [
      {
        name: 'heap',
        status: status === 'healthy' ? 'pass' : status === 'warning' ? 'warning' : 'fail',
        current_mb: round(heapMb),
        limit_mb: round(heapLimitMb),
        usage_percent: round(percent),
      },
      { name: 'rss', status: 'pass', current_mb: round(usage.rss / MIB) },
    ],
    details: {
      heap_used_mb: round(heapMb),
      heap_total_mb: round(usage.heapTotal / MIB),
      heap_limit_mb: round(heapLimitMb),
      rss_mb: round(usage.rss / MIB),
      external_mb: round(usage.external / MIB),
    },
  };
}
