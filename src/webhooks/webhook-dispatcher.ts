import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Kysely } from 'kysely';
import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformConfig } from '../config/config-schema.js';
import type { EventCipher } from '../events/event-cipher.js';
import { extend } from '../kernel/extend.js';
import type { MetricFamily } from '../kernel/metric-family.js';
import { newId, nowIso } from '../kernel/new-id.js';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import type { Bookkeeping } from '../storage/bookkeeping.js';
import type { Dialect } from '../storage/database.js';
import type { Tables } from '../storage/tables.js';
import { beginAttemptTrace, beginPluginCallTrace } from '../tracing/delivery-trace.js';
import { offTracing, type Tracing } from '../tracing/tracing.js';
import { DeliveryMeters } from './delivery-meters.js';
import { insertInOrder } from './delivery-order.js';
import { DeliveryRecorder, type DeliveryResult, expiredDrop } from './delivery-recorder.js';
import { type DispatchSubscription, DispatchSubscriptions } from './dispatch-subscriptions.js';
import { ForgottenDeliveries } from './forgotten-deliveries.js';
import { LatencyWindow } from './latency-window.js';
import { type ClaimedDelivery, OutboxStore } from './outbox-store.js';
import { ConsumerUnavailable, type PluginConsumers } from './plugin-consumers.js';
import type { PluginSubscriptions } from './plugin-subscriptions.js';
import { retryDelayMs } from './retry-schedule.js';
import { SubscriptionThrottle } from './subscription-throttle.js';
import { batchJson, type DeliverableEvent, eventJson, type WebhookEventPayload } from './webhook-payload.js';
import { type SendOutcome, WebhookSender } from './webhook-sender.js';
import { signatureHeaders } from './webhook-signature.js';

interface Item extends ClaimedDelivery {
  event: DeliverableEvent;
}

/** The deliveries of one subscription on this instance: claimed and waiting, and in flight. */
interface Lane {
  id: string;
  inFlight: number;
  /** Waiting, in delivery order: highest priority first, then lowest sequence (insertInOrder). */
  queue: Item[];
}

// Rows taken per claim; a round that fills it runs again at once.
const CLAIM_LIMIT = 200;
// While every lane has work queued, no claim for fewer rows than this (each costs a statement and a commit).
const MIN_CLAIM = 64;
// In-flight deliveries get this long to finish at shutdown before they are aborted and handed back.
const STOP_GRACE_MS = 1000;
// A subscription holds at most this many times its concurrency (in flight + waiting); a claim gives each lane
// no more than its free room, and a lane asks for more once half of it is free.
const LANE_DEPTH = 8;
// What calling a plugin consumer answers when no consumer here can take the delivery (`ConsumerUnavailable`).
const UNAVAILABLE = Symbol('consumer unavailable');

export interface DispatcherDeps {
  db: Kysely<Tables>;
  dialect: Dialect;
  /** The transactions of the claims and results (whose commits may skip the disk sync: Database.unsyncedTransaction). */
  bookkeeping: Bookkeeping;
  cfg: () => PlatformConfig;
  /** Announces cancelled replays and purged events to the dispatchers of the other instances. */
  shared: SharedState;
  cipher: EventCipher;
  consumers: PluginConsumers;
  pluginSubscriptions: PluginSubscriptions;
  version: string;
  /** Spans of attempts and plugin calls, and the `traceparent` they send (docs/tracing.md); off when absent. */
  tracing?: Tracing;
  /** Subscriptions the dispatcher put in `error`: the emit path must stop queueing for them. */
  onSubscriptionError: (ids: string[]) => Promise<void>;
  reportError: (err: unknown) => void;
}

/**
 * The `webhook_dispatcher` service: delivers the outbox to webhook targets and plugin subscribers.
 *
 * It claims due rows under a lease (see OutboxStore), keeps one lane per subscription so a slow or dead target
 * only ever occupies its own `max_concurrency_per_subscription` slots, posts through a keep-alive pool with
 * private targets refused, and hands every outcome to the DeliveryRecorder. It wakes on every committed
 * event (here, or on another instance via the bus), when a retry falls due, and on a short poll; leases are
 * renewed while rows are held, and handed back at shutdown, so a stopped instance's deliveries are picked up
 * at once and a dead one's when its leases expire.
 */
