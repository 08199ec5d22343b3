import { useState } from 'preact/hooks';
import { del, post } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { Field } from '../../components/field.tsx';
import { KeyValues } from '../../components/key-values.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { SuccessNotice } from '../../components/success-notice.tsx';
import { formatNumber, formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import { navigate } from '../../router.ts';
import { TaskProgress } from '../tasks/task-progress.tsx';
import { startedTaskId } from '../tasks/task-types.ts';
import { PluginConfigEditor } from './plugin-config-editor.tsx';
import type { PluginDetail } from './plugin-types.ts';

function UpdateForm({ id, onStarted }: { id: string; onStarted: (taskId: string | null) => void }) {
  const [version, setVersion] = useState('latest');
  const [backup, setBackup] = useState(true);
  const update = useAction(async () => {
    const res = await post(`/admin/plugins/${encodeURIComponent(id)}/update`, {
      version,
      backup_current: backup,
      restart_after_update: true,
    });
    onStarted(startedTaskId(res));
  });
  return (
    <ActionForm label="Update plugin" action={update} submit="Update" errorTitle="Could not start the update">
      <Field label="Target version" error={update.error?.fieldErrors['version']}>
        {(p) => <input {...p} value={version} onInput={(e) => setVersion(e.currentTarget.value)} />}
      </Field>
      <label class="check-label">
        <input type="checkbox" checked={backup} onChange={(e) => setBackup(e.currentTarget.checked)} /> Keep
        the current version for rollback
      </label>
    </ActionForm>
  );
}

/** One plugin: manifest, health, metrics, configuration editor, update with live task progress, logs. */
export function PluginDetailPage({ id }: { id: string }) {
  const path = `/admin/plugins/${encodeURIComponent(id)}`;
  const state = useApi<{ plugin?: PluginDetail } & Partial<PluginDetail>>(path, { refreshMs: REFRESH.lists });
  const [taskId, setTaskId] = useState<string | null>(null);
  const [started, setStarted] = useState(false);
  const [configSaved, setConfigSaved] = useState(false);
  const toggle = useAction(async (action: 'enable' | 'disable') => {
    await post(`${path}/${action}`);
    state.reload();
  });
  const uninstall = useAction(async () => {
    await del(path);
    navigate('/plugins');
  });
  return (
    <Page title={`Plugin ${id}`} actions={<Link to="/plugins">← All plugins</Link>}>
      <ApiView state={state} what="Plugin" endpoint="GET /api/v1/admin/plugins/{id}">
        {(d) => {
          const p = (d.plugin ?? d) as PluginDetail;
          const m = p.manifest;
          const enabled = p.enabled ?? p.status === 'active';
          return (
            <>
              <KeyValues
                variant="kv wide"
                items={[
                  ['Version', m?.version ?? '—'],
                  ['Status', <Badge value={p.status} />],
                  ['Health', <Badge value={p.health} />],
                  ['Author', m?.author ?? '—'],
                  ['License', m?.license ?? '—'],
                  ['Platform', m?.platform_version ?? '—'],
                  ...Object.entries(p.metrics ?? {}).map(
                    ([k, v]) => [k.replaceAll('_', ' '), formatNumber(v, 2)] as const,
                  ),
                ]}
              />
              {m?.description ? <p>{m.description}</p> : null}
              <div class="actions">
                <button
                  type="button"
                  disabled={toggle.busy}
                  onClick={() => void toggle.run(enabled ? 'disable' : 'enable')}
                >
                  {enabled ? 'Disable' : 'Enable'}
                </button>
                <ConfirmButton
                  label="Uninstall"
                  title={`Uninstall ${id}?`}
                  confirmLabel="Uninstall"
                  danger
                  onConfirm={() => void uninstall.run()}
                >
                  <p>The plugin is stopped and its package removed.</p>
                </ConfirmButton>
              </div>
              <ErrorNotice error={toggle.error ?? uninstall.error} />
              <h2>Configuration</h2>
              <RequiresOperation operation="PUT /api/v1/plugins/{}" what="Plugin configuration">
                <PluginConfigEditor
                  key={JSON.stringify(p.configuration ?? {})}
                  pluginId={id}
                  schema={p.config_schema ?? m?.config_schema}
                  configuration={p.configuration ?? {}}
                  onSaving={() => setConfigSaved(false)}
                  onSaved={() => {
                    setConfigSaved(true);
                    state.reload();
                  }}
                />
              </RequiresOperation>
              <SuccessNotice>{configSaved ? 'Configuration saved.' : null}</SuccessNotice>
              <h2>Update</h2>
              {started ? (
                taskId ? (
                  <TaskProgress id={taskId} onFinished={state.reload} />
                ) : (
                  <SuccessNotice>Update started.</SuccessNotice>
                )
              ) : null}
              <RequiresOperation operation="POST /api/v1/admin/plugins/{}/update" what="Plugin updates">
                <UpdateForm
                  id={id}
                  onStarted={(t) => {
                    setTaskId(t);
                    setStarted(true);
                  }}
                />
              </RequiresOperation>
              <h2>Logs</h2>
              {(p.logs ?? []).length === 0 ? (
                <p class="muted">No log lines.</p>
              ) : (
                <ul class="log-lines">
                  {(p.logs ?? []).map((l, i) => (
                    <li key={i}>
                      <span class="muted">{formatTime(l.timestamp)}</span>{' '}
                      <Badge value={l.level.toLowerCase()} /> {l.message}
                    </li>
                  ))}
                </ul>
              )}
            </>
          );
        }}
      </ApiView>
    </Page>
  );
}
