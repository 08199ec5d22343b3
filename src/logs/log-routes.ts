import { Type } from '@sinclair/typebox';
import { access } from '../http/access.js';
import { AppError } from '../http/app-error.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Timestamp } from '../http/envelope.js';
import { LEVEL_VALUES, LOG_LEVELS } from './log-record.js';
import type { LogStoreService } from './log-store-service.js';

const LogsQuery = Type.Object(
  {
    level: Type.Optional(
      Type.Union(
        LOG_LEVELS.map((l) => Type.Literal(l)),
        { description: 'Minimum level: WARNING returns WARNING and ERROR records' },
      ),
    ),
    component: Type.Optional(Type.String({ minLength: 1, maxLength: 100, examples: ['auth', 'mailer'] })),
    start_time: Type.Optional(Type.String({ format: 'date-time' })),
    end_time: Type.Optional(Type.String({ format: 'date-time' })),
    search: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'Case-insensitive substring of the message' }),
    ),
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1 })),
    per_page: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  },
  { additionalProperties: false },
);

const LogEntry = Type.Object({
  id: Type.String(),
  timestamp: Timestamp,
  level: Type.Union(LOG_LEVELS.map((l) => Type.Literal(l))),
  component: Type.String(),
  message: Type.String(),
  metadata: Type.Object(
    {
      user_id: Type.Union([Type.String(), Type.Null()]),
      ip_address: Type.Union([Type.String(), Type.Null()]),
      request_id: Type.Union([Type.String(), Type.Null()]),
    },
    { additionalProperties: true, description: 'Plus every other field of the record, secrets redacted' },
  ),
});

export function registerLogRoutes(app: App, deps: { logs: LogStoreService }): void {
  app.get(
    '/api/v1/admin/system/logs',
    {
      config: { access: access.admin('admin:system') },
      schema: {
        operationId: 'adminGetSystemLogs',
        tags: ['admin', 'logs'],
        summary: 'Stored log records (INFO and above), newest first, filtered, searched and paged',
        querystring: LogsQuery,
        response: {
          200: Envelope(
            Type.Object({
              logs: Type.Array(LogEntry),
              pagination: Type.Object({
                page: Type.Integer(),
                per_page: Type.Integer(),
                total: Type.Integer(),
                has_next: Type.Boolean(),
              }),
            }),
          ),
        },
      },
    },
    async (request) => {
      const q = request.query;
      if (q.start_time && q.end_time && Date.parse(q.start_time) > Date.parse(q.end_time)) {
        throw new AppError('VALIDATION_ERROR', 'start_time must not be after end_time', {
          details: { field: 'start_time', reason: 'after end_time' },
        });
      }
      const page = q.page ?? 1;
      const perPage = q.per_page ?? 50;
      const { rows, total } = await deps.logs.query({
        ...(q.level ? { minLevel: LEVEL_VALUES[q.level] } : {}),
        ...(q.component ? { component: q.component } : {}),
        // Stored timestamps are ISO UTC with milliseconds: normalise so text comparison orders correctly.
        ...(q.start_time ? { startTime: new Date(q.start_time).toISOString() } : {}),
        ...(q.end_time ? { endTime: new Date(q.end_time).toISOString() } : {}),
        ...(q.search ? { search: q.search } : {}),
        page,
        perPage,
      });
      const logs = rows.map((r) => {
        let extra: Record<string, unknown> = {};
        try {
          extra = JSON.parse(r.metadata) as Record<string, unknown>;
        } catch {
          // A row written by something else: show its columns only.
        }
        return {
          id: r.id,
          timestamp: r.timestamp,
          level: r.level as (typeof LOG_LEVELS)[number],
          component: r.component,
          message: r.message,
          metadata: { ...extra, user_id: r.user_id, ip_address: r.ip_address, request_id: r.request_id },
        };
      });
      return ok(request, {
        logs,
        pagination: { page, per_page: perPage, total, has_next: page * perPage < total },
      });
    },
  );
}
