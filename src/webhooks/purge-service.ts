import type { Kysely } from 'kysely';
import { isValidEventType } from '../events/event-type.js';
import { isValidPattern } from '../events/pattern-matcher.js';
import { AppError, notFound } from '../http/app-error.js';
import { newId } from '../kernel/new-id.js';
import type { BulkWrites } from '../storage/bulk-writes.js';
import type { Dialect } from '../storage/database.js';
import type { Tables } from '../storage/tables.js';
import type { TaskActor, TaskContext, TaskRunner } from '../tasks/task-runner.js';
import { EventSelection, type EventSelector, type WindowCursor } from './event-selection.js';

export const EVENT_PURGE = 'event_purge';

export type EventStatus = 'emitted' | 'processing' | 'processed' | 'failed';

export interface PurgeInput {
  criteria: {
    older_than_days?: number | undefined;
    event_types?: string[] | undefined;
    status?: EventStatus[] | undefined;
  };
  dry_run?: boolean | undefined;
  batch_size?: number | undefined;
}

interface PurgeDetails {
  criteria: PurgeInput['criteria'];
  /** Events emitted before this instant are candidates (`older_than_days` before the request). */
  cutoff: string;
  dry_run: boolean;
  batch_size: number;
  events_to_purge: number;
  events_purged?: number;
  phase?: 'started' | 'in_progress';
  scheduled?: boolean;
}

export type PurgeStatus = 'started' | 'in_progress' | 'completed' | 'failed' | 'cancelled';

/**
 * Event purge (admin, and the daily retention run): deletes events matching the criteria with their outbox
 * rows, attempts and audit entries, in batches, as the resumable `event_purge` task. A dry run only counts.
 */
export class PurgeService {
  private readonly selection: EventSelection;

  constructor(
    private readonly deps: {
      db: Kysely<Tables>;
      dialect: Dialect;
      /** Database.reads: where the events it works on are looked up and paged. */
      reads: Kysely<Tables>;
      /** How its chunks commit (bulkWrites: on SQLite, synced off the server's thread). */
      writes: BulkWrites;
      tasks: TaskRunner;
      /**
       * Told the purged events whose deliveries a dispatcher had claimed: the dispatchers (here and, through the
       * cluster bus, on the other instances) drop those they have not started.
       */
      forget?: (eventIds: string[]) => Promise<void>;
    },
  ) {
    this.selection = new EventSelection(deps.reads, deps.dialect, deps.writes);
  }

  /** Counts the events and starts the task. @throws AppError INVALID_EVENT_TYPE */
  async start(input: PurgeInput, actor: TaskActor | undefined, options: { scheduled?: boolean } = {}) {
    const criteria = input.criteria;
    const bad = (criteria.event_types ?? []).find((t) =>
      t.includes('*') ? !isValidPattern(t) : !isValidEventType(t),
    );
    if (bad !== undefined) {
      throw new AppError('INVALID_EVENT_TYPE', `'${bad.slice(0, 300)}' is not an event type or pattern`, {
        details: { field: 'criteria.event_types', value: bad.slice(0, 300) },
      });
    }
    const cutoff = new Date(Date.now() - (criteria.older_than_days ?? 0) * 86_400_000).toISOString();
    const total = await this.selection.count(selectorOf(criteria, cutoff));
    const dryRun = input.dry_run ?? false;
    const details: PurgeDetails = {
      criteria,
      cutoff,
      dry_run: dryRun,
      batch_size: input.batch_size ?? 1000,
      events_to_purge: total,
      phase: 'started',
      ...(options.scheduled ? { scheduled: true } : {}),
    };
    const estimate = dryRun ? 0 : await this.estimateMinutes(total);
    const task = await this.deps.tasks.start(EVENT_PURGE, { ...details }, { actor, id: newId('prg') });
    return {
      purge_id: task.id,
      task_id: task.id,
      status: 'started' as const,
      dry_run: dryRun,
      events_to_purge: total,
      estimated_duration_minutes: estimate,
      cutoff,
      started_at: task.started_at ?? task.created_at,
    };
  }

