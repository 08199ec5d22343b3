import type { MetricFamily } from '../kernel/metric-family.js';
import { LatencyHistogram } from '../metrics/latency-histogram.js';

/** Seconds: from a local receiver's millisecond to a slow target's timeout. */
const LATENCY_BOUNDS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const ATTEMPT_BOUNDS = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20];
const BY_CLASS = ['2xx', '3xx', '4xx', '5xx', 'none'] as const;
type StatusClass = (typeof BY_CLASS)[number];

/**
 * What the dispatcher's attempts looked like since start, for Prometheus: each attempt's time and its answer's
 * status class ('none' when no answer came: refused, timed out, connection failed, or a plugin consumer), and
 * how many attempts each finished delivery took, by outcome.
 */
export class DeliveryMeters {
  private readonly latency = new LatencyHistogram();
  private readonly classes = new Map<StatusClass, number>(BY_CLASS.map((c) => [c, 0]));
  private readonly attempts = { delivered: new AttemptCounts(), failed: new AttemptCounts() };

  attempted(status: number | null, latencyMs: number): void {
    this.latency.record(latencyMs);
    const c: StatusClass =
      status === null || status < 200 || status > 599
        ? 'none'
        : (`${Math.floor(status / 100)}xx` as StatusClass);
    this.classes.set(c, (this.classes.get(c) ?? 0) + 1);
  }

  finished(outcome: 'delivered' | 'failed', attempts: number): void {
    this.attempts[outcome].add(attempts);
  }

  families(): MetricFamily[] {
    return [
      {
        name: 'platform_webhook_attempts_by_status_total',
        help: 'Delivery attempts by the status class of the answer (none: no HTTP answer)',
        type: 'counter',
        samples: BY_CLASS.map((c) => ({ labels: { status_class: c }, value: this.classes.get(c) ?? 0 })),
      },
      {
        name: 'platform_webhook_attempt_duration_seconds',
        help: 'Time of each delivery attempt, from sending to the answer or the failure',
        type: 'histogram',
        bounds: LATENCY_BOUNDS_S,
        series: [
          {
            cumulative: this.latency.cumulative(LATENCY_BOUNDS_S.map((s) => s * 1000)),
            count: this.latency.count,
            sum: this.latency.sumMs / 1000,
          },
        ],
      },
      {
        name: 'platform_webhook_delivery_attempts',
        help: 'Attempts each finished delivery took, by outcome',
        type: 'histogram',
        bounds: ATTEMPT_BOUNDS,
        series: (['delivered', 'failed'] as const).map((outcome) => this.attempts[outcome].series(outcome)),
      },
    ];
  }
}

class AttemptCounts {
  private readonly byAttempts = new Map<number, number>();
  private count = 0;
  private sum = 0;

  add(attempts: number): void {
    this.byAttempts.set(attempts, (this.byAttempts.get(attempts) ?? 0) + 1);
    this.count += 1;
    this.sum += attempts;
  }

  series(outcome: string) {
    const cumulative = ATTEMPT_BOUNDS.map((bound) => {
      let n = 0;
      for (const [attempts, count] of this.byAttempts) if (attempts <= bound) n += count;
      return n;
    });
    return { labels: { outcome }, cumulative, count: this.count, sum: this.sum };
  }
}
