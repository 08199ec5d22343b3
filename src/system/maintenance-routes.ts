import { Type } from '@sinclair/typebox';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Timestamp } from '../http/envelope.js';
import { type PlatformEvents, requestOrigin } from '../kernel/platform-events.js';
import type { Maintenance } from './maintenance.js';

const MaintenanceView = Type.Object({
  enabled: Type.Boolean(),
  message: Type.String(),
  estimated_duration_minutes: Type.Union([Type.Integer(), Type.Null()]),
  estimated_end: Type.Union([Timestamp, Type.Null()]),
  allow_admin_access: Type.Boolean(),
  started_at: Type.Union([Timestamp, Type.Null()]),
  updated_by: Type.Union([Type.String(), Type.Null()]),
});

export function registerMaintenanceRoutes(
  app: App,
  deps: { maintenance: Maintenance; audit: AuditLog; events: PlatformEvents },
): void {
  app.get(
    '/api/v1/admin/system/maintenance',
    {
      config: { access: access.admin('admin:system'), maintenanceToggle: true },
      schema: {
        operationId: 'adminGetMaintenance',
        tags: ['admin'],
        summary: 'Whether maintenance mode is on',
        response: { 200: Envelope(MaintenanceView) },
      },
    },
    async (request) => ok(request, deps.maintenance.current()),
  );

  app.post(
    '/api/v1/admin/system/maintenance',
    {
      config: { access: access.admin('admin:system'), maintenanceToggle: true },
      schema: {
        operationId: 'adminSetMaintenance',
        tags: ['admin'],
        summary: 'Turn maintenance mode on or off; while on, other requests get 423 SYSTEM_LOCKED',
        body: Type.Object(
          {
            enabled: Type.Boolean(),
            message: Type.Optional(Type.String({ maxLength: 1000 })),
            estimated_duration_minutes: Type.Optional(Type.Integer({ minimum: 0, maximum: 525_600 })),
            allow_admin_access: Type.Optional(Type.Boolean({ default: true })),
          },
          {
            additionalProperties: false,
            examples: [{ enabled: true, message: 'Upgrading', estimated_duration_minutes: 15 }],
          },
        ),
        response: { 200: Envelope(MaintenanceView) },
      },
    },
    async (request) => {
      const state = await deps.maintenance.set(request.body, request.principal!.username);
      await deps.audit.record(request, {
        action: state.enabled ? 'system.maintenance.enable' : 'system.maintenance.disable',
        resourceType: 'system',
        resourceId: 'maintenance',
        details: { ...request.body },
      });
      deps.events.announce(
        state.enabled ? 'system.maintenance.enabled' : 'system.maintenance.disabled',
        'system',
        {
          message: state.message,
          estimated_end: state.estimated_end,
          allow_admin_access: state.allow_admin_access,
        },
        {
          actor: { id: request.principal!.userId, username: request.principal!.username },
          origin: requestOrigin(request),
        },
      );
      return ok(request, state);
    },
  );
}
