import { Type } from '@sinclair/typebox';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, PageQuery, Pagination, pagination } from '../http/envelope.js';
import type { SecurityAlerts } from './security-alerts.js';
import { AlertSchema, SeverityName } from './security-schemas.js';

const tags = ['admin', 'security'];
const rule = { access: access.admin('admin:security') };
const AlertParams = Type.Object({ alert_id: Type.String({ minLength: 1, maxLength: 64 }) });

/** `/api/v1/admin/security/alerts`: list, read, acknowledge and resolve security alerts. */
export function registerAlertRoutes(app: App, deps: { alerts: SecurityAlerts; audit: AuditLog }): void {
  app.get(
    '/api/v1/admin/security/alerts',
    {
      config: rule,
      schema: {
        operationId: 'adminListSecurityAlerts',
        tags,
        summary: 'Security alerts, newest first',
        querystring: Type.Object(
          {
            ...PageQuery,
            status: Type.Optional(
              Type.Union(
                [
                  Type.Literal('open'),
                  Type.Literal('acknowledged'),
                  Type.Literal('resolved'),
                  Type.Literal('unresolved'),
                ],
                { description: 'unresolved = open or acknowledged; all statuses when absent' },
              ),
            ),
            severity: Type.Optional(SeverityName),
            type: Type.Optional(Type.String({ maxLength: 64 })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Envelope(Type.Object({ alerts: Type.Array(AlertSchema), pagination: Pagination })),
        },
      },
    },
    async (request) => {
      const page = request.query.page ?? 1;
      const perPage = request.query.per_page ?? 20;
      const { alerts, total } = await deps.alerts.list({
        status: request.query.status,
        severity: request.query.severity,
        type: request.query.type,
        limit: perPage,
        offset: (page - 1) * perPage,
      });
      return ok(request, { alerts, pagination: pagination(page, perPage, total) });
    },
  );

  app.get(
    '/api/v1/admin/security/alerts/:alert_id',
    {
      config: rule,
      schema: {
        operationId: 'adminGetSecurityAlert',
        tags,
        summary: 'One security alert',
        params: AlertParams,
        response: { 200: Envelope(Type.Object({ alert: AlertSchema })), 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => ok(request, { alert: await deps.alerts.get(request.params.alert_id) }),
  );

  app.patch(
    '/api/v1/admin/security/alerts/:alert_id',
    {
      config: rule,
      schema: {
        operationId: 'adminUpdateSecurityAlert',
        tags,
        summary: 'Acknowledge or resolve an alert',
        description:
          'open → acknowledged → resolved, or open → resolved. A resolved alert stays resolved (409 otherwise); ' +
          'if its rule fires again a new alert is raised.',
        params: AlertParams,
        body: Type.Object(
          {
            status: Type.Union([Type.Literal('acknowledged'), Type.Literal('resolved')]),
            note: Type.Optional(Type.String({ maxLength: 2000 })),
          },
          {
            additionalProperties: false,
            examples: [{ status: 'resolved', note: 'Password reset; IP blocked' }],
          },
        ),
        response: {
          200: Envelope(Type.Object({ alert: AlertSchema })),
          404: { $ref: 'ErrorEnvelope#' },
          409: { $ref: 'ErrorEnvelope#' },
        },
      },
    },
    async (request) => {
      const { before, after } = await deps.alerts.transition(
        request.params.alert_id,
        request.body.status,
        request.principal!.username,
        request.body.note,
      );
      await deps.audit.record(request, {
        action: request.body.status === 'resolved' ? 'security.alert.resolve' : 'security.alert.acknowledge',
        resourceType: 'security_alert',
        resourceId: after.id,
        details: {
          type: after.type,
          severity: after.severity,
          from: before.status,
          to: after.status,
          note: after.note,
        },
      });
      return ok(request, { alert: after });
    },
  );
}
