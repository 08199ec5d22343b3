import { Type } from '@sinclair/typebox';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import { notFound } from '../http/app-error.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, PageQuery, Pagination, pagination, Timestamp } from '../http/envelope.js';
import type { TaskRunner } from './task-runner.js';
import { TaskView } from './task-view.js';

const tags = ['tasks'];
const TaskIdParams = Type.Object({ task_id: Type.String({ minLength: 1, maxLength: 128 }) });

export function registerTaskRoutes(app: App, deps: { tasks: TaskRunner; audit: AuditLog }): void {
  const { tasks } = deps;

  app.get(
    '/api/v1/tasks',
    {
      config: { access: access.permission('read:system') },
      schema: {
        operationId: 'listTasks',
        tags,
        summary: 'Background tasks, newest first',
        querystring: Type.Object(
          {
            status: Type.Optional(
              Type.Union([
                Type.Literal('running'),
                Type.Literal('completed'),
                Type.Literal('failed'),
                Type.Literal('cancelled'),
              ]),
            ),
            type: Type.Optional(
              Type.String({ minLength: 1, maxLength: 100, examples: ['database_cleanup'] }),
            ),
            ...PageQuery,
          },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(Type.Object({ tasks: Type.Array(TaskView), pagination: Pagination })) },
      },
    },
    async (request) => {
      const page = request.query.page ?? 1;
      const perPage = request.query.per_page ?? 20;
      const { tasks: list, total } = await tasks.list({
        status: request.query.status,
        type: request.query.type,
        page,
        perPage,
      });
      return ok(request, { tasks: list, pagination: pagination(page, perPage, total) });
    },
  );

  app.get(
    '/api/v1/tasks/:task_id',
    {
      config: { access: access.permission('read:system') },
      schema: {
        operationId: 'getTask',
        tags,
        summary: 'One task with its details, steps, result and logs',
        params: TaskIdParams,
        response: { 200: Envelope(TaskView), 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => {
      const task = await tasks.get(request.params.task_id);
      if (!task) throw notFound('task', request.params.task_id);
      return ok(request, task);
    },
  );

  app.delete(
    '/api/v1/tasks/:task_id',
    {
      config: { access: access.permission('admin:system') },
      schema: {
        operationId: 'cancelTask',
        tags,
        summary:
          'Cancel a running task (409 RESOURCE_CONFLICT when it is not running, or no longer cancellable)',
        description:
          'The task is marked cancelled at once; its handler is told through its abort signal and stops at its ' +
          'next check, on whichever instance runs it. Every step of a cancelled task ends final: the one it was ' +
          'in `cancelled`, those not begun `skipped`. A running task past its point of no return (`cancellable: ' +
          'false`, e.g. a restore once its database step has begun) is refused with 409 RESOURCE_CONFLICT, ' +
          '`details.reason: not_cancellable`, and finishes all its steps.',
        params: TaskIdParams,
        response: {
          200: Envelope(
            Type.Object({
              id: Type.String(),
              status: Type.Literal('cancelled'),
              cancelled_at: Timestamp,
            }),
          ),
          404: { $ref: 'ErrorEnvelope#' },
          409: { $ref: 'ErrorEnvelope#' },
        },
      },
    },
    async (request) => {
      const p = request.principal!;
      const result = await tasks.cancel(request.params.task_id, { id: p.userId, username: p.username });
      await deps.audit.record(request, {
        action: 'task.cancel',
        resourceType: 'task',
        resourceId: result.id,
        details: { cancelled_at: result.cancelled_at },
      });
      return ok(request, result, 'Task cancelled');
    },
  );
}
