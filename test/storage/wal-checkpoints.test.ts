import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { bytesWritten } from '../helpers/thread-writes.js';

describe('SQLite checkpoints on their own thread', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  let admin: string;

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  it('copies committed writes into the database file without the writer doing it, and reports what it did', async () => {
    const metrics = async () =>
      (await t.request('GET', '/api/v1/services/database', { token: admin })).data.data.metrics;
    if (t.backend !== 'sqlite') {
      // PostgreSQL has no WAL file of ours to checkpoint: no figure rather than an invented zero.
      expect((await metrics()).wal_checkpoints).toBeUndefined();
      return;
    }
    const file = join((t.storage as { storage: { data_dir: string } }).storage.data_dir, 'platform.db');
    const sizeBefore = statSync(file).size;
    const before = await metrics();
    // About 400 KB of events: far below the writer's own checkpoint threshold (4,000 pages, 16 MB).
    for (let round = 0; round < 10; round++) {
      await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          t.request('POST', '/api/v1/events', {
            token: admin,
            body: { event_type: 'wal.filler', data: { round, i, text: 'x'.repeat(800) } },
          }),
        ),
      );
    }
    // The file grows as the checkpointer copies; its report of what it did arrives just after.
    await eventually(async () => statSync(file).size >= sizeBefore + 300_000, 5000);
    await eventually(
      async () => (await metrics()).wal_checkpointed_pages > before.wal_checkpointed_pages + 70,
      5000,
    );
    const after = await metrics();
    expect(after.wal_checkpoints).toBeGreaterThan(before.wal_checkpoints);
    expect(after.wal_checkpointed_pages).toBeGreaterThan(before.wal_checkpointed_pages + 70);
  });

  it("starts the WAL over on the writer thread once a checkpoint emptied it, not in the server's next commit", async () => {
    if (t.backend !== 'sqlite') return;
    const wal = `${join((t.storage as { storage: { data_dir: string } }).storage.data_dir, 'platform.db')}-wal`;
    // The WAL header's checkpoint sequence number (bytes 12–15) grows by one each time the log starts over; the
    // commit that does it writes the new header and syncs it, whatever its synchronous level.
    const restarts = () => readFileSync(wal).readUInt32BE(12);
    const emit = () =>
      t.request('POST', '/api/v1/events', { token: admin, body: { event_type: 'wal.restart', data: {} } });
    expect((await emit()).statusCode).toBe(201);
    const before = restarts();
    const writtenByServer = bytesWritten('thread');
    // Nothing else writes meanwhile: the checkpointer copies the emit's frames (within 100 ms), and the log is
    // started over without waiting for the server's next write.
    await eventually(async () => restarts() > before, 5000);
    // A restart made by this thread writes the header (32 bytes) and a frame (4 KB); the thread's own wake-ups of
    // other threads write 8 bytes each.
    expect(restarts()).toBeGreaterThan(before);
    expect(bytesWritten('thread') - writtenByServer).toBeLessThan(1000);
  });
});
