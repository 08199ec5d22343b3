import { performance } from 'node:perf_hooks';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import type { EventStore } from './event-store.js';

/** Reports the event store: where the sequence stands and how many deliveries wait in the outbox. */
export class EventStoreService implements PlatformService {
  readonly name = 'event_store';
  readonly type = 'storage';
  readonly dependencies = ['database'] as const;
  private lastSequence = 0;
  private pendingOutbox = 0;
  private lastQueryMs = 0;

  constructor(private readonly store: EventStore) {}

  /** Keeps the reported position current as batches commit (fed by the bus). */
  committed(sequence: number): void {
    if (sequence > this.lastSequence) this.lastSequence = sequence;
  }

  async start(): Promise<void> {
    await this.measure();
  }

  async stop(): Promise<void> {}

  async health(): Promise<ServiceHealth> {
    await this.measure();
    const slow = this.lastQueryMs > 250;
    return {
      status: slow ? 'warning' : 'healthy',
      checks: [
        { name: 'read', status: slow ? 'warning' : 'pass', response_time_ms: round(this.lastQueryMs) },
        { name: 'outbox', status: 'pass', pending_deliveries: this.pendingOutbox },
      ],
      details: { last_sequence: this.lastSequence, pending_deliveries: this.pendingOutbox },
    };
  }

  metrics(): Record<string, number> {
    return {
      last_sequence: this.lastSequence,
      pending_deliveries: this.pendingOutbox,
      response_time_ms: round(this.lastQueryMs),
    };
  }

  private async measure(): Promise<void> {
    const start = performance.now();
    const [last, pending] = await Promise.all([this.store.last(), this.store.pendingOutbox()]);
    this.lastQueryMs = performance.now() - start;
    this.committed(last?.sequence ?? 0);
    this.pendingOutbox = pending;
  }
}

const round = (n: number) => Math.round(n * 100) / 100;
