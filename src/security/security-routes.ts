import { Type } from '@sinclair/typebox';
import type { Kysely } from 'kysely';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok } from '../http/envelope.js';
import type { Tables } from '../storage/tables.js';
import type { FailedLoginStore } from './failed-login-store.js';
import type { ScanStore } from './scan-store.js';
import type { SecurityAlerts } from './security-alerts.js';
import { type SecurityScanner, scanView } from './security-scanner.js';
import { ScanBody, ScanSchema, ScanStarted, SecurityStatusSchema } from './security-schemas.js';
import { securityStatus } from './security-status.js';

const tags = ['security'];
const rule = { access: access.permission('admin:security') };

/** `/api/v1/security/*`: the security overview and scans (permission admin:security). */
export function registerSecurityRoutes(
  app: App,
  deps: {
    db: Kysely<Tables>;
    audit: AuditLog;
    alerts: SecurityAlerts;
    scans: ScanStore;
    scanner: SecurityScanner;
    failedLogins: FailedLoginStore;
  },
): void {
  app.get(
    '/api/v1/security/status',
    {
      config: rule,
      schema: {
        operationId: 'getSecurityStatus',
        tags,
        summary: 'Security overview: status, last scan, unresolved alerts, and measured figures',
        response: { 200: Envelope(SecurityStatusSchema) },
      },
    },
    async (request) => ok(request, await securityStatus(deps)),
  );

  app.post(
    '/api/v1/security/scan',
    {
      config: rule,
      schema: {
        operationId: 'startSecurityScan',
        tags,
        summary: 'Start a security scan of configuration, permissions and plugins; runs in the background',
        description: 'Poll `GET /api/v1/security/scan/{scan_id}` for the findings.',
        body: ScanBody,
        response: { 202: Envelope(ScanStarted) },
      },
    },
    async (request, reply) => {
      const p = request.principal!;
      const { row, estimate, components } = await deps.scanner.start(request.body, {
        id: p.userId,
        username: p.username,
      });
      await deps.audit.record(request, {
        action: 'security.scan',
        resourceType: 'security_scan',
        resourceId: row.id,
        details: { type: row.type, components, severity_threshold: row.severity_threshold },
      });
      return reply.code(202).send(
        ok(request, {
          scan_id: row.id,
          status: 'started' as const,
          type: row.type,
          estimated_duration_ms: estimate.ms,
          estimate_basis: estimate.basis,
          components_to_scan: components,
          severity_threshold: row.severity_threshold,
          task_id: row.task_id,
          created_at: row.created_at,
        }),
      );
    },
  );

  app.get(
    '/api/v1/security/scan/:scan_id',
    {
      config: rule,
      schema: {
        operationId: 'getSecurityScan',
        tags,
        summary: 'A security scan: its status, each check, and the findings',
        params: Type.Object({ scan_id: Type.String({ minLength: 1, maxLength: 64 }) }),
        response: { 200: Envelope(Type.Object({ scan: ScanSchema })), 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => ok(request, { scan: scanView(await deps.scanner.get(request.params.scan_id)) }),
  );
}
