import { compileDataFilters, type DataPredicate } from './data-filter.js';
import { compilePatterns, type TypeMatcher } from './pattern-matcher.js';

/** What a subscription or a stream selects by: patterns, sources, a priority range, data values. */
export interface EventSelector {
  patterns: readonly string[];
  source?: readonly string[] | undefined;
  priority?: { min?: number | undefined; max?: number | undefined } | undefined;
  dataFilters?: Record<string, unknown> | undefined;
}

/** The facts of an event a selector looks at. */
export interface SelectableEvent {
  event_type: string;
  source: string;
  priority: number;
}

/** A selector compiled once: `matches` is cheap; `needsData` says whether `data` must be decoded first. */
export interface CompiledSelector {
  matches(event: SelectableEvent, data: () => unknown): boolean;
  readonly needsData: boolean;
}

export function compileSelector(selector: EventSelector): CompiledSelector {
  const type: TypeMatcher = compilePatterns(selector.patterns);
  const sources = selector.source && selector.source.length > 0 ? new Set(selector.source) : undefined;
  const min = selector.priority?.min ?? 1;
  const max = selector.priority?.max ?? 10;
  const hasData = Object.keys(selector.dataFilters ?? {}).length > 0;
  const data: DataPredicate = compileDataFilters(selector.dataFilters);
  return {
    needsData: hasData,
    matches(event, getData) {
      if (event.priority < min || event.priority > max) return false;
      if (sources && !sources.has(event.source)) return false;
      if (!type(event.event_type)) return false;
      return !hasData || data(getData());
    },
  };
}