  /** The status record. @throws AppError RESOURCE_NOT_FOUND */
  async get(id: string) {
    const task = await this.deps.tasks.get(id);
    if (!task || task.type !== EVENT_PURGE) throw notFound('purge', id);
    const d = task.details as unknown as PurgeDetails;
    const total = d.events_to_purge ?? 0;
    // The result is the exact count; while running, the details follow a moment behind.
    const done = Number(task.result?.['events_purged'] ?? d.events_purged ?? 0);
    const status: PurgeStatus =
      task.status === 'running' ? (d.phase === 'in_progress' ? 'in_progress' : 'started') : task.status;
    return {
      purge_id: task.id,
      task_id: task.id,
      status,
      dry_run: d.dry_run ?? false,
      criteria: d.criteria ?? {},
      cutoff: d.cutoff,
      batch_size: d.batch_size ?? 1000,
      scheduled: d.scheduled ?? false,
      events_to_purge: total,
      events_purged: done,
      progress: {
        events_purged: done,
        total_events: total,
        percentage:
          total === 0
            ? status === 'completed'
              ? 100
              : 0
            : Math.min(100, Math.round((done / total) * 10_000) / 100),
      },
      started_at: task.started_at ?? task.created_at,
      estimated_completion: task.estimated_completion,
      completed_at: task.completed_at ?? task.cancelled_at,
      error: task.error,
    };
  }

  /**
   * The task handler. It walks the events emitted before the cutoff by the timestamp index, `batch_size` at a
   * time, and deletes those matching the criteria in chunks that yield between them. Its count grows in the
   * transaction of each deleted chunk (`event_purge_progress`): resumed after its instance died, it carries on
   * from exactly what was deleted, not from the last progress it happened to save.
   */
  async run(task: TaskContext): Promise<Record<string, unknown>> {
    const d = task.details as unknown as PurgeDetails;
    if (d.dry_run) {
      task.log('info', `dry run: ${d.events_to_purge} events match; nothing was deleted`);
      task.setDetails({ phase: 'in_progress' });
      return { dry_run: true, events_matching: d.events_to_purge, events_purged: 0 };
    }
    const db = this.deps.db;
    // The counts of purges that ended are not needed any more (their tasks hold the result).
    await db
      .deleteFrom('event_purge_progress')
      .where('purge_id', '<>', task.taskId)
      .where('purge_id', 'not in', db.selectFrom('tasks').select('id').where('status', '=', 'running'))
      .execute();
    const saved = await db
      .selectFrom('event_purge_progress')
      .select('events_purged')
      .where('purge_id', '=', task.taskId)
      .executeTakeFirst();
    let purged = Number(saved?.events_purged ?? 0);
    const selector = selectorOf(d.criteria, d.cutoff);
    const types = await this.selection.resolveTypes(selector.types);
    const typeSet = types === undefined ? undefined : new Set(types);
    const statuses = selector.statuses?.length ? new Set(selector.statuses) : undefined;
    task.setDetails({ phase: 'in_progress', events_purged: purged });
    let cursor: WindowCursor | undefined;
    while (typeSet === undefined || typeSet.size > 0) {
      task.signal.throwIfAborted();
      const rows = await this.selection.window(d.cutoff, cursor, d.batch_size);
      if (rows.length === 0) break;
      const last = rows[rows.length - 1]!;
      cursor = { timestamp: last.timestamp, sequence: last.sequence };
      const ids = rows
        .filter(
          (r) =>
            (typeSet === undefined || typeSet.has(r.event_type)) && (!statuses || statuses.has(r.status)),
        )
        .map((r) => r.event_id);
      if (ids.length > 0) purged += await this.selection.delete(ids, this.deps.forget, task.taskId);
      task.setDetails({ events_purged: purged });
      task.progress(Math.min(0.999, purged / Math.max(1, d.events_to_purge, purged)));
      await new Promise((r) => setImmediate(r));
    }
    task.log('info', `deleted ${purged} events emitted before ${d.cutoff}`);
    return { dry_run: false, events_purged: purged };
  }

  /** From the rate the last completed purge measured; null before any purge has run. */
  private async estimateMinutes(total: number): Promise<number | null> {
    const { tasks } = await this.deps.tasks.list({
      type: EVENT_PURGE,
      status: 'completed',
      page: 1,
      perPage: 20,
    });
    for (const t of tasks) {
      const purged = Number(t.result?.['events_purged'] ?? 0);
      if (purged <= 0 || !t.started_at || !t.completed_at) continue;
      const ms = Date.parse(t.completed_at) - Date.parse(t.started_at);
      if (ms <= 0) continue;
      return Math.ceil((total * (ms / purged)) / 60_000);
    }
    return null;
  }
}

function selectorOf(criteria: PurgeInput['criteria'], cutoff: string): EventSelector {
  return { before: cutoff, types: criteria.event_types, statuses: criteria.status };
}
