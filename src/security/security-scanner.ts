import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { PlatformConfig } from '../config/config-schema.js';
import { notFound } from '../http/app-error.js';
import { newId, nowIso } from '../kernel/new-id.js';
import type { Tables } from '../storage/tables.js';
import { permissionChecks } from './account-checks.js';
import { configurationChecks } from './config-checks.js';
import { pluginChecks } from './plugin-checks.js';
import { estimateScan } from './scan-estimate.js';
import type { ScanRow, ScanStore } from './scan-store.js';
import {
  type Finding,
  SCAN_COMPONENTS,
  type ScanComponent,
  SEVERITIES,
  type Severity,
} from './security-check.js';

export interface ScanRequest {
  type?: 'full' | 'quick' | undefined;
  components?: ScanComponent[] | undefined;
  severity_threshold?: Severity | undefined;
}

export interface ScanFinding extends Finding {
  id: string;
  check: string;
  component: ScanComponent;
}

export interface CheckOutcome {
  name: string;
  component: ScanComponent;
  description: string;
  status: 'passed' | 'failed' | 'skipped' | 'error';
  findings: number;
  below_threshold: number;
  duration_ms: number;
  reason?: string;
}

/** What a scan uses of a running task (structurally the task runner's TaskContext). */
interface ScanTask {
  readonly signal: AbortSignal;
  readonly details: Readonly<Record<string, unknown>>;
  progress(fraction: number, step?: string): void;
  log(level: 'debug' | 'info' | 'warning' | 'error', message: string): void;
}

/** The slice of the task runner (`src/tasks`) the scanner uses, so scans run as durable `security_scan` tasks. */
export interface ScanTaskRunner {
  registerType(
    type: string,
    handler: (task: ScanTask) => Promise<Record<string, unknown> | undefined>,
    options?: { steps?: readonly string[] },
  ): void;
  start(
    type: string,
    details: Record<string, unknown>,
    options: { actor?: { id: string; username: string } | undefined; id?: string },
  ): Promise<unknown>;
}

/** A scan nobody finished within this time died with its process. */
const ABANDONED_AFTER_MS = 5 * 60_000;

export const ALL_CHECKS = [...configurationChecks, ...permissionChecks, ...pluginChecks];

/**
 * Security scans. A scan is a durable row (`scn_…`) and runs in the background: as a `security_scan` task of
 * the task runner when there is one (then `GET /api/v1/tasks/{scan_id}` shows it too), else in this process.
 */
export class SecurityScanner {
  private readonly inProcess = new Set<Promise<unknown>>();

  constructor(
    private readonly deps: {
      db: Kysely<Tables>;
      store: ScanStore;
      config: () => PlatformConfig;
      log: FastifyBaseLogger;
      tasks?: ScanTaskRunner | undefined;
    },
  ) {
    deps.tasks?.registerType('security_scan', (task) => this.execute(String(task.details['scan_id']), task), {
      steps: SCAN_COMPONENTS,
    });
  }

  get runsAsTask(): boolean {
    return this.deps.tasks !== undefined;
  }

  async start(request: ScanRequest, actor: { id: string; username: string }) {
    const type = request.type ?? 'full';
    const components: ScanComponent[] =
      request.components && request.components.length > 0
        ? SCAN_COMPONENTS.filter((c) => request.components?.includes(c))
        : type === 'quick'
          ? ['configuration']
          : [...SCAN_COMPONENTS];
    const id = newId('scn');
    const row: ScanRow = {
      id,
      type,
      status: 'started',
      components: JSON.stringify(components),
      severity_threshold: request.severity_threshold ?? 'low',
      findings: '[]',
      checks: '[]',
      error: null,
      requested_by: actor.username,
      task_id: this.deps.tasks ? id : null,
      created_at: nowIso(),
      started_at: null,
      completed_at: null,
      duration_ms: null,
    };
    const estimate = await estimateScan(
      this.deps.store,
      this.deps.db,
      ALL_CHECKS.filter((c) => components.includes(c.component)),
    );
    await this.deps.store.insert(row);
    if (this.deps.tasks) {
      try {
        await this.deps.tasks.start(
          'security_scan',
          { scan_id: id, components, severity_threshold: row.severity_threshold },
          { actor, id },
        );
      } catch (err) {
        await this.deps.store.finish(id, { status: 'failed', error: (err as Error).message }, 0);
        throw err;
      }
    } else {
      const run = this.execute(id).catch((err: unknown) =>
        this.deps.log.error({ component: 'security', err, scan_id: id }, 'security scan failed'),
      );
      this.inProcess.add(run);
      void run.finally(() => this.inProcess.delete(run));
    }
    return { row, estimate, components };
  }

