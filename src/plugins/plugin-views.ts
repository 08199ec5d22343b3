import type { Static } from '@sinclair/typebox';
import { maskConfig } from './plugin-config.js';
import type { PluginLogBook } from './plugin-log-book.js';
import { type PluginManager, parseConfigColumn, parseManifestColumn } from './plugin-manager.js';
import { loadOrder } from './plugin-resolver.js';
import type { PluginRuntime } from './plugin-runtime.js';
import type { PluginDetail, PluginListItem } from './plugin-schemas.js';
import type { PluginRow } from './plugin-store.js';

const prefix = (id: string) => `/api/v1/ext/${id}`;
const endpointsOf = (id: string, runtime: PluginRuntime | undefined) =>
  runtime?.isActive() ? runtime.routes.describe().map((r) => `${r.method} ${prefix(id)}${r.path}`) : [];
const status = (row: PluginRow) => row.status as Static<typeof PluginListItem>['status'];

/** Every installed plugin as a list item (§2.4), in load order. */
export async function pluginList(manager: PluginManager): Promise<Static<typeof PluginListItem>[]> {
  const rows = await manager.rows();
  const order = loadOrder(manager.installed(rows).values());
  return rows
    .map((row) => listItem(row, manager.runtime(row.id), order.get(row.id) ?? 1, manager.lastRuntime(row.id)))
    .sort((a, b) => a.load_order - b.load_order);
}

/** `measured`: the runtime whose counts to show (the running one, or the last one that ran here). */
export function listItem(
  row: PluginRow,
  runtime: PluginRuntime | undefined,
  loadOrderPosition: number,
  measured: PluginRuntime | undefined = runtime,
): Static<typeof PluginListItem> {
  const m = parseManifestColumn(row);
  const stats = measured?.stats.snapshot();
  const running = runtime?.isActive() ?? false;
  return {
    id: row.id,
    name: m.name,
    version: row.version,
    description: m.description,
    author: m.author,
    status: status(row),
    enabled: row.enabled === 1,
    health: runtime?.health() ?? 'unknown',
    load_order: loadOrderPosition,
    dependencies: Object.keys(m.dependencies).sort(),
    permissions: [...m.permissions],
    endpoints: endpointsOf(row.id, runtime),
    events: [...m.events.emits],
    isolation: m.isolation,
    source: row.source,
    error: row.error,
    metrics: {
      requests_handled: stats?.requests_handled ?? 0,
      errors: stats?.errors ?? 0,
      uptime_seconds: running ? (stats?.uptime_seconds ?? 0) : 0,
    },
    installed_at: row.installed_at,
    last_updated: row.updated_at,
  };
}

/** One plugin's detail (§2.4): manifest, state, masked configuration, metrics on this instance, last logs. */
export async function pluginDetail(
  manager: PluginManager,
  logBook: PluginLogBook,
  id: string,
): Promise<Static<typeof PluginDetail>> {
  const rows = await manager.rows();
  const row = await manager.row(id);
  const m = parseManifestColumn(row);
  const runtime = manager.runtime(id);
  const active = runtime?.isActive() ? runtime : undefined;
  const stats = manager.lastRuntime(id)?.stats.snapshot();
  return {
    id: row.id,
    version: row.version,
    manifest: {
      name: m.name,
      version: m.version,
      description: m.description,
      author: m.author,
      license: m.license,
      platform_version: m.platform_version,
      main: m.main,
      dependencies: { ...m.dependencies },
      permissions: [...m.permissions],
      events: { emits: [...m.events.emits], subscribes: [...m.events.subscribes] },
      config_schema: m.config_schema,
      isolation: m.isolation,
    },
    status: status(row),
    enabled: row.enabled === 1,
    health: runtime?.health() ?? 'unknown',
    health_details: active?.healthDetails() ?? null,
    error: row.error,
    load_order: loadOrder(manager.installed(rows).values()).get(id) ?? 1,
    previous_version: row.previous_version,
    source: row.source,
    sha256: row.sha256,
    configuration: maskConfig(m.config_schema, parseConfigColumn(row)),
    endpoints: endpointsOf(id, runtime),
    subscriptions: active ? [...active.subscriptionNames] : [],
    task_types: active ? [...active.taskTypes].map((t) => `${id}:${t}`) : [],
    metrics: {
      requests_handled: stats?.requests_handled ?? 0,
      events_handled: stats?.events_handled ?? 0,
      tasks_run: stats?.tasks_run ?? 0,
      errors: stats?.errors ?? 0,
      uptime_seconds: active ? (stats?.uptime_seconds ?? 0) : 0,
      requests_per_minute: stats?.requests_per_minute ?? 0,
      average_response_time: stats?.average_response_time ?? 0,
      error_rate: stats?.error_rate ?? 0,
      memory_usage_mb: active ? await active.memoryMb() : null,
    },
    logs: await logBook.recent(id, 100),
    installed_at: row.installed_at,
    last_updated: row.updated_at,
  };
}
