import { performance } from 'node:perf_hooks';
import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformConfig } from '../config/config-schema.js';
import { AppError } from '../http/app-error.js';
import { nowIso } from '../kernel/new-id.js';
import type { DiagnosticOutcome, DiagnosticTest } from '../kernel/service.js';
import type { ServiceRegistry } from '../kernel/service-registry.js';
import type { Database } from '../storage/database.js';
import type { TaskRunner } from '../tasks/task-runner.js';
import type { TaskStore } from '../tasks/task-store.js';
import { diagnoseDatabase } from './diagnostics-database.js';
import { diagnoseByHealth } from './diagnostics-generic.js';
import { round } from './diagnostics-measure.js';
import { diagnoseSharedState } from './diagnostics-shared-state.js';
import { diagnoseTaskRunner } from './diagnostics-task-runner.js';
import { memoryHealth } from './system-health-memory.js';

export const DIAGNOSTIC_TESTS: readonly DiagnosticTest[] = ['connectivity', 'performance', 'stress'];
/** Each test stops at this bound, whatever it was doing; the run as a whole is bounded by the sum. */
const TEST_TIMEOUT_MS = 10_000;

type TestStatus = DiagnosticOutcome['status'];

export interface DiagnosticsReport {
  test_run_id: string;
  status: 'completed' | 'cancelled';
  overall_result: 'pass' | 'warning' | 'fail';
  started_at: string;
  completed_at: string;
  duration_ms: number;
  summary: { passed: number; warnings: number; failed: number; skipped: number };
  results: {
    component: string;
    status: TestStatus;
    tests: {
      name: DiagnosticTest;
      status: TestStatus;
      duration_ms: number;
      details: Record<string, unknown>;
    }[];
  }[];
}

/** Runs diagnostic tests that really exercise the chosen components, one component and test at a time. */
export class Diagnostics {
  constructor(
    private readonly deps: {
      registry: ServiceRegistry;
      database: Database;
      shared: SharedState;
      tasks: TaskRunner;
      taskStore: TaskStore;
      cfg: () => PlatformConfig;
    },
  ) {}

  /** What can be diagnosed: every registered service, and memory. */
  componentNames(): string[] {
    return [...this.deps.registry.names(), 'memory'];
  }

  /** The components and tests of a request; unknown components → 422 VALIDATION_ERROR. */
  resolve(components: readonly string[] | undefined, tests: readonly DiagnosticTest[] | undefined) {
    const available = this.componentNames();
    const chosen = components && components.length > 0 ? [...new Set(components)] : available;
    const unknown = chosen.filter((c) => !available.includes(c));
    if (unknown.length > 0) {
      throw new AppError('VALIDATION_ERROR', `Unknown component: ${unknown.join(', ')}`, {
        details: { field: 'components', reason: 'unknown component', unknown, available },
      });
    }
    const chosenTests =
      tests && tests.length > 0 ? [...new Set(tests)] : (['connectivity'] as DiagnosticTest[]);
    return { components: chosen, tests: chosenTests };
  }

  async run(
    id: string,
    components: readonly string[],
    tests: readonly DiagnosticTest[],
    options: {
      signal?: AbortSignal;
      onProgress?: (done: number, total: number, component: string) => void;
    } = {},
  ): Promise<DiagnosticsReport> {
    const signal = options.signal ?? new AbortController().signal;
    const startedAt = nowIso();
    const start = performance.now();
    const results: DiagnosticsReport['results'] = [];
    const total = components.length * tests.length;
    let done = 0;
    for (const component of components) {
      const entry: DiagnosticsReport['results'][number] = { component, status: 'pass', tests: [] };
      for (const test of tests) {
        if (signal.aborted) break;
        const testStart = performance.now();
        const bound = AbortSignal.any([signal, AbortSignal.timeout(TEST_TIMEOUT_MS)]);
        let outcome: DiagnosticOutcome;
        try {
          outcome = await this.probe(component, test, bound);
          if (bound.aborted && !signal.aborted) {
            outcome = { ...outcome, details: { ...outcome.details, time_bound_ms: TEST_TIMEOUT_MS } };
          }
        } catch (err) {
          outcome = { status: 'fail', details: { error: err instanceof Error ? err.message : String(err) } };
        }
        entry.tests.push({
          name: test,
          status: outcome.status,
          duration_ms: round(performance.now() - testStart),
          details: outcome.details,
        });
        done += 1;
        options.onProgress?.(done, total, component);
      }
      entry.status = worst(entry.tests.map((t) => t.status));
      results.push(entry);
    }
    const all = results.flatMap((r) => r.tests.map((t) => t.status));
    const count = (s: TestStatus) => all.filter((x) => x === s).length;
    const overall = worst(all);
    return {
      test_run_id: id,
      status: signal.aborted ? 'cancelled' : 'completed',
      overall_result: overall === 'skipped' ? 'pass' : overall,
      started_at: startedAt,
      completed_at: nowIso(),
      duration_ms: round(performance.now() - start),
      summary: {
        passed: count('pass'),
        warnings: count('warning'),
        failed: count('fail'),
        skipped: count('skipped'),
      },
      results,
    };
  }

  private async probe(
    component: string,
    test: DiagnosticTest,
    signal: AbortSignal,
  ): Promise<DiagnosticOutcome> {
    const { registry } = this.deps;
    if (component === 'memory') {
      if (test !== 'connectivity') {
        return { status: 'skipped', details: { reason: 'a reading of memory has no load to put on it' } };
      }
      const memory = memoryHealth(this.deps.cfg().health);
      return {
        status: memory.status === 'healthy' ? 'pass' : memory.status === 'warning' ? 'warning' : 'fail',
        details: memory.details ?? {},
      };
    }
    const state = registry.state(component);
    if (state !== 'running') return { status: 'fail', details: { reason: 'service is not running', state } };
    const service = registry.get(component);
    if (service.diagnose) return service.diagnose(test, signal);
    switch (component) {
      case 'database':
        return diagnoseDatabase(this.deps.database, this.deps.cfg().database.pool_max, test, signal);
      case 'cluster_state':
        return diagnoseSharedState(this.deps.shared, test, signal);
      case 'task_runner':
        return diagnoseTaskRunner(this.deps.tasks, this.deps.taskStore, test, signal);
      default:
        return diagnoseByHealth(() => registry.health(component, { fresh: true }), test, signal);
    }
  }
}

const RANK: Record<TestStatus, number> = { skipped: 0, pass: 1, warning: 2, fail: 3 };

function worst(statuses: TestStatus[]): TestStatus {
  return statuses.reduce<TestStatus>((a, b) => (RANK[b] > RANK[a] ? b : a), 'skipped');
}
