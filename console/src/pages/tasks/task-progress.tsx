import { useEffect, useState } from 'preact/hooks';
import { del } from '../../api/client.ts';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { JsonView } from '../../components/json-view.tsx';
import { formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import { type Task, unwrapTask } from './task-types.ts';

const ACTIVE = new Set(['pending', 'queued', 'running']);

/** A task's live progress (GET /api/v1/tasks/{id} every second while it runs), its steps, logs and a cancel button. */
export function TaskProgress({
  id,
  showLogs = true,
  onFinished,
}: {
  id: string;
  showLogs?: boolean;
  /** Called once the task has ended, so the page can reload what it changed. */
  onFinished?: () => void;
}) {
  const [finished, setFinished] = useState(false);
  const state = useApi<{ task?: Task } & Partial<Task>>(`/tasks/${encodeURIComponent(id)}`, {
    ...(finished ? {} : { refreshMs: REFRESH.progress }),
  });
  const status = state.data ? unwrapTask(state.data).status : undefined;
  const running = status === undefined || ACTIVE.has(status);
  useEffect(() => {
    if (status && !ACTIVE.has(status)) {
      setFinished(true);
      onFinished?.();
    }
  }, [status]);
  const cancel = useAction(async () => {
    await del(`/tasks/${encodeURIComponent(id)}`);
    state.reload();
  });
  return (
    <div class="task" aria-live="polite">
      <ApiView state={state} what="Task" endpoint="GET /api/v1/tasks/{id}">
        {(d) => {
          const t = unwrapTask(d);
          const pct = Math.round((t.progress ?? 0) * 100);
          return (
            <>
              <p>
                <code>{t.type}</code>{' '}
                <span data-testid="task-status">
                  <Badge value={t.status} />
                </span>{' '}
                <progress max={100} value={pct} aria-label={`Task progress ${pct} %`} /> {pct} %
                {running ? (
                  <>
                    {' '}
                    <button type="button" onClick={() => void cancel.run()} disabled={cancel.busy}>
                      Cancel
                    </button>
                  </>
                ) : null}
              </p>
              {t.details?.steps?.length ? (
                <ol class="steps">
                  {t.details.steps.map((s) => (
                    <li key={s.name}>
                      {s.name} <Badge value={s.status} />
                    </li>
                  ))}
                </ol>
              ) : null}
              {t.result !== undefined && t.result !== null ? (
                <JsonView value={t.result} label="Result" />
              ) : null}
              {t.error ? <JsonView value={t.error} label="Error" /> : null}
              {showLogs && t.logs?.length ? (
                <ul class="log-lines">
                  {t.logs.map((l, i) => (
                    <li key={i}>
                      <span class="muted">{formatTime(l.timestamp)}</span>{' '}
                      <Badge value={l.level.toLowerCase()} /> {l.message}
                    </li>
                  ))}
                </ul>
              ) : null}
            </>
          );
        }}
      </ApiView>
      <ErrorNotice error={cancel.error} title="Could not cancel" />
    </div>
  );
}
