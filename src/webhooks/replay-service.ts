import type { Kysely } from 'kysely';
import type { EventCipher } from '../events/event-cipher.js';
import { decodeEventData, type EventReader, mayRead, subscriptionReader } from '../events/event-data.js';
import { type CompiledSelector, compileSelector } from '../events/event-filters.js';
import { isValidEventType } from '../events/event-type.js';
import { isValidPattern } from '../events/pattern-matcher.js';
import { existingSubscriptionIds } from '../events/subscription-store.js';
import { AppError, notFound } from '../http/app-error.js';
import { newId, nowIso } from '../kernel/new-id.js';
import type { BulkWrites } from '../storage/bulk-writes.js';
import type { Dialect } from '../storage/database.js';
import { isForeignKeyViolation } from '../storage/foreign-key-violation.js';
import type { Tables } from '../storage/tables.js';
import type { TaskActor, TaskContext, TaskRunner } from '../tasks/task-runner.js';
import { EventSelection, type EventSelector, type WindowCursor } from './event-selection.js';
import { type Settlement, SettleWatcher } from './settle-watcher.js';
import type { WebhookDispatcher } from './webhook-dispatcher.js';

export const EVENT_REPLAY = 'event_replay';

export interface ReplayInput {
  event_filter?:
    | {
        event_types?: string[] | undefined;
        start_time?: string | undefined;
        end_time?: string | undefined;
        correlation_id?: string | undefined;
      }
    | undefined;
  target_subscribers?: string[] | undefined;
  replay_mode?: 'sequential' | 'parallel' | undefined;
  delay_between_events_ms?: number | undefined;
}

/** What a replay task keeps in its details: its parameters, then its progress as it goes. */
interface ReplayDetails {
  event_filter: NonNullable<ReplayInput['event_filter']>;
  target_subscribers: string[];
  replay_mode: 'sequential' | 'parallel';
  delay_between_events_ms: number;
  up_to_sequence: number;
  events_to_replay: number;
  phase?: 'started' | 'in_progress';
  events_replayed?: number;
  events_skipped?: number;
  deliveries_queued?: number;
  deliveries_delivered?: number;
  deliveries_failed?: number;
  error_count?: number;
  errors?: ReplayError[];
  actor?: string;
}

interface ReplayError {
  event_id: string;
  subscription_id: string;
  error: string;
}

export interface Target {
  id: string;
  /** Whom it receives as: an event goes to it only when its owner may read it (`mayRead`). */
  reader: EventReader;
  selector: CompiledSelector;
}

export type ReplayStatus = 'started' | 'in_progress' | 'completed' | 'failed' | 'cancelled';

const PAGE = 200;
const MAX_ERRORS = 100;
// Parallel replays keep at most this many deliveries queued at once, so a large replay cannot flood the outbox.
const PARALLEL_WINDOW = 1000;

/**
 * Event replay (admin): sends stored events again to subscriptions, as the `event_replay` task (so
 * `DELETE /api/v1/tasks/{id}` cancels it). Each delivery is an outbox row carrying the replay id, so it gets
 * the dispatcher's retries, leases and attempt records, and an `X-Platform-Replay` header. Sequential mode
 * waits for every event's deliveries to settle before the next event (order kept per subscription); parallel
 * mode queues ahead up to a window.
 */
