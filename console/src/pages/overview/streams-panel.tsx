import { KeyValues } from '../../components/key-values.tsx';
import { formatNumber } from '../../format.ts';
import { num } from './overview-types.ts';

/** Live stream connections (GET /status, component stream_hub): WebSocket and SSE, and slow consumers. */
export function StreamsPanel({ hub }: { hub: Record<string, unknown> }) {
  return (
    <section aria-labelledby="streams-title">
      <h2 id="streams-title">Stream connections</h2>
      <KeyValues
        items={[
          [
            'Connected now',
            <span data-testid="stream-connections">{formatNumber(num(hub['active_connections']))}</span>,
          ],
          ['WebSocket', formatNumber(num(hub['websocket_connections']))],
          ['Server-sent events', formatNumber(num(hub['sse_connections']))],
          ['Catching up (slow consumers)', formatNumber(num(hub['catching_up_connections']))],
          ['Closed for falling behind', formatNumber(num(hub['overflow_closes']))],
        ]}
      />
    </section>
  );
}
