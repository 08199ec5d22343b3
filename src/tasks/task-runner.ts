import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import type { Updateable } from 'kysely';
import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformConfig } from '../config/config-schema.js';
import { AppError, notFound } from '../http/app-error.js';
import { parseJsonObject } from '../kernel/json-object.js';
import { newId, nowIso } from '../kernel/new-id.js';
import type { PlatformEvents } from '../kernel/platform-events.js';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import { storableExcerpt } from '../kernel/storable-text.js';
import {
  endRunningSteps,
  TaskExecution,
  type TaskLogLevel,
  type TaskStep,
  type TaskStepStatus,
} from './task-execution.js';
import type { TaskRow, TaskStore } from './task-store.js';
import type { TasksTable } from './task-tables.js';
import { type TaskViewData, taskView } from './task-view.js';

export type { TaskLogLevel, TaskStep, TaskStepStatus } from './task-execution.js';
export type { TaskStatus } from './task-store.js';
export type { TaskViewData as Task } from './task-view.js';

/** What a task handler receives. */
export interface TaskContext {
  readonly taskId: string;
  readonly type: string;
  /** The details the task was started with, plus what `setDetails` added (a checkpoint, when resumed). */
  readonly details: Readonly<Record<string, unknown>>;
  /** Aborted when the task is cancelled or the platform stops; a handler checks it between units of work. */
  readonly signal: AbortSignal;
  /** True when this run continues a task that an earlier run did not finish (resumable types only). */
  readonly resumed: boolean;
  /** Overall progress 0..1, never going backwards (a lower value is ignored); with `step`, that step becomes `running`. */
  progress(fraction: number, step?: string): void;
  /** Sets a step's status (and progress: 1 when completed, unless given). */
  step(name: string, status: TaskStepStatus, progress?: number): void;
  /** Appends a line to the task's logs (`GET /api/v1/tasks/{id}`). */
  log(level: TaskLogLevel, message: string): void;
  /** Merges fields into the task's details (shown to clients; a resumable type keeps its checkpoint here). */
  setDetails(patch: Record<string, unknown>): void;
  /**
   * Writes the details (and progress, logs) now instead of shortly after: for a handler that must know what it
   * recorded is stored before it goes on (what `onInterrupted` needs to undo its next step).
   */
  save(): Promise<void>;
  /**
   * Ends the window in which the task can be cancelled: from now on `DELETE /api/v1/tasks/{id}` answers 409
   * RESOURCE_CONFLICT (reason `not_cancellable`), on every instance. For a handler about to begin work that
   * must not be left half done, and after which it must finish its remaining steps. Throws the abort reason
   * when the task was cancelled (or stopped) first; the cancel and this never both win.
   */
  beginUncancellable(): Promise<void>;
}

/** A task of the type that was failed as interrupted: its instance died or stopped while it ran. */
export interface InterruptedTask {
  readonly id: string;
  readonly type: string;
  /** The details as last stored by the run that was interrupted. */
  readonly details: Readonly<Record<string, unknown>>;
}

/** Runs one task; what it returns becomes the task's `result`. Throwing fails the task with the error's message. */
export type TaskHandler = (
  ctx: TaskContext,
) => Promise<Record<string, unknown> | undefined> | Record<string, unknown> | undefined;

export interface TaskTypeOptions {
  /**
   * When true, a task of this type that was running when its instance stopped or died is run again
   * (with `ctx.resumed` true and the details it had saved) instead of failing with "interrupted".
   */
  resumable?: boolean;
  /** Step names shown as `pending` from the start. */
  steps?: readonly string[];
  /**
   * Called once a task of this (non-resumable) type that was running when its instance died or stopped has
   * been failed as "interrupted", by the instance that failed it (at its start, or when the lease expired):
   * the place to put back what the interrupted run left half done. It runs during the sweep, before the
   * services that depend on the task runner start; a failure is recorded as an error of the task runner.
   */
  onInterrupted?: (task: InterruptedTask) => Promise<void> | void;
}

export interface TaskActor {
  id: string;
  username: string;
}

export interface StartOptions {
  actor?: TaskActor | undefined;
  /** A prefixed id of the module's own (`rpl_…`), when the task is that module's resource; default `task_…`. */
  id?: string;
}

