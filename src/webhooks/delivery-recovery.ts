import type { Kysely } from 'kysely';
import type { EventCipher } from '../events/event-cipher.js';
import { decodeEventData, type EventReader, mayRead, type ReadFacts } from '../events/event-data.js';
import type { Caller, SubscriptionService } from '../events/subscription-service.js';
import type { SubscriptionRow } from '../events/subscription-store.js';
import { AppError } from '../http/app-error.js';
import { newId, nowIso } from '../kernel/new-id.js';
import type { BulkWrites } from '../storage/bulk-writes.js';
import type { Dialect } from '../storage/database.js';
import { isForeignKeyViolation } from '../storage/foreign-key-violation.js';
import type { Tables } from '../storage/tables.js';
import type { TaskActor, TaskContext, TaskRunner } from '../tasks/task-runner.js';
import { EventSelection, type WindowCursor } from './event-selection.js';
import {
  dropIfCancelled,
  dropWhenCancelled,
  isoOrUndefined,
  loadTargets,
  replayOutboxRow,
  type Target,
} from './replay-service.js';
import { SettleWatcher } from './settle-watcher.js';
import type { WebhookDispatcher } from './webhook-dispatcher.js';

export const SUBSCRIPTION_RECOVER = 'subscription.recover';

const PAGE = 200;
// At most this many resent deliveries wait to settle at once, so a large recovery cannot flood the outbox.
const WINDOW = 1000;

interface RecoverDetails {
  subscription_id: string;
  since: string;
  until: string;
  up_to_sequence: number;
  actor: string;
  failed_to_resend: number;
  events_in_window: number;
  failed_resent?: number;
  /** Failed deliveries not sent again: their events are ones the subscription's owner may no longer read. */
  unreadable_skipped?: number;
  missed_sent?: number;
  events_scanned?: number;
  deliveries_delivered?: number;
  deliveries_failed?: number;
}

interface Resendable {
  event_id: string;
  sequence: number;
  priority: number;
}

/** A failed delivery's event, with what `mayRead` reads of it. */
type FailedEvent = Resendable & ReadFacts;

/**
 * Sends a subscription's failed deliveries again: one (`resend`), or every one in a time window as the
 * `subscription.recover` task, which also sends the events the subscription missed while it was paused or in
 * error (docs/webhooks.md, "Recovering failed deliveries"). Each is a new outbox row of the same event carrying
 * the resend's id (or the task's) as `replay_id`, so it gets the dispatcher's retries and leases, an
 * `X-Platform-Replay` header, and leaves the event's own status as it was.
 */
