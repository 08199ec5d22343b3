import type { WebhookEventPayload } from './webhook-payload.js';

/** One delivery to a plugin subscriber: the same body a webhook gets, parsed, plus its delivery facts. */
export interface PluginDelivery {
  event: WebhookEventPayload;
  /** Stable across retries of the same delivery: the key for idempotent handling. */
  deliveryId: string;
  attempt: number;
  subscriptionId: string;
  /** Set when the delivery is part of a replay. */
  replayId: string | null;
  /** Aborted when the attempt times out (the subscription's `timeout_seconds`) or the platform stops. */
  signal: AbortSignal;
}

/**
 * Thrown by a consumer that cannot take deliveries here any more (its plugin stopped or failed to start on this
 * instance): the delivery is handed back to the outbox untried, for an instance where the plugin runs.
 */
export class ConsumerUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConsumerUnavailable';
  }
}

/**
 * Handles one delivery; resolving is success, throwing (or timing out) is a failed attempt that is retried —
 * except `ConsumerUnavailable`, which is no attempt at all.
 */
export type PluginConsumer = (delivery: PluginDelivery) => Promise<void> | void;

interface Entry {
  consumer: PluginConsumer;
  /** Who delivers, in the audit trail: `plugin:<id>`. */
  actor: string;
}

/**
 * The consumers of plugin subscriptions on this instance. The dispatcher claims a plugin subscription's
 * deliveries only where a consumer is registered for it, so with several instances a delivery goes to an
 * instance that has the plugin loaded.
 */
export class PluginConsumers {
  private readonly entries = new Map<string, Entry>();
  private readonly listeners = new Set<() => void>();

  /**
   * Registers the consumer of a plugin subscription; returns the function that removes it.
   *
   * @example
   * ```ts
   * const stop = consumers.register('sub_01…', async ({ event, deliveryId }) => {
   *   await index(event.data, { idempotencyKey: deliveryId });
   * }, 'plugin:search');
   * ```
   */
  register(subscriptionId: string, consumer: PluginConsumer, actor = 'plugin'): () => void {
    const entry = { consumer, actor };
    this.entries.set(subscriptionId, entry);
    for (const listener of this.listeners) listener();
    return () => {
      if (this.entries.get(subscriptionId) === entry) this.entries.delete(subscriptionId);
    };
  }

  get(subscriptionId: string): Entry | undefined {
    return this.entries.get(subscriptionId);
  }

  ids(): string[] {
    return [...this.entries.keys()];
  }

  /** Called whenever a consumer registers (the dispatcher looks for its waiting deliveries at once). */
  onRegister(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
