import type { MetricFamily } from '../kernel/metric-family.js';

/** Label values escaped as the text format 0.0.4 asks: backslash, double quote and line feed. */
function labelText(labels: Record<string, string> | undefined, extra?: [string, string]): string {
  const pairs = Object.entries(labels ?? {});
  if (extra) pairs.push(extra);
  if (pairs.length === 0) return '';
  const body = pairs.map(
    ([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`,
  );
  return `{${body.join(',')}}`;
}

function numberText(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Number.POSITIVE_INFINITY) return '+Inf';
  if (n === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(n);
}

/** Metric families in the Prometheus text exposition format 0.0.4. */
export function prometheusText(families: readonly MetricFamily[]): string {
  let out = '';
  for (const f of families) {
    out += `# HELP ${f.name} ${f.help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}\n# TYPE ${f.name} ${f.type}\n`;
    if (f.type === 'histogram') {
      for (const s of f.series) {
        f.bounds.forEach((bound, i) => {
          out += `${f.name}_bucket${labelText(s.labels, ['le', numberText(bound)])} ${numberText(s.cumulative[i] ?? 0)}\n`;
        });
        out += `${f.name}_bucket${labelText(s.labels, ['le', '+Inf'])} ${numberText(s.count)}\n`;
        out += `${f.name}_sum${labelText(s.labels)} ${numberText(s.sum)}\n`;
        out += `${f.name}_count${labelText(s.labels)} ${numberText(s.count)}\n`;
      }
    } else {
      for (const s of f.samples) out += `${f.name}${labelText(s.labels)} ${numberText(s.value)}\n`;
    }
  }
  return out;
}
