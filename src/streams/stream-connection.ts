import { type EventReader, mayRead, readerKey } from '../events/event-data.js';
import { type CompiledSelector, compileSelector } from '../events/event-filters.js';
import type { EventRow } from '../events/event-store.js';
import { nowIso } from '../kernel/new-id.js';
import type { HubBatch } from './hub-batch.js';
import type { HubEvent } from './hub-event.js';
import { CredentialCheck, type StreamCredentials } from './stream-credentials.js';
import type { StreamSink } from './stream-sink.js';

/** An event's place in the sequence; `eventId` null before the first event. */
export interface Position {
  sequence: number;
  eventId: string | null;
}

/** What a connection needs from its hub. */
export interface HubAccess {
  readonly lastSequence: number;
  /** The latest event the hub has offered that this reader may read (a resume point it may be given). */
  lastVisibleTo(reader: Reader): Position;
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

/** Whose rights decide what a stream may see (`mayRead`). */
export type Reader = EventReader;

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
  private currentReader: Reader;
  private selector: CompiledSelector | undefined;
  /** Equal for connections that select the same events: the hub gives them one shared batch. */
  audienceKey = '';
  private mode: 'idle' | 'live' | 'syncing' = 'idle';
  /** The last sequence handled in order (written, or skipped as not matching while syncing). */
  private position = 0;
  /**
   * The latest event up to `position` that this reader may read: what it is told to resume from. Never an
   * event hidden from it (a confidential event of someone else, a platform event it lacks the permission of),
   * which it could not resume from.
   */
  private mark: Position = { sequence: 0, eventId: null };
  /** The highest sequence whose id the client has been sent, by an event or a checkpoint. */
  private announced = 0;
  private queue: HubEvent[] = [];
  private held: HubEvent[] = [];
  private heldFrom = 0;
  private heldOverflow = false;
  private behindSince: number | undefined;
  private lastPingAt = Date.now();
  private lastCheckAt = Date.now();
  private readonly check: CredentialCheck | undefined;
  private draining = false;
  private generation = 0;
  private ended = false;
  delivered = 0;

  constructor(
    private readonly hub: HubAccess,
    readonly sink: StreamSink,
    reader: Reader,
    credentials?: StreamCredentials | undefined,
  ) {
    this.currentReader = reader;
    hub.attach(this);
    // Once the credentials no longer hold, the stream ends; changed rights (an admin demoted) apply from the
    // next event on.
    this.check =
      credentials &&
      new CredentialCheck(credentials, (now) => {
        if (now) this.refreshReader(now);
        else {
          this.end({
            reason: 'credentials_revoked',
            message: 'The credentials of this stream are no longer valid; sign in again to resume',
            last_event_id: this.resumePoint().eventId,
          });
        }
      });
  }

  /** Whose rights decide what the client may see: as they were when the stream opened, or last re-checked. */
  get reader(): Reader {
    return this.currentReader;
  }

  get state(): 'idle' | 'live' | 'syncing' {
    return this.mode;
  }

  get queued(): number {
    return this.queue.length + this.held.length;
  }

  /** Sets what the client receives and starts it: live from now, or from after `from` (a resume). */
  select(patterns: string[], filters: StreamFilters, from?: Position | undefined): void {
    // A message handled after the server ended the stream (a revocation) must not bring it back.
    if (this.ended) return;
    this.patterns = patterns;
    this.filters = filters;
    this.selector = compileSelector({ patterns, source: filters.source, priority: filters.priority });
    this.audienceKey = this.keyOf();
    this.hub.attach(this);
    // Events still waiting for the transport were chosen by the previous selection: those it no longer selects
    // are dropped, so nothing arrives after the `unsubscribed` or `subscribed` answer that it did not ask for.
    if (this.queue.length > 0) this.queue = this.queue.filter((e) => this.accepts(e));
    if (from) {
      this.position = from.sequence;
      this.mark = { sequence: from.sequence, eventId: from.eventId };
      this.announced = from.sequence;
      this.behindSince = Date.now();
      this.beginSync();
    } else if (this.mode === 'idle') {
      this.position = this.hub.lastSequence;
      this.mark = this.hub.lastVisibleTo(this.reader);
      this.announced = this.position;
      this.mode = 'live';
    }
  }

  /** Stops receiving events (the WebSocket `unsubscribe` of every pattern); the connection stays open. */
  deselect(): void {
    if (this.ended) return;
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

  /** Periodic work: the lag limit, heartbeats, checkpoints and re-checking the credentials. */
  tick(now: number): 'overflow' | undefined {
    if (this.ended) return undefined;
    if (now - this.lastCheckAt >= this.hub.heartbeatMs) {
      this.lastCheckAt = now;
      this.check?.run();
    }
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
    this.check?.stop();
    this.hub.detach(this);
    this.queue = [];
    this.held = [];
    this.sink.end(final);
  }

  /** Where the client would resume from if it reconnected now: always an event it may read. */
  resumePoint(): Position {
    if (this.mode === 'live' && this.queue.length === 0) {
      // Everything after the last written event up to the hub's position did not match this client: the
      // latest of those events it may read is as good a resume point, and a more recent one.
      const latest = this.hub.lastVisibleTo(this.reader);
      if (latest.sequence > this.mark.sequence) return latest;
    }
    return this.mark;
  }

  /** Whether this client would receive an event with these facts. */
  wouldAccept(
    event: Pick<EventRow, 'event_type' | 'source' | 'priority' | 'security_level' | 'emitter_id'>,
    data: () => unknown,
  ): boolean {
    if (this.mode === 'idle' || !this.selector || !mayRead(event, this.currentReader)) return false;
    return this.selector.matches(event, data);
  }

  accepts(event: HubEvent): boolean {
    return this.wouldAccept(event.row, () => event.data());
  }

  private keyOf(): string {
    return JSON.stringify([this.patterns, this.filters, readerKey(this.currentReader)]);
  }

  private refreshReader(reader: Reader): void {
    if (readerKey(reader) === readerKey(this.currentReader)) return;
    this.currentReader = reader;
    // Events already waiting were chosen with the old rights: those it may no longer read are dropped.
    this.queue = this.queue.filter((e) => mayRead(e.row, reader));
    this.held = this.held.filter((e) => mayRead(e.row, reader));
    if (this.selector) {
      this.audienceKey = this.keyOf();
      this.hub.attach(this);
    }
  }

  private write(event: HubEvent): void {
    this.wrote(event, 1, this.sink.send(event));
  }

  /** After `count` events up to `last` went to the sink: the position moves on; a full sink is waited for. */
  private wrote(last: HubEvent, count: number, flowing: boolean): void {
    this.position = last.sequence;
    this.mark = { sequence: last.sequence, eventId: last.id };
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
    // What follows comes from the store, from `position` on: events still queued for the live feed would be
    // written after it (again, and out of sequence order) once the connection is live again.
    this.queue = [];
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
      const now = nowIso();
      for (const row of rows) {
        if (this.sink.congested()) {
          await this.sink.waitDrain();
          if (!current()) return;
        }
        const event = this.hub.wrap(row);
        // An expired event is gone, as for the API (410, left out of lists): it is skipped, not sent.
        const gone = row.expires_at !== null && row.expires_at <= now;
        if (!gone && this.accepts(event)) {
          this.sink.send(event);
          this.delivered += 1;
          this.announced = event.sequence;
        }
        this.position = event.sequence;
        if (!gone && mayRead(row, this.currentReader))
          this.mark = { sequence: event.sequence, eventId: event.id };
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
