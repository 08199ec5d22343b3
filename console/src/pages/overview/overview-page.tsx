import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { formatDuration } from '../../format.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import type { Subscription } from '../subscriptions/subscription-types.ts';
import { type BackupItem, BackupPanel } from './backup-panel.tsx';
import { HealthPanel } from './health-panel.tsx';
import { MetricsPanel } from './metrics-panel.tsx';
import {
  type ComponentsHealth,
  type EventsHealth,
  figuresOf,
  num,
  type Status,
  type Summary,
} from './overview-types.ts';
import { StreamsPanel } from './streams-panel.tsx';
import { TrafficPanel } from './traffic-panel.tsx';
import { WebhooksPanel } from './webhooks-panel.tsx';

/**
 * What an operator checks first: health (and which component is not healthy, and why), requests with server
 * errors apart from client errors, webhook deliveries failing and waiting, stream connections, the last backup;
 * then the charts. Each service's internal counters are on the service details page.
 */
export function OverviewPage() {
  const status = useApi<Status>('/status', { refreshMs: REFRESH.status });
  const health = useApi<ComponentsHealth>('/components/health', { refreshMs: REFRESH.slow });
  const summary = useApi<Summary>('/metrics/summary', { refreshMs: REFRESH.status });
  const events = useApi<EventsHealth>('/events/health', { refreshMs: REFRESH.slow });
  const subscriptions = useApi<{ subscriptions: Subscription[] }>('/events/subscriptions', {
    refreshMs: REFRESH.slow,
  });
  const backups = useApi<{ backups: BackupItem[] }>('/backup', { refreshMs: REFRESH.slow });
  const s = status.data;
  return (
    <Page title="Overview" actions={<Link to="/overview/details">Service details</Link>}>
      {s ? (
        <p class="muted">
          Version {s.version}, {s.environment}, up {formatDuration(s.uptime)}.
        </p>
      ) : null}
      <div class="headline">
        <HealthPanel state={health} />
        <TrafficPanel state={summary} rate={num(figuresOf(s, 'metrics_collector')['requests_per_second'])} />
        <WebhooksPanel health={events} subscriptions={subscriptions} />
        <StreamsPanel hub={figuresOf(s, 'stream_hub')} />
        <BackupPanel state={backups} />
      </div>
      <MetricsPanel />
    </Page>
  );
}