interface TaskType {
  handler: TaskHandler;
  options: TaskTypeOptions;
}

const CANCEL_CHANNEL = 'tasks.cancel';
/** `seq` of log lines written outside an execution (cancel, sweep); they order by timestamp first anyway. */
const OUTSIDE_SEQ = 1_000_000_000;
/** A resumable task nobody resumes is failed after this many lease periods. */
const ORPHAN_LEASES = 10;

/**
 * The durable task runner (`task_runner` service). Modules register task types and start tasks; each task is a
 * row in `tasks` that outlives the process. The instance running a task renews a lease on it; a task whose
 * lease expires (its instance stopped or died) is failed with error "interrupted", or resumed by any instance
 * that has its type registered when the type is resumable. Cancelling is cooperative, through the AbortSignal.
 *
 * @example
 * ```ts
 * ctx.tasks.registerType('plugin_update', async (task) => {
 *   task.step('download', 'running');
 *   await download(task.details.plugin_id as string, { signal: task.signal });
 *   task.step('download', 'completed');
 *   task.progress(0.5, 'install');
 *   // …
 *   return { installed_version: '2.0.0' };
 * }, { steps: ['download', 'install'] });
 *
 * const task = await ctx.tasks.start('plugin_update', { plugin_id: 'hello' }, { actor });
 * ```
 */
export class TaskRunner {
  /** This process's identity in the `tasks.instance_id` column. */
  readonly instanceId = `${process.pid}-${randomUUID().slice(0, 8)}`;
  /** The runner's lifecycle, health and metrics as the `task_runner` service of the registry. */
  readonly service: PlatformService;
  private readonly types = new Map<string, TaskType>();
  private readonly executions = new Map<string, TaskExecution>();
  private running = false;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private lastHeartbeatAt = 0;
  private lastHeartbeatError: string | undefined;
  /** Per task type: started here, and ended here (completed or failed). Types are registered by code: bounded. */
  private readonly byType = new Map<string, { started: number; completed: number; failed: number }>();
  private readonly counts = {
    started: 0,
    completed: 0,
    failed: 0,
    cancelled: 0,
    interrupted: 0,
    resumed: 0,
    durationMs: 0,
    finished: 0,
  };

  constructor(
    private readonly deps: {
      store: TaskStore;
      shared: SharedState;
      events: PlatformEvents;
      cfg: () => PlatformConfig;
      log: FastifyBaseLogger;
      /** Where storage failures are recorded (the registry's recent errors of this service). */
      reportError: (err: unknown) => void;
    },
  ) {
    this.service = {
      name: 'task_runner',
      type: 'worker',
      dependencies: ['database', 'cluster_state'],
      start: () => this.activate(),
      stop: () => this.deactivate(),
      health: () => this.health(),
      metrics: () => this.metrics(),
      prometheus: () => [
        {
          name: 'platform_tasks_total',
          help: 'Tasks that this instance started or that ended here, by type and status',
          type: 'counter',
          samples: [...this.byType].flatMap(([type, counts]) =>
            Object.entries(counts).map(([status, value]) => ({ labels: { type, status }, value })),
          ),
        },
      ],
      settings: () => this.settings(),
    };
  }

  /** Registers (or replaces) the handler of a task type. Types registered after start are resumed too. */
  registerType(type: string, handler: TaskHandler, options: TaskTypeOptions = {}): void {
    this.types.set(type, { handler, options });
  }

  hasType(type: string): boolean {
    return this.types.has(type);
  }

  typeNames(): string[] {
    return [...this.types.keys()].sort();
  }

