import type { Dialect } from '../storage/database.js';
import type { ColumnInfo } from './database-schema.js';

/**
 * The value representation of the logical dump. The platform stores text, numbers and 0/1 integers on both
 * dialects, which JSON carries as is; the few driver types JSON cannot carry get a tagged form so a dump
 * from one dialect loads into the other: bytes as `{"$base64": "…"}`, dates as ISO strings, big integers
 * as numbers (or strings beyond 2^53), structured values (PostgreSQL json/jsonb) as their JSON text.
 */
export function encodeValue(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : String(value);
  if (value instanceof Date) return value.toISOString();
  if (value instanceof Uint8Array) return { $base64: Buffer.from(value).toString('base64') };
  if (typeof value === 'object') return JSON.stringify(value);
  return value;
}

const BOOLEAN_TYPES = new Set(['boolean', 'bool']);

/** Turns a dumped value into what the target column of the target dialect accepts. */
export function decodeValue(value: unknown, column: ColumnInfo, dialect: Dialect): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'object') {
    const base64 = (value as { $base64?: unknown }).$base64;
    if (typeof base64 === 'string' && Object.keys(value).length === 1) return Buffer.from(base64, 'base64');
    return JSON.stringify(value);
  }
  if (BOOLEAN_TYPES.has(column.dataType) && dialect === 'postgres') {
    return typeof value === 'boolean' ? value : value === 1 || value === '1' || value === 'true';
  }
  // better-sqlite3 binds no booleans; a PostgreSQL boolean column becomes SQLite's 0/1.
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}