export class ReplayService {
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
      dispatcher: WebhookDispatcher;
      cipher: EventCipher;
      concurrency: () => number;
    },
  ) {
    this.selection = new EventSelection(deps.reads, deps.dialect, deps.writes);
  }

  /**
   * Checks the request, counts the events and starts the task.
   * @throws AppError INVALID_EVENT_TYPE, VALIDATION_ERROR, SUBSCRIPTION_NOT_FOUND, RESOURCE_CONFLICT
   */
  async start(input: ReplayInput, actor: TaskActor) {
    const filter = normalizeFilter(input.event_filter ?? {});
    const targets = [...new Set(input.target_subscribers ?? [])];
    await this.checkTargets(targets);
    const last = await this.deps.db
      .selectFrom('events')
      .select((eb) => eb.fn.max('sequence').as('max'))
      .executeTakeFirst();
    const upTo = Number(last?.max ?? 0);
    const total = await this.selection.count({ ...selectorOf(filter), upToSequence: upTo });
    const mode = input.replay_mode ?? 'sequential';
    const delay = input.delay_between_events_ms ?? 0;
    const details: ReplayDetails = {
      event_filter: filter,
      target_subscribers: targets,
      replay_mode: mode,
      delay_between_events_ms: delay,
      up_to_sequence: upTo,
      events_to_replay: total,
      phase: 'started',
      actor: actor.username,
    };
    const estimate = await this.estimateMinutes(total, mode, delay, targets);
    const task = await this.deps.tasks.start(EVENT_REPLAY, { ...details }, { actor, id: newId('rpl') });
    return {
      replay_id: task.id,
      task_id: task.id,
      status: 'started' as const,
      events_to_replay: total,
      estimated_duration_minutes: estimate,
      started_at: task.started_at ?? task.created_at,
    };
  }

  /** The status record. @throws AppError RESOURCE_NOT_FOUND */
  async get(id: string) {
    const task = await this.deps.tasks.get(id);
    if (!task || task.type !== EVENT_REPLAY) throw notFound('replay', id);
    const d = task.details as unknown as ReplayDetails;
    const total = d.events_to_replay ?? 0;
    const done = d.events_replayed ?? 0;
    const status: ReplayStatus =
      task.status === 'running' ? (d.phase === 'in_progress' ? 'in_progress' : 'started') : task.status;
    return {
      replay_id: task.id,
      task_id: task.id,
      status,
      progress: {
        events_replayed: done,
        total_events: total,
        percentage:
          total === 0 ? (status === 'completed' ? 100 : 0) : Math.round((done / total) * 10_000) / 100,
      },
      deliveries: {
        queued: d.deliveries_queued ?? 0,
        delivered: d.deliveries_delivered ?? 0,
        failed: d.deliveries_failed ?? 0,
      },
      events_skipped: d.events_skipped ?? 0,
      event_filter: d.event_filter ?? {},
      target_subscribers: d.target_subscribers ?? [],
      replay_mode: d.replay_mode ?? 'sequential',
      delay_between_events_ms: d.delay_between_events_ms ?? 0,
      started_at: task.started_at ?? task.created_at,
      estimated_completion: task.estimated_completion,
      completed_at: task.completed_at ?? task.cancelled_at,
      errors: d.errors ?? [],
      error_count: d.error_count ?? 0,
      error: task.error,
    };
  }

  /** The task handler. */
  async run(task: TaskContext): Promise<Record<string, unknown>> {
    const d = task.details as unknown as ReplayDetails;
    const replayId = task.taskId;
    let targets = await loadTargets(this.deps.db, d.target_subscribers);
    const selector = { ...selectorOf(d.event_filter), upToSequence: d.up_to_sequence };
    const types = await this.selection.resolveTypes(selector.types);
    const total = d.events_to_replay;
    const watcher = new SettleWatcher(this.deps.db, (listener) =>
      this.deps.dispatcher.recorder.onSettled(listener),
    );
    const tally = { replayed: 0, skipped: 0, queued: 0, delivered: 0, failed: 0, errorCount: 0 };
    const errors: ReplayError[] = [];
    const report = () => {
      task.setDetails({
        phase: 'in_progress',
        events_replayed: tally.replayed,
        events_skipped: tally.skipped,
        deliveries_queued: tally.queued,
        deliveries_delivered: tally.delivered,
        deliveries_failed: tally.failed,
        error_count: tally.errorCount,
        errors,
      });
      task.progress(total === 0 ? 1 : Math.min(0.999, tally.replayed / total));
    };
    const addError = (error: ReplayError) => {
      tally.errorCount += 1;
      if (errors.length < MAX_ERRORS) errors.push(error);
    };
    const settleAll = (event: string, settled: Settlement[], subscriptions: Map<string, string>) => {
      for (const s of settled) {
        if (s.status === 'delivered') tally.delivered += 1;
        else {
          tally.failed += 1;
          addError({
            event_id: event,
            subscription_id: subscriptions.get(s.id) ?? '',
            error: s.error ?? s.status,
          });
        }
      }
      tally.replayed += 1;
    };
    const inFlight = new Set<Promise<void>>();
    const stopDropping = dropWhenCancelled(this.deps, task, 'replay cancelled');
    report();
    try {
      let after: WindowCursor | undefined;
      for (;;) {
        task.signal.throwIfAborted();
        const page = await this.selection.page(selector, after, PAGE, types);
        if (page.length === 0) break;
        for (const event of page) {
          task.signal.throwIfAborted();
          after = event;
          let data: unknown;
          const getData = () => {
            data ??= decodeEventData(event, this.deps.cipher);
            return data;
          };
          const matching = targets.filter(
            (t) => mayRead(event, t.reader) && t.selector.matches(event, getData),
          );
          const rows = await this.queueToExisting(event, matching, replayId, d.actor ?? 'admin', (id) => {
            // A target deleted during the replay is left out from here on; the event where that showed says so.
            targets = targets.filter((t) => t.id !== id);
            addError({
              event_id: event.event_id,
              subscription_id: id,
              error: 'the subscription was deleted',
            });
          });
          // No target matched it (or every one that did is gone).
          if (rows.size === 0) {
            tally.skipped += 1;
            tally.replayed += 1;
            report();
            continue;
          }
          tally.queued += rows.size;
          this.deps.dispatcher.wake();
          const waiting = watcher.wait([...rows.keys()], task.signal).then((settled) => {
            settleAll(event.event_id, settled, rows);
            report();
          });
          if (d.replay_mode === 'sequential') await waiting;
          else {
            inFlight.add(waiting);
            waiting.catch(() => {}).finally(() => inFlight.delete(waiting));
            while (inFlight.size > 0 && tally.queued - tally.delivered - tally.failed >= PARALLEL_WINDOW) {
              await Promise.race(inFlight);
            }
          }
          report();
          if (d.delay_between_events_ms > 0) await sleep(d.delay_between_events_ms, task.signal);
        }
        // The page's deliveries on disk (a power loss before this takes them with the unfinished replay).
        await this.deps.writes.sync();
      }
      await Promise.all(inFlight);
      // Selected at the start but purged before the replay reached them: nothing was left to send.
      const vanished = total - tally.replayed;
      if (vanished > 0) {
        tally.skipped += vanished;
        tally.replayed += vanished;
      }
    } catch (err) {
      await dropIfCancelled(this.deps, task, 'replay cancelled');
      throw err;
    } finally {
      stopDropping();
      watcher.close();
    }
    report();
    task.log(
      'info',
      `replayed ${tally.replayed} events: ${tally.delivered} deliveries made, ${tally.failed} failed, ` +
        `${tally.skipped} events matched no target`,
    );
    return {
      events_replayed: tally.replayed,
      events_skipped: tally.skipped,
      deliveries_delivered: tally.delivered,
      deliveries_failed: tally.failed,
    };
  }

  /**
   * Queues one event for those of the matching targets that still exist: a subscription deleted since the
   * replay began fails the insert (foreign key), is reported through `onGone`, and the event is queued again
   * for the others.
   */
  private async queueToExisting(
    event: { event_id: string; sequence: number; priority: number },
    matching: Target[],
    replayId: string,
    actor: string,
    onGone: (subscriptionId: string) => void,
  ): Promise<Map<string, string>> {
    if (matching.length === 0) return new Map();
    try {
      return await this.queue(event, matching, replayId, actor);
    } catch (err) {
      if (!isForeignKeyViolation(err)) throw err;
      // The event itself was purged since its page was read: there is nothing left to send.
      if (!(await this.eventExists(event.event_id))) return new Map();
      const existing = await existingSubscriptionIds(
        this.deps.db,
        matching.map((t) => t.id),
      );
      for (const t of matching) if (!existing.has(t.id)) onGone(t.id);
      const left = matching.filter((t) => existing.has(t.id));
      if (left.length === 0) return new Map();
      try {
        return await this.queue(event, left, replayId, actor);
      } catch (again) {
        // Purged between the check and the second insert.
        if (isForeignKeyViolation(again) && !(await this.eventExists(event.event_id))) return new Map();
        throw again;
      }
    }
  }

  private async eventExists(eventId: string): Promise<boolean> {
    const row = await this.deps.db
      .selectFrom('events')
      .select('event_id')
      .where('event_id', '=', eventId)
      .executeTakeFirst();
    return row !== undefined;
  }

  /**
   * Queues one event for the matching targets, with its `event_replayed` audit entry, in one transaction; on
   * SQLite it commits unsynced and the run syncs the WAL off the server's thread after each page (bulkWrites).
   */
  private async queue(
    event: { event_id: string; sequence: number; priority: number },
    targets: Target[],
    replayId: string,
    actor: string,
  ): Promise<Map<string, string>> {
    const now = nowIso();
    const rows = targets.map((t) => replayOutboxRow(event, t.id, replayId, now));
    await this.deps.writes.transaction(async (trx) => {
      await trx.insertInto('event_outbox').values(rows).execute();
      await trx
        .insertInto('event_audit')
        .values({
          id: newId('aud'),
          event_id: event.event_id,
          timestamp: now,
          action: 'event_replayed',
          actor,
          details: JSON.stringify({
            replay_id: replayId,
            subscription_ids: targets.map((t) => t.id),
            delivery_ids: rows.map((r) => r.id),
          }),
        })
        .execute();
    });
    return new Map(rows.map((r) => [r.id, r.subscription_id]));
  }

  private async checkTargets(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const rows = await this.deps.db
      .selectFrom('subscriptions')
      .select(['id', 'status'])
      .where('id', 'in', ids)
      .execute();
    const found = new Map(rows.map((r) => [r.id, r.status]));
    const missing = ids.filter((id) => !found.has(id));
    if (missing.length > 0) {
      throw new AppError('SUBSCRIPTION_NOT_FOUND', `Subscription '${missing[0]}' does not exist`, {
        details: { field: 'target_subscribers', subscription_ids: missing },
      });
    }
    const inactive = ids.filter((id) => found.get(id) !== 'active');
    if (inactive.length > 0) {
      throw new AppError(
        'RESOURCE_CONFLICT',
        `Subscription '${inactive[0]}' is ${found.get(inactive[0]!)}; enable it before replaying to it`,
        { details: { field: 'target_subscribers', subscription_ids: inactive } },
      );
    }
  }

  /**
   * From the latency measured on recent attempts (to these targets when named) and the requested delay;
   * sequential replays wait for each event, parallel ones spread over the subscriptions' concurrency.
   */
  private async estimateMinutes(
    total: number,
    mode: 'sequential' | 'parallel',
    delayMs: number,
    targets: string[],
  ): Promise<number> {
    let recent = this.deps.db
      .selectFrom('delivery_attempts')
      .select('latency_ms')
      .orderBy('created_at', 'desc')
      .limit(500);
    if (targets.length > 0) recent = recent.where('subscription_id', 'in', targets);
    const row = await this.deps.db
      .selectFrom(recent.as('recent'))
      .select((eb) => eb.fn.avg<number>('recent.latency_ms').as('avg'))
      .executeTakeFirst();
    const latency = Number(row?.avg ?? 0);
    const perEvent = mode === 'sequential' ? latency + delayMs : latency / this.deps.concurrency() + delayMs;
    return Math.ceil((total * perEvent) / 60_000);
  }
}

