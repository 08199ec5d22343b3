import semver from 'semver';
import { AppError } from '../http/app-error.js';
import { isJsonObject } from '../kernel/json-object.js';
import { newId } from '../kernel/new-id.js';
import type { EventOrigin } from '../kernel/platform-events.js';
import type { InterruptedTask, TaskContext, TaskRunner } from '../tasks/task-runner.js';
import { maskConfig, validateConfig } from './plugin-config.js';
import { type Actor, type PluginManager, parseConfigColumn, parseManifestColumn } from './plugin-manager.js';
import type { PluginPackages } from './plugin-packages.js';
import type { PluginRepositories } from './plugin-repositories.js';
import { checkDependencies, checkNoCycle, checkPlatformVersion } from './plugin-resolver.js';
import type { PluginRow, PluginStatus, PluginStore } from './plugin-store.js';

export const PLUGIN_UPDATE = 'plugin_update';
const STEPS = ['download', 'verify', 'backup', 'stop', 'install', 'start', 'health_check'] as const;

export interface UpdateRequest {
  version: string;
  backup_current: boolean;
  restart_after_update: boolean;
}

/**
 * What an update puts back when it is interrupted (its process died): recorded in the task's details, and
 * stored, before the plugin is marked `updating`. The configuration is kept with its secrets masked (the
 * details are readable through the tasks API); they keep the value stored in the row.
 */
interface RestorePoint {
  version: string;
  previous_version: string | null;
  sha256: string;
  status: PluginStatus;
  enabled: number;
  config: Record<string, unknown>;
}

interface Deps {
  manager: PluginManager;
  store: PluginStore;
  packages: PluginPackages;
  repositories: PluginRepositories;
  tasks: TaskRunner;
  platformVersion: string;
}

/**
 * Updates run as `plugin_update` tasks with the steps download, verify, backup, stop, install, start and
 * health_check. The previous version's package stays on disk and in the database until the new one runs;
 * when the new version fails to install, start or pass its health check, the previous one is put back and
 * started again, and the task fails saying so.
 */
export class PluginUpdates {
  /** The request behind each update task started here, for the events of the run (kept only while it runs). */
  private readonly origins = new Map<string, EventOrigin>();

  constructor(private readonly deps: Deps) {
    deps.tasks.registerType(PLUGIN_UPDATE, (task) => this.run(task), {
      steps: STEPS,
      onInterrupted: (task) => this.recoverInterrupted(task),
    });
  }

  /**
   * Starts the update task.
   * @throws AppError RESOURCE_NOT_FOUND, RESOURCE_CONFLICT (an update of the plugin is already running)
   */
  async start(id: string, request: UpdateRequest, who: Actor) {
    const row = await this.deps.manager.row(id);
    if (row.status === 'updating') {
      if (await this.updateRunning(id)) {
        throw new AppError('RESOURCE_CONFLICT', `An update of '${id}' is already running`, {
          details: { plugin: id },
        });
      }
      // Left `updating` and not put back (an update older than its restore point, or a failed recovery).
      await this.deps.manager.exclusive(id, async () =>
        this.putBack(id, await this.lastRestorePoint(id), 'an earlier update was interrupted'),
      );
    }
    // The id is chosen here so the run finds its request's origin whenever it starts.
    const taskId = newId('task');
    if (who.origin) this.origins.set(taskId, who.origin);
    try {
      return await this.deps.tasks.start(
        PLUGIN_UPDATE,
        {
          plugin_id: id,
          current_version: (await this.deps.manager.row(id)).version,
          target_version: request.version,
          backup_current: request.backup_current,
          restart_after_update: request.restart_after_update,
          requested_by: who.actor?.username ?? null,
          request_id: who.requestId ?? null,
        },
        { actor: who.actor, id: taskId },
      );
    } catch (err) {
      this.origins.delete(taskId);
      throw err;
    }
  }

  /** Whether a `plugin_update` task of this plugin is running (here or on another instance). */
  private async updateRunning(id: string): Promise<boolean> {
    for (let page = 1; ; page++) {
      const { tasks } = await this.deps.tasks.list({
        status: 'running',
        type: PLUGIN_UPDATE,
        page,
        perPage: 100,
      });
      if (tasks.some((t) => (t.details as { plugin_id?: unknown }).plugin_id === id)) return true;
      if (tasks.length < 100) return false;
    }
  }

