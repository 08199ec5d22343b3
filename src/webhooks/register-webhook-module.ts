import type { EventSystem } from '../events/event-system.js';
import { SecretRotation } from '../events/subscription-rotation.js';
import { registerSecretRotationRoutes } from '../events/subscription-rotation-routes.js';
import { SubscriptionStore } from '../events/subscription-store.js';
import type { Mailer } from '../mail/mailer.js';
import type { PlatformContext } from '../platform-context.js';
import { bookkeeping } from '../storage/bookkeeping.js';
import { bulkWrites } from '../storage/bulk-writes.js';
import { PLATFORM_VERSION } from '../system/platform-info.js';
import { DeliveryRecovery, SUBSCRIPTION_RECOVER } from './delivery-recovery.js';
import { registerDeliveryRecoveryRoutes } from './delivery-recovery-routes.js';
import { registerDeliveryTimelineRoutes } from './delivery-timeline-routes.js';
import { DeliveryTimelineStore } from './delivery-timeline-store.js';
import { PluginConsumers } from './plugin-consumers.js';
import { PluginSubscriptions } from './plugin-subscriptions.js';
import { registerPurgeRoutes } from './purge-routes.js';
import { EVENT_PURGE, PurgeService } from './purge-service.js';
import { registerReplayRoutes } from './replay-routes.js';
import { EVENT_REPLAY, ReplayService } from './replay-service.js';
import { registerSubscriptionDeliveryRoutes } from './subscription-delivery-routes.js';
import { SubscriptionDeliveryStore } from './subscription-delivery-store.js';
import { SubscriptionDisabledNotice } from './subscription-disabled-notice.js';
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
export function registerWebhookModule(
  ctx: PlatformContext,
  eventSystem: EventSystem,
  deps: { mailer: Mailer },
): WebhookModule {
  const { app, cfg, database } = ctx;
  const disabledNotice = new SubscriptionDisabledNotice({
    db: database.db,
    cfg,
    events: ctx.events,
    mailer: deps.mailer,
    reportError: (err) => ctx.registry.recordError('webhook_dispatcher', err),
  });
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
    // Its claims, lease renewals and results commit unsynced (SQLite): a claim or renewal lost with the machine
    // lets the lease run out and the delivery be claimed again; a result lost so sends it again (delivery is
    // at least once).
    bookkeeping: bookkeeping(database),
    cfg,
    shared: ctx.shared,
    cipher: eventSystem.cipher,
    consumers,
    pluginSubscriptions,
    version: PLATFORM_VERSION,
    tracing: ctx.tracing,
    onSubscriptionError: async (ids) => {
      app.log.warn({ subscriptions: ids }, 'webhook subscriptions put in error after repeated failures');
      await eventSystem.subscriptionIndex.changed();
      await disabledNotice.notify(ids);
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

  // The writer, its dialect, the reader threads and how bulk chunks commit (on SQLite, synced off the server's
  // thread): what the replay, purge and recovery jobs read and write.
  const storage = {
    db: database.db,
    dialect: database.dialect,
    reads: database.reads,
    writes: bulkWrites(database),
  };
  const replay = new ReplayService({
    ...storage,
    tasks: ctx.tasks,
    dispatcher,
    cipher: eventSystem.cipher,
    concurrency: () => cfg().webhooks.max_concurrency_per_subscription,
  });
  ctx.tasks.registerType(EVENT_REPLAY, (task) => replay.run(task));
  const purge = new PurgeService({
    ...storage,
    tasks: ctx.tasks,
    forget: (eventIds) => dispatcher.forgetEvents(eventIds),
  });
  ctx.tasks.registerType(EVENT_PURGE, (task) => purge.run(task), { resumable: true });
  scheduleRetention(ctx, purge);
  registerReplayRoutes(app, { replay, audit: ctx.audit });
  registerPurgeRoutes(app, { purge, audit: ctx.audit });
  registerSubscriptionDeliveryRoutes(app, {
    subscriptions: eventSystem.subscriptions,
    deliveries: new SubscriptionDeliveryStore(database.db, database.reads),
  });
  registerDeliveryTimelineRoutes(app, {
    subscriptions: eventSystem.subscriptions,
    timeline: new DeliveryTimelineStore(database.reads),
  });
  const recovery = new DeliveryRecovery({
    ...storage,
    tasks: ctx.tasks,
    dispatcher,
    cipher: eventSystem.cipher,
    subscriptions: eventSystem.subscriptions,
  });
  ctx.tasks.registerType(SUBSCRIPTION_RECOVER, (task) => recovery.run(task));
  registerDeliveryRecoveryRoutes(app, { recovery, audit: ctx.audit });
  const rotation = new SecretRotation({
    subscriptions: eventSystem.subscriptions,
    store: new SubscriptionStore(database.db, database.dialect),
    index: eventSystem.subscriptionIndex,
    cipher: eventSystem.cipher,
  });
  registerSecretRotationRoutes(app, { rotation, audit: ctx.audit });

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
