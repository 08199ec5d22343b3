import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EventsTable } from '../../src/events/event-tables.js';
import { type EventDraft, EventWriter } from '../../src/events/event-writer.js';
import type { Database } from '../../src/storage/database.js';
import { migrateToLatest } from '../../src/storage/migrate.js';
import { createSqliteDatabase } from '../../src/storage/sqlite/sqlite-database.js';

const draft = (n: number): EventDraft => ({
  row: {
    event_id: `evt_lanes_${n}`,
    event_type: 'lanes.step',
    source: 'test',
    timestamp: new Date().toISOString(),
    priority: 5,
    status: 'emitted',
    security_level: 'internal',
    data: JSON.stringify({ n }),
    data_encrypted: 0,
    metadata: '{}',
    correlation_id: `cor_${n}`,
    emitter_id: null,
    expires_at: null,
    subscriber_count: 0,
    emitted_by: 'test',
    durable_subscribers: 0,
    traceparent: null,
    tracestate: null,
    idempotency_ref: null,
  },
  subscriptionIds: [],
  startedAt: performance.now(),
});

// An emitter that writes its next event as soon as the last one is answered (a plugin's `await emit(); await
// emit()`): each write is queued while the drain loop that answered the last is still ending. The writer must
// start a loop for it then, not leave it until some other write arrives.
describe('the event writer with one emitter writing event after event', { timeout: 20_000 }, () => {
  let dir: string;
  let database: Database;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'writer-lanes-'));
    database = createSqliteDatabase(join(dir, 'test.db'));
    await migrateToLatest(database.db as unknown as Kysely<unknown>);
  });
  afterEach(async () => {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes every one of 200 events in turn, none left waiting', async () => {
    const writer = new EventWriter(database.db, 'sqlite', async () => {});
    const written: EventsTable[] = [];
    const sequential = (async () => {
      for (let n = 0; n < 200; n++) written.push(await writer.write(draft(n)));
    })();
    const outcome = await Promise.race([
      sequential.then(() => 'done'),
      new Promise((r) => setTimeout(() => r('stuck'), 10_000)),
    ]);
    expect(outcome, `${written.length} of 200 written before the writer stopped taking them`).toBe('done');
    expect(written.map((r) => r.sequence)).toEqual(
      Array.from({ length: 200 }, (_, i) => written[0]!.sequence + i),
    );
    await writer.close();
  });
});
