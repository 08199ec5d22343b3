import { canonicalPattern, isValidPattern } from '../events/pattern-matcher.js';
import { checkPriorityRange } from '../events/priority-range.js';
import { AppError } from '../http/app-error.js';
import type { StreamFilters } from './stream-connection.js';

/** Patterns given repeated, comma-separated, or both: `?patterns=user.*&patterns=auth.*,system.**`. */
export function parsePatterns(values: readonly string[] | string | undefined, field = 'patterns'): string[] {
  const list = (Array.isArray(values) ? values : values === undefined ? [] : [values])
    .flatMap((v) => String(v).split(','))
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
  const bad = list.find((p) => !isValidPattern(p));
  if (bad !== undefined) {
    throw new AppError('VALIDATION_ERROR', `'${bad.slice(0, 300)}' is not a valid event pattern`, {
      details: { field, reason: 'invalid pattern', value: bad.slice(0, 300) },
    });
  }
  return withinPatternLimit([...new Set(list.map(canonicalPattern))], field);
}

/** The `patterns` of a WebSocket message: a string (comma-separated), an array of strings, or none. */
export function patternsOf(value: unknown): string[] | string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((p) => typeof p === 'string')) return value as string[];
  throw invalid('patterns', 'must be a string or an array of strings');
}

const MAX_PATTERNS = 100;

/** The patterns of one stream, refused past 100 (also when subscribe messages add them up). */
export function withinPatternLimit(patterns: string[], field = 'patterns'): string[] {
  if (patterns.length > MAX_PATTERNS) {
    throw new AppError('VALIDATION_ERROR', `At most ${MAX_PATTERNS} patterns per stream`, {
      details: { field, reason: 'too many patterns' },
    });
  }
  return patterns;
}

const FILTER_KEYS = ['source', 'priority'];

/** Stream filters from a WebSocket `filters` object: `{source: [..], priority: {min, max}}`; nothing else. */
export function parseFilters(raw: unknown): StreamFilters {
  if (raw === undefined || raw === null) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalid('filters', 'must be an object');
  const f = raw as Record<string, unknown>;
  const unknown = Object.keys(f).find((k) => !FILTER_KEYS.includes(k));
  if (unknown !== undefined) {
    throw invalid(
      `filters.${unknown.slice(0, 100)}`,
      'unknown filter: streams filter by source and priority',
    );
  }
  const out: StreamFilters = {};
  if (f['source'] !== undefined) {
    const sources = Array.isArray(f['source']) ? f['source'] : [f['source']];
    if (!sources.every((s) => typeof s === 'string')) throw invalid('filters.source', 'must be strings');
    out.source = sources as string[];
  }
  if (f['priority'] !== undefined) {
    const p = f['priority'] as Record<string, unknown>;
    if (typeof p !== 'object' || p === null || Array.isArray(p)) {
      throw invalid('filters.priority', 'must be {min, max}');
    }
    const extra = Object.keys(p).find((k) => k !== 'min' && k !== 'max');
    if (extra !== undefined) throw invalid(`filters.priority.${extra.slice(0, 100)}`, 'must be min or max');
    const min = priorityBound(p['min'], 'min');
    const max = priorityBound(p['max'], 'max');
    checkPriorityRange(min, max, { min: 'filters.priority.min', max: 'filters.priority.max' });
    out.priority = { min, max };
  }
  return out;
}

function priorityBound(value: unknown, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 10) {
    throw invalid(`filters.priority.${name}`, 'must be an integer from 1 to 10');
  }
  return value;
}

const invalid = (field: string, reason: string) =>
  new AppError('VALIDATION_ERROR', `${field} ${reason}`, { details: { field, reason } });
