import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformConfig } from '../config/config-schema.js';
import type { EventBus } from '../events/event-bus.js';
import type { EventCipher } from '../events/event-cipher.js';
import type { EventRow, EventStore } from '../events/event-store.js';
import type { EventsTable } from '../events/event-tables.js';
import { PatternIndex } from '../events/pattern-index.js';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import { HubEvent } from './hub-event.js';
import { groupSpecs, RemoteAudience } from './remote-audience.js';
import type { HubAccess, StreamConnection } from './stream-connection.js';

// A gap in the live feed is normally an event still on its way from another instance; after this long it
// is read from the store instead (every number below the highest committed one is already committed).
const GAP_WAIT_MS = 150;
// Also compare with the store now and then, in case the message of the last batch was lost.
const STORE_CHECK_MS = 2000;
const TICK_MS = 500;

/**
 * The stream hub: every committed event (from this instance or, through the bus, from others) passes here in
 * sequence order and is offered to the live SSE and WebSocket connections whose patterns can match it —
 * found through an index on the patterns' first segment, then checked with each connection's compiled matcher.
 */
export class StreamHub implements PlatformService, HubAccess {
  readonly name = 'stream_hub';
  readonly type = 'streaming';
  readonly dependencies = ['event_bus'] as const;
  private readonly connections = new Set<StreamConnection>();
  private readonly index = new PatternIndex<StreamConnection>();
  private readonly early = new Map<number, EventsTable>();
  private sequence = 0;
  private eventId: string | null = null;
  private ready = false;
  private gapTimer: NodeJS.Timeout | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private storeCheck: NodeJS.Timeout | undefined;
  private lastStoreSeen = 0;
  private unsubscribe: (() => void) | undefined;
  private counters = { events: 0, offers: 0, catchups: 0, overflows: 0, gapFills: 0, opened: 0 };

  constructor(
    private readonly bus: EventBus,
    private readonly store: EventStore,
    private readonly cipher: EventCipher,
    private readonly config: () => PlatformConfig,
    shared: SharedState,
    private readonly log: { warn: (obj: object, msg: string) => void },
  ) {
    this.clustered = shared.kind !== 'memory';
    // The other instances' clients count in `subscriber_count` too; one instance has no others.
    this.audience = this.clustered
      ? new RemoteAudience(
          shared,
          () => this.audienceSpecs(),
          (err) => this.log.warn({ err }, 'stream hub could not announce its clients'),
        )
      : undefined;
  }

  private readonly clustered: boolean;
  private readonly audience: RemoteAudience | undefined;

  get lastSequence(): number {
    return this.sequence;
  }

  get lastEventId(): string | null {
    return this.eventId;
  }

  get bufferSize(): number {
    return this.config().events.stream_buffer_size;
  }

  get maxLagMs(): number {
    return this.config().events.stream_max_lag_seconds * 1000;
  }

