import type { PlatformConfig } from '../config/config-schema.js';
import { AppError } from '../http/app-error.js';
import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import { toLogRow } from './log-record.js';
import type { LogExportPage, LogQuery, LogStore } from './log-store.js';
import type { LogEntriesTable } from './log-tables.js';

/** Rows per insert, and the size at which the queue is written without waiting for the timer. */
const BATCH = 200;
const FLUSH_MS = 1000;
/** Beyond this many unwritten rows (store down), the oldest are dropped and counted. */
const MAX_PENDING = 10_000;
const HOUR_MS = 3_600_000;

/**
 * The `log_store` service: queues log records from the logger, writes them in batches (every second, or at
 * once when 200 are waiting), deletes those older than `logging.retention_days` every hour, and answers the
 * logs endpoint. It never logs its own failures (that would feed itself); they show in its health.
 */
export class LogStoreService implements PlatformService {
  readonly name = 'log_store';
  readonly type = 'storage';
  readonly dependencies = [] as const;
  private queue: LogEntriesTable[] = [];
  private chain: Promise<void> = Promise.resolve();
  private draining = false;
  private readonly flushTimer: NodeJS.Timeout;
  private retentionTimer: NodeJS.Timeout | undefined;
  private written = 0;
  private dropped = 0;
  private failures = 0;
  private retained = 0;
  private lastError: string | undefined;
  private closed = false;

  constructor(
    private readonly store: LogStore,
    private readonly cfg: () => PlatformConfig,
  ) {
    this.flushTimer = setInterval(() => void this.flush(), FLUSH_MS);
    this.flushTimer.unref();
  }

  get kind(): LogStore['kind'] {
    return this.store.kind;
  }

  /** Takes one serialized pino line (the LogOutput sink). */
  accept(line: string): void {
    if (this.closed) return;
    const row = toLogRow(line);
    if (!row) return;
    this.queue.push(row);
    if (this.queue.length > MAX_PENDING) {
      const excess = this.queue.length - MAX_PENDING;
      this.queue.splice(0, excess);
      this.dropped += excess;
    }
    if (this.queue.length >= BATCH && !this.draining) void this.flush();
  }

  /** Resolves once every record queued so far has been written (or its write has failed). */
  flush(): Promise<void> {
    this.chain = this.chain.then(() => this.drain());
    return this.chain;
  }

  async start(): Promise<void> {
    await this.applyRetention().catch(() => {});
    this.retentionTimer = setInterval(() => void this.applyRetention().catch(() => {}), HOUR_MS);
    this.retentionTimer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.retentionTimer);
    this.retentionTimer = undefined;
    await this.flush();
  }

  /** Platform shutdown: the last records are written, then the store's own connection closes. */
  async close(): Promise<void> {
    if (this.closed) return;
    clearInterval(this.flushTimer);
    await this.stop();
    this.closed = true;
    await this.store.close();
  }

  /** Deletes records older than `logging.retention_days`; resolves to how many. */
  async applyRetention(): Promise<number> {
    const cutoff = new Date(Date.now() - this.cfg().logging.retention_days * 86_400_000).toISOString();
    const n = await this.store.deleteOlderThan(cutoff);
    this.retained += n;
    return n;
  }

  async query(q: LogQuery): Promise<{ rows: LogEntriesTable[]; total: number }> {
    if (this.closed) throw new AppError('SERVICE_UNAVAILABLE', 'The log store is closed');
    return this.store.query(q);
  }

  /** A page of the whole store, for the backup's export (log-export.ts). */
  async exportPage(q: LogExportPage): Promise<LogEntriesTable[]> {
    if (this.closed) throw new AppError('SERVICE_UNAVAILABLE', 'The log store is closed');
    return this.store.exportPage(q);
  }

  /** Writes rows as they are (imports, and tests that need records of a chosen age). */
  insert(rows: LogEntriesTable[]): Promise<void> {
    return this.store.insert(rows);
  }

  async health(): Promise<ServiceHealth> {
    let reachable = true;
    let error: string | undefined;
    try {
      await this.store.ping();
    } catch (err) {
      reachable = false;
      error = (err as Error).message;
    }
    const backlog = this.queue.length > MAX_PENDING / 2;
    return {
      status: !reachable ? 'unhealthy' : backlog || this.lastError ? 'warning' : 'healthy',
      checks: [
        { name: 'connectivity', status: reachable ? 'pass' : 'fail', ...(error ? { error } : {}) },
        {
          name: 'write_queue',
          status: backlog || this.lastError ? 'warning' : 'pass',
          pending: this.queue.length,
          dropped: this.dropped,
          ...(this.lastError ? { last_error: this.lastError } : {}),
        },
      ],
      details: { backend: this.store.kind },
    };
  }

  metrics(): Record<string, number> {
    return {
      records_written: this.written,
      records_pending: this.queue.length,
      records_dropped: this.dropped,
      write_failures: this.failures,
      records_expired: this.retained,
    };
  }

  settings(): Record<string, unknown> {
    return {
      backend: this.store.kind,
      retention_days: this.cfg().logging.retention_days,
      batch_size: BATCH,
      flush_interval_ms: FLUSH_MS,
    };
  }

  private async drain(): Promise<void> {
    if (this.closed) return;
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, BATCH);
        try {
          await this.store.insert(batch);
          this.written += batch.length;
          this.lastError = undefined;
        } catch (err) {
          // Kept for the next flush (the queue bound still applies), so a brief outage loses nothing.
          this.failures += 1;
          this.lastError = (err as Error).message;
          this.queue.unshift(...batch);
          return;
        }
      }
    } finally {
      this.draining = false;
    }
  }
}