  /**
   * The task runner's recovery of an update whose process died (or stopped) mid-run, once its task has been
   * failed as interrupted: a plugin the run left `updating` is put back as it was before the update.
   */
  private async recoverInterrupted(task: InterruptedTask): Promise<void> {
    const id = task.details['plugin_id'];
    if (typeof id !== 'string') return;
    const target = task.details['target_version'];
    await this.deps.manager.exclusive(id, () =>
      this.putBack(
        id,
        restorePointOf(task.details),
        `the update${typeof target === 'string' ? ` to ${target}` : ''} (task ${task.id}) was interrupted`,
        task.id,
      ),
    );
  }

  /**
   * Puts a plugin left `updating` with no update running back as it was before the update: the version
   * (whose package the update kept), configuration, status and `enabled` of its restore point, running again
   * when it ran. Without a restore point (recorded only since updates record one) it keeps the version the row
   * holds and runs when it is enabled (`installed` otherwise). Logged in the plugin's logs and announced as
   * `plugin.error` with `reason: update_interrupted`. Call it inside `exclusive`.
   */
  private async putBack(
    id: string,
    point: RestorePoint | undefined,
    what: string,
    taskId?: string,
  ): Promise<void> {
    const { manager, store } = this.deps;
    const row = await store.find(id);
    if (row?.status !== 'updating') return;
    await manager.unload(id);
    const interruptedVersion = row.version;
    let restored: Partial<PluginRow>;
    if (point) {
      const previous = point.version === row.version ? undefined : await this.previousPackage(id, point);
      const manifest = previous ? previous.manifest : row.manifest;
      const versionBack = point.version === row.version || previous !== undefined;
      restored = {
        ...(versionBack
          ? {
              version: point.version,
              previous_version: point.previous_version,
              sha256: previous?.sha256 ?? row.sha256,
              manifest,
            }
          : {}),
        config: JSON.stringify(restoredConfig(manifest, point.config, parseConfigColumn(row))),
        status: point.status === 'updating' ? 'installed' : point.status,
        enabled: point.enabled,
        error: point.status === 'error' ? row.error : null,
      };
    } else {
      restored = { status: row.enabled === 1 ? 'active' : 'installed', error: null };
    }
    await store.update(id, restored);
    const version = restored.version ?? row.version;
    await manager.restored(id, `${what}; put back to ${version} (${restored.status})`);
    manager.announce(
      'plugin.error',
      `plugin:${id}`,
      {
        plugin_id: id,
        version: interruptedVersion,
        error: what,
        reason: 'update_interrupted',
        rolled_back_to: version,
        status: (await manager.row(id)).status,
        ...(taskId ? { task_id: taskId } : {}),
      },
      {},
    );
  }

  /** The package of the version to put back (kept by the update), or undefined when it is gone. */
  private async previousPackage(
    id: string,
    point: RestorePoint,
  ): Promise<{ manifest: string; sha256: string } | undefined> {
    const stored = await this.deps.store.loadPackage(id, point.version);
    if (!stored) return undefined;
    try {
      const candidate = await this.deps.packages.read(stored.archive, stored.sha256);
      if (candidate.manifest.name !== id || candidate.manifest.version !== point.version) return undefined;
      return { manifest: JSON.stringify(candidate.manifest), sha256: candidate.sha256 };
    } catch {
      return undefined;
    }
  }

  /** The restore point of the plugin's newest update task, if that one was interrupted and recorded one. */
  private async lastRestorePoint(id: string): Promise<RestorePoint | undefined> {
    for (let page = 1; page <= 10; page++) {
      const { tasks } = await this.deps.tasks.list({ type: PLUGIN_UPDATE, page, perPage: 100 });
      const last = tasks.find((t) => (t.details as { plugin_id?: unknown }).plugin_id === id);
      // Only the point of an update that was interrupted: one that ended otherwise put the plugin back itself.
      if (last) {
        return last.status === 'failed' && last.error === 'interrupted'
          ? restorePointOf(last.details as Record<string, unknown>)
          : undefined;
      }
      if (tasks.length < 100) return undefined;
    }
    return undefined;
  }

