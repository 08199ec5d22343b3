import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { storableExcerpt } from '../kernel/storable-text.js';
import { logId } from '../logs/log-record.js';
import type { Bookkeeping } from '../storage/bookkeeping.js';
import type { Tables } from '../storage/tables.js';
import type { PluginLogsTable } from './plugin-tables.js';
import type { LogLevel } from './plugin-wire.js';

const LEVELS: Record<LogLevel, string> = { debug: 'DEBUG', info: 'INFO', warn: 'WARNING', error: 'ERROR' };
const MAX_MESSAGE = 2000;
const MAX_PENDING = 1000;
const FLUSH_MS = 500;

/**
 * The plugins' log lines: every line goes to the platform log (component `plugin:<id>`, so the log store and
 * `GET /api/v1/admin/system/logs?component=plugin:<id>` have it) and to `plugin_logs`, where the last
 * `plugins.max_log_lines` lines of each plugin are kept for its detail. Writes are batched; a plugin that logs
 * faster than they can be written loses lines (counted), never memory.
 */
export class PluginLogBook {
  private pending: PluginLogsTable[] = [];
  private dropped = 0;
  private chain: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly deps: {
      db: Kysely<Tables>;
      /**
       * How each batch and its trimming commit (storage/bookkeeping.ts: unsynced on SQLite): a power loss may
       * take the last half second of lines, which the platform log has as well.
       */
      writes: Bookkeeping;
      log: FastifyBaseLogger;
      maxLines: () => number;
      reportError: (err: unknown) => void;
    },
  ) {
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
  }

  write(pluginId: string, level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    // Text no database stores (NUL, half a surrogate pair, also from the cut) is replaced: on PostgreSQL it
    // failed the batch, and every plugin's lines in it were lost.
    const text = storableExcerpt(message, MAX_MESSAGE);
    const logger = this.deps.log.child({ component: `plugin:${pluginId}` });
    if (fields && Object.keys(fields).length > 0) logger[level]({ fields }, text);
    else logger[level](text);
    if (this.pending.length >= MAX_PENDING) {
      this.dropped += 1;
      return;
    }
    this.pending.push({
      id: logId(),
      plugin_id: pluginId,
      timestamp: new Date().toISOString(),
      level: LEVELS[level],
      message: text,
    });
  }

  /** Resolves once every line written so far is stored. */
  flush(): Promise<void> {
    this.chain = this.chain.then(() => this.drain()).catch((err: unknown) => this.deps.reportError(err));
    return this.chain;
  }

  async recent(
    pluginId: string,
    limit: number,
  ): Promise<{ timestamp: string; level: string; message: string }[]> {
    await this.flush();
    const rows = await this.deps.db
      .selectFrom('plugin_logs')
      .select(['timestamp', 'level', 'message'])
      .where('plugin_id', '=', pluginId)
      .orderBy('id', 'desc')
      .limit(limit)
      .execute();
    return rows.reverse();
  }

  async removeAll(pluginId: string): Promise<void> {
    await this.flush();
    await this.deps.db.deleteFrom('plugin_logs').where('plugin_id', '=', pluginId).execute();
  }

  droppedLines(): number {
    return this.dropped;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private async drain(): Promise<void> {
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    const keep = this.deps.maxLines();
    await this.deps.writes(async (trx) => {
      await trx.insertInto('plugin_logs').values(batch).execute();
      for (const pluginId of new Set(batch.map((r) => r.plugin_id))) {
        const edge = await trx
          .selectFrom('plugin_logs')
          .select('id')
          .where('plugin_id', '=', pluginId)
          .orderBy('id', 'desc')
          .offset(keep)
          .limit(1)
          .executeTakeFirst();
        if (edge) {
          await trx
            .deleteFrom('plugin_logs')
            .where('plugin_id', '=', pluginId)
            .where('id', '<=', edge.id)
            .execute();
        }
      }
    });
  }
}
