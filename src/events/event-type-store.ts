import type { Kysely, Selectable } from 'kysely';
import type { Tables } from '../storage/tables.js';

/** An event type an administrator registered (migration 0028); JSON columns are text. */
export interface EventTypesTable {
  event_type: string;
  description: string;
  /** The JSON Schema of the type's `data`. */
  schema: string;
  /** Example `data` payloads (JSON array). */
  examples: string;
  /** `admin:<username>` of who registered or last changed it. */
  registered_by: string;
  created_at: string;
  updated_at: string;
}

export type EventTypeRow = Selectable<EventTypesTable>;

/** An installed plugin's manifest, where the types it declares are read. */
export interface PluginManifestRow {
  id: string;
  manifest: string;
  installed_at: string;
}

/** Storage of the registered event types, and the manifests of installed plugins that declare more. */
export class EventTypeStore {
  constructor(private readonly db: Kysely<Tables>) {}

  async list(): Promise<EventTypeRow[]> {
    return this.db.selectFrom('event_types').selectAll().orderBy('event_type').execute();
  }

  async find(eventType: string): Promise<EventTypeRow | undefined> {
    return this.db
      .selectFrom('event_types')
      .selectAll()
      .where('event_type', '=', eventType)
      .executeTakeFirst();
  }

  /** Inserts or replaces a type; answers whether it was new. */
  async put(row: EventTypeRow): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      const existing = await tx
        .selectFrom('event_types')
        .select('created_at')
        .where('event_type', '=', row.event_type)
        .executeTakeFirst();
      await tx
        .insertInto('event_types')
        .values(existing ? { ...row, created_at: existing.created_at } : row)
        .onConflict((oc) =>
          oc.column('event_type').doUpdateSet({
            description: row.description,
            schema: row.schema,
            examples: row.examples,
            registered_by: row.registered_by,
            updated_at: row.updated_at,
          }),
        )
        .execute();
      return existing === undefined;
    });
  }

  /** Answers whether the type was there. */
  async delete(eventType: string): Promise<boolean> {
    const result = await this.db
      .deleteFrom('event_types')
      .where('event_type', '=', eventType)
      .executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  }

  /** Every installed plugin (enabled or not): its declared types belong to the catalogue while it is installed. */
  async pluginManifests(): Promise<PluginManifestRow[]> {
    return this.db
      .selectFrom('plugins')
      .select(['id', 'manifest', 'installed_at'])
      .orderBy('installed_at')
      .orderBy('id')
      .execute();
  }
}
