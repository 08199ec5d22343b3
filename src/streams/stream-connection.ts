import { mayRead } from '../events/event-data.js';
import { type CompiledSelector, compileSelector } from '../events/event-filters.js';
import type { EventRow } from '../events/event-store.js';
import type { HubBatch } from './hub-batch.js';
import type { HubEvent } from './hub-event.js';
import type { StreamSink } from './stream-sink.js';

/** What a connection needs from its hub. */
export interface HubAccess {
  readonly lastSequence: number;
  readonly lastEventId: string | null;
  readonly bufferSize: number;
  readonly maxLagMs: number;
  readonly heartbeatMs: number;
  wrap(row: EventRow): HubEvent;
  range(after: number, limit: number): Promise<EventRow[]>;
  attach(connection: StreamConnection): void;
  detach(connection: StreamConnection): void;
  fellBehind(): void;
}

export interface StreamFilters {
  source?: string[] | undefined;
  priority?: { min?: number | undefined; max?: number | undefined } | undefined;
}

export interface Reader {
  userId: string;
  isAdmin: boolean;
}

const PAGE = 200;

/**
 * One live SSE or WebSocket client. It is `live` while its transport keeps up: the hub offers it events in
 * sequence order and it writes them at once, queueing at most `bufferSize` while the transport drains.
 * It is `syncing` when resuming from an event id, or when it fell behind: it reads from the store by sequence
 * (awaiting the transport between writes, so memory stays bounded) and holds the live events meanwhile;
 * once the store is exhausted past the point where holding began, it writes the held events it has not sent
 * and turns live again — in order, with no gap and no duplicate. A client that stays behind longer than
 * `maxLagMs` is ended with an `overflow` message; it may resume from its last event id.
 */
export class StreamConnection {
  patterns: string[] = [];
  filters: StreamFilters = {};
  private selector: CompiledSelector | undefined;
  /** Equal for connections that select the same events: the hub gives them one shared batch. */
  audienceKey = '';
  private mode: 'idle' | 'live' | 'syncing' = 'idle';
  /** The last sequence handled in order (written, or skipped as not matching while syncing). */
  private position = 0;
  private positionId: string | null = null;
  /** The highest sequence whose id the client has been sent, by an event or a checkpoint. */
  private announced = 0;
  private queue: HubEvent[] = [];
  private held: HubEvent[] = [];
  private heldFrom = 0;
  private heldOverflow = false;
  private behindSince: number | undefined;
  private lastPingAt = Date.now();
  private draining = false;
  private generation = 0;
  private ended = false;
  delivered = 0;

  constructor(
    private readonly hub: HubAccess,
    readonly sink: StreamSink,
    readonly reader: Reader,
  ) {
    hub.attach(this);
  }

  get state(): 'idle' | 'live' | 'syncing' {
    return this.mode;
  }

  get queued(): number {
    return this.queue.length + this.held.length;
  }

  /** Sets what the client receives and starts it: live from now, or from after `from` (a resume). */
  select(
    patterns: string[],
    filters: StreamFilters,
    from?: { sequence: number; eventId: string } | undefined,
  ): void {
    this.patterns = patterns;
    this.filters = filters;
    this.selector = compileSelector({ patterns, source: filters.source, priority: filters.priority });
    this.audienceKey = JSON.stringify([patterns, filters, this.reader.userId, this.reader.isAdmin]);
    this.hub.attach(this);
    if (from) {
      this.position = from.sequence;
      this.positionId = from.eventId;
      this.announced = from.sequence;
      this.behindSince = Date.now();
      this.beginSync();
    } else if (this.mode === 'idle') {
      this.position = this.hub.lastSequence;
      this.positionId = this.hub.lastEventId;
      this.announced = this.position;
      this.mode = 'live';
    }
  }

  /** Stops receiving events (the WebSocket `unsubscribe` of every pattern); the connection stays open. */
  deselect(): void {
    this.patterns = [];
    this.hub.attach(this);
    this.selector = undefined;
    this.audienceKey = '';
    this.generation += 1;
    this.mode = 'idle';
    this.queue = [];
    this.held = [];
    this.behindSince = undefined;
  }

  /** Called by the hub for each committed event that may match, in sequence order. */
  offer(event: HubEvent): void {
    if (this.ended || !this.accepts(event)) return;
    if (this.mode === 'syncing') {
      if (this.heldOverflow) return;
      if (this.held.length >= this.hub.bufferSize) {
        this.heldOverflow = true;
        this.held = [];
      } else this.held.push(event);
      return;
    }
    if (this.mode !== 'live' || event.sequence <= this.position) return;
    if (this.queue.length > 0 || this.sink.congested()) {
      this.queue.push(event);
      // Waiting events count as being behind: a client that never drains is closed after the lag limit.
      this.behindSince ??= Date.now();
      if (this.queue.length > this.hub.bufferSize) this.fallBehind();
      else this.awaitDrain();
      return;
    }
    this.write(event);
  }

