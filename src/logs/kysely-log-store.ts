import { type Kysely, sql } from 'kysely';
import type { LogExportPage, LogQuery, LogStore } from './log-store.js';
import type { LogEntriesTable, LogTables } from './log-tables.js';

/** The log store's queries, the same on SQLite and PostgreSQL; the factories choose the connection. */
export class KyselyLogStore implements LogStore {
  constructor(
    readonly kind: 'sqlite' | 'postgres',
    private readonly db: Kysely<LogTables>,
    private readonly onClose: () => Promise<void>,
    /** Where searches run (Database.reads): they count and page through a store that grows. */
    private readonly reads: Kysely<LogTables> = db,
  ) {}

  async insert(rows: LogEntriesTable[]): Promise<void> {
    if (rows.length > 0) await this.db.insertInto('log_entries').values(rows).execute();
  }

  async query(q: LogQuery): Promise<{ rows: LogEntriesTable[]; total: number }> {
    let base = this.reads.selectFrom('log_entries');
    if (q.minLevel !== undefined) base = base.where('level_value', '>=', q.minLevel);
    if (q.component) base = base.where('component', '=', q.component);
    if (q.startTime) base = base.where('timestamp', '>=', q.startTime);
    if (q.endTime) base = base.where('timestamp', '<=', q.endTime);
    if (q.search) {
      const like = `%${q.search.toLowerCase().replace(/[\\%_]/g, (m) => `\\${m}`)}%`;
      // lower() on both sides: SQLite's LIKE ignores ASCII case, PostgreSQL's does not.
      base = base.where(sql<boolean>`lower(message) like ${like} escape '\\'`);
    }
    const [count, rows] = await Promise.all([
      base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst(),
      base
        .selectAll()
        .orderBy('timestamp', 'desc')
        .orderBy('id', 'desc')
        .limit(q.perPage)
        .offset((q.page - 1) * q.perPage)
        .execute(),
    ]);
    return { rows, total: Number(count?.n ?? 0) };
  }

  exportPage(q: LogExportPage): Promise<LogEntriesTable[]> {
    return this.exportPageQuery(q).execute();
  }

  /**
   * The statement of `exportPage`: a range of the timestamp index read backwards from `until`, or from the
   * previous page's last entry, with the ties of one timestamp ordered by id; `limit` rows, whatever the depth.
   */
  exportPageQuery(q: LogExportPage) {
    const { after } = q;
    // `timestamp <= t` alone bounds the index range; after a page, the `or` leaves out what it had.
    let select = this.reads
      .selectFrom('log_entries')
      .selectAll()
      .where('timestamp', '<=', after ? after.timestamp : q.until);
    if (after) {
      select = select.where((eb) => eb.or([eb('timestamp', '<', after.timestamp), eb('id', '<', after.id)]));
    }
    return select.orderBy('timestamp', 'desc').orderBy('id', 'desc').limit(q.limit);
  }

  async deleteOlderThan(timestamp: string): Promise<number> {
    const r = await this.db.deleteFrom('log_entries').where('timestamp', '<', timestamp).executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  close(): Promise<void> {
    return this.onClose();
  }
}
