import type { MetricFamily } from '../kernel/metric-family.js';
import type { ServiceRegistry } from '../kernel/service-registry.js';
import { HEALTH_TIMEOUT_MS, timedHealth, within } from '../kernel/timed-health.js';

type Kind = 'counter' | 'gauge';

/**
 * How a figure of a service's `metrics()` is exported: the family's name (Prometheus conventions: `_total`
 * for counters, base units `_seconds` and `_bytes`), its help, the labels that tell it from its siblings, and
 * the factor to base units.
 */
interface Export {
  field: string;
  name: string;
  kind: Kind;
  help: string;
  labels?: Record<string, string>;
  scale?: number;
}

const MS = 1 / 1000;

/** Service name → the figures of its `metrics()` that are exported. */
const EXPORTS: Record<string, Export[]> = {
  event_bus: [
    {
      field: 'processed_events',
      name: 'platform_events_written_total',
      kind: 'counter',
      help: 'Events committed to the store by this instance',
    },
    {
      field: 'committed_batches',
      name: 'platform_event_batches_total',
      kind: 'counter',
      help: 'Write batches of emitted events, by outcome',
      labels: { outcome: 'committed' },
    },
    {
      field: 'failed_batches',
      name: 'platform_event_batches_total',
      kind: 'counter',
      help: 'Write batches of emitted events, by outcome',
      labels: { outcome: 'failed' },
    },
    {
      field: 'average_commit_ms',
      name: 'platform_event_batch_commit_average_seconds',
      kind: 'gauge',
      help: 'Mean time to commit a batch of events',
      scale: MS,
    },
    {
      field: 'average_batch_size',
      name: 'platform_event_batch_average_events',
      kind: 'gauge',
      help: 'Mean number of events per committed batch',
    },
    {
      field: 'queue_size',
      name: 'platform_emit_queue_events',
      kind: 'gauge',
      help: 'Emitted events waiting for their batch to commit',
    },
    {
      field: 'publish_failures',
      name: 'platform_event_publish_failures_total',
      kind: 'counter',
      help: 'Committed batches whose announcement to the other instances failed',
    },
  ],
  event_store: [
    {
      field: 'pending_deliveries',
      name: 'platform_outbox_pending_deliveries',
      kind: 'gauge',
      help: 'Deliveries (webhook and plugin) waiting in the outbox, all subscriptions',
    },
    {
      field: 'last_sequence',
      name: 'platform_event_last_sequence',
      kind: 'gauge',
      help: 'Sequence number of the newest stored event',
    },
  ],
  webhook_dispatcher: [
    {
      field: 'deliveries_delivered',
      name: 'platform_webhook_deliveries_total',
      kind: 'counter',
      help: 'Deliveries finished by this instance, by outcome',
      labels: { outcome: 'delivered' },
    },
    {
      field: 'deliveries_failed',
      name: 'platform_webhook_deliveries_total',
      kind: 'counter',
      help: 'Deliveries finished by this instance, by outcome',
      labels: { outcome: 'failed' },
    },
    {
      field: 'deliveries_dropped',
      name: 'platform_webhook_deliveries_total',
      kind: 'counter',
      help: 'Deliveries finished by this instance, by outcome',
      labels: { outcome: 'dropped' },
    },
    {
      field: 'attempts',
      name: 'platform_webhook_attempts_total',
      kind: 'counter',
      help: 'Delivery attempts made by this instance',
    },
    {
      field: 'retries_scheduled',
      name: 'platform_webhook_retries_scheduled_total',
      kind: 'counter',
      help: 'Failed attempts rescheduled by the retry policy',
    },
    {
      field: 'in_flight',
      name: 'platform_webhook_in_flight_deliveries',
      kind: 'gauge',
      help: 'Deliveries being sent right now',
    },
    {
      field: 'held_deliveries',
      name: 'platform_webhook_claimed_deliveries',
      kind: 'gauge',
      help: 'Deliveries this instance has claimed and not yet finished',
    },
    {
      field: 'claims',
      name: 'platform_webhook_claims_total',
      kind: 'counter',
      help: 'Claim rounds on the outbox',
    },
    {
      field: 'record_failures',
      name: 'platform_webhook_record_failures_total',
      kind: 'counter',
      help: 'Attempt results whose write to the store failed',
    },
  ],
  stream_hub: [
    {
      field: 'sse_connections',
      name: 'platform_stream_connections',
      kind: 'gauge',
      help: 'Open live stream connections, by transport',
      labels: { transport: 'sse' },
    },
    {
      field: 'websocket_connections',
      name: 'platform_stream_connections',
      kind: 'gauge',
      help: 'Open live stream connections, by transport',
      labels: { transport: 'websocket' },
    },
    {
      field: 'connections_opened',
      name: 'platform_stream_connections_opened_total',
      kind: 'counter',
      help: 'Stream connections opened',
    },
    {
      field: 'catch_ups',
      name: 'platform_stream_catch_ups_total',
      kind: 'counter',
      help: 'Slow consumers switched to catching up from the store',
    },
    {
      field: 'overflow_closes',
      name: 'platform_stream_slow_consumer_drops_total',
      kind: 'counter',
      help: 'Connections closed because their client fell too far behind',
    },
    {
      field: 'events_offered',
      name: 'platform_stream_events_offered_total',
      kind: 'counter',
      help: 'Events offered to stream connections',
    },
    {
      field: 'queued_events',
      name: 'platform_stream_queued_events',
      kind: 'gauge',
      help: 'Events queued for stream connections',
    },
    {
      field: 'buffered_bytes',
      name: 'platform_stream_buffered_bytes',
      kind: 'gauge',
      help: 'Bytes written to stream sockets and not yet sent',
    },
  ],
  task_runner: [
    {
      field: 'tasks_running',
      name: 'platform_tasks_running',
      kind: 'gauge',
      help: 'Tasks running on this instance',
    },
  ],
  scheduler: [
    {
      field: 'runs',
      name: 'platform_scheduled_job_runs_total',
      kind: 'counter',
      help: 'Runs of scheduled jobs, by outcome',
      labels: { outcome: 'run' },
    },
    {
      field: 'failures',
      name: 'platform_scheduled_job_runs_total',
      kind: 'counter',
      help: 'Runs of scheduled jobs, by outcome',
      labels: { outcome: 'failed' },
    },
  ],
  cache: [
    {
      field: 'hits',
      name: 'platform_cache_hits_total',
      kind: 'counter',
      help: 'Cache look-ups answered from the cache',
    },
    {
      field: 'misses',
      name: 'platform_cache_misses_total',
      kind: 'counter',
      help: 'Cache look-ups that found nothing',
    },
    {
      field: 'evictions',
      name: 'platform_cache_evictions_total',
      kind: 'counter',
      help: 'Entries evicted to keep the cache within its size',
    },
    {
      field: 'l1_entries',
      name: 'platform_cache_entries',
      kind: 'gauge',
      help: 'Entries in the in-process cache',
    },
  ],
  backups: [
    {
      field: 'backups_created',
      name: 'platform_backups_total',
      kind: 'counter',
      help: 'Backups made by this instance, by outcome',
      labels: { outcome: 'completed' },
    },
    {
      field: 'backups_failed',
      name: 'platform_backups_total',
      kind: 'counter',
      help: 'Backups made by this instance, by outcome',
      labels: { outcome: 'failed' },
    },
    {
      field: 'restores_completed',
      name: 'platform_restores_total',
      kind: 'counter',
      help: 'Restores run by this instance, by outcome',
      labels: { outcome: 'completed' },
    },
    {
      field: 'restores_failed',
      name: 'platform_restores_total',
      kind: 'counter',
      help: 'Restores run by this instance, by outcome',
      labels: { outcome: 'failed' },
    },
    {
      field: 'last_backup_bytes',
      name: 'platform_backup_last_size_bytes',
      kind: 'gauge',
      help: 'Size of the last backup archive this instance wrote',
    },
    {
      field: 'last_backup_duration_ms',
      name: 'platform_backup_last_duration_seconds',
      kind: 'gauge',
      help: 'Time the last backup this instance wrote took',
      scale: MS,
    },
  ],
  plugins: [
    {
      field: 'installed',
      name: 'platform_plugins',
      kind: 'gauge',
      help: 'Plugins, by state',
      labels: { state: 'installed' },
    },
    {
      field: 'active',
      name: 'platform_plugins',
      kind: 'gauge',
      help: 'Plugins, by state',
      labels: { state: 'active' },
    },
    {
      field: 'failed',
      name: 'platform_plugins',
      kind: 'gauge',
      help: 'Plugins, by state',
      labels: { state: 'error' },
    },
    {
      field: 'loaded',
      name: 'platform_plugins',
      kind: 'gauge',
      help: 'Plugins, by state',
      labels: { state: 'loaded_here' },
    },
    {
      field: 'errors',
      name: 'platform_plugin_errors_total',
      kind: 'counter',
      help: 'Failed calls into plugins on this instance',
    },
  ],
  security_monitor: [
    {
      field: 'failed_logins_recorded',
      name: 'platform_login_failures_total',
      kind: 'counter',
      help: 'Refused logins seen by this instance',
    },
    {
      field: 'alerts_raised',
      name: 'platform_security_alerts_total',
      kind: 'counter',
      help: 'Security alerts raised',
    },
  ],
  mailer: [
    {
      field: 'emails_sent',
      name: 'platform_emails_total',
      kind: 'counter',
      help: 'E-mails, by outcome',
      labels: { outcome: 'sent' },
    },
    {
      field: 'emails_failed',
      name: 'platform_emails_total',
      kind: 'counter',
      help: 'E-mails, by outcome',
      labels: { outcome: 'failed' },
    },
  ],
  tracing: [
    {
      field: 'tracing_exports',
      name: 'platform_tracing_exports_total',
      kind: 'counter',
      help: 'Batches of spans the OTLP endpoint accepted',
    },
    {
      field: 'tracing_export_failures',
      name: 'platform_tracing_export_failures_total',
      kind: 'counter',
      help: 'Batches of spans the OTLP endpoint refused or could not be reached for',
    },
  ],
  log_store: [
    {
      field: 'records_written',
      name: 'platform_log_records_total',
      kind: 'counter',
      help: 'Log records, by outcome',
      labels: { outcome: 'written' },
    },
    {
      field: 'records_dropped',
      name: 'platform_log_records_total',
      kind: 'counter',
      help: 'Log records, by outcome',
      labels: { outcome: 'dropped' },
    },
  ],
};

