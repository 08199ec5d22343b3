import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformConfig } from '../config/config-schema.js';
import { AppError, notFound } from '../http/app-error.js';
import { nowIso } from '../kernel/new-id.js';
import type { EventOrigin, PlatformEvents } from '../kernel/platform-events.js';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import type { PluginSubscriptions } from '../webhooks/plugin-subscriptions.js';
import type { CapabilityServices } from './plugin-capabilities.js';
import { mergeConfig, validateConfig } from './plugin-config.js';
import { type InstallInput, readInstallPackage, splitEnabled } from './plugin-install-input.js';
import { withLifecycleLock } from './plugin-lifecycle-lock.js';
import type { PluginLogBook } from './plugin-log-book.js';
import type { Manifest } from './plugin-manifest.js';
import type { PluginPackages } from './plugin-packages.js';
import type { PluginRepositories } from './plugin-repositories.js';
import {
  checkDependencies,
  checkNoDependents,
  checkPlatformVersion,
  type InstalledPlugin,
  loadOrder,
} from './plugin-resolver.js';
import { PluginRuntime } from './plugin-runtime.js';
import type { PluginRow, PluginStatus, PluginStore } from './plugin-store.js';
import type { PluginSubscriptionStates } from './plugin-subscription-states.js';

/** Announced on every change of a plugin's installed state, so every instance follows it. */
const CHANGED_CHANNEL = 'plugins.changed';

export interface Actor {
  actor?: { id: string; username: string } | undefined;
  requestId?: string | undefined;
  /** The request that asked for the change: carried by the events it causes. */
  origin?: EventOrigin | undefined;
}

export interface PluginManagerDeps {
  cfg: () => PlatformConfig;
  store: PluginStore;
  packages: PluginPackages;
  repositories: PluginRepositories;
  services: CapabilityServices;
  pluginSubscriptions: PluginSubscriptions;
  subscriptionStates: PluginSubscriptionStates;
  logBook: PluginLogBook;
  shared: SharedState;
  events: PlatformEvents;
  log: FastifyBaseLogger;
  platformVersion: string;
  reportError: (err: unknown) => void;
  /** The event catalogue holds the types installed plugins declare: reloaded here before a change is answered. */
  catalogue: { reload(): Promise<void> };
}

/** The shared counter of a plugin's failures on every instance (`plugins.max_failures`). */
const failureCounter = (id: string) => `plugin-failures:${id}`;
/** A failure count idle this long starts again (a plugin failing once a month is not put in error for it). */
const FAILURE_COUNT_TTL_SECONDS = 30 * 24 * 3600;

export const parseManifestColumn = (row: PluginRow): Manifest => JSON.parse(row.manifest) as Manifest;
export const parseConfigColumn = (row: PluginRow): Record<string, unknown> =>
  JSON.parse(row.config) as Record<string, unknown>;

const installedView = (rows: PluginRow[]): Map<string, InstalledPlugin> =>
  new Map(
    rows.map((r) => [
      r.id,
      { id: r.id, version: r.version, enabled: r.enabled === 1, manifest: parseManifestColumn(r) },
    ]),
  );

/**
 * The `plugin_manager` service: installs, enables, disables, updates and uninstalls plugins without a restart.
 * The installed state lives in the database and is the same for every instance; each change is announced over
 * the shared state, and every instance then loads or unloads the plugin to match (`reconcile`). Lifecycle
 * operations on one plugin run one at a time across the cluster (`exclusive`).
 */
export class PluginManager implements PlatformService {
  readonly name = 'plugin_manager';
  readonly type = 'plugins';
  readonly dependencies = [
    'database',
    'cluster_state',
    'cache',
    'task_runner',
    'scheduler',
    'event_bus',
  ] as const;
  private readonly runtimes = new Map<string, PluginRuntime>();
  /** The last runtime of a plugin that stopped here: its counts stay readable (errors of a plugin put in error). */
  private readonly stopped = new Map<string, PluginRuntime>();
  /** The config each loaded plugin was started with: a change elsewhere reloads it here. */
  private readonly loadedConfig = new Map<string, string>();
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly instance = randomUUID();
  private unsubscribe: (() => void) | undefined;
  private running = false;
  private counts = { installed: 0, active: 0, failed: 0 };
  private lastError: string | undefined;

