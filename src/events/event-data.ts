import type { EventCipher } from './event-cipher.js';
import type { EventsTable } from './event-tables.js';

/** The `data` object of a stored event, decrypted when it is kept encrypted at rest. */
export function decodeEventData(
  row: Pick<EventsTable, 'data' | 'data_encrypted'>,
  cipher: EventCipher,
): Record<string, unknown> {
  const text = row.data_encrypted === 1 ? cipher.open(row.data) : row.data;
  return JSON.parse(text) as Record<string, unknown>;
}

/** Who may read an event: confidential ones only admins and their emitter. */
export function mayRead(
  row: Pick<EventsTable, 'security_level' | 'emitter_id'>,
  reader: { userId: string; isAdmin: boolean },
): boolean {
  return row.security_level !== 'confidential' || reader.isAdmin || row.emitter_id === reader.userId;
}