  /** Records a new running task and starts its handler; resolves once the task is stored. */
  async start(
    type: string,
    details: Record<string, unknown> = {},
    options: StartOptions = {},
  ): Promise<TaskViewData> {
    const def = this.types.get(type);
    if (!def) throw new Error(`task type '${type}' is not registered`);
    if (!this.running)
      throw new AppError('SERVICE_UNAVAILABLE', 'The task runner is not running; retry shortly');
    const now = nowIso();
    const steps: TaskStep[] = (def.options.steps ?? []).map((name) => ({
      name,
      status: 'pending',
      progress: 0,
    }));
    const initial = steps.length > 0 && !('steps' in details) ? { ...details, steps } : { ...details };
    const row: TaskRow = {
      id: options.id ?? newId('task'),
      type,
      status: 'running',
      progress: 0,
      details: JSON.stringify(initial),
      result: null,
      error: null,
      created_by: options.actor?.username ?? null,
      created_at: now,
      started_at: now,
      estimated_completion: null,
      completed_at: null,
      cancelled_at: null,
      updated_at: now,
      resumable: def.options.resumable ? 1 : 0,
      cancellable: 1,
      instance_id: this.instanceId,
      claim: randomUUID(),
      lease_until: this.leaseUntil(),
      attempts: 1,
    };
    await this.deps.store.insert(row);
    this.counts.started += 1;
    this.typeCounts(row.type).started += 1;
    this.execute(row, def, false, options.actor, `started by ${options.actor?.username ?? 'the platform'}`);
    return taskView(row);
  }

  /** The task with its logs, or undefined. */
  async get(id: string): Promise<TaskViewData | undefined> {
    const row = await this.deps.store.findById(id);
    if (!row) return undefined;
    return taskView(row, await this.deps.store.logs(id));
  }

  async list(filter: {
    status?: string | undefined;
    type?: string | undefined;
    page: number;
    perPage: number;
  }) {
    const { rows, total } = await this.deps.store.list({
      status: filter.status,
      type: filter.type,
      limit: filter.perPage,
      offset: (filter.page - 1) * filter.perPage,
    });
    return { tasks: rows.map((r) => taskView(r)), total };
  }

  /**
   * Cancels a running task on whichever instance runs it: the row becomes `cancelled` at once and the
   * handler's signal is aborted. Unknown → RESOURCE_NOT_FOUND; not running → RESOURCE_CONFLICT.
   */
  async cancel(
    id: string,
    actor?: TaskActor,
  ): Promise<{ id: string; status: 'cancelled'; cancelled_at: string }> {
    const at = nowIso();
    if (!(await this.deps.store.cancel(id, at))) {
      const row = await this.deps.store.findById(id);
      if (!row) throw notFound('task', id);
      if (row.status === 'running' && Number(row.cancellable) === 0) {
        throw new AppError(
          'RESOURCE_CONFLICT',
          `Task '${id}' can no longer be cancelled: stopping it now would leave its work half done; it finishes its steps`,
          { details: { id, status: row.status, reason: 'not_cancellable' } },
        );
      }
      throw new AppError(
        'RESOURCE_CONFLICT',
        `Task '${id}' is ${row.status}; only a running task can be cancelled`,
        {
          details: { id, status: row.status },
        },
      );
    }
    this.counts.cancelled += 1;
    await this.deps.store.insertLogs([
      {
        id: newId('tlg'),
        task_id: id,
        seq: OUTSIDE_SEQ,
        timestamp: at,
        level: 'INFO',
        message: `cancelled by ${actor?.username ?? 'the platform'}`,
      },
    ]);
    const local = this.executions.get(id);
    if (local) local.stop('cancelled');
    await this.endStepsOfCancelled(id);
    if (!local) {
      // The cancellation is stored: without Redis the instance running the task finds it at its next lease
      // renewal (a third of tasks.lease_seconds), so a failed announcement does not fail the request.
      await this.deps.shared.publish(CANCEL_CHANNEL, { id }).catch((err: unknown) => {
        this.deps.log.warn(
          { err, task_id: id },
          'task cancellation not announced; the lease renewal stops it',
        );
      });
    }
    return { id, status: 'cancelled', cancelled_at: at };
  }

  /**
   * A task cancelled on another instance (or whose handler does not stop) shows no step running or pending
   * meanwhile; the run's own last write, when it stops, ends them the same way with what it knows.
   */
  private async endStepsOfCancelled(id: string): Promise<void> {
    try {
      const row = await this.deps.store.findById(id);
      const details = row ? parseJsonObject(row.details) : undefined;
      if (!row || !details) return;
      const ended = endRunningSteps(details, 'cancelled');
      if (ended !== details) {
        await this.deps.store.replaceCancelledDetails(id, row.details, JSON.stringify(ended));
      }
    } catch (err) {
      this.deps.reportError(err);
    }
  }

