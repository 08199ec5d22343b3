import { CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SETTLE } from '../../src/events/settle-events.js';
import { dialectSql } from '../../src/storage/dialect-sql.js';
import { MARK_PROCESSING } from '../../src/webhooks/outbox-store.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

// Each delivery marks its event `processing` when claimed and settles it once delivered. Both statements must
// find the events by id: through the status index instead (SQLite's choice on a store without statistics) each
// read every open event, so a backlog of emitted events made every delivery slower, and the backlog grew
// (issue 26: 1,000 events/s to one subscription fell seconds behind; the settle alone was 9 % of the server).
describe('the event status writes of the delivery path', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('look events up by id, not by status, and the settle reads each event’s own deliveries', async () => {
    const database = t.platform.context.database;
    // PostgreSQL takes the primary key for an id list; the plan asserted here is SQLite's (the file is left out
    // of the cluster project: vitest.config.ts).
    expect(database.dialect).toBe('sqlite');
    for (const text of [SETTLE, MARK_PROCESSING]) {
      const query = dialectSql('sqlite', text);
      const params = [...query.matchAll(/\?/g)].map(() => '["evt_a","evt_b"]');
      const plan = await database.db.executeQuery<{ detail: string }>(
        CompiledQuery.raw(`explain query plan ${query}`, params),
      );
      const steps = plan.rows.map((r) => r.detail);
      expect(steps[0], steps.join('\n')).toMatch(/^SEARCH events USING INDEX \S+ \(event_id=\?\)$/);
      expect(steps.join('\n')).not.toMatch(/status=\?/);
    }
  });
});
