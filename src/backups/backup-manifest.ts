import { type Static, Type } from '@sinclair/typebox';

/** The format tag every archive of ours carries in `manifest.json`. */
export const BACKUP_FORMAT = 'platform-backup/1';

export const COMPONENTS = ['configuration', 'database', 'plugins', 'logs'] as const;
export type Component = (typeof COMPONENTS)[number];

const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$' });

/**
 * `manifest.json`, the first entry of every archive. Restore trusts nothing in an archive that this
 * manifest does not list with a matching checksum.
 */
export const Manifest = Type.Object({
  format: Type.Literal(BACKUP_FORMAT),
  backup_id: Type.String({ pattern: '^bkp_[0-9a-z]{1,64}$' }),
  name: Type.String({ maxLength: 200 }),
  compression: Type.Boolean(),
  platform_version: Type.String({ maxLength: 100 }),
  /** The migrations applied to the database the backup was taken from, in order. */
  schema_version: Type.Array(Type.String({ maxLength: 200 }), { maxItems: 10_000 }),
  dialect: Type.Union([Type.Literal('sqlite'), Type.Literal('postgres')]),
  includes: Type.Array(Type.Union(COMPONENTS.map((c) => Type.Literal(c))), { maxItems: COMPONENTS.length }),
  /** Components that were asked for but had nothing to export, with the reason. */
  skipped: Type.Record(Type.String(), Type.String()),
  created_at: Type.String({ maxLength: 40 }),
  /** Row count and columns of every table file under `database/`. */
  tables: Type.Record(
    Type.String(),
    Type.Object({
      rows: Type.Integer({ minimum: 0 }),
      columns: Type.Array(Type.String({ maxLength: 200 }), { maxItems: 10_000 }),
    }),
  ),
  files: Type.Record(
    Type.String({ maxLength: 1024 }),
    Type.Object({ sha256: Sha256, bytes: Type.Integer({ minimum: 0 }) }),
  ),
});
export type Manifest = Static<typeof Manifest>;

export const MANIFEST_FILE = 'manifest.json';
export const CONFIG_FILE = 'config/overrides.json';
export const tableFile = (table: string) => `database/${table}.jsonl`;

/** `config/overrides.json`: the runtime configuration changes stored in the database, secrets left out. */
export const ConfigExport = Type.Object({
  overrides: Type.Record(
    Type.String({ maxLength: 500 }),
    Type.Object({ value: Type.Unknown(), updated_at: Type.String(), updated_by: Type.String() }),
  ),
  metadata: Type.Object({
    config_version: Type.String(),
    last_updated: Type.Union([Type.String(), Type.Null()]),
    updated_by: Type.Union([Type.String(), Type.Null()]),
  }),
});
export type ConfigExport = Static<typeof ConfigExport>;