/**
 * The active subscriptions among `ids` (every active one when empty), as a replay or a recovery sends to them:
 * whom each receives as and what it selects. `anyStatus`: the named ones also when paused or in error.
 */
export async function loadTargets(db: Kysely<Tables>, ids: string[], anyStatus = false): Promise<Target[]> {
  let q = db
    .selectFrom('subscriptions')
    .leftJoin('users', 'users.id', 'subscriptions.owner_id')
    .select([
      'subscriptions.id',
      'subscriptions.owner_id',
      'subscriptions.event_patterns',
      'subscriptions.filters',
      'subscriptions.reader_scopes',
      'users.roles as owner_roles',
    ]);
  if (!anyStatus || ids.length === 0) q = q.where('subscriptions.status', '=', 'active');
  if (ids.length > 0) q = q.where('subscriptions.id', 'in', ids);
  const rows = await q.orderBy('subscriptions.id').execute();
  return rows.map((row) => {
    const filters = JSON.parse(row.filters) as {
      source?: string[];
      priority?: { min?: number; max?: number };
      data_filters?: Record<string, unknown>;
    };
    return {
      id: row.id,
      reader: subscriptionReader(row.owner_id, row.owner_roles, row.reader_scopes),
      selector: compileSelector({
        patterns: JSON.parse(row.event_patterns) as string[],
        source: filters.source,
        priority: filters.priority,
        dataFilters: filters.data_filters,
      }),
    };
  });
}

