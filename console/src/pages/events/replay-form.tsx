import { useState } from 'preact/hooks';
import { post } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { Field } from '../../components/field.tsx';
import { SuccessNotice } from '../../components/success-notice.tsx';
import { formatNumber } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { TaskProgress } from '../tasks/task-progress.tsx';
import { localToIso, splitList } from './list-text.ts';

interface ReplayStart {
  replay_id: string;
  task_id: string;
  events_to_replay: number;
  estimated_duration_minutes: number;
}

/** POST /api/v1/events/replay: stored events sent again to subscriptions, as a task followed to its end. */
export function ReplayForm() {
  const [types, setTypes] = useState('');
  const [start, setStart] = useState('');
  const [end, setEnd] = useState('');
  const [targets, setTargets] = useState('');
  const [mode, setMode] = useState('sequential');
  const [delay, setDelay] = useState('0');
  const [started, setStarted] = useState<ReplayStart | null>(null);
  const replay = useAction(async () => {
    setStarted(null);
    const eventTypes = splitList(types);
    const subscribers = splitList(targets);
    const filter = {
      ...(eventTypes.length ? { event_types: eventTypes } : {}),
      ...(localToIso(start) ? { start_time: localToIso(start) } : {}),
      ...(localToIso(end) ? { end_time: localToIso(end) } : {}),
    };
    setStarted(
      await post<ReplayStart>('/events/replay', {
        event_filter: filter,
        ...(subscribers.length ? { target_subscribers: subscribers } : {}),
        replay_mode: mode,
        delay_between_events_ms: Number(delay),
      }),
    );
  });
  const errors = replay.error?.fieldErrors ?? {};
  return (
    <>
      <ActionForm
        label="Replay events"
        action={replay}
        submit="Start replay"
        errorTitle="Could not start the replay"
      >
        <Field
          label="Event types"
          error={errors['event_filter.event_types']}
          hint="Patterns, comma-separated; empty: every type"
        >
          {(p) => (
            <input
              {...p}
              name="replay-types"
              placeholder="order.*"
              value={types}
              onInput={(e) => setTypes(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field
          label="Emitted from"
          error={errors['event_filter.start_time']}
          hint="Empty: from the first stored event"
        >
          {(p) => (
            <input
              {...p}
              type="datetime-local"
              value={start}
              onInput={(e) => setStart(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Emitted until" error={errors['event_filter.end_time']} hint="Empty: up to now">
          {(p) => (
            <input {...p} type="datetime-local" value={end} onInput={(e) => setEnd(e.currentTarget.value)} />
          )}
        </Field>
        <Field
          label="Subscriptions"
          error={errors['target_subscribers']}
          hint="Subscription ids, comma-separated; empty: every active one an event matches"
        >
          {(p) => (
            <input
              {...p}
              name="replay-targets"
              placeholder="sub_…"
              value={targets}
              onInput={(e) => setTargets(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Order" error={errors['replay_mode']}>
          {(p) => (
            <select {...p} value={mode} onChange={(e) => setMode(e.currentTarget.value)}>
              <option value="sequential">Sequential: each event settles before the next</option>
              <option value="parallel">Parallel: queued ahead</option>
            </select>
          )}
        </Field>
        <Field label="Delay between events (ms)" error={errors['delay_between_events_ms']}>
          {(p) => (
            <input
              {...p}
              type="number"
              min={0}
              max={60000}
              required
              value={delay}
              onInput={(e) => setDelay(e.currentTarget.value)}
            />
          )}
        </Field>
      </ActionForm>
      {started ? (
        <>
          <SuccessNotice>
            Replay {started.replay_id} started: {formatNumber(started.events_to_replay)} events to replay,
            about {formatNumber(started.estimated_duration_minutes)} min.
          </SuccessNotice>
          <TaskProgress id={started.task_id} showLogs={false} />
        </>
      ) : null}
    </>
  );
}
