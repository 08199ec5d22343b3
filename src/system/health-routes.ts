import { performance } from 'node:perf_hooks';
import { Type } from '@sinclair/typebox';
import type { PlatformConfig } from '../config/config-schema.js';
import { access } from '../http/access.js';
import { AppError } from '../http/app-error.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Timestamp } from '../http/envelope.js';
import { plainJson, SerializedData } from '../http/plain-json.js';
import type { ServiceRegistry } from '../kernel/service-registry.js';
import { timedHealth } from '../kernel/timed-health.js';
import { overallStatus } from './overall-status.js';
import { PLATFORM_VERSION } from './platform-info.js';

const tags = ['system'];

/** Names /status shows for services whose registry name differs from the interface's component name (§4.1). */
const STATUS_NAMES: Record<string, string> = { plugin_manager: 'plugins' };
const STATUS_MAX_AGE_MS = 1000;

interface StatusData {
  status: string;
  version: string;
  environment: string;
  uptime: number;
  components: Record<string, { status: string; [k: string]: unknown } | string>;
}

const ComponentStatus = Type.Object(
  { status: Type.String({ examples: ['healthy'] }) },
  { additionalProperties: true, description: 'Status plus the figures the component measures' },
);

export function registerHealthRoutes(
  app: App,
  deps: { registry: ServiceRegistry; config: () => PlatformConfig; startedAt: number },
): void {
  const { registry } = deps;

  app.get(
    '/api/v1/health',
    {
      config: { access: access.public(), maintenanceExempt: true, rateLimitExempt: true },
      schema: {
        operationId: 'getHealth',
        tags,
        summary: 'Liveness: answers while the process serves (not enveloped)',
        response: {
          200: Type.Object({ status: Type.String({ examples: ['healthy'] }), timestamp: Timestamp }),
        },
      },
    },
    async () => ({ status: 'healthy', timestamp: new Date().toISOString() }),
  );

  app.get(
    '/api/v1/ready',
    {
      config: { access: access.public(), maintenanceExempt: true, rateLimitExempt: true },
      schema: {
        operationId: 'getReady',
        tags,
        summary: 'Readiness: 200 when every service runs and the database answers, else 503',
        response: {
          200: Envelope(
            Type.Object({ ready: Type.Boolean(), services: Type.Record(Type.String(), Type.String()) }),
          ),
        },
      },
    },
    async (request, reply) => {
      const services: Record<string, string> = {};
      for (const name of registry.names()) services[name] = registry.state(name);
      let ready = Object.values(services).every((s) => s === 'running');
      if (ready && registry.has('database')) {
        ready = (await timedHealth(registry, 'database')).status !== 'unhealthy';
      }
      // Not ready is an error answer (503 SERVICE_UNAVAILABLE in the error envelope), naming each service's state.
      if (!ready)
        throw new AppError('SERVICE_UNAVAILABLE', 'The platform is not ready', { details: { services } });
      return reply.code(200).send(ok(request, { ready, services }));
    },
  );

  // The status is assembled at most once a second per format, like the health checks it is made of
  // (docs/operations.md): a dashboard polling it many times a second costs little more than one.
  // Kept serialized too: turning the snapshot into JSON was the largest part of answering it.
  // A start, stop or restart of any service ends the snapshot at once, as it ends the health result it used.
  const recent = new Map<
    'full' | 'short',
    { at: number; generation: number; data: SerializedData<StatusData> }
  >();
  const assembleStatus = async (format: 'full' | 'short'): Promise<StatusData> => {
    const names = registry.names();
    const healths = await Promise.all(names.map((n) => timedHealth(registry, n)));
    const components: StatusData['components'] = {};
    names.forEach((service, i) => {
      const health = healths[i]!;
      const name = STATUS_NAMES[service] ?? service;
      components[name] =
        format === 'short'
          ? health.status
          : // metrics() is read now; the health details may be a check up to a second old (the registry's
            // cache): where both name a figure, the live one wins, so one component never shows two moments.
            { status: health.status, ...(health.details ?? {}), ...registry.get(service).metrics() };
    });
    return {
      status: overallStatus(healths.map((h) => h.status)),
      version: PLATFORM_VERSION,
      environment: deps.config().server.environment,
      uptime: Math.floor((Date.now() - deps.startedAt) / 1000),
      components,
    };
  };

  app.get(
    '/api/v1/status',
    {
      config: { access: access.permission('read:system'), maintenanceExempt: true },
      ...plainJson,
      schema: {
        operationId: 'getStatus',
        tags,
        summary: 'System status with every component read from the service registry',
        querystring: Type.Object(
          {
            format: Type.Optional(
              Type.Union([Type.Literal('full'), Type.Literal('short')], { default: 'full' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Envelope(
            Type.Object({
              status: Type.String({ examples: ['healthy'] }),
              version: Type.String(),
              environment: Type.String(),
              uptime: Type.Integer({ description: 'Seconds since start' }),
              components: Type.Record(Type.String(), Type.Union([ComponentStatus, Type.String()])),
            }),
          ),
        },
      },
    },
    async (request) => {
      const format = request.query.format === 'short' ? 'short' : 'full';
      const cached = recent.get(format);
      // The serializer (plainJson) writes a SerializedData's JSON as the body's `data`.
      const answer = (data: SerializedData<StatusData>) => ok(request, data as unknown as StatusData);
      if (
        cached &&
        cached.generation === registry.healthGeneration &&
        performance.now() - cached.at < STATUS_MAX_AGE_MS
      )
        return answer(cached.data);
      const generation = registry.healthGeneration;
      const data = SerializedData.of(await assembleStatus(format));
      recent.set(format, { at: performance.now(), generation, data });
      return answer(data);
    },
  );
}
