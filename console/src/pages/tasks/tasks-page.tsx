import { useEffect, useState } from 'preact/hooks';
import { del } from '../../api/client.ts';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { Pager, type Pagination } from '../../components/pager.tsx';
import { formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import type { Task } from './task-types.ts';

/** Background tasks with live progress (reloaded every 3 s while one runs) and cancel for running ones. */
export function TasksPage() {
  const [status, setStatus] = useState('');
  const [type, setType] = useState('');
  const [page, setPage] = useState(1);
  const [anyRunning, setAnyRunning] = useState(false);
  const list = useApi<{ tasks: Task[]; pagination?: Pagination }>('/tasks', {
    query: { status, type: type.trim(), page, per_page: 20 },
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
        <label>
          Status{' '}
          <select
            value={status}
            onChange={(e) => {
              setStatus(e.currentTarget.value);
              setPage(1);
            }}
          >
            <option value="">Any</option>
            <option>running</option>
            <option>completed</option>
            <option>failed</option>
            <option>cancelled</option>
          </select>
        </label>
        <label>
          Type{' '}
          <input
            value={type}
            onInput={(e) => {
              setType(e.currentTarget.value);
              setPage(1);
            }}
          />
        </label>
      </div>
      <ErrorNotice error={cancel.error} title="Could not cancel" />
      <ApiView state={list} what="Tasks" endpoint="GET /api/v1/tasks">
        {(d) => (
          <>
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Task</th>
                    <th scope="col">Status</th>
                    <th scope="col">Progress</th>
                    <th scope="col">Created</th>
                    <th scope="col">Finished</th>
                    <th scope="col">
                      <span class="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.tasks.length === 0 ? (
                    <tr>
                      <td colSpan={6} class="muted">
                        No tasks.
                      </td>
                    </tr>
                  ) : null}
                  {d.tasks.map((t) => {
                    const pct = Math.round((t.progress ?? 0) * 100);
                    return (
                      <tr key={t.id}>
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
                              onClick={() => void cancel.run(t.id)}
                            >
                              Cancel
                            </button>
                          ) : null}
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            </div>
            {d.pagination ? <Pager pagination={d.pagination} onPage={setPage} /> : null}
          </>
        )}
      </ApiView>
    </Page>
  );
}