export class WebhookDispatcher implements PlatformService {
  readonly name = 'webhook_dispatcher';
  readonly type = 'worker';
  readonly dependencies = ['database', 'event_store'] as const;
  readonly recorder: DeliveryRecorder;
  /** Plugin subscribers: `plugins.subscribe(pluginId, options, consumer)` (see PluginSubscriptions). */
  readonly plugins: PluginSubscriptions;
  /** The consumers of plugin subscriptions on this instance (`consumers.register(subscriptionId, fn)`). */
  readonly consumers: PluginConsumers;
  private readonly outbox: OutboxStore;
  private readonly subscriptions: DispatchSubscriptions;
  private owner = '';
  private running = false;
  private stopController = new AbortController();
  private sender: WebhookSender | undefined;
  private readonly lanes = new Map<string, Lane>();
  /** Outbox rows held under this instance's lease until their outcome is written or they are handed back. */
  private readonly held = new Set<string>();
  private abandoned: string[] = [];
  /** Cancelled replays and purged events (here or on another instance): their deliveries are not sent from here. */
  private readonly forgotten: ForgottenDeliveries;
  /** `webhook_config.rate_limit` and targets' `Retry-After` pauses: when a lane may send. */
  private readonly throttle: SubscriptionThrottle;
  private stopListening: (() => void) | undefined;
  private inFlight = 0;
  private pumping: Promise<void> | undefined;
  private again = false;
  private wakeQueued = false;
  private backlog = false;
  /** The highest priority of the events committed since the last round (0: none, or not known). */
  private urgent = 0;
  /** Set by the poll: the next round also takes over rows whose lease expired. */
  private takeoverDue = true;
  private pollTimer: NodeJS.Timeout | undefined;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private dueTimer: NodeJS.Timeout | undefined;
  private dueAt = Number.POSITIVE_INFINITY;
  private readonly latency = new LatencyWindow(2048);
  private readonly meters = new DeliveryMeters();
  private lastError: { at: number; message: string } | undefined;
  private lastClaimMs = 0;
  private readonly counts = {
    claims: 0,
    claimed: 0,
    delivered: 0,
    failed: 0,
    retried: 0,
    dropped: 0,
    attempts: 0,
    failedAttempts: 0,
    batches: 0,
    released: 0,
    takenOver: 0,
    claimMs: 0,
  };

  constructor(private readonly deps: DispatcherDeps) {
    this.plugins = deps.pluginSubscriptions;
    this.consumers = deps.consumers;
    this.outbox = new OutboxStore(deps.db, deps.dialect, deps.cipher, deps.bookkeeping);
    this.subscriptions = new DispatchSubscriptions(deps.db, deps.cipher);
    this.forgotten = new ForgottenDeliveries({
      shared: deps.shared,
      onReplay: (replayId) => this.dropReplay(replayId).catch((err: unknown) => this.fail(err)),
      onEvents: () => this.dropPurged(),
      fail: (err) => this.fail(err),
    });
    this.throttle = new SubscriptionThrottle({
      shared: deps.shared,
      maxHoldMs: () => deps.cfg().webhooks.max_retry_delay_seconds * 1000,
      wake: (id) => {
        const lane = this.lanes.get(id);
        if (lane) this.drain(lane);
      },
      fail: (err) => this.fail(err),
    });
    this.recorder = new DeliveryRecorder({
      db: deps.db,
      dialect: deps.dialect,
      bookkeeping: deps.bookkeeping,
      outbox: this.outbox,
      errorThreshold: () => deps.cfg().events.subscription_error_threshold,
      disableAfterHours: () => deps.cfg().webhooks.disable_after_failing_hours,
      onSubscriptionError: async (ids) => {
        await Promise.all([
          this.subscriptions.refresh(true).catch((err: unknown) => this.fail(err)),
          deps.onSubscriptionError(ids).catch((err: unknown) => this.fail(err)),
        ]);
      },
      onWritten: (results) => {
        for (const r of results) this.held.delete(r.delivery.id);
      },
      reportError: (err) => this.fail(err),
    });
    deps.consumers.onRegister(() => this.wake());
  }

  /**
   * Looks for due deliveries soon (coalesced): called on every committed event, with the highest priority
   * among the events, so that a lane holding lower-priority deliveries takes the higher ones in ahead of them.
   */
  wake(priority?: number): void {
    if (priority !== undefined && priority > this.urgent) this.urgent = priority;
    if (!this.running || this.wakeQueued) return;
    this.wakeQueued = true;
    setImmediate(() => {
      this.wakeQueued = false;
      this.pump();
    });
  }

  /** A subscription was created, changed or removed (here or on another instance): reload before the next delivery. */
  subscriptionsChanged(): void {
    this.subscriptions.invalidate();
  }

  /**
   * A replay was cancelled: its deliveries held by this instance, or by any other (told through the cluster
   * bus), that have not started are dropped, not sent, and so are those a claim under way still brings in.
   * Deliveries already under way finish.
   */
  async cancelReplay(replayId: string): Promise<void> {
    const announced = this.forgotten.replayCancelled(replayId);
    await Promise.all([announced, this.dropReplay(replayId)]);
  }

  /**
   * Events were purged (their outbox rows went with them): deliveries of theirs held by this instance, or by any
   * other (told through the cluster bus), that have not started are let go, not sent, and so are those a claim
   * under way still brings in. Deliveries already under way finish.
   */
  async forgetEvents(eventIds: readonly string[]): Promise<void> {
    if (eventIds.length === 0) return;
    const announced = this.forgotten.eventsPurged(eventIds);
    this.dropPurged();
    await announced;
  }

  /** Drops the waiting deliveries of a cancelled replay (writing them `dropped`). */
  private async dropReplay(replayId: string): Promise<void> {
    await this.dropCancelled(this.unqueue((i) => i.replay_id === replayId));
  }

  /** Lets go of the waiting deliveries of purged events: their rows are gone with the events. */
  private dropPurged(): void {
    const ids = this.unqueue((i) => this.forgotten.isPurged(i.event_id));
    for (const id of ids) this.held.delete(id);
    this.counts.dropped += ids.length;
  }

