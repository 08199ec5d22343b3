import { Type } from '@sinclair/typebox';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Timestamp } from '../http/envelope.js';
import { requestOrigin } from '../kernel/platform-events.js';
import type { SystemRestart } from './restart.js';

const NullableTimestamp = Type.Union([Timestamp, Type.Null()]);

const RestartView = Type.Object({
  status: Type.Union(
    [
      Type.Literal('idle'),
      Type.Literal('scheduled'),
      Type.Literal('restarting'),
      Type.Literal('completed'),
      Type.Literal('failed'),
    ],
    { description: 'scheduled → restarting → completed | failed (idle: none requested since start)' },
  ),
  reason: Type.Union([Type.String(), Type.Null()]),
  requested_by: Type.Union([Type.String(), Type.Null()]),
  requested_at: NullableTimestamp,
  delay_seconds: Type.Union([Type.Integer(), Type.Null()]),
  scheduled_for: NullableTimestamp,
  notify_users: Type.Boolean(),
  started_at: NullableTimestamp,
  completed_at: NullableTimestamp,
  duration_ms: Type.Union([Type.Number(), Type.Null()]),
  services: Type.Array(Type.String(), { description: 'Start order; they stop in reverse' }),
  error: Type.Union([Type.String(), Type.Null()]),
});

export function registerRestartRoutes(app: App, deps: { restart: SystemRestart; audit: AuditLog }): void {
  app.post(
    '/api/v1/admin/system/restart',
    {
      config: { access: access.admin('admin:system') },
      schema: {
        operationId: 'adminRestartSystem',
        tags: ['admin'],
        summary: "Restart this instance's services in-process after a delay (202)",
        description:
          'Every service stops and starts again while the HTTP server stays up: requests arriving meanwhile wait ' +
          'for the restart and requests in flight finish first, so none is lost. With `notify_users` the ' +
          '`system.restart` event is emitted first (stream clients see it). Running tasks are interrupted. ' +
          'Follow the restart at `GET /api/v1/admin/system/restart`.',
        body: Type.Object(
          {
            reason: Type.String({ minLength: 1, maxLength: 1000 }),
            delay_seconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 3600, default: 0 })),
            notify_users: Type.Optional(Type.Boolean({ default: true })),
          },
          {
            additionalProperties: false,
            examples: [{ reason: 'Apply new settings', delay_seconds: 30, notify_users: true }],
          },
        ),
        response: { 202: Envelope(RestartView), 409: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request, reply) => {
      const p = request.principal!;
      const body = request.body;
      const state = deps.restart.schedule(
        {
          reason: body.reason,
          delaySeconds: body.delay_seconds ?? 0,
          notifyUsers: body.notify_users ?? true,
          // The request may have waited at the restart gate: when it arrived, not when it got here, counts.
          arrivedAt: Date.now() - reply.elapsedTime,
        },
        { id: p.userId, username: p.username },
        requestOrigin(request),
      );
      await deps.audit.record(request, {
        action: 'system.restart',
        resourceType: 'system',
        resourceId: 'services',
        details: {
          reason: body.reason,
          delay_seconds: state.delay_seconds,
          notify_users: state.notify_users,
        },
      });
      return reply.code(202).send(ok(request, state, `Restart scheduled for ${state.scheduled_for}`));
    },
  );

  app.get(
    '/api/v1/admin/system/restart',
    {
      config: { access: access.admin('admin:system') },
      schema: {
        operationId: 'adminGetRestart',
        tags: ['admin'],
        summary: "The last restart of this instance's services requested since it started",
        response: { 200: Envelope(RestartView) },
      },
    },
    async (request) => ok(request, deps.restart.current()),
  );
}
