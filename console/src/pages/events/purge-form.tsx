import { useState } from 'preact/hooks';
import { post } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { CheckboxGroup } from '../../components/checkbox-group.tsx';
import { Field } from '../../components/field.tsx';
import { SuccessNotice } from '../../components/success-notice.tsx';
import { formatNumber } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { TaskProgress } from '../tasks/task-progress.tsx';
import { splitList } from './list-text.ts';

interface PurgeStart {
  purge_id: string;
  task_id: string;
  dry_run: boolean;
  events_to_purge: number;
  cutoff: string;
}

const STATUSES = ['emitted', 'processing', 'processed', 'failed'] as const;

/**
 * POST /api/v1/events/purge: deletes stored events by age, type and status, as a task followed to its end.
 * "Only count" (on at first) counts without deleting; deleting asks for an explicit tick first.
 */
export function PurgeForm() {
  const [days, setDays] = useState('30');
  const [types, setTypes] = useState('');
  const [statuses, setStatuses] = useState<string[]>([]);
  const [dryRun, setDryRun] = useState(true);
  const [sure, setSure] = useState(false);
  const [started, setStarted] = useState<PurgeStart | null>(null);
  const purge = useAction(async () => {
    setStarted(null);
    const eventTypes = splitList(types);
    setStarted(
      await post<PurgeStart>('/events/purge', {
        criteria: {
          older_than_days: Number(days),
          ...(eventTypes.length ? { event_types: eventTypes } : {}),
          ...(statuses.length ? { status: statuses } : {}),
        },
        dry_run: dryRun,
      }),
    );
    setSure(false);
  });
  const errors = purge.error?.fieldErrors ?? {};
  return (
    <>
      <ActionForm
        label="Purge events"
        action={purge}
        submit={dryRun ? 'Count matching events' : 'Purge events'}
        submitClass={dryRun ? undefined : 'danger'}
        disabled={!dryRun && !sure}
        errorTitle="Could not start the purge"
      >
        <Field
          label="Older than (days)"
          error={errors['criteria.older_than_days']}
          hint="0: every event emitted before now"
        >
          {(p) => (
            <input
              {...p}
              type="number"
              min={0}
              max={36500}
              required
              value={days}
              onInput={(e) => setDays(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field
          label="Event types"
          error={errors['criteria.event_types']}
          hint="Patterns, comma-separated; empty: every type"
        >
          {(p) => (
            <input
              {...p}
              name="purge-types"
              placeholder="demo.**"
              value={types}
              onInput={(e) => setTypes(e.currentTarget.value)}
            />
          )}
        </Field>
        <CheckboxGroup
          legend="Event status (none ticked: any)"
          options={STATUSES}
          value={statuses}
          onChange={setStatuses}
          error={errors['criteria.status']}
        />
        <label class="check-label">
          <input type="checkbox" checked={dryRun} onChange={(e) => setDryRun(e.currentTarget.checked)} /> Only
          count (dry run), delete nothing
        </label>
        {dryRun ? null : (
          <label class="check-label">
            <input type="checkbox" checked={sure} onChange={(e) => setSure(e.currentTarget.checked)} /> I
            understand that the matching events and their deliveries are deleted for good
          </label>
        )}
      </ActionForm>
      {started ? (
        <>
          <SuccessNotice>
            {started.dry_run ? 'Count' : 'Purge'} {started.purge_id} started:{' '}
            {formatNumber(started.events_to_purge)} events {started.dry_run ? 'match' : 'to delete'}.
          </SuccessNotice>
          <TaskProgress id={started.task_id} showLogs={false} />
        </>
      ) : null}
    </>
  );
}
