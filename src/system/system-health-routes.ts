import { Type } from '@sinclair/typebox';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Timestamp } from '../http/envelope.js';
import { overallStatus } from './overall-status.js';
import type { SystemHealth } from './system-health.js';

const HealthValue = Type.Union([Type.Literal('healthy'), Type.Literal('warning'), Type.Literal('unhealthy')]);

const Check = Type.Object(
  {
    name: Type.String({ examples: ['connectivity'] }),
    status: Type.Union([Type.Literal('pass'), Type.Literal('warning'), Type.Literal('fail')]),
  },
  {
    additionalProperties: true,
    description: 'Plus what the check measured: response_time_ms, avg_query_time_ms, current_mb, limit_mb, …',
  },
);

const ComponentsHealth = Type.Object({
  overall_status: HealthValue,
  components: Type.Array(
    Type.Object({
      name: Type.String({ examples: ['database'] }),
      status: HealthValue,
      response_time_ms: Type.Number({ description: 'Time the component took to answer its health check' }),
      checks: Type.Array(Check),
    }),
  ),
});

const Nullable = (description: string) => Type.Union([Type.Number(), Type.Null()], { description });

const SystemHealthReport = Type.Object({
  overall_status: HealthValue,
  timestamp: Timestamp,
  uptime_seconds: Type.Integer(),
  components: Type.Array(
    Type.Object({
      name: Type.String(),
      status: HealthValue,
      response_time_ms: Type.Number(),
      details: Type.Record(Type.String(), Type.Unknown()),
    }),
  ),
  metrics: Type.Object({
    requests_per_minute: Nullable('Responses in the last minute (null until request metrics are collected)'),
    average_response_time: Nullable('Mean response time in ms over the last minute'),
    error_rate: Nullable('Share of responses in the last minute that were server errors (5xx), 0..1'),
    memory_usage_mb: Type.Number({ description: 'Resident set size now' }),
    cpu_usage_percent: Type.Number({ description: 'Process CPU over the last minute, in % of one core' }),
    window_seconds: Type.Number({ description: 'Seconds the figures cover (less than 60 just after start)' }),
  }),
});

export function registerSystemHealthRoutes(app: App, deps: { health: SystemHealth }): void {
  app.get(
    '/api/v1/components/health',
    {
      config: { access: access.permission('read:system') },
      schema: {
        operationId: 'getComponentsHealth',
        tags: ['system'],
        summary: "Every component's health checks, measured now",
        response: { 200: Envelope(ComponentsHealth) },
      },
    },
    async (request) => {
      const components = await deps.health.components();
      return ok(request, {
        overall_status: overallStatus(components.map((c) => c.status)),
        components: components.map((c) => ({
          name: c.name,
          status: c.status,
          response_time_ms: c.response_time_ms,
          checks: c.checks,
        })),
      });
    },
  );

  app.get(
    '/api/v1/admin/system/health',
    {
      config: { access: access.admin('admin:system') },
      schema: {
        operationId: 'adminGetSystemHealth',
        tags: ['admin'],
        summary: 'System health: every component, uptime, and the last minute of requests, memory and CPU',
        response: { 200: Envelope(SystemHealthReport) },
      },
    },
    async (request) => ok(request, await deps.health.report()),
  );
}