/** A new pending delivery of a stored event to a subscription, queued by a replay (or a resend) `replayId`. */
export function replayOutboxRow(
  event: { event_id: string; sequence: number; priority: number },
  subscriptionId: string,
  replayId: string,
  now: string,
) {
  return {
    id: newId('dlv'),
    event_id: event.event_id,
    subscription_id: subscriptionId,
    sequence: event.sequence,
    priority: event.priority,
    status: 'pending',
    attempts: 0,
    next_attempt_at: now,
    lease_owner: null,
    lease_until: null,
    last_error: null,
    created_at: now,
    updated_at: now,
    replay_id: replayId,
  };
}

/**
 * A cancelled replay (or recovery, whose task id is its deliveries' replay id) sends nothing more: first what
 * this instance already claimed and holds unsent, then what still waits in the outbox. Stopped by a shutdown
 * instead, what was queued is still delivered.
 */
export async function dropIfCancelled(
  deps: { db: Kysely<Tables>; tasks: TaskRunner; dispatcher: WebhookDispatcher },
  task: TaskContext,
  reason: string,
): Promise<void> {
  if (!task.signal.aborted || (await deps.tasks.get(task.taskId))?.status !== 'cancelled') return;
  await deps.dispatcher.cancelReplay(task.taskId);
  await deps.db
    .updateTable('event_outbox')
    .set({ status: 'dropped', last_error: reason, updated_at: nowIso() })
    .where('replay_id', '=', task.taskId)
    .where('status', '=', 'pending')
    .execute();
}

