import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { SelectFilter, TextFilter } from '../../components/filter-controls.tsx';
import { Page } from '../../components/page.tsx';
import { Pager, type Pagination } from '../../components/pager.tsx';
import { formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { useListQuery } from '../../hooks/use-list-query.ts';
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
  const { filters, set, page, setPage, query } = useListQuery({ level: '', component: '', search: '' });
  const list = useApi<{ logs: LogEntry[]; pagination: Pagination }>('/admin/system/logs', {
    query: { ...query, per_page: 50 },
    refreshMs: REFRESH.lists,
  });
  return (
    <Page title="Logs">
      <div class="filters">
        <SelectFilter
          label="Level"
          value={filters.level}
          onChange={set('level')}
          options={['DEBUG', 'INFO', 'WARNING', 'ERROR']}
        />
        <TextFilter label="Component" value={filters.component} onChange={set('component')} />
        <TextFilter label="Search" type="search" value={filters.search} onChange={set('search')} />
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