  constructor(private readonly deps: PluginManagerDeps) {}

  // --- the service ---

  async start(): Promise<void> {
    this.running = true;
    this.unsubscribe = this.deps.shared.subscribe(CHANGED_CHANNEL, (message) => {
      const m = message as { id?: unknown; all?: unknown; origin?: unknown };
      if (m.origin === this.instance) return;
      if (m.all === true) {
        void this.reconcileAll().catch((err: unknown) => this.report(err));
        return;
      }
      if (typeof m.id !== 'string') return;
      const id = m.id;
      void this.serial(id, () => this.reconcile(id)).catch((err: unknown) => this.report(err));
    });
    const rows = await this.deps.store.list();
    const order = loadOrder(installedView(rows).values());
    const enabled = rows
      .filter((r) => r.enabled === 1 && r.status === 'active')
      .sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
    for (const row of enabled) {
      await this.serial(row.id, async () => {
        try {
          await this.load(row);
        } catch (err) {
          await this.putInError(row.id, `could not be loaded at start: ${(err as Error).message}`, false);
        }
      });
    }
    await this.refreshCounts();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    const rows = await this.deps.store.list().catch(() => [] as PluginRow[]);
    const order = loadOrder(installedView(rows).values());
    const loaded = [...this.runtimes.keys()].sort((a, b) => (order.get(b) ?? 0) - (order.get(a) ?? 0));
    for (const id of loaded) await this.unload(id);
    await this.deps.logBook.flush();
  }

  async health(): Promise<ServiceHealth> {
    const failing = [...this.runtimes.values()].filter(
      (r) => r.health() === 'unhealthy' || r.health() === 'degraded',
    );
    const status = this.counts.failed > 0 || failing.length > 0 ? 'warning' : 'healthy';
    return {
      status,
      checks: [
        {
          name: 'plugins_in_error',
          status: this.counts.failed > 0 ? 'warning' : 'pass',
          count: this.counts.failed,
        },
        {
          name: 'plugin_health',
          status: failing.length > 0 ? 'warning' : 'pass',
          degraded_or_unhealthy: failing.map((r) => r.id),
        },
      ],
      details: { loaded: this.runtimes.size, ...(this.lastError ? { last_error: this.lastError } : {}) },
    };
  }

  metrics(): Record<string, number> {
    let requests = 0;
    let errors = 0;
    for (const r of this.runtimes.values()) {
      requests += r.stats.requestsHandled;
      errors += r.stats.errors;
    }
    return {
      installed: this.counts.installed,
      loaded: this.runtimes.size,
      active: this.counts.active,
      failed: this.counts.failed,
      requests_handled: requests,
      errors,
    };
  }

  settings(): Record<string, unknown> {
    const p = this.deps.cfg().plugins;
    return {
      repositories: p.repositories,
      max_failures: p.max_failures,
      call_timeout_ms: p.call_timeout_ms,
      worker_memory_mb: p.worker_memory_mb,
    };
  }

  // --- reading ---

  runtime(id: string): PluginRuntime | undefined {
    return this.runtimes.get(id);
  }

  /** The running runtime, else the one that stopped last on this instance (for its counts). */
  lastRuntime(id: string): PluginRuntime | undefined {
    return this.runtimes.get(id) ?? this.stopped.get(id);
  }

  async rows(): Promise<PluginRow[]> {
    return this.deps.store.list();
  }

  async row(id: string): Promise<PluginRow> {
    const row = await this.deps.store.find(id);
    if (!row) throw notFound('plugin', id);
    return row;
  }

  // --- lifecycle ---

