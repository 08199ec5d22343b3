import { useState } from 'preact/hooks';
import { Badge } from '../../components/badge.tsx';
import { Link } from '../../components/link.tsx';
import { formatTime } from '../../format.ts';
import { useEventStream } from './use-event-stream.ts';

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
  return (
    <section aria-labelledby="live-title">
      <div class="section-header">
        <h2 id="live-title">Live tail</h2>
        <span role="status" data-testid="stream-status">
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
      </form>
      {stream.problem ? (
        <p class="notice notice-muted" role="status">
          {stream.problem}
          {stream.status === 'unavailable'
            ? ' — the live tail is not available on this platform; retrying.'
            : ''}
        </p>
      ) : null}
      <div class="table-wrap live-tail">
        <table>
          <caption class="sr-only">Live events, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Type</th>
              <th scope="col">Source</th>
              <th scope="col">Data</th>
            </tr>
          </thead>
          <tbody data-testid="live-events">
            {stream.events.length === 0 ? (
              <tr>
                <td colSpan={4} class="muted">
                  Waiting for events matching <code>{pattern}</code>…
                </td>
              </tr>
            ) : null}
            {stream.events.map((e) => (
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
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
