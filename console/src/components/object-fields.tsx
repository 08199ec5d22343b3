import type { ComponentChildren } from 'preact';
import { formatNumber } from '../format.ts';

/** `pending_deliveries` → "pending deliveries": a field name as words. */
export function words(key: string): string {
  return key.replaceAll('_', ' ').replaceAll('.', ' › ');
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/;

function scalar(v: unknown): ComponentChildren {
  if (v === null || v === undefined || v === '') return <span class="muted">—</span>;
  if (typeof v === 'number') return formatNumber(v, 3);
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  const s = String(v);
  return TIMESTAMP.test(s) ? (
    <time dateTime={s}>{new Date(s).toLocaleString()}</time>
  ) : (
    <span class="break">{s}</span>
  );
}

function value(v: unknown, depth: number): ComponentChildren {
  if (Array.isArray(v)) {
    if (v.length === 0) return <span class="muted">none</span>;
    if (v.every((x) => x === null || typeof x !== 'object')) return v.map((x) => String(x)).join(', ');
    return (
      <ol class="field-list">
        {v.map((x, i) => (
          <li key={i}>{value(x, depth + 1)}</li>
        ))}
      </ol>
    );
  }
  if (v !== null && typeof v === 'object') {
    if (depth >= 4) return <code class="break">{JSON.stringify(v)}</code>;
    return <ObjectFields value={v as Record<string, unknown>} depth={depth + 1} />;
  }
  return scalar(v);
}

/**
 * Structured data (an audit entry's details, a health check's figures) as a description list: each field's name
 * in words and its value, nested objects as nested lists, long text wrapped, never cut off at the edge.
 */
export function ObjectFields({
  value: obj,
  skip = [],
  depth = 0,
  empty = 'No details.',
}: {
  value: Record<string, unknown> | null | undefined;
  skip?: readonly string[];
  depth?: number;
  empty?: string;
}) {
  const entries = Object.entries(obj ?? {}).filter(([k]) => !skip.includes(k));
  if (entries.length === 0) return <span class="muted">{empty}</span>;
  return (
    <dl class="fields">
      {entries.map(([k, v]) => (
        <div key={k}>
          <dt>{words(k)}</dt>
          <dd>{value(v, depth)}</dd>
        </div>
      ))}
    </dl>
  );
}