  private async run(task: TaskContext): Promise<Record<string, unknown>> {
    const d = task.details as {
      plugin_id: string;
      target_version: string;
      backup_current: boolean;
      restart_after_update: boolean;
      requested_by: string | null;
      request_id: string | null;
    };
    const { manager } = this.deps;
    const who: Actor = { requestId: d.request_id ?? undefined, origin: this.origins.get(task.taskId) };
    this.origins.delete(task.taskId);
    return manager.exclusive(d.plugin_id, async () => {
      const before = await manager.row(d.plugin_id);
      const wasRunning = before.enabled === 1 && before.status === 'active';

      task.step('download', 'running');
      const fetched = await this.deps.repositories.fetch(d.plugin_id, d.target_version);
      task.log(
        'info',
        `downloaded ${d.plugin_id}@${fetched.version} from ${fetched.ref} (${fetched.archive.length} bytes)`,
      );
      task.setDetails({ target_version: fetched.version });
      task.step('download', 'completed');

      task.step('verify', 'running');
      // A refusal's catalogued code and details go in the task's details: its `error` holds only the message.
      const { candidate, manifest, config } = await withRefusalRecorded(task, async () => {
        const candidate = await this.deps.packages.read(fetched.archive, fetched.sha256);
        const { manifest } = candidate;
        if (manifest.name !== d.plugin_id || manifest.version !== fetched.version) {
          throw new AppError(
            'PLUGIN_PACKAGE_INVALID',
            `The package is ${manifest.name}@${manifest.version}, not ${d.plugin_id}@${fetched.version}`,
            {
              details: { reason: 'manifest_mismatch' },
            },
          );
        }
        checkPlatformVersion(manifest, this.deps.platformVersion);
        const rows = await manager.rows();
        const installed = manager.installed(rows);
        checkDependencies(manifest, installed, wasRunning);
        checkNoCycle(manifest, installed);
        const broken = rows.filter((r) => {
          const range = parseManifestColumn(r).dependencies[d.plugin_id];
          return (
            r.enabled === 1 &&
            range !== undefined &&
            !semver.satisfies(manifest.version, range, { includePrerelease: true })
          );
        });
        if (broken.length > 0) {
          throw new AppError(
            'PLUGIN_DEPENDENCY_ERROR',
            `Enabled plugins need another version of ${d.plugin_id} (${broken.map((r) => r.id).join(', ')})`,
            {
              details: { plugin: d.plugin_id, dependents: broken.map((r) => r.id) },
            },
          );
        }
        const config = validateConfig(
          manifest.config_schema,
          parseConfigColumn(before),
          parseConfigColumn(before),
        );
        return { candidate, manifest, config };
      });
      task.log(
        'info',
        `sha256 ${candidate.sha256}${fetched.sha256 ? ' matches the repository' : ''}; dependencies satisfied`,
      );
      task.step('verify', 'completed');

      task.step('backup', 'running');
      // The running version's folder and archive stay where they are until the new version runs. What to put
      // back if this process dies from here on is stored before the plugin is touched (`recoverInterrupted`).
      const restore: RestorePoint = {
        version: before.version,
        previous_version: before.previous_version,
        sha256: before.sha256,
        status: before.status as PluginStatus,
        enabled: before.enabled,
        config: maskConfig(parseManifestColumn(before).config_schema, parseConfigColumn(before)),
      };
      task.setDetails({ restore });
      await task.save();
      task.log('info', `kept ${d.plugin_id}@${before.version} for a rollback`);
      task.step('backup', 'completed');

      task.step('stop', 'running');
      await this.deps.store.update(d.plugin_id, { status: 'updating' });
      await manager.changed(d.plugin_id);
      await manager.unload(d.plugin_id);
      task.step('stop', 'completed');

      const rollback = async (reason: string): Promise<never> => {
        task.log('error', `${reason}; rolling back to ${before.version}`);
        await manager.unload(d.plugin_id);
        await this.deps.store.update(d.plugin_id, {
          version: before.version,
          previous_version: before.previous_version,
          manifest: before.manifest,
          sha256: before.sha256,
          config: before.config,
          status: before.status,
          enabled: before.enabled,
          error: null,
        });
        if (wasRunning) await manager.load(await manager.row(d.plugin_id), who).catch(() => undefined);
        await manager.changed(d.plugin_id);
        manager.announce(
          'plugin.error',
          `plugin:${d.plugin_id}`,
          {
            plugin_id: d.plugin_id,
            version: fetched.version,
            error: reason,
            rolled_back_to: before.version,
          },
          who,
        );
        task.setDetails({ rolled_back: true, rolled_back_to: before.version });
        throw new Error(`${reason}; rolled back to ${before.version}`);
      };

      task.step('install', 'running');
      try {
        await this.deps.packages.place(candidate);
        await this.deps.store.savePackage(d.plugin_id, manifest.version, candidate.sha256, candidate.archive);
        await this.deps.store.update(d.plugin_id, {
          version: manifest.version,
          previous_version: before.version === manifest.version ? before.previous_version : before.version,
          manifest: JSON.stringify(manifest),
          sha256: candidate.sha256,
          config: JSON.stringify(config),
        });
      } catch (err) {
        return rollback(`installing ${manifest.version} failed: ${(err as Error).message}`);
      }
      task.step('install', 'completed');

      const start = wasRunning && d.restart_after_update;
      task.step('start', 'running');
      let after: PluginRow = await manager.row(d.plugin_id);
      if (start) {
        try {
          await manager.restartFailureCount(d.plugin_id);
          await manager.load(after, who);
        } catch (err) {
          return rollback(`${manifest.version} failed to start: ${(err as Error).message}`);
        }
      } else {
        task.log(
          'info',
          wasRunning
            ? 'not started: restart_after_update is false'
            : 'not started: the plugin was not enabled',
        );
      }
      task.step('start', 'completed');

      task.step('health_check', 'running');
      const runtime = manager.runtime(d.plugin_id);
      if (start && (!runtime?.isActive() || runtime.health() === 'unhealthy')) {
        return rollback(
          `${manifest.version} is not healthy after start (${runtime?.error ?? runtime?.health() ?? 'not running'})`,
        );
      }
      const status = start
        ? 'active'
        : wasRunning
          ? 'disabled'
          : before.status === 'updating'
            ? 'installed'
            : before.status;
      await this.deps.store.update(d.plugin_id, { status, enabled: start ? 1 : 0, error: null });
      task.step('health_check', 'completed');

      const keep =
        d.backup_current && before.version !== manifest.version
          ? [manifest.version, before.version]
          : [manifest.version];
      await this.deps.store.prunePackages(d.plugin_id, keep);
      if (!keep.includes(before.version)) {
        await this.deps.packages.remove(d.plugin_id, before.version);
        await this.deps.store.update(d.plugin_id, { previous_version: null });
      }
      await manager.changed(d.plugin_id);
      after = await manager.row(d.plugin_id);
      manager.announce(
        'plugin.updated',
        'system',
        {
          plugin_id: d.plugin_id,
          previous_version: before.version,
          version: after.version,
        },
        who,
      );
      return {
        plugin_id: d.plugin_id,
        previous_version: before.version,
        version: after.version,
        status: after.status,
        health: runtime?.health() ?? 'unknown',
      };
    });
  }
}

