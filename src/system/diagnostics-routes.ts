import { Type } from '@sinclair/typebox';
import type { AuditLog } from '../audit/audit-log.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Timestamp } from '../http/envelope.js';
import { newId } from '../kernel/new-id.js';
import type { TaskRunner } from '../tasks/task-runner.js';
import { TaskView } from '../tasks/task-view.js';
import type { Diagnostics } from './diagnostics.js';
import { DIAGNOSTICS_TASK } from './diagnostics-task.js';

const TestStatus = Type.Union([
  Type.Literal('pass'),
  Type.Literal('warning'),
  Type.Literal('fail'),
  Type.Literal('skipped'),
]);

const DiagnosticsReport = Type.Object({
  test_run_id: Type.String({ examples: ['diag_01jd8x2k4v0000000000000000'] }),
  status: Type.Union([Type.Literal('completed'), Type.Literal('cancelled')]),
  overall_result: Type.Union([Type.Literal('pass'), Type.Literal('warning'), Type.Literal('fail')]),
  started_at: Timestamp,
  completed_at: Timestamp,
  duration_ms: Type.Number(),
  summary: Type.Object({
    passed: Type.Integer(),
    warnings: Type.Integer(),
    failed: Type.Integer(),
    skipped: Type.Integer(),
  }),
  results: Type.Array(
    Type.Object({
      component: Type.String(),
      status: TestStatus,
      tests: Type.Array(
        Type.Object({
          name: Type.String({ examples: ['connectivity'] }),
          status: TestStatus,
          duration_ms: Type.Number(),
          details: Type.Record(Type.String(), Type.Unknown(), {
            description: 'What the test measured: latencies (p50_ms, p95_ms, …), counts, errors',
          }),
        }),
      ),
    }),
  ),
});

export function registerDiagnosticsRoutes(
  app: App,
  deps: { diagnostics: Diagnostics; tasks: TaskRunner; audit: AuditLog },
): void {
  app.post(
    '/api/v1/components/diagnostics',
    {
      config: { access: access.permission('admin:services') },
      schema: {
        operationId: 'runDiagnostics',
        tags: ['system'],
        summary: 'Exercise components with connectivity, performance or stress tests',
        description:
          'Each test really uses the component, bounded in time (10 s per test) and load, and leaves no data ' +
          'behind. Components default to all, tests to connectivity. With `background: true` the run is a ' +
          '`diagnostics` task (202); its result is the report.',
        body: Type.Object(
          {
            components: Type.Optional(
              Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
                maxItems: 50,
                examples: [['database']],
              }),
            ),
            tests: Type.Optional(
              Type.Array(
                Type.Union([
                  Type.Literal('connectivity'),
                  Type.Literal('performance'),
                  Type.Literal('stress'),
                ]),
                { maxItems: 3 },
              ),
            ),
            background: Type.Optional(Type.Boolean({ default: false })),
          },
          {
            additionalProperties: false,
            examples: [{ components: ['database', 'cluster_state'], tests: ['connectivity', 'performance'] }],
          },
        ),
        response: {
          200: Envelope(DiagnosticsReport),
          202: Envelope(
            Type.Object({
              test_run_id: Type.String(),
              status: Type.Literal('running'),
              task_id: Type.String({
                description: 'The diagnostics task (same id); its result is the report',
              }),
              task: TaskView,
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const { components, tests } = deps.diagnostics.resolve(request.body.components, request.body.tests);
      const id = newId('diag');
      await deps.audit.record(request, {
        action: 'system.diagnostics',
        resourceType: 'diagnostics',
        resourceId: id,
        details: { components, tests, background: request.body.background === true },
      });
      if (request.body.background) {
        const p = request.principal!;
        const task = await deps.tasks.start(
          DIAGNOSTICS_TASK,
          { components, tests },
          { id, actor: { id: p.userId, username: p.username } },
        );
        return reply
          .code(202)
          .send(ok(request, { test_run_id: id, status: 'running' as const, task_id: id, task }));
      }
      return ok(request, await deps.diagnostics.run(id, components, tests));
    },
  );
}
