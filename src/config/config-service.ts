import type { Kysely } from 'kysely';
import type { SharedState } from '../cluster/shared-state.js';
import { AppError } from '../http/app-error.js';
import { deepFreeze } from '../kernel/deep-freeze.js';
import { nowIso } from '../kernel/new-id.js';
import type { Tables } from '../storage/tables.js';
import { isRestartKey, isSecretKey, SECRET_MASK } from './config-masking.js';
import { type PlatformConfig, schemaAt } from './config-schema.js';
import {
  type ConfigProblem,
  type ConfigTree,
  configValidationError,
  findForbiddenKeys,
  flattenTree,
  mergeTrees,
  unflatten,
  validateTree,
} from './config-tree.js';
import type { BootConfig } from './load-config.js';

const CHANGED_CHANNEL = 'config.changed';
const VERSION_KEY = 'config.version';
const LOCK = 'config.update';
/**
 * How often an instance compares its config_version with the database: a change whose announcement it missed
 * (its connection to Redis was down, or the announcing instance lost Redis after committing) applies then.
 */
export const CONFIG_RESYNC_MS = 5_000;
// Where the database and the shared state live cannot be stored in that database.
const BOOT_ONLY = ['database.', 'storage.', 'redis.'];

export const isBootOnlyKey = (path: string): boolean => BOOT_ONLY.some((prefix) => path.startsWith(prefix));

export interface ConfigMetadata {
  last_updated: string | null;
  updated_by: string | null;
  config_version: string;
}

export interface ConfigChange {
  /** Dotted keys whose effective value changed. */
  updated_keys: string[];
  /** True when one of them is read only at start (`x-restart`). */
  restart_required: boolean;
}

/**
 * The effective configuration: defaults < file < environment < runtime changes stored in the database.
 * `current()` is always a frozen object; a change replaces it whole and is announced to every instance.
 */
export class ConfigService {
  private effective: PlatformConfig;
  private layers: ConfigTree;
  private overrides: Record<string, unknown> = {};
  private meta: ConfigMetadata = { last_updated: null, updated_by: null, config_version: '0' };
  private readonly listeners = new Set<(keys: string[]) => void>();
  private unsubscribe: (() => void) | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  /** Loads run one after another, so a slower read of older rows never replaces a newer configuration. */
  private loading: Promise<unknown> = Promise.resolve();

  constructor(
    private boot: Pick<BootConfig, 'layers' | 'reload'>,
    private readonly db: Kysely<Tables>,
    private readonly shared: SharedState,
  ) {
    this.layers = boot.layers;
    this.effective = deepFreeze(this.compose(this.layers, {}));
  }

  current(): PlatformConfig {
    return this.effective;
  }

  metadata(): ConfigMetadata {
    return this.meta;
  }