  /**
   * Installs a package from a repository or an uploaded file, then enables it unless asked not to.
   * @throws AppError RESOURCE_CONFLICT (already installed), PLUGIN_DEPENDENCY_ERROR, PLUGIN_PACKAGE_INVALID,
   *   VALIDATION_ERROR (manifest, config), RESOURCE_NOT_FOUND (not in any repository)
   */
  async install(input: InstallInput, who: Actor): Promise<PluginRow> {
    const { candidate, ref } = await readInstallPackage(input, this.deps);
    const { manifest } = candidate;
    return this.exclusive(manifest.name, async () => {
      if (await this.deps.store.find(manifest.name)) {
        throw new AppError(
          'RESOURCE_CONFLICT',
          `The plugin '${manifest.name}' is already installed; update it instead`,
          {
            details: { plugin: manifest.name },
          },
        );
      }
      checkPlatformVersion(manifest, this.deps.platformVersion);
      const installed = installedView(await this.deps.store.list());
      const { enabled, config: rawConfig } = splitEnabled(manifest, input);
      checkDependencies(manifest, installed, enabled);
      const config = validateConfig(manifest.config_schema, rawConfig);
      await this.removeLeftovers(manifest.name);
      await this.deps.packages.place(candidate);
      await this.deps.store.savePackage(manifest.name, manifest.version, candidate.sha256, candidate.archive);
      const now = nowIso();
      await this.deps.store.insert({
        id: manifest.name,
        version: manifest.version,
        previous_version: null,
        manifest: JSON.stringify(manifest),
        source: input.source,
        source_ref: ref,
        sha256: candidate.sha256,
        enabled: 0,
        status: 'installed',
        config: JSON.stringify(config),
        error: null,
        installed_by: who.actor?.username ?? null,
        installed_at: now,
        updated_at: now,
      });
      this.announce(
        'plugin.installed',
        'system',
        { plugin_id: manifest.name, version: manifest.version, source: input.source },
        who,
      );
      await this.changed(manifest.name);
      if (enabled) await this.enableNow(manifest.name, who);
      return this.row(manifest.name);
    });
  }

  /** Enables and loads a plugin everywhere; a plugin whose setup fails ends in `error` (the answer says so). */
  async enable(id: string, who: Actor): Promise<PluginRow> {
    return this.exclusive(id, async () => {
      await this.enableNow(id, who);
      return this.row(id);
    });
  }

  /**
   * Disables a plugin everywhere: its routes answer 404 and its subscriptions pause.
   * @throws AppError PLUGIN_DEPENDENCY_ERROR when enabled plugins depend on it
   */
  async disable(id: string, who: Actor): Promise<PluginRow> {
    return this.exclusive(id, async () => {
      const row = await this.row(id);
      checkNoDependents(id, installedView(await this.deps.store.list()).values(), 'disabled');
      await this.unload(id);
      await this.deps.subscriptionStates.set(id, 'paused');
      await this.deps.store.update(id, { enabled: 0, status: 'disabled', error: null });
      if (row.enabled === 1 || row.status === 'active') {
        this.announce('plugin.disabled', 'system', { plugin_id: id, version: row.version }, who);
      }
      await this.changed(id);
      return this.row(id);
    });
  }

  /**
   * Stops and removes a plugin with its package, storage, subscriptions and logs.
   * @throws AppError PLUGIN_DEPENDENCY_ERROR when enabled plugins depend on it
   */
  async uninstall(id: string, who: Actor): Promise<void> {
    await this.exclusive(id, async () => {
      const row = await this.row(id);
      checkNoDependents(id, installedView(await this.deps.store.list()).values(), 'uninstalled');
      await this.unload(id);
      await this.deps.pluginSubscriptions.removeAll(id);
      await this.deps.store.delete(id);
      this.stopped.delete(id);
      await this.deps.logBook.removeAll(id);
      await this.deps.services.cache.namespace(`plugin_cache:${id}`).clear();
      await this.deps.packages.remove(id);
      await this.deps.packages.removeDataDir(id);
      this.announce('plugin.uninstalled', 'system', { plugin_id: id, version: row.version }, who);
      await this.changed(id);
    });
  }

  /**
   * What an uninstall interrupted after its row was deleted (the process died) leaves of a plugin no longer
   * installed: its subscriptions, logs, cache and data folder. A new installation starts without them, never
   * with the files and logs of the one uninstalled.
   */
  private async removeLeftovers(id: string): Promise<void> {
    await this.deps.pluginSubscriptions.removeAll(id);
    await this.deps.logBook.removeAll(id);
    await this.deps.services.cache.namespace(`plugin_cache:${id}`).clear();
    await this.deps.packages.removeDataDir(id);
  }