/**
 * `dropIfCancelled` as soon as the task's signal aborts, wherever its loop is: the loop notices the abort only at
 * its next step, which may be a page's sync to disk (a second and more on a busy disk), and meanwhile the
 * dispatcher would go on sending what it claimed. The loop's own catch drops again (nothing left by then).
 * Answers the function that stops listening, for the end of the run.
 */
export function dropWhenCancelled(
  deps: Parameters<typeof dropIfCancelled>[0],
  task: TaskContext,
  reason: string,
): () => void {
  const drop = () => {
    dropIfCancelled(deps, task, reason).catch(() => {});
  };
  task.signal.addEventListener('abort', drop, { once: true });
  return () => task.signal.removeEventListener('abort', drop);
}

function normalizeFilter(
  filter: NonNullable<ReplayInput['event_filter']>,
): NonNullable<ReplayInput['event_filter']> {
  const types = filter.event_types ?? [];
  const bad = types.find((t) => (t.includes('*') ? !isValidPattern(t) : !isValidEventType(t)));
  if (bad !== undefined) {
    throw new AppError('INVALID_EVENT_TYPE', `'${bad.slice(0, 300)}' is not an event type or pattern`, {
      details: { field: 'event_filter.event_types', value: bad.slice(0, 300) },
    });
  }
  const start = isoOrUndefined(filter.start_time, 'event_filter.start_time');
  const end = isoOrUndefined(filter.end_time, 'event_filter.end_time');
  if (start !== undefined && end !== undefined && start > end) {
    throw new AppError('VALIDATION_ERROR', 'event_filter.start_time is after end_time', {
      details: { field: 'event_filter.start_time', reason: 'must not be after end_time' },
    });
  }
  return {
    ...(types.length > 0 ? { event_types: types } : {}),
    ...(start !== undefined ? { start_time: start } : {}),
    ...(end !== undefined ? { end_time: end } : {}),
    ...(filter.correlation_id !== undefined ? { correlation_id: filter.correlation_id } : {}),
  };
}

/** The ISO form of an optional timestamp given by a client. @throws AppError VALIDATION_ERROR */
export function isoOrUndefined(value: string | undefined, field: string): string | undefined {
  if (value === undefined) return undefined;
  const at = Date.parse(value);
  if (Number.isNaN(at)) {
    throw new AppError('VALIDATION_ERROR', `${field} must be an ISO 8601 timestamp`, {
      details: { field, reason: 'must be an ISO 8601 timestamp' },
    });
  }
  return new Date(at).toISOString();
}

function selectorOf(filter: NonNullable<ReplayInput['event_filter']>): EventSelector {
  return {
    types: filter.event_types,
    start: filter.start_time,
    end: filter.end_time,
    correlationId: filter.correlation_id,
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
