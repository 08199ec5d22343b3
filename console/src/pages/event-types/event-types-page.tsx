import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { JsonView } from '../../components/json-view.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { formatTime } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';

/** One entry of `GET /events/types`. */
interface EventType {
  event_type: string;
  description: string;
  schema: Record<string, unknown>;
  examples: Record<string, unknown>[];
  registered_by: string;
  updated_at: string;
  listeners: {
    subscriptions: { subscription_id: string; name: string; status: string }[];
    plugins: string[];
  };
}

/** The event catalogue: each registered type with its data schema, examples and who listens to it. */
export function EventTypesPage() {
  const list = useApi<{ event_types: EventType[]; catalogue_strict: boolean }>('/events/types', {
    refreshMs: REFRESH.lists,
  });
  return (
    <Page
      title="Event types"
      actions={
        <button type="button" onClick={list.reload}>
          Refresh
        </button>
      }
    >
      <ApiView state={list} what="The event catalogue" endpoint="GET /api/v1/events/types">
        {(d) => (
          <>
            <p data-testid="catalogue-mode">
              {d.catalogue_strict
                ? 'Strict: emits of a type not listed here are refused.'
                : 'Emits of a listed type are validated against its schema; other types are accepted unchecked.'}
            </p>
            {d.event_types.length === 0 ? <p>No event types are registered.</p> : null}
            {d.event_types.map((t) => (
              <EventTypeCard key={t.event_type} type={t} />
            ))}
          </>
        )}
      </ApiView>
    </Page>
  );
}

function EventTypeCard({ type: t }: { type: EventType }) {
  const { subscriptions, plugins } = t.listeners;
  return (
    <article class="panel" aria-labelledby={`type-${t.event_type}`} data-event-type={t.event_type}>
      <h2 id={`type-${t.event_type}`} class="break">
        <code>{t.event_type}</code>
      </h2>
      {t.description ? <p>{t.description}</p> : null}
      <p class="small">
        Registered by <Badge value={t.registered_by} /> · changed {formatTime(t.updated_at)}
      </p>
      <h3>Listeners</h3>
      {subscriptions.length === 0 && plugins.length === 0 ? (
        <p class="small">Nobody listens to it.</p>
      ) : (
        <ul class="break" aria-label={`Listeners of ${t.event_type}`}>
          {subscriptions.map((s) => (
            <li key={s.subscription_id}>
              Subscription{' '}
              <Link to={`/subscriptions/${encodeURIComponent(s.subscription_id)}`}>{s.name}</Link>{' '}
              <Badge value={s.status} />
            </li>
          ))}
          {plugins.map((p) => (
            <li key={p}>
              Plugin <Link to={`/plugins/${encodeURIComponent(p)}`}>{p}</Link>
            </li>
          ))}
        </ul>
      )}
      <details>
        <summary>Schema of the data</summary>
        <JsonView value={t.schema} label={`Schema of ${t.event_type}`} />
      </details>
      {t.examples.length > 0 ? (
        <details>
          <summary>Examples ({t.examples.length})</summary>
          {t.examples.map((e, i) => (
            <JsonView key={i} value={e} label={`Example ${i + 1}`} />
          ))}
        </details>
      ) : null}
    </article>
  );
}
