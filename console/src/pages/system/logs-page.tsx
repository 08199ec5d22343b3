import { useState } from 'preact/hooks';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { Page } from '../../components/page.tsx';
import { Pager, type Pagination } from '../../components/pager.tsx';
import { formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { useDebounced } from '../../hooks/use-debounced.ts';
import { REFRESH } from '../../refresh-intervals.ts';

interface LogEntry {
  timestamp: string;
  level: string;
  component: string;
  message: string;
  metadata?: Record<string, unknown>;
}

/** The platform's stored log (INFO and above): GET /api/v1/admin/system/logs with level, component and search. */
export function LogsPage() {
  const [level, setLevel] = useState('');
  const [component, setComponent] = useState('');
  const [search, setSearch] = useState('');
  const [page, setPage] = useState(1);
  const c = useDebounced(component.trim());
  const s = useDebounced(search.trim());
  const list = useApi<{ logs: LogEntry[]; pagination: Pagination }>('/admin/system/logs', {
    query: { level, component: c, search: s, page, per_page: 50 },
    refreshMs: REFRESH.lists,
  });
  return (
    <Page title="Logs">
      <div class="filters">
        <label>
          Level{' '}
          <select
            value={level}
            onChange={(e) => {
              setLevel(e.currentTarget.value);
              setPage(1);
            }}
          >
            <option value="">Any</option>
            <option>DEBUG</option>
            <option>INFO</option>
            <option>WARNING</option>
            <option>ERROR</option>
          </select>
        </label>
        <label>
          Component{' '}
          <input
            value={component}
            onInput={(e) => {
              setComponent(e.currentTarget.value);
              setPage(1);
            }}
          />
        </label>
        <label>
          Search{' '}
          <input
            type="search"
            value={search}
            onInput={(e) => {
              setSearch(e.currentTarget.value);
              setPage(1);
            }}
          />
        </label>
      </div>
      <ApiView state={list} what="Logs" endpoint="GET /api/v1/admin/system/logs">
        {(d) => (
          <>
            <ul class="log-lines">
              {d.logs.length === 0 ? <li class="muted">No log lines match.</li> : null}
              {d.logs.map((l, i) => (
                <li key={i}>
                  <span class="muted">{formatTime(l.timestamp)}</span> <Badge value={l.level.toLowerCase()} />{' '}
                  <strong>{l.component}</strong> {l.message}
                  {l.metadata?.['request_id'] ? (
                    <span class="muted small"> ({String(l.metadata['request_id'])})</span>
                  ) : null}
                </li>
              ))}
            </ul>
            <Pager pagination={{ has_prev: page > 1, ...d.pagination }} onPage={setPage} />
          </>
        )}
      </ApiView>
    </Page>
  );
}
