import { nowIso } from '../kernel/new-id.js';
import type { LogStore } from '../logs/log-store.js';
import { HashingWriter } from './table-dump.js';

const PAGE = 1000;

/**
 * Writes the log store as JSON Lines, newest first, page by page. Entries written after the export
 * began are left out, so the pages do not shift under it.
 */
export async function exportLogStore(
  store: Pick<LogStore, 'query'>,
  file: string,
): Promise<{ rows: number }> {
  const until = nowIso();
  const writer = await HashingWriter.open(file);
  let rows = 0;
  try {
    for (let page = 1; ; page++) {
      const { rows: batch } = await store.query({ endTime: until, page, perPage: PAGE });
      for (const row of batch) await writer.write(`${JSON.stringify(row)}\n`);
      rows += batch.length;
      if (batch.length < PAGE) break;
    }
  } finally {
    await writer.close();
  }
  return { rows };
}
