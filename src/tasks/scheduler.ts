import type { Cron } from 'croner';
import type { FastifyBaseLogger } from 'fastify';
import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import { parseCron } from './cron-pattern.js';

/** What a scheduled job receives: the occurrence it runs for, and a signal aborted when the scheduler stops. */
export interface JobRun {
  occurrence: Date;
  signal: AbortSignal;
}

export type JobFunction = (run: JobRun) => Promise<void> | void;

export interface JobView {
  name: string;
  cron: string;
  description: string;
  next_run: string | null;
  last_run: string | null;
  last_duration_ms: number | null;
  last_status: 'completed' | 'failed' | null;
  last_error: string | null;
  runs: number;
  failures: number;
  /** Occurrences another instance ran (cluster mode), or that came while the previous run still went on. */
  skipped: number;
}

interface Job {
  name: string;
  pattern: string;
  description: string;
  cron: Cron;
  fn: JobFunction;
  timer: NodeJS.Timeout | undefined;
  lastOccurrence: number;
  busy: boolean;
  controller: AbortController | undefined;
  running: Promise<void> | undefined;
  stats: {
    runs: number;
    failures: number;
    skipped: number;
    lastRun: string | null;
    lastDurationMs: number | null;
    lastStatus: 'completed' | 'failed' | null;
    lastError: string | null;
  };
}

/** Timers never wait longer than this in one go, so a clock change is noticed within half a minute. */
const MAX_TIMER_MS = 30_000;

/**
 * Runs recurring jobs from cron expressions (`scheduler` service). Expressions have 5 fields (minute
 * precision) or 6 (with seconds first), are read by croner, and are evaluated in UTC. In cluster mode every
 * instance has the same jobs, and a lock in the shared state lets exactly one of them run each occurrence.
 *
 * @example
 * ```ts
 * ctx.scheduler.schedule('backup', '0 2 * * *', async ({ occurrence }) => {
 *   await ctx.tasks.start('backup', { scheduled_for: occurrence.toISOString() });
 * }, { description: 'Nightly backup' });
 * ```
 */
export class Scheduler implements PlatformService {
  readonly name = 'scheduler';
  readonly type = 'scheduler';
  readonly dependencies = ['cluster_state', 'task_runner'] as const;
  private readonly jobs = new Map<string, Job>();
  /** Jobs refused for their expression: they never run, so the service's health says so until they are fixed. */
  private readonly refused = new Map<string, { cron: string; error: string }>();
  private running = false;

  constructor(
    private readonly deps: {
      shared: SharedState;
      log: FastifyBaseLogger;
      /** Where job failures are recorded (the registry's recent errors of this service). */
      reportError?: (err: unknown) => void;
    },
  ) {}

  /**
   * Adds a recurring job. Throws on an invalid expression or a name already in use. Jobs added while the
   * scheduler runs start at once; a job never overlaps itself. A job refused for its expression is logged and
   * keeps the service's health at `warning` until it is scheduled or unscheduled under that name.
   */
  schedule(name: string, cron: string, fn: JobFunction, options: { description?: string } = {}): void {
    if (this.jobs.has(name)) throw new Error(`a job named '${name}' is already scheduled`);
    let parsed: Cron;
    try {
      parsed = parseCron(cron);
    } catch (err) {
      const error = `invalid cron expression '${cron}' for job '${name}': ${(err as Error).message}`;
      this.refused.set(name, { cron, error });
      this.deps.log.error({ job: name, cron }, `${error}; the job will not run`);
      throw new Error(error);
    }
    this.refused.delete(name);
    const job: Job = {
      name,
      pattern: cron,
      description: options.description ?? '',
      cron: parsed,
      fn,
      timer: undefined,
      lastOccurrence: 0,
      busy: false,
      controller: undefined,
      running: undefined,
      stats: {
        runs: 0,
        failures: 0,
        skipped: 0,
        lastRun: null,
        lastDurationMs: null,
        lastStatus: null,
        lastError: null,
      },
    };
    this.jobs.set(name, job);
    if (this.running) this.arm(job);
  }

  /** Removes a job; a run under way finishes. */
  unschedule(name: string): boolean {
    this.refused.delete(name);
    const job = this.jobs.get(name);
    if (!job) return false;
    clearTimeout(job.timer);
    this.jobs.delete(name);
    return true;
  }

  list(): JobView[] {
    return [...this.jobs.values()].map((job) => ({
      name: job.name,
      cron: job.pattern,
      description: job.description,
      next_run: this.running ? (this.nextOccurrence(job)?.toISOString() ?? null) : null,
      last_run: job.stats.lastRun,
      last_duration_ms: job.stats.lastDurationMs,
      last_status: job.stats.lastStatus,
      last_error: job.stats.lastError,
      runs: job.stats.runs,
      failures: job.stats.failures,
      skipped: job.stats.skipped,
    }));
  }

  async start(): Promise<void> {
    this.running = true;
    for (const job of this.jobs.values()) this.arm(job);
  }

  async stop(): Promise<void> {
    this.running = false;
    const runs: Promise<void>[] = [];
    for (const job of this.jobs.values()) {
      clearTimeout(job.timer);
      job.timer = undefined;
      job.controller?.abort(new DOMException('scheduler stopped', 'AbortError'));
      if (job.running !== undefined) runs.push(job.running);
    }
    await Promise.allSettled(runs);
  }

