import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import type { Database, Dialect } from '../storage/database.js';
import type { Tables } from '../storage/tables.js';
import type { EventsTable } from './event-tables.js';
import { type EventDraft, EventWriter } from './event-writer.js';

/** Committed events travel between instances on this channel, one message per committed batch. */
export const LIVE_CHANNEL = 'events.live';

interface LiveMessage {
  origin: string;
  rows: EventsTable[];
  /** Outbox rows the batch wrote (absent from older instances: then assumed some). */
  outboxRows?: number;
}

/** What consumers learn about a committed batch besides its events. */
export interface CommittedBatch {
  /** Durable deliveries the batch wrote to the outbox: none means no webhook or plugin work is waiting. */
  outboxRows: number;
}

type Consumer = (rows: EventsTable[], batch: CommittedBatch) => void;

/**
 * The event bus: writes emitted events (group commit, see EventWriter) and, after each commit, hands them to
 * the live consumers of this instance and — in cluster mode — of every other instance through Redis.
 */
export class EventBus implements PlatformService {
  readonly name = 'event_bus';
  readonly type = 'messaging';
  readonly dependencies = ['event_store', 'cluster_state'] as const;
  private readonly origin = randomUUID();
  private readonly writer: EventWriter;
  private readonly consumers = new Set<Consumer>();
  private unsubscribe: (() => void) | undefined;
  private receivedRemote = 0;
  private publishFailures = 0;

  constructor(
    db: Kysely<Tables>,
    dialect: Dialect,
    private readonly shared: SharedState,
    private readonly log: { warn: (obj: object, msg: string) => void },
    durableBatch?: Database['durableBatch'],
  ) {
    this.writer = new EventWriter(
      db,
      dialect,
      (rows, outboxRows) => this.committed(rows, outboxRows),
      durableBatch,
    );
  }

  /** Writes an event; resolves with the stored row once its transaction has committed. */
  write(draft: EventDraft): Promise<EventsTable> {
    return this.writer.write(draft);
  }

  /** Every committed event, local or remote, in batches. Returns an unsubscribe function. */
  onCommitted(consumer: Consumer): () => void {
    this.consumers.add(consumer);
    return () => this.consumers.delete(consumer);
  }

  get queueSize(): number {
    return this.writer.queueSize;
  }

  async start(): Promise<void> {
    this.writer.open();
    if (this.shared.kind === 'memory') return;
    this.unsubscribe = this.shared.subscribe(LIVE_CHANNEL, (message) => {
      const m = message as LiveMessage;
      if (m.origin === this.origin || !Array.isArray(m.rows)) return;
      this.receivedRemote += m.rows.length;
      this.deliver(m.rows, { outboxRows: typeof m.outboxRows === 'number' ? m.outboxRows : 1 });
    });
  }

  async stop(): Promise<void> {
    await this.writer.close();
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  async health(): Promise<ServiceHealth> {
    const failing = this.writer.failedBatches > 0 && this.writer.committedBatches === 0;
    return {
      status: failing ? 'unhealthy' : this.publishFailures > 0 ? 'warning' : 'healthy',
      checks: [
        { name: 'writer', status: failing ? 'fail' : 'pass', queue_size: this.writer.queueSize },
        {
          name: 'fan_out',
          status: this.publishFailures > 0 ? 'warning' : 'pass',
          publish_failures: this.publishFailures,
        },
      ],
      details: { queue_size: this.writer.queueSize, processed_events: this.writer.committedEvents },
    };
  }

  metrics(): Record<string, number> {
    const w = this.writer;
    return {
      queue_size: w.queueSize,
      processed_events: w.committedEvents,
      received_remote_events: this.receivedRemote,
      committed_batches: w.committedBatches,
      failed_batches: w.failedBatches,
      average_batch_size: w.committedBatches ? round(w.committedEvents / w.committedBatches) : 0,
      average_commit_ms: w.committedBatches ? round(w.totalCommitMs / w.committedBatches) : 0,
      publish_failures: this.publishFailures,
    };
  }

  settings(): Record<string, unknown> {
    return { fan_out: this.shared.kind === 'memory' ? 'in-process' : 'redis' };
  }

  private async committed(rows: EventsTable[], outboxRows: number): Promise<void> {
    this.deliver(rows, { outboxRows });
    if (this.shared.kind === 'memory') return;
    // Not waited for: the emits of this batch are answered now, also while Redis reconnects.
    this.shared
      .publish(LIVE_CHANNEL, { origin: this.origin, rows, outboxRows } satisfies LiveMessage)
      .catch((err: unknown) => {
        // Other instances fill the gap from the store when the next batch arrives (see StreamHub).
        this.publishFailures += 1;
        this.log.warn({ err }, 'could not publish committed events to other instances');
      });
  }

  private deliver(rows: EventsTable[], batch: CommittedBatch): void {
    for (const consumer of this.consumers) {
      try {
        consumer(rows, batch);
      } catch (err) {
        this.log.warn({ err }, 'an event consumer failed');
      }
    }
  }
}

const round = (n: number) => Math.round(n * 100) / 100;