  async get(id: string): Promise<ScanRow> {
    await this.deps.store.failAbandoned(ABANDONED_AFTER_MS);
    const row = await this.deps.store.findById(id);
    if (!row) throw notFound('scan', id);
    return row;
  }

  /** Waits for scans running in this process (shutdown). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.inProcess]);
  }

  private async execute(id: string, task?: ScanTask): Promise<Record<string, unknown>> {
    const started = performance.now();
    try {
      await this.deps.store.markRunning(id);
      const row = await this.deps.store.findById(id);
      if (!row) throw new Error(`scan ${id} is not stored`);
      const components = JSON.parse(row.components) as ScanComponent[];
      const threshold = SEVERITIES.indexOf(row.severity_threshold as Severity);
      const checks = ALL_CHECKS.filter((c) => components.includes(c.component));
      const outcomes: CheckOutcome[] = [];
      const findings: ScanFinding[] = [];
      for (const [i, check] of checks.entries()) {
        if (task?.signal.aborted) {
          await this.deps.store.finish(
            id,
            { status: 'cancelled', findings, checks: outcomes },
            performance.now() - started,
          );
          return { scan_id: id, status: 'cancelled' };
        }
        task?.progress(i / checks.length, check.component);
        const t0 = performance.now();
        const base = { name: check.name, component: check.component, description: check.description };
        try {
          const result = await check.run({ db: this.deps.db, config: this.deps.config(), now: new Date() });
          const duration_ms = Math.round((performance.now() - t0) * 100) / 100;
          if ('skipped' in result) {
            outcomes.push({
              ...base,
              status: 'skipped',
              findings: 0,
              below_threshold: 0,
              duration_ms,
              reason: result.skipped,
            });
            task?.log('info', `${check.name}: skipped (${result.skipped})`);
            continue;
          }
          const kept = result.filter((f) => SEVERITIES.indexOf(f.severity) >= threshold);
          for (const f of kept) {
            findings.push({
              id: `fnd_${findings.length + 1}`,
              check: check.name,
              component: check.component,
              ...f,
            });
          }
          outcomes.push({
            ...base,
            status: result.length > 0 ? 'failed' : 'passed',
            findings: kept.length,
            below_threshold: result.length - kept.length,
            duration_ms,
          });
          task?.log('info', `${check.name}: ${result.length} finding(s)`);
        } catch (err) {
          const reason = (err as Error).message;
          outcomes.push({
            ...base,
            status: 'error',
            findings: 0,
            below_threshold: 0,
            duration_ms: Math.round((performance.now() - t0) * 100) / 100,
            reason,
          });
          task?.log('error', `${check.name}: ${reason}`);
        }
      }
      await this.deps.store.finish(
        id,
        { status: 'completed', findings, checks: outcomes },
        performance.now() - started,
      );
      task?.progress(1);
      return { scan_id: id, findings: findings.length, checks: outcomes.length };
    } catch (err) {
      await this.deps.store
        .finish(id, { status: 'failed', error: (err as Error).message }, performance.now() - started)
        .catch(() => {});
      throw err;
    }
  }
}

/** The scan as the API shows it. */
export function scanView(row: ScanRow) {
  const findings = JSON.parse(row.findings) as ScanFinding[];
  const checks = JSON.parse(row.checks) as CheckOutcome[];
  const bySeverity: Record<Severity, number> = { low: 0, medium: 0, high: 0, critical: 0 };
  for (const f of findings) bySeverity[f.severity] += 1;
  const count = (s: CheckOutcome['status']) => checks.filter((c) => c.status === s).length;
  return {
    scan_id: row.id,
    status: row.status,
    type: row.type,
    components_to_scan: JSON.parse(row.components) as string[],
    severity_threshold: row.severity_threshold,
    requested_by: row.requested_by,
    task_id: row.task_id,
    created_at: row.created_at,
    started_at: row.started_at,
    completed_at: row.completed_at,
    duration_ms: row.duration_ms,
    error: row.error,
    summary: {
      total_findings: findings.length,
      by_severity: bySeverity,
      checks_run: checks.length - count('skipped'),
      checks_passed: count('passed'),
      checks_failed: count('failed'),
      checks_skipped: count('skipped'),
      checks_errored: count('error'),
      below_threshold: checks.reduce((sum, c) => sum + c.below_threshold, 0),
    },
    checks,
    findings,
  };
}
