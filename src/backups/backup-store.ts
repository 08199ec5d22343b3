import type { Kysely, Selectable, Updateable } from 'kysely';
import type { Tables } from '../storage/tables.js';
import type { Component } from './backup-manifest.js';
import type { BackupsTable } from './backup-tables.js';

export type BackupRow = Selectable<BackupsTable>;
export type BackupType = 'manual' | 'scheduled';

export const includesOf = (row: BackupRow): Component[] => JSON.parse(row.includes) as Component[];

/** The backup catalogue. */
export class BackupStore {
  constructor(private readonly db: Kysely<Tables>) {}

  async insert(row: BackupRow): Promise<void> {
    await this.db.insertInto('backups').values(row).execute();
  }

  async update(id: string, patch: Updateable<BackupsTable>): Promise<void> {
    await this.db.updateTable('backups').set(patch).where('id', '=', id).execute();
  }

  async findById(id: string): Promise<BackupRow | undefined> {
    return this.db.selectFrom('backups').selectAll().where('id', '=', id).executeTakeFirst();
  }

  /** Newest first. */
  async list(): Promise<BackupRow[]> {
    return this.db
      .selectFrom('backups')
      .selectAll()
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .execute();
  }

  /** Rows still `running` (id and archive file name): being written now, or left so by a process that died. */
  running(): Promise<{ id: string; file_name: string }[]> {
    return this.db
      .selectFrom('backups')
      .select(['id', 'file_name'])
      .where('status', '=', 'running')
      .execute();
  }

  /** The most recent completed backup (its measured duration estimates the next one). */
  async latestCompleted(): Promise<BackupRow | undefined> {
    return this.db
      .selectFrom('backups')
      .selectAll()
      .where('status', '=', 'completed')
      .orderBy('created_at', 'desc')
      .limit(1)
      .executeTakeFirst();
  }

  /** Completed backups of a type beyond the newest `keep`, oldest first: what retention deletes. */
  async beyondNewest(type: BackupType, keep: number): Promise<BackupRow[]> {
    const rows = await this.db
      .selectFrom('backups')
      .selectAll()
      .where('type', '=', type)
      .where('status', '=', 'completed')
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .offset(keep)
      .limit(100_000)
      .execute();
    return rows.reverse();
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom('backups').where('id', '=', id).execute();
  }
}
