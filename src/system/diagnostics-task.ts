import type { DiagnosticTest } from '../kernel/service.js';
import type { TaskRunner } from '../tasks/task-runner.js';
import type { Diagnostics } from './diagnostics.js';

export const DIAGNOSTICS_TASK = 'diagnostics';

/** The `diagnostics` task type: a diagnostics run in the background; the task's result is the report. */
export function registerDiagnosticsTask(tasks: TaskRunner, diagnostics: Diagnostics): void {
  tasks.registerType(DIAGNOSTICS_TASK, async (task) => {
    const components = (task.details['components'] as string[] | undefined) ?? [];
    const tests = (task.details['tests'] as DiagnosticTest[] | undefined) ?? [];
    const resolved = diagnostics.resolve(components, tests);
    task.log('info', `testing ${resolved.components.join(', ')}: ${resolved.tests.join(', ')}`);
    const report = await diagnostics.run(task.taskId, resolved.components, resolved.tests, {
      signal: task.signal,
      onProgress: (done, total, component) => task.progress(done / total, component),
    });
    task.signal.throwIfAborted();
    task.log(
      report.overall_result === 'fail' ? 'warning' : 'info',
      `${report.summary.passed} passed, ${report.summary.warnings} warnings, ${report.summary.failed} failed`,
    );
    return { ...report };
  });
}
