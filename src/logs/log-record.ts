import { newId } from '../kernel/new-id.js';
import { storableExcerpt, storableText } from '../kernel/storable-text.js';
import type { LogEntriesTable } from './log-tables.js';

/** The level names of spec §2.11, by pino level number. FATAL has no name there and is stored as ERROR. */
export const LOG_LEVELS = ['DEBUG', 'INFO', 'WARNING', 'ERROR'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];
export const LEVEL_VALUES: Record<LogLevelName, number> = { DEBUG: 20, INFO: 30, WARNING: 40, ERROR: 50 };

export function levelName(value: number): LogLevelName {
  if (value >= 50) return 'ERROR';
  if (value >= 40) return 'WARNING';
  if (value >= 30) return 'INFO';
  return 'DEBUG';
}

/**
 * `log_` + a time-sortable id: records logged within one millisecond still sort in the order they were
 * written (newest first means newest), since ids of one process are ordered within a millisecond too.
 */
export const logId = (): string => newId('log');

const MAX_MESSAGE = 8192;
const MAX_METADATA = 32_768;
/** Fields pino adds to every line, or that become columns of their own. */
const OMITTED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'component', 'reqId', 'v']);

/**
 * Turns one serialized pino line (already redacted) into a log-store row: the request id from Fastify's
 * `reqId` binding, the component from a `component` binding (`http` for other request-bound lines,
 * `platform` otherwise), and every other field kept in `metadata`.
 */
export function toLogRow(line: string): LogEntriesTable | undefined {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (typeof o !== 'object' || o === null) return undefined;
  const value = typeof o['level'] === 'number' ? o['level'] : 30;
  const time = typeof o['time'] === 'number' ? o['time'] : Date.now();
  // Text a database could not store is replaced: one such line would fail its whole batch, which is kept and
  // retried, so it would stop the log store.
  const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? storableText(v) : null);
  const req = o['req'] as { remoteAddress?: unknown } | undefined;
  const requestId = str(o['request_id']) ?? str(o['reqId']);
  const metadata: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (!OMITTED.has(k)) metadata[k] = v;
  let metadataJson = JSON.stringify(metadata);
  if (metadataJson.length > MAX_METADATA) {
    metadataJson = JSON.stringify({ truncated: true, fields: Object.keys(metadata) });
  }
  const message = typeof o['msg'] === 'string' ? o['msg'] : '';
  return {
    id: logId(),
    timestamp: new Date(time).toISOString(),
    level: levelName(value),
    level_value: value,
    component: str(o['component']) ?? (o['reqId'] ? 'http' : 'platform'),
    message: storableExcerpt(message, MAX_MESSAGE),
    request_id: requestId,
    user_id: str(o['user_id']),
    ip_address: str(o['ip_address']) ?? str(req?.remoteAddress),
    metadata: metadataJson,
  };
}
