import { useState } from 'preact/hooks';
import { post } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { Field } from '../../components/field.tsx';
import { Link } from '../../components/link.tsx';
import { SuccessNotice } from '../../components/success-notice.tsx';
import { useAction } from '../../hooks/use-action.ts';
import type { EventItem } from './event-types.ts';

/**
 * POST /api/v1/events: type, source, priority, security level and a JSON data object. `onEmitted` runs after
 * each event the platform accepted (the page shows it among the stored events).
 */
export function EmitEventForm({ onEmitted }: { onEmitted?: () => void }) {
  const [type, setType] = useState('');
  const [source, setSource] = useState('console');
  const [priority, setPriority] = useState('5');
  const [level, setLevel] = useState('internal');
  const [data, setData] = useState('{\n  \n}');
  const [jsonError, setJsonError] = useState<string | undefined>();
  const [emitted, setEmitted] = useState<EventItem | null>(null);
  const emit = useAction(async () => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(data || '{}');
    } catch (err) {
      setJsonError(`Not valid JSON: ${(err as Error).message}`);
      return;
    }
    setJsonError(undefined);
    const res = await post<{ event: EventItem }>('/events', {
      event_type: type,
      source,
      priority: Number(priority),
      security_level: level,
      data: parsed,
    });
    setEmitted(res.event);
    onEmitted?.();
  });
  const errors = emit.error?.fieldErrors ?? {};
  const typeError =
    errors['event_type'] ?? (emit.error?.code === 'INVALID_EVENT_TYPE' ? emit.error.message : undefined);
  return (
    <ActionForm
      label="Emit event"
      action={emit}
      submit="Emit event"
      submitClass="primary"
      errorTitle="Could not emit"
      beforeRun={() => setEmitted(null)}
    >
      <Field label="Event type" error={typeError} hint="Dotted, e.g. order.created">
        {(p) => (
          <input
            {...p}
            name="event_type"
            required
            value={type}
            onInput={(e) => setType(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field label="Source" error={errors['source']}>
        {(p) => <input {...p} value={source} onInput={(e) => setSource(e.currentTarget.value)} />}
      </Field>
      <Field label="Priority (1–10)" error={errors['priority']}>
        {(p) => (
          <input
            {...p}
            type="number"
            min={1}
            max={10}
            value={priority}
            onInput={(e) => setPriority(e.currentTarget.value)}
          />
        )}
      </Field>
      <Field label="Security level" error={errors['security_level']}>
        {(p) => (
          <select {...p} value={level} onChange={(e) => setLevel(e.currentTarget.value)}>
            <option>public</option>
            <option>internal</option>
            <option>confidential</option>
          </select>
        )}
      </Field>
      <Field label="Data (JSON object)" error={jsonError ?? errors['data']}>
        {(p) => (
          <textarea
            {...p}
            name="data"
            rows={5}
            class="mono"
            value={data}
            onInput={(e) => setData(e.currentTarget.value)}
          />
        )}
      </Field>
      <SuccessNotice>
        {emitted ? (
          <>
            Emitted <Link to={`/events/${encodeURIComponent(emitted.event_id)}`}>{emitted.event_id}</Link> to{' '}
            {emitted.subscriber_count ?? 0} subscriber(s).
          </>
        ) : null}
      </SuccessNotice>
    </ActionForm>
  );
}
