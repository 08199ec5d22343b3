import { Type } from '@sinclair/typebox';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import { AppError } from '../http/app-error.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok } from '../http/envelope.js';
import type { ServiceRegistry } from '../kernel/service-registry.js';
import type { RestartGate } from '../system/restart-gate.js';
import { ServiceView, serviceView } from './service-view.js';

const tags = ['services'];
const NameParams = Type.Object({
  service_name: Type.String({ minLength: 1, maxLength: 100, examples: ['database'] }),
});

export function registerServiceRoutes(
  app: App,
  deps: { registry: ServiceRegistry; gate: RestartGate; audit: AuditLog; version: string },
): void {
  const { registry } = deps;

  app.get(
    '/api/v1/services',
    {
      config: { access: access.permission('read:system') },
      schema: {
        operationId: 'listServices',
        tags,
        summary: "The platform's registered services, in start order",
        response: { 200: Envelope(Type.Object({ services: Type.Array(ServiceView) })) },
      },
    },
    async (request) => {
      const services = await Promise.all(registry.names().map((n) => serviceView(registry, n, deps.version)));
      return ok(request, { services });
    },
  );

  app.get(
    '/api/v1/services/:service_name',
    {
      config: { access: access.permission('read:system') },
      schema: {
        operationId: 'getService',
        tags,
        summary: 'One registered service',
        params: NameParams,
        response: { 200: Envelope(ServiceView), 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => ok(request, await serviceView(registry, request.params.service_name, deps.version)),
  );

  app.post(
    '/api/v1/services/:service_name/restart',
    {
      config: { access: access.permission('admin:services') },
      schema: {
        operationId: 'restartService',
        tags,
        summary: 'Restart a service: its dependents stop, it restarts, they start again',
        description:
          'Requests arriving meanwhile wait for the restart to finish, and the restart waits for requests in ' +
          'flight, so none is lost.',
        params: NameParams,
        response: {
          200: Envelope(
            Type.Object({
              service: Type.String(),
              action: Type.Literal('restart'),
              status: Type.Literal('completed'),
              duration_ms: Type.Number(),
              restarted: Type.Array(Type.String(), { description: 'The service, then its dependents' }),
            }),
          ),
          404: { $ref: 'ErrorEnvelope#' },
          503: { $ref: 'ErrorEnvelope#' },
        },
      },
    },
    async (request) => {
      const name = request.params.service_name;
      registry.get(name); // unknown → 404 before anything stops
      let outcome: { durationMs: number; restarted: string[] };
      try {
        outcome = await deps.gate.run(() => registry.restart(name), request);
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        await deps.audit.record(request, {
          action: 'service.restart',
          resourceType: 'service',
          resourceId: name,
          details: { status: 'failed', error: message },
        });
        throw new AppError('SERVICE_UNAVAILABLE', `Service '${name}' did not start again: ${message}`, {
          details: {
            service: name,
            states: Object.fromEntries(registry.names().map((n) => [n, registry.state(n)])),
          },
        });
      }
      const result = {
        service: name,
        action: 'restart' as const,
        status: 'completed' as const,
        duration_ms: Math.round(outcome.durationMs * 100) / 100,
        restarted: outcome.restarted,
      };
      await deps.audit.record(request, {
        action: 'service.restart',
        resourceType: 'service',
        resourceId: name,
        details: { status: 'completed', duration_ms: result.duration_ms, restarted: outcome.restarted },
      });
      return ok(request, result);
    },
  );
}