  /** Takes the waiting deliveries that `drop` picks out of their lanes; answers their ids. */
  private unqueue(drop: (item: Item) => boolean): string[] {
    const ids: string[] = [];
    for (const lane of [...this.lanes.values()]) {
      const kept: Item[] = [];
      for (const i of lane.queue) {
        if (drop(i)) ids.push(i.id);
        else kept.push(i);
      }
      if (kept.length === lane.queue.length) continue;
      lane.queue = kept;
      if (lane.inFlight === 0 && lane.queue.length === 0) this.lanes.delete(lane.id);
    }
    return ids;
  }

  /** Makes the HTTP pool ready before the first delivery (called once subscriptions exist). */
  prepareSender(): void {
    if (this.running) this.sender?.warm();
  }

  /** Drops pooled connections, so a changed `webhooks.allow_private_targets` applies to every next request. */
  async resetConnections(): Promise<void> {
    await this.sender?.reset();
  }

  async start(): Promise<void> {
    this.owner = `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
    this.stopController = new AbortController();
    this.sender = new WebhookSender(() => this.deps.cfg().webhooks.allow_private_targets);
    this.running = true;
    this.takeoverDue = true;
    if (!this.stopListening) {
      const forget = this.forgotten.listen();
      const hold = this.throttle.listen();
      this.stopListening = () => {
        forget();
        hold();
      };
    }
    await this.subscriptions.refresh(true);
    if (this.subscriptions.hasWebhooks()) this.sender.warm();
    this.armPoll();
    this.armHeartbeat();
    this.wake();
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.stopListening?.();
    this.stopListening = undefined;
    this.throttle.stop();
    clearTimeout(this.pollTimer);
    clearTimeout(this.heartbeatTimer);
    clearTimeout(this.dueTimer);
    this.dueAt = Number.POSITIVE_INFINITY;
    while (this.pumping !== undefined) await this.pumping;
    await waitFor(() => this.inFlight === 0, STOP_GRACE_MS);
    this.stopController.abort();
    this.sender?.abortAll();
    await waitFor(() => this.inFlight === 0, 5000);
    await this.recorder.flush();
    const leftovers = [...this.abandoned];
    for (const lane of this.lanes.values()) for (const item of lane.queue) leftovers.push(item.id);
    this.abandoned = [];
    this.lanes.clear();
    try {
      await this.outbox.release(this.owner, leftovers, nowIso());
      this.counts.released += leftovers.length;
    } catch (err) {
      // Their leases run out instead, and any instance takes them over then.
      this.fail(err);
    }
    this.held.clear();
    await this.sender?.close();
    this.sender = undefined;
  }

  async health(): Promise<ServiceHealth> {
    const recentError = this.lastError !== undefined && Date.now() - this.lastError.at < 60_000;
    const recordFailing = this.recorder.failedWrites > 0 && recentError;
    return {
      status: !this.running ? 'unhealthy' : recentError ? 'warning' : 'healthy',
      checks: [
        {
          name: 'claim_loop',
          status: recentError ? 'warning' : 'pass',
          last_claim_ms: round(this.lastClaimMs),
          ...(recentError ? { error: this.lastError?.message } : {}),
        },
        {
          name: 'recorder',
          status: recordFailing ? 'warning' : 'pass',
          pending_results: this.recorder.pending,
        },
        { name: 'in_flight', status: 'pass', in_flight: this.inFlight, held: this.held.size },
      ],
      details: {
        instance: this.owner,
        in_flight: this.inFlight,
        held_deliveries: this.held.size,
        subscriptions_with_work: this.lanes.size,
        plugin_consumers: this.deps.consumers.ids().length,
      },
    };
  }

  metrics(): Record<string, number> {
    const c = this.counts;
    return {
      requests_handled: c.attempts,
      events_processed: c.delivered + c.failed,
      deliveries_delivered: c.delivered,
      deliveries_failed: c.failed,
      deliveries_dropped: c.dropped,
      retries_scheduled: c.retried,
      attempts: c.attempts,
      failed_attempts: c.failedAttempts,
      batches_sent: c.batches,
      error_rate: c.attempts === 0 ? 0 : round(c.failedAttempts / c.attempts, 4),
      avg_response_time_ms: round(this.latency.mean()),
      p99_latency_ms: round(this.latency.percentile(0.99)),
      in_flight: this.inFlight,
      held_deliveries: this.held.size,
      claims: c.claims,
      claimed_rows: c.claimed,
      released_rows: c.released,
      taken_over_rows: c.takenOver,
      last_claim_ms: round(this.lastClaimMs),
      avg_claim_ms: c.claims === 0 ? 0 : round(c.claimMs / c.claims),
      record_failures: this.recorder.failedWrites,
    };
  }

  prometheus(): MetricFamily[] {
    // What this instance holds per subscription (claimed, waiting or in flight): the 20 largest, so the label
    // set stays bounded however many subscriptions there are.
    const largest = [...this.lanes.values()]
      .map((lane) => ({ id: lane.id, held: lane.queue.length + lane.inFlight }))
      .sort((a, b) => b.held - a.held)
      .slice(0, 20);
    return [
      ...this.meters.families(),
      {
        name: 'platform_webhook_held_deliveries',
        help: 'Deliveries this instance holds per subscription (claimed: waiting or in flight), the 20 largest',
        type: 'gauge',
        samples: largest.map((l) => ({ labels: { subscription_id: l.id }, value: l.held })),
      },
    ];
  }

  settings(): Record<string, unknown> {
    const w = this.deps.cfg().webhooks;
    return {
      instance: this.owner,
      claiming: this.deps.dialect === 'postgres' ? 'for update skip locked' : 'single writer',
      allow_private_targets: w.allow_private_targets,
      max_concurrency_per_subscription: w.max_concurrency_per_subscription,
      max_in_flight: w.max_in_flight,
      lease_seconds: w.lease_seconds,
      poll_interval_ms: w.poll_interval_ms,
      max_retry_delay_seconds: w.max_retry_delay_seconds,
      retry_delay_scale: w.retry_delay_scale,
    };
  }

  // --- claiming ---

  private pump(): void {
    if (!this.running) return;
    if (this.pumping !== undefined) {
      this.again = true;
      return;
    }
    this.pumping = (async () => {
      try {
        do {
          this.again = false;
          await this.round();
        } while (this.again && this.running);
      } catch (err) {
        this.fail(err);
      } finally {
        this.pumping = undefined;
      }
    })();
  }

  private async round(): Promise<void> {
    const urgent = this.urgent;
    this.urgent = 0;
    await this.subscriptions.refresh();
    const w = this.deps.cfg().webhooks;
    const { depth, topUp } = this.laneLimits();
    const batching = this.subscriptions.batching().map((s) => s.id);
    let full: string[] = [];
    // Lanes holding deliveries that rank below an event just committed (which may be one of theirs).
    const outranked: Lane[] = [];
    const roomOf = new Map<string, number>();
    let laned = 0;
    // A lane with nothing left to send (its deliveries are all in flight) wants more now.
    let starving = false;
    for (const lane of this.lanes.values()) {
      if (this.subscriptions.get(lane.id)?.batch !== undefined) continue;
      laned += 1;
      if (lane.queue.length === 0) starving = true;
      const free = depth - lane.inFlight - lane.queue.length;
      // A lane that still has deliveries waiting is topped up once half of it is free (it wakes the loop
      // then), not by every wake: claiming a few rows at a time costs a statement and a commit each.
      if (free <= 0 || (free < topUp && lane.queue.length > 0)) full.push(lane.id);
      else roomOf.set(lane.id, free);
      if ((lane.queue.at(-1)?.priority ?? urgent) < urgent) outranked.push(lane);
    }
    // Such a lane claims now, so what outranks its queue goes in ahead of it (insertInOrder); one with no room
    // left (its own, or this instance's) first hands back as many of its lowest as there are rows above them.
    let outrankedClaim = false;
    for (const lane of outranked) {
      if (roomOf.has(lane.id) && w.max_in_flight - this.holding() > 0) outrankedClaim = true;
      else if ((await this.makeRoom(lane)) > 0) {
        full = full.filter((id) => id !== lane.id);
        roomOf.set(lane.id, depth - lane.inFlight - lane.queue.length);
        outrankedClaim = true;
      }
    }
    const room = w.max_in_flight - this.holding();
    this.backlog = full.length > 0 || room <= 0;
    // What the lanes can take: their free room, and a full lane for every subscription without one yet.
    const idle = Math.max(0, this.subscriptions.size - batching.length - laned);
    // (At least one lane's worth, for subscriptions created since the list was last read.)
    const capacity = Math.max(depth, [...roomOf.values()].reduce((a, b) => a + b, 0) + idle * depth);
    // While every lane still has deliveries waiting, a claim waits until it can take a good share at once: 64
    // rows, but never more than the lanes' top-ups together, which few subscriptions never reach (with one,
    // the claim waited for its lane to run dry, and every refill left it idle while the claim ran).
    const share = Math.min(MIN_CLAIM, w.max_in_flight / 4, Math.max(1, laned + idle) * topUp);
    const worthIt = Math.min(room, capacity) >= share;
    const claimNow = room > 0 && (starving || outrankedClaim || idle > 0 || laned === 0 || worthIt);
    // Put off: the lanes wake the loop as they free up (and the first to run dry is served at once).
    if (room > 0 && !claimNow) this.backlog = true;
    if (claimNow) {
      const limit = Math.min(room, CLAIM_LIMIT, capacity);
      const started = performance.now();
      const claimed = await this.outbox.claim(
        'due',
        this.owner,
        this.leaseUntil(),
        nowIso(),
        limit,
        { default: depth, of: roomOf, subscriptions: roomOf.size + idle },
        { exclude: [...full, ...batching], pluginSubscriptions: this.deps.consumers.ids() },
      );
      this.lastClaimMs = performance.now() - started;
      this.counts.claimMs += this.lastClaimMs;
      this.counts.claims += 1;
      this.counts.claimed += claimed.length;
      const taken = new Map<string, number>();
      for (const c of claimed) taken.set(c.subscription_id, (taken.get(c.subscription_id) ?? 0) + 1);
      // A subscription that got all it had room for may have more waiting.
      if (claimed.length === limit || [...taken].some(([id, n]) => n >= (roomOf.get(id) ?? depth))) {
        this.backlog = true;
      }
      if (claimed.length === limit) this.again = true;
      if (claimed.length > 0) await this.accept(claimed, depth);
    }
    if (this.takeoverDue && this.holding() < w.max_in_flight) {
      // Rows of instances that died: looked for on the poll, not on every wake, as they are rare.
      this.takeoverDue = false;
      const taken = await this.outbox.claim(
        'expired',
        this.owner,
        this.leaseUntil(),
        nowIso(),
        Math.min(w.max_in_flight - this.holding(), CLAIM_LIMIT),
        { default: depth, of: roomOf, subscriptions: roomOf.size + idle },
        { exclude: full, pluginSubscriptions: this.deps.consumers.ids() },
      );
      this.counts.claimed += taken.length;
      this.counts.takenOver += taken.length;
      if (taken.length > 0) await this.accept(taken, depth);
    }
    if (batching.length > 0) await this.batchRound();
  }

  /** Takes claimed rows into their lanes; rows beyond a lane's depth are handed back at once. */
  private async accept(claimed: ClaimedDelivery[], depth: number): Promise<void> {
    for (const c of claimed) this.held.add(c.id);
    const ready = await this.prepare(claimed);
    // A subscription changed while this round was claiming (the round looked at them before its claim): the
    // rows it brought in may belong to events emitted after that change answered, so they go by the new one.
    await this.subscriptions.refresh(
      ready.some((i) => this.subscriptions.get(i.subscription_id) === undefined),
    );
    const extras: string[] = [];
    const cancelled: string[] = [];
    const touched = new Set<Lane>();
    for (const item of ready) {
      if (this.forgotten.isPurged(item.event_id)) {
        // Purged since the claim read it: its row is gone.
        this.held.delete(item.id);
        this.counts.dropped += 1;
        continue;
      }
      if (this.forgotten.isCancelled(item.replay_id)) {
        cancelled.push(item.id);
        continue;
      }
      if (this.subscriptions.get(item.subscription_id)?.batch !== undefined) {
        // Batching was turned on after the claim was planned: these rows go out with the next batch instead.
        extras.push(item.id);
        this.again = true;
        continue;
      }
      const lane = this.lane(item.subscription_id);
      if (lane.inFlight + lane.queue.length >= depth) {
        extras.push(item.id);
        continue;
      }
      insertInOrder(lane.queue, item);
      touched.add(lane);
    }
    if (extras.length > 0) await this.handBack(extras);
    if (cancelled.length > 0) await this.dropCancelled(cancelled);
    for (const lane of touched) this.drain(lane);
  }

  /**
   * Loads the events of claimed rows and marks them `processing`. Rows whose event expired are dropped;
   * rows whose event is gone (purged: their row went with it) are simply let go.
   */
  private async prepare(claimed: ClaimedDelivery[]): Promise<Item[]> {
    let events: Map<string, DeliverableEvent>;
    try {
      events = await this.outbox.events(claimed.map((c) => c.event_id));
    } catch (err) {
      await this.handBack(claimed.map((c) => c.id));
      throw err;
    }
    const now = nowIso();
    const ready: Item[] = [];
    for (const c of claimed) {
      const event = events.get(c.event_id);
      if (!event) {
        this.held.delete(c.id);
        continue;
      }
      if (expiredBy(event, now)) {
        this.dropExpired(c, now);
        continue;
      }
      ready.push(extend(c, { event }));
    }
    return ready;
  }

  /** Records a held delivery whose event expired before it was sent as `dropped`. */
  private dropExpired(delivery: ClaimedDelivery, now: string): void {
    this.counts.dropped += 1;
    this.recorder.add(expiredDrop(delivery, this.owner, now, 'webhook_dispatcher'));
  }

  /** Batching subscriptions: a batch goes when it is full, its oldest event waited long enough, or it retries. */
  private async batchRound(): Promise<void> {
    const w = this.deps.cfg().webhooks;
    for (const sub of this.subscriptions.batching()) {
      const batch = sub.batch;
      if (!batch || !this.running) continue;
      const lane = this.lane(sub.id);
      if (lane.inFlight >= w.max_concurrency_per_subscription) continue;
      const room = w.max_in_flight - this.holding();
      if (room <= 0) return;
      const now = Date.now();
      const backlog = await this.outbox.batchBacklog(sub.id, new Date(now).toISOString());
      if (backlog.due === 0) continue;
      const oldest = backlog.oldest === null ? now : Date.parse(backlog.oldest);
      const ready = backlog.due >= batch.maxSize || backlog.retrying || oldest + batch.maxWaitMs <= now;
      if (!ready) {
        this.dueIn(oldest + batch.maxWaitMs - now);
        continue;
      }
      const claimed = await this.outbox.claim(
        'due',
        this.owner,
        this.leaseUntil(),
        nowIso(),
        Math.min(batch.maxSize, room),
        { default: batch.maxSize, of: new Map(), subscriptions: 1 },
        { exclude: [], pluginSubscriptions: [] },
        sub.id,
      );
      this.counts.claims += 1;
      this.counts.claimed += claimed.length;
      if (claimed.length === 0) continue;
      for (const c of claimed) this.held.add(c.id);
      const items = await this.prepare(claimed);
      if (backlog.due > claimed.length) this.again = true;
      if (items.length === 0) continue;
      this.startWork(lane, () => this.deliverBatch(sub, items));
    }
  }

  /**
   * A lane without room whose lowest waiting deliveries are outranked by due rows of its subscription hands
   * back as many of those lowest as there are such rows, so the claim that follows takes the higher ones
   * instead (a backlog goes highest priority first, also the part of it already claimed). Answers how many it
   * handed back.
   */
  private async makeRoom(lane: Lane): Promise<number> {
    const lowest = lane.queue.at(-1)?.priority;
    if (lowest === undefined) return 0;
    const tail = lane.queue.length - lane.queue.findIndex((i) => i.priority === lowest);
    const above = await this.outbox.dueAbove(lane.id, lowest, nowIso(), tail);
    // Only deliveries of that lowest priority: the end of the queue (which may have sent some meanwhile).
    const first = lane.queue.findIndex((i) => i.priority === lowest);
    const out = first < 0 ? [] : lane.queue.splice(Math.max(first, lane.queue.length - above));
    if (out.length === 0) return 0;
    await this.handBack(out.map((i) => i.id));
    return out.length;
  }

  // --- sending ---

  private laneLimits(): { depth: number; topUp: number } {
    const per = this.deps.cfg().webhooks.max_concurrency_per_subscription;
    return { depth: per * LANE_DEPTH, topUp: (per * LANE_DEPTH) / 2 };
  }

  private lane(id: string): Lane {
    let lane = this.lanes.get(id);
    if (!lane) {
      lane = { id, inFlight: 0, queue: [] };
      this.lanes.set(id, lane);
    }
    return lane;
  }

  private drain(lane: Lane): void {
    const per = this.deps.cfg().webhooks.max_concurrency_per_subscription;
    const sub = this.subscriptions.get(lane.id);
    if (!sub && lane.queue.length > 0) {
      // Paused, in error or deleted since the claim: its deliveries wait for it in the outbox.
      const ids = lane.queue.splice(0).map((i) => i.id);
      this.handBack(ids).catch((err: unknown) => this.fail(err));
    }
    while (sub && this.running && lane.inFlight < per && lane.queue.length > 0) {
      // What its rate limit or a target's pause lets start now; the throttle drains the lane again later.
      const allowed = this.throttle.take(sub, Math.min(per - lane.inFlight, lane.queue.length));
      if (allowed === 0) break;
      for (let n = 0; n < allowed; n++) {
        const item = lane.queue.shift()!;
        // It may have waited for its turn past its event's expiry.
        const now = nowIso();
        if (expiredBy(item.event, now)) this.dropExpired(item, now);
        else this.startWork(lane, () => this.deliverOne(sub, item));
      }
    }
    if (lane.inFlight === 0 && lane.queue.length === 0) this.lanes.delete(lane.id);
  }

  private startWork(lane: Lane, work: () => Promise<void>): void {
    lane.inFlight += 1;
    this.inFlight += 1;
    if (!this.lanes.has(lane.id)) this.lanes.set(lane.id, lane);
    work()
      .catch((err: unknown) => this.fail(err))
      .finally(() => {
        lane.inFlight -= 1;
        this.inFlight -= 1;
        this.drain(lane);
        // More is claimed once this lane has room for a top-up, not after every single delivery.
        const { depth, topUp } = this.laneLimits();
        if (this.backlog && depth - lane.inFlight - lane.queue.length >= topUp) this.wake();
      });
  }

  private async deliverOne(sub: DispatchSubscription, item: Item): Promise<void> {
    const attempt = item.attempts + 1;
    const at = nowIso();
    let outcome: SendOutcome;
    let actor = 'webhook_dispatcher';
    if (sub.method === 'plugin') {
      const consumer = this.deps.consumers.get(sub.id);
      actor = consumer?.actor ?? 'plugin';
      const called = await this.callPlugin(sub, item, attempt);
      if (called === UNAVAILABLE) {
        // Its plugin stopped here since the claim (an update, a disable elsewhere): not an attempt. The row goes
        // back to the outbox and waits for an instance where the plugin runs (and has finished its setup).
        await this.handBack([item.id]);
        return;
      }
      outcome = called;
    } else {
      const body = eventJson(item.event, sub.id, attempt);
      const trace = beginAttemptTrace(this.deps.tracing ?? offTracing, [item.event], {
        subscriptionId: sub.id,
        deliveryId: item.id,
        attempt,
      });
      const headers: Record<string, string> = {
        'x-platform-event-id': item.event.event_id,
        'x-platform-event-type': item.event.event_type,
        ...trace.headers,
      };
      outcome = await this.post(sub, item.id, body, headers, item.replay_id);
      trace.end(outcome);
    }
    if (outcome.aborted) {
      this.abandoned.push(item.id);
      return;
    }
    this.record(sub, item, attempt, at, outcome, actor);
  }

  private async deliverBatch(sub: DispatchSubscription, items: Item[]): Promise<void> {
    // One request per replay (or none): the X-Platform-Replay header then speaks for the whole batch.
    const groups = new Map<string | null, Item[]>();
    for (const item of items) {
      const group = groups.get(item.replay_id) ?? [];
      group.push(item);
      groups.set(item.replay_id, group);
    }
    for (const [replayId, claimed] of groups) {
      // A batch request is one delivery for the rate limit: it waits for its turn, or for a pause to end.
      if (sub.rateLimit !== undefined || this.throttle.heldFor(sub.id) > 0) {
        await this.throttle.acquire(sub, this.stopController.signal);
      }
      // Events purged since the claim (or while an earlier group was sent): their rows are gone. Events that
      // expired while the request waited for its turn are dropped, as a lane's are.
      const group: Item[] = [];
      const now = nowIso();
      for (const item of claimed) {
        if (this.forgotten.isPurged(item.event_id)) {
          this.held.delete(item.id);
          this.counts.dropped += 1;
        } else if (expiredBy(item.event, now)) this.dropExpired(item, now);
        else group.push(item);
      }
      if (group.length === 0) continue;
      if (this.stopController.signal.aborted) {
        for (const item of group) this.abandoned.push(item.id);
        continue;
      }
      if (this.forgotten.isCancelled(replayId)) {
        await this.dropCancelled(group.map((i) => i.id));
        continue;
      }
      const batchId = newId('bat');
      const at = nowIso();
      const entries = group.map((i) => eventJson(i.event, sub.id, i.attempts + 1, i.id));
      const body = batchJson(batchId, sub.id, entries);
      const trace = beginAttemptTrace(
        this.deps.tracing ?? offTracing,
        group.map((i) => i.event),
        { subscriptionId: sub.id, deliveryId: batchId, attempt: group[0]!.attempts + 1 },
      );
      const headers = {
        'x-platform-batch-id': batchId,
        'x-platform-event-count': String(group.length),
        ...trace.headers,
      };
      const outcome = await this.post(sub, batchId, body, headers, replayId);
      trace.end(outcome);
      if (outcome.aborted) {
        for (const item of group) this.abandoned.push(item.id);
        continue;
      }
      this.counts.batches += 1;
      for (const item of group) {
        this.record(sub, item, item.attempts + 1, at, outcome, 'webhook_dispatcher', batchId);
      }
    }
  }

  private async post(
    sub: DispatchSubscription,
    deliveryId: string,
    body: string,
    extra: Record<string, string>,
    replayId: string | null,
  ): Promise<SendOutcome> {
    if (sub.url === null || sub.secret === null || !this.sender) {
      return {
        ok: false,
        status: null,
        latencyMs: 0,
        error:
          sub.url === null
            ? 'the subscription has no webhook URL'
            : sub.secret === null
              ? 'the subscription secret cannot be decrypted (was events.encryption_key changed?)'
              : 'the dispatcher is stopping',
        retryAfterMs: undefined,
        refused: sub.url === null || sub.secret === null,
        aborted: !this.sender,
      };
    }
    const headers: Record<string, string> = Object.assign(
      {
        'content-type': 'application/json',
        'user-agent': `Platform-Webhooks/${this.deps.version}`,
        'x-platform-delivery-id': deliveryId,
      },
      extra,
      signatureHeaders(sub.secret, deliveryId, Math.floor(Date.now() / 1000), body, sub.previous),
    );
    if (replayId !== null) headers['x-platform-replay'] = replayId;
    return this.sender.post(sub.url, headers, body, sub.timeoutMs);
  }

  private async callPlugin(
    sub: DispatchSubscription,
    item: Item,
    attempt: number,
  ): Promise<SendOutcome | typeof UNAVAILABLE> {
    const consumer = this.deps.consumers.get(sub.id);
    const started = performance.now();
    const elapsed = () => round(performance.now() - started, 3);
    // The call's span ends with its outcome; a call handed back (UNAVAILABLE) was no attempt and has none.
    let trace: { end(outcome: SendOutcome): void } | undefined;
    const result = (ok: boolean, error: string | null, aborted = false): SendOutcome => {
      const outcome = {
        ok,
        status: null,
        latencyMs: elapsed(),
        error,
        retryAfterMs: undefined,
        refused: false,
        aborted,
      };
      trace?.end(outcome);
      return outcome;
    };
    if (!consumer) return UNAVAILABLE;
    const timeout = AbortSignal.timeout(sub.timeoutMs);
    const signal = AbortSignal.any([timeout, this.stopController.signal]);
    const event = JSON.parse(eventJson(item.event, sub.id, attempt)) as WebhookEventPayload;
    trace = beginPluginCallTrace(this.deps.tracing ?? offTracing, item.event, event, {
      subscriptionId: sub.id,
      deliveryId: item.id,
      attempt,
    });
    const aborted = new Promise<never>((_, reject) => {
      if (signal.aborted) reject(signal.reason);
      else signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });
    // The consumer usually wins the race; the loser must not surface as an unhandled rejection.
    aborted.catch(() => {});
    try {
      await Promise.race([
        Promise.resolve().then(() =>
          consumer.consumer({
            event,
            deliveryId: item.id,
            attempt,
            subscriptionId: sub.id,
            replayId: item.replay_id,
            signal,
          }),
        ),
        aborted,
      ]);
      return result(true, null);
    } catch (err) {
      if (this.stopController.signal.aborted) return result(false, 'aborted: the dispatcher stopped', true);
      if (err instanceof ConsumerUnavailable) return UNAVAILABLE;
      if (timeout.aborted)
        return result(false, `timeout: the consumer did not finish within ${sub.timeoutMs} ms`);
      return result(false, `the consumer failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** Turns an outcome into the delivery's next state by the subscription's retry policy, and records it. */
  private record(
    sub: DispatchSubscription,
    item: Item,
    attempt: number,
    at: string,
    outcome: SendOutcome,
    actor: string,
    batchId?: string,
  ): void {
    this.counts.attempts += 1;
    this.latency.add(outcome.latencyMs);
    this.meters.attempted(outcome.status, outcome.latencyMs);
    const base = {
      delivery: item,
      owner: this.owner,
      attempt,
      at,
      responseStatus: outcome.status,
      latencyMs: outcome.latencyMs,
      actor,
      batchId,
    };
    let result: DeliveryResult;
    if (outcome.ok) {
      this.counts.delivered += 1;
      this.meters.finished('delivered', attempt);
      result = extend(base, { outcome: 'delivered' as const, error: null });
    } else {
      this.counts.failedAttempts += 1;
      if ((outcome.status === 429 || outcome.status === 503) && outcome.retryAfterMs !== undefined) {
        // The target asked for a pause: none of the subscription's deliveries go before it ends.
        this.throttle.holdOff(sub.id, outcome.retryAfterMs);
      }
      const gone = outcome.status === 410;
      const final = outcome.refused || gone || attempt >= sub.retry.max_attempts;
      if (final) {
        this.counts.failed += 1;
        this.meters.finished('failed', attempt);
        const why = gone
          ? `${outcome.error}: the target is gone`
          : outcome.refused
            ? (outcome.error ?? 'refused')
            : `${outcome.error} (attempt ${attempt} of ${sub.retry.max_attempts})`;
        result = extend(base, { outcome: 'failed' as const, error: why, gone });
      } else {
        this.counts.retried += 1;
        const w = this.deps.cfg().webhooks;
        const delay = retryDelayMs(sub.retry, attempt, {
          scale: w.retry_delay_scale,
          capMs: w.max_retry_delay_seconds * 1000,
          retryAfterMs: outcome.retryAfterMs ?? null,
        });
        this.dueIn(delay);
        result = extend(base, {
          outcome: 'retry',
          error: outcome.error,
          nextAttemptAt: new Date(Date.now() + delay).toISOString(),
        });
      }
    }
    this.recorder.add(result);
  }

  /**
   * Rows taking room under `webhooks.max_in_flight`: claimed and not yet tried, or in flight. A row whose
   * outcome waits for the recorder's write is still held (and its lease renewed), but takes no room.
   */
  private holding(): number {
    return this.held.size - this.recorder.unwritten;
  }

  private async handBack(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      await this.outbox.release(this.owner, ids, nowIso());
      this.counts.released += ids.length;
    } finally {
      for (const id of ids) this.held.delete(id);
    }
  }

