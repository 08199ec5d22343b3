import { sql } from 'kysely';
import { newId } from '../kernel/new-id.js';
import type { DiagnosticOutcome, DiagnosticTest } from '../kernel/service.js';
import type { Database } from '../storage/database.js';
import { burst, latencyFigures, round, timed } from './diagnostics-measure.js';

const PERFORMANCE_QUERIES = 40;
const STRESS_OPERATIONS = 200;
const SLOW_P95_MS = 100;

/** Thrown inside a stress transaction to roll it back: the stress test writes, then leaves nothing behind. */
class Rollback extends Error {}

/**
 * Database diagnostics. connectivity: one round trip. performance: 40 timed queries in sequence (trivial
 * round trips and an indexed read). stress: 200 short write transactions, up to 10 at once, each inserting a
 * row, reading it back and rolling back; the test then checks that no row was left.
 */
export async function diagnoseDatabase(
  database: Database,
  poolMax: number,
  test: DiagnosticTest,
  signal: AbortSignal,
): Promise<DiagnosticOutcome> {
  const db = database.db;
  switch (test) {
    case 'connectivity': {
      const ms = await database.ping();
      return {
        status: ms > 250 ? 'warning' : 'pass',
        details: { dialect: database.dialect, response_time_ms: round(ms), connection_pool: database.pool() },
      };
    }
    case 'performance': {
      const samples: number[] = [];
      for (let i = 0; i < PERFORMANCE_QUERIES && !signal.aborted; i++) {
        samples.push(
          await timed(() =>
            i % 2 === 0
              ? sql`select 1`.execute(db)
              : db.selectFrom('audit_log').select('id').orderBy('timestamp', 'desc').limit(10).execute(),
          ),
        );
      }
      const figures = latencyFigures(samples);
      return {
        status: figures.p95_ms > SLOW_P95_MS ? 'warning' : 'pass',
        details: { dialect: database.dialect, queries: samples.length, ...figures },
      };
    }
    case 'stress': {
      const run = newId('diag');
      const prefix = `diagnostics:${run}:`;
      // One connection per worker at most, and never the whole pool: the platform keeps serving meanwhile.
      const concurrency = database.dialect === 'sqlite' ? 4 : Math.max(1, Math.min(10, poolMax - 2));
      const outcome = await burst(STRESS_OPERATIONS, concurrency, signal, async (i) => {
        try {
          await db.transaction().execute(async (trx) => {
            const key = `${prefix}${i}`;
            await trx
              .insertInto('system_state')
              .values({ key, value: '{}', updated_at: new Date().toISOString() })
              .execute();
            await trx
              .selectFrom('system_state')
              .select('key')
              .where('key', '=', key)
              .executeTakeFirstOrThrow();
            throw new Rollback();
          });
        } catch (err) {
          if (!(err instanceof Rollback)) throw err;
        }
      });
      const left = await db
        .selectFrom('system_state')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('key', 'like', `${prefix}%`)
        .executeTakeFirstOrThrow();
      const figures = latencyFigures(outcome.durationsMs);
      const rowsLeft = Number(left.n);
      return {
        status:
          outcome.errors > 0 || rowsLeft > 0 ? 'fail' : figures.p95_ms > SLOW_P95_MS * 5 ? 'warning' : 'pass',
        details: {
          dialect: database.dialect,
          operations: outcome.durationsMs.length,
          concurrency,
          errors: outcome.errors,
          ...(outcome.messages.length > 0 ? { error_messages: outcome.messages } : {}),
          duration_ms: round(outcome.wallMs),
          operations_per_second: round(outcome.durationsMs.length / Math.max(0.001, outcome.wallMs / 1000)),
          ...figures,
          rows_left_behind: rowsLeft,
          stopped_early: outcome.attempted < STRESS_OPERATIONS,
        },
      };
    }
  }
}
