import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialectSql, preparedSql, runSql } from '../../src/storage/dialect-sql.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('statements kept prepared on PostgreSQL', { timeout: 20_000 }, () => {
  let t: TestPlatform;

  beforeAll(async () => {
    t = await startPlatform();
  });
  afterAll(async () => {
    await t.close();
  });

  it('runs a statement marked with preparedSql by name on its connection, and others unnamed', async () => {
    const db = t.platform.context.database.db;
    const dialect = t.platform.context.database.dialect;
    const marked = preparedSql(
      dialectSql(dialect, 'select cast(? as integer) + 1 as "n" /* prepared probe */'),
    );
    const plain = dialectSql(dialect, 'select cast(? as integer) + 2 as "n" /* plain probe */');
    // One connection for every statement below, so the session's prepared statements are the ones it made.
    const { answers, names } = await db.connection().execute(async (conn) => {
      const answers: number[] = [];
      for (const [text, value] of [
        [marked, 1],
        [marked, 2],
        [plain, 3],
      ] as const) {
        const { rows } = await runSql<{ n: number }>(conn, text, [value]);
        answers.push(Number(rows[0]!.n));
      }
      if (dialect !== 'postgres') return { answers, names: [] };
      const prepared = await sql<{ statement: string }>`select statement from pg_prepared_statements`.execute(
        conn,
      );
      return { answers, names: prepared.rows.map((r) => r.statement) };
    });
    expect(answers).toEqual([2, 3, 5]);
    if (dialect !== 'postgres') return;
    expect(names.filter((s) => s.includes('prepared probe'))).toHaveLength(1);
    expect(names.filter((s) => s.includes('plain probe'))).toEqual([]);
  });
});