  /**
   * Called by the hub with the events of a flush this connection selects (`accepts` was checked by the hub,
   * once for every connection of the same `audienceKey`). A live client that keeps up gets them in one write
   * of the batch's shared bytes; any other case takes them one by one through `offer`.
   */
  offerBatch(batch: HubBatch): void {
    if (this.ended || batch.events.length === 0) return;
    const first = batch.events[0]!;
    // A client that changed its selection since the flush began checks each event against its own.
    if (
      batch.audienceKey !== this.audienceKey ||
      this.mode !== 'live' ||
      first.sequence <= this.position ||
      this.queue.length > 0 ||
      this.sink.congested()
    ) {
      for (const event of batch.events) this.offer(event);
      return;
    }
    this.wrote(batch.last, batch.events.length, this.sink.sendBatch(batch));
  }

  /** Periodic work: the lag limit, heartbeats and checkpoints. */
  tick(now: number): 'overflow' | undefined {
    if (this.ended) return undefined;
    if (this.behindSince !== undefined && now - this.behindSince > this.hub.maxLagMs) {
      this.end({
        reason: 'overflow',
        message: 'The client fell too far behind the live stream; resume from last_event_id',
        last_event_id: this.resumePoint().eventId,
      });
      return 'overflow';
    }
    if (now - this.lastPingAt < this.hub.heartbeatMs || this.sink.congested()) return undefined;
    this.lastPingAt = now;
    const resume = this.resumePoint();
    if (resume.eventId && resume.sequence > this.announced) {
      this.sink.checkpoint(resume.eventId);
      this.announced = resume.sequence;
    }
    this.sink.ping();
    return undefined;
  }

  end(final?: Parameters<StreamSink['end']>[0]): void {
    if (this.ended) return;
    this.ended = true;
    this.generation += 1;
    this.hub.detach(this);
    this.queue = [];
    this.held = [];
    this.sink.end(final);
  }

  /** Where the client would resume from if it reconnected now. */
  resumePoint(): { sequence: number; eventId: string | null } {
    if (this.mode === 'live' && this.queue.length === 0 && this.hub.lastSequence > this.position) {
      // Everything after the last written event up to the hub's position did not match this client.
      return { sequence: this.hub.lastSequence, eventId: this.hub.lastEventId };
    }
    return { sequence: this.position, eventId: this.positionId };
  }

  /** Whether this client would receive an event with these facts. */
  wouldAccept(
    event: Pick<EventRow, 'event_type' | 'source' | 'priority' | 'security_level' | 'emitter_id'>,
    data: () => unknown,
  ): boolean {
    if (this.mode === 'idle' || !this.selector || !mayRead(event, this.reader)) return false;
    return this.selector.matches(event, data);
  }

  accepts(event: HubEvent): boolean {
    return this.wouldAccept(event.row, () => event.data());
  }

  private write(event: HubEvent): void {
    this.wrote(event, 1, this.sink.send(event));
  }

  /** After `count` events up to `last` went to the sink: the position moves on; a full sink is waited for. */
  private wrote(last: HubEvent, count: number, flowing: boolean): void {
    this.position = last.sequence;
    this.positionId = last.id;
    this.announced = last.sequence;
    this.delivered += count;
    if (!flowing) this.awaitDrain();
  }

  private awaitDrain(): void {
    if (this.draining) return;
    this.draining = true;
    const generation = this.generation;
    this.sink
      .waitDrain()
      .then(() => {
        this.draining = false;
        if (this.ended || generation !== this.generation || this.mode !== 'live') return;
        while (this.queue.length > 0 && !this.sink.congested()) this.write(this.queue.shift()!);
        if (this.queue.length === 0) this.behindSince = undefined;
        if (this.queue.length > 0 || this.sink.congested()) this.awaitDrain();
      })
      .catch(() => {
        this.draining = false;
      });
  }

  private fallBehind(): void {
    this.queue = [];
    this.behindSince ??= Date.now();
    this.hub.fellBehind();
    this.beginSync();
  }

  private beginSync(): void {
    this.mode = 'syncing';
    this.generation += 1;
    this.draining = false;
    this.holdFromNow();
    const generation = this.generation;
    this.sync(generation).catch(() => {
      if (generation === this.generation) this.end();
    });
  }

  private holdFromNow(): void {
    this.held = [];
    this.heldOverflow = false;
    this.heldFrom = this.hub.lastSequence;
  }

  private async sync(generation: number): Promise<void> {
    const current = () => !this.ended && generation === this.generation;
    for (;;) {
      const rows = await this.hub.range(this.position, PAGE);
      if (!current()) return;
      for (const row of rows) {
        if (this.sink.congested()) {
          await this.sink.waitDrain();
          if (!current()) return;
        }
        const event = this.hub.wrap(row);
        if (this.accepts(event)) {
          this.sink.send(event);
          this.delivered += 1;
          this.announced = event.sequence;
        }
        this.position = event.sequence;
        this.positionId = event.id;
      }
      if (rows.length === PAGE) continue;
      if (this.sink.congested()) {
        await this.sink.waitDrain();
        if (!current()) return;
        continue;
      }
      if (!this.heldOverflow && this.position >= this.heldFrom) {
        // The store covered everything up to where holding began; the held events cover the rest.
        const held = this.held;
        this.held = [];
        this.mode = 'live';
        this.behindSince = undefined;
        for (const event of held) this.offer(event);
        return;
      }
      this.holdFromNow();
    }
  }
}
