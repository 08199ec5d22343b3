import type { Kysely, Selectable } from 'kysely';
import { nowIso } from '../kernel/new-id.js';
import type { Tables } from '../storage/tables.js';
import type { SecurityScansTable } from './security-tables.js';

export type ScanRow = Selectable<SecurityScansTable>;
export type ScanStatus = 'started' | 'running' | 'completed' | 'failed' | 'cancelled';

/** Security scans (`scn_…`), one durable row each from start to result. */
export class ScanStore {
  constructor(private readonly db: Kysely<Tables>) {}

  async insert(row: ScanRow): Promise<void> {
    await this.db.insertInto('security_scans').values(row).execute();
  }

  findById(id: string): Promise<ScanRow | undefined> {
    return this.db.selectFrom('security_scans').selectAll().where('id', '=', id).executeTakeFirst();
  }

  async markRunning(id: string): Promise<void> {
    await this.db
      .updateTable('security_scans')
      .set({ status: 'running', started_at: nowIso() })
      .where('id', '=', id)
      .where('status', '=', 'started')
      .execute();
  }

  async finish(
    id: string,
    outcome: {
      status: 'completed' | 'failed' | 'cancelled';
      findings?: unknown[];
      checks?: unknown[];
      error?: string;
    },
    durationMs: number,
  ): Promise<void> {
    await this.db
      .updateTable('security_scans')
      .set({
        status: outcome.status,
        findings: JSON.stringify(outcome.findings ?? []),
        checks: JSON.stringify(outcome.checks ?? []),
        error: outcome.error ?? null,
        completed_at: nowIso(),
        duration_ms: Math.round(durationMs),
      })
      .where('id', '=', id)
      .where('status', 'in', ['started', 'running'])
      .execute();
  }

  lastCompleted(): Promise<ScanRow | undefined> {
    return this.db
      .selectFrom('security_scans')
      .selectAll()
      .where('status', '=', 'completed')
      .orderBy('completed_at', 'desc')
      .limit(1)
      .executeTakeFirst();
  }

  /** The last `limit` completed scans' measured durations (the scan's and each check's), newest first. */
  recentCompleted(limit: number): Promise<Pick<ScanRow, 'duration_ms' | 'checks'>[]> {
    return this.db
      .selectFrom('security_scans')
      .select(['duration_ms', 'checks'])
      .where('status', '=', 'completed')
      .orderBy('completed_at', 'desc')
      .limit(limit)
      .execute();
  }

  /** Scans left unfinished for longer than `olderThanMs` ended with their process: they are failed as interrupted. */
  async failAbandoned(olderThanMs: number): Promise<number> {
    const before = new Date(Date.now() - olderThanMs).toISOString();
    const r = await this.db
      .updateTable('security_scans')
      .set({ status: 'failed', error: 'interrupted', completed_at: nowIso() })
      .where('status', 'in', ['started', 'running'])
      .where('created_at', '<', before)
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }
}