/** The restore point an update task recorded in its details, when it is whole. */
function restorePointOf(details: Record<string, unknown>): RestorePoint | undefined {
  const p = details['restore'];
  if (!isJsonObject(p)) return undefined;
  if (typeof p['version'] !== 'string' || typeof p['sha256'] !== 'string' || typeof p['status'] !== 'string')
    return undefined;
  return {
    version: p['version'],
    previous_version: typeof p['previous_version'] === 'string' ? p['previous_version'] : null,
    sha256: p['sha256'],
    status: p['status'] as PluginStatus,
    enabled: p['enabled'] === 1 ? 1 : 0,
    config: isJsonObject(p['config']) ? p['config'] : {},
  };
}

/**
 * The configuration to put back: the restore point's (its masked secrets taking the value stored now), valid
 * for the manifest put back; the configuration stored now when it is not.
 */
function restoredConfig(
  manifestText: string,
  point: Record<string, unknown>,
  current: Record<string, unknown>,
): Record<string, unknown> {
  try {
    const schema =
      (JSON.parse(manifestText) as { config_schema?: Record<string, unknown> }).config_schema ?? {};
    return validateConfig(schema, point, current);
  } catch {
    return current;
  }
}

/** Runs `verify`; when it refuses with a catalogued error, records its code and details in the task's details. */
async function withRefusalRecorded<T>(task: TaskContext, verify: () => Promise<T>): Promise<T> {
  try {
    return await verify();
  } catch (err) {
    if (err instanceof AppError) {
      task.setDetails({ error_code: err.code, error_details: err.details ?? null });
    }
    throw err;
  }
}
