import { useState } from 'preact/hooks';
import { useDebounced } from './use-debounced.ts';

/**
 * A list's filters and page. Changing a filter goes back to page 1 (page 3 of the old result means nothing
 * in the new one); `query` follows the filters once typing has settled, trimmed, with the page.
 */
export function useListQuery<F extends Record<string, string>>(initial: F) {
  const [filters, setFilters] = useState(initial);
  const [page, setPage] = useState(1);
  const settled = useDebounced(filters);
  const set = (key: keyof F) => (value: string) => {
    setFilters((f) => ({ ...f, [key]: value }));
    setPage(1);
  };
  const query: Record<string, string | number> = { page };
  for (const [k, v] of Object.entries(settled)) query[k] = v.trim();
  return { filters, set, page, setPage, query };
}
