import { Type } from '@sinclair/typebox';
import { hasPermission } from '../auth/principal.js';
import { access } from '../http/access.js';
import { AppError } from '../http/app-error.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Timestamp } from '../http/envelope.js';
import { nowIso } from '../kernel/new-id.js';
import type { StreamHub } from '../streams/stream-hub.js';
import { readerOf } from './event-routes.js';
import type { EventStatsStore } from './event-stats-store.js';
import type { EventStore } from './event-store.js';

const tags = ['events'];
const DAY_MS = 86_400_000;
const BACKLOG_WARNING = 10_000;
const ERROR_RATE_WARNING = 0.1;

const Stats = Type.Object({
  time_range: Type.Object({ start: Timestamp, end: Timestamp }),
  group_by: Type.String(),
  summary: Type.Object({
    total_events: Type.Integer(),
    events_per_minute: Type.Number(),
    unique_event_types: Type.Integer(),
    active_subscriptions: Type.Integer(),
    average_processing_time_ms: Type.Number(),
  }),
  by_event_type: Type.Array(
    Type.Object({
      event_type: Type.String(),
      count: Type.Integer(),
      percentage: Type.Number(),
      avg_processing_time_ms: Type.Number(),
    }),
  ),
  by_source: Type.Array(
    Type.Object({ source: Type.String(), count: Type.Integer(), percentage: Type.Number() }),
  ),
  timeline: Type.Array(
    Type.Object({ timestamp: Timestamp, event_count: Type.Integer(), avg_processing_time_ms: Type.Number() }),
  ),
});

const Check = Type.Object({
  name: Type.String(),
  status: Type.Union([Type.Literal('healthy'), Type.Literal('warning')]),
  details: Type.Record(Type.String(), Type.Unknown()),
});

const Health = Type.Object({
  status: Type.Union([Type.Literal('healthy'), Type.Literal('warning')]),
  last_check: Timestamp,
  metrics: Type.Object({
    queue_size: Type.Integer({ description: 'Deliveries waiting in the outbox (pending or in flight)' }),
    processing_rate: Type.Number({
      description: 'Events stored per second since the start of the previous minute (60 to 120 s)',
    }),
    error_rate: Type.Number({ description: 'Share of delivery attempts that failed in the last hour' }),
    average_latency_ms: Type.Number({
      description: 'Mean emit-to-write time of the events stored in the last 5 whole minutes and this one',
    }),
    delivery_latency_ms: Type.Number({ description: 'Mean delivery attempt time over the last hour' }),
    memory_usage_mb: Type.Number({ description: 'Resident memory of this instance' }),
    active_connections: Type.Integer({ description: 'Live SSE and WebSocket clients on this instance' }),
  }),
  checks: Type.Array(Check),
});

export function registerEventStatsRoutes(
  app: App,
  deps: { stats: EventStatsStore; hub: StreamHub; store: EventStore },
): void {
  app.get(
    '/api/v1/events/stats',
    {
      config: { access: access.permission('read:metrics') },
      schema: {
        operationId: 'getEventStats',
        tags,
        summary: 'Counts and processing times of stored events in a time range (default: the last 24 hours)',
        description:
          'Counts only the events the caller may read. Answered from per-minute and per-hour roll-ups; ' +
          '`time_range` is the range counted (a bound inside a very busy minute takes that whole minute; ' +
          'a bound older than `events.rollup_minute_retention_hours` takes its whole hour).',
        querystring: Type.Object(
          {
            start_time: Type.Optional(Type.String({ format: 'date-time' })),
            end_time: Type.Optional(Type.String({ format: 'date-time' })),
            group_by: Type.Optional(
              Type.Union(
                [
                  Type.Literal('event_type'),
                  Type.Literal('source'),
                  Type.Literal('hour'),
                  Type.Literal('day'),
                ],
                { default: 'hour', description: 'hour or day set the timeline buckets (hour otherwise)' },
              ),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(Stats) },
      },
    },
    async (request) => {
      const now = Date.now();
      const end = request.query.end_time ? Date.parse(request.query.end_time) : now;
      const start = request.query.start_time ? Date.parse(request.query.start_time) : end - DAY_MS;
      if (start > end) {
        throw new AppError('VALIDATION_ERROR', 'start_time must not be after end_time', {
          details: { field: 'start_time', reason: 'is after end_time' },
        });
      }
      const groupBy = request.query.group_by ?? 'hour';
      const { time_range, ...stats } = await deps.stats.stats(
        new Date(start).toISOString(),
        new Date(end).toISOString(),
        groupBy === 'day' ? 'day' : 'hour',
        readerOf(request),
      );
      return ok(request, { time_range, group_by: groupBy, ...stats });
    },
  );

  app.get(
    '/api/v1/events/health',
    {
      config: { access: access.authenticated() },
      schema: {
        operationId: 'getEventHealth',
        tags,
        summary: 'Health of the event system, measured: outbox backlog, throughput, errors, latency, streams',
        description: 'Requires permission `events:subscribe` or `read:system`.',
        response: { 200: Envelope(Health) },
      },
    },
    async (request) => {
      const p = request.principal!;
      if (!hasPermission(p, 'events:subscribe') && !hasPermission(p, 'read:system')) {
        throw new AppError('INSUFFICIENT_EVENT_PERMISSIONS', "Permission 'events:subscribe' is required", {
          details: { required_permission: 'events:subscribe' },
        });
      }
      const [queue, recent, hubHealth] = await Promise.all([
        deps.store.pendingOutbox(),
        deps.stats.recent(Date.now()),
        deps.hub.health(),
      ]);
      const checks = [
        {
          name: 'outbox_backlog',
          status: queue > BACKLOG_WARNING ? 'warning' : 'healthy',
          details: { pending_deliveries: queue, warning_above: BACKLOG_WARNING },
        },
        {
          name: 'delivery_errors',
          status: recent.delivery_error_rate > ERROR_RATE_WARNING ? 'warning' : 'healthy',
          details: {
            attempts_last_hour: recent.delivery_attempts_last_hour,
            error_rate: recent.delivery_error_rate,
          },
        },
        {
          name: 'stream_hub',
          status: hubHealth.status === 'healthy' ? 'healthy' : 'warning',
          details: { ...(hubHealth.details ?? {}) },
        },
      ] as const;
      return ok(request, {
        status: checks.some((c) => c.status === 'warning') ? 'warning' : 'healthy',
        last_check: nowIso(),
        metrics: {
          queue_size: queue,
          processing_rate: recent.events_per_second,
          error_rate: recent.delivery_error_rate,
          average_latency_ms: recent.average_emit_latency_ms,
          delivery_latency_ms: recent.average_delivery_latency_ms,
          memory_usage_mb: Math.round((process.memoryUsage().rss / 1_048_576) * 100) / 100,
          active_connections: deps.hub.connectionCount,
        },
        checks: checks.map((c) => ({ ...c })),
      });
    },
  );
}
