import type { SubscriptionIndex } from '../events/subscription-index.js';
import type { SubscriptionStore } from '../events/subscription-store.js';
import { nowIso } from '../kernel/new-id.js';

/**
 * The durable subscriptions of plugins follow their plugin: paused while it is disabled or in error (events
 * emitted meanwhile are not queued for it), active while it runs, and removed when a new version no longer
 * makes them.
 */
export class PluginSubscriptionStates {
  constructor(
    private readonly store: SubscriptionStore,
    private readonly index: SubscriptionIndex,
  ) {}

  /** Sets the plugin's subscriptions to `status`; with `current`, deletes those not named in it. */
  async set(pluginId: string, status: 'active' | 'paused', current?: ReadonlySet<string>): Promise<void> {
    const rows = (await this.store.list({ deliveryMethod: 'plugin' })).filter(
      (r) => r.plugin_id === pluginId,
    );
    let changed = false;
    for (const r of rows) {
      if (current && !current.has(r.name)) {
        await this.store.delete(r.id);
        changed = true;
      } else if (r.status !== status) {
        await this.store.update(r.id, { status, consecutive_failures: 0, updated_at: nowIso() });
        changed = true;
      }
    }
    if (changed) await this.index.changed();
  }
}
