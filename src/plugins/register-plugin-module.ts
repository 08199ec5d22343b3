import type { CacheService } from '../cache/cache-service.js';
import type { EventSystem } from '../events/event-system.js';
import { SubscriptionStore } from '../events/subscription-store.js';
import type { PlatformContext } from '../platform-context.js';
import { bookkeeping } from '../storage/bookkeeping.js';
import { PLATFORM_VERSION } from '../system/platform-info.js';
import type { PluginSubscriptions } from '../webhooks/plugin-subscriptions.js';
import { registerPluginAdminRoutes } from './plugin-admin-routes.js';
import { registerPluginDispatcher } from './plugin-dispatcher.js';
import { PluginHttpClient } from './plugin-http.js';
import { PluginLogBook } from './plugin-log-book.js';
import { PluginManager } from './plugin-manager.js';
import { PluginPackages } from './plugin-packages.js';
import { PluginRepositories } from './plugin-repositories.js';
import { registerPluginResourceRoutes } from './plugin-resource-routes.js';
import { PluginSecretSealer } from './plugin-secret-sealer.js';
import { PluginStorageStore } from './plugin-storage-store.js';
import { PluginStore } from './plugin-store.js';
import { PluginSubscriptionStates } from './plugin-subscription-states.js';
import { PluginUpdates } from './plugin-update-task.js';

/**
 * Wires the plugin system: the `plugin_manager` service (it loads the enabled plugins when the services
 * start), the `plugin_update` task, the dispatcher of `/api/v1/ext/{plugin_id}/…`, and the admin and
 * resource routes.
 */
export async function registerPluginModule(
  ctx: PlatformContext,
  deps: { eventSystem: EventSystem; pluginSubscriptions: PluginSubscriptions; cache: CacheService },
): Promise<PluginManager> {
  const { app, cfg, database } = ctx;
  const db = database.db;
  const reportError = (err: unknown) => ctx.registry.recordError('plugin_manager', err);
  // Plugin secrets are sealed with the key of webhook secrets and confidential event data.
  const store = new PluginStore(db, new PluginSecretSealer(deps.eventSystem.cipher));
  await store.sealClearSecrets();
  const packages = new PluginPackages(cfg);
  const http = new PluginHttpClient(() => cfg().webhooks.allow_private_targets);
  ctx.onClose(() => http.close());
  const repositories = new PluginRepositories(cfg);
  const logBook = new PluginLogBook({
    db,
    writes: bookkeeping(database),
    log: app.log,
    maxLines: () => cfg().plugins.max_log_lines,
    reportError,
  });
  const manager = new PluginManager({
    cfg,
    store,
    packages,
    repositories,
    services: {
      events: deps.eventSystem.events,
      cache: deps.cache,
      storage: new PluginStorageStore(db),
      tasks: ctx.tasks,
      scheduler: ctx.scheduler,
      subscriptions: deps.pluginSubscriptions,
      http,
    },
    pluginSubscriptions: deps.pluginSubscriptions,
    subscriptionStates: new PluginSubscriptionStates(
      new SubscriptionStore(db, database.dialect),
      deps.eventSystem.subscriptionIndex,
    ),
    logBook,
    shared: ctx.shared,
    events: ctx.events,
    log: app.log,
    platformVersion: PLATFORM_VERSION,
    reportError,
    catalogue: deps.eventSystem.catalogue,
  });
  ctx.registry.register(manager);
  ctx.onClose(() => logBook.close());
  const updates = new PluginUpdates({
    manager,
    store,
    packages,
    repositories,
    tasks: ctx.tasks,
    platformVersion: PLATFORM_VERSION,
  });

  registerPluginDispatcher(app, { runtime: (id) => manager.runtime(id), auth: ctx.auth });
  const routeDeps = { manager, updates, repositories, logBook, audit: ctx.audit, cfg };
  await registerPluginAdminRoutes(app, routeDeps);
  registerPluginResourceRoutes(app, routeDeps);
  return manager;
}
