/**
 * Row types of the plugin manager's tables (same conventions as `storage/tables.ts`: ISO text timestamps,
 * JSON as text, booleans as 0/1).
 */
export interface PluginsTable {
  /** The manifest's name, a slug. */
  id: string;
  version: string;
  /** The version kept for a rollback by the last update, or null. */
  previous_version: string | null;
  /** plugin.json as installed (JSON). */
  manifest: string;
  /** repository | file */
  source: string;
  /** Which repository entry, or the uploaded file's name. */
  source_ref: string;
  /** sha256 of the package archive (.tgz) installed. */
  sha256: string;
  /** 1 when the plugin should run on every instance. */
  enabled: number;
  /** installed | active | disabled | error | updating — the same on every instance. */
  status: string;
  /** The plugin's configuration (JSON), validated against its config_schema. */
  config: string;
  /** Why the plugin is in `error`, or null. */
  error: string | null;
  installed_by: string | null;
  installed_at: string;
  updated_at: string;
}

/** The package archives, so an instance on another machine can unpack what was installed elsewhere. */
export interface PluginPackagesTable {
  plugin_id: string;
  version: string;
  sha256: string;
  size_bytes: number;
  /** The .tgz bytes, base64 (text on both dialects, so logical backups carry it as is). */
  archive: string;
  created_at: string;
}

/** Persistent key-value storage of plugins (`ctx.storage`). */
export interface PluginStorageTable {
  plugin_id: string;
  key: string;
  /** JSON */
  value: string;
  updated_at: string;
}

/** What plugins logged (`ctx.logger`), the last lines of each plugin. */
export interface PluginLogsTable {
  id: string;
  plugin_id: string;
  timestamp: string;
  /** DEBUG | INFO | WARNING | ERROR */
  level: string;
  message: string;
}

export interface PluginTables {
  plugins: PluginsTable;
  plugin_packages: PluginPackagesTable;
  plugin_storage: PluginStorageTable;
  plugin_logs: PluginLogsTable;
}
