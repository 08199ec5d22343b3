/**
 * A Prometheus metric family in a neutral form, for a service to report figures that do not fit its flat
 * `metrics()` (labelled series, histograms). `src/metrics/prometheus-text.ts` writes it out.
 */
export type MetricFamily =
  | {
      name: string;
      help: string;
      type: 'counter' | 'gauge';
      samples: { labels?: Record<string, string>; value: number }[];
    }
  | {
      name: string;
      help: string;
      type: 'histogram';
      /** Upper bounds of the buckets, ascending, without +Inf. */
      bounds: number[];
      series: { labels?: Record<string, string>; cumulative: number[]; count: number; sum: number }[];
    };