  /**
   * Changes the configuration (validated; masked secrets keep their value) and reloads a running plugin.
   * `replace` (PUT) makes `input` the whole configuration; `merge` (PATCH) merges it into the stored one
   * (`mergeConfig`), so keys not sent keep their value.
   */
  async configure(
    id: string,
    input: Record<string, unknown>,
    who: Actor,
    mode: 'replace' | 'merge' = 'replace',
  ): Promise<PluginRow> {
    return this.exclusive(id, async () => {
      const row = await this.row(id);
      const current = parseConfigColumn(row);
      const wanted = mode === 'merge' ? mergeConfig(current, input) : input;
      const config = validateConfig(parseManifestColumn(row).config_schema, wanted, current);
      await this.deps.store.update(id, { config: JSON.stringify(config) });
      if (this.runtimes.has(id)) {
        await this.unload(id);
        await this.loadOrFail(await this.row(id), who);
      }
      await this.changed(id);
      return this.row(id);
    });
  }

  /**
   * Runs a change of the plugin's installed state while no other runs, on this instance (`serial`) or on any
   * other (a cluster-wide lock), so two instances changing the same plugin at once never interleave.
   */
  exclusive<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const p = this.deps.cfg().plugins;
    // Long enough for the longest holder: an update downloading, then stopping and starting the plugin.
    const waitMs = p.repository_timeout_seconds * 1000 + 3 * p.call_timeout_ms + 5000;
    return this.serial(id, () =>
      withLifecycleLock(this.deps.shared, id, { waitMs, onLost: (err) => this.report(err) }, fn),
    );
  }

  /** Runs `fn` while no other lifecycle operation on the plugin runs on this instance. */
  serial<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(id) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(fn);
    this.locks.set(id, next);
    void next
      .catch(() => {})
      .finally(() => {
        if (this.locks.get(id) === next) this.locks.delete(id);
      });
    return next;
  }

  /**
   * Loads, reloads or unloads every plugin to match the database, here and on every instance: for when the
   * installed state was replaced underneath (a restore). A plugin that fails to load is reported and skipped.
   */
  async reloadAll(): Promise<void> {
    await this.reconcileAll();
    await this.deps.shared.publish(CHANGED_CHANNEL, { all: true, origin: this.instance });
  }

  // --- used by the update task ---

  /** Stops the plugin on this instance (the others follow the status change). */
  async unload(id: string): Promise<void> {
    const runtime = this.runtimes.get(id);
    if (!runtime) return;
    this.runtimes.delete(id);
    this.loadedConfig.delete(id);
    this.stopped.set(id, runtime);
    await runtime.stop();
  }

  /** Loads an installed row here: its package is unpacked from the database first when this machine lacks it. */
  async load(row: PluginRow, who: Actor = {}): Promise<PluginRuntime> {
    await this.unload(row.id);
    const manifest = parseManifestColumn(row);
    const dir = await this.deps.packages.ensure(
      row.id,
      row.version,
      row.sha256,
      async () => (await this.deps.store.loadPackage(row.id, row.version))?.archive,
    );
    const cfg = this.deps.cfg().plugins;
    const runtime = new PluginRuntime({
      id: row.id,
      version: row.version,
      manifest,
      dir,
      dataDir: await this.deps.packages.dataDir(row.id),
      sha256: row.sha256,
      config: parseConfigColumn(row),
      services: this.deps.services,
      timeoutMs: () => this.deps.cfg().plugins.call_timeout_ms,
      workerMemoryMb: cfg.worker_memory_mb,
      log: (level, message, fields) => this.deps.logBook.write(row.id, level, message, fields),
      onFailure: (r, message) => this.failed(r, message),
      onCrash: (r, reason) => {
        void this.exclusive(r.id, () => this.putInError(r.id, reason, true, r)).catch((err: unknown) =>
          this.report(err),
        );
      },
    });
    await runtime.start();
    this.runtimes.set(row.id, runtime);
    this.loadedConfig.set(row.id, row.config);
    await this.deps.subscriptionStates.set(row.id, 'active', runtime.subscriptionNames);
    this.announce(
      'plugin.loaded',
      `plugin:${row.id}`,
      { plugin_id: row.id, version: row.version, isolation: runtime.isolation },
      // plugin.loaded is the plugin's own event: no actor, but the request that loaded it, if one did.
      { origin: who.origin },
    );
    return runtime;
  }

  /**
   * After an interrupted update was undone underneath (its row put back): records why in the plugin's logs, loads
   * the plugin here when it should run (a failure puts it in `error`) and tells the other instances. Before this
   * service starts (the task runner's sweep at start-up) the row is only announced: `start` loads it. Call it
   * inside `exclusive`.
   */
  async restored(id: string, message: string): Promise<void> {
    this.deps.logBook.write(id, 'warn', message);
    const row = await this.row(id);
    if (this.running && row.enabled === 1 && row.status === 'active') {
      try {
        await this.load(row);
      } catch (err) {
        await this.putInError(
          id,
          `could not be loaded after an interrupted update: ${(err as Error).message}`,
          false,
        );
        return;
      }
    }
    await this.changed(id);
  }

  /** Announces a change of the plugin's row to the other instances, and refreshes the counts. */
  async changed(id: string): Promise<void> {
    await this.refreshCounts();
    await this.deps.catalogue.reload();
    await this.deps.shared.publish(CHANGED_CHANNEL, { id, origin: this.instance });
  }

  announce(
    type: string,
    source: 'system' | `plugin:${string}`,
    data: Record<string, unknown>,
    who: Actor,
  ): void {
    this.deps.events.announce(type, source, data, {
      actor: who.actor,
      requestId: who.requestId,
      origin: who.origin,
    });
  }

  installed(rows: PluginRow[]): Map<string, InstalledPlugin> {
    return installedView(rows);
  }

  // --- internals ---

  private async enableNow(id: string, who: Actor): Promise<void> {
    const row = await this.row(id);
    const manifest = parseManifestColumn(row);
    checkPlatformVersion(manifest, this.deps.platformVersion);
    checkDependencies(manifest, installedView(await this.deps.store.list()), true);
    if (row.enabled === 1 && row.status === 'active' && this.runtimes.get(id)?.isActive()) return;
    await this.restartFailureCount(id);
    if (await this.loadOrFail(row, who)) {
      await this.deps.store.update(id, { enabled: 1, status: 'active', error: null });
      this.announce('plugin.enabled', 'system', { plugin_id: id, version: row.version }, who);
    }
    await this.changed(id);
  }

  /** Loads the plugin; when that fails it is recorded in `error` everywhere. Resolves to whether it runs. */
  private async loadOrFail(row: PluginRow, who: Actor): Promise<boolean> {
    try {
      await this.load(row, who);
      return true;
    } catch (err) {
      await this.putInError(row.id, (err as Error).message, false, undefined, who);
      return false;
    }
  }

  /** What another instance announced: load, reload or unload the plugin here to match its row. */
  private async reconcile(id: string, options: { counts?: boolean } = {}): Promise<void> {
    if (!this.running) return;
    // Read again under `serial`: the row may have moved since the caller looked.
    const row = await this.deps.store.find(id);
    const runtime = this.runtimes.get(id);
    if (!row) {
      await this.unload(id);
      await this.deps.packages.remove(id);
      await this.deps.packages.removeDataDir(id);
    } else if (row.enabled === 1 && row.status === 'active') {
      const current =
        runtime &&
        runtime.version === row.version &&
        runtime.isActive() &&
        this.loadedConfig.get(id) === row.config;
      if (!current) {
        try {
          await this.load(row);
        } catch (err) {
          // Loaded elsewhere but failing here: this instance serves without it and says why.
          this.report(
            new Error(`plugin ${id} could not be loaded on this instance: ${(err as Error).message}`),
          );
        }
      }
    } else {
      await this.unload(id);
    }
    if (options.counts !== false) await this.refreshCounts();
  }

  /** `reconcile` for every plugin installed or loaded: dependents unloaded first, dependencies loaded first. */
  private async reconcileAll(): Promise<void> {
    if (!this.running) return;
    const rows = await this.deps.store.list();
    const view = installedView(rows);
    for (const [id, r] of this.runtimes) {
      if (!view.has(id)) view.set(id, { id, version: r.version, enabled: true, manifest: r.manifest });
    }
    const order = loadOrder(view.values());
    const rank = (id: string) => order.get(id) ?? 0;
    const wanted = rows.filter((r) => r.enabled === 1 && r.status === 'active').map((r) => r.id);
    const stale = [...this.runtimes.keys()].filter((id) => !wanted.includes(id));
    // The counts are refreshed once, after all of them.
    for (const id of stale.sort((a, b) => rank(b) - rank(a))) {
      await this.serial(id, () => this.reconcile(id, { counts: false }));
    }
    for (const id of wanted.sort((a, b) => rank(a) - rank(b))) {
      await this.serial(id, () => this.reconcile(id, { counts: false }));
    }
    await this.refreshCounts();
  }

  /**
   * Counts a failure on every instance together (the shared state's counter of the plugin, restarted when it is
   * enabled, installed or updated); past `plugins.max_failures` the plugin is put in `error` everywhere.
   */
  private failed(runtime: PluginRuntime, message: string): void {
    const current = () => runtime.isActive() && this.runtimes.get(runtime.id) === runtime;
    if (!current()) return;
    void this.failuresEverywhere(runtime)
      .then(async (count) => {
        if (count < this.deps.cfg().plugins.max_failures || !current()) return;
        await this.exclusive(runtime.id, async () => {
          // Another instance may have crossed the limit first and put it in error already.
          if (!current() || (await this.deps.store.find(runtime.id))?.status !== 'active') return;
          await this.putInError(
            runtime.id,
            `disabled after ${count} failures; the last: ${message}`,
            true,
            runtime,
          );
        });
      })
      .catch((err: unknown) => this.report(err));
  }

  /** The plugin's failures on every instance; this instance's own count while the shared state cannot answer. */
  private async failuresEverywhere(runtime: PluginRuntime): Promise<number> {
    const here = runtime.stats.errors;
    try {
      return Math.max(
        here,
        await this.deps.shared.increment(failureCounter(runtime.id), FAILURE_COUNT_TTL_SECONDS),
      );
    } catch (err) {
      this.report(err);
      return here;
    }
  }

  /** Starts the plugin's cluster-wide failure count again (it is enabled, installed or updated: a new try). */
  async restartFailureCount(id: string): Promise<void> {
    await this.deps.shared.resetCounter(failureCounter(id)).catch((err: unknown) => this.report(err));
  }

  /** Stops the plugin everywhere with status `error` (the platform keeps serving without it). */
  private async putInError(
    id: string,
    message: string,
    unload: boolean,
    only?: PluginRuntime,
    who: Actor = {},
  ): Promise<void> {
    if (only && this.runtimes.get(id) !== only && this.runtimes.has(id)) return;
    if (unload || only) await this.unload(id);
    const row = await this.deps.store.find(id);
    if (!row) return;
    await this.deps.subscriptionStates.set(id, 'paused');
    await this.deps.store.update(id, { enabled: 0, status: 'error', error: message.slice(0, 2000) });
    this.deps.logBook.write(id, 'error', `plugin put in error: ${message}`);
    this.announce(
      'plugin.error',
      `plugin:${id}`,
      { plugin_id: id, version: row.version, error: message },
      who,
    );
    await this.changed(id);
  }

  private async refreshCounts(): Promise<void> {
    const rows = await this.deps.store.list();
    this.counts = {
      installed: rows.length,
      active: rows.filter((r) => r.status === 'active').length,
      failed: rows.filter((r) => r.status === 'error').length,
    };
  }

  private report(err: unknown): void {
    this.lastError = err instanceof Error ? err.message : String(err);
    this.deps.reportError(err);
    this.deps.log.warn({ err, component: 'plugins' }, 'plugin manager error');
  }
}

export type { InstallInput, PluginStatus };
