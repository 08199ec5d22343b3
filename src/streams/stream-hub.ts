import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformConfig } from '../config/config-schema.js';
import type { EventBus } from '../events/event-bus.js';
import type { EventCipher } from '../events/event-cipher.js';
import { mayRead, openToAll, type ReadFacts } from '../events/event-data.js';
import type { EventRow, EventStore } from '../events/event-store.js';
import type { EventsTable } from '../events/event-tables.js';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import { LatencyHistogram } from '../metrics/latency-histogram.js';
import { type AudienceGroup, AudienceGroups } from './audience-groups.js';
import { HubBatch } from './hub-batch.js';
import { HubEvent } from './hub-event.js';
import { type Delivery, HubFlush } from './hub-flush.js';
import { groupSpecs, RemoteAudience } from './remote-audience.js';
import type { HubAccess, Position, Reader, StreamConnection } from './stream-connection.js';

// A gap in the live feed is normally an event still on its way from another instance; after this long it
// is read from the store instead (every number below the highest committed one is already committed).
const GAP_WAIT_MS = 150;
/** Events read from the store per statement while filling a gap. */
const GAP_PAGE = 1000;
// Also compare with the store now and then, in case the message of the last batch was lost.
const STORE_CHECK_MS = 2000;
const TICK_MS = 500;
// A shared write holds at most this many events or bytes (one event may be larger): a client's buffer grows
// past its high-water mark by at most one such write.
const BATCH_EVENTS = 1024;
const BATCH_BYTES = 64 * 1024;
// Connections written to per turn of the event loop during a flush (about 2 ms of writes).
const WRITES_PER_TURN = 256;

/** The length of an event's WebSocket message, or 0 when it cannot be built (its write fails later, alone). */
function frameSize(event: HubEvent): number {
  try {
    return event.wsFrame().length;
  } catch {
    return 0;
  }
}

/** A position in the live feed, with what a resume point there may name for whom. */
interface Mark extends Position {
  /** Who may read the event at this position (undefined when not known: then only `open` is handed out). */
  readonly access: ReadFacts | undefined;
  /** The latest event at or before it that every reader may read (`openToAll`). */
  readonly open: Position;
}

