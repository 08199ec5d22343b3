import { type Kysely, sql } from 'kysely';
import type { Dialect } from '../storage/database.js';

/** A Kysely over tables known only at run time (names come from introspection, not from `Tables`). */
export type LooseDb = Kysely<Record<string, Record<string, unknown>>>;

export interface ColumnInfo {
  name: string;
  /** The dialect's type name in lower case (`text`, `integer`, `bigint`, `boolean`, `bytea`, …). */
  dataType: string;
  isAutoIncrementing: boolean;
}

export interface TableInfo {
  name: string;
  columns: ColumnInfo[];
  primaryKey: string[];
  /** Tables this one has foreign keys to (itself excluded). */
  references: string[];
}

/**
 * The tables of the live database, read at run time: modules add tables with their migrations, and a
 * logical dump must cover whatever is there. Kysely's introspector gives tables and columns; primary and
 * foreign keys need a query per dialect.
 */
export async function describeTables(db: LooseDb, dialect: Dialect): Promise<TableInfo[]> {
  const metadata = await db.introspection.getTables();
  const schema = dialect === 'postgres' ? await currentSchema(db) : undefined;
  const keys = dialect === 'postgres' ? await postgresKeys(db) : undefined;
  const tables: TableInfo[] = [];
  for (const t of metadata) {
    if (t.isView || (schema !== undefined && t.schema !== schema)) continue;
    const k = keys ? (keys.get(t.name) ?? { primaryKey: [], references: [] }) : await sqliteKeys(db, t.name);
    tables.push({
      name: t.name,
      columns: t.columns.map((c) => ({
        name: c.name,
        dataType: c.dataType.toLowerCase(),
        isAutoIncrementing: c.isAutoIncrementing,
      })),
      primaryKey: k.primaryKey,
      references: [...new Set(k.references)].filter((r) => r !== t.name),
    });
  }
  return tables.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Referenced tables before the tables that reference them (ties by name), so inserts never miss a parent;
 * deletes run in the reverse. References to tables outside the list are ignored; a cycle is broken at the
 * table that comes first by name (foreign keys in a cycle cannot all be satisfied row by row anyway).
 */
export function dependencyOrder(tables: readonly TableInfo[]): TableInfo[] {
  const byName = new Map(tables.map((t) => [t.name, t]));
  const done = new Set<string>();
  const visiting = new Set<string>();
  const order: TableInfo[] = [];
  const visit = (t: TableInfo) => {
    if (done.has(t.name) || visiting.has(t.name)) return;
    visiting.add(t.name);
    for (const ref of [...t.references].sort()) {
      const parent = byName.get(ref);
      if (parent) visit(parent);
    }
    visiting.delete(t.name);
    done.add(t.name);
    order.push(t);
  };
  for (const t of [...tables].sort((a, b) => a.name.localeCompare(b.name))) visit(t);
  return order;
}

async function currentSchema(db: LooseDb): Promise<string> {
  const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(db);
  return rows[0]?.schema ?? 'public';
}

async function sqliteKeys(db: LooseDb, table: string) {
  const columns = await sql<{ name: string; pk: number }>`
    select name, pk from pragma_table_info(${table}) where pk > 0 order by pk`.execute(db);
  const foreign = await sql<{ table: string }>`
    select distinct "table" from pragma_foreign_key_list(${table})`.execute(db);
  return { primaryKey: columns.rows.map((r) => r.name), references: foreign.rows.map((r) => r.table) };
}

async function postgresKeys(db: LooseDb) {
  const primary = await sql<{ table: string; column: string }>`
    select cl.relname as "table", a.attname as "column"
    from pg_constraint c
    join pg_class cl on cl.oid = c.conrelid
    join pg_namespace n on n.oid = cl.relnamespace
    join pg_attribute a on a.attrelid = c.conrelid and a.attnum = any(c.conkey)
    where c.contype = 'p' and n.nspname = current_schema()
    order by cl.relname, array_position(c.conkey, a.attnum)`.execute(db);
  const foreign = await sql<{ table: string; referenced: string }>`
    select distinct cl.relname as "table", ref.relname as referenced
    from pg_constraint c
    join pg_class cl on cl.oid = c.conrelid
    join pg_class ref on ref.oid = c.confrelid
    join pg_namespace n on n.oid = cl.relnamespace
    where c.contype = 'f' and n.nspname = current_schema()`.execute(db);
  const keys = new Map<string, { primaryKey: string[]; references: string[] }>();
  const entry = (t: string) => {
    let e = keys.get(t);
    if (!e) {
      e = { primaryKey: [], references: [] };
      keys.set(t, e);
    }
    return e;
  };
  for (const r of primary.rows) entry(r.table).primaryKey.push(r.column);
  for (const r of foreign.rows) entry(r.table).references.push(r.referenced);
  return keys;
}
