import { useState } from 'preact/hooks';
import { Badge } from '../../components/badge.tsx';
import { DataTable } from '../../components/data-table.tsx';
import { Link } from '../../components/link.tsx';
import { formatTime } from '../../format.ts';
import { useEventStream } from './use-event-stream.ts';
import { useRowAnnouncer } from './use-row-announcer.ts';

/** Events as they happen, filtered by a pattern (`*` one segment, `**` any number, lone `*` everything). */
export function LiveTail() {
  const [draft, setDraft] = useState('*');
  const [pattern, setPattern] = useState('*');
  const [paused, setPaused] = useState(false);
  const patterns = pattern
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  const stream = useEventStream(patterns.length ? patterns : ['*'], paused);
  // New rows are announced to screen readers politely, at most one summary every few seconds; the operator can
  // mute the announcements without pausing the tail.
  const [muted, setMuted] = useState(false);
  const announcement = useRowAnnouncer(
    stream.events.map((e) => e.event_id),
    muted,
  );
  return (
    <section aria-labelledby="live-title">
      <div class="section-header">
        <h2 id="live-title">Live tail</h2>
        <span role="status" data-testid="stream-status" data-patterns={stream.subscribedTo ?? ''}>
          <Badge value={stream.status} />
        </span>
      </div>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setPattern(draft);
        }}
      >
        <label>
          Patterns{' '}
          <input
            name="patterns"
            value={draft}
            onInput={(e) => setDraft(e.currentTarget.value)}
            placeholder="user.*, order.**"
          />
        </label>
        <button type="submit">Apply</button>
        <button type="button" aria-pressed={paused} onClick={() => setPaused(!paused)}>
          {paused ? 'Resume' : 'Pause'}
        </button>
        <button type="button" onClick={stream.clear}>
          Clear
        </button>
        <button
          type="button"
          aria-pressed={muted}
          data-testid="mute-announcements"
          onClick={() => setMuted(!muted)}
        >
          Mute announcements
        </button>
      </form>
      <p class="sr-only" aria-live="polite" data-testid="live-announcement">
        {announcement}
      </p>
      {stream.problem ? (
        <p class="notice notice-muted" role="status">
          {stream.problem}
          {stream.status === 'unavailable'
            ? ' — the live tail is not available on this platform; retrying.'
            : ''}
        </p>
      ) : null}
      <DataTable
        wrapClass="live-tail"
        caption="Live events, newest first"
        bodyTestId="live-events"
        columns={['Time', 'Type', 'Source', 'Data']}
        rows={stream.events}
        empty={
          <>
            Waiting for events matching <code>{pattern}</code>…
          </>
        }
        row={(e) => (
          <tr key={e.event_id}>
            <td class="nowrap">{formatTime(e.timestamp)}</td>
            <td>
              <Link to={`/events/${encodeURIComponent(e.event_id)}`}>{e.event_type}</Link>
            </td>
            <td>{e.source}</td>
            <td>
              <code class="preview">{JSON.stringify(e.data ?? e.data_preview ?? {})}</code>
            </td>
          </tr>
        )}
      />
    </section>
  );
}
