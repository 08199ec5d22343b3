import { Type } from '@sinclair/typebox';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, PageQuery, Pagination, pagination, Timestamp } from '../http/envelope.js';
import type { AuditLog, AuditRow } from './audit-log.js';

const AuditEntry = Type.Object({
  id: Type.String(),
  timestamp: Timestamp,
  admin_user: Type.String({ description: 'Username of the actor' }),
  admin_user_id: Type.Union([Type.String(), Type.Null()]),
  action: Type.String({ examples: ['user.suspend'] }),
  resource_type: Type.String(),
  resource_id: Type.Union([Type.String(), Type.Null()]),
  details: Type.Record(Type.String(), Type.Unknown()),
  ip_address: Type.String(),
  user_agent: Type.String(),
});

const AuditQuery = Type.Object(
  {
    ...PageQuery,
    action: Type.Optional(
      Type.String({ maxLength: 128, description: 'Exact action, or a prefix ending in `*` (`user.*`)' }),
    ),
    admin_user: Type.Optional(Type.String({ maxLength: 255, description: 'Username of the actor' })),
    resource_type: Type.Optional(Type.String({ maxLength: 64 })),
    resource_id: Type.Optional(Type.String({ maxLength: 255 })),
    start_time: Type.Optional(Timestamp),
    end_time: Type.Optional(Timestamp),
    order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')], { default: 'desc' })),
  },
  { additionalProperties: false },
);

function auditEntryView(row: AuditRow) {
  return {
    id: row.id,
    timestamp: row.timestamp,
    admin_user: row.admin_user,
    admin_user_id: row.actor_id,
    action: row.action,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    details: JSON.parse(row.details) as Record<string, unknown>,
    ip_address: row.ip_address,
    user_agent: row.user_agent,
  };
}

/** `GET /api/v1/admin/audit-log` (admin role and scope admin:security). */
export function registerAuditRoutes(app: App, deps: { audit: AuditLog }): void {
  app.get(
    '/api/v1/admin/audit-log',
    {
      config: { access: access.admin('admin:security') },
      schema: {
        operationId: 'adminListAuditLog',
        tags: ['admin', 'audit'],
        summary: 'The audit log of administrative changes, newest first, with filters',
        querystring: AuditQuery,
        response: {
          200: Envelope(Type.Object({ audit_entries: Type.Array(AuditEntry), pagination: Pagination })),
        },
      },
    },
    async (request) => {
      const q = request.query;
      const page = q.page ?? 1;
      const perPage = q.per_page ?? 20;
      // Stored timestamps are UTC ISO text: an offset in a filter is normalised so text order is time order.
      const iso = (t: string | undefined) => (t === undefined ? undefined : new Date(t).toISOString());
      const { rows, total } = await deps.audit.list({
        action: q.action,
        adminUser: q.admin_user,
        resourceType: q.resource_type,
        resourceId: q.resource_id,
        startTime: iso(q.start_time),
        endTime: iso(q.end_time),
        order: q.order ?? 'desc',
        limit: perPage,
        offset: (page - 1) * perPage,
      });
      return ok(request, {
        audit_entries: rows.map(auditEntryView),
        pagination: pagination(page, perPage, total),
      });
    },
  );
}
