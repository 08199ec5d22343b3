import type { Insertable } from 'kysely';
import { newId, nowIso } from '../kernel/new-id.js';
import { storableText } from '../kernel/storable-text.js';
import type { TaskStore } from './task-store.js';
import type { TaskLogsTable } from './task-tables.js';

export type TaskLogLevel = 'debug' | 'info' | 'warning' | 'error';
export type TaskStepStatus = 'pending' | 'running' | 'completed' | 'failed' | 'skipped' | 'cancelled';

export interface TaskStep {
  name: string;
  status: TaskStepStatus;
  progress: number;
}

/**
 * `details` with every step still `running` ended as `status` (its progress kept): a task that ends leaves no
 * step running. A cancelled task also leaves no step `pending`: those that never began become `skipped`, so
 * every step of a cancelled task is in a final state. (A failed task keeps its `pending` steps: they show
 * where it stopped.) Other steps, and details without steps, are returned as they are.
 */
export function endRunningSteps(
  details: Record<string, unknown>,
  status: 'failed' | 'cancelled',
): Record<string, unknown> {
  const steps = details['steps'];
  const ends = (s: TaskStep | null) =>
    s?.status === 'running' || (status === 'cancelled' && s?.status === 'pending');
  if (!Array.isArray(steps) || !steps.some((s) => ends(s as TaskStep | null))) return details;
  return {
    ...details,
    steps: (steps as TaskStep[]).map((s) =>
      s?.status === 'running'
        ? { ...s, status }
        : status === 'cancelled' && s?.status === 'pending'
          ? { ...s, status: 'skipped' as const }
          : s,
    ),
  };
}

/** Why an execution's signal was aborted. */
export type StopReason = 'cancelled' | 'shutdown';

const FLUSH_DELAY_MS = 100;
const MAX_MESSAGE = 2000;

/**
 * One run of a task in this process: its abort controller, and its progress, details and log lines, written
 * behind to storage. Writes are coalesced (at most one every 100 ms and never two at once) so a handler may
 * report progress as often as it likes without loading the database.
 */
export class TaskExecution {
  readonly controller = new AbortController();
  readonly startedAtMs: number;
  stopReason: StopReason | undefined;
  /** Set when `stop()` gave up waiting: whatever this execution does later is no longer written. */
  detached = false;
  done: Promise<void> = Promise.resolve();
  progress: number;
  details: Record<string, unknown>;
  private readonly logs: Insertable<TaskLogsTable>[] = [];
  private logCount = 0;
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private dirty = false;
  private final = false;

  constructor(
    readonly id: string,
    readonly type: string,
    readonly claim: string,
    startedAt: string,
    progress: number,
    details: Record<string, unknown>,
    private readonly store: TaskStore,
    private readonly limits: { maxLogLines: number },
    private readonly onLost: (execution: TaskExecution) => void,
    private readonly onError: (err: unknown) => void,
  ) {
    this.startedAtMs = Date.parse(startedAt);
    this.progress = progress;
    this.details = details;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  stop(reason: StopReason): void {
    if (this.controller.signal.aborted) return;
    this.stopReason = reason;
    this.controller.abort(new DOMException(`task ${reason}`, 'AbortError'));
  }

  /** Overall progress never goes backwards: a lower fraction than the one reached is ignored. */
  setProgress(fraction: number): void {
    const p = Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : this.progress;
    this.progress = Math.max(this.progress, p);
    this.touch();
  }

  /** Ends every step still running (the task is ending without completing). */
  endSteps(status: 'failed' | 'cancelled'): void {
    const details = endRunningSteps(this.details, status);
    if (details === this.details) return;
    this.details = details;
    this.touch();
  }

  step(name: string, status: TaskStepStatus, progress?: number): void {
    const steps = Array.isArray(this.details['steps']) ? [...(this.details['steps'] as TaskStep[])] : [];
    const index = steps.findIndex((s) => s.name === name);
    const previous = index >= 0 ? steps[index] : undefined;
    const next: TaskStep = {
      name,
      status,
      progress:
        progress !== undefined
          ? Math.min(1, Math.max(0, progress))
          : status === 'completed'
            ? 1
            : (previous?.progress ?? 0),
    };
    if (index >= 0) steps[index] = next;
    else steps.push(next);
    this.details = { ...this.details, steps };
    this.touch();
  }

  setDetails(patch: Record<string, unknown>): void {
    this.details = { ...this.details, ...patch };
    this.touch();
  }

  log(level: TaskLogLevel, message: string, at = nowIso()): void {
    if (this.logCount > this.limits.maxLogLines) return;
    this.logCount += 1;
    const text =
      this.logCount > this.limits.maxLogLines
        ? `log limit of ${this.limits.maxLogLines} lines reached; later lines are not kept`
        : storableText(message.slice(0, MAX_MESSAGE));
    this.logs.push({
      id: newId('tlg'),
      task_id: this.id,
      seq: this.seq++,
      timestamp: at,
      level: (this.logCount > this.limits.maxLogLines ? 'warning' : level).toUpperCase(),
      message: text,
    });
    this.touch();
  }

  /** When the task should end at the pace it has made so far; null before any progress. */
  estimatedCompletion(now = Date.now()): string | null {
    if (this.progress <= 0 || this.progress >= 1) return null;
    const elapsed = now - this.startedAtMs;
    return new Date(this.startedAtMs + elapsed / this.progress).toISOString();
  }

  /** Writes whatever is pending now and waits for it (writes behind go on afterwards). */
  async save(): Promise<void> {
    if (this.final || this.detached) return;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    while (this.flushing !== undefined) await this.flushing;
    if (this.dirty) await this.flush(true);
  }

  /**
   * Writes whatever is pending and waits for it; from then on nothing is written behind, so the final status
   * and the last lines are written together by the caller.
   */
  async drain(): Promise<void> {
    this.final = true;
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    while (this.flushing !== undefined) await this.flushing;
    if (this.dirty) await this.flush(true);
  }

  /** No more writes behind: the final status is written (or given up). */
  finish(): void {
    this.detached = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Log lines not yet written; the final write takes them so they land with the final status. */
  takeLogs(): Insertable<TaskLogsTable>[] {
    return this.logs.splice(0, this.logs.length);
  }

  private touch(): void {
    this.dirty = true;
    if (this.timer || this.detached || this.final) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flush().catch(this.onError);
    }, FLUSH_DELAY_MS);
    this.timer.unref();
  }

  private async flush(force = false): Promise<void> {
    if (this.final && !force) return;
    if (this.flushing !== undefined) {
      // A write is under way; the next one picks up what changed meanwhile.
      this.touch();
      return;
    }
    if (this.detached) return;
    this.dirty = false;
    const logs = this.takeLogs();
    const now = nowIso();
    this.flushing = (async () => {
      try {
        const owned = await this.store.saveProgress(
          this.id,
          this.claim,
          {
            progress: this.progress,
            details: JSON.stringify(this.details),
            estimated_completion: this.estimatedCompletion(),
            updated_at: now,
          },
          logs,
        );
        if (!owned) this.onLost(this);
      } catch (err) {
        this.onError(err);
      } finally {
        this.flushing = undefined;
      }
    })();
    await this.flushing;
  }
}