  /** Resolves when this instance's run of the task ends (at once when it runs elsewhere or not at all). */
  async settled(id: string): Promise<TaskViewData | undefined> {
    await this.executions.get(id)?.done;
    return this.get(id);
  }

  // --- lifecycle (the `task_runner` service) ---

  private async activate(): Promise<void> {
    this.running = true;
    this.unsubscribe = this.deps.shared.subscribe(CANCEL_CHANNEL, (message) => {
      const id = (message as { id?: unknown }).id;
      if (typeof id === 'string') this.executions.get(id)?.stop('cancelled');
    });
    await this.sweep();
    this.armTimers();
  }

  private async deactivate(): Promise<void> {
    this.running = false;
    clearTimeout(this.heartbeatTimer);
    clearTimeout(this.sweepTimer);
    this.heartbeatTimer = undefined;
    this.sweepTimer = undefined;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    const executions = [...this.executions.values()];
    for (const e of executions) e.stop('shutdown');
    const grace = this.deps.cfg().tasks.stop_timeout_seconds * 1000;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(executions.map((e) => e.done)),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, grace);
      }),
    ]);
    clearTimeout(timer);
    // Handlers that ignore their signal keep running detached; their task is settled here instead.
    for (const e of [...this.executions.values()]) {
      e.detached = true;
      this.executions.delete(e.id);
      await this.settleInterrupted(e).catch((err: unknown) => this.deps.reportError(err));
    }
  }

  private armTimers(): void {
    this.armHeartbeat();
    this.armSweep();
  }

  private armHeartbeat(): void {
    const leaseMs = this.deps.cfg().tasks.lease_seconds * 1000;
    this.heartbeatTimer = setTimeout(
      () => {
        this.heartbeat()
          .catch((err: unknown) => this.deps.reportError(err))
          .finally(() => {
            if (this.running) this.armHeartbeat();
          });
      },
      Math.max(100, leaseMs / 3),
    );
    this.heartbeatTimer.unref();
  }

  private armSweep(): void {
    const leaseMs = this.deps.cfg().tasks.lease_seconds * 1000;
    this.sweepTimer = setTimeout(
      () => {
        this.sweep()
          .catch((err: unknown) => this.deps.reportError(err))
          .finally(() => {
            if (this.running) this.armSweep();
          });
      },
      Math.max(200, leaseMs),
    );
    this.sweepTimer.unref();
  }

  /** Renews this instance's leases; a task that is no longer ours (cancelled on another instance) is stopped. */
  private async heartbeat(): Promise<void> {
    const mine = [...this.executions.values()];
    try {
      const lost = await this.deps.store.renew(
        mine.map((e) => e.claim),
        this.leaseUntil(),
        nowIso(),
      );
      this.lastHeartbeatAt = Date.now();
      this.lastHeartbeatError = undefined;
      for (const e of mine) if (lost.includes(e.claim)) e.stop('cancelled');
    } catch (err) {
      this.lastHeartbeatError = (err as Error).message;
      throw err;
    }
  }

  /**
   * Settles tasks whose lease expired: resumable ones whose type this instance knows are taken over and run
   * again; the others fail with "interrupted".
   */
  private async sweep(): Promise<void> {
    const now = nowIso();
    const leaseMs = this.deps.cfg().tasks.lease_seconds * 1000;
    for (const row of await this.deps.store.expired(now)) {
      const def = this.types.get(row.type);
      if (row.resumable === 1 && def && this.running) {
        const claim = randomUUID();
        const taken = await this.deps.store.takeOver(row, {
          claim,
          instanceId: this.instanceId,
          leaseUntil: this.leaseUntil(),
          now,
        });
        if (!taken) continue;
        this.counts.resumed += 1;
        this.execute(
          { ...row, claim, instance_id: this.instanceId, attempts: row.attempts + 1 },
          def,
          true,
          undefined,
          `resumed on instance ${this.instanceId} after an interruption (attempt ${row.attempts + 1})`,
        );
        continue;
      }
      // A resumable task waits a while for an instance that knows its type before it is given up.
      const expiredFor = Date.now() - Date.parse(row.lease_until ?? now);
      if (row.resumable === 1 && expiredFor < ORPHAN_LEASES * leaseMs) continue;
      if (await this.deps.store.failExpired(row, 'interrupted', now, stepsEnded(row.details))) {
        this.counts.interrupted += 1;
        await this.deps.store.insertLogs([
          {
            id: newId('tlg'),
            task_id: row.id,
            seq: OUTSIDE_SEQ,
            timestamp: now,
            level: 'ERROR',
            message: `interrupted: instance ${row.instance_id ?? '?'} stopped renewing its lease`,
          },
        ]);
        void this.announce('task.failed', row.id, row.type, { error: 'interrupted' }, undefined);
        await this.recover(def, row);
      }
    }
  }

  /** Runs the type's `onInterrupted` for a task just failed as interrupted; a failure is reported, not thrown. */
  private async recover(def: TaskType | undefined, row: TaskRow): Promise<void> {
    const hook = def?.options.onInterrupted;
    if (!hook) return;
    try {
      // Unreadable details: the hook gets none.
      await hook({ id: row.id, type: row.type, details: parseJsonObject(row.details) ?? {} });
    } catch (err) {
      this.deps.reportError(err);
      this.deps.log.warn(
        { err, task_id: row.id, task_type: row.type },
        'recovery of an interrupted task failed',
      );
    }
  }

  private execute(
    row: TaskRow,
    def: TaskType,
    resumed: boolean,
    actor: TaskActor | undefined,
    firstLine: string,
  ): void {
    const claim = row.claim ?? '';
    const details = parseJsonObject(row.details) ?? {};
    const execution = new TaskExecution(
      row.id,
      row.type,
      claim,
      row.started_at ?? row.created_at,
      Number(row.progress),
      details,
      this.deps.store,
      { maxLogLines: this.deps.cfg().tasks.max_log_lines },
      (e) => e.stop('cancelled'),
      (err) => this.deps.reportError(err),
    );
    this.executions.set(row.id, execution);
    execution.log('info', firstLine);
    const ctx: TaskContext = {
      taskId: row.id,
      type: row.type,
      get details() {
        return execution.details;
      },
      signal: execution.signal,
      resumed,
      progress: (fraction, step) => {
        if (step !== undefined) execution.step(step, 'running', fraction);
        execution.setProgress(fraction);
      },
      step: (name, status, progress) => execution.step(name, status, progress),
      log: (level, message) => {
        execution.log(level, message);
        this.deps.log.debug({ task_id: row.id, task_type: row.type }, message);
      },
      setDetails: (patch) => execution.setDetails(patch),
      save: () => execution.save(),
      beginUncancellable: async () => {
        execution.signal.throwIfAborted();
        if (!(await this.deps.store.markUncancellable(row.id, claim, nowIso()))) {
          // Cancelled (or taken from this run) first: the row is no longer this run's running task.
          execution.stop('cancelled');
        }
        execution.signal.throwIfAborted();
        execution.log('info', 'no longer cancellable: it finishes its remaining steps');
      },
    };
    execution.done = (async () => {
      let outcome: { ok: true; result: Record<string, unknown> | undefined } | { ok: false; error: unknown };
      try {
        // A handler that throws synchronously is treated as one that rejects.
        const result = await Promise.resolve().then(() => def.handler(ctx));
        outcome = { ok: true, result: result ?? undefined };
      } catch (error) {
        outcome = { ok: false, error };
      }
      if (execution.detached) return;
      try {
        await this.settle(execution, outcome, actor);
      } catch (err) {
        this.deps.reportError(err);
      } finally {
        // Only now: `settled(id)` waits on `done` while the execution is listed.
        execution.finish();
        this.executions.delete(row.id);
      }
    })();
  }

  private async settle(
    execution: TaskExecution,
    outcome: { ok: true; result: Record<string, unknown> | undefined } | { ok: false; error: unknown },
    actor: TaskActor | undefined,
  ): Promise<void> {
    // A cancelled run is settled as cancelled even when its handler went on to return: the row says cancelled.
    const cancelled = execution.stopReason === 'cancelled';
    // A task that ends without completing leaves no step running; a shutdown may resume it (settleInterrupted).
    if (cancelled || (!outcome.ok && execution.stopReason !== 'shutdown'))
      execution.endSteps(cancelled ? 'cancelled' : 'failed');
    await execution.drain();
    const now = nowIso();
    const durationMs = Date.now() - execution.startedAtMs;
    if (cancelled) {
      // The row already says cancelled (written by whoever cancelled it); its steps and the last lines remain.
      execution.log('info', 'stopped after cancellation', now);
      await this.deps.store.finish(
        execution.id,
        execution.claim,
        'cancelled',
        { progress: execution.progress, details: JSON.stringify(execution.details), updated_at: now },
        execution.takeLogs(),
      );
      return;
    }
    if (outcome.ok) {
      execution.log('info', `completed in ${durationMs} ms`, now);
      if (await this.ownOutcome(execution, now)) {
        this.counts.completed += 1;
        this.counts.finished += 1;
        this.counts.durationMs += durationMs;
        await this.announce(
          'task.completed',
          execution.id,
          execution.type,
          { duration_ms: durationMs },
          actor,
        );
      }
      await this.deps.store.finish(
        execution.id,
        execution.claim,
        'running',
        {
          status: 'completed',
          progress: 1,
          details: JSON.stringify(execution.details),
          result: JSON.stringify(outcome.result ?? {}),
          estimated_completion: null,
          completed_at: now,
          updated_at: now,
          lease_until: null,
        },
        execution.takeLogs(),
      );
      return;
    }
    if (execution.stopReason === 'shutdown') {
      await this.settleInterrupted(execution);
      return;
    }
    const message = errorMessage(outcome.error);
    execution.log('error', `failed: ${message}`, now);
    if (await this.ownOutcome(execution, now)) {
      this.counts.failed += 1;
      this.counts.finished += 1;
      this.counts.durationMs += durationMs;
      await this.announce(
        'task.failed',
        execution.id,
        execution.type,
        { error: message, duration_ms: durationMs },
        actor,
      );
    }
    await this.deps.store.finish(
      execution.id,
      execution.claim,
      'running',
      failedPatch(execution, message, now),
      execution.takeLogs(),
    );
  }

  /**
   * Makes the outcome of a run this one's to write: the task refuses cancels from now on, so the final status
   * written next cannot be beaten to it (the lease, renewed until the run is settled, keeps other instances
   * off). False when a cancel or another instance came first: then the run neither counts nor announces, and
   * its final write finds the task no longer its own. Called before the count and the event, which come before
   * the final status: a client that reads the status then sees both (metrics, `GET /api/v1/events`).
   */
  private ownOutcome(execution: TaskExecution, now: string): Promise<boolean> {
    return this.deps.store.markUncancellable(execution.id, execution.claim, now);
  }

  /**
   * A run stopped by shutdown: a resumable task is released for the next instance, any other one fails. A task
   * whose type has recovery to do (`onInterrupted`) is released too, and failed by the next sweep (here at the
   * next start, or on another instance), which runs the recovery once the run can no longer go on.
   */
  private async settleInterrupted(execution: TaskExecution): Promise<void> {
    const now = nowIso();
    const options = this.types.get(execution.type)?.options;
    const resumable = options?.resumable === true;
    if (resumable || options?.onInterrupted) {
      execution.log(
        'warning',
        resumable
          ? 'interrupted by shutdown; it resumes when an instance starts'
          : 'interrupted by shutdown; an instance that starts fails it and puts back what it left half done',
        now,
      );
      await this.deps.store.finish(
        execution.id,
        execution.claim,
        'running',
        {
          progress: execution.progress,
          details: JSON.stringify(execution.details),
          // An expired lease is what lets the next sweep (here or on another instance) take the task over.
          lease_until: new Date(Date.now() - 1).toISOString(),
          updated_at: now,
        },
        execution.takeLogs(),
      );
      return;
    }
    execution.log('error', 'interrupted: the platform stopped while the task ran', now);
    execution.endSteps('failed');
    const written = await this.deps.store.finish(
      execution.id,
      execution.claim,
      'running',
      failedPatch(execution, 'interrupted', now),
      execution.takeLogs(),
    );
    if (!written) return;
    this.counts.interrupted += 1;
    void this.announce('task.failed', execution.id, execution.type, { error: 'interrupted' }, undefined);
  }

  /** Counts the end by type and announces it; resolves once the event is stored (or failed to be, logged). */
  private announce(
    type: 'task.completed' | 'task.failed',
    id: string,
    taskType: string,
    data: Record<string, unknown>,
    actor: TaskActor | undefined,
  ): Promise<void> {
    this.typeCounts(taskType)[type === 'task.completed' ? 'completed' : 'failed'] += 1;
    return this.deps.events.announceStored(
      type,
      'system',
      { task_id: id, type: taskType, ...data },
      { actor },
    );
  }

  private typeCounts(type: string): { started: number; completed: number; failed: number } {
    let counts = this.byType.get(type);
    if (!counts) {
      counts = { started: 0, completed: 0, failed: 0 };
      this.byType.set(type, counts);
    }
    return counts;
  }

  private leaseUntil(): string {
    return new Date(Date.now() + this.deps.cfg().tasks.lease_seconds * 1000).toISOString();
  }

  private async health(): Promise<ServiceHealth> {
    const leaseMs = this.deps.cfg().tasks.lease_seconds * 1000;
    const started = performance.now();
    await this.deps.store.list({ limit: 1, offset: 0 });
    const storageMs = Math.round((performance.now() - started) * 100) / 100;
    const sinceHeartbeat = this.lastHeartbeatAt === 0 ? null : Date.now() - this.lastHeartbeatAt;
    const heartbeatLate = sinceHeartbeat !== null && sinceHeartbeat > leaseMs;
    const heartbeatOk = this.lastHeartbeatError === undefined && !heartbeatLate;
    return {
      status: heartbeatOk ? 'healthy' : 'warning',
      checks: [
        { name: 'storage', status: 'pass', response_time_ms: storageMs },
        {
          name: 'lease_heartbeat',
          status: heartbeatOk ? 'pass' : 'warning',
          last_heartbeat_ms_ago: sinceHeartbeat,
          ...(this.lastHeartbeatError ? { error: this.lastHeartbeatError } : {}),
        },
        { name: 'running_tasks', status: 'pass', running: this.executions.size },
      ],
      details: { running_tasks: this.executions.size, instance_id: this.instanceId },
    };
  }

  private metrics(): Record<string, number> {
    const c = this.counts;
    const ended = c.completed + c.failed + c.interrupted;
    return {
      requests_handled: c.started + c.resumed,
      tasks_started: c.started,
      tasks_running: this.executions.size,
      tasks_completed: c.completed,
      tasks_failed: c.failed,
      tasks_cancelled: c.cancelled,
      tasks_interrupted: c.interrupted,
      tasks_resumed: c.resumed,
      avg_task_duration_ms: c.finished === 0 ? 0 : Math.round(c.durationMs / c.finished),
      error_rate: ended === 0 ? 0 : Math.round(((c.failed + c.interrupted) / ended) * 10_000) / 10_000,
    };
  }

  private settings(): Record<string, unknown> {
    const t = this.deps.cfg().tasks;
    return {
      instance_id: this.instanceId,
      task_types: this.typeNames(),
      lease_seconds: t.lease_seconds,
      retention_days: t.retention_days,
      max_log_lines: t.max_log_lines,
      stop_timeout_seconds: t.stop_timeout_seconds,
    };
  }
}

/** The stored details of a task that ends with the steps it left running failed; unchanged when there are none. */
function stepsEnded(text: string): string {
  const details = parseJsonObject(text);
  if (details === undefined) return text;
  const ended = endRunningSteps(details, 'failed');
  return ended === details ? text : JSON.stringify(ended);
}

// A task's error as stored: a handler may throw any text of any length, and a database refuses some of it.
const MAX_ERROR_CHARS = 2000;

function errorMessage(error: unknown): string {
  return storableExcerpt(errorText(error), MAX_ERROR_CHARS);
}

function errorText(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

/** The final row of an execution that failed (`error` is what the task's record says). */
function failedPatch(execution: TaskExecution, error: string, now: string): Updateable<TasksTable> {
  return {
    status: 'failed',
    progress: execution.progress,
    details: JSON.stringify(execution.details),
    error,
    estimated_completion: null,
    completed_at: now,
    updated_at: now,
    lease_until: null,
  };
}
