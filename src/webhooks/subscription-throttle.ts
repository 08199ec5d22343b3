import { randomUUID } from 'node:crypto';
import type { SharedState } from '../cluster/shared-state.js';

/** Tells every instance's dispatcher that a target asked for a pause (`Retry-After` on a 429 or 503). */
export const HOLD_CHANNEL = 'webhooks.subscriptions.hold';

// Asked again after this long when the shared state did not answer (Redis away): nothing is sent meanwhile.
const UNAVAILABLE_RETRY_MS = 1000;
// Below this interval timers cannot keep up one permit at a time: a pace may run this far ahead of its turn.
const TIMER_MS = 1;

/** What the throttle needs to know of a subscription. */
export interface Throttled {
  id: string;
  /** Deliveries per second; undefined: no limit. */
  rateLimit: number | undefined;
}

interface HoldNotice {
  origin: string;
  subscription_id: string;
  ms: number;
}

/** The pace of one subscription's lane on this instance. */
interface Gate {
  /** Permits granted by the shared pace and not yet used: valid only while `wake` runs (see `grant`). */
  granted: number;
  asking: boolean;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Throttling per subscription: `webhook_config.rate_limit` deliveries per second at most to its target, across
 * every instance, and the pauses a target asks for with `Retry-After` on a 429 or 503.
 *
 * The pace is GCRA in the shared state (`SharedState.pace`: Redis in cluster mode, memory in embedded mode):
 * one permit per 1/rate s, never ahead of its turn (at rates above 1000/s at most 1 ms ahead, as timers go no
 * finer). A lane asks for permits before it takes a delivery out of its queue, so what cannot be sent yet stays
 * queued, in order, and is neither failed nor an attempt; when permits come (or the wait they name ends) the
 * throttle calls `wake` and the lane drains again. A permit is used at once or never, so unused ones cannot
 * add up to a burst. A subscription without a limit and without a pause costs nothing here: no shared state.
 *
 * A pause holds the whole subscription (here, and on the other instances through the cluster bus) until it
 * ends: at most `maxHoldMs` (the longest retry delay, `webhooks.max_retry_delay_seconds`).
 */
export class SubscriptionThrottle {
  private readonly gates = new Map<string, Gate>();
  /** Subscription id → when its pause ends (epoch ms). */
  private readonly holds = new Map<string, number>();
  private readonly origin = randomUUID();
  private running = true;

  constructor(
    private readonly deps: {
      shared: SharedState;
      maxHoldMs: () => number;
      /** More deliveries of this subscription may start now: its lane should drain. */
      wake: (subscriptionId: string) => void;
      fail: (err: unknown) => void;
    },
  ) {}

  /** Hears the pauses the other instances learnt; answers the function that stops it. */
  listen(): () => void {
    this.running = true;
    return this.deps.shared.subscribe(HOLD_CHANNEL, (m) => this.heard(m));
  }

  /** Forgets every gate and timer (the dispatcher stops; its lanes are handed back). */
  stop(): void {
    this.running = false;
    for (const gate of this.gates.values()) clearTimeout(gate.timer);
    this.gates.clear();
  }

  /**
   * How many of `want` deliveries of `sub` may start now. When it answers fewer, it calls `wake(sub.id)` once
   * more may (the lane must then ask again).
   */
  take(sub: Throttled, want: number): number {
    if (want <= 0) return 0;
    if (sub.rateLimit === undefined && this.holds.size === 0) return want;
    const held = this.heldFor(sub.id);
    if (held > 0) {
      this.wakeIn(sub.id, this.gate(sub.id), held);
      return 0;
    }
    if (sub.rateLimit === undefined) return want;
    const gate = this.gate(sub.id);
    if (gate.granted > 0) {
      const n = Math.min(want, gate.granted);
      gate.granted -= n;
      return n;
    }
    if (!gate.asking && gate.timer === undefined) this.ask(sub.id, sub.rateLimit, want, gate);
    return 0;
  }