const START: Mark = { sequence: 0, eventId: null, access: undefined, open: { sequence: 0, eventId: null } };

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
  private readonly groups = new AudienceGroups();
  private readonly early = new Map<number, EventsTable>();
  /** The last event taken in order; `offered` trails it by the events waiting for the next flush. */
  private sequence = 0;
  private taken: Mark = START;
  private offered: Mark = START;
  private pending: HubEvent[] = [];
  private flushTimer: NodeJS.Immediate | NodeJS.Timeout | undefined;
  /** The flush under way, a slice of connections per turn of the event loop. */
  private current: { job: HubFlush; events: HubEvent[]; upTo: Mark; spent: number } | undefined;
  /** From the hub taking an event to the end of the flush that wrote it to every client selecting it. */
  private readonly offerDelay = new LatencyHistogram();
  /** A flush that took d ms is followed by the next no sooner than d ms after it (see flush()). */
  private nextFlushAt = 0;
  private ready = false;
  private gapTimer: NodeJS.Timeout | undefined;
  private ticker: NodeJS.Timeout | undefined;
  private storeCheck: NodeJS.Timeout | undefined;
  private lastStoreSeen = 0;
  private unsubscribe: (() => void) | undefined;
  private counters = {
    events: 0,
    offers: 0,
    catchups: 0,
    overflows: 0,
    gapFills: 0,
    opened: 0,
    flushes: 0,
    flushedEvents: 0,
    flushMs: 0,
  };

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

  /** The position of the events connections have been offered (what a new live client starts after). */
  get lastSequence(): number {
    return this.offered.sequence;
  }

  /**
   * The latest offered event this reader may read: the last offered one if it may, else the last one everyone
   * may (a checkpoint or resume point never names, or reveals, an event hidden from the reader).
   */
  lastVisibleTo(reader: Reader): Position {
    const at = this.offered;
    if (at.access && mayRead(at.access, reader)) return { sequence: at.sequence, eventId: at.eventId };
    return at.open;
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
    // The newest event's row says who may read it; an older one everyone may read is not looked for.
    const [row] = last ? await this.store.range(last.sequence - 1, 1) : [];
    this.taken =
      row && Number(row.sequence) === this.sequence
        ? markOf(row, START)
        : { ...START, sequence: this.sequence, eventId: last?.event_id ?? null };
    this.offered = this.taken;
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
    this.cancelFlush();
    this.current = undefined;
    this.pending = [];
  }

  /** Ends every stream, each with a final message carrying its resume point. */
  closeAll(message: string): void {
    // Events waiting for a flush go out first; the final messages' resume points follow them.
    this.finishFlushes();
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
      // Offers go out in flushes (see flush()): how many, how many events each, how long each wrote for.
      flushes: this.counters.flushes,
      average_events_per_flush: this.counters.flushes
        ? this.counters.flushedEvents / this.counters.flushes
        : 0,
      average_flush_ms: this.counters.flushes ? this.counters.flushMs / this.counters.flushes : 0,
      offer_delay_p50_ms: this.offerDelay.quantile(0.5),
      offer_delay_p99_ms: this.offerDelay.quantile(0.99),
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
    for (const g of this.groups.candidates(event.event_type)) {
      if (g.sample.wouldAccept(event, data)) n += g.members.size;
    }
    return n;
  }

  attach(connection: StreamConnection): void {
    if (!this.connections.has(connection)) {
      this.connections.add(connection);
      this.counters.opened += 1;
    }
    this.groups.place(connection);
    this.audience?.changed();
  }

  detach(connection: StreamConnection): void {
    this.connections.delete(connection);
    this.groups.remove(connection);
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
        reader: c.reader,
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
    // Read a page at a time: a gap of many events (an instance that missed a burst from the others) read in
    // one statement would hold the event loop for as long as the store takes to read them all.
    while (this.sequence < upTo) {
      const before = this.sequence;
      this.ingest(await this.store.range(this.sequence, Math.min(GAP_PAGE, upTo - this.sequence)));
      if (this.sequence === before) break;
    }
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
    this.taken = markOf(row, this.taken);
    this.counters.events += 1;
    if (this.groups.candidates(row.event_type).size > 0) this.pending.push(new HubEvent(row, this.cipher));
    if (this.current) return;
    // With nothing waiting for a flush, connections are up to date with an event nobody selects.
    if (this.pending.length === 0) this.offered = this.taken;
    else this.scheduleFlush();
  }

  /**
   * Offers go out in flushes: every event taken since the last one, to each connection at once, a slice of
   * connections per turn of the event loop. A flush starts on the next turn; after one whose slices took d ms
   * in all (thousands of clients), the next waits until d ms after it ended, so the hub spends at most about
   * half its time writing and a busy stream sends its clients several events per write instead of one each.
   */
  private scheduleFlush(): void {
    if (this.flushTimer) return;
    const wait = this.nextFlushAt - performance.now();
    this.flushTimer = wait >= 1 ? setTimeout(() => this.flush(), wait) : setImmediate(() => this.flush());
  }

  /** Writes whatever is waiting, at once (before the final messages at shutdown). */
  private finishFlushes(): void {
    this.cancelFlush();
    if (this.current) this.step(Number.POSITIVE_INFINITY);
    this.flush(Number.POSITIVE_INFINITY);
  }

  private cancelFlush(): void {
    if (!this.flushTimer) return;
    clearTimeout(this.flushTimer as NodeJS.Timeout);
    clearImmediate(this.flushTimer as NodeJS.Immediate);
    this.flushTimer = undefined;
  }

  private flush(slice = WRITES_PER_TURN): void {
    this.flushTimer = undefined;
    if (this.current || this.pending.length === 0) return;
    const events = this.pending;
    this.pending = [];
    const job = new HubFlush(this.plan(events), (c, err) => {
      this.log.warn({ err }, 'a stream connection failed');
      c.end();
    });
    // Every event taken so far is in this flush or selected by nobody: once written, that is the position.
    this.current = { job, events, upTo: this.taken, spent: 0 };
    this.counters.flushes += 1;
    this.counters.flushedEvents += events.length;
    this.step(slice);
  }

  private step(slice = WRITES_PER_TURN): void {
    const current = this.current;
    if (!current) return;
    this.flushTimer = undefined;
    const started = performance.now();
    const done = current.job.run(slice);
    const ended = performance.now();
    current.spent += ended - started;
    if (!done) {
      this.flushTimer = setImmediate(() => this.step());
      return;
    }
    this.current = undefined;
    this.counters.flushMs += current.spent;
    for (const event of current.events) this.offerDelay.record(ended - event.takenAt);
    this.offered = this.pending.length === 0 ? this.taken : current.upTo;
    this.nextFlushAt = ended + current.spent;
    if (this.pending.length > 0) this.scheduleFlush();
  }

  /** Who gets what: the events in shared writes of bounded size, each for the groups that select them. */
  private plan(events: HubEvent[]): Delivery[] {
    const deliveries: Delivery[] = [];
    let from = 0;
    let bytes = 0;
    for (let i = 0; i <= events.length; i++) {
      const size = i < events.length ? frameSize(events[i]!) : 0;
      if (i === events.length || (i > from && (i - from === BATCH_EVENTS || bytes + size > BATCH_BYTES))) {
        this.planChunk(events.slice(from, i), deliveries);
        from = i;
        bytes = 0;
      }
      bytes += size;
    }
    return deliveries;
  }

  private planChunk(events: HubEvent[], deliveries: Delivery[]): void {
    const audience = new Set<AudienceGroup>();
    for (const type of new Set(events.map((e) => e.row.event_type))) {
      for (const g of this.groups.candidates(type)) audience.add(g);
    }
    for (const group of audience) {
      this.counters.offers += events.length * group.members.size;
      let selected: HubEvent[];
      try {
        selected = events.filter((e) => group.sample.accepts(e));
      } catch (err) {
        // An event that cannot be read (its data not decodable) fails its clients, not the hub: they end,
        // with their resume point, as a connection whose write fails does.
        this.log.warn({ err }, 'a stream connection failed');
        for (const c of [...group.members]) c.end();
        continue;
      }
      if (selected.length > 0)
        deliveries.push({ batch: new HubBatch(selected, group.key), members: [...group.members] });
    }
  }

  private tick(): void {
    const now = Date.now();
    for (const c of [...this.connections]) {
      if (c.tick(now) === 'overflow') this.counters.overflows += 1;
    }
  }
}

/** The position of an event taken after `previous`. */
function markOf(row: EventsTable, previous: Mark): Mark {
  const sequence = Number(row.sequence);
  const eventId = row.event_id;
  // Literals, not a spread of the position: a spread is a slow path on this V8 (docs/performance.md item 20).
  const open = openToAll(row) ? { sequence, eventId } : previous.open;
  return { sequence, eventId, access: row, open };
}
