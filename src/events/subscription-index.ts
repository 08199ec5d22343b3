import type { SharedState } from '../cluster/shared-state.js';
import { type EventReader, mayRead, type ReadFacts, subscriptionReader } from './event-data.js';
import { type CompiledSelector, compileSelector, type SelectableEvent } from './event-filters.js';
import { PatternIndex } from './pattern-index.js';
import type { SubscriptionStore } from './subscription-store.js';

interface Entry {
  id: string;
  /** Whom it receives as: its owner's rights (`subscriptionReader`). */
  reader: EventReader;
  selector: CompiledSelector;
}

/** Published whenever a subscription changes; every instance reloads its index. */
export const SUBSCRIPTIONS_CHANGED = 'events.subscriptions.changed';
// A safety net for a lost announcement (a Redis reconnect): reload at least this often.
const RELOAD_MS = 30_000;

/**
 * The active durable subscriptions, compiled once and indexed by the first segment of their patterns, so the
 * emit path finds an event's outbox rows without a query and without testing every pattern.
 */
export class SubscriptionIndex {
  private index = new PatternIndex<Entry>();
  private reloading: Promise<void> = Promise.resolve();
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly reloadListeners = new Set<(active: { webhooks: number }) => void>();

  constructor(
    private readonly store: SubscriptionStore,
    private readonly shared: SharedState,
    private readonly onError: (err: unknown) => void,
  ) {}

  get size(): number {
    return this.index.size;
  }

  async start(): Promise<void> {
    this.unsubscribe = this.shared.subscribe(SUBSCRIPTIONS_CHANGED, () => {
      this.reload().catch(this.onError);
    });
    this.timer = setInterval(() => {
      this.reload().catch(this.onError);
    }, RELOAD_MS);
    this.timer.unref();
    await this.reload();
  }

  stop(): void {
    this.unsubscribe?.();
    if (this.timer) clearInterval(this.timer);
  }

  /** Called after every reload with how many active subscriptions deliver by webhook. Returns an unsubscribe function. */
  onReload(listener: (active: { webhooks: number }) => void): () => void {
    this.reloadListeners.add(listener);
    return () => this.reloadListeners.delete(listener);
  }

  /** Reloads here at once, then tells the other instances. */
  async changed(): Promise<void> {
    await this.reload();
    if (this.shared.kind !== 'memory') await this.shared.publish(SUBSCRIPTIONS_CHANGED, {});
  }

  reload(): Promise<void> {
    this.reloading = this.reloading
      .catch(() => {})
      .then(async () => {
        const rows = await this.store.listActive();
        const next = new PatternIndex<Entry>();
        for (const row of rows) {
          const patterns = JSON.parse(row.event_patterns) as string[];
          const filters = JSON.parse(row.filters) as {
            source?: string[];
            priority?: { min?: number; max?: number };
            data_filters?: Record<string, unknown>;
          };
          next.add(
            {
              id: row.id,
              reader: subscriptionReader(row.owner_id, row.owner_roles, row.reader_scopes),
              selector: compileSelector({
                patterns,
                source: filters.source,
                priority: filters.priority,
                dataFilters: filters.data_filters,
              }),
            },
            patterns,
          );
        }
        this.index = next;
        const webhooks = rows.filter((r) => r.delivery_method === 'webhook').length;
        for (const listener of this.reloadListeners) listener({ webhooks });
      });
    return this.reloading;
  }

  /**
   * Ids of the subscriptions an event goes to: those that select it and whose owner may read it (`mayRead`: a
   * confidential event only to its emitter's or an admin's, a platform event only to holders of its family's
   * permission).
   */
  match(event: SelectableEvent & ReadFacts, data: () => unknown): string[] {
    const out: string[] = [];
    for (const entry of this.index.candidates(event.event_type)) {
      if (!mayRead(event, entry.reader)) continue;
      if (entry.selector.matches(event, data)) out.push(entry.id);
    }
    return out;
  }
}