const HEALTH_VALUES = ['healthy', 'warning', 'unhealthy'] as const;

/**
 * Every service's figures as Prometheus families: the fields of `metrics()` named in EXPORTS, what a service
 * reports through `prometheus()` (read at scrape time), and each component's health (its cached check: a
 * scrape runs no new checks more than once a second, so nothing that must be current is taken from it).
 * The health checks and `prometheus()` reads run side by side, each bounded by the health timeout: a component
 * that stops answering is reported unhealthy and its scrape-time families left out, the scrape still answers.
 */
export async function serviceFamilies(registry: ServiceRegistry): Promise<MetricFamily[]> {
  const byName = new Map<string, Extract<MetricFamily, { type: Kind }>>();
  const names = registry.names();
  const [healths, extras] = await Promise.all([
    Promise.all(names.map((name) => timedHealth(registry, name))),
    Promise.all(
      names.map((name) => {
        const service = registry.get(name);
        if (!service.prometheus) return [];
        return within(Promise.resolve(service.prometheus()), HEALTH_TIMEOUT_MS, (): MetricFamily[] => []);
      }),
    ),
  ]);
  const health: { labels: Record<string, string>; value: number }[] = [];
  names.forEach((name, i) => {
    const figures = registry.get(name).metrics();
    for (const e of EXPORTS[name] ?? []) {
      const value = figures[e.field];
      if (value === undefined) continue;
      let family = byName.get(e.name);
      if (!family) {
        family = { name: e.name, help: e.help, type: e.kind, samples: [] };
        byName.set(e.name, family);
      }
      family.samples.push({ ...(e.labels ? { labels: e.labels } : {}), value: value * (e.scale ?? 1) });
    }
    const h = healths[i]!;
    for (const status of HEALTH_VALUES)
      health.push({ labels: { component: name, status }, value: h.status === status ? 1 : 0 });
  });
  return [
    {
      name: 'platform_component_status',
      help: 'Health of each component: 1 for its current status',
      type: 'gauge',
      samples: health,
    },
    ...byName.values(),
    ...extras.flat(),
  ];
}