  get heartbeatMs(): number {
    return this.config().events.stream_heartbeat_seconds * 1000;
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  async start(): Promise<void> {
    // Listen first, then read the store's position: events committed in between are kept, not missed.
    this.unsubscribe = this.bus.onCommitted((rows) => this.ingest(rows));
    const last = await this.store.last();
    this.sequence = last?.sequence ?? 0;
    this.eventId = last?.event_id ?? null;
    this.lastStoreSeen = this.sequence;
    this.ready = true;
    this.drain();
    this.ticker = setInterval(() => this.tick(), TICK_MS);
    this.ticker.unref();
    this.audience?.start();
    if (this.clustered) {
      this.storeCheck = setInterval(() => {
        this.checkStore().catch((err) => this.log.warn({ err }, 'stream hub could not read the store'));
      }, STORE_CHECK_MS);
      this.storeCheck.unref();
    }
  }

  async stop(): Promise<void> {
    this.closeAll('The server is shutting down; reconnect with last_event_id');
    this.audience?.stop();
    this.unsubscribe?.();
    this.ready = false;
    for (const t of [this.ticker, this.storeCheck, this.gapTimer]) if (t) clearInterval(t);
    this.gapTimer = undefined;
  }

  /** Ends every stream, each with a final message carrying its resume point. */
  closeAll(message: string): void {
    for (const c of [...this.connections]) {
      c.end({ reason: 'shutdown', message, last_event_id: c.resumePoint().eventId });
    }
  }

  async health(): Promise<ServiceHealth> {
    const behind = [...this.connections].filter((c) => c.state === 'syncing').length;
    return {
      status: this.ready ? 'healthy' : 'unhealthy',
      checks: [
        { name: 'live_feed', status: this.ready ? 'pass' : 'fail', last_sequence: this.sequence },
        {
          name: 'consumers',
          status: behind > 0 ? 'warning' : 'pass',
          active_connections: this.connections.size,
          catching_up: behind,
        },
      ],
      details: { active_connections: this.connections.size, last_sequence: this.sequence },
    };
  }

  metrics(): Record<string, number> {
    let sse = 0;
    let queued = 0;
    let bufferedBytes = 0;
    let syncing = 0;
    for (const c of this.connections) {
      if (c.sink.kind === 'sse') sse += 1;
      if (c.state === 'syncing') syncing += 1;
      queued += c.queued;
      bufferedBytes += c.sink.bufferedBytes();
    }
    return {
      active_connections: this.connections.size,
      sse_connections: sse,
      websocket_connections: this.connections.size - sse,
      catching_up_connections: syncing,
      queued_events: queued,
      buffered_bytes: bufferedBytes,
      events_received: this.counters.events,
      events_offered: this.counters.offers,
      connections_opened: this.counters.opened,
      catch_ups: this.counters.catchups,
      overflow_closes: this.counters.overflows,
      gap_fills: this.counters.gapFills,
      last_sequence: this.sequence,
    };
  }

  settings(): Record<string, unknown> {
    const e = this.config().events;
    return {
      stream_buffer_size: e.stream_buffer_size,
      stream_max_lag_seconds: e.stream_max_lag_seconds,
      stream_heartbeat_seconds: e.stream_heartbeat_seconds,
    };
  }

  /** Live stream clients an event would reach now (part of its `subscriber_count`). */
  countMatching(
    event: Pick<EventsTable, 'event_type' | 'source' | 'priority' | 'security_level' | 'emitter_id'>,
    data: () => unknown,
  ): number {
    let n = this.audience?.count(event, data) ?? 0;
    for (const c of this.index.candidates(event.event_type)) if (c.wouldAccept(event, data)) n += 1;
    return n;
  }

  attach(connection: StreamConnection): void {
    if (!this.connections.has(connection)) {
      this.connections.add(connection);
      this.counters.opened += 1;
    }
    this.index.add(connection, connection.patterns);
    this.audience?.changed();
  }

  detach(connection: StreamConnection): void {
    this.connections.delete(connection);
    this.index.remove(connection);
    this.audience?.changed();
  }

  /** What this instance's clients select, identical ones counted together (for the other instances). */
  private audienceSpecs() {
    const specs = [];
    for (const c of this.connections) {
      if (c.state === 'idle' || c.patterns.length === 0) continue;
      specs.push({
        patterns: c.patterns,
        source: c.filters.source,
        priority: c.filters.priority,
        reader: { userId: c.reader.userId, isAdmin: c.reader.isAdmin },
      });
    }
    return groupSpecs(specs);
  }

  fellBehind(): void {
    this.counters.catchups += 1;
  }

  wrap(row: EventRow): HubEvent {
    return new HubEvent(row, this.cipher);
  }

  range(after: number, limit: number): Promise<EventRow[]> {
    return this.store.range(after, limit);
  }

  /** Takes committed events in any order; offers them on in sequence order, each once. */
  ingest(rows: readonly EventsTable[]): void {
    for (const row of rows) {
      const seq = Number(row.sequence);
      if (!this.ready || seq > this.sequence) this.early.set(seq, row);
    }
    this.drain();
  }

  private drain(): void {
    if (!this.ready) return;
    for (const seq of this.early.keys()) if (seq <= this.sequence) this.early.delete(seq);
    let next = this.early.get(this.sequence + 1);
    while (next) {
      this.early.delete(this.sequence + 1);
      this.dispatch(next);
      next = this.early.get(this.sequence + 1);
    }
    if (this.early.size > 0 && !this.gapTimer) {
      this.gapTimer = setTimeout(() => {
        this.gapTimer = undefined;
        this.fillGap().catch((err) => this.log.warn({ err }, 'stream hub could not fill a gap'));
      }, GAP_WAIT_MS);
      this.gapTimer.unref();
    }
  }

  private async fillGap(): Promise<void> {
    if (this.early.size === 0) return;
    const upTo = Math.min(...this.early.keys()) - 1;
    if (upTo <= this.sequence) return this.drain();
    this.counters.gapFills += 1;
    const rows = await this.store.range(this.sequence, upTo - this.sequence);
    this.ingest(rows);
  }

  private async checkStore(): Promise<void> {
    const last = await this.store.last();
    if (!last) return;
    // Behind the store on two checks in a row: the live message of those events did not arrive.
    if (last.sequence > this.sequence && this.lastStoreSeen > this.sequence) {
      this.counters.gapFills += 1;
      this.ingest(await this.store.range(this.sequence, Math.min(last.sequence - this.sequence, 1000)));
    }
    this.lastStoreSeen = last.sequence;
  }

  private dispatch(row: EventsTable): void {
    this.sequence = Number(row.sequence);
    this.eventId = row.event_id;
    this.counters.events += 1;
    const candidates = this.index.candidates(row.event_type);
    if (candidates.size === 0) return;
    const event = new HubEvent(row, this.cipher);
    for (const c of [...candidates]) {
      this.counters.offers += 1;
      try {
        c.offer(event);
      } catch (err) {
        this.log.warn({ err }, 'a stream connection failed');
        c.end();
      }
    }
  }

  private tick(): void {
    const now = Date.now();
    for (const c of [...this.connections]) {
      if (c.tick(now) === 'overflow') this.counters.overflows += 1;
    }
  }
}
