import type { Kysely } from 'kysely';
import type { SharedState } from '../cluster/shared-state.js';
import { nowIso } from '../kernel/new-id.js';
import type { Tables } from '../storage/tables.js';
import { isRestartKey, isSecretKey, SECRET_MASK } from './config-masking.js';
import { type PlatformConfig, schemaAt } from './config-schema.js';
import {
  type ConfigProblem,
  type ConfigTree,
  configValidationError,
  deepFreeze,
  findForbiddenKeys,
  flattenTree,
  mergeTrees,
  unflatten,
  validateTree,
} from './config-tree.js';
import { loadBootConfig } from './load-config.js';

const CHANGED_CHANNEL = 'config.changed';
const VERSION_KEY = 'config.version';
// Where the database itself lives cannot be stored in that database.
const BOOT_ONLY = ['database.', 'storage.', 'redis.'];

export interface ConfigMetadata {
  last_updated: string | null;
  updated_by: string | null;
  config_version: string;
}

/**
 * The effective configuration: defaults < file < environment < runtime changes stored in the database.
 * `current()` is always a frozen object; a change replaces it whole and is announced to every instance.
 */
export class ConfigService {
  private effective: PlatformConfig;
  private overrides: Record<string, unknown> = {};
  private meta: ConfigMetadata = { last_updated: null, updated_by: null, config_version: '0' };
  private readonly listeners = new Set<(keys: string[]) => void>();
  private unsubscribe: (() => void) | undefined;

  constructor(
    private layers: ConfigTree,
    private readonly source: { configFile: string | undefined },
    private readonly db: Kysely<Tables>,
    private readonly shared: SharedState,
  ) {
    this.effective = deepFreeze(this.compose(layers, {}));
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
  }

  stop(): void {
    this.unsubscribe?.();
  }

  /**
   * Validates and stores a partial tree of changes. Writing the mask back for a secret keeps it unchanged.
   * Every problem is reported at once; nothing is written unless the whole change is valid.
   */
  async update(
    changes: unknown,
    actor: string,
  ): Promise<{ updated_keys: string[]; restart_required: boolean }> {
    if (typeof changes !== 'object' || changes === null || Array.isArray(changes)) {
      throw configValidationError([{ field: '(body)', reason: 'must be an object of sections' }]);
    }
    const forbidden = findForbiddenKeys(changes);
    if (forbidden.length > 0) throw configValidationError(forbidden);
    const flat = flattenTree(changes as ConfigTree);
    const problems: ConfigProblem[] = [];
    const accepted: Record<string, unknown> = {};
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
      if (BOOT_ONLY.some((prefix) => key.startsWith(prefix))) {
        problems.push({ field: key, reason: 'can only be set in the config file or the environment' });
        continue;
      }
      if (isSecretKey(key) && value === SECRET_MASK) continue;
      accepted[key] = value;
    }
    const candidate = { ...this.overrides, ...accepted };
    const { problems: schemaProblems } = validateTree(mergeTrees(this.layers, unflatten(candidate)));
    problems.push(
      ...schemaProblems.filter((p) => p.field in flat || !problems.some((q) => q.field === p.field)),
    );
    if (problems.length > 0) throw configValidationError(problems);

    const changed = Object.keys(accepted).filter(
      (k) => JSON.stringify(this.valueAt(k)) !== JSON.stringify(accepted[k]),
    );
    if (changed.length > 0) {
      const now = nowIso();
      await this.db.transaction().execute(async (trx) => {
        for (const key of changed) {
          const value = JSON.stringify(accepted[key]);
          await trx
            .insertInto('config_overrides')
            .values({ key, value, updated_at: now, updated_by: actor })
            .onConflict((oc) => oc.column('key').doUpdateSet({ value, updated_at: now, updated_by: actor }))
            .execute();
        }
        const version = Number(this.meta.config_version) + 1;
        const state = JSON.stringify({ version, updated_at: now, updated_by: actor });
        await trx
          .insertInto('system_state')
          .values({ key: VERSION_KEY, value: state, updated_at: now })
          .onConflict((oc) => oc.column('key').doUpdateSet({ value: state, updated_at: now }))
          .execute();
      });
      await this.loadFromDatabase();
      await this.shared.publish(CHANGED_CHANNEL, { keys: changed });
    }
    return { updated_keys: changed, restart_required: changed.some(isRestartKey) };
  }

  /** Re-reads the file and environment, then re-applies the stored runtime changes. */
  async reload(): Promise<{ changed_keys: string[] }> {
    const boot = loadBootConfig({ configFile: this.source.configFile });
    this.layers = boot.layers;
    return { changed_keys: await this.loadFromDatabase() };
  }

  private valueAt(key: string): unknown {
    let node: unknown = this.effective;
    for (const part of key.split('.')) node = (node as Record<string, unknown>)?.[part];
    return node;
  }

  private async loadFromDatabase(): Promise<string[]> {
    const rows = await this.db.selectFrom('config_overrides').selectAll().execute();
    const overrides: Record<string, unknown> = {};
    for (const row of rows) {
      if (schemaAt(row.key.split('.'))) overrides[row.key] = JSON.parse(row.value) as unknown;
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
    const next = this.compose(this.layers, overrides);
    const before = flattenTree(this.effective as unknown as ConfigTree);
    const after = flattenTree(next as unknown as ConfigTree);
    const changed = Object.keys(after).filter((k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]));
    this.overrides = overrides;
    this.effective = deepFreeze(next);
    if (changed.length > 0) for (const l of this.listeners) l(changed);
    return changed;
  }

  private compose(layers: ConfigTree, overrides: Record<string, unknown>): PlatformConfig {
    const { config, problems } = validateTree(mergeTrees(layers, unflatten(overrides)));
    if (!config) throw configValidationError(problems);
    return config;
  }
}