export class DeliveryRecovery {
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
      subscriptions: SubscriptionService;
    },
  ) {
    this.selection = new EventSelection(deps.reads, deps.dialect, deps.writes);
  }

  /**
   * Sends one settled delivery of the subscription again, as a new delivery of the same event. A delivery of an
   * event that the caller, or the subscription's owner it would go to, may not read (`mayRead`: its owner lost
   * the right since, say) is answered as one that does not exist.
   * @throws AppError SUBSCRIPTION_NOT_FOUND, DELIVERY_NOT_FOUND, SUBSCRIPTION_NOT_ACTIVE, RESOURCE_CONFLICT
   */
  async resend(
    caller: Caller,
    reader: EventReader,
    subscriptionId: string,
    deliveryId: string,
    actor: string,
  ) {
    const sub = await this.deps.subscriptions.get(caller, subscriptionId);
    const row = await this.deps.db
      .selectFrom('event_outbox as o')
      .innerJoin('events as e', 'e.event_id', 'o.event_id')
      .select(['o.id', 'o.event_id', 'o.sequence', 'o.priority', 'o.status'])
      .select(['e.event_type', 'e.source', 'e.security_level', 'e.emitter_id'])
      .where('o.id', '=', deliveryId)
      .where('o.subscription_id', '=', sub.id)
      .executeTakeFirst();
    const [target] = row ? await loadTargets(this.deps.db, [sub.id], true) : [];
    if (!row || !target || !mayRead(row, reader) || !mayRead(row, target.reader))
      throw deliveryNotFound(sub.id, deliveryId);
    assertActive(sub);
    if (row.status === 'pending' || row.status === 'delivering') {
      throw new AppError('RESOURCE_CONFLICT', `Delivery '${deliveryId}' is still ${row.status}`, {
        details: { delivery_id: deliveryId, status: row.status, reason: 'not_settled' },
      });
    }
    const resendId = newId('rsd');
    let queued: string[];
    try {
      queued = await this.queue([row], sub.id, resendId, actor, { resent_delivery_id: deliveryId });
    } catch (err) {
      // The event (and with it the delivery) was purged, or the subscription deleted, meanwhile.
      if (isForeignKeyViolation(err)) throw deliveryNotFound(sub.id, deliveryId);
      throw err;
    }
    this.deps.dispatcher.wake(row.priority);
    return { delivery_id: queued[0]!, event_id: row.event_id, status: 'pending' as const };
  }

  /**
   * Counts what there is to send and starts the task.
   * @throws AppError SUBSCRIPTION_NOT_FOUND, SUBSCRIPTION_NOT_ACTIVE, VALIDATION_ERROR
   */
  async startRecover(
    caller: Caller,
    subscriptionId: string,
    input: { since: string; until?: string | undefined },
    actor: TaskActor,
  ) {
    const sub = await this.deps.subscriptions.get(caller, subscriptionId);
    assertActive(sub);
    const since = isoOf(input.since, 'since');
    const until = input.until === undefined ? nowIso() : isoOf(input.until, 'until');
    if (since > until) {
      throw new AppError('VALIDATION_ERROR', 'since is after until', {
        details: { field: 'since', reason: 'must not be after until' },
      });
    }
    const last = await this.deps.reads
      .selectFrom('events')
      .select((eb) => eb.fn.max('sequence').as('max'))
      .executeTakeFirst();
    const upTo = Number(last?.max ?? 0);
    // Counted on the reader threads: the subscription's deliveries of the window, however many there are.
    const failed = await this.deps.reads
      .selectFrom(this.failedQuery(sub.id, since, until, upTo).as('f'))
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirst();
    const [target] = await loadTargets(this.deps.db, [sub.id], true);
    const inWindow = target
      ? await this.selection.count(this.missedSelector(sub, target, since, until, upTo))
      : 0;
    const details: RecoverDetails = {
      subscription_id: sub.id,
      since,
      until,
      up_to_sequence: upTo,
      actor: actor.username,
      failed_to_resend: Number(failed?.n ?? 0),
      events_in_window: inWindow,
    };
    const task = await this.deps.tasks.start(
      SUBSCRIPTION_RECOVER,
      { ...details },
      { actor, id: newId('rcv') },
    );
    return { task_id: task.id, status: 'pending' as const };
  }

  /** The task handler: first the failed deliveries, then the events missed while not active. */
  async run(task: TaskContext): Promise<Record<string, unknown>> {
    const d = task.details as unknown as RecoverDetails;
    const taskId = task.taskId;
    const watcher = new SettleWatcher(this.deps.db, (listener) =>
      this.deps.dispatcher.recorder.onSettled(listener),
    );
    const tally = { failedResent: 0, unreadable: 0, missedSent: 0, scanned: 0, delivered: 0, failed: 0 };
    const total = d.failed_to_resend + d.events_in_window;
    const report = () => {
      task.setDetails({
        failed_resent: tally.failedResent,
        unreadable_skipped: tally.unreadable,
        missed_sent: tally.missedSent,
        events_scanned: tally.scanned,
        deliveries_delivered: tally.delivered,
        deliveries_failed: tally.failed,
      });
      const done = Math.min(d.failed_to_resend, tally.failedResent + tally.unreadable) + tally.scanned;
      task.progress(total === 0 ? 0.999 : Math.min(0.999, done / total));
    };
    const waits = new Set<Promise<void>>();
    const send = async (rows: Resendable[]) => {
      if (rows.length === 0) return 0;
      const ids = await this.queue(rows, d.subscription_id, taskId, d.actor, { recover_task_id: taskId });
      this.deps.dispatcher.wake();
      const waiting = watcher.wait(ids, task.signal).then((settled) => {
        for (const s of settled) {
          if (s.status === 'delivered') tally.delivered += 1;
          else tally.failed += 1;
        }
        report();
      });
      waits.add(waiting);
      waiting.catch(() => {}).finally(() => waits.delete(waiting));
      const queued = tally.failedResent + tally.missedSent + ids.length;
      while (waits.size > 0 && queued - tally.delivered - tally.failed >= WINDOW) await Promise.race(waits);
      return ids.length;
    };
    const stopDropping = dropWhenCancelled(this.deps, task, 'recovery cancelled');
    report();
    try {
      // Whom the subscription receives as, now: what its owner may no longer read is not sent again.
      const [target] = await loadTargets(this.deps.db, [d.subscription_id], true);
      let after = 0;
      while (target) {
        task.signal.throwIfAborted();
        const page = await this.failedPage(
          d.subscription_id,
          d.since,
          d.until,
          after,
          PAGE,
          d.up_to_sequence,
        );
        if (page.length === 0) break;
        after = Number(page[page.length - 1]!.sequence);
        const readable = page.filter((event) => mayRead(event, target.reader));
        tally.unreadable += page.length - readable.length;
        tally.failedResent += await send(readable);
        report();
      }
      const sub = await this.deps.db
        .selectFrom('subscriptions')
        .selectAll()
        .where('id', '=', d.subscription_id)
        .executeTakeFirst();
      if (sub && target) await this.sendMissed(sub, target, d, task, tally, send, report);
      await Promise.all(waits);
    } catch (err) {
      await dropIfCancelled(this.deps, task, 'recovery cancelled');
      throw err;
    } finally {
      stopDropping();
      watcher.close();
    }
    report();
    task.log(
      'info',
      `resent ${tally.failedResent} failed deliveries and ${tally.missedSent} missed events: ` +
        `${tally.delivered} delivered, ${tally.failed} failed` +
        (tally.unreadable > 0
          ? `; ${tally.unreadable} failed deliveries of events no longer readable skipped`
          : ''),
    );
    return {
      failed_resent: tally.failedResent,
      unreadable_skipped: tally.unreadable,
      missed_sent: tally.missedSent,
      deliveries_delivered: tally.delivered,
      deliveries_failed: tally.failed,
    };
  }

  /**
   * Events of the window the subscription would receive (its patterns, filters and owner's reading rights) but
   * has no delivery of at all: emitted while it was paused or in error (and after it was created). Only the
   * events of its patterns' types that its owner may read are read (`missedSelector`), by the type indexes.
   */
  private async sendMissed(
    sub: SubscriptionRow,
    target: Target,
    d: RecoverDetails,
    task: TaskContext,
    tally: { missedSent: number; scanned: number },
    send: (rows: Resendable[]) => Promise<number>,
    report: () => void,
  ): Promise<void> {
    const selector = this.missedSelector(sub, target, d.since, d.until, d.up_to_sequence);
    const types = await this.selection.resolveTypes(selector.types);
    let after: WindowCursor | undefined;
    for (;;) {
      task.signal.throwIfAborted();
      const page = await this.selection.page(selector, after, PAGE, types);
      if (page.length === 0) break;
      after = page[page.length - 1]!;
      tally.scanned += page.length;
      const matching = page.filter((event) => {
        let data: unknown;
        const getData = () => {
          data ??= decodeEventData(event, this.deps.cipher);
          return data;
        };
        return mayRead(event, target.reader) && target.selector.matches(event, getData);
      });
      if (matching.length === 0) continue;
      const known = await this.deps.reads
        .selectFrom('event_outbox')
        .select('event_id')
        .distinct()
        .where('subscription_id', '=', sub.id)
        .where(
          'event_id',
          'in',
          matching.map((e) => e.event_id),
        )
        .execute();
      const has = new Set(known.map((r) => r.event_id));
      tally.missedSent += await send(matching.filter((e) => !has.has(e.event_id)));
      report();
    }
  }

  /** The events of the window that the subscription's patterns select and its owner may read. */
  private missedSelector(sub: SubscriptionRow, target: Target, since: string, until: string, upTo: number) {
    return {
      types: JSON.parse(sub.event_patterns) as string[],
      reader: target.reader,
      start: since > sub.created_at ? since : sub.created_at,
      end: until,
      upToSequence: upTo,
    };
  }

  /**
   * The events of the window (by their delivery's time) whose delivery to the subscription failed and that have
   * no delivery to it that succeeded or is still under way, in sequence order after `after`.
   */
  private async failedPage(
    subscriptionId: string,
    since: string,
    until: string,
    after: number,
    limit: number,
    upTo: number,
  ): Promise<FailedEvent[]> {
    return this.failedQuery(subscriptionId, since, until, upTo)
      .where('o.sequence', '>', after)
      .orderBy('o.sequence')
      .limit(limit)
      .execute();
  }

  private failedQuery(subscriptionId: string, since: string, until: string, upTo: number) {
    return this.deps.reads
      .selectFrom('event_outbox as o')
      .innerJoin('events as e', 'e.event_id', 'o.event_id')
      .select(['o.event_id', 'o.sequence', 'o.priority'])
      .select(['e.event_type', 'e.source', 'e.security_level', 'e.emitter_id'])
      .distinct()
      .where('o.subscription_id', '=', subscriptionId)
      .where('o.status', '=', 'failed')
      .where('o.created_at', '>=', since)
      .where('o.created_at', '<=', until)
      .where('o.sequence', '<=', upTo)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('event_outbox as n')
              .select('n.id')
              .whereRef('n.event_id', '=', 'o.event_id')
              .whereRef('n.subscription_id', '=', 'o.subscription_id')
              .where('n.status', 'in', ['delivered', 'pending', 'delivering']),
          ),
        ),
      );
  }

  /**
   * New outbox rows of these events for the subscription, with their `event_replayed` audit entries: one
   * transaction of up to PAGE events, synced off the server's thread on SQLite (bulkWrites).
   */
  private async queue(
    events: Resendable[],
    subscriptionId: string,
    replayId: string,
    actor: string,
    detail: Record<string, string>,
  ): Promise<string[]> {
    const now = nowIso();
    const rows = events.map((e) => replayOutboxRow(e, subscriptionId, replayId, now));
    await this.deps.writes.transaction(async (trx) => {
      await trx.insertInto('event_outbox').values(rows).execute();
      await trx
        .insertInto('event_audit')
        .values(
          rows.map((r) => ({
            id: newId('aud'),
            event_id: r.event_id,
            timestamp: now,
            action: 'event_replayed',
            actor,
            details: JSON.stringify({
              replay_id: replayId,
              subscription_ids: [subscriptionId],
              delivery_ids: [r.id],
              ...detail,
            }),
          })),
        )
        .execute();
    });
    // On disk before the resend is answered or the recovery reads its next page.
    await this.deps.writes.sync();
    return rows.map((r) => r.id);
  }
}

function assertActive(sub: SubscriptionRow): void {
  if (sub.status === 'active') return;
  throw new AppError(
    'SUBSCRIPTION_NOT_ACTIVE',
    `Subscription '${sub.id}' is ${sub.status}; enable it (PATCH with enabled: true) first`,
    { details: { subscription_id: sub.id, status: sub.status } },
  );
}

export const deliveryNotFound = (subscriptionId: string, deliveryId: string) =>
  new AppError('DELIVERY_NOT_FOUND', `Delivery '${deliveryId}' does not exist`, {
    details: { subscription_id: subscriptionId, delivery_id: deliveryId },
  });

const isoOf = (value: string, field: string): string => isoOrUndefined(value, field)!;
