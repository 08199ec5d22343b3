import semver from 'semver';
import { AppError } from '../http/app-error.js';
import type { TaskContext, TaskRunner } from '../tasks/task-runner.js';
import { validateConfig } from './plugin-config.js';
import { type Actor, type PluginManager, parseConfigColumn, parseManifestColumn } from './plugin-manager.js';
import type { PluginPackages } from './plugin-packages.js';
import type { PluginRepositories } from './plugin-repositories.js';
import { checkDependencies, checkPlatformVersion } from './plugin-resolver.js';
import type { PluginRow, PluginStore } from './plugin-store.js';

export const PLUGIN_UPDATE = 'plugin_update';
const STEPS = ['download', 'verify', 'backup', 'stop', 'install', 'start', 'health_check'] as const;

export interface UpdateRequest {
  version: string;
  backup_current: boolean;
  restart_after_update: boolean;
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
  constructor(private readonly deps: Deps) {
    deps.tasks.registerType(PLUGIN_UPDATE, (task) => this.run(task), { steps: STEPS });
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
      await this.settleInterrupted(id, who);
    }
    return this.deps.tasks.start(
      PLUGIN_UPDATE,
      {
        plugin_id: id,
        current_version: row.version,
        target_version: request.version,
        backup_current: request.backup_current,
        restart_after_update: request.restart_after_update,
        requested_by: who.actor?.username ?? null,
        request_id: who.requestId ?? null,
      },
      { actor: who.actor },
    );
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
   * A row left `updating` with no update task running: the process died mid-update (its task then fails as
   * interrupted). The row holds whichever version the update had recorded, with its package kept in the
   * database; the plugin goes back to running when it was enabled (`installed` otherwise), so a new update
   * starts from a settled plugin.
   */
  private async settleInterrupted(id: string, who: Actor): Promise<void> {
    const { manager, store } = this.deps;
    const row = await manager.row(id);
    if (row.status !== 'updating') return;
    if (row.enabled === 1) {
      await manager.enable(id, who);
    } else {
      await store.update(id, { status: 'installed', error: null });
      await manager.changed(id);
    }
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
    const who: Actor = { requestId: d.request_id ?? undefined };
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
      task.log(
        'info',
        `sha256 ${candidate.sha256}${fetched.sha256 ? ' matches the repository' : ''}; dependencies satisfied`,
      );
      task.step('verify', 'completed');

      task.step('backup', 'running');
      // The running version's folder and archive stay where they are until the new version runs.
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
        if (wasRunning) await manager.load(await manager.row(d.plugin_id)).catch(() => undefined);
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
          await manager.load(after);
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
