import type { DiagnosticOutcome, DiagnosticTest } from '../kernel/service.js';
import type { TaskRunner } from '../tasks/task-runner.js';
import type { TaskStore } from '../tasks/task-store.js';
import { latencyFigures, round, timed } from './diagnostics-measure.js';

/** The no-op task type the diagnostics run end to end; its tasks are deleted once measured. */
export const PROBE_TASK = 'diagnostics_probe';

/**
 * Task runner diagnostics. connectivity: one no-op task from start to completed. performance: five in
 * sequence. stress: ten at once. Each probe task is stored, run, settled and then deleted.
 */
export async function diagnoseTaskRunner(
  tasks: TaskRunner,
  store: TaskStore,
  test: DiagnosticTest,
  signal: AbortSignal,
): Promise<DiagnosticOutcome> {
  if (!tasks.hasType(PROBE_TASK)) tasks.registerType(PROBE_TASK, async () => ({ ok: true }));
  const runOne = async (): Promise<{ ms: number; status: string }> => {
    let status = 'unknown';
    let id: string | undefined;
    const ms = await timed(async () => {
      const task = await tasks.start(PROBE_TASK, { purpose: 'diagnostics' });
      id = task.id;
      status = (await tasks.settled(task.id))?.status ?? 'missing';
    });
    if (id) await store.delete(id);
    return { ms, status };
  };
  const count = test === 'connectivity' ? 1 : test === 'performance' ? 5 : 10;
  const runs: { ms: number; status: string }[] = [];
  if (test === 'stress') {
    runs.push(...(await Promise.all(Array.from({ length: count }, runOne))));
  } else {
    for (let i = 0; i < count && !signal.aborted; i++) runs.push(await runOne());
  }
  const failed = runs.filter((r) => r.status !== 'completed').length;
  const figures = latencyFigures(runs.map((r) => r.ms));
  return {
    status: failed > 0 ? 'fail' : figures.p95_ms > 2_000 ? 'warning' : 'pass',
    details: {
      tasks_run: runs.length,
      concurrent: test === 'stress',
      failed,
      ...figures,
      total_ms: round(runs.reduce((a, r) => a + r.ms, 0)),
    },
  };
}
