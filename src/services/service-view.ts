import { Type } from '@sinclair/typebox';
import { Timestamp } from '../http/envelope.js';
import type { ServiceRegistry } from '../kernel/service-registry.js';
import { timedHealth } from '../kernel/timed-health.js';
import { maskedSettings } from './masked-settings.js';

const Measured = (description: string) =>
  Type.Union([Type.Number(), Type.Null()], {
    description: `${description}; null when the service does not measure it`,
  });

export const ServiceView = Type.Object({
  name: Type.String({ examples: ['database'] }),
  type: Type.String({ examples: ['storage'] }),
  status: Type.String({
    examples: ['running'],
    description: 'stopped, starting, running, stopping or failed',
  }),
  health: Type.String({ examples: ['healthy'], description: 'healthy, warning or unhealthy' }),
  version: Type.String({ description: 'The platform version the service is part of' }),
  dependencies: Type.Array(Type.String()),
  dependents: Type.Array(Type.String()),
  config: Type.Record(Type.String(), Type.Unknown(), {
    description: "The service's settings, secrets masked",
  }),
  metrics: Type.Object(
    {
      uptime: Type.Integer({ description: 'Seconds since the service last started (0 when not running)' }),
      requests_handled: Measured('Operations the service handled since start'),
      events_processed: Measured('Events the service processed since start'),
      avg_response_time_ms: Measured('Mean time per operation'),
      error_rate: Measured('Share of operations that failed, 0..1'),
    },
    { additionalProperties: Type.Number(), description: 'Plus every other figure the service measures' },
  ),
  recent_errors: Type.Array(
    Type.Object({ timestamp: Timestamp, error: Type.String(), count: Type.Integer() }),
  ),
});

const STANDARD = ['requests_handled', 'events_processed', 'avg_response_time_ms', 'error_rate'] as const;

/** One registered service as the services API shows it; every figure is the service's own measurement. */
export async function serviceView(registry: ServiceRegistry, name: string, version: string) {
  const service = registry.get(name);
  const health = await timedHealth(registry, name);
  let figures: Record<string, number> = {};
  try {
    figures = service.metrics();
  } catch (err) {
    registry.recordError(name, err);
  }
  let settings: unknown = {};
  try {
    settings = maskedSettings(service.settings?.() ?? {});
  } catch (err) {
    registry.recordError(name, err);
  }
  const extra: Record<string, number> = {};
  for (const [k, v] of Object.entries(figures)) {
    if (!(STANDARD as readonly string[]).includes(k) && k !== 'uptime' && Number.isFinite(v)) extra[k] = v;
  }
  const measured = (k: (typeof STANDARD)[number]) =>
    Number.isFinite(figures[k]) ? (figures[k] as number) : null;
  return {
    name,
    type: service.type,
    status: registry.state(name),
    health: health.status,
    version,
    dependencies: [...service.dependencies],
    dependents: registry.dependents(name),
    config: settings as Record<string, unknown>,
    metrics: {
      uptime: registry.uptimeSeconds(name),
      requests_handled: measured('requests_handled'),
      // The event bus names its count `processed_events` (the /status field); both mean the same.
      events_processed: measured('events_processed') ?? alias(figures, 'processed_events'),
      avg_response_time_ms: measured('avg_response_time_ms'),
      error_rate: measured('error_rate'),
      ...extra,
    },
    recent_errors: registry.recentErrors(name),
  };
}

const alias = (figures: Record<string, number>, key: string): number | null =>
  Number.isFinite(figures[key]) ? (figures[key] as number) : null;