  /** Called with the dotted keys whenever the effective configuration changes. */
  onChange(listener: (keys: string[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async start(): Promise<void> {
    await this.loadFromDatabase();
    this.unsubscribe = this.shared.subscribe(CHANGED_CHANNEL, () => {
      this.loadFromDatabase().catch(() => {});
    });
    // Only other instances change the stored configuration behind this one's back.
    if (this.shared.kind !== 'memory') {
      this.resyncTimer = setInterval(() => void this.resync().catch(() => {}), CONFIG_RESYNC_MS);
      this.resyncTimer.unref();
    }
  }

  stop(): void {
    this.unsubscribe?.();
    clearInterval(this.resyncTimer);
  }

  /** Reloads when the stored config_version is not the one this instance last loaded. */
  private async resync(): Promise<void> {
    const row = await this.db
      .selectFrom('system_state')
      .select('value')
      .where('key', '=', VERSION_KEY)
      .executeTakeFirst();
    const version = String(row ? (JSON.parse(row.value) as { version: number }).version : 0);
    if (version !== this.meta.config_version) await this.loadFromDatabase();
  }

  /**
   * Validates and stores a partial tree of changes (dotted keys are accepted as a shorthand).
   * - Writing the mask back for a secret keeps it unchanged.
   * - `null` removes the runtime change of a key, so the file, environment or default value applies again.
   * - Boot-only keys (database, storage, redis) are refused unless the value is the one in effect, so a
   *   configuration read with GET can be sent back whole.
   * Every problem is reported at once; nothing is written unless the whole change is valid.
   */
  async update(changes: unknown, actor: string): Promise<ConfigChange> {
    if (typeof changes !== 'object' || changes === null || Array.isArray(changes)) {
      throw configValidationError([{ field: '(body)', reason: 'must be an object of sections' }]);
    }
    const forbidden = findForbiddenKeys(changes);
    if (forbidden.length > 0) throw configValidationError(forbidden);
    return this.locked(async () => {
      // Another instance may have changed the stored overrides since this one last heard of it.
      await this.loadFromDatabase();
      const flat = flattenTree(changes as ConfigTree);
      const problems: ConfigProblem[] = [];
      const accepted: Record<string, unknown> = {};
      const removed: string[] = [];
      for (const [key, value] of Object.entries(flat)) {
        const schema = schemaAt(key.split('.'));
        if (!schema) {
          problems.push({ field: key, reason: 'unknown key' });
          continue;
        }
        if (schema.type === 'object') {
          problems.push({ field: key, reason: 'must be an object of keys' });
          continue;
        }
        const unchanged =
          (isSecretKey(key) && value === SECRET_MASK) ||
          JSON.stringify(this.valueAt(key)) === JSON.stringify(value);
        if (isBootOnlyKey(key)) {
          if (!unchanged)
            problems.push({ field: key, reason: 'can only be set in the config file or the environment' });
          continue;
        }
        if (isSecretKey(key) && value === SECRET_MASK) continue;
        if (value === null) removed.push(key);
        else accepted[key] = value;
      }
      const candidate = { ...this.overrides, ...accepted };
      for (const key of removed) delete candidate[key];
      const { problems: schemaProblems } = validateTree(mergeTrees(this.layers, unflatten(candidate)));
      for (const p of schemaProblems) if (!problems.some((q) => q.field === p.field)) problems.push(p);
      if (problems.length > 0) throw configValidationError(problems);

      const next = this.compose(this.layers, candidate);
      const changed = [...Object.keys(accepted), ...removed].filter(
        (k) => JSON.stringify(this.valueAt(k)) !== JSON.stringify(valueIn(next, k)),
      );
      const storedChanged =
        Object.keys(accepted).some(
          (k) => JSON.stringify(this.overrides[k]) !== JSON.stringify(accepted[k]),
        ) || removed.some((k) => k in this.overrides);
      if (!storedChanged) return { updated_keys: changed, restart_required: changed.some(isRestartKey) };

      const now = nowIso();
      await this.db.transaction().execute(async (trx) => {
        for (const [key, v] of Object.entries(accepted)) {
          const value = JSON.stringify(v);
          await trx
            .insertInto('config_overrides')
            .values({ key, value, updated_at: now, updated_by: actor })
            .onConflict((oc) => oc.column('key').doUpdateSet({ value, updated_at: now, updated_by: actor }))
            .execute();
        }
        if (removed.length > 0)
          await trx.deleteFrom('config_overrides').where('key', 'in', removed).execute();
        if (changed.length > 0) await this.bumpVersion(trx, now, actor);
      });
      await this.loadFromDatabase();
      await this.announceChange(changed);
      return { updated_keys: changed, restart_required: changed.some(isRestartKey) };
    });
  }

  /**
   * Re-reads the file and environment, then re-applies the stored runtime changes on top.
   * An invalid file is refused with every problem listed, and the configuration in effect stays.
   */
  async reload(actor: string): Promise<ConfigChange> {
    const boot = this.boot.reload();
    return this.locked(async () => {
      this.boot = boot;
      this.layers = boot.layers;
      const changed = await this.loadFromDatabase();
      if (changed.length > 0) {
        const now = nowIso();
        await this.db.transaction().execute((trx) => this.bumpVersion(trx, now, actor));
        await this.loadFromDatabase();
        await this.announceChange(changed);
      }
      return { updated_keys: changed, restart_required: changed.some(isRestartKey) };
    });
  }

  /** One writer at a time across the cluster, so two changes never take the same config_version. */
  private async locked<T>(work: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const release = await this.shared.tryLock(LOCK, 15_000);
      if (release) {
        try {
          return await work();
        } finally {
          await release().catch(() => {});
        }
      }
      if (Date.now() > deadline) {
        throw new AppError('RESOURCE_CONFLICT', 'Another configuration change is in progress; retry', {
          details: { reason: 'config_locked' },
        });
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /**
   * Tells the other instances at once. The change is stored already: when Redis cannot take the announcement,
   * the others find the new config_version on their next resync, and the change is not reported as failed.
   */
  private async announceChange(keys: string[]): Promise<void> {
    await this.shared.publish(CHANGED_CHANNEL, { keys }).catch(() => {});
  }

  private async bumpVersion(trx: Kysely<Tables>, now: string, actor: string): Promise<void> {
    const row = await trx
      .selectFrom('system_state')
      .select('value')
      .where('key', '=', VERSION_KEY)
      .executeTakeFirst();
    const version = row ? (JSON.parse(row.value) as { version: number }).version + 1 : 1;
    const state = JSON.stringify({ version, updated_at: now, updated_by: actor });
    await trx
      .insertInto('system_state')
      .values({ key: VERSION_KEY, value: state, updated_at: now })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value: state, updated_at: now }))
      .execute();
  }

  private valueAt(key: string): unknown {
    return valueIn(this.effective, key);
  }

  private loadFromDatabase(): Promise<string[]> {
    const next = this.loading.catch(() => {}).then(() => this.load());
    this.loading = next;
    return next;
  }

  private async load(): Promise<string[]> {
    const rows = await this.db.selectFrom('config_overrides').selectAll().execute();
    const overrides: Record<string, unknown> = {};
    for (const row of rows) {
      // A key removed from the schema in a newer version, or one made boot-only, is ignored rather than fatal.
      if (schemaAt(row.key.split('.')) && !isBootOnlyKey(row.key))
        overrides[row.key] = JSON.parse(row.value) as unknown;
    }
    const versionRow = await this.db
      .selectFrom('system_state')
      .select('value')
      .where('key', '=', VERSION_KEY)
      .executeTakeFirst();
    const version = versionRow
      ? (JSON.parse(versionRow.value) as { version: number; updated_at: string; updated_by: string })
      : undefined;
    this.meta = {
      last_updated: version?.updated_at ?? null,
      updated_by: version?.updated_by ?? null,
      config_version: String(version?.version ?? 0),
    };
    const { config: next, kept } = this.composeStored(overrides);
    const before = flattenTree(this.effective as unknown as ConfigTree);
    const after = flattenTree(next as unknown as ConfigTree);
    const changed = Object.keys(after).filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]));
    this.overrides = kept;
    this.effective = deepFreeze(next);
    if (changed.length > 0) for (const l of this.listeners) l(changed);
    return changed;
  }

  /**
   * The configuration with the stored runtime changes on top. A stored value this version refuses (one an
   * older version accepted, such as a cron expression the scheduler cannot run) is left out rather than fatal,
   * so the file, environment or default value applies to that key.
   */
  private composeStored(overrides: Record<string, unknown>): {
    config: PlatformConfig;
    kept: Record<string, unknown>;
  } {
    const { config, problems } = validateTree(mergeTrees(this.layers, unflatten(overrides)));
    if (config) return { config, kept: overrides };
    const kept = { ...overrides };
    for (const p of problems) delete kept[p.field];
    return { config: this.compose(this.layers, kept), kept };
  }

  private compose(layers: ConfigTree, overrides: Record<string, unknown>): PlatformConfig {
    const { config, problems } = validateTree(mergeTrees(layers, unflatten(overrides)));
    if (!config) throw configValidationError(problems);
    return config;
  }
}

function valueIn(tree: PlatformConfig, key: string): unknown {
  let node: unknown = tree;
  for (const part of key.split('.')) node = (node as Record<string, unknown> | undefined)?.[part];
  return node;
}