  /**
   * Waits for one permit for `sub` (a batch: its request is one delivery for the pace); false when `signal`
   * aborted first. For lanes that send one event per request, `take` keeps the deliveries queued instead.
   */
  async acquire(sub: Throttled, signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      const held = this.heldFor(sub.id);
      let waitMs = held;
      if (held === 0) {
        if (sub.rateLimit === undefined) return true;
        try {
          const paced = await this.pace(sub.id, sub.rateLimit, 1);
          if (paced.granted > 0) return !signal.aborted;
          waitMs = paced.waitMs;
        } catch (err) {
          this.deps.fail(err);
          waitMs = UNAVAILABLE_RETRY_MS;
        }
      }
      await sleep(waitMs, signal);
    }
    return false;
  }

  /**
   * A target answered 429 or 503 with `Retry-After`: its subscription sends nothing for `ms` (at most
   * `maxHoldMs`), here and on every other instance.
   */
  holdOff(subscriptionId: string, ms: number): void {
    const bounded = Math.min(Math.max(0, ms), this.deps.maxHoldMs());
    if (bounded <= 0) return;
    this.hold(subscriptionId, bounded);
    if (this.deps.shared.kind === 'memory') return;
    const notice: HoldNotice = { origin: this.origin, subscription_id: subscriptionId, ms: bounded };
    // Not fatal: the other instances then send until their own attempt is answered the same way.
    this.deps.shared.publish(HOLD_CHANNEL, notice).catch((err: unknown) => this.deps.fail(err));
  }

  /** How long the subscription's pause still lasts (0: none). */
  heldFor(subscriptionId: string): number {
    const until = this.holds.get(subscriptionId);
    if (until === undefined) return 0;
    const left = until - Date.now();
    if (left > 0) return left;
    this.holds.delete(subscriptionId);
    return 0;
  }

  private hold(subscriptionId: string, ms: number): void {
    const until = Date.now() + ms;
    if ((this.holds.get(subscriptionId) ?? 0) < until) this.holds.set(subscriptionId, until);
  }

  private heard(message: unknown): void {
    const m = message as Partial<HoldNotice> | null;
    if (m === null || typeof m !== 'object' || m.origin === this.origin) return;
    if (typeof m.subscription_id !== 'string' || typeof m.ms !== 'number' || !Number.isFinite(m.ms)) return;
    // Measured from when it is heard: the instances' clocks need not agree.
    this.hold(m.subscription_id, Math.min(m.ms, this.deps.maxHoldMs()));
  }

  private gate(id: string): Gate {
    let gate = this.gates.get(id);
    if (!gate) {
      gate = { granted: 0, asking: false, timer: undefined };
      this.gates.set(id, gate);
    }
    return gate;
  }

  private ask(id: string, rate: number, want: number, gate: Gate): void {
    gate.asking = true;
    this.pace(id, rate, want)
      .then(
        (paced) => {
          gate.asking = false;
          if (paced.granted > 0) this.grant(id, gate, paced.granted);
          else this.wakeIn(id, gate, paced.waitMs);
        },
        (err: unknown) => {
          gate.asking = false;
          this.deps.fail(err);
          this.wakeIn(id, gate, UNAVAILABLE_RETRY_MS);
        },
      )
      .catch((err: unknown) => this.deps.fail(err));
  }

  /** Hands permits to the lane while it drains; what it does not use then is given up. */
  private grant(id: string, gate: Gate, granted: number): void {
    if (!this.running) return;
    gate.granted = granted;
    try {
      this.deps.wake(id);
    } finally {
      gate.granted = 0;
      if (this.gates.get(id) === gate && !gate.asking && gate.timer === undefined) this.gates.delete(id);
    }
  }

  private wakeIn(id: string, gate: Gate, ms: number): void {
    if (!this.running || gate.timer !== undefined) return;
    gate.timer = setTimeout(
      () => {
        gate.timer = undefined;
        if (this.gates.get(id) === gate && !gate.asking) this.gates.delete(id);
        if (this.running) this.deps.wake(id);
      },
      Math.max(1, Math.ceil(ms)),
    );
    gate.timer.unref();
  }

  private pace(id: string, rate: number, want: number) {
    const intervalMs = 1000 / rate;
    return this.deps.shared.pace(`webhook:${id}`, intervalMs, Math.max(0, TIMER_MS - intervalMs), want);
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, Math.max(1, Math.ceil(ms)));
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
