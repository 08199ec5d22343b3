import { useState } from 'preact/hooks';
import { download, post } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { CheckboxGroup } from '../../components/checkbox-group.tsx';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { ACTIONS, DataTable } from '../../components/data-table.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { Page } from '../../components/page.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { SuccessNotice } from '../../components/success-notice.tsx';
import { formatMb, formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import { TaskProgress } from '../tasks/task-progress.tsx';
import { startedTaskId } from '../tasks/task-types.ts';

interface Backup {
  id?: string;
  backup_id?: string;
  name?: string;
  created_at: string;
  size_mb: number;
  type?: string;
  includes: string[];
  status: string;
  download_url?: string;
}

const COMPONENTS = ['configuration', 'database', 'plugins'] as const;
const idOf = (b: Backup) => b.id ?? b.backup_id ?? '';

/** Create, list, download and restore backups (/api/v1/backup); restore asks for confirmation first. */
export function BackupsPage() {
  const list = useApi<{ backups: Backup[] }>('/backup', { refreshMs: REFRESH.lists });
  const [include, setInclude] = useState<string[]>([...COMPONENTS]);
  const [compression, setCompression] = useState(true);
  const [encryption, setEncryption] = useState(false);
  const [restoreTask, setRestoreTask] = useState<string | null>(null);
  const [backupTask, setBackupTask] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const create = useAction(async () => {
    const res = await post<{ backup_id?: string; id?: string; task_url?: string }>('/backup', {
      include,
      compression,
      encryption,
    });
    // The archive is written by a task: it can be downloaded once the backup reads `completed`.
    setBackupTask(startedTaskId(res));
    setNotice(`Backup ${res.backup_id ?? res.id ?? ''} created; its archive is being written.`);
    list.reload();
  });
  const restore = useAction(async (b: Backup) => {
    const res = await post(`/backup/${encodeURIComponent(idOf(b))}/restore`, {
      components: b.includes,
      confirm: true,
    });
    setRestoreTask(startedTaskId(res));
    setNotice(`Restore of ${idOf(b)} started.`);
  });
  const get = useAction(async (b: Backup) => {
    await download(
      b.download_url?.replace(/^\/api\/v1/, '') ?? `/backup/${encodeURIComponent(idOf(b))}/download`,
      `${idOf(b)}.tar.gz`,
    );
  });
  return (
    <Page title="Backups">
      <SuccessNotice>{notice}</SuccessNotice>
      {backupTask ? <TaskProgress id={backupTask} showLogs={false} onFinished={list.reload} /> : null}
      {restoreTask ? <TaskProgress id={restoreTask} onFinished={list.reload} /> : null}
      <ErrorNotice error={restore.error ?? get.error} />
      <RequiresOperation operation="POST /api/v1/backup" what="Creating backups">
        <ActionForm
          label="Create backup"
          action={create}
          submit={create.busy ? 'Creating…' : 'Create backup'}
          submitClass="primary"
          disabled={include.length === 0}
          errorTitle="Could not create the backup"
        >
          <CheckboxGroup legend="Include" options={COMPONENTS} value={include} onChange={setInclude} />
          <fieldset>
            <legend>Options</legend>
            <label class="check-label">
              <input
                type="checkbox"
                checked={compression}
                onChange={(e) => setCompression(e.currentTarget.checked)}
              />{' '}
              Compress
            </label>
            <label class="check-label">
              <input
                type="checkbox"
                checked={encryption}
                onChange={(e) => setEncryption(e.currentTarget.checked)}
              />{' '}
              Encrypt (needs backups.encryption_key)
            </label>
          </fieldset>
        </ActionForm>
      </RequiresOperation>
      <ApiView state={list} what="Backups" endpoint="GET /api/v1/backup">
        {(d) => (
          <DataTable
            caption="Backups"
            columns={['Backup', 'Created', 'Size', 'Includes', 'Status', ACTIONS]}
            rows={d.backups}
            empty="No backups yet."
            row={(b) => (
              <tr key={idOf(b)} data-backup={idOf(b)}>
                <td>
                  <code>{idOf(b)}</code>
                  {b.name ? <div class="small">{b.name}</div> : null}
                  {b.type ? <div class="muted small">{b.type}</div> : null}
                </td>
                <td class="nowrap">{formatTime(b.created_at)}</td>
                <td>{formatMb(b.size_mb)}</td>
                <td>{b.includes.join(', ')}</td>
                <td>
                  <Badge value={b.status} />
                </td>
                <td class="nowrap">
                  {b.status !== 'completed' ? (
                    <span class="muted small">{b.status === 'failed' ? 'no archive' : 'being written'}</span>
                  ) : (
                    <>
                      <button type="button" disabled={get.busy} onClick={() => void get.run(b)}>
                        Download
                      </button>{' '}
                      <ConfirmButton
                        label="Restore"
                        title={`Restore ${idOf(b)}?`}
                        confirmLabel="Restore now"
                        danger
                        onConfirm={() => void restore.run(b)}
                      >
                        <p>
                          The platform goes into maintenance mode and replaces its{' '}
                          <strong>{b.includes.join(', ')}</strong> with the contents of this backup from{' '}
                          {formatTime(b.created_at)}. A backup of the current state is taken first.
                        </p>
                      </ConfirmButton>
                    </>
                  )}
                </td>
              </tr>
            )}
          />
        )}
      </ApiView>
    </Page>
  );
}
