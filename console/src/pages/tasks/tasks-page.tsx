import { useEffect, useState } from 'preact/hooks';
import { del } from '../../api/client.ts';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ACTIONS, DataTable } from '../../components/data-table.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { SelectFilter, TextFilter } from '../../components/filter-controls.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import type { Pagination } from '../../components/pager.tsx';
import { formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { useListQuery } from '../../hooks/use-list-query.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import type { Task } from './task-types.ts';

/** Background tasks with live progress (reloaded every 3 s while one runs) and cancel for running ones. */
export function TasksPage() {
  const { filters, set, setPage, query } = useListQuery({ status: '', type: '' });
  const [anyRunning, setAnyRunning] = useState(false);
  const list = useApi<{ tasks: Task[]; pagination?: Pagination }>('/tasks', {
    query: { ...query, per_page: 20 },
    // Progress moves quickly while a task runs; otherwise the list changes rarely.
    refreshMs: anyRunning ? REFRESH.progress * 2 : REFRESH.lists,
  });
  const running = list.data?.tasks.some((t) => t.status === 'running') ?? false;
  useEffect(() => setAnyRunning(running), [running]);
  const cancel = useAction(async (id: string) => {
    await del(`/tasks/${encodeURIComponent(id)}`);
    list.reload();
  });
  return (
    <Page title="Tasks">
      <div class="filters">
        <SelectFilter
          label="Status"
          value={filters.status}
          onChange={set('status')}
          options={['running', 'completed', 'failed', 'cancelled']}
        />
        <TextFilter label="Type" value={filters.type} onChange={set('type')} />
      </div>
      <ErrorNotice error={cancel.error} title="Could not cancel" />
      <ApiView state={list} what="Tasks" endpoint="GET /api/v1/tasks">
        {(d) => (
          <DataTable
            caption="Tasks"
            columns={['Task', 'Status', 'Progress', 'Created', 'Finished', ACTIONS]}
            rows={d.tasks}
            empty="No tasks."
            pagination={d.pagination}
            onPage={setPage}
            row={(t) => {
              const pct = Math.round((t.progress ?? 0) * 100);
              return (
                <tr key={t.id} data-task={t.id}>
                  <td>
                    <Link to={`/tasks/${encodeURIComponent(t.id)}`}>{t.type}</Link>
                    <div class="muted small">
                      <code>{t.id}</code>
                    </div>
                  </td>
                  <td>
                    <Badge value={t.status} />
                  </td>
                  <td class="nowrap">
                    <progress max={100} value={pct} aria-label={`${t.type} progress`} /> {pct} %
                  </td>
                  <td class="nowrap">{formatTime(t.created_at)}</td>
                  <td class="nowrap">{formatTime(t.completed_at ?? t.cancelled_at)}</td>
                  <td>
                    {t.status === 'running' ? (
                      <button
                        type="button"
                        disabled={cancel.busy}
                        aria-label={`Cancel ${t.type} ${t.id}`}
                        onClick={() => void cancel.run(t.id)}
                      >
                        Cancel
                      </button>
                    ) : null}
                  </td>
                </tr>
              );
            }}
          />
        )}
      </ApiView>
    </Page>
  );
}
