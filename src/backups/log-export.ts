import { nowIso } from '../kernel/new-id.js';
import type { LogStore } from '../logs/log-store.js';
import { HashingWriter } from './table-dump.js';

const PAGE = 1000;

/**
 * Writes the log store as JSON Lines, newest first (by timestamp, then id), page by page. Each page starts
 * after the last entry of the one before (a keyset: no OFFSET, so a page deep in a large store costs what the
 * first one does). Entries written after the export began are left out.
 */
export async function exportLogStore(
  store: Pick<LogStore, 'exportPage'>,
  file: string,
): Promise<{ rows: number }> {
  const until = nowIso();
  const writer = await HashingWriter.open(file);
  let rows = 0;
  try {
    let after: { timestamp: string; id: string } | undefined;
    for (;;) {
      const batch = await store.exportPage({ until, after, limit: PAGE });
      for (const row of batch) await writer.write(`${JSON.stringify(row)}\n`);
      rows += batch.length;
      const last = batch.at(-1);
      if (batch.length < PAGE || !last) break;
      after = { timestamp: last.timestamp, id: last.id };
    }
  } finally {
    await writer.close();
  }
  return { rows };
}
