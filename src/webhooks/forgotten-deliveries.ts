import { randomUUID } from 'node:crypto';
import type { SharedState } from '../cluster/shared-state.js';

/**
 * Deliveries every instance's dispatcher must no longer send: those of a cancelled replay, and those of purged
 * events. Announced to the other instances through the cluster bus; each remembers them for a while, so that
 * rows a claim under way still brings in are recognised too.
 */
export const FORGET_CHANNEL = 'webhooks.deliveries.forget';

// Cancelled replays and purged events remembered (oldest forgotten first).
const REPLAYS_KEPT = 1000;
const EVENTS_KEPT = 10_000;
// Event ids per announcement of a purge (a purge deletes in chunks of 500).
const IDS_PER_MESSAGE = 1000;

interface ForgetNotice {
  origin: string;
  replay_id?: string;
  event_ids?: string[];
}

/**
 * What the dispatcher of this instance no longer sends, learnt here or from another instance. `onReplay` and
 * `onEvents` are told what another instance announced (this instance's own calls act on it themselves).
 */
export class ForgottenDeliveries {
  private readonly replays = new Set<string>();
  private readonly events = new Set<string>();
  /** Tells this instance's own announcements apart from the others'. */
  private readonly origin = randomUUID();

  constructor(
    private readonly deps: {
      shared: SharedState;
      onReplay: (replayId: string) => void;
      onEvents: (eventIds: string[]) => void;
      fail: (err: unknown) => void;
    },
  ) {}

  /** Hears the other instances' announcements; answers the function that stops it. */
  listen(): () => void {
    return this.deps.shared.subscribe(FORGET_CHANNEL, (m) => this.heard(m));
  }

  /** A replay cancelled here: remembered, and announced. */
  async replayCancelled(replayId: string): Promise<void> {
    remember(this.replays, [replayId], REPLAYS_KEPT);
    await this.announce({ origin: this.origin, replay_id: replayId });
  }

  /** Events purged here: remembered, and announced. */
  async eventsPurged(eventIds: readonly string[]): Promise<void> {
    remember(this.events, eventIds, EVENTS_KEPT);
    const announced: Promise<void>[] = [];
    for (let i = 0; i < eventIds.length; i += IDS_PER_MESSAGE) {
      announced.push(
        this.announce({ origin: this.origin, event_ids: eventIds.slice(i, i + IDS_PER_MESSAGE) }),
      );
    }
    await Promise.all(announced);
  }

  isCancelled(replayId: string | null): boolean {
    return replayId !== null && this.replays.has(replayId);
  }

  isPurged(eventId: string): boolean {
    return this.events.has(eventId);
  }

  private async announce(notice: ForgetNotice): Promise<void> {
    if (this.deps.shared.kind === 'memory') return;
    // Not fatal: without the notice the other instances send what they hold (at least once, as before).
    await this.deps.shared.publish(FORGET_CHANNEL, notice).catch((err: unknown) => this.deps.fail(err));
  }

  private heard(message: unknown): void {
    const m = message as Partial<ForgetNotice> | null;
    if (m === null || typeof m !== 'object' || m.origin === this.origin) return;
    if (typeof m.replay_id === 'string') {
      remember(this.replays, [m.replay_id], REPLAYS_KEPT);
      this.deps.onReplay(m.replay_id);
    }
    if (Array.isArray(m.event_ids)) {
      const ids = m.event_ids.filter((id): id is string => typeof id === 'string');
      remember(this.events, ids, EVENTS_KEPT);
      this.deps.onEvents(ids);
    }
  }
}

/** Adds to a set kept in insertion order, forgetting the oldest past `max`. */
function remember(set: Set<string>, values: Iterable<string>, max: number): void {
  for (const v of values) {
    set.delete(v);
    set.add(v);
  }
  for (const v of set) {
    if (set.size <= max) break;
    set.delete(v);
  }
}
