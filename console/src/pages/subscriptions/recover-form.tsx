import { useState } from 'preact/hooks';
import { post } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { Field } from '../../components/field.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { useAction } from '../../hooks/use-action.ts';
import { TaskProgress } from '../tasks/task-progress.tsx';

/** `datetime-local` wants local time without a zone: an hour ago, as the form's starting value. */
function localHourAgo(): string {
  const d = new Date(Date.now() - 3_600_000);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
}

/**
 * "Recover failed since…": POST /events/subscriptions/{id}/recover with `since`, which queues again every
 * delivery of the subscription that failed since then, as a task whose progress is followed here.
 */
export function RecoverForm({ id, onFinished }: { id: string; onFinished: () => void }) {
  const [since, setSince] = useState(localHourAgo);
  const [taskId, setTaskId] = useState<string | null>(null);
  const recover = useAction(async () => {
    setTaskId(null);
    const res = await post<{ task_id: string }>(`/events/subscriptions/${encodeURIComponent(id)}/recover`, {
      since: new Date(since).toISOString(),
    });
    setTaskId(res.task_id);
  });
  const errors = recover.error?.fieldErrors ?? {};
  return (
    <section aria-labelledby="recover-title">
      <h2 id="recover-title">Recover failed deliveries</h2>
      <RequiresOperation
        operation="POST /api/v1/events/subscriptions/{subscription_id}/recover"
        what="Recovering failed deliveries"
      >
        <ActionForm
          label="Recover failed deliveries"
          action={recover}
          submit="Recover failed deliveries"
          errorTitle="Could not start the recovery"
        >
          <Field
            label="Failed since"
            error={errors['since']}
            hint="Every delivery of this subscription that failed since then is queued again"
          >
            {(p) => (
              <input
                {...p}
                type="datetime-local"
                required
                value={since}
                onInput={(e) => setSince(e.currentTarget.value)}
              />
            )}
          </Field>
        </ActionForm>
        {taskId ? <TaskProgress id={taskId} showLogs={false} onFinished={onFinished} /> : null}
      </RequiresOperation>
    </section>
  );
}
