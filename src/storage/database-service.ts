import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import type { Database } from './database.js';

/** Reports the database as a platform service: a real round-trip on every health check, pool figures. */
export class DatabaseService implements PlatformService {
  readonly name = 'database';
  readonly type = 'storage';
  readonly dependencies = [] as const;
  private lastPingMs = 0;
  private queriesTimed = 0;
  private totalPingMs = 0;

  constructor(private readonly database: Database) {}

  async start(): Promise<void> {
    await this.measure();
  }

  async stop(): Promise<void> {
    // The connection outlives a service restart: closing it would break every in-flight request.
  }

  async health(): Promise<ServiceHealth> {
    const ms = await this.measure();
    const pool = this.database.pool();
    const slow = ms > 250;
    return {
      status: slow ? 'warning' : 'healthy',
      checks: [
        { name: 'connectivity', status: 'pass', response_time_ms: round(ms) },
        {
          name: 'query_time',
          status: slow ? 'warning' : 'pass',
          avg_query_time_ms: round(this.totalPingMs / this.queriesTimed),
        },
        { name: 'connection_pool', status: pool.waiting > 0 ? 'warning' : 'pass', ...pool },
      ],
      details: { dialect: this.database.dialect, response_time_ms: round(ms), connection_pool: pool },
    };
  }

  metrics(): Record<string, number> {
    const pool = this.database.pool();
    const wal = this.database.walCheckpoints?.();
    const synced = this.database.syncedCommits?.();
    return {
      response_time_ms: round(this.lastPingMs),
      pool_active: pool.active,
      pool_idle: pool.idle,
      pool_total: pool.total,
      pool_waiting: pool.waiting,
      ...(wal ? { wal_checkpoints: wal.checkpoints, wal_checkpointed_pages: wal.pages } : {}),
      ...(synced !== undefined ? { synced_commits: synced } : {}),
    };
  }

  settings(): Record<string, unknown> {
    const synchronous = this.database.synchronous?.();
    return { dialect: this.database.dialect, ...(synchronous ? { synchronous } : {}) };
  }

  async measure(): Promise<number> {
    const ms = await this.database.ping();
    this.lastPingMs = ms;
    this.queriesTimed += 1;
    this.totalPingMs += ms;
    return ms;
  }
}

const round = (n: number) => Math.round(n * 100) / 100;