  /** Drops held rows of a cancelled replay; should that fail, they go back to the outbox (to be dropped there). */
  private async dropCancelled(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    try {
      await this.outbox.dropHeld(this.owner, ids, 'replay cancelled', nowIso());
      this.counts.dropped += ids.length;
      for (const id of ids) this.held.delete(id);
    } catch (err) {
      this.fail(err);
      await this.handBack(ids);
    }
  }

  // --- timers ---

  /** Wakes the claim loop in `ms` (a retry or a batch falls due), unless it is woken sooner anyway. */
  private dueIn(ms: number): void {
    const at = Date.now() + Math.max(5, ms);
    if (at >= this.dueAt || !this.running) return;
    clearTimeout(this.dueTimer);
    this.dueAt = at;
    this.dueTimer = setTimeout(() => {
      this.dueAt = Number.POSITIVE_INFINITY;
      this.wake();
    }, at - Date.now());
    this.dueTimer.unref();
  }

  private armPoll(): void {
    this.pollTimer = setTimeout(() => {
      this.takeoverDue = true;
      this.wake();
      if (this.running) this.armPoll();
    }, this.deps.cfg().webhooks.poll_interval_ms);
    this.pollTimer.unref();
  }

  private armHeartbeat(): void {
    const leaseMs = this.deps.cfg().webhooks.lease_seconds * 1000;
    this.heartbeatTimer = setTimeout(
      () => {
        this.heartbeat()
          .catch((err: unknown) => this.fail(err))
          .finally(() => {
            if (this.running) this.armHeartbeat();
          });
      },
      Math.max(500, leaseMs / 3),
    );
    this.heartbeatTimer.unref();
  }

  /** Renews held leases; drops the pending deliveries of expired events nobody claims (paused subscriptions). */
  private async heartbeat(): Promise<void> {
    if (this.held.size > 0) await this.outbox.renew(this.owner, [...this.held], this.leaseUntil());
    const dropped = await this.outbox.dropExpired(nowIso(), 500, 'webhook_dispatcher');
    if (dropped.length === 0) return;
    this.counts.dropped += dropped.length;
    await this.outbox.finalizeEvents([...new Set(dropped.map((r) => r.event_id))]);
  }

  private leaseUntil(): string {
    return new Date(Date.now() + this.deps.cfg().webhooks.lease_seconds * 1000).toISOString();
  }

  private fail(err: unknown): void {
    this.lastError = { at: Date.now(), message: err instanceof Error ? err.message : String(err) };
    this.deps.reportError(err);
  }
}

/** An event past its `expires_at` is not delivered any more. */
const expiredBy = (event: { expires_at: string | null }, now: string) =>
  event.expires_at !== null && event.expires_at <= now;

async function waitFor(condition: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!condition() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
}

const round = (n: number, digits = 2) => {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
};
