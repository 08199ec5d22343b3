import type { PlatformContext } from '../platform-context.js';
import { StreamHub } from '../streams/stream-hub.js';
import { registerStreamRoutes } from '../streams/stream-routes.js';
import { EventBus } from './event-bus.js';
import { EventCatalogue } from './event-catalogue.js';
import { EventCipher, newEventKey } from './event-cipher.js';
import { type CachedPage, EventListCache } from './event-list-cache.js';
import { registerEventRoutes } from './event-routes.js';
import { EventService } from './event-service.js';
import { registerEventStatsRoutes } from './event-stats-routes.js';
import { EventStatsStore } from './event-stats-store.js';
import { EventStore } from './event-store.js';
import { EventStoreService } from './event-store-service.js';
import { EventTypeListeners } from './event-type-listeners.js';
import { registerEventTypeRoutes } from './event-type-routes.js';
import { EventTypeService } from './event-type-service.js';
import { EventTypeStore } from './event-type-store.js';
import { recordPlatformEvents } from './platform-event-recorder.js';
import { scheduleRollupCompaction } from './rollup-compaction.js';
import { SubscriptionIndex } from './subscription-index.js';
import { registerSubscriptionRoutes } from './subscription-routes.js';
import { SubscriptionService } from './subscription-service.js';
import { SubscriptionStore } from './subscription-store.js';
import { registerWebhookRoutes } from './webhook-routes.js';

/** The parts of the event system other modules build on (the webhook dispatcher, plugins). */
export interface EventSystem {
  readonly events: EventService;
  readonly store: EventStore;
  readonly bus: EventBus;
  readonly hub: StreamHub;
  readonly subscriptions: SubscriptionService;
  readonly subscriptionIndex: SubscriptionIndex;
  /** Decrypts confidential event data and webhook secrets. */
  readonly cipher: EventCipher;
  /** The registered event types that emits are validated against. */
  readonly catalogue: EventCatalogue;
}

/**
 * Wires the event system: storage, bus, stream hub, services, routes, and the recording of platform events.
 * Services start with the registry; routes are registered here.
 */
export async function registerEventSystem(ctx: PlatformContext): Promise<EventSystem> {
  const { app, database, shared, cfg } = ctx;
  const db = database.db;
  const key =
    cfg().events.encryption_key || (await ctx.systemState.getOrCreate('events.encryption_key', newEventKey));
  const cipher = new EventCipher(key);
  const store = new EventStore(db, database.reads, database.dialect);
  const subscriptionStore = new SubscriptionStore(db, database.dialect);
  const subscriptionIndex = new SubscriptionIndex(subscriptionStore, shared, (err) =>
    app.log.warn({ err }, 'could not reload subscriptions'),
  );
  const storeService = new EventStoreService(store);
  const bus = new EventBus(db, database.dialect, shared, app.log, database.durableBatch?.bind(database));
  bus.onCommitted((rows) => storeService.committed(Number(rows[rows.length - 1]?.sequence ?? 0)));
  const hub = new StreamHub(bus, store, cipher, cfg, shared, app.log);
  const typeStore = new EventTypeStore(db);
  const strict = () => cfg().events.catalogue_strict;
  const catalogue = new EventCatalogue({
    store: typeStore,
    shared,
    strict,
    onError: (err) => app.log.warn({ err }, 'could not reload the event catalogue'),
  });
  const events = new EventService({
    config: cfg,
    bus,
    store,
    subscriptions: subscriptionIndex,
    cipher,
    catalogue,
    tracing: ctx.tracing,
  });
  events.setLiveAudience((event, data) => hub.countMatching(event, data));
  const subscriptions = new SubscriptionService({
    config: cfg,
    store: subscriptionStore,
    index: subscriptionIndex,
    cipher,
  });

  ctx.registry.register(storeService);
  ctx.registry.register(bus);
  ctx.registry.register(hub);
  // The index loads with the platform and follows changes announced by other instances.
  await subscriptionIndex.start();
  ctx.onClose(() => subscriptionIndex.stop());
  await catalogue.start();
  ctx.onClose(() => catalogue.stop());

  const listCache = new EventListCache({
    // Unread pages leave after a minute; a page read again is answered only while the stamp holds.
    pages: ctx.cache.local<CachedPage>('api_responses', 'event_pages', 60_000),
    stamp: () => database.changeStamp(),
    nextExpiry: (now) => store.nextExpiry(now),
  });
  const listeners = new EventTypeListeners(database.reads);
  const types = new EventTypeService({ catalogue, store: typeStore, listeners });
  registerEventTypeRoutes(app, { types, audit: ctx.audit, strict });
  registerEventRoutes(app, { events, listCache });
  registerEventStatsRoutes(app, { stats: new EventStatsStore(database.reads, database.dialect), hub, store });
  scheduleRollupCompaction({
    scheduler: ctx.scheduler,
    database,
    cfg,
    reportError: (err) => ctx.registry.recordError('scheduler', err),
  });
  registerSubscriptionRoutes(app, { subscriptions });
  registerWebhookRoutes(app, { subscriptions });
  registerStreamRoutes(app, { hub, events, auth: ctx.auth });
  const stopRecording = recordPlatformEvents(ctx.events, events, app.log);
  ctx.onClose(stopRecording);
  // A deleted user's subscriptions go with the account: nothing more is delivered on behalf of nobody.
  const stopOwnerCleanup = ctx.events.on('platform.event', (e) => {
    // Subscriptions receive with their owner's roles (mayRead): a change of roles applies from the next event.
    if (
      e.type === 'user.updated' &&
      Array.isArray(e.data['changed_fields']) &&
      e.data['changed_fields'].includes('roles')
    ) {
      subscriptionIndex
        .changed()
        .catch((err: unknown) =>
          app.log.error({ err }, 'could not reload the subscriptions after a change of roles'),
        );
      return;
    }
    if (e.type !== 'user.deleted' || typeof e.data['user_id'] !== 'string') return;
    subscriptions
      .deleteOwnedBy(e.data['user_id'])
      .catch((err: unknown) =>
        app.log.error({ err }, 'could not delete the subscriptions of a deleted user'),
      );
  });
  ctx.onClose(stopOwnerCleanup);

  return { events, store, bus, hub, subscriptions, subscriptionIndex, cipher, catalogue };
}
