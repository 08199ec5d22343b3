import type { EventSystem } from '../events/event-system.js';
import { SubscriptionStore } from '../events/subscription-store.js';
import type { PlatformContext } from '../platform-context.js';
import { PLATFORM_VERSION } from '../system/platform-info.js';
import { PluginConsumers } from './plugin-consumers.js';
import { PluginSubscriptions } from './plugin-subscriptions.js';
import { registerPurgeRoutes } from './purge-routes.js';
import { EVENT_PURGE, PurgeService } from './purge-service.js';
import { registerReplayRoutes } from './replay-routes.js';
import { EVENT_REPLAY, ReplayService } from './replay-service.js';
import { registerSubscriptionDeliveryRoutes } from './subscription-delivery-routes.js';
import { SubscriptionDeliveryStore } from './subscription-delivery-store.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';

/** What other modules (plugins) build on. */
export interface WebhookModule {
  readonly dispatcher: WebhookDispatcher;
  /** Consumers of plugin subscriptions on this instance. */
  readonly consumers: PluginConsumers;
  /** Creating plugin subscriptions and registering their consumers in one call. */
  readonly pluginSubscriptions: PluginSubscriptions;
}

/**
 * Wires webhook delivery: the `webhook_dispatcher` service (woken by every committed event), replay and purge
 * (tasks `event_replay`, `event_purge`, their routes, the daily retention purge), plugin subscribers, and the
 * listing of a subscription's deliveries.
 */
export function registerWebhookModule(ctx: PlatformContext, eventSystem: EventSystem): WebhookModule {
  const { app, cfg, database } = ctx;
  const consumers = new PluginConsumers();
  const pluginSubscriptions = new PluginSubscriptions({
    store: new SubscriptionStore(database.db, database.dialect),
    index: eventSystem.subscriptionIndex,
    consumers,
    defaultTimeoutSeconds: () => cfg().webhooks.default_timeout_seconds,
  });
  const dispatcher = new WebhookDispatcher({
    db: database.db,
    dialect: database.dialect,
    // Its claims and results: unsynced where the database offers it (SQLite, Database.unsyncedTransaction).
    bookkeeping:
      database.unsyncedTransaction?.bind(database) ?? ((work) => database.db.transaction().execute(work)),
    cfg,
    shared: ctx.shared,
    cipher: eventSystem.cipher,
    consumers,
    pluginSubscriptions,
    version: PLATFORM_VERSION,
    onSubscriptionError: async (ids) => {
      app.log.warn({ subscriptions: ids }, 'webhook subscriptions put in error after repeated failures');
      await eventSystem.subscriptionIndex.changed();
    },
    reportError: (err) => ctx.registry.recordError('webhook_dispatcher', err),
  });
  ctx.registry.register(dispatcher);
  // Local and (through the bus) other instances' commits that wrote deliveries: they may be claimed here.
  // A batch with no durable subscriber wakes nothing (retries and takeovers have the dispatcher's own poll).
  // The highest priority among the events lets a full lane make room for deliveries that outrank its queue.
  const stopWaking = eventSystem.bus.onCommitted((rows, batch) => {
    if (batch.outboxRows > 0) dispatcher.wake(rows.reduce((most, r) => Math.max(most, r.priority), 0));
  });
  ctx.onClose(stopWaking);
  // The HTTP client is loaded once a webhook subscription exists, not by the first delivery (as at start).
  // A reload follows every change of a subscription: the dispatcher then rereads targets, secrets and policies.
  const stopWarming = eventSystem.subscriptionIndex.onReload(({ webhooks }) => {
    dispatcher.subscriptionsChanged();
    if (webhooks > 0) dispatcher.prepareSender();
  });
  ctx.onClose(stopWarming);
  const stopWatching = ctx.config.onChange((keys) => {
    if (keys.includes('webhooks.allow_private_targets')) {
      dispatcher
        .resetConnections()
        .catch((err: unknown) => ctx.registry.recordError('webhook_dispatcher', err));
    }
  });
  ctx.onClose(stopWatching);

  const replay = new ReplayService({
    db: database.db,
    tasks: ctx.tasks,
    dispatcher,
    cipher: eventSystem.cipher,
    concurrency: () => cfg().webhooks.max_concurrency_per_subscription,
  });
  ctx.tasks.registerType(EVENT_REPLAY, (task) => replay.run(task));
  const purge = new PurgeService({
    db: database.db,
    tasks: ctx.tasks,
    forget: (eventIds) => dispatcher.forgetEvents(eventIds),
  });
  ctx.tasks.registerType(EVENT_PURGE, (task) => purge.run(task), { resumable: true });
  scheduleRetention(ctx, purge);
  registerReplayRoutes(app, { replay, audit: ctx.audit });
  registerPurgeRoutes(app, { purge, audit: ctx.audit });
  registerSubscriptionDeliveryRoutes(app, {
    subscriptions: eventSystem.subscriptions,
    deliveries: new SubscriptionDeliveryStore(database.db),
  });

  return { dispatcher, consumers, pluginSubscriptions };
}

/** The daily purge of events older than `events.retention_days` (0: kept forever). */
function scheduleRetention(ctx: PlatformContext, purge: PurgeService): void {
  try {
    ctx.scheduler.schedule(
      'event_retention',
      ctx.cfg().events.retention_schedule,
      async () => {
        const days = ctx.cfg().events.retention_days;
        if (days <= 0) return;
        await purge.start({ criteria: { older_than_days: days } }, undefined, { scheduled: true });
      },
      { description: 'Purges events older than events.retention_days' },
    );
  } catch (err) {
    // A bad expression in the config must not stop the platform; it shows in the scheduler's recent errors.
    ctx.registry.recordError('scheduler', err);
  }
}