  async health(): Promise<ServiceHealth> {
    const failing = [...this.jobs.values()].filter((j) => j.stats.lastStatus === 'failed').map((j) => j.name);
    const refused = [...this.refused].map(([name, r]) => ({ name, cron: r.cron, error: r.error }));
    return {
      status: failing.length > 0 || refused.length > 0 ? 'warning' : 'healthy',
      checks: [
        {
          name: 'timers',
          status: 'pass',
          jobs: this.jobs.size,
          next_run: this.soonest()?.toISOString() ?? null,
        },
        { name: 'last_runs', status: failing.length > 0 ? 'warning' : 'pass', failing_jobs: failing },
        { name: 'schedules', status: refused.length > 0 ? 'fail' : 'pass', unscheduled_jobs: refused },
      ],
      details: { jobs: this.jobs.size, unscheduled_jobs: refused.length },
    };
  }

  metrics(): Record<string, number> {
    let runs = 0;
    let failures = 0;
    let skipped = 0;
    let durationMs = 0;
    let timed = 0;
    for (const job of this.jobs.values()) {
      runs += job.stats.runs;
      failures += job.stats.failures;
      skipped += job.stats.skipped;
      if (job.stats.lastDurationMs !== null) {
        durationMs += job.stats.lastDurationMs;
        timed += 1;
      }
    }
    const soonest = this.soonest();
    return {
      jobs: this.jobs.size,
      unscheduled_jobs: this.refused.size,
      runs,
      failures,
      skipped,
      requests_handled: runs,
      error_rate: runs === 0 ? 0 : Math.round((failures / runs) * 10_000) / 10_000,
      avg_last_run_ms: timed === 0 ? 0 : Math.round(durationMs / timed),
      next_run_in_seconds: soonest ? Math.max(0, Math.round((soonest.getTime() - Date.now()) / 1000)) : -1,
    };
  }

  settings(): Record<string, unknown> {
    return {
      timezone: 'UTC',
      jobs: [...this.jobs.values()].map((j) => ({
        name: j.name,
        cron: j.pattern,
        description: j.description,
      })),
      unscheduled_jobs: [...this.refused].map(([name, r]) => ({ name, cron: r.cron, error: r.error })),
    };
  }

  private soonest(): Date | undefined {
    if (!this.running) return undefined;
    let best: Date | undefined;
    for (const job of this.jobs.values()) {
      const next = this.nextOccurrence(job);
      if (next && (!best || next < best)) best = next;
    }
    return best;
  }

  private nextOccurrence(job: Job): Date | null {
    return job.cron.nextRun(new Date(Math.max(Date.now(), job.lastOccurrence)));
  }

  private arm(job: Job): void {
    clearTimeout(job.timer);
    const next = this.nextOccurrence(job);
    if (!next) return;
    const delay = Math.min(MAX_TIMER_MS, Math.max(0, next.getTime() - Date.now()));
    job.timer = setTimeout(() => {
      job.timer = undefined;
      if (!this.running || this.jobs.get(job.name) !== job) return;
      if (Date.now() >= next.getTime()) {
        job.lastOccurrence = next.getTime();
        this.fire(job, next).catch((err: unknown) =>
          this.deps.log.error({ err, job: job.name }, 'job failed'),
        );
      }
      this.arm(job);
    }, delay);
    job.timer.unref();
  }

  private async fire(job: Job, occurrence: Date): Promise<void> {
    if (job.busy) {
      job.stats.skipped += 1;
      return;
    }
    // One lock per job, held until shortly before its next occurrence: every instance fires at the same
    // occurrence and only the first takes it. Not released early, so a late instance cannot run it again.
    const following = job.cron.nextRun(occurrence);
    const gap = following ? following.getTime() - occurrence.getTime() : 60_000;
    const ttl = Math.max(250, gap - Math.min(gap / 2, 30_000));
    // The expression is part of the name, so a job rescheduled with another expression is not held back by
    // the lock of its old schedule.
    const lock = await this.deps.shared.tryLock(`scheduler:${job.name}:${job.pattern}`, Math.round(ttl));
    if (!lock) {
      job.stats.skipped += 1;
      return;
    }
    job.busy = true;
    const controller = new AbortController();
    job.controller = controller;
    const started = Date.now();
    job.stats.lastRun = new Date(started).toISOString();
    job.running = (async () => {
      try {
        await job.fn({ occurrence, signal: controller.signal });
        job.stats.lastStatus = 'completed';
        job.stats.lastError = null;
      } catch (err) {
        job.stats.failures += 1;
        job.stats.lastStatus = 'failed';
        job.stats.lastError = err instanceof Error ? err.message : String(err);
        this.deps.log.error({ err, job: job.name }, 'scheduled job failed');
        this.deps.reportError?.(new Error(`job ${job.name}: ${job.stats.lastError}`));
      } finally {
        job.stats.runs += 1;
        job.stats.lastDurationMs = Date.now() - started;
        job.busy = false;
        job.controller = undefined;
      }
    })();
    await job.running;
    job.running = undefined;
  }
}
